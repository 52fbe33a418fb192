"""The ``--demo`` fabric: its Config, its transports, and its frames fed by hand.

The one place the simulation (:mod:`fabtop.sim`) is wired to the rest: the composition
root asks here for the demo's transports; screenshots, snapshot tests and benchmarks ask
for a state fed synchronously. Everything downstream of the transport runs the live
code path; only the bytes come from the simulation.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collectors.frames import FrameDecoder
from collectors.parsers.exo_state import parse_exo_state
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.transport.base import Transport
from fabtop.config import Config, ConfigError, HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.sim.episodes import DEFAULT_TARGET, MAC_KINDS, Episode
from fabtop.sim.exo import EXO_DEMO_URL
from fabtop.sim.fabric import (
    BIG_MAX_HOSTS,
    BIG_PREFIX,
    Fabric,
    big_fabric,
    big_hosts,
    big_target,
    demo_fabric,
    demo_hosts,
)
from fabtop.sim.host import SimHostConfig
from fabtop.sim.mac_ids import RING_CABLES
from fabtop.sim.transport import sim_transports

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
    # issue 15: another rdma-core build and kernel minor on one host (captured versions:
    # tests/fixtures/versions/SOURCES.md)
    "version_mismatch": {"rdma_core": "2307mlnx47-1.2307050", "kernel": "6.5.0-35-generic"},
    # node3's RoCE netdevs lost their IPv4 address: only link-local GIDs are left
    "roce_no_ipv4_gid": {"roce_addrs": ()},
    "roce_no_ip_gid": {"roce_addrs": ()},  # the same, by the rule's name
    # a second link-local IPv6 address (NetworkManager stable-privacy) came first on
    # node3: its RoCE v2 IPv4 GID sits at index 5, the others' at 3
    "gid_index_mismatch": {"roce_addrs": ("ll6", "ipv4")},
    "firewall_blocked": {"firewall": "firewalld"},
    "tb_link_errors": {"tb_errors_per_s": 40.0},  # thunderbolt0 corrupting frames
}
# Misconfigurations of the whole fabric: every host's config changes.
FABRIC_MISCONFIGS: dict[str, dict[str, Any]] = {
    # nobody started opensm: node1's and node2's IB ports train but stay INIT
    "no_subnet_manager": {"ib_sm": False},
}
# Thunderbolt faults of the node3 <-> node4 cable itself: both its ends report it.
TB_MISCONFIGS: dict[str, dict[str, Any]] = {
    "tb_lane_degraded": {"tb_lanes": 1},  # one lane where two are possible
}
# Hosts added to the demo's four (healthy otherwise): the DGX Spark on its Mac Studio.
EXTRA_HOSTS: dict[str, tuple[SimHostConfig, ...]] = {}
# Servers a scenario adds (not faults): ``exo_cluster`` runs exo on the Mac Studio pair
# (mac1 serves /state for both), as a Mac cluster does; its token rate is unknown, and why.
SERVERS: dict[str, tuple[str, dict[str, Any]]] = {
    "exo_cluster": ("mac1", {"exo_url": EXO_DEMO_URL, "exo_peers": ("mac2",)}),
}
SCENARIOS: tuple[str, ...] = (
    *EPISODE_KINDS,
    *MISCONFIGS,
    *FABRIC_MISCONFIGS,
    *TB_MISCONFIGS,
    *EXTRA_HOSTS,
    *SERVERS,
)


# What the big fabric (--demo-hosts) cannot show: it has RoCE hosts only (no Mac, no
# InfiniBand or Thunderbolt port, no exo).
NOT_BIG: frozenset[str] = frozenset(
    {"tb_link_errors", *MAC_KINDS, *FABRIC_MISCONFIGS, *TB_MISCONFIGS, *EXTRA_HOSTS, *SERVERS}
)
BIG_SCENARIOS: tuple[str, ...] = tuple(s for s in SCENARIOS if s not in NOT_BIG)
FOREVER_S = 1e9  # a scenario's fault runs from t=0 for good
# A prefix never ends in a digit, so two prefixes always name disjoint hosts ("a" and
# "a1" would both name a11); with the number it stays a host name fabtop accepts.
_PREFIX_RE = re.compile(r"[A-Za-z](?:[A-Za-z0-9_.-]{0,30}[A-Za-z_.-])?")
_SOURCE_RE = re.compile(
    r"demo(?::(?P<scenario>[a-z0-9_]+))?(?: hosts=(?P<hosts>[0-9]+) prefix=(?P<prefix>\S+))?"
)


@dataclass(frozen=True, slots=True)
class DemoSpec:
    """Which simulated fabric a demo config runs: a scenario (one fault from t=0, or the
    demo's cycle), and ``hosts`` of 8 rails named ``prefix1..`` (None: the 7-host demo)."""

    scenario: str | None = None
    hosts: int | None = None
    prefix: str = BIG_PREFIX

    @property
    def source(self) -> str:
        """The config's ``source``, read back by :func:`demo_spec`."""
        s = "demo" if self.scenario is None else f"demo:{self.scenario}"
        return s if self.hosts is None else f"{s} hosts={self.hosts} prefix={self.prefix}"

    def check(self) -> None:
        """Raise ConfigError, one line naming the option, for a spec no fabric fits."""
        if self.scenario is not None and self.scenario not in SCENARIOS:
            raise ConfigError(
                f"command line: unknown --demo-scenario {self.scenario!r} "
                f"(one of {', '.join(SCENARIOS)})"
            )
        if self.hosts is None:
            return
        if not 1 <= self.hosts <= BIG_MAX_HOSTS:
            raise ConfigError(
                f"command line: --demo-hosts {self.hosts} is not in 1..{BIG_MAX_HOSTS}"
            )
        if not _PREFIX_RE.fullmatch(self.prefix):
            raise ConfigError(
                f"command line: bad --demo-prefix {self.prefix[:40]!r} (a letter, then up to "
                "31 letters, digits, '_', '.' or '-', not ending in a digit)"
            )
        if self.scenario in NOT_BIG:
            raise ConfigError(
                f"command line: --demo-scenario {self.scenario} needs the 7-host demo "
                f"(--demo-hosts has RoCE hosts only: one of {', '.join(BIG_SCENARIOS)})"
            )


def demo_spec(config: Config) -> DemoSpec | None:
    """The simulated fabric ``config`` names, None when it is not the demo's."""
    m = _SOURCE_RE.fullmatch(config.source)
    if m is None:
        return None
    hosts = m.group("hosts")
    return DemoSpec(
        m.group("scenario"),
        None if hosts is None else int(hosts),
        m.group("prefix") or BIG_PREFIX,
    )


def _urls(h: SimHostConfig) -> tuple[str, ...]:
    """The inference URLs a simulated host serves (its /metrics, its exo /state)."""
    return tuple(u for u in (h.inference_url, h.exo_url) if u)


def demo_config(
    interval: float = 1.0,
    scenario: str | None = None,
    hosts: int | None = None,
    prefix: str = BIG_PREFIX,
) -> Config:
    """The demo hosts (with their inference servers) at ``interval`` seconds: the 7-host
    demo, or ``hosts`` hosts of 8 rails named ``prefix1..`` (raises ConfigError)."""
    spec = DemoSpec(scenario, hosts, prefix)
    sims, _ = _plan(spec)
    configs = [HostConfig(name=h.name, inference=_urls(h)) for h in sims]
    return Config(hosts=configs, interval=interval, source=spec.source)


def _plan(spec: DemoSpec) -> tuple[list[SimHostConfig], tuple[Episode, ...] | None]:
    """The hosts of ``spec``'s fabric and its fault from t=0 (None: the demo's cycle).

    A scenario's fault lands where the 7-host demo has it (node1..node4, mac1); on the
    big fabric, on the host that plays that node (fabtop.sim.fabric.big_target).
    """
    spec.check()
    hosts = demo_hosts() if spec.hosts is None else big_hosts(spec.hosts, spec.prefix)
    scenario = spec.scenario
    if scenario is None:
        return hosts, None
    names = [h.name for h in hosts]

    def plays(node: str) -> str:
        return node if spec.hosts is None else big_target(node, names)

    if scenario == "tb_bridge_loop":
        # A loop needs a ring of three: a third Mac, cabled to both (fabtop/sim/mac_ids.py).
        mac2 = next(h for h in hosts if h.name == "mac2")
        hosts = [*hosts, dataclasses.replace(mac2, name="mac3")]
        hosts = [dataclasses.replace(h, mac_cables=RING_CABLES) if h.macos else h for h in hosts]
    if scenario in EXTRA_HOSTS:
        return [*hosts, *EXTRA_HOSTS[scenario]], ()
    if scenario in TB_MISCONFIGS:
        # the node3 <-> node4 cable: both its ends (the Spark's cable to mac1 stays whole)
        change = TB_MISCONFIGS[scenario]
        ends = ("node3", "node4")
        return [
            dataclasses.replace(h, **change) if h.tb_link and h.name in ends else h for h in hosts
        ], ()
    if scenario in SERVERS:
        name, server = SERVERS[scenario]
        return [dataclasses.replace(h, **server) if h.name == name else h for h in hosts], ()
    if scenario in MISCONFIGS:
        i = names.index(plays("node3"))
        hosts[i] = dataclasses.replace(hosts[i], **MISCONFIGS[scenario])
        return hosts, ()
    if scenario in FABRIC_MISCONFIGS:
        return [dataclasses.replace(h, **FABRIC_MISCONFIGS[scenario]) for h in hosts], ()
    if scenario == "healthy":
        return hosts, ()
    demo_target = DEFAULT_TARGET[scenario][0]
    target = None if spec.hosts is None else plays(demo_target)
    return hosts, (Episode(scenario, 0.0, FOREVER_S, target),)


def scenario_fabric(
    scenario: str,
    seed: int = 0,
    interval_s: float = 1.0,
    hosts: int | None = None,
    prefix: str = BIG_PREFIX,
) -> Fabric:
    """The demo fabric with one fault from t=0 (``healthy``: none at all); with
    ``hosts``, the big fabric of that many hosts (fabtop.sim.fabric.big_fabric)."""
    return _fabric(DemoSpec(scenario, hosts, prefix), seed, interval_s)


def _fabric(spec: DemoSpec, seed: int, interval_s: float) -> Fabric:
    hosts, fault = _plan(spec)
    if fault is not None:
        return Fabric(hosts, fault, seed=seed, interval_s=interval_s)
    if spec.hosts is None:
        return demo_fabric(seed=seed, interval_s=interval_s)
    return big_fabric(spec.hosts, spec.prefix, seed=seed, interval_s=interval_s)


def demo_fabric_for(config: Config, seed: int = 0) -> Fabric:
    """The simulated fabric a demo config names (its DemoSpec, see :func:`demo_spec`)."""
    return _fabric(demo_spec(config) or DemoSpec(), seed, config.interval)


def demo_transports(
    config: Config, seed: int = 0, speed: float = 1.0, *, stepped: bool = False
) -> dict[str, Transport]:
    """One simulated transport per host of ``config``, all on one simulation clock.

    ``speed`` runs the simulation that many times real time (benchmarks); ``stepped``
    moves it only when its clock is advanced (tests: the same frames on any machine).
    """
    sims = sim_transports(demo_fabric_for(config, seed), speed=speed, stepped=stepped)
    return {h.name: sims[h.name] for h in config.hosts if h.name in sims}


# Fed by hand: screenshots, snapshot tests and the benchmarks need the same picture every
# run, so the simulation is stepped without a wall clock or transports, and its frames go
# through the live path (frame decoder, FabricState.apply_frame).


@dataclass
class ManualClock:
    """A monotonic clock that only moves when told to."""

    t: float = 10_000.0

    def __call__(self) -> float:
        return self.t


def feed_until(
    fabric: Fabric,
    state: FabricState,
    clock: ManualClock,
    start_s: float,
    until_s: float,
    interval: float = 1.0,
    silent: Sequence[str] = (),
) -> None:
    """Apply one frame per host per ``interval`` from ``start_s`` to ``until_s`` inclusive.

    Hosts named in ``silent`` send nothing (their last frame grows old).
    """
    decoders = {name: FrameDecoder() for name in fabric.hosts}
    n = round((until_s - start_s) / interval)
    for i in range(n + 1):
        t = start_s + i * interval
        clock.t += interval
        for name, host in fabric.hosts.items():
            if name in silent or name not in state.hosts or not host.answers(t):
                continue
            text = host.frame(t)
            url, exo = host.cfg.inference_url, host.cfg.exo_url
            for frame in decoders[name].feed(text.encode()):
                state.apply_frame(name, frame)
            readings = [parse_inference_metrics(host.metrics_text(), url)] if url else []
            if exo:
                readings.append(parse_exo_state(host.exo_text(t), exo))
            if readings:
                state.apply_inference(name, readings)


def demo_state(
    until_s: float = 60.0,
    seed: int = 0,
    fabric: Fabric | None = None,
    history_s: float = 90.0,
    interval: float = 1.0,
) -> tuple[FabricState, ManualClock, Fabric]:
    """A FabricState holding the demo's last ``history_s`` seconds up to ``until_s``."""
    fab = fabric if fabric is not None else demo_fabric(seed=seed)
    clock = ManualClock()
    hosts = [HostConfig(name=n, inference=_urls(h.cfg)) for n, h in fab.hosts.items()]
    state = FabricState(hosts, rules=make_evaluator(), clock=clock, interval=interval)
    start = max(0.0, until_s - history_s)
    feed_until(fab, state, clock, start, until_s, interval)
    return state, clock, fab
