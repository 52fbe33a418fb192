"""Many hosts over one real sshd on loopback: the fan-out test and benchmark share this."""

from __future__ import annotations

import asyncio
import os
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from collectors.frames import Frame
from fabtop.config import Config, HostConfig, SshTarget
from fabtop.core.state import OWN_LAG_RULE
from fabtop.run.compose import open_session
from fabtop.run.session import MetricsReading
from tests.integration.sshd import Sshd, descendants

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def small_tree(root: Path, i: int) -> Path:
    """A cheap node: two netdevs with moving-looking counters, an ethtool that prints nothing."""
    for n, dev in enumerate(("eth0", "eth1")):
        d = root / "sys" / "class" / "net" / dev
        (d / "statistics").mkdir(parents=True, exist_ok=True)
        for k, name in enumerate(
            ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "rx_errors")
        ):
            (d / "statistics" / name).write_text(f"{(i + 1) * 1000 + n * 100 + k}\n")
        (d / "operstate").write_text("up\n")
        (d / "mtu").write_text("9000\n")
        (d / "speed").write_text("100000\n")
    b = root / "bin"
    b.mkdir(parents=True, exist_ok=True)
    (b / "ethtool").write_text("#!/bin/sh\nexit 0\n")
    (b / "ethtool").chmod(0o755)
    return root


def fleet_config(sshd: Sshd, base: Path, n: int, interval: float = 1.0) -> Config:
    """``n`` hosts named n1..nN, all on one sshd, each with its own small tree."""
    ssh_cfg = base / "ssh_config"
    ssh_cfg.write_text(f"Host *\n  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n")
    hosts = []
    for i in range(1, n + 1):
        root = small_tree(base / f"n{i}", i)
        hosts.append(
            HostConfig(
                name=f"n{i}",
                ssh=SshTarget(host=sshd.host, user=sshd.user, port=sshd.port),
                sysfs=str(root / "sys"),
                path=(str(root / "bin"),),
            )
        )
    return Config(
        hosts=hosts,
        interval=interval,
        known_hosts=str(sshd.known_hosts_path),
        ssh_config=str(ssh_cfg),
    )


@dataclass(slots=True)
class FanoutResult:
    """What the fan-out run measured."""

    hosts: int
    up: int
    ages: list[float]  # sample ages seen by a 10 Hz viewer after warm-up (s)
    cpu_s: float  # this process's CPU time during the measurement
    wall_s: float
    frames: int
    # Hosts not yet streaming when the warm-up gave up waiting, with their status and
    # error: a connection-storm failure is named, not shown only as an infinite age.
    late: dict[str, str] = field(default_factory=dict)
    startup_s: float = 0.0  # from the session's start until every host had 2 frames (or gave up)
    # CPU seconds on the node side during the measurement, per kind of process under the
    # sshd (sshd, probe = python3, other): where the machine's CPU went besides the collector.
    node_cpu_s: dict[str, float] = field(default_factory=dict)
    # What the runners said of the hosts over the whole run: host -> "stale"/"down" lines,
    # and how many starts were given up on for a late first frame.
    blamed: dict[str, list[str]] = field(default_factory=dict)
    slow_starts: int = 0
    own_lag: int = 0  # fabtop_behind episodes (fabtop's own stalls, said once each)
    silent: int = 0  # host_stale and host_unreachable episodes (hosts named as not reporting)
    lag_max_s: float = 0.0  # the longest stall of fabtop's own loop

    def startup_line(self) -> str:
        """How the start went: hosts blamed for silence, starts given up on, own lag."""
        return (
            f"start: {len(self.blamed)} hosts called stale or down by the runners, "
            f"{self.silent} host findings of silence, {self.slow_starts} starts given up "
            f"on for a late first frame; fabtop behind {self.own_lag} times, by "
            f"{self.lag_max_s:.2f} s at most"
        )

    def pct(self, q: float) -> float:
        """Quantile ``q`` of the sample ages."""
        a = sorted(self.ages)
        return a[min(len(a) - 1, int(q * len(a)))] if a else float("inf")

    @property
    def cpu_share(self) -> float:
        """Collector CPU as a share of one core."""
        return self.cpu_s / self.wall_s

    def summary(self) -> str:
        """One line of figures."""
        node = ", ".join(
            f"{k} {100 * v / self.wall_s:.1f} %" for k, v in sorted(self.node_cpu_s.items())
        )
        streaming = (
            f"all streaming {self.startup_s:.0f} s after the start"
            if not self.late
            else f"{self.hosts - len(self.late)} streaming when the wait for all "
            f"gave up, {self.startup_s:.0f} s after the start"
        )
        return (
            f"{self.hosts} hosts at 1 Hz over real sshd: {self.up} up at the end "
            f"({streaming}), sample age "
            f"p50 {self.pct(0.5):.2f} s p99 {self.pct(0.99):.2f} s max {max(self.ages):.2f} s; "
            f"collector CPU {100 * self.cpu_share:.1f} % of one core "
            f"({1000 * self.cpu_s / max(1, self.frames):.2f} ms per host-frame)"
            + (f"; node side {node} of one core" if node else "")
            + "".join(
                f"; {h} not streaming at that wait: {why}" for h, why in sorted(self.late.items())
            )
        )


