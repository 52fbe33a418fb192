"""The guard, as a user of the state sees it: a step that raises is a line on its host.

Frames come from the simulated fabric through the live path (decoder, FabricState);
one host's pipeline step is made to raise. The other hosts go on, the bad one is
FAILING with the error, never "up", and the fabric is not called healthy.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from collectors.frames import Frame, FrameDecoder
from collectors.guard import Guard, failure_line
from collectors.layout import Shapes
from collectors.runner import OffLoop, supervise
from collectors.samples import HostSample
from fabtop.core import pipeline
from fabtop.core.state import DOWN, FAILING, UP, FabricState
from fabtop.run.demo import demo_state, feed_until
from tui.rows.links import host_rows, summary
from tui.widgets.findings_panel import findings_text

BAD = "node3"


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """``broken["on"]`` makes assembling ``BAD``'s frames raise (a parser bug stand-in)."""
    real = pipeline.assemble
    switch = {"on": False}

    def assemble(host: str, frame: Frame, kept: Shapes | None = None) -> HostSample:
        if host == BAD and switch["on"]:
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return real(host, frame, kept)

    monkeypatch.setattr(pipeline, "assemble", assemble)
    return switch


def test_failure_line_is_one_clean_bounded_line() -> None:
    exc = ValueError("bad\n\x1b]52;c;cGF5bG9hZA==\x07" + "x" * 9000)
    line = failure_line("n1: frame dropped", exc)
    assert line.startswith("n1: frame dropped: ValueError: bad")
    assert "\n" not in line and "\x1b" not in line and "cGF5bG9hZA" not in line
    assert len(line) <= 300
    assert failure_line("w", StopIteration()) == "w: StopIteration"


def test_guard_keeps_the_error_and_lets_cancellation_through() -> None:
    g = Guard("n1: step")
    with g:
        raise KeyError("x")
    assert g.error == "n1: step: KeyError: 'x'"
    with g:
        pass
    assert g.error is None
    with pytest.raises(KeyboardInterrupt), g:
        raise KeyboardInterrupt
    with pytest.raises(asyncio.CancelledError), g:
        raise asyncio.CancelledError


def test_a_frame_that_cannot_be_used_marks_its_host_failing_until_one_can(
    broken: dict[str, bool],
) -> None:
    state, clock, fab = demo_state(until_s=10.0)
    frames = {n: h.frames for n, h in state.hosts.items()}
    broken["on"] = True
    feed_until(fab, state, clock, 11.0, 15.0)
    bad = state.hosts[BAD]
    assert bad.status == FAILING and bad.frames == frames[BAD]
    assert bad.error == (
        f"{BAD}: frame dropped: ValueError: Exceeds the limit (4300 digits) "
        "for integer string conversion"
    )
    assert list(bad.warnings).count(bad.error) == 1  # five failed frames, one line
    for n, h in state.hosts.items():
        if n != BAD:
            assert h.status == UP and h.frames == frames[n] + 5
    # What a user sees: never "up", counted apart, a finding, not "looks healthy".
    now = clock.t
    row = next(r for r in host_rows(state, now, 1.0) if r.name == BAD)
    assert row.status == FAILING and not row.live and row.error == bad.error
    assert summary(state, now, 1.0).hosts[FAILING] == 1
    (finding,) = [f for f in state.findings if f.rule == "host_failing"]
    assert finding.host == BAD and finding.severity == "critical"
    assert "cannot be used" in finding.summary and "4300 digits" in finding.summary
    assert "looks healthy" not in findings_text(state.findings, 6).plain
    # The runner's own "up" (its connection is fine) does not hide it.
    state.apply_status(BAD, UP, None, rtt_s=0.001)
    assert state.hosts[BAD].status == FAILING
    broken["on"] = False
    feed_until(fab, state, clock, 16.0, 16.0)
    assert bad.status == UP and bad.error is None and bad.frames == frames[BAD] + 1
    assert not any(f.rule == "host_failing" for f in state.findings)


def test_a_down_host_is_a_finding_so_blind_is_never_healthy() -> None:
    state = demo_state(until_s=5.0)[0]
    state.evaluate()
    assert not any(f.rule == "host_unreachable" for f in state.findings)
    state.apply_status("node2", DOWN, "node2 (admin@10.0.0.2): connection refused")
    (f,) = [f for f in state.findings if f.rule == "host_unreachable"]
    assert f.host == "node2" and f.severity == "critical"
    assert f.summary == "node2 did not answer: node2 (admin@10.0.0.2): connection refused"
    assert state.findings[0] is f  # blind comes first
    assert "looks healthy" not in findings_text(state.findings, 6).plain


def test_a_rule_that_raises_is_a_warning_not_a_crash() -> None:
    def rules(st: FabricState) -> list:  # type: ignore[type-arg]
        raise ZeroDivisionError("division by zero")

    state = FabricState([], rules=rules)
    state.evaluate()
    assert [(f.rule, f.summary) for f in state.findings] == [
        ("fabtop", "a health rule failed: ZeroDivisionError: division by zero")
    ]


def test_the_arrival_time_given_reaches_the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float | None] = []
    real = pipeline.Pipeline.apply_frame

    def apply_frame(
        self: pipeline.Pipeline, host: str, frame: Frame, arrived_unix: float | None = None
    ) -> object:
        seen.append(arrived_unix)
        return real(self, host, frame, arrived_unix=arrived_unix)

    monkeypatch.setattr(pipeline.Pipeline, "apply_frame", apply_frame)
    state, _, fab = demo_state(until_s=1.0)
    assert seen and set(seen) == {None}  # fed by hand: no clock estimate
    frame = next(iter(FrameDecoder().feed(fab.hosts["node1"].frame(2.0).encode())))
    state.apply_frame("node1", frame, arrived_unix=1234.5)
    assert seen[-1] == 1234.5


