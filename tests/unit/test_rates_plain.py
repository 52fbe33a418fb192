"""Rate engine, the common tick: a link's rates made whole when nothing is in doubt.

Most ticks of most links read the same names as the tick before, nothing reset, nothing
at all-ones; the engine makes those rates in one pass (fabtop.core.rates._plain_rates) and
leaves every other tick to the per-counter loop that judges each counter. These tests hold
the two to the same answers, on real captures with faults of every kind thrown in.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from collectors.normalize import (
    normalize_ethtool,
    normalize_ib,
    normalize_netdev,
    saturated_ib_counters,
)
from collectors.numbers import U32_MAX, U64_MAX
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.samples import SLOW_SOURCE, HostSample, LinkSample, MetricValue
from fabtop.core import rates as rates_module
from fabtop.core.rates import HostRates, RateEngine

MLX5 = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
MLX4_IB = "sysfs/prometheus_node_exporter/sys/class/infiniband/mlx4_0/ports/1/counters"
T0 = 1_700_000_000.0
GB = 10**9


@pytest.fixture
def mlx5(fixtures_dir: Path) -> dict[str, int]:
    return parse_ethtool_stats((fixtures_dir / MLX5).read_text()).counters


@pytest.fixture
def mlx4_ib(fixtures_dir: Path) -> dict[str, int]:
    return {p.name: int(p.read_text()) for p in (fixtures_dir / MLX4_IB).iterdir()}


def roce_link(
    eth: dict[str, int] | None,
    netdev: dict[str, int],
    metrics: dict[str, MetricValue] | None = None,
) -> LinkSample:
    """A ConnectX port as the assembler builds it: ethtool over the kernel's statistics."""
    counters = {"netdev": dict(netdev)}
    made = normalize_netdev(netdev, None)
    if eth is not None:
        counters["ethtool"] = dict(eth)
        made.update(normalize_ethtool(eth, "mlx5_core"))
    return LinkSample(
        id="eth2",
        netdev="eth2",
        driver="mlx5_core",
        rate_gbps=100.0,
        physical=True,
        kind="roce",
        counters=counters,
        metrics=made if metrics is None else metrics,
    )


def ib_link(counters: dict[str, int]) -> LinkSample:
    return LinkSample(
        id="mlx4_0/1",
        rdma_device="mlx4_0",
        port=1,
        kind="ib",
        physical=True,
        rate_gbps=40.0,
        counters={"ib_port": dict(counters)},
        metrics=normalize_ib(counters, {}),
        saturated=saturated_ib_counters(counters),
    )


def frame(seq: int, t: float, *links: LinkSample, uptime_s: float | None = None) -> HostSample:
    return HostSample(
        host="gpu1",
        seq=seq,
        clock_ns=round(t * 1e9),
        uptime_s=t - T0 + 1000.0 if uptime_s is None else uptime_s,
        links={link.id: link for link in links},
    )


def bump(counters: dict[str, int], **deltas: int) -> dict[str, int]:
    return {**counters, **{k: counters.get(k, 0) + d for k, d in deltas.items()}}


def seen(r: HostRates) -> tuple[Any, ...]:
    """Everything a tick's rates say, the order of each link's rates included."""
    links = {
        lid: (
            [(k, sorted(v.items()) if isinstance(v, dict) else v) for k, v in lr.rates.items()],
            lr.gap,
            lr.norm_reset,
            lr.saturated,
            lr.glitched,
            lr.confirmed,
            lr.span_s,
            lr.raw_rates,
            lr.reset,
        )
        for lid, lr in r.links.items()
    }
    return r.interval_s, r.clock_stepped, r.restarted, r.glitches, r.glitch_count, links


