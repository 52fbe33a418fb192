"""The demo driven tick by tick: tests move simulated time, they never sleep for it.

A test that sleeps wall-clock time to let the simulation run records fewer frames on a
starved machine (issue 27). Here the simulation's clock is stepped: a test advances it
one tick and waits until the session has taken that tick's frames (every stream waits
for the next tick), however long that takes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from collectors.transport.base import Transport
from fabtop.config import Config
from fabtop.run.demo import demo_transports
from fabtop.sim.transport import DemoTransport, SimClock


async def until(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Wait for the code under test to do something, with a deadline."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"no {what} after {timeout:g} s")
        await asyncio.sleep(0.005)


def stepped_demo(config: Config) -> tuple[dict[str, Transport], SimClock]:
    """The demo's transports for ``config`` on one stepped simulation clock."""
    transports = demo_transports(config, stepped=True)
    sim = next(iter(transports.values()))
    assert isinstance(sim, DemoTransport)
    return transports, sim.clock


async def run_ticks(
    clock: SimClock,
    streams: int,
    ticks: int,
    step: float = 1.0,
    done: Callable[[], int] | None = None,
) -> None:
    """Advance ``clock`` ``ticks`` times by ``step``; after each, wait until all ``streams``
    have handed over their frames of it (and, with ``done``, until that count grew: a
    rules run, say)."""
    await until(lambda: clock.waiting == streams, "stream waiting for its first tick")
    for _ in range(ticks):
        before = done() if done is not None else 0

        def ticked(before: int = before) -> bool:
            return clock.waiting == streams and (done is None or done() > before)

        clock.advance_to(clock.now() + step)
        await until(ticked, f"frames of the tick at {clock.now():g} s")