class _Statuses:
    """An event tap that keeps what the runners said of each host."""

    def __init__(self) -> None:
        self.blamed: dict[str, list[str]] = {}
        self.slow_starts = 0

    def frame(self, host: str, frame: Frame, arrived_unix: float | None = None) -> None:
        pass

    def stalled(self, late_s: float) -> None:
        pass

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        if state in ("stale", "down"):
            self.blamed.setdefault(host, []).append(f"{state}: {error}")
        elif state == "connecting" and error:
            self.slow_starts += 1

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        pass

    def evaluated(self) -> None:
        pass


async def fanout(
    config: Config,
    warmup_s: float,
    measure_s: float,
    node_pid: int | None = None,
    stall_s: float = 0.0,
) -> FanoutResult:
    """Run a Session on ``config``; sample every host's age at 10 Hz after warm-up.

    ``node_pid``: the sshd serving the hosts; its sessions' CPU is measured too.
    ``stall_s``: once a quarter of the hosts stream, block the event loop this long, as
    a loaded operator machine does (fabtop's own stall in the middle of the start).
    """
    started = time.monotonic()
    statuses = _Statuses()
    session = open_session(config, events=statuses)
    state = session.state
    task = asyncio.create_task(session.run())
    try:
        # 64 SSH handshakes at once on a small machine: a host refused at first waits out
        # its reconnect backoff. Freshness is measured once every host streams.
        deadline = time.monotonic() + warmup_s + 90
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            streaming = sum(h.frames >= 2 for h in state.hosts.values())
            if stall_s and streaming >= len(state.hosts) / 4:
                time.sleep(stall_s)  # the loop itself is blocked: the condition under test
                stall_s = 0.0
            if streaming == len(state.hosts):
                break
        startup_s = time.monotonic() - started
        late = {
            h.name: f"{h.status}, {h.frames} frames, last said: "
            f"{h.error or (h.warnings[-1] if h.warnings else 'nothing')}"
            for h in state.hosts.values()
            if h.frames < 2
        }
        await asyncio.sleep(warmup_s)
        frames0 = sum(h.frames for h in state.hosts.values())
        node0 = _tree_cpu(node_pid)
        cpu0, t0 = _cpu(), time.monotonic()
        ages: list[float] = []
        while time.monotonic() - t0 < measure_s:
            now = time.monotonic()
            ages.extend(_age_or_inf(h.age_s(now)) for h in state.hosts.values())
            await asyncio.sleep(0.1)
        cpu, wall = _cpu() - cpu0, time.monotonic() - t0
        node1 = _tree_cpu(node_pid)
        node_cpu: dict[str, float] = {}
        for pid, (kind, used) in node1.items():
            node_cpu[kind] = node_cpu.get(kind, 0.0) + used - node0.get(pid, (kind, 0.0))[1]
        frames = sum(h.frames for h in state.hosts.values()) - frames0
        up = sum(h.status == "up" for h in state.hosts.values())
        episodes = state.finding_log.episodes()
        own = sum(e.rule == OWN_LAG_RULE for e in episodes)
        silent = sum(e.rule in ("host_stale", "host_unreachable") for e in episodes)
        lag_max = session.lag.worst_since(started)
    finally:
        await session.stop()
        task.cancel()
    return FanoutResult(
        len(config.hosts),
        up,
        ages,
        cpu,
        wall,
        frames,
        late,
        startup_s,
        node_cpu,
        statuses.blamed,
        statuses.slow_starts,
        own,
        silent,
        lag_max,
    )


def _tree_cpu(root: int | None) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every process below ``root``, by pid, with its kind."""
    out: dict[int, tuple[str, float]] = {}
    for pid in descendants(root) if root is not None else ():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        f = stat[stat.rfind(")") + 2 :].split()
        kind = (
            "sshd" if comm.startswith("sshd") else "probe" if comm.startswith("python") else "other"
        )
        out[pid] = (kind, (int(f[11]) + int(f[12])) / _CLK_TCK)
    return out


def _age_or_inf(age: float | None) -> float:
    # An age of exactly 0.0 is a fresh sample (a coarse clock gives it), not a missing one.
    return float("inf") if age is None else age


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_count() -> int:
    """CPUs this process may use."""
    return len(os.sched_getaffinity(0))
