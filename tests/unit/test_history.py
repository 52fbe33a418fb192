"""Tiered history: rollups keep mean and max, gaps stay gaps, memory stays bounded."""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from array import array
from pathlib import Path
from types import ModuleType

import pytest

from collectors.normalize import normalize_ethtool
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.samples import GpuSample, HostSample, InferenceSample, LinkSample
from fabtop.core.history import FORGET_AFTER_S, History
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates, LinkRates, RateEngine
from fabtop.core.series import DEFAULT_TIERS, Series, append_all

SMALL = ((1.0, 10), (10.0, 5), (60.0, 3))
MLX5 = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
VLLM = "llm_metrics/vllm_metrics_datadog.txt"
URL = "http://127.0.0.1:8000/metrics"
T0 = 1_700_000_000.0  # a bucket boundary for 1, 10 and 60 s tiers


def ramp(series: Series, n: int, start: float = 0.0) -> None:
    for i in range(n):
        series.append(start + i, float(i))


def test_coarse_tiers_keep_the_mean_and_the_max_of_each_bucket() -> None:
    s = Series(SMALL, keep_max=True)
    ramp(s, 60)  # t = value = 0..59
    t, v = s.points(35)  # past the raw ring (10 points): the 10 s tier
    assert t == [20.0, 30.0, 40.0, 50.0]
    assert v == [24.5, 34.5, 44.5, 54.5]
    assert s.points(35, stat="max")[1] == [29.0, 39.0, 49.0, 59.0]
    t, v = s.points(60)  # past the 10 s tier's 50 s: the 1 min tier
    assert t == [0.0]
    assert v == [29.5]
    assert s.points(60, stat="max")[1] == [59.0]


def test_short_span_reads_raw_points() -> None:
    s = Series(SMALL)
    ramp(s, 60)
    assert s.points(5) == (
        [54.0, 55.0, 56.0, 57.0, 58.0, 59.0],
        [54.0, 55.0, 56.0, 57.0, 58.0, 59.0],
    )
    assert s.latest() == 59.0


def test_series_without_max_answers_max_with_means() -> None:
    s = Series(SMALL, keep_max=False)
    ramp(s, 60)
    assert s.points(35, stat="max") == s.points(35)


def test_gaps_stay_gaps_in_every_tier() -> None:
    s = Series(SMALL)
    for i in range(30):
        # 0..9 real values, 10..19 nothing known, 20..29 half known
        if i < 10:
            value: float | None = 1.0
        elif i < 20:
            value = None
        else:
            value = 4.0 if i % 2 else None
        s.append(float(i), value)
    t, v = s.points(30)  # 10 s tier
    assert t == [0.0, 10.0, 20.0]
    assert v == [1.0, None, 4.0]  # an empty bucket is a gap, a half-empty one the mean seen
    assert s.points(9)[1] == [None, 4.0] * 5  # raw points keep their gaps
    assert s.latest() == 4.0
    s.append(30.0, None)
    assert s.latest() is None


def test_time_without_appends_is_a_gap_not_zero() -> None:
    s = Series(SMALL)
    ramp(s, 10)  # t 0..9: bucket 0
    for i in range(10):  # host unreachable from 10 s to 35 s
        s.append(35.0 + i, 7.0)
    t, v = s.points(45)  # 10 s tier
    assert t == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert v == [4.5, None, None, 7.0, 7.0]


def test_silence_marks_a_hole_in_the_raw_points() -> None:
    s = Series(SMALL)
    ramp(s, 5)  # 1 s apart
    s.append(30.0, 7.0)
    t, v = s.points(30)
    assert t == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 30.0]
    assert v == [0.0, 1.0, 2.0, 3.0, 4.0, None, 7.0]
    # a slower but steady cadence is not a hole
    slow = Series(SMALL)
    for i in range(5):
        slow.append(5.0 * i, 1.0)
    assert None not in slow.points(30)[1]


def test_older_or_repeated_points_are_dropped() -> None:
    s = Series(SMALL)
    s.append(10.0, 1.0)
    s.append(10.0, 2.0)
    s.append(9.0, 3.0)
    assert s.points(100) == ([10.0], [1.0])


