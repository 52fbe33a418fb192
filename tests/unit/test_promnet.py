"""The stock node_exporter fallback: ``node_network_*`` read as the probe's netdev lines,
and what the exporters lack named per host (coverage), never taken for health."""

from __future__ import annotations

from typing import Any

from collectors.frames import Frame, Section
from fabtop.config import Config, HostConfig
from fabtop.core.coverage import calm_line, coverage
from fabtop.run.compose import fabric_state
from fabtop.run.promnet import QUERY
from fabtop.run.promsource import QUERIES, PrometheusSource
from tests.unit.test_promsource import T0, poll, res, source


def net(name: str, value: object, device: str = "ens1f0", ts: float = T0, **kw: str) -> Any:
    return res(f"node_network_{name}", value, ts=ts, device=device, **kw)


def netdev(
    device: str,
    ts: float,
    rx: int = 1000,
    *,
    drop: int = 0,
    errs: int = 0,
    carrier: int = 2,
    state: str = "up",
    kind: int = 1,
    assign: int = 0,
    speed: int = 12_500_000_000,  # 100 Gb/s, as netclass exports sysfs's 100000 Mb/s
) -> list[Any]:
    """What a stock node_exporter (netdev and netclass collectors) exports of one netdev."""
    values = {
        "receive_bytes_total": rx,
        "transmit_bytes_total": 500,
        "receive_packets_total": 10,
        "transmit_packets_total": 5,
        "receive_drop_total": drop,
        "transmit_drop_total": 0,
        "receive_errs_total": errs,
        "transmit_errs_total": 0,
        "carrier_changes_total": carrier,
        "up": int(state == "up"),
        "mtu_bytes": 9000,
        "speed_bytes": speed,
        "protocol_type": kind,
        "address_assign_type": assign,
    }
    out = [net(k, str(v), device, ts) for k, v in values.items()]
    info = {"operstate": state, "address": "b8:ce:f6:00:00:01", "duplex": "full"}
    return [*out, net("info", "1", device, ts, **info)]


def node(ts: float, rx: int = 1000, **kw: Any) -> list[Any]:
    """A node: a physical 100G NIC, the loopback, a pod's veth (random address)."""
    return [
        *netdev("ens1f0", ts, rx, **kw),
        *netdev("lo", ts, kind=772, speed=-125_000),
        *netdev("veth9", ts, assign=1, speed=1_250_000_000),
    ]


def two_polls(src: PrometheusSource, first: list[Any], second: list[Any]) -> None:
    poll(src, first)
    src.clock.t += 5  # type: ignore[attr-defined]
    poll(src, second)


def test_a_stock_node_exporter_host_has_its_netdevs_throughput_drops_and_state() -> None:
    src = source()
    two_polls(src, node(T0), node(T0 + 5, rx=1000 + 50_000_000, drop=15, errs=5))
    assert src.state is not None
    hs = src.state.hosts["node7"]
    assert hs.sample is not None and hs.rates is not None
    links = hs.sample.links
    assert sorted(links) == ["ens1f0", "veth9"]  # the loopback left out
    nic, veth = links["ens1f0"], links["veth9"]
    assert (nic.kind, nic.physical, veth.kind) == ("netdev", True, "virtual")
    assert (nic.state, nic.rate_gbps, nic.mtu) == ("up", 100.0, 9000)
    rates = hs.rates.links["ens1f0"].rates
    assert rates["rx_bytes_per_s"] == 10_000_000
    assert (rates["rx_discards_per_s"], rates["rx_phy_errors_per_s"]) == (3, 1)
    assert set(nic.counters["netdev"]) >= {"tx_bytes", "tx_dropped", "tx_errors", "rx_packets"}


def test_what_the_exporters_lack_is_named_and_no_host_is_called_healthy_on_it() -> None:
    src = source()
    two_polls(src, node(T0), node(T0 + 5))
    st = src.state
    assert st is not None
    st.source_status(src.name, None)
    cov = coverage(st, src.clock(), 5.0)
    assert cov.gaps == (
        "no RDMA device on node7",
        "GPUs not monitored on node7 (GPU series need dcgm-exporter)",
        "PFC/ECN counters not read on node7 (node_exporter needs --collector.ethtool)",
        "no inference server on node7",
    )
    line = calm_line(cov)
    assert line.startswith("no problems in what was seen; ") and "--collector.ethtool" in line


def test_ethtool_series_of_the_same_nic_win_and_nothing_is_counted_twice() -> None:
    def answer(ts: float, rx: int) -> list[Any]:
        phy = res("node_ethtool_received_bytes_phy", str(rx * 3), ts=ts, device="ens1f0")
        dcgm = res("DCGM_FI_DEV_GPU_TEMP", "60", "node7:9400", ts, gpu="0")
        return [*node(ts, rx), phy, dcgm]

    src = source()
    two_polls(src, answer(T0, 1000), answer(T0 + 5, 1000 + 5_000_000))
    assert src.state is not None
    hs = src.state.hosts["node7"]
    assert hs.rates is not None and hs.sample is not None
    # the NIC's phy counter (3x the netdev's here), never their sum
    assert hs.rates.links["ens1f0"].rates["rx_bytes_per_s"] == 3_000_000
    gaps = coverage(src.state, src.clock(), 5.0).gaps
    assert not [g for g in gaps if "collector.ethtool" in g or "GPU" in g]


