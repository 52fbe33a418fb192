"""How far behind fabtop's own event loop is: one measurement that every judge of silence reads.

A frame that fabtop did not read because its own loop was blocked (a loaded operator
machine, a long repaint, the process descheduled) is not the host's silence. A periodic
task (:meth:`LoopLag.run`) notes how late it wakes; each late wake is a *stall*, kept
with its start and end. The runners' watchdogs and the fabric state subtract the stalls
that overlap a host's silence before calling it stale, down or slow to start, and the
state says "fabtop fell behind" once instead. The time a frame waits in this process
between the transport and the consumer is the loop's lag too: the runner hands each
frame on in the callback that read it, so what a frame waits for is the loop.

A stall still going on counts as well: when the ticker is overdue, whoever asks first
(a watchdog that woke in the same loop pass) records the stall up to now, so it is
never judged without it.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable

# A wake later than this is a stall; below it is the loop's ordinary jitter (a timer's
# resolution, one pass of frame handling on a busy loop).
NOISE_S = 0.05
# Stalls remembered: enough for a loaded machine's late wake on every tick for minutes.
# A silence longer than what is remembered is excused only for the part remembered (it
# errs towards naming the host).
MAX_STALLS = 4096


class LoopLag:
    """Stalls of the event loop on ``clock``; :meth:`run` measures them, the rest reads them.

    ``clock`` must be the loop's clock (``time.monotonic``), except for a reader fed with
    :meth:`note` alone (a replay, on the recording's clock). ``on_stall(start, end)`` is
    told of each stall as it is recorded (a recorder keeps it).
    """

    def __init__(
        self,
        period: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        on_stall: Callable[[float, float], None] | None = None,
    ) -> None:
        self.period = period
        self.clock = clock
        self.on_stall = on_stall
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._total: list[float] = []  # stalled seconds up to and including each stall
        # When the ticker is due to wake (None: no ticker runs; only note() feeds this).
        self._due: float | None = None
        self._noted_until = float("-inf")

    async def run(self) -> None:
        """Wake every ``period`` and note how late each wake came; runs until cancelled."""
        while True:
            self._due = self.clock() + self.period
            await asyncio.sleep(self.period)
            self.note(self._due, self.clock())

    def note(self, due: float, woke: float) -> None:
        """The loop should have run something at ``due`` and ran it at ``woke``."""
        start = max(due, self._noted_until)
        if woke - start <= NOISE_S:
            return
        self._noted_until = woke
        total = (self._total[-1] if self._total else 0.0) + (woke - start)
        self._starts.append(start)
        self._ends.append(woke)
        self._total.append(total)
        if len(self._ends) > 2 * MAX_STALLS:
            del self._starts[:MAX_STALLS], self._ends[:MAX_STALLS], self._total[:MAX_STALLS]
        if self.on_stall is not None:
            self.on_stall(start, woke)

    def catch_up(self, now: float | None = None) -> None:
        """Record the stall going on now, if the ticker is overdue (see the module's doc)."""
        if self._due is None:
            return
        t = self.clock() if now is None else now
        if t > self._due:
            self.note(self._due, t)

    def stalled(self, since: float, until: float | None = None) -> float:
        """Seconds of ``[since, until]`` (default: up to now) the loop spent stalled."""
        self.catch_up()
        end = self.clock() if until is None else until
        if end <= since or not self._ends:
            return 0.0
        first = bisect.bisect_right(self._ends, since)  # the first stall ending after since
        last = bisect.bisect_left(self._starts, end) - 1  # the last stall starting before end
        if last < first:
            return 0.0
        before = self._total[first - 1] if first > 0 else 0.0
        out = self._total[last] - before
        out -= max(0.0, since - self._starts[first])  # only the part after since
        out -= max(0.0, self._ends[last] - end)  # and before until
        return max(0.0, out)

    def worst_since(self, since: float) -> float:
        """The longest stall that ended after ``since`` (0 when none), the one now included."""
        self.catch_up()
        first = bisect.bisect_right(self._ends, since)
        return max(
            (e - s for s, e in zip(self._starts[first:], self._ends[first:], strict=True)),
            default=0.0,
        )