def test_ring_stays_bounded() -> None:
    s = Series(SMALL, keep_max=True)
    full = 60 * 3  # the coarsest tier's span
    ramp(s, full)
    size = s.nbytes
    ramp(s, 10 * full, start=full)
    assert s.nbytes == size
    for span, most in ((9, 10), (45, 5), (10**6, 3)):
        assert len(s.points(span)[0]) <= most


def test_day_of_one_hertz_points_memory_and_tier_choice() -> None:
    """24 h at 1 Hz with the default tiers: the per-series figure the memory benchmark scales."""
    day = 86_400
    sizes = {}
    for keep_max in (False, True):
        s = Series(DEFAULT_TIERS, keep_max=keep_max)
        for i in range(day):
            s.append(T0 + i, float(i % 97))
        sizes[keep_max] = s.nbytes
        now = T0 + day - 1
        # what the arrays must hold: raw (time, value), then each coarse tier's
        # buckets so far (means, and maxima when kept)
        raw_cap = DEFAULT_TIERS[0][1]
        slots = sum(min(cap, math.ceil(day / step)) for step, cap in DEFAULT_TIERS[1:])
        coarse_item = 4  # coarse buckets are float32 by default, raw points float64
        floor = 8 * 2 * raw_cap + coarse_item * slots * (2 if keep_max else 1)
        assert floor <= s.nbytes <= floor * 1.1 + 4096
        t, _ = s.points(15 * 60)
        assert t[-1] - t[-2] == 1.0 and t[0] >= now - 900
        t, _ = s.points(6 * 3600)
        assert t[-1] - t[-2] == 10.0 and t[0] <= now - 6 * 3600 + 10
        t, _ = s.points(day)
        assert t[-1] - t[-2] == 60.0 and len(t) == day // 60  # a day of 1-min buckets
    assert sizes[False] < sizes[True] < 60_000


def test_float32_coarse_tiers_halve_them() -> None:
    full = Series(SMALL, coarse_typecode="d")
    half = Series(SMALL)  # float32 is the default
    ramp(full, 60 * 3 * 2)
    ramp(half, 60 * 3 * 2)
    assert half.nbytes < full.nbytes
    assert half.points(35) == full.points(35)  # small integers survive float32 exactly


def test_bad_tiers_are_refused() -> None:
    with pytest.raises(ValueError):
        History(tiers=())
    with pytest.raises(ValueError):
        Series(((0.0, 10),))


# --- History.record ----------------------------------------------------------------


def mlx5_link(counters: dict[str, int]) -> LinkSample:
    return LinkSample(
        id="eth2",
        netdev="eth2",
        driver="mlx5_core",
        temperature_c=61.0,
        counters={"ethtool": dict(counters)},
        metrics=normalize_ethtool(counters, "mlx5_core"),
    )


def host_frame(
    seq: int, clock_s: float, uptime_s: float, counters: dict[str, int], inf: InferenceSample
) -> HostSample:
    gpu = GpuSample(
        index=1,
        utilization_pct=97.0,
        temperature_c=88.0,
        power_w=650.0,
        throttle_reasons=("SW Thermal Slowdown",),  # as nvidia-smi -q words it
    )
    return HostSample(
        host="gpu1",
        seq=seq,
        clock_ns=round(clock_s * 1e9),
        uptime_s=uptime_s,
        links={"eth2": mlx5_link(counters)},
        gpus=[gpu],
        inference=[inf],
    )


@pytest.fixture
def pfc_counters(fixtures_dir: Path) -> dict[str, int]:
    counters = parse_ethtool_stats((fixtures_dir / MLX5).read_text()).counters
    # per-priority pause names from mlx5 en_stats.c (present only where PFC is on)
    return dict(counters, rx_prio3_pause=100, rx_prio3_pause_duration=0, link_down_events_phy=2)


@pytest.fixture
def vllm(fixtures_dir: Path) -> InferenceSample:
    return parse_inference_metrics((fixtures_dir / VLLM).read_text(), URL)


