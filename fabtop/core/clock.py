"""Where each host's frames sit on the operator's time axis: a measured clock offset per host.

Rates divide by remote time deltas (DESIGN.md §2) and never need this. But the history,
the timeline and the rules line hosts up against each other, and one node whose clock
is a day (or two minutes) ahead would otherwise stretch the shared axis until every
other host falls out of the window. So each host's frames are placed at
``remote time - offset``, the offset being how far the host's clock is ahead of the
operator's.

The offset is measured from arrivals: ``remote - arrival`` is the offset minus the
frame's delay, and the delay is never negative but often long (a frame is stamped when
its tick starts; its tools may run up to their timeout before it ships, then it crosses
the network). The largest ``remote - arrival`` over the last :data:`OFFSET_WINDOW`
frames is the frame that waited least: one slow tick does not move the estimate, and a
window (not all time) lets the estimate follow a clock that was set right.

Without arrival times (a replay of a recording without them, the tests' fabrics) the
remote clock is the axis, as before, and a wall-clock step is bridged with the uptime
delta the rate engine used, so the charts neither stall nor leave a hole.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

# Frames the offset is estimated over: a minute at the default 1 s interval, long enough
# for one fast frame among slow ones, short enough to follow a clock that was corrected.
OFFSET_WINDOW = 60
# Placement moves only when the estimate moved more than this: the timeline's finest bin
# is 1 s, and hosts whose clocks agree within it (NTP, PTP) keep their own timestamps.
PLACE_TOLERANCE_S = 1.0


@dataclass(slots=True)
class HostClock:
    """One host's offset estimate and the offset its frames are placed with."""

    skews: deque[float] = field(default_factory=lambda: deque(maxlen=OFFSET_WINDOW))
    applied: float = 0.0  # seconds subtracted from the remote time to place a frame
    last_t: float | None = None  # placed time of the newest frame

    @property
    def offset(self) -> float | None:
        """Seconds the host's clock is ahead of the operator's (None: nothing measured)."""
        return max(self.skews) if self.skews else None


class Clocks:
    """Per-host clock offsets, and the placement of each frame on the operator's axis."""

    __slots__ = ("_hosts",)

    def __init__(self) -> None:
        self._hosts: dict[str, HostClock] = {}

    def forget(self, host: str) -> None:
        """Drop what was measured of ``host``'s clock (a host removed for good)."""
        self._hosts.pop(host, None)

    def offset(self, host: str) -> float | None:
        """Seconds ``host``'s clock is ahead of the operator's, or None when not measured."""
        c = self._hosts.get(host)
        return c.offset if c is not None else None

    def place(
        self,
        host: str,
        remote_s: float,
        arrived_unix: float | None,
        *,
        stepped: bool = False,
        restarted: bool = False,
        interval_s: float | None = None,
    ) -> float:
        """The operator-axis time of a frame stamped ``remote_s`` (unix seconds).

        ``arrived_unix``: the operator's wall clock when the frame arrived (None: no
        estimate from this frame). ``stepped``/``restarted``/``interval_s``: what the rate
        engine saw (the remote wall clock stepped, the host rebooted, the remote-time delta
        it divided by).
        """
        c = self._hosts.get(host)
        if c is None:
            c = self._hosts[host] = HostClock()
        if stepped or restarted:
            c.skews.clear()  # measured against a clock that is no more
        if arrived_unix is not None and math.isfinite(arrived_unix):
            c.skews.append(remote_s - arrived_unix)
            est = max(c.skews)
            if abs(est - c.applied) > PLACE_TOLERANCE_S:
                c.applied = est
        elif c.skews:
            pass  # a frame without its arrival time: keep the measured placement
        elif restarted:
            c.applied = 0.0
        elif stepped and c.last_t is not None and interval_s is not None:
            # Follow uptime across the step, as the rate engine did.
            c.applied = remote_s - (c.last_t + interval_s)
        t = remote_s - c.applied
        if c.last_t is None or t > c.last_t:
            c.last_t = t
        return t
