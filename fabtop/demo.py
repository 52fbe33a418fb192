"""The ``--demo`` fabric as a Config and its transports (written by the TUI helper as a stopgap).

Everything downstream of the transport runs the live code path; only the bytes come
from the simulation in :mod:`fabtop.sim`.
"""

from __future__ import annotations

from collectors.transport.base import Transport
from collectors.transport.demo import demo_transports as _sim_transports
from fabtop.config import Config, HostConfig
from fabtop.sim.fabric import demo_fabric


def demo_config(interval: float = 1.0) -> Config:
    """The demo hosts (with their inference servers) at ``interval`` seconds."""
    fab = demo_fabric()
    hosts = [
        HostConfig(name=n, inference=(h.cfg.inference_url,) if h.cfg.inference_url else ())
        for n, h in fab.hosts.items()
    ]
    return Config(hosts=hosts, interval=interval, source="demo")


def demo_transports(config: Config, seed: int = 0) -> dict[str, Transport]:
    """One simulated transport per host of ``config``, all on one simulation clock."""
    fab = demo_fabric(seed=seed, interval_s=config.interval)
    sims = _sim_transports(fab)
    return {h.name: sims[h.name] for h in config.hosts if h.name in sims}
