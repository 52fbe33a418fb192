"""The test report as printed and as written, and the refusals before a plan starts."""

from __future__ import annotations

import json

from collectors.samples import HostSample
from fabtop.config import HostConfig
from fabtop.core.findings import Finding
from fabtop.core.rates import HostRates
from fabtop.core.state import FabricState
from fabtop.fabtest.evidence import WindowEvidence
from fabtop.fabtest.judge import Bandwidth, judge_bandwidth
from fabtop.fabtest.plans import PAIR, Step
from fabtop.fabtest.report import detail, document, lines
from fabtop.fabtest.runner import Options, Report, StepResult, refusals


def _report() -> Report:
    steps = [Step(PAIR, 0, ("a",), "b"), Step(PAIR, 0, ("b",), "a")]
    verdicts = judge_bandwidth(
        [Bandwidth(steps[0], 95.0, 100.0), Bandwidth(steps[1], 41.0, 100.0, retransmits=12)]
    )
    r = Report("pairs", ["a", "b"], Options(seconds=2), started_unix=100.0, ended_unix=130.0)
    r.results = [
        StepResult(steps[0], verdicts[0], "perftest", ports=["a/mlx5_0", "b/mlx5_0"]),
        StepResult(
            steps[1],
            verdicts[1],
            "perftest",
            ["b: ib_write_bw: Couldn't connect to 10.0.0.1:18515"],
            retested=True,
            ports=["b/mlx5_0", "a/mlx5_0"],
        ),
    ]
    return r


def test_the_table_names_each_step_its_figure_and_why_it_failed() -> None:
    text = lines(_report())
    assert text[0] == "pass     a -> b rail 0  perftest  95.0 Gb/s (95% of ref)"
    assert text[1].startswith("fail ") and text[1].endswith("41.0 Gb/s (41% of ref) (retested)")
    failed = text[text.index("FAIL: b -> a rail 0") :]
    assert any("below 0.9 x 100 Gb/s" in line for line in failed)
    assert any("Couldn't connect" in line for line in failed)
    assert text[-1] == "fabtop test pairs: 2 steps, 1 pass, 1 fail (2 hosts, 30 s)"


def test_the_json_report_is_strict_json_with_every_step() -> None:
    doc = document(_report(), {"a/mlx5_0": {"before": {"rx_bytes": 1}, "after": {"rx_bytes": 9}}})
    back = json.loads(json.dumps(doc, allow_nan=False))
    assert back["format"] == "fabtop.test/1" and back["status"] == 2
    assert [s["status"] for s in back["steps"]] == ["pass", "fail"]
    assert back["steps"][1]["retested"] and back["steps"][1]["figures"]["engine_retransmits"] == 12
    assert back["counters"]["a/mlx5_0"]["after"]["rx_bytes"] == 9


def test_a_plan_is_refused_while_a_server_generates_tokens_unless_allowed() -> None:
    state = FabricState([HostConfig("a"), HostConfig("b")])
    state.hosts["a"].sample = HostSample(host="a", seq=1, clock_ns=0, uptime_s=1.0)
    state.hosts["a"].rates = HostRates(
        "a", 1.0, False, {}, {"http://127.0.0.1:8000/metrics": {"generated_tokens_per_s": 412.0}}
    )
    said = refusals(state, ["a", "b"], Options())
    assert said == [
        "a: its inference server is generating tokens (412/s) (--allow-busy to test anyway)"
    ]
    assert refusals(state, ["a", "b"], Options(allow_busy=True)) == []
    assert refusals(state, ["b"], Options()) == []


def test_a_finding_the_verdict_gives_as_a_reason_is_said_once() -> None:
    storm = Finding("pfc_storm", "critical", "n3/eth0", "n3/eth0 prio 3: PFC storm", host="n3")
    ev = WindowEvidence(1.0, [storm], ruled_out=["discards"])
    step = Step(PAIR, 0, ("a",), "b")
    (v,) = judge_bandwidth([Bandwidth(step, 0.4, 100.0, ev)])
    text = detail(StepResult(step, v, "perftest"))
    assert sum("PFC storm" in line for line in text) == 1, text
    assert "ruled out: discards" in text