def feed(
    hist: History,
    eng: RateEngine,
    seq: int,
    clock_s: float,
    uptime_s: float,
    counters: dict[str, int],
    inf: InferenceSample,
) -> None:
    sample = host_frame(seq, clock_s, uptime_s, counters, inf)
    hist.record(sample.clock_ns / 1e9, sample, eng.update(sample))


def step(counters: dict[str, int], **deltas: int) -> dict[str, int]:
    return {k: v + deltas.get(k, 0) for k, v in counters.items()}


def test_record_appends_the_standard_series(
    pfc_counters: dict[str, int], vllm: InferenceSample
) -> None:
    hist, eng = History(SMALL), RateEngine()
    feed(hist, eng, 1, T0, 100.0, pfc_counters, vllm)
    nxt = step(pfc_counters, rx_bytes_phy=10**9, rx_prio3_pause=50, rx_prio3_pause_duration=250_000)
    inf2 = InferenceSample(
        url=URL,
        generated_tokens_total=(vllm.generated_tokens_total or 0) + 400,
        prompt_tokens_total=vllm.prompt_tokens_total,
        histograms=vllm.histograms,
    )
    feed(hist, eng, 2, T0 + 1, 101.0, nxt, inf2)

    def latest(*key: str) -> float | None:
        s = hist.get(("gpu1", *key))
        assert s is not None, key
        return s.latest()

    assert latest("eth2", "rx_bps") == 8e9
    assert latest("eth2", "tx_bps") == 0.0
    assert latest("eth2", "rx_pause_per_s", "") == 50.0
    assert latest("eth2", "rx_pause_per_s", "3") == 50.0
    assert latest("eth2", "rx_pause_time_ratio", "3") == 0.25
    assert latest("eth2", "rx_pause_time_ratio", "") == 0.25
    assert latest("eth2", "link_down_events") == 2.0  # cumulative, as is
    assert latest("eth2", "temperature_c") == 61.0
    assert latest("gpu1", "thermal_slowdown") == 1.0
    assert latest("gpu1", "temperature_c") == 88.0
    assert latest(URL, "generated_tokens_per_s") == 400.0
    # nothing invented: no series for priorities or metrics this NIC never reported
    assert hist.get(("gpu1", "eth2", "rx_pause_per_s", "0")) is None
    assert hist.get(("gpu1", "eth2", "cnp_sent_per_s")) is None
    assert hist.get(("gpu1", "gpu1", "sm_clock_mhz")) is None
    assert all(k[0] == "gpu1" for k in list(hist.keys()))


def test_reset_records_a_gap_then_recovers(
    pfc_counters: dict[str, int], vllm: InferenceSample
) -> None:
    hist, eng = History(SMALL), RateEngine()
    feed(hist, eng, 1, T0, 100.0, pfc_counters, vllm)
    feed(hist, eng, 2, T0 + 1, 101.0, step(pfc_counters, rx_bytes_phy=1000), vllm)
    reloaded = {k: 5 for k in pfc_counters}
    feed(hist, eng, 3, T0 + 2, 102.0, reloaded, vllm)
    feed(hist, eng, 4, T0 + 3, 103.0, step(reloaded, rx_bytes_phy=2000), vllm)
    for key, after in (("rx_bps", 16000.0), ("rx_pause_per_s", 0.0)):
        full = ("gpu1", "eth2", key) if key == "rx_bps" else ("gpu1", "eth2", key, "3")
        s = hist.get(full)
        assert s is not None
        _, values = s.points(10)
        assert values[-2] is None  # the reset tick: a gap, not a spike or a negative
        assert values[-1] == after
        assert all(v is None or v >= 0 for v in values)


