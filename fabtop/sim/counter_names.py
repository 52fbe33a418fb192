"""The counter names a simulated NIC prints, each from a real capture or from driver source.

- mlx5 ``ethtool -S``: the capture
  ``../shared/fixtures/ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt``
  (zero counters were omitted by its sender; it has no PFC priority), plus the driver's
  own tables in torvalds/linux ``drivers/net/ethernet/mellanox/mlx5/core/en_stats.c``
  (commit 01dd74246c75ed0992a5f4ed83e8527a7197f720):
  ``vport_stats_desc`` (``rx_vport_rdma_unicast_bytes`` …), ``pport_802_3_stats_desc``
  (``rx_pause_ctrl_phy``, ``rx_crc_errors_phy``, ``rx_symbol_err_phy`` …),
  ``pport_2863_stats_desc``, ``pport_2819_stats_desc``, the phy group's
  ``link_down_events_phy``, ``pport_per_prio_traffic_stats_desc`` (``rx_prio%d_bytes``,
  ``_packets``, ``_discards``, ``tx_prio%d_bytes``, ``_packets``: all eight priorities),
  ``pport_per_prio_pfc_stats_desc`` (``rx_%s_pause``, ``rx_%s_pause_duration``,
  ``tx_%s_pause``, ``tx_%s_pause_duration``, ``rx_%s_pause_transition`` with %s =
  ``prio{p}`` only for PFC-enabled priorities, ``global`` only while global pause is on),
  ``pport_pfc_stall_stats_desc`` (``tx_pause_storm_warning_events``,
  ``tx_pause_storm_error_events``), ``pport_per_tc_prio_stats_desc`` /
  ``pport_per_tc_congest_prio_stats_desc`` (``rx_prio%d_buf_discard``,
  ``rx_prio%d_cong_discard``, ``rx_prio%d_marked``: only with the ``sbcam_reg`` cap),
  ``mlx5e_pme_status_desc`` / ``mlx5e_pme_error_desc`` (``module_unplug``,
  ``module_bus_stuck``, ``module_high_temp``, ``module_bad_shorted``). Group order follows
  ``mlx5e_nic_stats_grps`` in the same file.
- RDMA ``hw_counters``: ``../shared/fixtures/sysfs/prometheus_procfs`` (``mlx5_0`` tree:
  ``out_of_sequence``, ``packet_seq_err``, ``local_ack_timeout_err``, ``roce_adp_retrans`` …)
  and ``../shared/fixtures/infiniband/rdma_stat_show_*`` (``rp_cnp_ignored``,
  ``rp_cnp_handled``, ``np_ecn_marked_roce_packets``, ``np_cnp_sent``), confirmed in
  torvalds/linux ``drivers/infiniband/hw/mlx5/counters.c`` (``cong_cnts``,
  ``basic_q_cnts``, ``retrans_q_cnts``, ``roce_accl_cnts``).
- InfiniBand ``counters/``: the ``mlx5_0`` tree in ``../shared/fixtures/sysfs/prometheus_procfs``.
- igb ``ethtool -S``: ``../shared/fixtures/ethtool/ethtool_S_igb_1g_go-ethtool-metrics.txt``.
"""

from __future__ import annotations

from collections.abc import Sequence

PRIOS = range(8)


# --- mlx5 ethtool -S vocabulary ------------------------------------------------------------

