"""Rate engine: rates from remote timestamps, resets, saturation, pauses, inference."""

from __future__ import annotations

import bisect
import dataclasses
from pathlib import Path

import pytest

from collectors.normalize import normalize_ethtool, normalize_ib, saturated_ib_counters
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.samples import HostSample, InferenceSample, LinkSample
from fabtop.core.rates import HostRates, RateEngine

MLX5 = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
MLX4_IB = "sysfs/prometheus_node_exporter/sys/class/infiniband/mlx4_0/ports/1/counters"
VLLM = "llm_metrics/vllm_metrics_datadog.txt"
URL = "http://127.0.0.1:8000/metrics"


def eth_link(counters: dict[str, int]) -> LinkSample:
    """An mlx5 netdev as the assembler builds it: raw ethtool counters plus normalized ones."""
    return LinkSample(
        id="eth2",
        netdev="eth2",
        driver="mlx5_core",
        counters={"ethtool": dict(counters)},
        metrics=normalize_ethtool(counters, "mlx5_core"),
    )


def ib_link(counters: dict[str, int]) -> LinkSample:
    return LinkSample(
        id="mlx4_0/1",
        rdma_device="mlx4_0",
        port=1,
        kind="ib",
        counters={"ib_port": dict(counters)},
        metrics=normalize_ib(counters, {}),
        saturated=saturated_ib_counters(counters),
    )


def frame(
    seq: int,
    clock_s: float,
    uptime_s: float,
    links: list[LinkSample] | None = None,
    inference: list[InferenceSample] | None = None,
) -> HostSample:
    return HostSample(
        host="gpu1",
        seq=seq,
        clock_ns=round(clock_s * 1e9),
        uptime_s=uptime_s,
        links={link.id: link for link in links or []},
        inference=list(inference or []),
    )


@pytest.fixture
def mlx5(fixtures_dir: Path) -> dict[str, int]:
    stats = parse_ethtool_stats((fixtures_dir / MLX5).read_text())
    assert "rx_bytes_phy" in stats.counters
    return stats.counters


@pytest.fixture
def mlx4_ib(fixtures_dir: Path) -> dict[str, int]:
    root = fixtures_dir / MLX4_IB
    return {p.name: int(p.read_text()) for p in root.iterdir()}


def bump(counters: dict[str, int], **deltas: int) -> dict[str, int]:
    out = dict(counters)
    for name, d in deltas.items():
        out[name] = out.get(name, 0) + d
    return out


def no_negative(rates: HostRates) -> None:
    for lr in rates.links.values():
        for v in lr.rates.values():
            for x in v.values() if isinstance(v, dict) else [v]:
                assert x >= 0
        for per_source in lr.raw_rates.values():
            assert all(x >= 0 for x in per_source.values())


def test_first_frame_is_a_baseline_only(mlx5: dict[str, int]) -> None:
    r = RateEngine().update(frame(1, 1000.0, 50.0, [eth_link(mlx5)]))
    assert r.interval_s is None
    assert r.links["eth2"].rates == {}
    assert not r.links["eth2"].gap


def test_rate_divides_by_the_remote_clock_delta(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(1, 1_700_000_000.0, 50.00, [eth_link(mlx5)]))
    # uptime has 10 ms resolution: 0.99 s of uptime against 1.0 s of clock is no step
    nxt = bump(mlx5, rx_bytes_phy=1_000_000_000, tx_bytes_phy=250_000_000)
    r = eng.update(frame(2, 1_700_000_001.0, 50.99, [eth_link(nxt)]))
    lr = r.links["eth2"]
    assert r.interval_s == 1.0
    assert not r.clock_stepped
    assert lr.rates["rx_bytes_per_s"] == 1e9
    assert lr.rates["rx_bps"] == 8e9
    assert lr.rates["tx_bps"] == 2e9
    assert lr.raw_rates["ethtool"]["rx_bytes_phy"] == 1e9
    assert lr.raw_rates["ethtool"]["rx_packets"] == 0.0  # unchanged counter: a real zero
    assert not lr.gap


