"""The ``--demo`` fabric as a Config and its transports (written by the TUI helper as a stopgap).

Everything downstream of the transport runs the live code path; only the bytes come
from the simulation in :mod:`fabtop.sim`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from collectors.transport.base import Transport
from collectors.transport.demo import demo_transports as _sim_transports
from fabtop.config import Config, ConfigError, HostConfig
from fabtop.sim.episodes import DEFAULT_TARGET
from fabtop.sim.fabric import Fabric, demo_fabric, demo_hosts

EPISODE_KINDS: tuple[str, ...] = ("healthy", *DEFAULT_TARGET)


# ``--demo-scenario NAME`` (for tests and demos): one fault on the demo fabric from t=0
# instead of the demo's cycle. Episodes are the simulation's; misconfigurations change
# node3's host config.
MISCONFIGS: dict[str, dict[str, Any]] = {
    "pfc_mismatch": {"pfc_prios": (3, 4)},
    "trust_mismatch": {"trust": "pcp"},
    "mtu_mismatch": {"mtu": 4200},
    "firmware_mismatch": {"firmware": "22.36.1010"},
    "pcie_degraded": {"pcie_width": 8},
    "no_ecn_config": {"ecn": False},
}
SCENARIOS: tuple[str, ...] = (*EPISODE_KINDS, *MISCONFIGS)


def demo_config(interval: float = 1.0, scenario: str | None = None) -> Config:
    """The demo hosts (with their inference servers) at ``interval`` seconds."""
    if scenario is not None and scenario not in SCENARIOS:
        raise ConfigError(
            f"command line: unknown --demo-scenario {scenario!r} (one of {', '.join(SCENARIOS)})"
        )
    fab = demo_fabric()
    hosts = [
        HostConfig(name=n, inference=(h.cfg.inference_url,) if h.cfg.inference_url else ())
        for n, h in fab.hosts.items()
    ]
    source = "demo" if scenario is None else f"demo:{scenario}"
    return Config(hosts=hosts, interval=interval, source=source)


def scenario_fabric(scenario: str, seed: int = 0, interval_s: float = 1.0) -> Fabric:
    """The demo fabric with one fault from t=0 (``healthy``: none at all)."""
    hosts = demo_hosts()
    if scenario in MISCONFIGS:
        hosts[2] = dataclasses.replace(hosts[2], **MISCONFIGS[scenario])
        return Fabric(hosts, seed=seed, interval_s=interval_s)
    if scenario == "healthy":
        return Fabric(hosts, seed=seed, interval_s=interval_s)
    return Fabric.single(hosts, scenario, seed=seed, interval_s=interval_s)


def demo_transports(config: Config, seed: int = 0) -> dict[str, Transport]:
    """One simulated transport per host of ``config``, all on one simulation clock."""
    _, _, scenario = config.source.partition("demo:")
    if scenario:
        fab = scenario_fabric(scenario, seed=seed, interval_s=config.interval)
    else:
        fab = demo_fabric(seed=seed, interval_s=config.interval)
    sims = _sim_transports(fab)
    return {h.name: sims[h.name] for h in config.hosts if h.name in sims}
