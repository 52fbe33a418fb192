"""Normalized vocabulary (DESIGN.md §3) from the real captures' raw counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.normalize import (
    ETHTOOL_MAP,
    IB_HW_MAP,
    IB_PORT_MAP,
    normalize_ethtool,
    normalize_ib,
    normalize_netdev,
    pfc_priorities_from_names,
    saturated_ib_counters,
)
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.sysfs import parse_sysib
from collectors.vocabulary import Metric
from tests.unit.test_parse_sysfs import sysfs_dump


def _stats(fixtures_dir: Path, name: str) -> dict[str, int]:
    return parse_ethtool_stats(
        (fixtures_dir / "ethtool" / f"ethtool_S_{name}.txt").read_text()
    ).counters


def test_mlx5_capture(fixtures_dir: Path) -> None:
    raw = _stats(fixtures_dir, "mlx5_xdp_kernel5.15_nonzero_only_bpf-list")
    m = normalize_ethtool(raw, "mlx5_core")
    assert m["rx_bytes"] == raw["rx_bytes_phy"] != raw["rx_bytes"]  # not the software count
    assert m["tx_bytes"] == raw["tx_bytes_phy"]
    assert m["rx_packets"] == raw["rx_packets_phy"]
    assert m["rx_discards"] == raw["rx_discards_phy"]
    assert m["rx_discards_prio"] == {0: raw["rx_prio0_discards"]}
    assert m["rx_out_of_buffer"] == raw["rx_out_of_buffer"]
    assert m["tx_pause_global"] == raw["tx_pause_ctrl_phy"]
    assert m["rx_bytes_prio"] == {0: raw["rx_prio0_bytes"]}
    # a nonzero-only capture without PFC: no per-priority pause names, so none is invented
    assert "rx_pause" not in m and "tx_pause_us" not in m
    assert "rx_phy_errors" not in m  # crc/symbol counters were zero, hence omitted


def test_mlx5_pfc_names_from_driver_source() -> None:
    # Names as en_stats.c prints them for a port with PFC on priority 3.
    raw = {
        "rx_prio3_pause": 10,
        "rx_prio3_pause_duration": 2500,
        "tx_prio3_pause": 4,
        "tx_prio3_pause_duration": 300,
        "rx_prio3_pause_transition": 5,
        "rx_prio0_bytes": 1,
        "rx_prio3_bytes": 2,
        "rx_prio3_marked": 7,
        "rx_prio0_marked": 1,
        "rx_prio3_buf_discard": 0,
        "rx_prio3_cong_discard": 9,
        "link_down_events_phy": 2,
        "rx_crc_errors_phy": 3,
        "rx_symbol_err_phy": 4,
        "module_high_temp": 1,
        "tx_pause_storm_warning_events": 6,
        "tx_pause_storm_error_events": 0,
    }
    m = normalize_ethtool(raw, "mlx5_core")
    assert m["rx_pause"] == {3: 10}
    assert m["rx_pause_us"] == {3: 2500}
    assert m["tx_pause"] == {3: 4}
    assert m["tx_pause_us"] == {3: 300}
    assert m["ecn_marked"] == 8
    assert m["ecn_marked_prio"] == {0: 1, 3: 7}
    assert m["rx_buf_discard"] == {3: 0}
    assert m["rx_cong_discard"] == {3: 9}
    assert m["rx_phy_errors"] == 7
    assert m["link_down_events"] == 2
    assert m["module_high_temp_events"] == 1
    assert m["tx_pause_storm_warning_events"] == 6
    assert pfc_priorities_from_names(raw) == (3,)


@pytest.mark.parametrize(
    ("capture", "driver", "rx_bytes_name", "xoff_rx", "global_rx"),
    [
        (
            "i40e_xxv710_25g_iwl",
            "i40e",
            "port.rx_bytes",
            "port.rx_priority_{p}_xoff_rx",
            "port.link_xoff_rx",
        ),
        (
            "i40e_10gbaset_go-ethtool-metrics",
            "i40e",
            "port.rx_bytes",
            "port.rx_priority_{p}_xoff",
            "port.link_xoff_rx",
        ),
        (
            "ice_e810_25g_sfp_go-ethtool-metrics",
            "ice",
            "rx_bytes.nic",
            "rx_priority_{p}_xoff.nic",
            "link_xoff_rx.nic",
        ),
        (
            "bnxt_en_10g_sfp_go-ethtool-metrics",
            "bnxt_en",
            "rx_bytes",
            "rx_pfc_ena_frames_pri{p}",
            "rx_pause_frames",
        ),
    ],
)
def test_intel_and_bnxt_captures(
    fixtures_dir: Path, capture: str, driver: str, rx_bytes_name: str, xoff_rx: str, global_rx: str
) -> None:
    raw = _stats(fixtures_dir, capture)
    m = normalize_ethtool(raw, driver)
    assert m["rx_bytes"] == raw[rx_bytes_name]
    assert m["rx_pause"] == {p: raw[xoff_rx.format(p=p)] for p in range(8)}
    assert set(m["tx_pause"]) == set(range(8))  # type: ignore[arg-type]
    assert m["rx_pause_global"] == raw[global_rx]


def test_generic_names_need_a_known_driver(fixtures_dir: Path) -> None:
    raw = _stats(fixtures_dir, "bnxt_en_10g_sfp_go-ethtool-metrics")
    assert "rx_bytes" in normalize_ethtool(raw, "bnxt_en")
    assert "rx_bytes" not in normalize_ethtool(raw, None)
    assert "rx_pause" in normalize_ethtool(raw, None)  # specific names need no driver


def test_ice_packets_sum_of_port_casts(fixtures_dir: Path) -> None:
    raw = _stats(fixtures_dir, "ice_e810_25g_sfp_go-ethtool-metrics")
    m = normalize_ethtool(raw, "ice")
    assert (
        m["rx_packets"] == raw["rx_unicast.nic"] + raw["rx_multicast.nic"] + raw["rx_broadcast.nic"]
    )
    assert m["rx_phy_errors"] == raw["rx_crc_errors.nic"] == 1


def test_i40e_capture_without_tx_bytes(fixtures_dir: Path) -> None:
    raw = _stats(fixtures_dir, "i40e_x710_10g_sfp_go-ethtool-metrics")
    m = normalize_ethtool(raw, "i40e")
    assert m["tx_bytes"] == raw["port.tx_bytes"]  # port counter still there
    assert "tx_bytes" not in raw  # the software one was removed by the capture's author


def test_virtio_maps_nothing_it_cannot_back(fixtures_dir: Path) -> None:
    assert (
        normalize_ethtool(_stats(fixtures_dir, "virtio_net_kvm_macvtap_xdp-newbies"), "virtio_net")
        == {}
    )


def test_ib_mlx5_port_and_hw_counters(fixtures_dir: Path) -> None:
    root = fixtures_dir / "sysfs/prometheus_procfs/sys/class/infiniband"
    port = parse_sysib(sysfs_dump(root)).devices["mlx5_0"].ports[1]
    m = normalize_ib({**port.counters, **port.counters_ext}, port.hw_counters)
    assert m["rx_bytes"] == 4 * port.counters["port_rcv_data"] == 4 * 18126345378
    assert m["tx_bytes"] == 4 * 2880761508848
    assert m["xmit_wait"] == 0
    assert m["retransmits"] == 99
    assert m["local_ack_timeout_err"] == 131
    assert m["out_of_sequence"] == 1 and m["packet_seq_err"] == 1
    assert m["rx_out_of_buffer"] == 0
    # this ConnectX-4 tree has no np_*/rp_* counters: absent, never zero
    assert "ecn_marked" not in m and "cnp_sent" not in m and "cnp_handled" not in m


def test_ib_prefers_64_bit_extended_counters(fixtures_dir: Path) -> None:
    root = fixtures_dir / "sysfs/prometheus_node_exporter/sys/class/infiniband"
    port = parse_sysib(sysfs_dump(root)).devices["mlx4_0"].ports[1]
    m = normalize_ib({**port.counters, **port.counters_ext}, port.hw_counters)
    assert m["rx_bytes"] == 4 * port.counters_ext["port_rcv_data_64"]
    assert m["rx_packets"] == port.counters_ext["port_rcv_packets_64"]
    assert m["rx_packets"] != port.counters["port_rcv_packets"]
    assert saturated_ib_counters(port.counters) == ["port_xmit_wait"]


def test_ib_hw_counters_for_congestion() -> None:
    hw = {"np_ecn_marked_roce_packets": 5, "np_cnp_sent": 4, "rp_cnp_handled": 3}
    m = normalize_ib({}, hw)
    assert (m["ecn_marked"], m["cnp_sent"], m["cnp_handled"]) == (5, 4, 3)


def test_saturation_respects_counter_width() -> None:
    assert saturated_ib_counters({"link_downed": 255, "symbol_error": 255}) == ["link_downed"]
    assert saturated_ib_counters({"port_rcv_data": 2**32}) == []


def test_netdev() -> None:
    m = normalize_netdev({"rx_bytes": 10, "rx_dropped": 2, "rx_errors": 1}, 4)
    assert m == {"rx_bytes": 10, "rx_discards": 2, "rx_phy_errors": 1, "link_down_events": 4}
    assert normalize_netdev({}, 4, carrier_down_count=2)["link_down_events"] == 2
    assert normalize_netdev({}, None) == {}


def test_pfc_priorities_unknown_without_mlx5_names(fixtures_dir: Path) -> None:
    mlx5 = _stats(fixtures_dir, "mlx5_xdp_kernel5.15_nonzero_only_bpf-list")
    assert pfc_priorities_from_names(mlx5) == ()
    assert pfc_priorities_from_names(_stats(fixtures_dir, "i40e_xxv710_25g_iwl")) is None


def test_mlx5_phy_statistical_counters_give_the_ber_and_its_denominator() -> None:
    # en_stats.c pport_phy_statistical_stats_desc, and rx_bits_phy where the driver has it
    raw = {"rx_corrected_bits_phy": 1_234, "rx_bits_phy": 9_876_543_210, "rx_bytes_phy": 5}
    m = normalize_ethtool(raw, "mlx5_core")
    assert m["phy_corrected_bits"] == 1_234
    assert m["phy_received_bits"] == 9_876_543_210
    assert "phy_received_bits" not in normalize_ethtool({"rx_corrected_bits_phy": 1}, "mlx5_core")


def test_tables_only_use_names_seen_or_cited(fixtures_dir: Path) -> None:
    """Every ethtool name in the table is in a capture or in the mlx5 en_stats.c set."""
    seen: set[str] = set()
    for path in (fixtures_dir / "ethtool").glob("ethtool_S_*"):
        seen |= set(parse_ethtool_stats(path.read_text()).counters)
    en_stats_c = {
        "rx_prio{p}_pause",
        "tx_prio{p}_pause",
        "rx_prio{p}_pause_duration",
        "tx_prio{p}_pause_duration",
        "rx_pause_ctrl_phy",
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "link_down_events_phy",
        "rx_corrected_bits_phy",  # pport_phy_statistical_stats_desc
        # not in upstream en_stats.c: mlx5's counters.rst (the corrected bits' denominator),
        # the RFC patch adding it to pport_phy_statistical_stats_desc, ionic (cb683ff6ee07)
        "rx_bits_phy",
        "rx_prio{p}_marked",
        "rx_prio{p}_buf_discard",
        "rx_prio{p}_cong_discard",
        "module_high_temp",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
        "rx_vport_rdma_unicast_bytes",
        "tx_vport_rdma_unicast_bytes",
    }
    for sources in ETHTOOL_MAP.values():
        for src in sources:
            for name in src.names:
                ok = name in en_stats_c or any(name.format(p=p) in seen for p in range(8))
                assert ok, name
    assert IB_PORT_MAP and IB_HW_MAP


def test_value_beyond_64_bits_is_absent_not_read_elsewhere() -> None:
    """4 x an all-ones port_rcv_data_64 is no byte count, and not a cue to use the 32-bit one."""
    all_ones = 2**64 - 1
    m = normalize_ib({"port_rcv_data_64": all_ones, "port_rcv_data": 10, "port_xmit_data": 7}, {})
    assert "rx_bytes" not in m
    assert m["tx_bytes"] == 28
    assert normalize_ib({"port_rcv_data_64": 2**62 - 1}, {})["rx_bytes"] == 4 * (2**62 - 1)
    crc = normalize_ethtool({"rx_crc_errors_phy": all_ones, "rx_symbol_err_phy": 1}, "mlx5_core")
    assert "rx_phy_errors" not in crc
    prio = normalize_ethtool(
        {"rx_prio0_marked": all_ones, "rx_prio1_marked": all_ones, "rx_prio3_pause": 4},
        "mlx5_core",
    )
    assert "ecn_marked" not in prio  # the roll-up overflows
    assert prio["ecn_marked_prio"] == {0: all_ones, 1: all_ones}
    assert prio["rx_pause"] == {3: 4}


def test_the_source_choice_follows_the_names_present_tick_by_tick() -> None:
    """Which source decides is worked out once per set of names: a new name set (PFC on,
    a counter gone) gets its own choice, and values never leak from one tick to the next."""
    base = {"rx_bytes_phy": 100, "tx_bytes_phy": 50, "rx_prio3_bytes": 7}
    first = normalize_ethtool(base, "mlx5_core")
    pfc = {**base, "rx_prio3_pause": 4, "rx_prio3_pause_duration": 9}
    second = normalize_ethtool(pfc, "mlx5_core")
    again = normalize_ethtool({**base, "rx_bytes_phy": 300}, "mlx5_core")
    assert Metric.RX_PAUSE not in first
    assert second[Metric.RX_PAUSE] == {3: 4}
    assert again[Metric.RX_BYTES] == 300 and Metric.RX_PAUSE not in again
    # beyond 64 bits: absent, and the plan holds no value over
    huge = normalize_ethtool({**base, "rx_bytes_phy": 2**64 - 1, "rx_bytes": 5}, "mlx5_core")
    assert huge[Metric.RX_BYTES] == 2**64 - 1
