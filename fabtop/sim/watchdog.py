"""The fast probe's PFC watchdog on a simulated host: the real code, on simulated readings.

A node running the fast probe watches its lossless priorities between frames and sends a
``@@fabtop-event`` the moment a storm holds (collectors/probe_fast.py, ``Watchdog``). A
simulated host does the same with the same class: each frame's tick is a reading, and a
port with pause activity is read again every ``FAST_S`` until the next tick, from the
simulation's counters at that instant (they grow linearly inside a grid cell, so any
time at or after the latest grid time reads exact values).
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors import probe_fast
from fabtop.sim.host import SimHost

FAST_S = probe_fast.FAST_S


class SimWatchdog:
    """One simulated host's watchdog; ``events`` returns what the probe would have sent.

    ``args``: the probe's argument words, of which the storm thresholds are read as the
    probe reads them (a session sends the ones its rules judge frames by).
    """

    def __init__(self, host: SimHost, interval_s: float, args: Sequence[str] = ()) -> None:
        self.host = host
        self.a = probe_fast.Args([a for a in args if a.split("=", 1)[0] in probe_fast.STORM_ARGS])
        self.a.iv = max(1, round(interval_s * 1000))
        self.scan = None  # no sysfs tree: the flat limit without a link speed
        self.eth = self  # "has ethtool statistics": the watchdog may fast-sample
        self._out: list[bytes] = []
        self.wd = probe_fast.Watchdog(self)  # type: ignore[arg-type]

    # -- what the watchdog asks of its probe
    def write(self, data: bytes) -> None:
        self._out.append(data)

    def wall_ns(self, mono: float | None = None) -> int:
        return round((self.host.fabric.base_epoch_s + (mono or 0.0)) * 1e9)

    def uptime(self) -> str:
        return f"{self.host.cfg.uptime_s + self.host.fabric.grid_t:.2f}"

    # -- driving it
    def read(self, t: float) -> list[bytes]:
        """One reading of every RoCE port at simulation time ``t``; the events it made."""
        fab = self.host.fabric
        fab.at(t)
        frac = t - fab.grid_t
        for i, port in enumerate(self.host.ports):
            items = port.eth.items(frac)
            names = [n.encode() for n, _ in items]
            self.wd.seen(self.host.cfg.netdev(i), t, (names, tuple(v for _, v in items)))
        out, self._out = self._out, []
        return out

    def next_read(self) -> float | None:
        """Simulation time of the next fast reading, None while no port shows pauses."""
        nxt = self.wd.next_read()
        return None if nxt == float("inf") else nxt

    def after_read(self, t: float) -> None:
        """Schedule the next fast reading as the probe's loop does (``Watchdog.sample``)."""
        for n in [n for n, until in self.wd.fast_until.items() if t > until]:
            del self.wd.fast_until[n]
        self.wd.next_t = t + FAST_S if self.wd.fast_until else float("inf")