# Names present in the mlx5 capture (verbatim), grouped as the driver prints them.
MLX5_SW = (
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "rx_csum_unnecessary",
    "rx_xdp_drop",
    "rx_xdp_redirect",
    "rx_cache_reuse",
    "rx_cache_full",
    "rx_cache_empty",
    "rx_cache_busy",
    "rx_cache_waive",
    "rx_congst_umr",
    "ch_events",
    "ch_poll",
    "ch_arm",
)
MLX5_QCNT = ("rx_out_of_buffer", "rx_if_down_packets")
MLX5_VNIC = ("rx_steer_missed_packets",)
MLX5_VPORT = (
    "rx_vport_unicast_packets",
    "rx_vport_unicast_bytes",
    "tx_vport_unicast_packets",
    "tx_vport_unicast_bytes",
    "rx_vport_multicast_packets",
    "rx_vport_multicast_bytes",
    "tx_vport_multicast_packets",
    "tx_vport_multicast_bytes",
    "rx_vport_broadcast_packets",
    "rx_vport_broadcast_bytes",
    "tx_vport_broadcast_packets",
    "tx_vport_broadcast_bytes",
    "rx_vport_rdma_unicast_packets",
    "rx_vport_rdma_unicast_bytes",
    "tx_vport_rdma_unicast_packets",
    "tx_vport_rdma_unicast_bytes",
    "rx_vport_rdma_multicast_packets",
    "rx_vport_rdma_multicast_bytes",
    "tx_vport_rdma_multicast_packets",
    "tx_vport_rdma_multicast_bytes",
)
MLX5_802_3 = (
    "tx_packets_phy",
    "rx_packets_phy",
    "rx_crc_errors_phy",
    "tx_bytes_phy",
    "rx_bytes_phy",
    "tx_multicast_phy",
    "tx_broadcast_phy",
    "rx_multicast_phy",
    "rx_broadcast_phy",
    "rx_in_range_len_errors_phy",
    "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy",
    "rx_symbol_err_phy",
    "tx_mac_control_phy",
    "rx_mac_control_phy",
    "rx_unsupported_op_phy",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
)
MLX5_2863 = ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy")
MLX5_2819 = (
    "rx_undersize_pkts_phy",
    "rx_fragments_phy",
    "rx_jabbers_phy",
    "rx_64_bytes_phy",
    "rx_65_to_127_bytes_phy",
    "rx_128_to_255_bytes_phy",
    "rx_256_to_511_bytes_phy",
    "rx_512_to_1023_bytes_phy",
    "rx_1024_to_1518_bytes_phy",
    "rx_1519_to_2047_bytes_phy",
    "rx_2048_to_4095_bytes_phy",
    "rx_4096_to_8191_bytes_phy",
    "rx_8192_to_10239_bytes_phy",
)
MLX5_PHY = ("link_down_events_phy",)
# The phy statistical group (en_stats.c pport_phy_statistical_stats_desc), listed where the
# device has the PPCNT statistical group (MLX5_CAP_PCAM_FEATURE ppcnt_statistical_group):
# bits the PHY corrected, the pre-FEC bit errors. No capture in the repository has it; the
# simulated fabric lists it only where an optic degrades (--demo-scenario optic_degrade).
MLX5_PHY_STATISTICAL = ("rx_pcs_symbol_err_phy", "rx_corrected_bits_phy")
MLX5_PRIO_TRAFFIC_FMT = (
    "rx_prio{p}_bytes",
    "rx_prio{p}_packets",
    "rx_prio{p}_discards",
    "tx_prio{p}_bytes",
    "tx_prio{p}_packets",
)
MLX5_PFC_FMT = (
    "rx_{s}_pause",
    "rx_{s}_pause_duration",
    "tx_{s}_pause",
    "tx_{s}_pause_duration",
    "rx_{s}_pause_transition",
)
MLX5_PFC_STALL = ("tx_pause_storm_warning_events", "tx_pause_storm_error_events")
MLX5_PME = ("module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted")
MLX5_CH_FMT = (
    "ch{c}_events",
    "ch{c}_poll",
    "ch{c}_arm",
    "ch{c}_aff_change",
    "ch{c}_force_irq",
    "ch{c}_eq_rearm",
)
MLX5_RQ_FMT = (
    "rx{c}_packets",
    "rx{c}_bytes",
    "rx{c}_csum_complete",
    "rx{c}_csum_unnecessary",
    "rx{c}_csum_none",
    "rx{c}_xdp_drop",
    "rx{c}_xdp_redirect",
    "rx{c}_lro_packets",
    "rx{c}_lro_bytes",
    "rx{c}_ecn_mark",
    "rx{c}_removed_vlan_packets",
    "rx{c}_wqe_err",
    "rx{c}_buff_alloc_err",
    "rx{c}_cache_reuse",
    "rx{c}_cache_full",
    "rx{c}_cache_empty",
    "rx{c}_congst_umr",
    "rx{c}_arfs_err",
    "rx{c}_recover",
)
MLX5_BUFF_CONGEST_FMT = ("rx_prio{p}_buf_discard", "rx_prio{p}_cong_discard", "rx_prio{p}_marked")