def test_a_link_that_goes_down_is_down_and_its_carrier_changes_a_flap() -> None:
    src = source()
    two_polls(src, node(T0), node(T0 + 5, carrier=3, state="down"))
    st = src.state
    assert st is not None and st.hosts["node7"].sample is not None
    assert st.hosts["node7"].sample.links["ens1f0"].state == "down"
    (flap,) = [f for f in st.findings if f.rule == "link_flap"]
    assert flap.severity == "critical" and "ens1f0" in flap.summary


def test_ipoib_without_infiniband_series_names_the_collector() -> None:
    src = source()
    poll(src, netdev("ib0", T0, kind=32))
    st = src.state
    assert st is not None
    gaps = coverage(st, src.clock(), 5.0).gaps
    assert gaps[0] == (
        "InfiniBand ports not read on node7 "
        "(node_exporter needs --collector.infiniband, on unless switched off)"
    )
    assert not [g for g in gaps if "collector.ethtool" in g]  # IPoIB has no PFC


def test_bad_node_network_samples_cost_that_sample() -> None:
    src = source()
    poll(
        src,
        [
            *netdev("ens1f0", T0),
            net("receive_bytes_total", "-5", "eth1"),
            net("transmit_bytes_total", "1e30", "eth1"),
            net("info", "1", "eth1", operstate="up\nens1f0/mtu 1"),
            net("mtu_bytes", "1500", "eth1/../x"),
            net("receive_bytes_total", "7", "eth1"),
        ],
    )
    assert src.state is not None
    hs = src.state.hosts["node7"]
    assert hs.sample is not None
    assert hs.sample.links["ens1f0"].mtu == 9000
    assert hs.sample.links["eth1"].counters["netdev"] == {"rx_bytes": 7}
    said = "\n".join(hs.warnings)
    assert "node_network_receive_bytes_total{device=eth1}: -5 dropped (not a 64-bit" in said
    assert "node_network_info{device=eth1}: 1 dropped (no known operstate label)" in said
    assert "node_network_mtu_bytes{device=eth1/../x}: 1500 dropped (no usable device" in said


def test_only_the_names_read_are_queried() -> None:
    assert QUERY in QUERIES
    for name in ("receive_bytes_total", "info", "speed_bytes", "address_assign_type"):
        assert f"node_network_{name}" in QUERY
    assert "transmit_queue_length" not in QUERY and ".+" not in QUERY


def test_a_probe_host_without_ethtool_says_so_too() -> None:
    """The same gap over SSH: the probe's `ethtool_S missing (ethtool)` on a NIC host."""
    st = fabric_state(Config(hosts=[HostConfig(name="n1")], interval=1.0))
    sysnet = "eth0/device -\neth0/operstate up\neth0/statistics/rx_bytes 1"
    sections = [
        Section("sysnet", None, 1, "ok", None, sysnet),
        Section("ethtool_S", None, 1, "missing", "ethtool", ""),
    ]
    st.apply_frame("n1", Frame(1, 1_000_000_000, 1.0, T0, sections))
    gaps = coverage(st, st.now(), 1.0).gaps
    assert "PFC/ECN counters not read on n1 (no ethtool)" in gaps


def test_an_answer_without_any_exporter_series_says_so_on_the_source() -> None:
    src = source()
    poll(src, [])
    assert src.state is not None
    (f,) = src.state.findings
    assert (f.rule, f.severity) == ("source_partial", "warning")
    assert "no node_exporter (node_network_*" in f.summary and "scraped?" in f.summary
    poll(src, netdev("ens1f0", T0))  # the exporters come: said no more
    assert not [f for f in src.state.findings if f.rule == "source_partial"]


def test_the_kernels_names_win_over_proc_net_devs_whichever_comes_first() -> None:
    """--collector.netclass.netlink adds receive_dropped_total (the kernel's rx_dropped)
    beside the netdev collector's receive_drop_total (rx_dropped + rx_missed_errors)."""
    legacy = net("receive_drop_total", "70")
    kernel = net("receive_dropped_total", "50")
    downs = net("carrier_down_changes_total", "3")
    for order in ([legacy, kernel, downs], [kernel, legacy, downs]):
        src = source()
        poll(src, [*netdev("ens1f0", T0)[:1], *order])
        assert src.state is not None
        hs = src.state.hosts["node7"]
        assert hs.sample is not None
        link = hs.sample.links["ens1f0"]
        assert link.counters["netdev"]["rx_dropped"] == 50
        assert link.metrics["link_down_events"] == 3  # downs only, as carrier_down_count
