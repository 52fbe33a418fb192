"""One host's bad input costs that host, never the fabric: a whole Session, several hosts.

The demo fabric's simulated hosts stream real probe frames through the live path; one
of them is given input that raises somewhere (a parser bug injected, a /metrics page
whose counters are +Inf and -Inf, a huge page, probe arguments the probe refuses). The
others must keep streaming, and the bad host must say what is wrong: never "up", never
a healthy fabric.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest

from collectors.frames import Frame
from collectors.layout import Shapes
from collectors.samples import HostSample
from collectors.transport.base import HTTP_MAX_BODY, Transport
from collectors.transport.local import LocalTransport
from fabtop.config import Config, HostConfig
from fabtop.core import pipeline
from fabtop.core.state import FAILING, UP, FabricState
from fabtop.run import session as session_mod
from fabtop.run.compose import fabric_state
from fabtop.run.demo import demo_config, demo_transports
from fabtop.run.session import Session
from tests.integration.httpd import QuietHandler, serve

IVAL = 0.25
BAD = "node3"


class _Via(Transport):
    """A simulated host whose /metrics come from somewhere else (a real server, a page)."""

    def __init__(self, inner: Transport, http: Callable[[str, int, str, float], Any]) -> None:
        self.inner, self.name, self._http = inner, inner.name, http

    async def connect(self) -> None:
        await self.inner.connect()

    def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        return self.inner.stream(script, args)

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        return await self.inner.run(argv, timeout)

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        result: tuple[int, bytes] = await self._http(host, port, path, timeout)
        return result

    async def close(self) -> None:
        await self.inner.close()


def _config(**bad: Any) -> Config:
    cfg = demo_config(IVAL, "healthy")
    cfg.hosts = [HostConfig(h.name, **bad) if h.name == BAD and bad else h for h in cfg.hosts]
    return cfg


@contextlib.asynccontextmanager
async def _running(
    cfg: Config, transports: dict[str, Transport] | None = None, **kw: Any
) -> AsyncIterator[tuple[Session, asyncio.Task[None]]]:
    state = fabric_state(cfg)
    s = Session(
        cfg,
        state,
        transports=transports or dict(demo_transports(cfg)),
        discover_inference=False,
        **kw,
    )
    task = asyncio.create_task(s.run())
    try:
        yield s, task
    finally:
        await s.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout:g} s: {what}")
        await asyncio.sleep(0.02)


def _frames(state: FabricState) -> dict[str, int]:
    return {n: h.frames for n, h in state.hosts.items()}


async def _others_keep_streaming(
    state: FabricState, task: asyncio.Task[None], timeout: float = 40 * IVAL
) -> None:
    # Three more frames from every other host: waited for, not slept for (a starved
    # machine takes longer, it does not fail).
    before = _frames(state)

    def streamed() -> bool:
        after = _frames(state)
        return task.done() or all(after[n] >= before[n] + 3 for n in before if n != BAD)

    with contextlib.suppress(AssertionError):
        await _until(streamed, timeout, "")
    assert not task.done(), f"the session ended: {task.exception() if task.done() else ''}"
    after = _frames(state)
    for n in before:
        if n != BAD:
            assert after[n] >= before[n] + 3, f"{n} stopped streaming: {before} -> {after}"


async def test_a_frame_step_that_raises_marks_its_host_failing_and_spares_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = pipeline.assemble
    broken = {"on": True}

    def assemble(host: str, frame: Frame, kept: Shapes | None = None) -> HostSample:
        if host == BAD and broken["on"]:
            raise StopIteration  # what histogram_quantile raised on a NaN bucket
        return real(host, frame, kept)

    monkeypatch.setattr(pipeline, "assemble", assemble)
    async with _running(_config()) as (s, task):
        st = s.state
        await _until(lambda: st.hosts[BAD].status == FAILING, 10, f"{BAD} failing")
        seen: list[str] = []
        for _ in range(12):  # it stays failing, frame after frame: never "up"
            seen.append(st.hosts[BAD].status)
            await asyncio.sleep(IVAL / 2)
        await _others_keep_streaming(st, task)
        hs = st.hosts[BAD]
        assert set(seen) == {FAILING}, seen
        assert hs.frames == 0 and hs.error is not None and "\n" not in hs.error
        assert hs.error == f"{BAD}: frame dropped: StopIteration", hs.error
        assert hs.error in hs.warnings
        failing = [f for f in st.findings if f.rule == "host_failing"]
        assert [f.host for f in failing] == [BAD] and failing[0].severity == "critical"
        assert all(st.hosts[n].status == UP for n in st.hosts if n != BAD)
        # The bug goes away: the next usable frame makes it up again, the finding goes.
        broken["on"] = False
        await _until(lambda: st.hosts[BAD].status == UP, 10, f"{BAD} up again")
        assert st.hosts[BAD].error is None
        await _until(
            lambda: not any(f.rule == "host_failing" for f in st.findings),
            5,
            "the failing finding cleared",
        )


async def test_a_metrics_parser_that_raises_costs_that_url_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parse(text: str, url: str) -> Any:
        raise ValueError("parser bug")

    monkeypatch.setattr(session_mod, "parse_inference_page", parse)
    cfg = demo_config(IVAL, "healthy")  # node1 serves /metrics in the simulation
    async with _running(cfg) as (s, task):
        st = s.state
        await _until(
            lambda: bool(st.hosts["node1"].sample and st.hosts["node1"].sample.inference),
            10,
            "a reading",
        )
        await _others_keep_streaming(st, task)
        hs = st.hosts["node1"]
        (reading,) = hs.sample.inference  # type: ignore[union-attr]
        assert reading.error is not None and "ValueError: parser bug" in reading.error
        assert reading.error.startswith("node1: http://127.0.0.1:8000/metrics")
        assert hs.status == UP and hs.frames >= 3  # its fabric counters still count


class _InfCounters(QuietHandler):
    """A vLLM page whose two generation counters sum to inf + -inf (fsum raised ValueError)."""

    def do_GET(self) -> None:
        body = (
            b"# TYPE vllm:generation_tokens_total counter\n"
            b'vllm:generation_tokens_total{model_name="a"} +Inf\n'
            b'vllm:generation_tokens_total{model_name="b"} -Inf\n'
            b"# TYPE vllm:prompt_tokens_total counter\n"
            b'vllm:prompt_tokens_total{model_name="a"} +Inf\n'
            b'vllm:prompt_tokens_total{model_name="b"} -Inf\n'
        )
        self.reply(body)


@pytest.fixture
def inf_port() -> Iterator[int]:
    with serve(_InfCounters) as port:
        yield port


async def test_inf_and_minus_inf_counters_on_a_real_server_stop_nothing(inf_port: int) -> None:
    url = f"http://127.0.0.1:{inf_port}/metrics"
    cfg = _config(inference=(url,))
    sims = dict(demo_transports(cfg))
    real = LocalTransport(BAD)
    transports: dict[str, Transport] = {**sims, BAD: _Via(sims[BAD], real.http_get)}
    async with _running(cfg, transports) as (s, task):
        st = s.state
        await _until(
            lambda: bool(st.hosts[BAD].sample and st.hosts[BAD].sample.inference),
            10,
            "a reading of the +Inf/-Inf page",
        )
        await _others_keep_streaming(st, task)
        hs = st.hosts[BAD]
        assert hs.status == UP and hs.frames >= 3, (hs.status, hs.error)
        (reading,) = hs.sample.inference  # type: ignore[union-attr]
        # Either the parser refuses the non-finite sums or the guard names its failure:
        # never a number made of inf.
        tokens = reading.generated_tokens_total
        assert tokens is None or (tokens == tokens and abs(tokens) != float("inf")), tokens


async def test_probe_arguments_the_probe_refuses_cost_that_host_only() -> None:
    cfg = _config(sysfs="/sys/../etc")  # a Config built in code, not through load_config
    async with _running(cfg) as (s, task):
        st = s.state
        await _others_keep_streaming(st, task)
        hs = st.hosts[BAD]
        assert hs.status == "down" and hs.frames == 0
        assert hs.error is not None and hs.error.startswith(f"{BAD}: probe arguments: ")
        assert "sysfs" in hs.error and "\n" not in hs.error
        assert any(f.rule == "host_unreachable" and f.host == BAD for f in st.findings)


async def test_a_collector_task_that_dies_is_said_and_restarted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collectors.runner import HostRunner

    real_run = HostRunner.run
    starts: list[float] = []

    async def run(self: HostRunner) -> None:
        if self.name == BAD:
            starts.append(time.monotonic())
            if len(starts) < 3:
                raise RuntimeError("runner bug")
        await real_run(self)

    monkeypatch.setattr(HostRunner, "run", run)
    async with _running(_config()) as (s, task):
        st = s.state
        await _until(lambda: st.hosts[BAD].status == "down", 5, f"{BAD} marked down")
        assert "RuntimeError: runner bug" in (st.hosts[BAD].error or "")
        await _others_keep_streaming(st, task)
        await _until(lambda: st.hosts[BAD].status == UP, 15, f"{BAD} restarted and up")
    assert len(starts) >= 3
    assert starts[1] - starts[0] >= 0.4  # restarted after a backoff, not in a tight loop


def _huge_page(mb: float) -> bytes:
    """A vLLM-shaped /metrics page of about ``mb`` MB (one series per label value)."""
    head = (
        "# TYPE vllm:generation_tokens_total counter\n"
        'vllm:generation_tokens_total{model_name="m"} 1000\n'
        "# TYPE vllm:num_requests_running gauge\n"
    )
    line = 'vllm:num_requests_running{{model_name="m",replica="{:08d}"}} 1.0\n'
    n = int(mb * 1e6 / len(line.format(0)))
    return (head + "".join(line.format(i) for i in range(n))).encode()


async def test_a_15_mb_metrics_page_does_not_delay_other_hosts() -> None:
    page = _huge_page(15)
    polls: list[float] = []

    async def http(host: str, port: int, path: str, timeout: float) -> tuple[int, bytes]:
        polls.append(time.monotonic())
        return 200, page

    cfg = _config(inference=("http://127.0.0.1:8000/metrics",))
    sims = dict(demo_transports(cfg))
    transports: dict[str, Transport] = {**sims, BAD: _Via(sims[BAD], http)}
    arrivals: dict[str, list[float]] = {n: [] for n in sims}

    async with _running(cfg, transports) as (s, task):
        st = s.state
        seen = _frames(st)

        def changed() -> None:
            now = time.monotonic()
            for n, h in st.hosts.items():
                if h.frames != seen[n]:
                    seen[n] = h.frames
                    arrivals[n].append(now)

        s.on_change = changed
        await _until(lambda: len(polls) >= 1, 10, "the first poll of the huge page")
        t0 = time.monotonic()
        await asyncio.sleep(8.0)  # two parses of 15 MB or more, at ~0.3 s per MB
        t1 = time.monotonic()  # a blocked loop makes this later: still inside the window
        ended = task.done()
        bad = st.hosts[BAD].sample
        readings = list(bad.inference) if bad is not None else []
    # A parse past its deadline finishes in its thread after the session: let it end here
    # rather than beside the next (timing-sensitive) test.
    end = time.monotonic() + 30
    while time.monotonic() < end and any(
        th.name.startswith("fabtop-parse") for th in threading.enumerate()
    ):
        await asyncio.sleep(0.2)
    witness = [t for t in arrivals["node2"] if t0 <= t <= t1]
    edges = [t0, *witness, t1]  # a stall at either end of the window counts too
    gaps = [b - a for a, b in itertools.pairwise(edges)]
    worst = max(gaps)
    print(
        f"15 MB /metrics on {BAD}: {len(polls)} polls in {t1 - t0:.1f} s; largest gap "
        f"between node2's frames {worst:.2f} s at a {IVAL} s interval"
    )
    assert not ended
    assert len(witness) >= 8 and worst < 4 * IVAL, (worst, gaps)
    # The page itself was read, off the loop (or given up on after the deadline, said so).
    assert readings and (readings[0].server == "vllm" or "parse" in (readings[0].error or ""))


async def test_the_session_stamps_each_frame_with_the_operator_wall_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[float | None] = []
    real = pipeline.Pipeline.apply_frame

    def apply_frame(
        self: pipeline.Pipeline, host: str, frame: Frame, arrived_unix: float | None = None
    ) -> Any:
        seen.append(arrived_unix)
        return real(self, host, frame, arrived_unix=arrived_unix)

    monkeypatch.setattr(pipeline.Pipeline, "apply_frame", apply_frame)
    cfg = _config()
    state = FabricState(cfg.hosts, wall=lambda: 1_767_225_600.0)
    s = Session(cfg, state, transports=dict(demo_transports(cfg)), discover_inference=False)
    task = asyncio.create_task(s.run())
    try:
        await _until(lambda: len(seen) >= 4, 10, "four frames")
    finally:
        await s.stop()
        await asyncio.gather(task, return_exceptions=True)
    assert set(seen) == {1_767_225_600.0}
