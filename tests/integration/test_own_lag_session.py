"""A whole Session whose event loop is really blocked (issue 27): fabtop's own stall is one
finding of its own; no host is called stale, down or silent for it, and a host that is
really silent while fabtop is on time still is.

The demo's simulated hosts stream through the live path at a 0.25 s interval, where a
3 s stall is 12 intervals: past the runner's stale (0.6 s) and down (2.5 s) limits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Sequence

from collectors.frames import Frame
from collectors.transport.base import Transport
from fabtop.core.state import OWN_LAG_RULE, FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.demo import demo_config, demo_transports
from fabtop.run.session import MetricsReading, Session
from fabtop.sim.transport import DemoTransport

IVAL = 0.25
STALL_S = 3.0


class Muted(DemoTransport):
    """A simulated host that stops sending frames on cue, its connection left open."""

    muted = False  # (set on the one instance of a test)

    async def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        async for chunk in super().stream(script, args):
            if not self.muted:
                yield chunk


class Statuses:
    """An event tap that keeps every host status the runners reported."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []

    def frame(self, host: str, frame: Frame, arrived_unix: float | None = None) -> None:
        pass

    def stalled(self, late_s: float) -> None:
        pass

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        self.seen.append((host, state, error))

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        pass

    def evaluated(self) -> None:
        pass


async def _until(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"no {what} after {timeout:g} s")
        await asyncio.sleep(0.02)


def _frames(state: FabricState) -> dict[str, int]:
    return {n: h.frames for n, h in state.hosts.items()}


async def test_a_3_s_stall_of_the_loop_is_one_finding_and_no_host_is_blamed() -> None:
    cfg = demo_config(IVAL, "healthy")
    sims = demo_transports(cfg)
    silent = "node4"
    sim = sims[silent]
    assert isinstance(sim, DemoTransport)
    muted = Muted(sim.host, sim.clock)  # the same simulated host, able to fall silent
    transports: dict[str, Transport] = {**sims, silent: muted}
    state = fabric_state(cfg)
    tap = Statuses()
    session = Session(cfg, state, transports=transports, events=tap, discover_inference=False)
    task = asyncio.create_task(session.run())
    try:
        await _until(lambda: all(h.frames >= 4 for h in state.hosts.values()), "frames")
        # node4 falls silent while fabtop is on time: it is named, as before.
        muted.muted = True
        await _until(
            lambda: any(f.host == silent for f in state.findings if f.rule == "host_stale"),
            f"{silent} named stale",
        )
        before = _frames(state)
        named_before = len(tap.seen)
        time.sleep(STALL_S)  # fabtop's own loop is blocked: what is under test
        others = [n for n in state.hosts if n != silent]
        # Every other host's frames of the stalled ticks come in, and the rules run.
        await _until(
            lambda: all(state.hosts[n].frames > before[n] + 2 for n in others),
            "frames after the stall",
        )
        await _until(
            lambda: any(f.rule == OWN_LAG_RULE for f in state.findings), "fabtop's own finding"
        )
        state.refresh_liveness()  # what the dashboard does every tick
        after = list(state.findings)
    finally:
        muted.muted = False
        await session.stop()
        task.cancel()
    own = [f for f in after if f.rule == OWN_LAG_RULE]
    assert len(own) == 1, after
    assert own[0].summary.startswith("fabtop fell behind by ")
    assert own[0].summary.endswith(" s: the operator's machine is busy")
    behind = own[0].number("behind_s")
    assert behind is not None and behind >= STALL_S - 0.5
    # No other host was called stale or down, by the runners or by the state, ever.
    blamed = [
        (h, s, e) for h, s, e in tap.seen[named_before:] if h != silent and s in ("stale", "down")
    ]
    assert blamed == [], blamed
    episodes = state.finding_log.episodes()
    assert {e.subject for e in episodes if e.rule in ("host_stale", "host_unreachable")} == {
        silent
    }, [(e.rule, e.subject) for e in episodes]
    assert len([e for e in episodes if e.rule == OWN_LAG_RULE]) == 1
    # The silent host stays named: its silence while fabtop was on time is its own.
    assert any(f.host == silent and f.rule in ("host_stale", "host_unreachable") for f in after)
