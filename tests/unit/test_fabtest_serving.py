"""``fabtop test serving``: the server's figures per window, their ratios to the baseline,
the verdicts and their marks, the plan over the demo fabric, and what the parser reads
for it (queue time, preemptions) from the real vLLM capture."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.samples import InferenceSample
from fabtop.fabtest.judge import Status
from fabtop.fabtest.measure import Measured
from fabtop.fabtest.plans import BIDIR, INCAST, SERVING, PlanError, Step, make_plan
from fabtop.fabtest.rails import rails
from fabtop.fabtest.report import figure
from fabtop.fabtest.serving import (
    AFTER,
    BASELINE,
    ServingWindow,
    _Readings,
    judge_serving,
    serving_plan,
    serving_summary,
)
from fabtop.run.demo import demo_state

URL = "http://127.0.0.1:8000/metrics"
ITL = (0.01, 0.025, 0.05, 0.1, 0.25, math.inf)


def reading(t: float, tokens: float, itl_counts: tuple[float, ...]) -> InferenceSample:
    """A vLLM reading at local time ``t``: its token counter and ITL histogram."""
    hist = (ITL, itl_counts, itl_counts[-1], 0.0)
    return InferenceSample(
        URL,
        server="vllm",
        generated_tokens_total=tokens,
        histograms={"vllm:inter_token_latency_seconds": hist},
        read_s=t,
        preemptions_total=3.0 if t < 5 else 7.0,
    )


def window(
    name: str, tokens_per_s: float, itl_bucket: int, gbps: float | None = None
) -> ServingWindow:
    """A 4 s window at ``tokens_per_s`` whose tokens all fall in ITL bucket ``itl_bucket``."""
    n = tokens_per_s * 4
    counts = tuple(n if i >= itl_bucket else 0.0 for i in range(len(ITL)))
    r = _Readings()
    r.add(reading(1.0, 1000.0, (0.0,) * len(ITL)))
    r.add(reading(5.0, 1000.0 + n, counts))
    senders = ("b", "c") if name == INCAST else ("b",) if name == BIDIR else ()
    w = ServingWindow(Step(SERVING, 0, senders, "a", window=name), r)
    if gbps is not None:
        w.loads = [Measured(gbps=[gbps])]
    return w


def test_a_server_slowed_by_the_loads_and_recovered_after() -> None:
    wins = [
        window(BASELINE, 1000, 1),
        window(INCAST, 550, 3, gbps=0.4),
        window(BIDIR, 900, 1, gbps=0.4),
        window(AFTER, 980, 1),
    ]
    base, incast, bidir, after = judge_serving(wins)
    assert base.status == Status.PASS and base.figures["tokens_per_s"] == pytest.approx(1000)
    assert "token_ratio" not in base.figures  # the baseline is what the others divide by
    assert incast.status == Status.WARN
    assert incast.figures["token_ratio"] == pytest.approx(0.55)
    assert incast.figures["itl_p99_ratio"] == pytest.approx(0.0995 / 0.02485)
    assert incast.figures["load_gbps"] == 0.4
    assert incast.figures["preemptions"] == 4.0
    assert any(
        "token rate fell to 55% of its baseline beside the incast" in r for r in incast.reasons
    )
    assert any("inter-token p99 rose 4.0 x beside the incast" in r for r in incast.reasons)
    assert bidir.status == Status.PASS and bidir.figures["token_ratio"] == pytest.approx(0.9)
    assert after.status == Status.PASS and after.figures["token_ratio"] == pytest.approx(0.98)
    assert figure(incast) == "550 tok/s (x0.55), ITL p99 100ms (x4.0)"
    # Queue time: no histogram in these readings, said rather than taken as healthy.
    assert any("not known in this window: TTFT p99, queue time p99" in n for n in incast.notes)


def test_a_server_that_did_not_recover_after_the_loads_fails() -> None:
    wins = [window(BASELINE, 1000, 1), window(INCAST, 500, 1), window(BIDIR, 500, 1)]
    wins.append(window(AFTER, 700, 1))
    after = judge_serving(wins)[-1]
    assert after.status == Status.FAIL
    assert after.reasons[0].startswith(
        "did not recover: after the loads its token rate is 70% of its baseline (1000 -> 700"
    )
    # The marks are the config's: a laxer one passes the same figures.
    lax = judge_serving(wins, {"test_serving_recovered_ratio": 0.6})[-1]
    assert lax.status == Status.PASS


def test_a_server_with_no_tokens_in_its_baseline_has_nothing_to_compare_with() -> None:
    wins = [window(BASELINE, 0, 1), window(INCAST, 500, 1)]
    base, incast = judge_serving(wins)
    assert base.status == Status.FAIL and "generated no tokens in the baseline" in base.reasons[0]
    assert incast.figures["token_ratio"] is None


def test_a_window_with_one_reading_has_no_figure_and_says_why() -> None:
    w = window(BASELINE, 1000, 1)
    w.readings = _Readings()
    w.readings.add(reading(1.0, 1000.0, (0.0,) * len(ITL)))
    w.problems.append("a: fewer than two readings of its /metrics inside the window")
    (v,) = judge_serving([w])
    assert v.status == Status.FAIL and v.figures["tokens_per_s"] is None
    assert "fewer than two readings" in v.reasons[0]


def test_the_plan_loads_the_server_host_on_every_rail_and_is_never_a_default() -> None:
    state, _clock, _fab = demo_state(until_s=6)
    hosts = list(state.hosts)
    samples = {n: h.sample for n, h in state.hosts.items() if h.sample is not None}
    fabric = rails(samples, {})
    plan = serving_plan(fabric, state, hosts)
    assert [s.window for s in plan.steps] == [BASELINE, INCAST, BIDIR, AFTER]
    assert {s.receiver for s in plan.steps} == {"node1"}  # the demo's vLLM server
    assert plan.steps[1].label == "node1 serving beside incast node2,node3,node4 -> node1"
    assert plan.steps[2].label == "node1 serving beside bidir node2 <-> node1"
    text = serving_summary(plan, fabric, 5, 1.0)
    assert (
        "beside an incast into node1 from node2,node3,node4 on rail 0, 1; node2 on rail 2" in text
    )
    assert "its token rate may fall and its TTFT, inter-token and queue latency rise" in text
    with pytest.raises(PlanError, match="serving: made from the inference servers found"):
        make_plan("serving", fabric)
    with pytest.raises(PlanError, match=r"k must be 1\.\.3"):
        serving_plan(fabric, state, hosts, k=4)
    # No server on the hosts asked: said, naming what to configure.
    with pytest.raises(PlanError, match="no inference server with a token counter"):
        serving_plan(fabric, state, [h for h in hosts if h != "node1"])


def test_the_vllm_capture_gives_queue_time_and_preemptions(fixtures_dir: Path) -> None:
    text = (fixtures_dir / "llm_metrics/vllm_metrics_datadog.txt").read_text()
    s = parse_inference_metrics(text, URL)
    assert s.preemptions_total == 0.0
    bounds, counts, count, _ = s.histograms["vllm:request_queue_time_seconds"]
    assert bounds == (0.3, math.inf) and counts == (6.0, 6.0) and count == 6.0


def test_a_load_that_moved_nothing_measures_no_impact() -> None:
    # iperf3 missing on the senders: the server kept its rate, but not because the
    # fabric isolates it; the window is a failure, not a pass.
    _, incast = judge_serving([window(BASELINE, 1000, 1), window(INCAST, 1000, 1)])
    assert incast.status == Status.FAIL
    assert incast.reasons[0] == "the incast load moved nothing: no impact can be measured"


def test_a_server_that_restarted_in_a_window_has_no_figure_there() -> None:
    w = window(AFTER, 1000, 1)
    w.readings.last[URL] = reading(5.0, 10.0, (0.0,) * len(ITL))  # its counter went back
    _, after = judge_serving([window(BASELINE, 1000, 1), w])
    assert after.status == Status.FAIL and after.figures["tokens_per_s"] is None
    assert "counters went backwards or jumped" in after.reasons[0]


def test_a_load_that_moved_nothing_stays_a_failure_whatever_the_token_rate_did() -> None:
    _, incast = judge_serving([window(BASELINE, 1000, 1), window(INCAST, 500, 1)])
    assert incast.status == Status.FAIL  # not the warning its token rate alone would give
    assert incast.reasons[0] == "the incast load moved nothing: no impact can be measured"
    assert incast.reasons[1].startswith("token rate fell to 50% of its baseline")