def test_half_second_frames_double_the_rate(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(mlx5)]))
    r = eng.update(frame(2, 100.5, 10.5, [eth_link(bump(mlx5, rx_bytes_phy=10**9))]))
    assert r.links["eth2"].rates["rx_bytes_per_s"] == pytest.approx(2e9)


@pytest.mark.parametrize("clock_jump_s", [3600.0, -30.0])
def test_wall_clock_step_uses_uptime(mlx5: dict[str, int], clock_jump_s: float) -> None:
    eng = RateEngine()
    eng.update(frame(1, 1000.0, 50.0, [eth_link(mlx5)]))
    nxt = bump(mlx5, rx_bytes_phy=2 * 10**9)
    r = eng.update(frame(2, 1000.0 + 2.0 + clock_jump_s, 52.0, [eth_link(nxt)]))
    assert r.clock_stepped
    assert r.interval_s == pytest.approx(2.0)
    assert r.links["eth2"].rates["rx_bytes_per_s"] == pytest.approx(1e9)


def test_repeated_seq_gives_no_rates_and_keeps_the_baseline(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(7, 100.0, 10.0, [eth_link(mlx5)]))
    again = eng.update(frame(7, 101.0, 11.0, [eth_link(bump(mlx5, rx_bytes_phy=5))]))
    assert again.links == {}
    assert again.interval_s is None
    r = eng.update(frame(8, 102.0, 12.0, [eth_link(bump(mlx5, rx_bytes_phy=4 * 10**9))]))
    assert r.interval_s == 2.0  # measured from seq 7's first frame, the kept baseline
    assert r.links["eth2"].rates["rx_bytes_per_s"] == 2e9


def test_zero_interval_gives_no_rates(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(mlx5)]))
    r = eng.update(frame(2, 100.0, 10.0, [eth_link(bump(mlx5, rx_bytes_phy=5))]))
    assert r.links == {}
    r = eng.update(frame(3, 101.0, 11.0, [eth_link(bump(mlx5, rx_bytes_phy=10))]))
    assert r.links["eth2"].rates["rx_bytes_per_s"] == 10.0


def test_counter_reset_is_a_gap_never_a_negative_or_a_spike(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(mlx5)]))
    # driver reload: every counter restarts near zero
    reloaded = {name: 7 for name in mlx5}
    r = eng.update(frame(2, 101.0, 11.0, [eth_link(reloaded)]))
    lr = r.links["eth2"]
    assert lr.gap
    assert "rx_bytes" in lr.reset
    assert "rx_bytes_phy" in lr.reset
    assert "rx_bytes_per_s" not in lr.rates
    assert "rx_bps" not in lr.rates
    no_negative(r)
    # the next tick is normal again, against the new baseline
    r = eng.update(frame(3, 102.0, 12.0, [eth_link(bump(reloaded, rx_bytes_phy=3000))]))
    lr = r.links["eth2"]
    assert not lr.gap
    assert lr.reset == []
    assert lr.rates["rx_bytes_per_s"] == 3000.0


def test_counter_seen_for_the_first_time_has_no_rate(mlx5: dict[str, int]) -> None:
    assert "rx_vport_rdma_unicast_bytes" not in mlx5
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(mlx5)]))
    with_rdma = bump(mlx5, rx_vport_rdma_unicast_bytes=10**12, tx_vport_rdma_unicast_bytes=10**12)
    r = eng.update(frame(2, 101.0, 11.0, [eth_link(with_rdma)]))
    lr = r.links["eth2"]
    assert "rdma_rx_bytes_per_s" not in lr.rates
    assert "rx_vport_rdma_unicast_bytes" not in lr.raw_rates["ethtool"]
    assert not lr.gap
    nxt = bump(with_rdma, rx_vport_rdma_unicast_bytes=600, rx_bytes_phy=800, tx_bytes_phy=200)
    r = eng.update(frame(3, 102.0, 12.0, [eth_link(nxt)]))
    lr = r.links["eth2"]
    assert lr.rates["rdma_rx_bytes_per_s"] == 600.0
    assert lr.rates["rdma_share"] == pytest.approx(0.6)  # 600 of 800+200 bytes


