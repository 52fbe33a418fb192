"""Verdicts of ``fabtop test`` at their boundaries: absolute, relative, fairness, impact."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.samples import LinkSample
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from fabtop.fabtest.evidence import window_evidence
from fabtop.fabtest.judge import (
    Bandwidth,
    Incast,
    Latency,
    Status,
    best_bandwidth,
    best_latency,
    exit_status,
    judge_bandwidth,
    judge_incast,
    judge_latency,
    judge_loaded,
    reference_rate,
    settle,
)
from fabtop.fabtest.plans import BIDIR, INCAST, LATENCY, LOADED, PAIR, Step
from tests.unit.rules_support import Port
from tests.unit.test_fabtest_evidence import ends


def pair(a: str = "a", b: str = "b", kind: str = PAIR) -> Step:
    return Step(kind, 0, (a,), b)


def status(gbps: float, ref: float | None, kind: str = PAIR, **th: float) -> Status:
    (v,) = judge_bandwidth([Bandwidth(pair(kind=kind), gbps, ref)], th or None)
    return v.status


def test_bandwidth_passes_at_09_of_the_reference_rate_and_twice_that_both_ways() -> None:
    assert status(90.0, 100.0) == Status.PASS
    assert status(89.99, 100.0) == Status.FAIL
    assert status(180.0, 100.0, BIDIR) == Status.PASS
    assert status(179.9, 100.0, BIDIR) == Status.FAIL
    (v,) = judge_bandwidth([Bandwidth(pair(kind=BIDIR), 150.0, 100.0)])
    assert v.reasons == ("150.0 Gb/s is below 0.9 x 100 Gb/s x 2 (both ways) = 180.0 Gb/s",)
    assert v.figures["of_reference"] == pytest.approx(0.75)
    # The config's [thresholds] move the mark.
    assert status(85.0, 100.0, test_bw_ratio=0.8) == Status.PASS


def test_reference_rate_is_the_slower_rdma_end_or_the_declared_ip_speed() -> None:
    fast = LinkSample(id="p", rdma_device="mlx5_0", rate_gbps=400.0)
    slow = LinkSample(id="p", rdma_device="mlx5_0", rate_gbps=200.0)
    veth = LinkSample(id="veth0", netdev="veth0", rate_gbps=10.0)
    assert reference_rate([fast, slow]) == (200.0, None)
    assert reference_rate([fast, slow], declared_gbps=1.0) == (200.0, None)
    # A veth's 10000 Mb/s is not believed: the declared speed, or relative only.
    assert reference_rate([veth, veth], declared_gbps=0.3) == (0.3, None)
    assert reference_rate([veth, veth]) == (
        None,
        "IP path with no declared speed: judged relatively only",
    )
    unknown = LinkSample(id="p", rdma_device="mlx5_0")
    assert reference_rate([fast, unknown])[0] is None


def test_an_outlier_is_retested_once_before_it_is_called_bad() -> None:
    steps = [pair("a", "b"), pair("c", "d"), pair("e", "f")]
    first = [
        Bandwidth(steps[0], 100.0, None),
        Bandwidth(steps[1], 93.0, None),
        Bandwidth(steps[2], 92.9, None),
    ]
    verdicts = judge_bandwidth(first)
    assert [v.status for v in verdicts] == [Status.PASS, Status.PASS, Status.RETEST]
    assert all(v.relative_only for v in verdicts)
    assert "judged against the fabric's best only" in verdicts[0].notes[0]
    assert verdicts[2].reasons == ("92.9 Gb/s is under 93% of the fabric's best 100.0 Gb/s",)
    assert exit_status(verdicts) == 1
    best = best_bandwidth(first)
    # Slow again on its retest: bad. Judged against the first run's best, not its own.
    (again,) = judge_bandwidth([Bandwidth(steps[2], 80.0, None)], best=best)
    bad = settle(verdicts[2], again)
    assert bad.status == Status.OUTLIER and bad.reasons[-1] == "an outlier on its retest too"
    # Fine on its retest: a pass that says it was retested.
    (fine,) = judge_bandwidth([Bandwidth(steps[2], 99.0, None)], best=best)
    ok = settle(verdicts[2], fine)
    assert ok.status == Status.PASS and ok.notes[-1].startswith("an outlier at first (92.9 Gb/s")
    assert settle(verdicts[0], fine) is verdicts[0]  # not an outlier: nothing to settle


def test_steps_are_compared_only_with_steps_of_the_same_kind_and_reference() -> None:
    results = [
        Bandwidth(pair("a", "b"), 95.0, 100.0),
        Bandwidth(pair("c", "d"), 24.0, 25.0),  # a 25G rail: not an outlier of the 100G one
        Bandwidth(pair("a", "b", BIDIR), 190.0, 100.0),
    ]
    assert [v.status for v in judge_bandwidth(results)] == [Status.PASS] * 3


def test_no_figure_is_a_failure() -> None:
    (v,) = judge_bandwidth([Bandwidth(pair(), None, 100.0)])
    assert v.status == Status.FAIL and exit_status([v]) == 2


def lat(samples: list[float], op: str = "write", step: Step | None = None) -> Latency:
    return Latency(step or Step(LATENCY, 0, ("a",), "b"), samples, op)


def lat_status(samples: list[float], op: str = "write") -> Status:
    (v,) = judge_latency([lat(samples, op)])
    return v.status


def test_rdma_latency_marks() -> None:
    assert lat_status([2.5] * 10_000) == Status.PASS
    assert lat_status([2.51] * 10_000) == Status.FAIL
    assert lat_status([2.51] * 10_000, "send") == Status.FAIL
    assert lat_status([4.5] * 10_000, "read") == Status.PASS
    assert lat_status([4.51] * 10_000, "read") == Status.FAIL
    # p99 at 4.2 us passes, past it fails, while the mean stays under 2.5.
    assert lat_status([2.0] * 9800 + [4.2] * 200) == Status.PASS
    (v,) = judge_latency([lat([2.0] * 9899 + [4.3] * 101)])
    assert v.status == Status.FAIL and v.reasons == ("p99 4.30 µs is above 4.2 µs",)
    assert v.notes == ()
    assert v.figures["p999_us"] == 4.3 and v.figures["samples"] == 10_000


def test_ip_latency_is_judged_relatively_and_a_short_run_says_its_tail_is_thin() -> None:
    (v,) = judge_latency([lat([40.0] * 1000, "ip")])
    assert v.status == Status.PASS and v.relative_only
    assert v.notes == (
        "p99.9 from 1000 samples (1 beyond it; 10000 give 10)",
        "IP path: no absolute latency mark, judged against the fabric's best",
    )


def test_latency_outlier_past_21_times_the_best_median() -> None:
    a, b, c = (Step(LATENCY, 0, (s,), r) for s, r in (("a", "b"), ("c", "d"), ("e", "f")))
    results = [lat([10.0] * 100, "ip", a), lat([21.0] * 100, "ip", b), lat([21.1] * 100, "ip", c)]
    assert [v.status for v in judge_latency(results)] == [Status.PASS, Status.PASS, Status.RETEST]
    assert best_latency(results) == {"ip": 10.0}


def test_incast_fairness_and_aggregate() -> None:
    step = Step(INCAST, 0, ("b", "c", "d", "e"), "a")
    fair = judge_incast([Incast(step, (23.0, 23.0, 23.0, 23.0), 100.0)])[0]
    assert fair.status == Status.PASS
    assert fair.figures["jain"] == pytest.approx(1.0)
    assert fair.figures["of_reference"] == pytest.approx(0.92)
    # One sender held to 40 % of its share: Jain 0.89, unfair (a warning, with the shares).
    unfair = judge_incast([Incast(step, (9.2, 27.6, 27.6, 27.6), 100.0)])[0]
    assert unfair.status == Status.WARN
    assert unfair.reasons == (
        "unfair: Jain's index 0.89 < 0.9 (Gb/s: b 9.2, c 27.6, d 27.6, e 27.6)",
    )
    starved = judge_incast([Incast(step, (20.0, 20.0, 20.0, 20.0), 100.0)])[0]
    assert starved.status == Status.FAIL
    missing = judge_incast([Incast(step, (20.0, None, 20.0, 20.0), 100.0)])[0]
    assert missing.status == Status.FAIL and missing.reasons == ("no figure from c",)


def test_incast_without_a_reference_rate_is_compared_across_receivers() -> None:
    s1, s2 = Step(INCAST, 0, ("b", "c"), "a"), Step(INCAST, 0, ("c", "a"), "b")
    got = judge_incast([Incast(s1, (0.15, 0.15), None), Incast(s2, (0.1, 0.1), None)])
    assert [v.status for v in got] == [Status.PASS, Status.RETEST]
    assert got[0].relative_only


def test_congestion_impact_factor_of_p99() -> None:
    alone = Step(LATENCY, 0, ("b",), "a")
    under = Step(LOADED, 0, ("b",), "a", ("c", "d"))
    base = lat([2.0] * 9800 + [3.0] * 200, step=alone)
    ok = judge_loaded(base, lat([2.5] * 9800 + [9.0] * 200, step=under))
    assert ok.status == Status.PASS
    assert ok.figures["impact_p99"] == pytest.approx(3.0)
    assert ok.figures["impact_p50"] == pytest.approx(1.25)
    bad = judge_loaded(base, lat([2.5] * 9800 + [9.1] * 200, step=under))
    assert bad.status == Status.WARN
    assert bad.reasons[0].startswith("p99 rose 3.0 x under the incast (3.00 -> 9.10 µs)")
    assert judge_loaded(base, lat([], step=under)).status == Status.FAIL


def test_exit_status_is_doctors() -> None:
    v = judge_bandwidth([Bandwidth(pair(), 95.0, 100.0)])
    assert exit_status(v) == 0
    assert exit_status([]) == 0


def test_engine_retransmits_with_clean_nics_point_between_the_ends() -> None:
    def veth() -> Port:
        return Port(
            "eth0",
            kind="virtual",
            rdma_device=None,
            driver="veth",
            pfc=None,
            rates={"rx_phy_errors": 0.0, "rx_discards": 0.0},
            fields={"physical": False},
        )

    ev = window_evidence(ends(veth(), veth()))
    assert {"discards", "CRC, symbol and link-integrity errors"} <= set(ev.ruled_out)
    first = [
        Bandwidth(pair("a", "b"), 0.30, None, ev, retransmits=0),
        Bandwidth(pair("c", "d"), 0.12, None, ev, retransmits=812),
    ]
    good, lossy = judge_bandwidth(first)
    assert good.status == Status.PASS and good.figures["engine_retransmits"] == 0
    assert lossy.status == Status.RETEST
    assert lossy.reasons[-1] == (
        "the engine retransmitted 812 times in the window: no NIC counted a discard or an "
        "error, so packets were lost between the ends (a switch, a shaper, a firewall rule)"
    )


def test_every_mark_is_documented_for_users_with_its_default() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "TEST.md").read_text()
    marks = {n: v for n, v in DEFAULT_THRESHOLDS.items() if n.startswith("test_")}
    assert len(marks) == 15
    for name, value in marks.items():
        assert f"| `{name}` | {value:g} |" in doc, name


def test_a_pair_that_passes_while_its_engine_retransmits_is_a_warning() -> None:
    # 5 % random loss on a shaped veth: TCP still moves 95 % of the rate, and retransmits.
    steps = [pair("a", "b"), pair("c", "d")]
    lossy, clean = judge_bandwidth(
        [
            Bandwidth(steps[0], 0.209, 0.2, retransmits=275, loss_fraction=275 * 1448 / 52e6),
            Bandwidth(steps[1], 0.219, 0.2, retransmits=0, loss_fraction=0.0),
        ]
    )
    assert clean.status == Status.PASS
    assert lossy.status == Status.WARN
    assert lossy.reasons == ("the engine retransmitted 275 times in the window",)
    # Under the mark (0.05 % of the bytes sent): a pass.
    (few,) = judge_bandwidth(
        [Bandwidth(steps[0], 0.219, 0.2, retransmits=2, loss_fraction=2 * 1448 / 52e6)]
    )
    assert few.status == Status.PASS