def faulty_frames(
    seed: int, mlx5: dict[str, int], mlx4_ib: dict[str, int], ticks: int = 40
) -> list[HostSample]:
    """Frames of a RoCE port and an IB port at 1 Hz, a fault on about half of them."""
    rng = random.Random(seed)
    eth, ib = dict(mlx5), dict(mlx4_ib)
    netdev = {
        "rx_bytes": GB,
        "tx_bytes": GB,
        "rx_packets": 10**6,
        "tx_packets": 10**6,
        "rx_dropped": 0,
        "rx_errors": 0,
    }
    out: list[HostSample] = []
    seq, t = 0, T0
    for _ in range(ticks):
        eth = bump(
            eth,
            rx_bytes_phy=GB,
            tx_bytes_phy=GB // 2,
            rx_packets_phy=GB // 1500,
            tx_packets_phy=GB // 3000,
            rx_prio3_pause=rng.choice([0, 0, 5]),
        )
        netdev = bump(netdev, rx_bytes=GB, rx_packets=GB // 1500)
        ib = bump(ib, port_rcv_data=GB // 4, port_rcv_packets=GB // 4096)
        e, n, i = dict(eth), dict(netdev), dict(ib)
        metrics: dict[str, MetricValue] | None = None
        fault = rng.randrange(22)  # 11 and up: none
        target = rng.choice(sorted(e))
        if fault == 0:
            e[target] = rng.choice([U64_MAX, U32_MAX])  # a glitched read, fed or not
        elif fault == 1:
            e[target] = max(0, e[target] - GB)  # a reset, or a gauge going down
        elif fault == 2:
            del e[target]  # a counter gone
        elif fault == 3:
            e["port.rx_bytes"] = e.pop("rx_bytes_phy", GB)  # the metric's counter swapped
        elif fault == 4:
            i[rng.choice(sorted(i))] = U32_MAX  # a legacy IB counter at its maximum
        elif fault == 5:
            made = roce_link(e, n).metrics
            metrics = dict(reversed(list(made.items())))  # the same metrics, another order
        elif fault == 6:
            made = roce_link(e, n).metrics
            prio = {p: v for p, v in made.items() if isinstance(v, dict) and v}
            if prio:
                name = rng.choice(sorted(prio))
                made[name] = {**prio[name], 9: rng.randrange(100)}  # a priority that comes
            metrics = made
        seq += fault != 7  # 7: the same frame again
        t += 1.0 if fault != 8 else 40.0  # 8: the wall clock steps
        link = roce_link(None if fault == 9 else e, n, metrics)  # 9: ethtool timed out
        if fault == 10:
            link.counters[SLOW_SOURCE] = {"slow_counter": rng.randrange(10)}
        out.append(frame(seq, t, link, ib_link(i)))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_common_tick_gives_what_the_per_counter_loop_gives(
    seed: int, mlx5: dict[str, int], mlx4_ib: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = faulty_frames(seed, mlx5, mlx4_ib)
    made = 0
    plain = rates_module._plain_rates

    def counted(*args: Any) -> Any:
        nonlocal made
        got = plain(*args)
        made += got is not None
        return got

    monkeypatch.setattr(rates_module, "_plain_rates", counted)
    eng = RateEngine()
    fast = [seen(eng.update(f)) for f in frames]
    assert made > len(frames) // 3  # the common tick was common (on the RoCE port)

    monkeypatch.setattr(rates_module, "_plain_rates", lambda *args: None)
    eng = RateEngine()
    careful = [seen(eng.update(f)) for f in frames]
    assert fast == careful


def test_a_raw_counter_no_metric_reads_at_all_ones_changes_no_rate(
    mlx5: dict[str, int],
) -> None:
    """Its own raw rate is gone (this tick and the next), the port's rates are not."""
    made = normalize_ethtool(mlx5, "mlx5_core")
    name = next(
        n for n in sorted(mlx5) if normalize_ethtool(bump(mlx5, **{n: 1}), "mlx5_core") == made
    )
    netdev = {"rx_bytes": GB, "tx_bytes": GB}
    c1 = bump(mlx5, rx_bytes_phy=GB)
    c2 = bump(c1, rx_bytes_phy=GB)
    eng, ref = RateEngine(), RateEngine()
    for e in (ref, eng):
        e.update(frame(1, T0, roce_link(mlx5, netdev)))
    got = eng.update(frame(2, T0 + 1, roce_link({**c1, name: U64_MAX}, netdev))).links["eth2"]
    want = ref.update(frame(2, T0 + 1, roce_link(c1, netdev))).links["eth2"]
    assert got.rates == want.rates and not got.gap and not got.glitched
    assert name not in got.raw_rates["ethtool"] and name not in got.reset
    assert got.raw_rates["ethtool"]["rx_bytes_phy"] == 1e9
    back = eng.update(frame(3, T0 + 2, roce_link(c2, netdev))).links["eth2"]
    assert back.rates == ref.update(frame(3, T0 + 2, roce_link(c2, netdev))).links["eth2"].rates
    assert name not in back.raw_rates["ethtool"]  # nothing to measure against
    assert back.raw_rates["ethtool"]["rx_bytes_phy"] == 1e9


def test_a_counter_swapped_for_another_of_the_same_metric_is_a_new_baseline(
    mlx5: dict[str, int],
) -> None:
    """As many raw names as before, one of them another: the metric's delta is no rate."""
    netdev = {"rx_bytes": GB, "tx_bytes": GB}
    eng = RateEngine()
    eng.update(frame(1, T0, roce_link(mlx5, netdev)))
    swapped = bump(mlx5, tx_bytes_phy=GB)
    swapped["port.rx_bytes"] = swapped.pop("rx_bytes_phy") + 10 * GB
    assert len(swapped) == len(mlx5)
    lr = eng.update(frame(2, T0 + 1, roce_link(swapped, netdev))).links["eth2"]
    assert "rx_bytes_per_s" not in lr.rates and "rx_bytes" in lr.reset and lr.gap
    assert lr.rates["tx_bytes_per_s"] == 1e9
    lr = eng.update(
        frame(3, T0 + 2, roce_link(bump(swapped, **{"port.rx_bytes": GB}), netdev))
    ).links["eth2"]
    assert lr.rates["rx_bytes_per_s"] == 1e9 and not lr.gap


def test_metrics_read_in_another_order_give_the_same_rates(mlx5: dict[str, int]) -> None:
    netdev = {"rx_bytes": GB, "tx_bytes": GB}
    c1 = bump(mlx5, rx_bytes_phy=GB, rx_prio3_pause=7)
    made = roce_link(c1, netdev).metrics
    eng, ref = RateEngine(), RateEngine()
    for e in (ref, eng):
        e.update(frame(1, T0, roce_link(mlx5, netdev)))
    got = eng.update(frame(2, T0 + 1, roce_link(c1, netdev, dict(reversed(made.items())))))
    want = ref.update(frame(2, T0 + 1, roce_link(c1, netdev)))
    assert got.links["eth2"].rates == want.links["eth2"].rates
    assert got.links["eth2"].rates["rx_bytes_per_s"] == 1e9


def prio_link(rx_prio0_bytes: int, rx_prio3_pause: int, gauge: int, raw: bool = True) -> LinkSample:
    """A port with two per-priority metrics; ``raw``: their raw counters are kept too."""
    counters = {"rx_prio0_bytes": rx_prio0_bytes, "rx_prio3_pause": rx_prio3_pause}
    return LinkSample(
        id="eth2",
        netdev="eth2",
        driver="mlx5_core",
        rate_gbps=1e8,
        physical=True,
        kind="roce",
        counters={"ethtool": {**(counters if raw else {}), "some_gauge": gauge}},
        metrics={"rx_bytes_prio": {0: rx_prio0_bytes}, "rx_pause": {3: rx_prio3_pause}},
    )


@pytest.mark.parametrize("raw", [True, False])
def test_a_priority_counter_that_stays_at_all_ones_is_saturated_not_a_rate(raw: bool) -> None:
    """Not moving is no 0.0 when the value read twice is all-ones (its raw counter known or
    not: the metric's own value is looked at too)."""
    eng = RateEngine()
    eng.update(frame(1, T0, prio_link(11, 0, 5, raw)))
    lr = eng.update(frame(2, T0 + 1, prio_link(12, U64_MAX, 5, raw))).links["eth2"]
    assert "rx_pause_per_s" not in lr.rates and lr.glitched == ["rx_pause"] and lr.gap
    for seq in (3, 4, 5):
        r = eng.update(frame(seq, T0 + seq - 1, prio_link(10 + seq, U64_MAX, 5, raw)))
        lr = r.links["eth2"]
        assert "rx_pause_per_s" not in lr.rates and lr.saturated == ["rx_pause"]
        assert lr.rates["rx_bytes_prio_per_s"] == {0: 1.0}


@pytest.mark.parametrize("gauge", [6, U64_MAX])
def test_a_delta_past_the_bound_by_one_is_a_glitch_whatever_else_is_read(gauge: int) -> None:
    """Beyond the bound by 1 (equal to it once a float): one judgement, on the delta
    itself, whether or not another raw counter reads all-ones (the common tick hands such
    a tick to the counter-by-counter look, which judges it the same). (A 10^8 Gb/s port:
    the bound must be past 2^53 for a float to round it away.)"""
    eng = RateEngine()
    eng.update(frame(1, T0, prio_link(10, 0, 5)))
    bound = 10**17 * 6 // 8  # bytes in (1 s + READ_SKEW_S) x GLITCH_MARGIN at 10^17 b/s
    lr = eng.update(frame(2, T0 + 1, prio_link(10 + bound + 1, 0, gauge))).links["eth2"]
    assert "rx_bytes_prio_per_s" not in lr.rates
    assert lr.glitched == ["rx_bytes_prio"]
    assert lr.rates["rx_pause_per_s"] == {3: 0.0}


def without_last_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every link judged as on a tick after a new shape: no table kept from the tick before
    (its raw names, the pickers of its feeds, whether its values were judged clean)."""
    link_rates = rates_module._link_rates

    def fresh(*args: Any) -> Any:
        return link_rates(*args[:5], None)

    monkeypatch.setattr(rates_module, "_link_rates", fresh)


@pytest.mark.parametrize("seed", range(12))
def test_what_the_tick_before_left_gives_what_a_fresh_look_gives(
    seed: int, mlx5: dict[str, int], mlx4_ib: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = faulty_frames(seed, mlx5, mlx4_ib)
    eng = RateEngine()
    kept = [seen(eng.update(f)) for f in frames]
    without_last_tick(monkeypatch)
    eng = RateEngine()
    assert kept == [seen(eng.update(f)) for f in frames]


def one_feed_link(raw: int, other: int) -> LinkSample:
    """A source with one counter a metric is made of (and one no metric is); the metric
    reads as if another source had it (as rx_bytes_phy stands in for netdev rx_bytes)."""
    return LinkSample(
        id="veth0",
        netdev="veth0",
        physical=True,
        rate_gbps=100.0,
        counters={"netdev": {"rx_bytes": raw, "rx_fifo_errors": other}},
        metrics={"rx_bytes": GB * other},
    )


@pytest.mark.parametrize("kept", [True, False])
def test_the_one_counter_a_metric_is_made_of_read_at_all_ones_is_looked_at(
    kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not kept:
        without_last_tick(monkeypatch)
    eng = RateEngine()
    reads = [(1, 1), (2, 2), (U64_MAX, 3), (4, 4), (5, 5), (6, 6)]
    got = [
        eng.update(frame(seq, T0 + seq, one_feed_link(*r))).links["veth0"]
        for seq, r in enumerate(reads)
    ]
    assert [lr.rates.get("rx_bytes_per_s") for lr in got] == [None, 1e9, None, 1e9, 1e9, 1e9]
    assert got[2].glitched == ["rx_bytes"] and got[3].confirmed == ["rx_bytes"]
    assert not got[4].gap and not got[5].gap