def test_saturated_32bit_ib_counter_has_no_rate_and_is_flagged(mlx4_ib: dict[str, int]) -> None:
    # port_xmit_wait reads 4294967295 in this real capture: stuck, not idle
    assert mlx4_ib["port_xmit_wait"] == 2**32 - 1
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [ib_link(mlx4_ib)]))
    nxt = bump(mlx4_ib, port_rcv_data=250, port_rcv_packets=10)
    r = eng.update(frame(2, 101.0, 11.0, [ib_link(nxt)]))
    lr = r.links["mlx4_0/1"]
    assert "port_xmit_wait" in lr.saturated
    assert "xmit_wait" in lr.saturated
    assert "xmit_wait_per_s" not in lr.rates
    assert "port_xmit_wait" not in lr.raw_rates["ib_port"]
    # port_rcv_data counts 4-octet words
    assert lr.rates["rx_bytes_per_s"] == 1000.0
    assert lr.rates["rx_packets_per_s"] == 10.0


def test_saturated_legacy_counter_does_not_hide_the_64bit_one(mlx4_ib: dict[str, int]) -> None:
    stuck = dict(mlx4_ib, port_rcv_data=2**32 - 1, port_rcv_data_64=5 * 10**10)
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [ib_link(stuck)]))
    r = eng.update(frame(2, 101.0, 11.0, [ib_link(bump(stuck, port_rcv_data_64=100))]))
    lr = r.links["mlx4_0/1"]
    assert "port_rcv_data" in lr.saturated
    assert "rx_bytes" not in lr.saturated
    assert lr.rates["rx_bytes_per_s"] == 400.0


def test_per_priority_pause_rates_and_pause_time_ratio(mlx5: dict[str, int]) -> None:
    # names from mlx5 en_stats.c (pport_per_prio_pause); they exist only where PFC is on
    pfc = dict(
        mlx5,
        rx_prio3_pause=1000,
        rx_prio3_pause_duration=5_000_000,
        tx_prio3_pause=50,
        tx_prio3_pause_duration=10,
        rx_prio4_pause=0,
        rx_prio4_pause_duration=0,
    )
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(pfc)]))
    nxt = bump(pfc, rx_prio3_pause=240, rx_prio3_pause_duration=1_000_000, tx_prio3_pause=2)
    r = eng.update(frame(2, 102.0, 12.0, [eth_link(nxt)]))
    rates = r.links["eth2"].rates
    assert rates["rx_pause_per_s"] == {3: 120.0, 4: 0.0}
    assert rates["tx_pause_per_s"] == {3: 1.0}
    # 1 s paused in a 2 s interval
    assert rates["rx_pause_time_ratio"] == {3: pytest.approx(0.5), 4: 0.0}
    assert rates["tx_pause_time_ratio"] == {3: 0.0}
    # the duration counter can run ahead of the frame clock: a ratio stays within 0..1
    storm = bump(nxt, rx_prio3_pause_duration=2_500_000)
    r = eng.update(frame(3, 104.0, 14.0, [eth_link(storm)]))
    assert r.links["eth2"].rates["rx_pause_time_ratio"] == {3: 1.0, 4: 0.0}


def test_priority_reset_is_a_gap(mlx5: dict[str, int]) -> None:
    pfc = dict(mlx5, rx_prio3_pause=1000, rx_prio3_pause_duration=5_000_000)
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, [eth_link(pfc)]))
    r = eng.update(frame(2, 101.0, 11.0, [eth_link(dict(pfc, rx_prio3_pause=3))]))
    lr = r.links["eth2"]
    assert lr.gap
    assert "rx_pause" in lr.reset
    assert "rx_pause_per_s" not in lr.rates
    no_negative(r)


