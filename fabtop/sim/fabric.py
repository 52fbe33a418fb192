"""The simulated fabric: hosts, the traffic model that ties them together, and the clock.

Time advances on a fixed grid (``GRID_S``); within a cell every counter grows at a
constant rate, so the text at time ``t`` depends only on the seed, the configuration and
``t``, never on how often it was read. Going back in time replays from 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from fabtop.sim.bench import Bench
from fabtop.sim.episodes import (
    DEFAULT_TARGET,
    DEMO_CYCLE,
    DEMO_CYCLE_S,
    MAC_KINDS,
    Episode,
    Mods,
    active_episodes,
    apply_episode,
    episode_at,
)
from fabtop.sim.host import SimHost, SimHostConfig
from fabtop.sim.tb_ids import MAC_STUDIO1_NAME, MAC_STUDIO1_UID, NODE3_UID, NODE4_UID, SPARK1_UID

GRID_S = 0.5
# The big fabric (--demo-hosts N): hosts of 8 rails, as many as its numbering holds
# (fabtop.sim.addresses) and more than one process simulates at 1 Hz (docs/BENCHMARKS.md).
BIG_RAILS = 8
BIG_MAX_HOSTS = 1024
BIG_PREFIX = "node"  # its hosts are node1..nodeN unless named otherwise (--demo-prefix)
DEMO_EPOCH_S = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a fixed wall clock for the demo
DEMO_METRICS_URL = "http://127.0.0.1:8000/metrics"


class Fabric:
    """A set of simulated hosts driven by one traffic model and a schedule of episodes."""

    def __init__(
        self,
        hosts_config: Sequence[SimHostConfig],
        episodes: Sequence[Episode] = (),
        *,
        cycle_s: float | None = None,
        seed: int = 0,
        base_epoch_s: float = DEMO_EPOCH_S,
        interval_s: float = 1.0,
        slow_every_s: float = 60.0,
        healthy_port_gbps: float = 55.0,
        healthy_tokens_per_s: float = 2400.0,
    ) -> None:
        names = [c.name for c in hosts_config]
        if len(set(names)) != len(names):
            raise ValueError("host names must be unique")
        self.configs = tuple(hosts_config)
        self.episodes = tuple(episodes)
        self.cycle_s = cycle_s
        self.seed = seed
        self.base_epoch_s = base_epoch_s
        self.interval_s = interval_s
        self.slow_every_s = slow_every_s
        self.healthy_port_gbps = healthy_port_gbps
        self.healthy_tokens_per_s = healthy_tokens_per_s
        # The load of `fabtop test` runs (fabtop.sim.launcher): kept across a replay.
        self.bench = Bench(self)
        self._reset()

    def _reset(self) -> None:
        # Hosts are reset in place: callers keep references to them across a replay.
        if hasattr(self, "hosts"):
            for h in self.hosts.values():
                h.reset_state()
        else:
            self.hosts: dict[str, SimHost] = {
                c.name: SimHost(c, self, i) for i, c in enumerate(self.configs)
            }
        self._names = list(self.hosts)
        self._roce = [n for n, h in self.hosts.items() if h.cfg.roce_ports > 0]
        self._k = 0
        self.grid_t = 0.0
        self.token_factor = 1.0
        self._set_cell()

    @classmethod
    def single(
        cls,
        hosts_config: Sequence[SimHostConfig],
        kind: str,
        *,
        target: str | None = None,
        port: int | None = None,
        start_s: float = 0.0,
        duration_s: float = 1e9,
        **kw: Any,
    ) -> Fabric:
        """A fabric that runs one episode (from ``start_s``, by default from t=0, forever)."""
        ep = Episode(kind, start_s, duration_s, target, port)
        return cls(hosts_config, (ep,), **kw)

    @property
    def t(self) -> float:
        """Latest grid time reached."""
        return self.grid_t

    def mods_at(self, g: float) -> Mods:
        """What the episodes change in the grid cell that starts at ``g``."""
        mods = Mods()
        mods.ecn_off.update(n for n, h in self.hosts.items() if not h.cfg.ecn)
        for ep, rel in active_episodes(self.episodes, self.cycle_s, g):
            apply_episode(ep, rel, GRID_S, self._names, self._roce, mods)
        return mods

    def _set_cell(self) -> None:
        g, dt = self.grid_t, GRID_S
        mods = self.mods_at(g)
        self.token_factor = mods.token_factor
        for h in self.hosts.values():
            h.step(g, dt, self._k, mods)

    def at(self, t: float) -> Fabric:
        """Bring the simulation to time ``t`` (seconds since the start)."""
        if t < self.grid_t:
            self._reset()
        while self.grid_t + GRID_S <= t + 1e-9:
            for h in self.hosts.values():
                h.commit(GRID_S)
            self._k += 1
            self.grid_t = self._k * GRID_S
            self._set_cell()
        return self

    def advance(self, dt: float) -> Fabric:
        """Move the simulation forward by ``dt`` seconds from the latest grid time."""
        return self.at(self.grid_t + dt)

    def episode_at(self, t: float) -> str:
        """Which episode runs at ``t`` (``healthy`` when none)."""
        return episode_at(self.episodes, self.cycle_s, t)

    def token_rate(self) -> float:
        """The cluster's generated tokens per second in the current cell."""
        return sum(h.server.rate for h in self.hosts.values() if h.server is not None)

    def metrics_urls(self) -> dict[str, str]:
        """Inference server URL per host that runs one."""
        return {n: h.cfg.inference_url for n, h in self.hosts.items() if h.cfg.inference_url}