def test_history_time_follows_uptime_across_a_clock_step(
    pfc_counters: dict[str, int], vllm: InferenceSample
) -> None:
    # Without arrival times (a replay) the remote clock is the axis, bridged across a step.
    pipe = Pipeline(History(SMALL))

    def put(seq: int, clock_s: float, uptime_s: float, counters: dict[str, int]) -> None:
        pipe.apply_sample(host_frame(seq, clock_s, uptime_s, counters, vllm))

    put(1, T0, 100.0, pfc_counters)
    put(2, T0 + 1, 101.0, step(pfc_counters, rx_bytes_phy=8))
    # NTP steps the clock back an hour: the chart keeps moving, one second per tick
    put(3, T0 + 2 - 3600, 102.0, step(pfc_counters, rx_bytes_phy=16))
    put(4, T0 + 3 - 3600, 103.0, step(pfc_counters, rx_bytes_phy=24))
    s = pipe.history.get(("gpu1", "eth2", "rx_bps"))
    assert s is not None
    times, values = s.points(10)
    assert times == [T0 + 1, T0 + 2, T0 + 3]
    assert values == [64.0, 64.0, 64.0]


def test_clock_step_with_arrival_times_stays_on_the_operators_axis(
    pfc_counters: dict[str, int], vllm: InferenceSample
) -> None:
    # With arrival times the measured offset places the frames: a step of the remote
    # clock (either way) moves nothing on the operator's axis.
    pipe = Pipeline(History(SMALL))
    arrive = 1_800_000_000.0  # the operator's clock: the remote one is far off anyway
    counters = pfc_counters
    clock = T0
    for seq in range(1, 7):
        if seq == 3:
            clock -= 3600.0  # NTP steps the remote clock back an hour
        if seq == 5:
            clock += 7200.0  # and then forward two
        counters = step(counters, rx_bytes_phy=8)
        pipe.apply_sample(
            host_frame(seq, clock, 100.0 + seq, counters, vllm), arrived_unix=arrive + seq + 0.05
        )
        clock += 1.0
    s = pipe.history.get(("gpu1", "eth2", "rx_bps"))
    assert s is not None
    times, values = s.points(30)
    assert times == pytest.approx([arrive + seq + 0.05 for seq in range(2, 7)], abs=1e-3)
    assert values == [64.0] * 5


def test_history_nbytes_counts_every_series(
    pfc_counters: dict[str, int], vllm: InferenceSample
) -> None:
    hist, eng = History(SMALL), RateEngine()
    counters = pfc_counters
    for i in range(400):
        counters = step(counters, rx_bytes_phy=1000)
        feed(hist, eng, i + 1, T0 + i, 100.0 + i, counters, vllm)
    total = hist.nbytes
    # a series two keys name (an aggregate that is its one priority) counts once
    distinct = {id(s): s for k in list(hist.keys()) if (s := hist.get(k)) is not None}
    assert total >= sum(s.nbytes for s in distinct.values())


def test_last_reads_the_newest_raw_points_like_points_does() -> None:
    s = Series(SMALL)
    assert s.last(5) == []
    ramp(s, 3)
    assert s.last(5) == [0.0, 1.0, 2.0]  # fewer than asked: what there is
    ramp(s, 25, start=3)  # t 3..27, values 0..24: the 10-point raw ring has wrapped
    assert s.last(4) == [21.0, 22.0, 23.0, 24.0]
    assert s.last(10, span_s=5) == s.points(5)[1]
    s.append(40.0, None)  # silence, then a gap: the hole is marked, then the gap
    assert s.last(3) == [24.0, None, None]
    assert s.last(10, span_s=5.5) == s.points(5.5)[1]


def _history_memory_bench() -> ModuleType:
    """benchmarks/history_memory.py (a script, not a package): its estimate_24h."""
    name = "history_memory_bench"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "history_memory.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_a_day_of_128_roce_links_fits_the_memory_target() -> None:
    """DESIGN.md §8: 24 h of history at most 0.5 MB per link, and no more after 3 days."""
    estimate_24h = _history_memory_bench().estimate_24h
    nbytes, _ = estimate_24h(128)
    assert nbytes <= 0.5e6 * 128
    assert estimate_24h(128, hours=72)[0] == nbytes  # level from a day on
    wide, _ = estimate_24h(4, coarse_typecode="d")
    assert wide / 4 > nbytes / 128  # float64 coarse tiers would cost more per link


