"""fabtop's own lag is its own finding, never the hosts' "no frame" (DESIGN §10, issue 27).

The loop's stalls are measured once (collectors.lag.LoopLag) and read by the state's
staleness and by the connect gate; these tests feed them on an injectable clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from collectors.frames import FrameDecoder
from collectors.gate import BEHIND_S, ConnectGate
from collectors.lag import NOISE_S, LoopLag
from fabtop.core.state import OWN_LAG_RULE, STALE, UP, effective_status
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from fabtop.run.demo import ManualClock, demo_config, demo_fabric_for, demo_state, feed_until
from fabtop.run.record import Recorder
from fabtop.run.replay import replay_findings


def test_stalls_overlapping_a_window_are_summed_and_cut_at_its_edges() -> None:
    clock = ManualClock(100.0)
    lag = LoopLag(clock=clock)
    lag.note(101.0, 104.0)  # 3 s behind
    lag.note(110.0, 110.01)  # ordinary jitter: not a stall
    lag.note(120.0, 121.0)
    clock.t = 130.0
    assert lag.stalled(100.0, 130.0) == pytest.approx(4.0)
    assert lag.stalled(102.0, 120.5) == pytest.approx(2.5)
    assert lag.stalled(104.0, 120.0) == 0.0
    assert lag.stalled(105.0) == pytest.approx(1.0)  # up to now
    assert lag.worst_since(100.0) == pytest.approx(3.0)
    assert lag.worst_since(104.0) == pytest.approx(1.0)
    assert lag.worst_since(121.0) == 0.0


def test_a_stall_still_going_on_counts_before_the_ticker_wakes() -> None:
    # The loop was blocked: a watchdog that runs in the same pass as the overdue ticker,
    # before it, must already see the stall.
    clock = ManualClock(50.0)
    seen: list[tuple[float, float]] = []
    lag = LoopLag(period=0.1, clock=clock, on_stall=lambda a, b: seen.append((a, b)))
    lag._due = 50.1  # the ticker went to sleep at 50.0 (what run() sets)
    clock.t = 53.1
    assert lag.stalled(49.0) == pytest.approx(3.0)
    assert seen == [(50.1, 53.1)]
    lag.note(50.1, 53.12)  # the ticker's own late wake does not count it twice
    assert lag.stalled(49.0, 53.2) == pytest.approx(3.0)
    assert seen == [(50.1, 53.1)]


async def test_the_ticker_measures_a_blocked_loop() -> None:
    import time

    lag = LoopLag(period=0.02)
    task = asyncio.create_task(lag.run())
    try:
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        time.sleep(0.4)  # the loop itself is blocked: the condition under test
        await asyncio.sleep(0.05)
        assert lag.worst_since(t0 - 0.1) >= 0.3
        assert lag.stalled(t0 - 0.1) >= 0.3
    finally:
        task.cancel()


def test_a_3_s_stall_is_one_own_finding_and_no_host_is_called_silent() -> None:
    state, clock, fab = demo_state(until_s=10.0)
    state.evaluate_per_frame = False
    lag = LoopLag(clock=clock)
    assert state.attach_lag(lag)
    # fabtop is blocked for 3 s: nothing is read, then every host's frame of the
    # stalled ticks arrives at once.
    start = clock.t
    clock.t += 3.0
    lag.note(start, clock.t)
    assert state.refresh_liveness() is True
    rules = [f.rule for f in state.findings]
    assert rules.count(OWN_LAG_RULE) == 1 and "host_stale" not in rules, rules
    (own,) = [f for f in state.findings if f.rule == OWN_LAG_RULE]
    assert own.summary == "fabtop fell behind by 3.0 s: the operator's machine is busy"
    assert own.severity == "info" and own.host is None  # no fault of the fabric
    assert all(effective_status(h, clock.t, 1.0) == UP for h in state.hosts.values())
    feed_until(fab, state, clock, 11.0, 12.0)
    state.evaluate()
    # The finding stays one episode while fabtop catches up, then clears.
    clock.t += DEFAULT_THRESHOLDS["restore_s"] + 0.1
    feed_until(fab, state, clock, 13.0, 13.0)
    state.evaluate()
    assert OWN_LAG_RULE not in [f.rule for f in state.findings]
    episodes = [e for e in state.finding_log.episodes() if e.rule == OWN_LAG_RULE]
    assert len(episodes) == 1 and not episodes[0].active
    assert not [e for e in state.finding_log.episodes() if e.rule == "host_stale"]


def test_a_host_silent_while_fabtop_is_on_time_is_still_named() -> None:
    state, clock, fab = demo_state(until_s=10.0)
    lag = LoopLag(clock=clock)
    state.attach_lag(lag)
    # node4 falls silent and fabtop is on time: 2 s, then fabtop stalls 3 s, then on
    # time again. node4's own silence (3 s without the stall) is past 2.5 intervals.
    feed_until(fab, state, clock, 11.0, 12.0, silent=("node4",))
    start = clock.t
    clock.t += 3.0
    lag.note(start, clock.t)
    feed_until(fab, state, clock, 16.0, 16.0, silent=("node4",))
    assert effective_status(state.hosts["node4"], clock.t, 1.0) == STALE
    stale = [f.host for f in state.findings if f.rule == "host_stale"]
    assert stale == ["node4"]
    assert [f.rule for f in state.findings].count(OWN_LAG_RULE) == 1
    # ... and a stall alone, long before, does not excuse it for ever.
    clock.t += 10.0
    state.evaluate()
    assert [f.host for f in state.findings if f.rule == "host_stale"]
    assert OWN_LAG_RULE not in [f.rule for f in state.findings]


def test_the_threshold_comes_from_the_config() -> None:
    state, clock, _ = demo_state(until_s=5.0)
    state.thresholds = {**state.thresholds, "self_lag_s": 5.0}
    lag = LoopLag(clock=clock)
    state.attach_lag(lag)
    start = clock.t
    clock.t += 3.0
    lag.note(start, clock.t)
    state.evaluate()
    rules = [f.rule for f in state.findings]
    assert OWN_LAG_RULE not in rules and "host_stale" not in rules, rules


def test_a_lag_on_another_clock_is_not_read() -> None:
    state, _, _ = demo_state(until_s=5.0)
    assert not state.attach_lag(LoopLag(clock=ManualClock(0.0)))
    assert state.lag is None


async def test_the_gate_admits_few_while_fabtop_is_behind_and_retries_first() -> None:
    clock = ManualClock(10.0)
    lag = LoopLag(clock=clock)
    gate = ConnectGate(3, lag, while_behind=1)
    order: list[str] = []

    async def start(name: str, retry: bool = False) -> None:
        await gate.acquire(retry=retry)
        order.append(name)

    lag.note(clock.t - 1.0, clock.t)  # a 1 s stall just now
    assert 1.0 > BEHIND_S > NOISE_S
    first = [asyncio.create_task(start(n)) for n in ("a", "b", "c")]
    await asyncio.sleep(0)
    assert order == ["a"] and gate.held == 1  # only one start while behind
    retry = asyncio.create_task(start("r", retry=True))
    await asyncio.sleep(0)
    clock.t += 5.0  # caught up: the gate looks again by itself
    async with asyncio.timeout(5):
        while len(order) < 3:
            await asyncio.sleep(0.01)
    assert order == ["a", "r", "b"] and gate.held == 3  # the retry went first
    gate.release()
    await asyncio.gather(*first, retry)
    assert order == ["a", "r", "b", "c"]


def test_a_recording_keeps_the_stall_and_replay_says_what_the_live_run_said(
    tmp_path: Path,
) -> None:
    cfg = demo_config(1.0)
    fab = demo_fabric_for(cfg)
    clock = ManualClock(0.0)
    path = tmp_path / "stall.fabrec"
    rec = Recorder(path, cfg, clock=clock).open()
    decoders = {n: FrameDecoder() for n in fab.hosts}

    def tick(t: float) -> None:
        clock.t = t
        for name, host in fab.hosts.items():
            for frame in decoders[name].feed(host.frame(t).encode()):
                rec.frame(name, frame)
        rec.evaluated()

    for t in range(1, 6):
        tick(float(t))
    # fabtop was blocked from 5.1 s to 9 s; the rules run before the frames it did not
    # read come in (as a live loop's first pass after a stall may).
    clock.t = 9.0
    rec.stalled(3.9)
    rec.evaluated()
    tick(9.5)
    rec.close()
    for at in (9.0, 9.5):
        rules = [f.rule for t, f in replay_findings(path) if t == at]
        assert rules.count(OWN_LAG_RULE) == 1 and "host_stale" not in rules, (at, rules)