def test_reboot_rebaselines_everything(mlx5: dict[str, int]) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 5000.0, [eth_link(mlx5)]))
    r = eng.update(frame(2, 160.0, 3.0, [eth_link({k: 1 for k in mlx5})]))
    assert r.restarted
    assert r.interval_s is None
    assert r.links["eth2"].gap
    assert r.links["eth2"].rates == {}
    r = eng.update(frame(3, 161.0, 4.0, [eth_link({k: 101 for k in mlx5})]))
    assert not r.restarted
    assert r.links["eth2"].rates["rx_bytes_per_s"] == 100.0


def test_cpu_throttle_rate_divides_by_remote_time_and_skips_resets() -> None:
    eng = RateEngine()

    def tick(seq: int, clock_s: float, count: int | None) -> float | None:
        s = dataclasses.replace(frame(seq, clock_s, clock_s - 100.0), cpu_throttle_count=count)
        return eng.update(s).cpu_throttle_per_s

    assert tick(1, 100.0, 10) is None  # no baseline yet
    assert tick(2, 102.0, 30) == 10.0
    assert tick(3, 103.0, 5) is None  # counter went backwards: no rate, new baseline
    assert tick(4, 104.0, 7) == 2.0
    assert tick(5, 105.0, None) is None  # the host stopped reporting it


# --- inference servers -------------------------------------------------------------


def observe(
    inf: InferenceSample, name: str, values: list[float]
) -> dict[str, tuple[tuple[float, ...], tuple[float, ...], float, float]]:
    """The histograms after ``values`` were observed in ``name`` (cumulative buckets)."""
    bounds, counts, count, total = inf.histograms[name]
    new = list(counts)
    for v in values:
        for i in range(bisect.bisect_left(bounds, v), len(bounds)):
            new[i] += 1
    hists = dict(inf.histograms)
    hists[name] = (bounds, tuple(new), count + len(values), total + sum(values))
    return hists


@pytest.fixture
def vllm(fixtures_dir: Path) -> InferenceSample:
    inf = parse_inference_metrics((fixtures_dir / VLLM).read_text(), URL)
    assert inf.error is None
    assert inf.generated_tokens_total is not None
    return inf


def later(
    inf: InferenceSample, generated: float, prompt: float, **hists: list[float]
) -> InferenceSample:
    nxt = dataclasses.replace(inf)
    assert inf.generated_tokens_total is not None and inf.prompt_tokens_total is not None
    nxt.generated_tokens_total = inf.generated_tokens_total + generated
    nxt.prompt_tokens_total = inf.prompt_tokens_total + prompt
    for name, values in hists.items():
        nxt.histograms = observe(nxt, "vllm:" + name, values)
    return nxt


def test_inference_token_rates_and_latency_quantiles_from_deltas(vllm: InferenceSample) -> None:
    eng = RateEngine()
    first = eng.update(frame(1, 100.0, 10.0, inference=[vllm]))
    assert first.inference[URL]["generated_tokens_per_s"] is None
    # the capture already holds one TTFT of ~0.31 s and 141 ITLs under 10 ms: a quantile
    # over all time would land there, one over this interval must not
    nxt = later(
        vllm,
        generated=1000.0,
        prompt=4000.0,
        time_to_first_token_seconds=[0.05] * 10,
        inter_token_latency_seconds=[0.05] * 50,
    )
    r = eng.update(frame(2, 102.0, 12.0, inference=[nxt]))
    got = r.inference[URL]
    assert got["generated_tokens_per_s"] == 500.0
    assert got["prompt_tokens_per_s"] == 2000.0
    ttft50, ttft99 = got["ttft_p50_s"], got["ttft_p99_s"]
    itl50, itl99 = got["itl_p50_s"], got["itl_p99_s"]
    assert ttft50 is not None and ttft99 is not None
    assert 0.04 < ttft50 <= ttft99 <= 0.06  # the bucket the new observations fell in
    assert itl50 is not None and itl99 is not None
    assert 0.01 < itl50 <= itl99 <= 0.1