def test_series_of_vanished_links_are_forgotten_bounded() -> None:
    # Container nodes create and delete veth pairs all day: their history must not pile up.
    from collectors.samples import HostSample, LinkSample
    from fabtop.core.history import FORGET_AFTER_S, History
    from fabtop.core.rates import RateEngine

    hist, engine = History(), RateEngine()
    t0 = 1_700_000_000.0

    def tick(i: int, links: tuple[str, ...]) -> None:
        s = HostSample(
            "n1",
            i + 1,
            int((t0 + i) * 1e9),
            1000.0 + i,
            links={
                lid: LinkSample(lid, netdev=lid, metrics={"rx_bytes": 1000 * i, "tx_bytes": 0})
                for lid in links
            },
        )
        hist.record(t0 + i, s, engine.update(s))

    for i in range(10):
        tick(i, ("eth0", "veth1"))
    assert hist.get(("n1", "veth1", "rx_bps")) is not None
    for i in range(10, 10 + int(FORGET_AFTER_S) + 120):
        tick(i, ("eth0",))
    assert hist.get(("n1", "veth1", "rx_bps")) is None
    subjects = {k[1] for k in list(hist.keys())}
    assert "veth1" not in subjects and "eth0" in subjects
    eth0 = hist.get(("n1", "eth0", "rx_bps"))
    assert eth0 is not None and eth0.latest() == 8000.0


# --- the coarse tiers take raw points in batches: what a point-by-point update makes ---


class _RefTier:
    """One coarse tier updated point by point (the batches in Series must agree)."""

    def __init__(self, step: float, capacity: int) -> None:
        self.step, self.capacity = step, capacity
        self.slots: list[tuple[float, float]] = []  # (mean, max), oldest first
        self.first = 0
        self.cur: int | None = None
        self.total, self.n, self.top = 0.0, 0, math.nan

    def add(self, t: float, v: float) -> None:
        b = math.floor(t / self.step)
        if self.cur is None or b > self.cur:
            if self.cur is None or b - self.cur > self.capacity:
                self.slots, self.first = [], b
            else:
                self.slots += [(math.nan, math.nan)] * (b - self.cur - 1)
            self.slots.append((math.nan, math.nan))
            self.cur, self.total, self.n, self.top = b, 0.0, 0, math.nan
            excess = len(self.slots) - self.capacity
            if excess > 0:
                del self.slots[:excess]
                self.first += excess
        if v == v:
            self.total += v
            self.n += 1
            if not self.top >= v:
                self.top = v
            self.slots[-1] = (self.total / self.n, self.top)

    def content(self, typecode: str) -> tuple[list[float], str, str]:
        times = [(self.first + i) * self.step for i in range(len(self.slots))]
        means = array(typecode, [m for m, _ in self.slots])
        tops = array(typecode, [x for _, x in self.slots])
        return times, repr(list(means)), repr(list(tops))


def _tiers_agree(s: Series, ref: list[_RefTier], typecode: str) -> None:
    s._fold()  # what a reader of a coarse tier does first: the tiers take what waits
    for tier, r in zip(s._coarse, ref, strict=True):
        times, means = tier.ordered(False)
        _, tops = tier.ordered(True)
        want_times, want_means, want_tops = r.content(typecode)
        assert times == want_times
        assert repr(list(means)) == want_means
        if tier.maxes is not None:
            assert repr(list(tops)) == want_tops