# The driver's own tables, as printf formats exactly as they appear in en_stats.c (tables
# named in the module docstring). Kept apart from the render lists above on purpose: the
# tests check every rendered name against the capture plus this evidence.
EN_STATS_C_EVIDENCE: dict[str, tuple[str, ...]] = {
    "sw_stats_desc": (
        "rx_packets",
        "rx_bytes",
        "tx_packets",
        "tx_bytes",
        "rx_csum_unnecessary",
        "rx_xdp_drop",
        "rx_xdp_redirect",
        "rx_cache_reuse",
        "rx_cache_full",
        "rx_cache_empty",
        "rx_cache_busy",
        "rx_cache_waive",
        "rx_congst_umr",
        "ch_events",
        "ch_poll",
        "ch_arm",
    ),
    "q_stats_desc": ("rx_out_of_buffer",),
    "drop_rq_stats_desc": ("rx_if_down_packets",),
    "vnic_env_stats_steer_desc": ("rx_steer_missed_packets",),
    "vport_stats_desc": tuple(
        f"{d}_vport_{k}_{u}"
        for k in ("unicast", "multicast", "broadcast", "rdma_unicast", "rdma_multicast")
        for d in ("rx", "tx")
        for u in ("packets", "bytes")
    ),
    "pport_802_3_stats_desc": (
        "tx_packets_phy",
        "rx_packets_phy",
        "rx_crc_errors_phy",
        "tx_bytes_phy",
        "rx_bytes_phy",
        "tx_multicast_phy",
        "tx_broadcast_phy",
        "rx_multicast_phy",
        "rx_broadcast_phy",
        "rx_in_range_len_errors_phy",
        "rx_out_of_range_len_phy",
        "rx_oversize_pkts_phy",
        "rx_symbol_err_phy",
        "tx_mac_control_phy",
        "rx_mac_control_phy",
        "rx_unsupported_op_phy",
        "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy",
    ),
    "pport_2863_stats_desc": ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy"),
    "pport_2819_stats_desc": (
        "rx_undersize_pkts_phy",
        "rx_fragments_phy",
        "rx_jabbers_phy",
        "rx_64_bytes_phy",
        "rx_65_to_127_bytes_phy",
        "rx_128_to_255_bytes_phy",
        "rx_256_to_511_bytes_phy",
        "rx_512_to_1023_bytes_phy",
        "rx_1024_to_1518_bytes_phy",
        "rx_1519_to_2047_bytes_phy",
        "rx_2048_to_4095_bytes_phy",
        "rx_4096_to_8191_bytes_phy",
        "rx_8192_to_10239_bytes_phy",
    ),
    "phy (fill_strings)": ("link_down_events_phy",),
    "pport_per_prio_traffic_stats_desc": (
        "rx_prio%d_bytes",
        "rx_prio%d_packets",
        "rx_prio%d_discards",
        "tx_prio%d_bytes",
        "tx_prio%d_packets",
    ),
    "pport_per_prio_pfc_stats_desc": (
        "rx_%s_pause",
        "rx_%s_pause_duration",
        "tx_%s_pause",
        "tx_%s_pause_duration",
        "rx_%s_pause_transition",
    ),
    "pport_pfc_stall_stats_desc": ("tx_pause_storm_warning_events", "tx_pause_storm_error_events"),
    "pport_per_tc_prio_stats_desc": ("rx_prio%d_buf_discard",),
    "pport_per_tc_congest_prio_stats_desc": ("rx_prio%d_cong_discard", "rx_prio%d_marked"),
    "mlx5e_pme_status_desc": ("module_unplug",),
    "mlx5e_pme_error_desc": ("module_bus_stuck", "module_high_temp", "module_bad_shorted"),
    # Per-channel names: the capture shows channel 0 ("ch0_events", "rx0_packets" ...);
    # ch_stats_desc / rq_stats_desc print them with "ch%d_" / "rx%d_" for every channel.
    "ch_stats_desc": (
        "ch%d_events",
        "ch%d_poll",
        "ch%d_arm",
        "ch%d_aff_change",
        "ch%d_force_irq",
        "ch%d_eq_rearm",
    ),
    "rq_stats_desc": tuple(
        "rx%d_" + n
        for n in (
            "packets",
            "bytes",
            "csum_complete",
            "csum_unnecessary",
            "csum_none",
            "xdp_drop",
            "xdp_redirect",
            "lro_packets",
            "lro_bytes",
            "ecn_mark",
            "removed_vlan_packets",
            "wqe_err",
            "buff_alloc_err",
            "cache_reuse",
            "cache_full",
            "cache_empty",
            "congst_umr",
            "arfs_err",
            "recover",
        )
    ),
}


def _expand(fmt: str) -> tuple[str, ...]:
    if "%s" in fmt:  # "prio{p}" for a PFC priority, or "global"
        return tuple(fmt.replace("%s", s) for s in [*(f"prio{p}" for p in PRIOS), "global"])
    if "%d" in fmt:
        return tuple(fmt.replace("%d", str(i)) for i in range(64))
    return (fmt,)