def test_no_requests_in_the_interval_means_no_quantile(vllm: InferenceSample) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, inference=[vllm]))
    r = eng.update(frame(2, 101.0, 11.0, inference=[later(vllm, 0.0, 0.0)]))
    assert r.inference[URL]["generated_tokens_per_s"] == 0.0
    assert r.inference[URL]["ttft_p50_s"] is None
    assert r.inference[URL]["itl_p99_s"] is None


def test_inference_server_restart_gives_none_then_recovers(vllm: InferenceSample) -> None:
    eng = RateEngine()
    busy = later(vllm, 10_000.0, 10_000.0, time_to_first_token_seconds=[0.3] * 5)
    eng.update(frame(1, 100.0, 10.0, inference=[busy]))
    r = eng.update(frame(2, 101.0, 11.0, inference=[vllm]))  # counters back at the start
    assert all(v is None for v in r.inference[URL].values())
    r = eng.update(frame(3, 102.0, 12.0, inference=[later(vllm, 30.0, 0.0)]))
    assert r.inference[URL]["generated_tokens_per_s"] == 30.0


def test_reading_reused_between_polls_spans_the_poll_interval(vllm: InferenceSample) -> None:
    # /metrics is polled less often than frames arrive; frames in between carry the
    # last reading (same object): its rates are shown again, never a 0 then a spike
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, inference=[vllm]))
    nxt = later(vllm, 300.0, 0.0)
    r = eng.update(frame(2, 101.0, 11.0, inference=[nxt]))
    assert r.inference[URL]["generated_tokens_per_s"] == 300.0
    for seq in (3, 4):
        r = eng.update(frame(seq, 100.0 + seq - 1, 10.0 + seq - 1, inference=[nxt]))
        assert r.inference[URL]["generated_tokens_per_s"] == 300.0
    r = eng.update(frame(5, 104.0, 14.0, inference=[later(nxt, 600.0, 0.0)]))
    assert r.inference[URL]["generated_tokens_per_s"] == 200.0  # 600 tokens over 3 s


def test_failed_scrape_gives_none(vllm: InferenceSample) -> None:
    eng = RateEngine()
    eng.update(frame(1, 100.0, 10.0, inference=[vllm]))
    broken = InferenceSample(url=URL, error="connection refused")
    r = eng.update(frame(2, 101.0, 11.0, inference=[broken]))
    assert all(v is None for v in r.inference[URL].values())


def test_raw_rates_are_made_when_asked_and_match_the_counters(mlx5: dict[str, int]) -> None:
    """Hundreds of raw counters per port: rated on demand (the link detail), not per tick."""
    eng = RateEngine()
    eng.update(frame(1, 1_700_000_000.0, 50.00, [eth_link(mlx5)]))
    nxt = bump(mlx5, rx_bytes_phy=2_000_000_000, tx_packets_phy=10)
    nxt["rx_packets"] = mlx5["rx_packets"] - 1  # a raw counter that went backwards
    lr = eng.update(frame(2, 1_700_000_002.0, 52.00, [eth_link(nxt)])).links["eth2"]
    assert lr.raw is None  # nothing made yet
    assert lr.rates["rx_bytes_per_s"] == 1e9  # the normalized ones are there at once
    assert lr.span_s == 2.0
    assert lr.raw_rates["ethtool"]["rx_bytes_phy"] == 1e9
    assert lr.raw_rates["ethtool"]["tx_packets_phy"] == 5.0
    assert "rx_packets" not in lr.raw_rates["ethtool"]
    assert "rx_packets" in lr.reset
    assert len(lr.raw_rates["ethtool"]) == len(nxt) - 1
    assert lr.raw_inputs is None  # the two readings are let go once made