@pytest.mark.parametrize("seed", range(12))
def test_coarse_tiers_are_what_point_by_point_updates_make(seed: int) -> None:
    # Points wait in the raw ring and reach the coarse tiers in batches (when the ring
    # comes round, or a reader asks): bucket for bucket, the sums, counts and maxima
    # must be those of one update per point, in order, whatever the batches.
    rnd = random.Random(seed)
    tiers = rnd.choice([SMALL, ((1.0, 7), (3.0, 4), (7.0, 9)), ((1.0, 60), (10.0, 30))])
    typecode = rnd.choice(["d", "f"])
    s = Series(tiers, keep_max=seed % 2 == 0, coarse_typecode=typecode)  # type: ignore[arg-type]
    ref = [_RefTier(step, cap) for step, cap in tiers[1:]]
    t, last = T0 + rnd.random(), -math.inf
    for _ in range(600):
        r = rnd.random()
        t += rnd.uniform(8, 90) if r < 0.03 else (-1.0 if r < 0.05 else rnd.uniform(0.9, 1.1))
        value = None if rnd.random() < 0.1 else rnd.choice([0.0, -0.0, 1e300, rnd.uniform(-5, 5)])
        s.append(t, value)
        if t > last:  # what append takes (an older point is dropped)
            for r_tier in ref:
                r_tier.add(t, math.nan if value is None else value)
            last = t
        if rnd.random() < 0.02:
            _tiers_agree(s, ref, typecode)
        if rnd.random() < 0.01:
            s.points(10**9)  # a read in the middle of a bucket changes nothing
    _tiers_agree(s, ref, typecode)


def test_append_all_is_append_point_by_point() -> None:
    # History appends a host's series in one loop; series appended together share one
    # clock. A series skipped for a tick, appended alone, or added later must still end
    # up as if each of its points had been appended on its own.
    rnd = random.Random(7)
    fed: list[Series] = []
    twins: list[Series] = []
    t = T0
    for tick in range(400):
        if tick % 50 == 0:
            fed.append(Series(SMALL))
            twins.append(Series(SMALL))
        t += 30.0 if tick == 200 else 1.0 + rnd.uniform(-0.01, 0.01)
        row, values = [], []
        for a, b in zip(fed, twins, strict=True):
            v = None if rnd.random() < 0.05 else rnd.uniform(0, 10)
            r = rnd.random()
            if r < 0.05:
                continue  # not reported this tick
            b.append(t, v)
            if r < 0.1:
                a.append(t, v)
            else:
                row.append(a)
                values.append(v)
        append_all(t, row, values)
    for a, b in zip(fed, twins, strict=True):
        for span in (5, 60, 600, 10**6):
            assert a.points(span) == b.points(span)
            assert a.points(span, stat="max") == b.points(span, stat="max")
        assert a.last(20, 15.0) == b.last(20, 15.0)
        assert a.nbytes == b.nbytes


# --- History.record, the resolved series ------------------------------------------------


def _tick(hist: History, i: int, rates: dict[str, object], gpu: GpuSample | None = None) -> None:
    link = LinkSample("eth0", netdev="eth0", metrics={"link_down_events": 1})
    sample = HostSample(
        "n1", i, int((T0 + i) * 1e9), 100.0 + i, links={"eth0": link}, gpus=[gpu] if gpu else []
    )
    lr = LinkRates(rates=dict(rates))  # type: ignore[arg-type]
    hist.record(T0 + i, sample, HostRates("n1", 1.0, False, {"eth0": lr}, {}))


def test_a_rate_given_per_priority_is_recorded_as_its_sum() -> None:
    hist = History(SMALL)
    _tick(hist, 0, {"rx_bps": 1.0, "ecn_marked_per_s": 2.0})
    _tick(hist, 1, {"rx_bps": 2.0, "ecn_marked_per_s": {3: 5.0, 4: 2.0}})
    _tick(hist, 2, {"rx_bps": 3.0, "ecn_marked_per_s": {}})
    ecn = hist.get(("n1", "eth0", "ecn_marked_per_s"))
    bps = hist.get(("n1", "eth0", "rx_bps"))
    assert ecn is not None and bps is not None
    assert ecn.points(10) == ([T0, T0 + 1, T0 + 2], [2.0, 7.0, None])
    assert bps.points(10) == ([T0, T0 + 1, T0 + 2], [1.0, 2.0, 3.0])  # each point once
    # a metric seen first per priority gets its series from its first sum
    _tick(hist, 3, {"cnp_sent_per_s": {0: 1.0, 1: 1.5}})
    cnp = hist.get(("n1", "eth0", "cnp_sent_per_s"))
    assert cnp is not None and cnp.points(10) == ([T0 + 3], [2.5])


