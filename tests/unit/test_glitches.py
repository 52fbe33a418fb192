"""A delta that cannot be is a glitch: a gap, never a rate, an event count or a max-tier spike.

Samples are built from real captures (as in test_rates) and go through the real
Pipeline (rates -> placement -> history); what is asserted is what a user sees: the
rates, the history tiers, the host's warnings and the findings.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from collectors.normalize import (
    normalize_ethtool,
    normalize_ib,
    normalize_netdev,
    saturated_ib_counters,
)
from collectors.numbers import U32_MAX, U64_MAX
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.sysfs import parse_ib_rate
from collectors.samples import HostSample, LinkSample
from fabtop.core.history import History
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates
from tests.unit.rules_support import Fabric, by_rule

MLX5 = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
MLX4_PORT = "sysfs/prometheus_node_exporter/sys/class/infiniband/mlx4_0/ports/1"
NETDEV = "sysfs/prometheus_procfs/sys/class/net/eth0"
T0 = 1_700_000_000.0
# Small tiers so a minute of ticks reaches the coarse (10 s, 1 min) tiers.
TIERS = ((1.0, 10), (10.0, 30), (60.0, 10))
GB = 10**9


@pytest.fixture
def mlx5(fixtures_dir: Path) -> dict[str, int]:
    counters = parse_ethtool_stats((fixtures_dir / MLX5).read_text()).counters
    assert "rx_bytes_phy" in counters and "rx_packets_phy" in counters
    return counters


@pytest.fixture
def mlx4_port(fixtures_dir: Path) -> tuple[dict[str, int], float | None]:
    root = fixtures_dir / MLX4_PORT
    legacy = {p.name: int(p.read_text()) for p in (root / "counters").iterdir()}
    return legacy, parse_ib_rate((root / "rate").read_text())


def mlx5_link(counters: dict[str, int], gbps: float | None = 100.0) -> LinkSample:
    """A ConnectX port as the assembler builds it (speed as sysfs reports it)."""
    return LinkSample(
        id="eth2",
        netdev="eth2",
        driver="mlx5_core",
        rate_gbps=gbps,
        physical=True,
        kind="roce",
        counters={"ethtool": dict(counters)},
        metrics=normalize_ethtool(counters, "mlx5_core"),
    )


def ib_link(counters: dict[str, int], gbps: float | None) -> LinkSample:
    """A legacy (32-bit counters only) InfiniBand port."""
    return LinkSample(
        id="mlx4_0/1",
        rdma_device="mlx4_0",
        port=1,
        kind="ib",
        physical=True,
        rate_gbps=gbps,
        counters={"ib_port": dict(counters)},
        metrics=normalize_ib(counters, {}),
        saturated=saturated_ib_counters(counters),
    )


class Host:
    """One host's frames at 1 Hz through a real Pipeline."""

    def __init__(self, pipe: Pipeline | None = None) -> None:
        self.pipe = pipe or Pipeline(History(TIERS))
        self.seq = 0
        self.rates: list[HostRates] = []
        self.samples: list[HostSample] = []

    def tick(self, *links: LinkSample) -> HostRates:
        self.seq += 1
        s = HostSample(
            host="gpu1",
            seq=self.seq,
            clock_ns=round((T0 + self.seq) * 1e9),
            uptime_s=1000.0 + self.seq,
            links={lk.id: lk for lk in links},
        )
        r = self.pipe.apply_sample(s)
        self.rates.append(r)
        self.samples.append(s)
        return r

    def series(self, *key: str) -> tuple[list[float | None], list[float | None]]:
        """(means, maxima) of one series over the whole run, from the coarse tiers."""
        s = self.pipe.history.get(("gpu1", *key))
        assert s is not None, key
        return s.points(1e9)[1], s.points(1e9, stat="max")[1]


def bump(counters: dict[str, int], **deltas: int) -> dict[str, int]:
    return {**counters, **{k: counters.get(k, 0) + d for k, d in deltas.items()}}