async def test_supervise_restarts_a_task_that_raises_and_says_so() -> None:
    runs: list[float] = []
    said: list[str] = []

    async def work() -> None:
        runs.append(time.monotonic())
        if len(runs) < 3:
            raise RuntimeError(f"bug {len(runs)}")

    await asyncio.wait_for(supervise("n1: poller", work, said.append, backoff=(0.05, 0.1)), 5)
    assert said == ["n1: poller: RuntimeError: bug 1", "n1: poller: RuntimeError: bug 2"]
    assert len(runs) == 3 and runs[1] - runs[0] >= 0.02 and runs[2] - runs[1] >= 0.04


async def test_supervise_is_cancelled_like_any_task() -> None:
    async def forever() -> None:
        await asyncio.sleep(3600)

    task = asyncio.create_task(supervise("n1", forever, lambda _: None))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_offloop_parses_in_a_thread_with_a_deadline_and_no_pile_up() -> None:
    off = OffLoop(workers=2, deadline_s=0.2, cooldown=0.0)
    release = threading.Event()
    try:
        assert await off.run("k", threading.get_ident) != threading.get_ident()
        with pytest.raises(TimeoutError, match=r"more than 0\.2 s"):
            await off.run("slow", release.wait, 5)
        with pytest.raises(TimeoutError, match="still running"):
            await off.run("slow", release.wait, 5)  # not queued a second time
        assert await off.run("other", lambda: 6) == 6  # other keys are not held up
        release.set()
        async with asyncio.timeout(5):  # the thread ends: waited for, not slept for
            while off.busy("slow") is not None:
                await asyncio.sleep(0.01)
        assert await off.run("slow", lambda: 7) == 7
    finally:
        release.set()
        off.close()


async def test_offloop_rests_a_key_whose_parse_overran() -> None:
    off = OffLoop(workers=2, deadline_s=0.1, cooldown=20.0)
    try:
        with pytest.raises(TimeoutError):
            await off.run("huge", time.sleep, 0.3)
        async with asyncio.timeout(5):  # until the overlong parse ended in its thread
            while "still running" in (off.busy("huge") or "still running"):
                await asyncio.sleep(0.01)
        reason = off.busy("huge")  # took ~0.3 s: rests ~6 s, a sixth of a core at most
        assert reason is not None and "the last parse took 0.3 s; next try in" in reason
        with pytest.raises(TimeoutError, match="next try"):
            await off.run("huge", lambda: 1)
    finally:
        off.close()


def test_a_focus_frame_that_cannot_be_used_is_said_on_the_focus_line(
    broken: dict[str, bool],
) -> None:
    from collectors.transport.local import LocalTransport
    from fabtop.run.focus import FocusSession

    _, _, fab = demo_state(until_s=0.0)
    fs = FocusSession(BAD, "enp65s0f0np0", LocalTransport(BAD))
    frame = next(iter(FrameDecoder().feed(fab.hosts[BAD].frame(1.0).encode())))
    broken["on"] = True
    fs._on_frame(BAD, frame)
    assert fs.status.state == "failing" and "ValueError" in (fs.status.error or "")
    broken["on"] = False
    fs._on_frame(BAD, frame)
    assert fs.status.state == "up"


async def test_a_prometheus_result_of_an_odd_shape_costs_that_result_not_the_poll() -> None:
    from fabtop.run.promsource import QUERIES, PrometheusSource

    calls: list[str] = []
    good = {
        "metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP", "instance": "gpu7:9400", "gpu": "0"},
        "value": [1700000000.0, "71"],
    }

    def fetch(url: str, query: str, timeout: float) -> list:  # type: ignore[type-arg]
        calls.append(query)
        return [["not", "a", "dict"], good]  # a list where an object belongs, then one good

    src = PrometheusSource("http://prom:9090", interval=0.01, fetch=fetch)
    src.state = FabricState([])
    task = asyncio.create_task(src.run())
    async with asyncio.timeout(10):  # polls keep coming: waited for, not slept for
        while len(calls) <= 3 and not task.done():
            await asyncio.sleep(0.01)
    assert not task.done() and len(calls) > 3
    await src.stop()
    await asyncio.wait_for(task, 1)
    assert src.error is None  # it answered: not "did not answer"
    hs = src.state.hosts["gpu7"]
    assert hs.sample is not None and hs.sample.gpus[0].temperature_c == 71
    # what was left out is said on the source, as a warning, not an empty fabric
    (f,) = src.state.findings
    assert (f.rule, f.severity, f.subject) == (
        "source_partial",
        "warning",
        "Prometheus at http://prom:9090",
    )
    # one per query of the poll
    assert f"{len(QUERIES)} results not an object with a metric left out" in f.summary


def test_a_failure_quoting_remote_text_through_repr_shows_no_payload() -> None:
    # int() quotes the bad token with repr(): ESC as the text "\x1b", and the OSC 52
    # payload after it would be shown on the host's line.
    with Guard("n1: sysnet") as g:
        int("\x1b]52;c;cGF5bG9hZA==\x07x")
    assert g.error is not None and g.error.startswith("n1: sysnet: ValueError: invalid literal")
    assert "cGF5bG9hZA" not in g.error and "\\x1b" not in g.error
