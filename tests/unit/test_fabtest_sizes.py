"""``fabtop test sizes``: the bend of a size curve, the sweep's verdict, its rows in the
report and the JSON document, its plan and the engines' size options."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from collectors.engines import (
    EngineArgError,
    Iperf3Run,
    SockperfRun,
    iperf3_argv,
    sockperf_argv,
)
from collectors.launch import ToolRun
from collectors.parsers.perftest import parse_perftest
from collectors.samples import HostSample, LinkSample
from fabtop.fabtest import sizes
from fabtop.fabtest.judge import Status
from fabtop.fabtest.measure import Measured, Port
from fabtop.fabtest.plans import SIZES as SIZES_KIND
from fabtop.fabtest.plans import Step, make_plan
from fabtop.fabtest.rails import rails
from fabtop.fabtest.report import detail, document, figure, lines
from fabtop.fabtest.runner import Options, Report, StepResult
from fabtop.fabtest.sizes import (
    SIZES,
    SizeRow,
    Sweep,
    bend,
    judge,
    row_lines,
    size_text,
    summary,
)

STEP = Step(SIZES_KIND, 0, ("a",), "b")


def curve(gbps: Sequence[float | None]) -> list[SizeRow]:
    return [SizeRow(s, g) for s, g in zip(SIZES, gbps, strict=True)]


def test_the_sweep_is_4_kib_to_4_mib_in_powers_of_two() -> None:
    assert SIZES[0] == 4096 and SIZES[-1] == 4 * 1024 * 1024
    assert all(b == 2 * a for a, b in itertools.pairwise(SIZES))


def test_a_flat_curve_bends_at_its_rate_times_the_round_trip() -> None:
    # A TCP path shaped to 220 Mb/s: flat with the size. One-way 50 µs: a 100 µs round
    # trip, so the bend is 27.5 MB/s x 100 µs = 2750 bytes.
    b = bend(curve([0.22] * 11), base_us=50.0)
    assert b is not None
    assert b.bytes == pytest.approx(0.22e9 / 8 * 100e-6)
    assert b.peak_gbps == 0.22 and b.rtt_us == 100.0


def test_the_bend_is_where_a_request_and_its_answer_move_half_the_peak() -> None:
    rate_bps, rtt_s = 100e9 / 8, 4e-6
    b = bend(curve([100.0] * 11), base_us=rtt_s / 2 * 1e6)
    assert b is not None
    # s / (rtt + s / rate) at the bend is half the rate.
    assert b.bytes / (rtt_s + b.bytes / rate_bps) == pytest.approx(rate_bps / 2)


def test_a_rising_curve_bends_with_its_peak_not_its_small_sizes() -> None:
    # perftest with a per-message cost: small sizes below the link, then its rate.
    rising = [min(98.0, 98.0 * s / 32768) for s in SIZES]
    b = bend(curve(rising), base_us=1.6)
    assert b is not None and b.peak_gbps == 98.0
    assert b.bytes == pytest.approx(98e9 / 8 * 3.2e-6)


def test_a_noisy_curve_bends_within_its_noise() -> None:
    rng = random.Random(7)
    noisy = [0.22 * rng.uniform(0.9, 1.1) for _ in SIZES]
    b = bend(curve(noisy), base_us=50.0)
    assert b is not None
    assert 0.9 * 2750 <= b.bytes <= 1.1 * 2750


def test_a_dip_moves_nothing_and_holes_are_skipped() -> None:
    dip = [98.0] * 11
    dip[7] = 40.0
    holes: list[float | None] = [98.0] * 11
    holes[0] = holes[5] = None
    junk: list[float | None] = [98.0, math.nan, 0.0, -1.0, *([98.0] * 7)]
    for c in (dip, holes, junk):
        b = bend(curve(c), base_us=1.6)
        assert b is not None and b.bytes == pytest.approx(98e9 / 8 * 3.2e-6), c


def test_no_bend_without_a_round_trip_or_a_figure() -> None:
    assert bend(curve([98.0] * 11), None) is None
    assert bend(curve([98.0] * 11), math.inf) is None
    assert bend(curve([None] * 11), 1.6) is None
    assert bend([], 1.6) is None


def test_a_healthy_sweep_passes_with_its_bend_and_rows() -> None:
    rows = [SizeRow(s, 97.9, 1.6 + s / 12.2e3, 2.0 + s / 12e3, 1000) for s in SIZES]
    v = judge(STEP, Sweep(rows, 1.6), 100.0, None)
    assert v.status == Status.PASS, v.reasons
    assert v.figures["bend_bytes"] == pytest.approx(97.9e9 / 8 * 3.2e-6)
    assert v.figures["gbps"] == 97.9 and v.figures["largest_bytes"] == 4 * 1024 * 1024
    assert v.figures["of_reference"] == pytest.approx(0.979)
    assert [r["size_bytes"] for r in v.rows] == [float(s) for s in SIZES]


def test_the_largest_size_under_the_link_fails() -> None:
    v = judge(STEP, Sweep(curve([97.0] * 10 + [60.0]), 1.6), 100.0, None)
    assert v.status == Status.FAIL
    assert "60.0 Gb/s at 4 MiB is below 0.9 x 100 Gb/s = 90.0 Gb/s" in v.reasons


def test_bandwidth_that_falls_with_size_warns_and_names_both_sizes() -> None:
    fall = [9.0] * 11
    fall[8] = fall[9] = fall[10] = 6.0  # from 1 MiB on
    v = judge(STEP, Sweep(curve(fall), 20.0), None, None)
    assert v.status == Status.WARN
    assert any(
        "falls with size: 6 Gb/s at 1 MiB is under 80% of 9 Gb/s at 4 KiB" in r for r in v.reasons
    ), v.reasons
    assert v.relative_only
    # Noise of a few % is not a fall.
    rng = random.Random(3)
    calm = judge(
        STEP, Sweep(curve([9.0 * rng.uniform(0.95, 1.05) for _ in SIZES]), 20.0), None, None
    )
    assert calm.status == Status.PASS, calm.reasons


def test_sizes_without_a_figure_are_named_and_none_at_all_fails() -> None:
    holes: list[float | None] = [98.0] * 11
    holes[3] = None
    v = judge(STEP, Sweep(curve(holes), 1.6), 100.0, None)
    assert v.status == Status.WARN and "no bandwidth figure at 32 KiB" in v.reasons
    empty = judge(STEP, Sweep(curve([None] * 11), 1.6), 100.0, None)
    assert empty.status == Status.FAIL and empty.reasons == ("no bandwidth figure at any size",)
    assert judge(STEP, None, 100.0, None).status == Status.FAIL


def test_the_report_says_the_bend_and_what_it_means_for_serving() -> None:
    rows = [SizeRow(s, 97.9, 1.6 + s / 12.2e3, 2.0 + s / 12e3, 1000) for s in SIZES]
    v = judge(STEP, Sweep(rows, 1.6), 100.0, None)
    res = StepResult(STEP, v, "perftest", ports=["a/mlx5_0", "b/mlx5_0"])
    rep = Report("sizes", ["a", "b"], Options(seconds=2), [res], started_unix=1, ended_unix=60)
    assert figure(v) == "bend 38.2 KiB, 97.9 Gb/s at 4 MiB"
    text = "\n".join(lines(rep))
    # A passing sweep still prints its rows: they are its result.
    assert "PASS: a -> b rail 0" in text
    said = detail(res)
    row8k = next(line for line in said if line.strip().startswith("8 KiB"))
    assert "decode dispatch" in row8k and "latency-bound" in row8k
    row4m = next(line for line in said if line.strip().startswith("4 MiB"))
    assert "prefill/KV" in row4m and "bandwidth-bound" in row4m
    assert any(line.startswith("bend (half-power size) 38.2 KiB = peak 97.9") for line in said)
    assert any("decode dispatch (about 7 KiB" in line and "latency-bound" in line for line in said)
    doc = json.loads(json.dumps(document(rep)))
    step = doc["steps"][0]
    assert step["kind"] == "sizes" and len(step["sizes"]) == 11
    assert step["sizes"][0] == {
        "size_bytes": 4096.0,
        "gbps": 97.9,
        "p50_us": rows[0].p50_us,
        "p99_us": rows[0].p99_us,
    }
    assert step["figures"]["bend_bytes"] == pytest.approx(97.9e9 / 8 * 3.2e-6)


def test_size_text() -> None:
    assert [size_text(s) for s in (700, 4096, 7 * 1024, 40140.8, 1 << 20, 4 << 20)] == [
        "700 B",
        "4 KiB",
        "7 KiB",
        "39.2 KiB",
        "1 MiB",
        "4 MiB",
    ]


def test_the_plan_is_one_pair_per_rail_and_its_summary_says_sizes_times_seconds() -> None:
    samples = {}
    for i in range(4):
        links = {
            f"mlx5_{p}": LinkSample(id=f"mlx5_{p}", rdma_device=f"mlx5_{p}", port=1, kind="roce")
            for p in range(2)
        }
        samples[f"h{i}"] = HostSample(f"h{i}", 1, 0, 0.0, links=links)
    fabric = rails(samples)
    plan = make_plan("sizes", fabric)
    assert len(plan.rounds) == 1
    assert [(s.kind, s.rail, s.senders, s.receiver) for s in plan.steps] == [
        (SIZES_KIND, 0, ("h0",), "h1"),
        (SIZES_KIND, 1, ("h0",), "h1"),
    ]
    said = summary(fabric, plan.steps, 5)
    assert "11 sizes (4 KiB to 4 MiB)" in said and "a bandwidth run of 5 s" in said
    assert "23 runs, about 184 s" in said
    assert "rail 0: h0/mlx5_0/1 -> h1/mlx5_0/1" in said


def test_iperf3_writes_and_sockperf_messages_of_a_size_within_the_tools_bounds() -> None:
    cli = iperf3_argv(Iperf3Run(5201, server="10.0.0.2", streams=4, length=65536)).argv
    assert cli[cli.index("-l") + 1] == "65536" and cli[cli.index("-P") + 1] == "4"
    with pytest.raises(EngineArgError, match="block length"):
        iperf3_argv(Iperf3Run(5201, server="10.0.0.2", length=2 * 1024 * 1024))
    # A sockperf server takes messages past 65000 bytes only when told their size.
    small = sockperf_argv(SockperfRun("10.0.0.2", 11111, size=4096)).argv
    assert "-m" not in small
    big = sockperf_argv(SockperfRun("10.0.0.2", 11111, size=1048575)).argv
    assert big[big.index("-m") + 1] == "1048575"
    with pytest.raises(EngineArgError, match="message size"):
        sockperf_argv(SockperfRun("10.0.0.2", 11111, server="10.0.0.2", size=1 << 20))
    with pytest.raises(EngineArgError, match="message size"):  # UDP stays under 65000
        sockperf_argv(SockperfRun("10.0.0.2", 11111, server="10.0.0.2", tcp=False, size=65536))


def test_a_sweep_whose_engine_retransmitted_past_the_mark_warns_as_a_pair_does() -> None:
    rows = curve([0.21] * 11)
    v = judge(STEP, Sweep(rows, 10.0), 0.2, None, retransmits=300, loss_fraction=0.004)
    assert v.status == Status.WARN
    assert any("retransmitted 300 times" in r for r in v.reasons), v.reasons
    assert judge(STEP, Sweep(rows, 10.0), 0.2, None, None, 1, 1e-6).status == Status.PASS


def test_a_real_connectx_infiniband_pair_bends_where_its_own_latency_curve_says() -> None:
    # The same ConnectX (mlx5_0) InfiniBand node's captures (tests/fixtures/perftest):
    # ib_write_bw -a (195.6 Gb/s at 8 MiB) and ib_write_lat -a (t_typical per size).
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "perftest"
    bw = parse_perftest((fixtures / "ib_write_bw_mb_mlx5_ib_server.txt").read_text()).bw
    lat = parse_perftest((fixtures / "ib_write_lat_all_sizes_mlx5_ib_client.txt").read_text()).lat
    peak = bw[-1].average_gbps
    typical = {r.size_bytes: r.t_typical_us for r in lat}
    assert peak is not None and typical[2] == 1.87
    rows = [SizeRow(s, peak, typical[s]) for s in SIZES]
    v = judge(STEP, Sweep(rows, typical[2]), 200.0, None)
    assert v.status == Status.PASS, v.reasons
    bend_bytes = v.figures["bend_bytes"]
    assert bend_bytes is not None
    assert size_text(bend_bytes) == "89.3 KiB"  # 195.6 Gb/s x 3.74 µs
    # The latency curve grows by size / peak (one serialization per one-way figure): the
    # peak the bend uses is the slope the same port's latency shows at 4 MiB.
    top, base = typical[4 << 20], typical[2]
    assert top is not None and base is not None
    slope_us = top - base
    assert slope_us == pytest.approx((4 << 20) / (peak * 1e9 / 8) * 1e6, rel=0.05)
    # Decode dispatch lies below it (latency-bound), prefill above.
    assert any("decode dispatch" in line and "latency-bound" in line for line in row_lines(v))


def test_a_missing_latency_tool_leaves_the_bandwidth_sweep_and_is_said_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    async def latency(*args: Any, **kw: Any) -> Measured:
        ran.append("latency")
        run = ToolRun("a", ("sockperf",), b"", None, False, True, False, None)
        return Measured(
            runs=[run], problems=["a: sockperf not found: install the sockperf package"]
        )

    async def bandwidth(*args: Any, **kw: Any) -> Measured:
        ran.append("bandwidth")
        run = ToolRun("a", ("iperf3",), b"", 0, False, False, False, 1.0)
        return Measured(gbps=[0.21], runs=[run], engine="iperf3")

    monkeypatch.setattr(sizes, "latency", latency)
    monkeypatch.setattr(sizes, "bandwidth", bandwidth)
    eth = LinkSample(id="eth0", netdev="eth0", kind="ether")
    a, b = Port("a", eth, cast(Any, None)), Port("b", eth, cast(Any, None))
    m, sweep = asyncio.run(sizes.measure(a, b, 1, None, lambda engine: 5201))
    assert ran == ["latency"] + ["bandwidth"] * 11  # the latency tool is not asked again
    assert [r.gbps for r in sweep.rows] == [0.21] * 11 and sweep.base_us is None
    assert m.problems == ["a: sockperf not found: install the sockperf package"]
    v = judge(STEP, sweep, None, None)
    assert v.status == Status.PASS and "no round trip of the smallest message: no bend" in v.notes