def run_40g(mlx5: dict[str, int], glitch_at: int | None, glitch: dict[str, int]) -> Host:
    """80 s of 40 Gb/s on a 100G port; at ``glitch_at`` one read is replaced by ``glitch``."""
    h = Host()
    c = mlx5
    for i in range(80):
        c = bump(c, rx_bytes_phy=5 * GB, rx_packets_phy=5 * GB // 1500)
        h.tick(mlx5_link({**c, **glitch} if i == glitch_at else c))
    return h


def all_rx_bps(h: Host) -> list[float]:
    return [
        v
        for r in h.rates
        for lr in r.links.values()
        if isinstance(v := lr.rates.get("rx_bps"), float)
    ]


@pytest.mark.parametrize(
    "glitch",
    [{"rx_bytes_phy": U64_MAX}, {"rx_bytes_phy": U32_MAX}, {"rx_bytes_phy": 2**62}],
    ids=["u64-all-ones", "u32-all-ones", "bit-flip"],
)
def test_one_glitched_read_is_a_gap_never_a_rate(
    mlx5: dict[str, int], glitch: dict[str, int]
) -> None:
    h = run_40g(mlx5, 40, glitch)
    rx = all_rx_bps(h)
    assert max(rx) <= 100e9  # never above the link's speed
    assert rx.count(40e9) == len(rx) == 78  # the first tick has no rate, the glitch a gap
    glitched = h.rates[40].links["eth2"]
    assert glitched.gap and "rx_bytes" in glitched.glitched
    # the read after it counts against the read before: no second gap, no lost bytes
    assert h.rates[41].links["eth2"].rates["rx_bps"] == pytest.approx(40e9)
    # said once on the host, and counted
    lines = [w for s in h.samples for w in s.warnings]
    assert lines == ["counter glitch ignored on eth2 rx_bytes"]
    assert h.rates[-1].glitch_count == 1


def test_the_history_tiers_never_see_a_glitch(mlx5: dict[str, int]) -> None:
    clean = run_40g(mlx5, None, {})
    h = run_40g(mlx5, 40, {"rx_bytes_phy": U64_MAX})
    means, maxes = h.series("eth2", "rx_bps")
    clean_means, clean_maxes = clean.series("eth2", "rx_bps")
    assert len(means) > 1  # the span is read from a coarse tier
    assert max(v for v in maxes if v is not None) == pytest.approx(40e9)
    assert max(v for v in means if v is not None) == pytest.approx(40e9)
    assert means == pytest.approx(clean_means) and maxes == pytest.approx(clean_maxes)


def test_packets_beyond_what_the_bytes_allow_are_a_glitch(mlx5: dict[str, int]) -> None:
    # a port that does not report its speed: the bytes are the only bound on the packets
    h = Host()
    c = mlx5
    for i in range(5):
        c = bump(c, rx_bytes_phy=GB, rx_packets_phy=GB // 1000)
        read = bump(c, rx_packets_phy=2**40) if i == 2 else c
        h.tick(mlx5_link(read, gbps=None))
    pkts = [r.links["eth2"].rates.get("rx_packets_per_s") for r in h.rates]
    assert pkts == [None, 1e6, None, pytest.approx(1e6), 1e6]
    assert h.rates[2].links["eth2"].gap
    assert h.rates[-1].glitch_count == 1


def test_pause_time_beyond_the_interval_is_a_glitch_not_a_storm(mlx5: dict[str, int]) -> None:
    # per-priority pause names from mlx5 en_stats.c (present where PFC is on)
    pfc = dict(mlx5, rx_prio3_pause=10, rx_prio3_pause_duration=1_000)
    h = Host()
    c = pfc
    for i in range(6):
        c = bump(c, rx_prio3_pause=5, rx_prio3_pause_duration=20_000)  # 2 % paused
        read = bump(c, rx_prio3_pause_duration=600_000_000) if i == 3 else c  # 10 min in 1 s
        h.tick(mlx5_link(read))
    ratios = [r.links["eth2"].rates.get("rx_pause_time_ratio") for r in h.rates]
    assert ratios[3] is None
    assert ratios[1:3] + ratios[4:] == [pytest.approx({3: 0.02})] * 4
    _, maxes = h.series("eth2", "rx_pause_time_ratio", "3")
    assert max(v for v in maxes if v is not None) == pytest.approx(0.02)


def test_an_event_counter_never_reports_an_all_ones_delta() -> None:
    # carrier_down_count (sysfs) / link_downed / link_down_events_phy read all-ones once
    fab = Fabric()
    p = fab.port("node1")
    fab.run(3)
    p.metrics["link_down_events"] = U32_MAX
    fab.tick()
    p.metrics["link_down_events"] = 0
    found = fab.run(3)
    assert not by_rule(found, "link_flap")
    assert not any("4294967295" in f.summary for f in found)
    s = fab.history.get(("node1", "enp65s0f0np0", "link_down_events"))
    assert s is not None
    assert all(v in (0.0, None) for v in s.points(100)[1])
    # a real flap right after is still named
    p.metrics["link_down_events"] = 1
    assert by_rule(fab.tick(), "link_flap")


def test_carrier_counter_glitch_on_a_link_of_unknown_speed(fixtures_dir: Path) -> None:
    root = fixtures_dir / NETDEV
    down = int((root / "carrier_down_count").read_text())
    h = Host()
    for i in range(4):
        value = U32_MAX if i == 1 else down
        h.tick(
            LinkSample(id="eth0", netdev="eth0", physical=True, metrics={"link_down_events": value})
        )
    assert [r.links["eth0"].rates.get("link_down_events_per_s") for r in h.rates] == [
        None,
        None,
        0.0,
        0.0,
    ]
    assert h.rates[-1].glitch_count == 1
    means, _ = h.series("eth0", "link_down_events")
    assert all(v == down for v in means if v is not None)


def test_legacy_ib_counter_that_stays_at_all_ones_is_saturated_not_a_glitch(
    mlx4_port: tuple[dict[str, int], float | None],
) -> None:
    counters, gbps = mlx4_port
    assert gbps == 40.0
    start = dict(counters, port_xmit_wait=U32_MAX - 5000)
    h = Host()
    h.tick(ib_link(start, gbps))
    h.tick(ib_link(bump(start, port_xmit_wait=1000), gbps))
    for _ in range(3):
        h.tick(ib_link(dict(start, port_xmit_wait=U32_MAX), gbps))  # reached it, stays
    lrs = [r.links["mlx4_0/1"] for r in h.rates]
    assert lrs[1].rates["xmit_wait_per_s"] == 1000.0
    # the first read at the maximum: no rate, not yet a verdict
    assert "xmit_wait_per_s" not in lrs[2].rates and "xmit_wait" not in lrs[2].saturated
    for lr in lrs[3:]:
        assert "port_xmit_wait" in lr.saturated and "xmit_wait" in lr.saturated
        assert "xmit_wait_per_s" not in lr.rates
    assert h.rates[-1].glitch_count == 0
    assert not [w for s in h.samples for w in s.warnings]


def test_legacy_ib_counter_back_from_all_ones_was_a_glitch(
    mlx4_port: tuple[dict[str, int], float | None],
) -> None:
    counters, gbps = mlx4_port
    c = dict(counters, port_rcv_data=10**6, port_rcv_packets=10**4)
    h = Host()
    for i in range(5):
        c = bump(c, port_rcv_data=250_000_000, port_rcv_packets=400_000)  # 8 Gb/s
        read = dict(c, port_rcv_data=U32_MAX) if i == 2 else c
        h.tick(ib_link(read, gbps))
    rx = [r.links["mlx4_0/1"].rates.get("rx_bps") for r in h.rates]
    assert rx == [None, 8e9, None, pytest.approx(8e9), 8e9]
    assert all("rx_bytes" not in r.links["mlx4_0/1"].saturated for r in h.rates)
    assert h.rates[-1].glitch_count == 1
    assert h.samples[3].warnings == ["counter glitch ignored on mlx4_0/1 rx_bytes"]


def test_a_level_shift_rebaselines_instead_of_holding_forever(mlx5: dict[str, int]) -> None:
    # the counter jumps and stays there (a driver that changed what it counts): two gaps,
    # then rates against the new level, never a hold that hides the link for good
    h = Host()
    c = mlx5
    for i in range(6):
        c = bump(c, rx_bytes_phy=GB)
        if i == 2:
            c = bump(c, rx_bytes_phy=2**60)
        h.tick(mlx5_link(c))
    rx = [r.links["eth2"].rates.get("rx_bps") for r in h.rates]
    assert rx == [None, 8e9, None, None, 8e9, 8e9]


def test_glitch_on_a_virtual_link_of_nominal_speed_is_judged_by_all_ones_only(
    mlx5: dict[str, int],
) -> None:
    # veth says 10000 Mb/s and moves far more: its speed is no bound
    h = Host()
    c = mlx5
    for _ in range(3):
        c = bump(c, rx_bytes_phy=50 * GB)
        h.tick(dataclasses.replace(mlx5_link(c, gbps=10.0), physical=False, kind="virtual"))
    assert h.rates[-1].links["eth2"].rates["rx_bps"] == 400e9
    assert h.rates[-1].glitch_count == 0


def test_a_tool_that_drops_out_is_a_new_baseline_not_a_rate(mlx5: dict[str, int]) -> None:
    # ethtool timed out on one tick: rx/tx come from the kernel's statistics/* (names of
    # net/core/net-sysfs.c) instead of the *_phy port counters, which count RDMA traffic
    # too. The difference of two different counters was shown as 3.6e9 packets/s.
    # The kernel's counters a little ahead of the port's: a plausible-looking, false delta.
    netdev = {k: mlx5[f"{k}_phy"] + GB // 2 for k in ("rx_bytes", "tx_bytes")}
    netdev |= {k: mlx5[f"{k}_phy"] + 10**5 for k in ("rx_packets", "tx_packets")}

    def link(stats: dict[str, int], eth: dict[str, int] | None) -> LinkSample:
        metrics = normalize_netdev(stats, None)
        counters: dict[str, dict[str, int]] = {"netdev": dict(stats)}
        if eth is not None:
            metrics.update(normalize_ethtool(eth, "mlx5_core"))
            counters["ethtool"] = dict(eth)
        return LinkSample(
            id="eth2",
            netdev="eth2",
            driver="mlx5_core",
            rate_gbps=100.0,
            physical=True,
            kind="roce",
            counters=counters,
            metrics=metrics,
        )

    h = Host()
    eth, st = mlx5, netdev
    h.tick(link(st, eth))
    eth = bump(eth, rx_bytes_phy=GB, rx_packets_phy=GB // 1500)
    st = bump(st, rx_bytes=10**6, rx_packets=1000)
    r = h.tick(link(st, eth))
    assert r.links["eth2"].rates["rx_bytes_per_s"] == pytest.approx(GB)
    st = bump(st, rx_bytes=10**6, rx_packets=1000)
    r = h.tick(link(st, None))  # ethtool timed out
    lr = r.links["eth2"]
    assert "rx_bytes_per_s" not in lr.rates and "rx_packets_per_s" not in lr.rates
    assert "tx_packets_per_s" not in lr.rates and lr.gap
    st = bump(st, rx_bytes=10**6, rx_packets=1000)
    r = h.tick(link(st, None))  # still out: rates of the counters there are
    assert r.links["eth2"].rates["rx_bytes_per_s"] == pytest.approx(10**6)
    st = bump(st, rx_bytes=10**6)
    eth = bump(eth, rx_bytes_phy=3 * GB)
    r = h.tick(link(st, eth))  # back: a new baseline again, no 3 GB jump
    assert "rx_bytes_per_s" not in r.links["eth2"].rates


# A one-read jump of millions (not all-ones) in an event counter: carrier_changes, IB's
# link_downed, mlx5's module_high_temp and stall watchdog counters (issue 27, class 4).
@pytest.mark.parametrize(
    "metric",
    [
        "link_down_events",
        "module_high_temp_events",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
    ],
)
@pytest.mark.parametrize("jump", [3_000_000, 10_001])
def test_an_event_counter_jumping_beyond_belief_is_a_gap_never_an_event_count(
    metric: str, jump: int
) -> None:
    fab = Fabric()
    p = fab.port("node1")
    p.metrics[metric] = 7
    fab.run(3)
    p.metrics[metric] = 7 + jump
    found = fab.run(3)
    assert not any(str(jump) in f.summary for f in found)
    assert not by_rule(found, "link_flap") and not by_rule(found, "module_high_temp")
    assert not by_rule(found, "pfc_stall_events")
    # No series of the history holds it as a rate (the counter's own level may move).
    keys = fab.history.keys()
    for key in keys:
        if key[-1] != metric:
            for stat in ("mean", "max"):
                assert all(
                    v is None or v < jump / 10
                    for v in fab.history.get(key).points(100, stat=stat)[1]
                ), key
    if metric == "link_down_events":
        # ... and the next real event after it is counted as one.
        p.metrics[metric] += 1
        (f,) = by_rule(fab.tick(), "link_flap")
        assert "down 1 time(s)" in f.summary


def test_the_event_bound_is_a_threshold_a_config_can_move() -> None:
    fab = Fabric(thresholds={"events_max_per_s": 1e9})
    p = fab.port("node1")
    p.metrics["link_down_events"] = 0
    fab.run(2)
    p.metrics["link_down_events"] = 3_000_000
    (f,) = by_rule(fab.tick(), "link_flap")  # believed: the operator said so
    assert "3000000 time(s)" in f.summary


@pytest.mark.parametrize("metric", ["packet_seq_err", "local_ack_timeout_err"])
def test_a_per_packet_event_beyond_the_line_rate_is_a_glitch(
    mlx5: dict[str, int], metric: str
) -> None:
    link = mlx5_link(mlx5)
    h = Host()
    h.tick(dataclasses.replace(link, metrics={**link.metrics, metric: 0}))
    h.tick(dataclasses.replace(link, metrics={**link.metrics, metric: 10}))
    # 100 Gb/s cannot carry 10^15 packets in a second, so neither their NAKs or timeouts.
    r = h.tick(dataclasses.replace(link, metrics={**link.metrics, metric: 10**15}))
    assert h.rates[1].links["eth2"].rates[f"{metric}_per_s"] == 10.0
    assert f"{metric}_per_s" not in r.links["eth2"].rates and r.links["eth2"].gap


def test_a_cpu_throttle_count_jumping_beyond_belief_is_no_rate() -> None:
    h = Host()
    rates = []
    for n in (5, 6, 6 + 4_000_000, 6 + 4_000_001):
        h.seq += 1
        s = HostSample(
            host="gpu1",
            seq=h.seq,
            clock_ns=round((T0 + h.seq) * 1e9),
            uptime_s=1000.0 + h.seq,
            cpu_throttle_count=n,
        )
        rates.append(h.pipe.apply_sample(s).cpu_throttle_per_s)
    assert rates == [None, 1.0, None, 1.0]


def test_a_token_counter_jumping_past_any_server_is_a_gap_not_a_spike() -> None:
    """A vLLM counter read once as 10^15 (a restarted exporter, a corrupt page)."""
    from collectors.samples import InferenceSample

    h = Host()
    got = []
    for i, total in enumerate((1000.0, 1500.0, 1e15, 1e15 + 400.0)):
        h.seq += 1
        inf = InferenceSample(
            url="http://127.0.0.1:8000/metrics",
            server="vllm",
            generated_tokens_total=total,
            read_s=float(i),
        )
        s = HostSample(
            host="gpu1",
            seq=h.seq,
            clock_ns=round((T0 + h.seq) * 1e9),
            uptime_s=1000.0 + h.seq,
            inference=[inf],
        )
        rates = h.pipe.apply_sample(s).inference[inf.url]
        got.append(rates["generated_tokens_per_s"])
    assert got == [None, 500.0, None, 400.0]