def test_gpu_series_take_their_own_fields() -> None:
    hist = History(SMALL)
    for i in range(3):
        gpu = GpuSample(
            index=0,
            utilization_pct=10.0 + i,
            temperature_c=20.0 + i,
            power_w=30.0 + i,
            sm_clock_mhz=40.0 + i,
            memory_used_mib=50.0 + i,
            throttle_reasons=("HW Thermal Slowdown",) if i == 2 else (),
        )
        _tick(hist, i, {}, gpu)
        for name in (
            "utilization_pct",
            "temperature_c",
            "power_w",
            "sm_clock_mhz",
            "memory_used_mib",
        ):
            s = hist.get(("n1", "gpu0", name))
            assert s is not None and s.latest() == getattr(gpu, name), name
        thermal = hist.get(("n1", "gpu0", "thermal_slowdown"))
        assert thermal is not None and thermal.latest() == (1.0 if i == 2 else 0.0)


def test_a_series_made_by_hand_records_the_holes_too() -> None:
    # record() resolves a link's series once; one made since by History.series() must
    # still get every tick (a hole where the host reports nothing), as any existing one.
    hist = History(SMALL)
    _tick(hist, 0, {"rx_bps": 1.0})
    made = hist.series(("n1", "eth0", "cnp_sent_per_s"))
    _tick(hist, 1, {"rx_bps": 2.0})
    _tick(hist, 2, {"rx_bps": 3.0, "cnp_sent_per_s": 4.0})
    assert made.points(10) == ([T0 + 1, T0 + 2], [None, 4.0])


def test_times_given_as_ints_come_back_as_floats() -> None:
    """Raw times are kept as float64 would keep them, by append and append_all alike."""
    one, many = Series(), [Series(), Series()]
    for t in range(1_700_000_000, 1_700_000_004):
        one.append(t, 1.0)
        append_all(t, many, [1.0, None])
    for s in (one, *many):
        times, _ = s.points(10.0)
        assert times == [1_700_000_000.0, 1_700_000_001.0, 1_700_000_002.0, 1_700_000_003.0]
        assert all(type(t) is float for t in times)


# --- a host's series share one clock ------------------------------------------------------


def _frame(hist: History, i: int, rates: dict[str, dict[str, object]], t: float = 0.0) -> None:
    """One frame of host n1 at T0 + i (+ ``t``): the links given, with their rates."""
    links = {lid: LinkSample(lid, netdev=lid) for lid in rates}
    sample = HostSample("n1", i, int((T0 + i + t) * 1e9), 100.0 + i, links=links)
    lrates = {lid: LinkRates(rates=dict(r)) for lid, r in rates.items()}  # type: ignore[arg-type]
    hist.record(T0 + i + t, sample, HostRates("n1", 1.0, False, lrates, {}))


def test_a_link_missing_from_a_frame_is_a_gap_there_and_the_tiers_skip_it() -> None:
    hist = History(((1.0, 40), (10.0, 30)))
    for i in range(30):
        both = not 10 <= i < 13  # eth1 is not in frames 10 to 12
        _frame(hist, i, {"eth0": {"rx_bps": 1.0}, **({"eth1": {"rx_bps": 2.0}} if both else {})})
    eth1 = hist.get(("n1", "eth1", "rx_bps"))
    assert eth1 is not None
    times, values = eth1.points(30)
    assert times == [T0 + i for i in range(30)]
    assert values == [None if 10 <= i < 13 else 2.0 for i in range(30)]
    eth1._fold()
    assert eth1._coarse[0].ordered(False)[1].tolist() == [2.0, 2.0, 2.0]  # its points' means
    # a link that came later reads from its first frame on
    _frame(hist, 30, {"eth0": {"rx_bps": 1.0}, "eth2": {"rx_bps": 3.0}})
    eth2 = hist.get(("n1", "eth2", "rx_bps"))
    assert eth2 is not None and eth2.points(100) == ([T0 + 30], [3.0])