MLX5_DRIVER_SOURCE_NAMES: frozenset[str] = frozenset(
    n for fmts in EN_STATS_C_EVIDENCE.values() for f in fmts for n in _expand(f)
)


def mlx5_ethtool_names(
    pfc_prios: Sequence[int],
    global_pause: bool,
    channels: int,
    congest_group: bool = True,
    phy_statistical: bool = False,
) -> tuple[str, ...]:
    """The ``ethtool -S`` names of one mlx5 port in driver order, given its pause config."""
    names: list[str] = [*MLX5_SW, *MLX5_QCNT, *MLX5_VNIC, *MLX5_VPORT, *MLX5_802_3]
    names += [*MLX5_2863, *MLX5_2819, *MLX5_PHY]
    if phy_statistical:
        names += MLX5_PHY_STATISTICAL
    names += [f.format(p=p) for p in PRIOS for f in MLX5_PRIO_TRAFFIC_FMT]
    # Only priorities with PFC enabled get pause counters; "global" only under 802.3x pause.
    names += [f.format(s=f"prio{p}") for p in sorted(set(pfc_prios)) for f in MLX5_PFC_FMT]
    if global_pause:
        names += [f.format(s="global") for f in MLX5_PFC_FMT]
    names += [*MLX5_PFC_STALL, *MLX5_PME]
    names += [f.format(c=c) for c in range(channels) for f in MLX5_CH_FMT]
    names += [f.format(c=c) for c in range(channels) for f in MLX5_RQ_FMT]
    if congest_group:
        names += [f.format(p=p) for p in PRIOS for f in MLX5_BUFF_CONGEST_FMT]
    return tuple(names)


# --- RDMA device counters -------------------------------------------------------------------

IB_PORT_COUNTERS = (
    "VL15_dropped",
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "multicast_rcv_packets",
    "multicast_xmit_packets",
    "port_rcv_constraint_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
)
# hw_counters of an mlx5 port (q counters, then congestion counters on RoCE ports only).
IB_HW_Q_COUNTERS = (
    "duplicate_request",
    "implied_nak_seq_err",
    "lifespan",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_read_requests",
    "rx_write_requests",
)
IB_HW_CONG_COUNTERS = (
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "rp_cnp_handled",
    "rp_cnp_ignored",
)

# --- igb (management NIC) --------------------------------------------------------------------

IGB_NAMES = (
    "rx_packets",
    "tx_packets",
    "rx_bytes",
    "tx_bytes",
    "rx_broadcast",
    "tx_broadcast",
    "rx_multicast",
    "tx_multicast",
    "multicast",
    "collisions",
    "rx_crc_errors",
    "rx_no_buffer_count",
    "rx_missed_errors",
    "tx_aborted_errors",
    "tx_carrier_errors",
    "tx_window_errors",
    "tx_abort_late_coll",
    "tx_deferred_ok",
    "tx_single_coll_ok",
    "tx_multi_coll_ok",
    "tx_timeout_count",
    "rx_long_length_errors",
    "rx_short_length_errors",
    "rx_align_errors",
    "tx_tcp_seg_good",
    "tx_tcp_seg_failed",
    "rx_flow_control_xon",
    "rx_flow_control_xoff",
    "tx_flow_control_xon",
    "tx_flow_control_xoff",
    "rx_long_byte_count",
    "tx_dma_out_of_sync",
    "tx_smbus",
    "rx_smbus",
    "dropped_smbus",
    "os2bmc_rx_by_bmc",
    "os2bmc_tx_by_bmc",
    "os2bmc_tx_by_host",
    "os2bmc_rx_by_host",
    "tx_hwtstamp_timeouts",
    "tx_hwtstamp_skipped",
    "rx_hwtstamp_cleared",
    "rx_errors",
    "tx_errors",
    "tx_dropped",
    "rx_length_errors",
    "rx_over_errors",
    "rx_frame_errors",
    "rx_fifo_errors",
    "tx_fifo_errors",
    "tx_heartbeat_errors",
    "tx_queue_0_packets",
    "tx_queue_0_bytes",
    "tx_queue_0_restart",
    "rx_queue_0_packets",
    "rx_queue_0_bytes",
    "rx_queue_0_drops",
    "rx_queue_0_csum_err",
)

NETDEV_STATS = (
    "rx_bytes",
    "rx_packets",
    "rx_errors",
    "rx_dropped",
    "multicast",
    "tx_bytes",
    "tx_packets",
    "tx_errors",
    "tx_dropped",
)
