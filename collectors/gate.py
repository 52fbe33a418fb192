"""The connect gate: how many hosts of a session may be starting (handshake to first frame) at once.

256 handshakes and probe starts at one moment overran a bastion's MaxStartups (OpenSSH:
10:30:100) and, when the nodes share the operator's CPUs (a test fleet on one machine),
those CPUs: fabtop's own loop fell seconds behind and every host looked silent. So:
- at most ``limit`` hosts hold a slot, from before the SSH handshake until their first
  frame (or until the runner gives the slot up on a slow start);
- while fabtop's own loop is behind (:class:`~collectors.lag.LoopLag`), only
  ``while_behind`` may: a new login and probe start would only add to what it is behind
  on. On an operator machine that keeps up (remote nodes do their own starting) this
  never binds;
- a host whose start was given up on (no first frame in time) goes before the hosts that
  have not started yet: it already waited its turn once, and a slow start is not the
  host's failure.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

from collectors.lag import LoopLag

# fabtop counts as behind for admission when a wake came this late in the last RECENT_S:
# a quarter of the default 1 s interval, far above a loop's ordinary jitter (NOISE_S).
BEHIND_S = 0.25
RECENT_S = 2.0
# How often a gate held back only by the loop's lag looks again.
RECHECK_S = 0.25


class ConnectGate:
    """A first-come gate with a slot count that shrinks while fabtop is behind."""

    def __init__(self, limit: int, lag: LoopLag | None = None, while_behind: int = 4) -> None:
        self.limit = max(1, limit)
        self.while_behind = max(1, min(while_behind, self.limit))
        self.lag = lag
        self.held = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []  # (retry? 0 : 1, seq)
        self._seq = itertools.count()
        self._recheck: asyncio.TimerHandle | None = None

    def locked(self) -> bool:
        """True when a new start would wait."""
        return bool(self._waiting) or not self._room()

    async def acquire(self, retry: bool = False) -> None:
        """Wait for a slot; ``retry``: a start given up on goes before first starts."""
        if not self._waiting and self._room():
            self.held += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (0 if retry else 1, next(self._seq), fut))
        self._admit()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot came with the cancellation: hand it on
            raise

    def release(self) -> None:
        """Give a slot back; the next waiter that fits gets it."""
        self.held = max(0, self.held - 1)
        self._admit()

    def _behind(self) -> bool:
        lag = self.lag
        return lag is not None and lag.worst_since(lag.clock() - RECENT_S) >= BEHIND_S

    def _room(self) -> bool:
        if self.held >= self.limit:
            return False
        return self.held < self.while_behind or not self._behind()

    def _admit(self) -> None:
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        while self._waiting and self._room():
            _, _, fut = heapq.heappop(self._waiting)
            if fut.done():  # its runner was stopped while waiting
                continue
            self.held += 1
            fut.set_result(None)
        while self._waiting and self._waiting[0][2].done():
            heapq.heappop(self._waiting)
        if self._waiting and self.held < self.limit and self._recheck is None:
            # Held back by the lag alone: no release may come to wake it, so look again.
            self._recheck = asyncio.get_running_loop().call_later(RECHECK_S, self._admit)