def demo_hosts() -> list[SimHostConfig]:
    """The built-in demo: 4 nodes, 2 RoCE rails each, an IB pair, a Thunderbolt pair, a Mac
    Studio pair over Thunderbolt 5 and a DGX Spark cabled to one of the Macs."""
    return [
        SimHostConfig("node1", ib_port=True, gpu_profile="h100", inference_url=DEMO_METRICS_URL),
        SimHostConfig("node2", ib_port=True, gpu_profile="h100"),
        SimHostConfig(
            "node3",
            tb_link=True,
            gpu_profile="rtx4080s",
            tb_self_uid=NODE3_UID,
            tb_peer_uid=NODE4_UID,
            tb_peer_name="node4",
        ),
        SimHostConfig(
            "node4",
            tb_link=True,
            gpu_profile="rtx4080s",
            tb_self_uid=NODE4_UID,
            tb_peer_uid=NODE3_UID,
            tb_peer_name="node3",
        ),
        # A Mac Studio pair over Thunderbolt 5 (issue 14; cables in fabtop/sim/mac_ids.py).
        SimHostConfig("mac1", roce_ports=0, gpus=0, macos=True),
        SimHostConfig("mac2", roce_ports=0, gpus=0, macos=True),
        # A DGX Spark on mac1's third receptacle (Thunderbolt 5; fabtop/sim/tb_ids.py).
        spark_host(),
    ]


def spark_host() -> SimHostConfig:
    """A DGX Spark (Linux, thunderbolt-net ``thunderbolt0``) on a Mac Studio's Thunderbolt 5
    receptacle (fabtop.sim.tb_ids): USB4 v2, 2 lanes of 40 Gb/s. No GPU and no RDMA port
    are simulated (no GB10 or DGX Spark capture to replay): the views say so."""
    return SimHostConfig(
        "spark1",
        roce_ports=0,
        gpus=0,
        tb_link=True,
        tb_self_uid=SPARK1_UID,
        tb_peer_uid=MAC_STUDIO1_UID,
        tb_peer_name=MAC_STUDIO1_NAME,
        tb_gbps_per_lane=40.0,
    )


def demo_fabric(seed: int = 0, **kw: Any) -> Fabric:
    """The ``--demo`` fabric, cycling through every episode (about 3 minutes per cycle)."""
    return Fabric(demo_hosts(), DEMO_CYCLE, cycle_s=DEMO_CYCLE_S, seed=seed, **kw)


def big_hosts(n: int, prefix: str = BIG_PREFIX) -> list[SimHostConfig]:
    """``n`` hosts ``prefix1`` .. ``prefixN`` of 8 rails: 8 RoCE ports each
    (``mlx5_0`` .. ``mlx5_7`` on ``enp65s0f0np0`` ..), the GPUs and the inference server
    of the demo's node1, no InfiniBand or Thunderbolt port."""
    if not 1 <= n <= BIG_MAX_HOSTS:
        raise ValueError(f"a big fabric has 1..{BIG_MAX_HOSTS} hosts, not {n}")
    return [
        SimHostConfig(
            f"{prefix}{i}",
            roce_ports=BIG_RAILS,
            gpu_profile="h100",
            inference_url=DEMO_METRICS_URL,
        )
        for i in range(1, n + 1)
    ]


def big_target(demo_host: str, names: Sequence[str]) -> str:
    """The host of a big fabric that plays the demo's ``demo_host`` (node1 .. node4):
    spread over the fabric (its first host, a quarter, half and three quarters in), so
    its faults are not all in one corner of the screen."""
    k = int(demo_host.removeprefix("node")) - 1
    return names[k * len(names) // 4]


def big_episodes(names: Sequence[str]) -> tuple[Episode, ...]:
    """The demo's cycle on a big fabric: each fault on the host :func:`big_target`
    picks, the Macs' episodes healthy (the big fabric has no Mac)."""
    out = []
    for ep in DEMO_CYCLE:
        if ep.kind in MAC_KINDS:
            out.append(Episode("healthy", ep.start_s, ep.duration_s))
        elif ep.kind != "healthy":
            out.append(
                dataclasses.replace(ep, target=big_target(DEFAULT_TARGET[ep.kind][0], names))
            )
        else:
            out.append(ep)
    return tuple(out)


def big_fabric(n: int, prefix: str = BIG_PREFIX, seed: int = 0, **kw: Any) -> Fabric:
    """``--demo --demo-hosts N``: :func:`big_hosts` cycling through the demo's episodes."""
    hosts = big_hosts(n, prefix)
    names = [h.name for h in hosts]
    return Fabric(hosts, big_episodes(names), cycle_s=DEMO_CYCLE_S, seed=seed, **kw)