def test_points_of_a_link_gone_while_the_host_goes_on_still_reach_the_coarse_tiers() -> None:
    # The raw ring is the host's: it comes round while the link sends nothing, and the
    # link's points must be in its coarse tiers before their slots hold other times.
    hist = History(SMALL)
    ecn = "ecn_marked_per_s"
    for i in range(50):
        gone = {"eth1": {ecn: float(i)}} if i < 6 else {}
        _frame(hist, i, {"eth0": {ecn: 1.0}, **gone})
    eth1 = hist.get(("n1", "eth1", ecn))
    assert eth1 is not None
    assert eth1.points(10) == ([], [])  # the raw ring holds none of its points now
    assert eth1.points(10**6, now=T0 + 49) == ([T0], [2.5])  # t 0..5: the 10-s bucket's mean
    assert eth1.points(10**6, now=T0 + 49, stat="max") == ([T0], [5.0])


def test_a_host_silent_for_a_while_is_a_hole_in_every_series_of_it() -> None:
    hist = History(SMALL)
    for i in (0, 1, 2, 3, 20, 21):
        _frame(hist, i, {"eth0": {"rx_bps": 1.0, "tx_bps": 5.0}})
    for name, v in (("rx_bps", 1.0), ("tx_bps", 5.0)):
        s = hist.get(("n1", "eth0", name))
        assert s is not None
        assert s.points(30) == (
            [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 20, T0 + 21],
            [v] * 4 + [None] + [v] * 2,
        )


def test_the_one_lossless_priority_and_the_aggregate_are_one_series_until_they_differ() -> None:
    hist = History(SMALL)
    pause, ratio = "rx_pause_per_s", "rx_pause_time_ratio"
    for i in range(5):
        _frame(hist, i, {"eth0": {pause: {3: float(i)}, ratio: {3: 0.1 * i}}})
    total, prio = hist.get(("n1", "eth0", pause, "")), hist.get(("n1", "eth0", pause, "3"))
    assert total is prio is not None  # one series, named twice (a day of it costs once)
    assert [k[2:] for k in list(hist.keys())] == [
        (pause, ""),
        (pause, "3"),
        (ratio, ""),
        (ratio, "3"),
    ]
    # priority 5 starts pausing too: the aggregate is the sum from now on, the past kept
    for i in range(5, 8):
        _frame(hist, i, {"eth0": {pause: {3: float(i), 5: 1.0}, ratio: {3: 0.1, 5: 0.7}}})
    _frame(hist, 8, {"eth0": {pause: 9.0, ratio: None}})  # a total without priorities
    total, prio = hist.get(("n1", "eth0", pause, "")), hist.get(("n1", "eth0", pause, "3"))
    assert total is not None and prio is not None and total is not prio
    assert total.points(100)[1] == [0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0]
    assert prio.points(100)[1] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, None]
    p5 = hist.get(("n1", "eth0", pause, "5"))
    assert p5 is not None and p5.points(100)[1] == [1.0, 1.0, 1.0, None]
    worst = hist.get(("n1", "eth0", ratio, ""))
    assert worst is not None and worst.points(100)[1] == pytest.approx(
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.7, 0.7, 0.7, None]
    )
    r3 = hist.get(("n1", "eth0", ratio, "3"))
    assert r3 is not None and r3.points(100)[1] == pytest.approx(
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.1, 0.1, 0.1, None]
    )


def test_forgotten_series_leave_their_hosts_clock() -> None:
    hist = History(SMALL)
    for i in range(3):
        _frame(hist, i, {"eth0": {"rx_bps": 1.0}, "veth1": {"rx_bps": 1.0}})
    gone = hist.get(("n1", "veth1", "rx_bps"))
    for i in range(3, 3 + int(FORGET_AFTER_S) + 120):
        _frame(hist, i, {"eth0": {"rx_bps": 1.0}})
    assert hist.get(("n1", "veth1", "rx_bps")) is None
    assert gone is not None and gone not in hist._clocks["n1"].members
    hist.forget(["n1"])
    assert not hist._clocks and not list(hist.keys())
