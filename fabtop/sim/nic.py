"""Per-NIC counter state of a simulated host, and its text exactly as the real tools print it.

Counter names are never invented. Each one comes from a real capture or from driver source:

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

PRIOS = range(8)


def _per_prio(fmt: str, prios: Iterable[int] = PRIOS) -> tuple[str, ...]:
    return tuple(fmt.format(p=p) for p in prios)


# --- mlx5 ethtool -S vocabulary ------------------------------------------------------------

# Names present in the mlx5 capture (verbatim), grouped as the driver prints them.
MLX5_SW = (
    "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_csum_unnecessary",
    "rx_xdp_drop", "rx_xdp_redirect", "rx_cache_reuse", "rx_cache_full", "rx_cache_empty",
    "rx_cache_busy", "rx_cache_waive", "rx_congst_umr", "ch_events", "ch_poll", "ch_arm",
)  # fmt: skip
MLX5_QCNT = ("rx_out_of_buffer", "rx_if_down_packets")
MLX5_VNIC = ("rx_steer_missed_packets",)
MLX5_VPORT = (
    "rx_vport_unicast_packets", "rx_vport_unicast_bytes",
    "tx_vport_unicast_packets", "tx_vport_unicast_bytes",
    "rx_vport_multicast_packets", "rx_vport_multicast_bytes",
    "tx_vport_multicast_packets", "tx_vport_multicast_bytes",
    "rx_vport_broadcast_packets", "rx_vport_broadcast_bytes",
    "tx_vport_broadcast_packets", "tx_vport_broadcast_bytes",
    "rx_vport_rdma_unicast_packets", "rx_vport_rdma_unicast_bytes",
    "tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
    "rx_vport_rdma_multicast_packets", "rx_vport_rdma_multicast_bytes",
    "tx_vport_rdma_multicast_packets", "tx_vport_rdma_multicast_bytes",
)  # fmt: skip
MLX5_802_3 = (
    "tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy", "rx_bytes_phy",
    "tx_multicast_phy", "tx_broadcast_phy", "rx_multicast_phy", "rx_broadcast_phy",
    "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy", "rx_oversize_pkts_phy",
    "rx_symbol_err_phy", "tx_mac_control_phy", "rx_mac_control_phy", "rx_unsupported_op_phy",
    "rx_pause_ctrl_phy", "tx_pause_ctrl_phy",
)  # fmt: skip
MLX5_2863 = ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy")
MLX5_2819 = (
    "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "rx_64_bytes_phy",
    "rx_65_to_127_bytes_phy", "rx_128_to_255_bytes_phy", "rx_256_to_511_bytes_phy",
    "rx_512_to_1023_bytes_phy", "rx_1024_to_1518_bytes_phy", "rx_1519_to_2047_bytes_phy",
    "rx_2048_to_4095_bytes_phy", "rx_4096_to_8191_bytes_phy", "rx_8192_to_10239_bytes_phy",
)  # fmt: skip
MLX5_PHY = ("link_down_events_phy",)
MLX5_PRIO_TRAFFIC_FMT = (
    "rx_prio{p}_bytes", "rx_prio{p}_packets", "rx_prio{p}_discards",
    "tx_prio{p}_bytes", "tx_prio{p}_packets",
)  # fmt: skip
MLX5_PFC_FMT = (
    "rx_{s}_pause", "rx_{s}_pause_duration", "tx_{s}_pause", "tx_{s}_pause_duration",
    "rx_{s}_pause_transition",
)  # fmt: skip
MLX5_PFC_STALL = ("tx_pause_storm_warning_events", "tx_pause_storm_error_events")
MLX5_PME = ("module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted")
MLX5_CH_FMT = ("ch{c}_events", "ch{c}_poll", "ch{c}_arm", "ch{c}_aff_change",
               "ch{c}_force_irq", "ch{c}_eq_rearm")  # fmt: skip
MLX5_RQ_FMT = (
    "rx{c}_packets", "rx{c}_bytes", "rx{c}_csum_complete", "rx{c}_csum_unnecessary",
    "rx{c}_csum_none", "rx{c}_xdp_drop", "rx{c}_xdp_redirect", "rx{c}_lro_packets",
    "rx{c}_lro_bytes", "rx{c}_ecn_mark", "rx{c}_removed_vlan_packets", "rx{c}_wqe_err",
    "rx{c}_buff_alloc_err", "rx{c}_cache_reuse", "rx{c}_cache_full", "rx{c}_cache_empty",
    "rx{c}_congst_umr", "rx{c}_arfs_err", "rx{c}_recover",
)  # fmt: skip
MLX5_BUFF_CONGEST_FMT = ("rx_prio{p}_buf_discard", "rx_prio{p}_cong_discard", "rx_prio{p}_marked")

# The driver's own tables, as printf formats exactly as they appear in en_stats.c (tables
# named in the module docstring). Kept apart from the render lists above on purpose: the
# tests check every rendered name against the capture plus this evidence.
EN_STATS_C_EVIDENCE: dict[str, tuple[str, ...]] = {
    "sw_stats_desc": ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_csum_unnecessary",
                      "rx_xdp_drop", "rx_xdp_redirect", "rx_cache_reuse", "rx_cache_full",
                      "rx_cache_empty", "rx_cache_busy", "rx_cache_waive", "rx_congst_umr",
                      "ch_events", "ch_poll", "ch_arm"),
    "q_stats_desc": ("rx_out_of_buffer",),
    "drop_rq_stats_desc": ("rx_if_down_packets",),
    "vnic_env_stats_steer_desc": ("rx_steer_missed_packets",),
    "vport_stats_desc": tuple(f"{d}_vport_{k}_{u}" for k in ("unicast", "multicast",
                              "broadcast", "rdma_unicast", "rdma_multicast")
                              for d in ("rx", "tx") for u in ("packets", "bytes")),
    "pport_802_3_stats_desc": ("tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy",
                               "tx_bytes_phy", "rx_bytes_phy", "tx_multicast_phy",
                               "tx_broadcast_phy", "rx_multicast_phy", "rx_broadcast_phy",
                               "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy",
                               "rx_oversize_pkts_phy", "rx_symbol_err_phy",
                               "tx_mac_control_phy", "rx_mac_control_phy",
                               "rx_unsupported_op_phy", "rx_pause_ctrl_phy",
                               "tx_pause_ctrl_phy"),
    "pport_2863_stats_desc": ("rx_discards_phy", "tx_discards_phy", "tx_errors_phy"),
    "pport_2819_stats_desc": ("rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy",
                              "rx_64_bytes_phy", "rx_65_to_127_bytes_phy",
                              "rx_128_to_255_bytes_phy", "rx_256_to_511_bytes_phy",
                              "rx_512_to_1023_bytes_phy", "rx_1024_to_1518_bytes_phy",
                              "rx_1519_to_2047_bytes_phy", "rx_2048_to_4095_bytes_phy",
                              "rx_4096_to_8191_bytes_phy", "rx_8192_to_10239_bytes_phy"),
    "phy (fill_strings)": ("link_down_events_phy",),
    "pport_per_prio_traffic_stats_desc": ("rx_prio%d_bytes", "rx_prio%d_packets",
                                          "rx_prio%d_discards", "tx_prio%d_bytes",
                                          "tx_prio%d_packets"),
    "pport_per_prio_pfc_stats_desc": ("rx_%s_pause", "rx_%s_pause_duration", "tx_%s_pause",
                                      "tx_%s_pause_duration", "rx_%s_pause_transition"),
    "pport_pfc_stall_stats_desc": ("tx_pause_storm_warning_events",
                                   "tx_pause_storm_error_events"),
    "pport_per_tc_prio_stats_desc": ("rx_prio%d_buf_discard",),
    "pport_per_tc_congest_prio_stats_desc": ("rx_prio%d_cong_discard", "rx_prio%d_marked"),
    "mlx5e_pme_status_desc": ("module_unplug",),
    "mlx5e_pme_error_desc": ("module_bus_stuck", "module_high_temp", "module_bad_shorted"),
    # Per-channel names: the capture shows channel 0 ("ch0_events", "rx0_packets" ...);
    # ch_stats_desc / rq_stats_desc print them with "ch%d_" / "rx%d_" for every channel.
    "ch_stats_desc": ("ch%d_events", "ch%d_poll", "ch%d_arm", "ch%d_aff_change",
                      "ch%d_force_irq", "ch%d_eq_rearm"),
    "rq_stats_desc": tuple("rx%d_" + n for n in (
        "packets", "bytes", "csum_complete", "csum_unnecessary", "csum_none", "xdp_drop",
        "xdp_redirect", "lro_packets", "lro_bytes", "ecn_mark", "removed_vlan_packets",
        "wqe_err", "buff_alloc_err", "cache_reuse", "cache_full", "cache_empty", "congst_umr",
        "arfs_err", "recover")),
}  # fmt: skip


def _expand(fmt: str) -> tuple[str, ...]:
    if "%s" in fmt:  # "prio{p}" for a PFC priority, or "global"
        return tuple(fmt.replace("%s", s) for s in [*(f"prio{p}" for p in PRIOS), "global"])
    if "%d" in fmt:
        return tuple(fmt.replace("%d", str(i)) for i in range(64))
    return (fmt,)


MLX5_DRIVER_SOURCE_NAMES: frozenset[str] = frozenset(
    n for fmts in EN_STATS_C_EVIDENCE.values() for f in fmts for n in _expand(f)
)

# Starting values (cumulative, a host that has been up a while): the capture's magnitudes.
_MLX5_CAPTURE_START = {
    "rx_bytes_phy": 6211329423080, "rx_packets_phy": 97052087562,
    "tx_bytes_phy": 357657403514, "tx_packets_phy": 5588396729,
    "rx_vport_unicast_bytes": 2461450188460, "rx_vport_unicast_packets": 38460159194,
    "tx_vport_unicast_bytes": 334959252764, "tx_vport_unicast_packets": 5582654212,
    "rx_steer_missed_packets": 1962570491, "rx_cache_reuse": 9369255040,
    "rx_packets": 333854100, "rx_bytes": 20031246044, "tx_packets": 25, "tx_bytes": 2070,
}  # fmt: skip


def mlx5_ethtool_names(
    pfc_prios: Sequence[int], global_pause: bool, channels: int, congest_group: bool = True
) -> tuple[str, ...]:
    """The ``ethtool -S`` names of one mlx5 port in driver order, given its pause config."""
    names: list[str] = [*MLX5_SW, *MLX5_QCNT, *MLX5_VNIC, *MLX5_VPORT, *MLX5_802_3]
    names += [*MLX5_2863, *MLX5_2819, *MLX5_PHY]
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
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets",
    "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets",
)  # fmt: skip
# hw_counters of an mlx5 port (q counters, then congestion counters on RoCE ports only).
IB_HW_Q_COUNTERS = (
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err",
    "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
    "req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request",
    "resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
    "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans",
    "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rx_atomic_requests", "rx_dct_connect", "rx_read_requests",
    "rx_write_requests",
)  # fmt: skip
IB_HW_CONG_COUNTERS = ("np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled",
                       "rp_cnp_ignored")  # fmt: skip

# --- igb (management NIC) --------------------------------------------------------------------

IGB_NAMES = (
    "rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_broadcast", "tx_broadcast",
    "rx_multicast", "tx_multicast", "multicast", "collisions", "rx_crc_errors",
    "rx_no_buffer_count", "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors",
    "tx_window_errors", "tx_abort_late_coll", "tx_deferred_ok", "tx_single_coll_ok",
    "tx_multi_coll_ok", "tx_timeout_count", "rx_long_length_errors", "rx_short_length_errors",
    "rx_align_errors", "tx_tcp_seg_good", "tx_tcp_seg_failed", "rx_flow_control_xon",
    "rx_flow_control_xoff", "tx_flow_control_xon", "tx_flow_control_xoff",
    "rx_long_byte_count", "tx_dma_out_of_sync", "tx_smbus", "rx_smbus", "dropped_smbus",
    "os2bmc_rx_by_bmc", "os2bmc_tx_by_bmc", "os2bmc_tx_by_host", "os2bmc_rx_by_host",
    "tx_hwtstamp_timeouts", "tx_hwtstamp_skipped", "rx_hwtstamp_cleared", "rx_errors",
    "tx_errors", "tx_dropped", "rx_length_errors", "rx_over_errors", "rx_frame_errors",
    "rx_fifo_errors", "tx_fifo_errors", "tx_heartbeat_errors",
    "tx_queue_0_packets", "tx_queue_0_bytes", "tx_queue_0_restart",
    "rx_queue_0_packets", "rx_queue_0_bytes", "rx_queue_0_drops", "rx_queue_0_csum_err",
)  # fmt: skip

NETDEV_STATS = (
    "rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "multicast",
    "tx_bytes", "tx_packets", "tx_errors", "tx_dropped",
)  # fmt: skip


class Counters:
    """Cumulative counters integrated on the simulation grid.

    ``vals`` hold the value at the last grid point, ``rates`` the per-second growth for
    the current cell; a reading at a time inside the cell adds the partial step, so a
    counter is a deterministic function of simulation time and never goes backwards.
    """

    __slots__ = ("_prefix", "index", "names", "rates", "vals")

    def __init__(self, names: Sequence[str], start: Mapping[str, int] | None = None) -> None:
        self.names = tuple(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.vals = [float((start or {}).get(n, 0)) for n in self.names]
        self.rates = [0.0] * len(self.names)
        self._prefix = [f"     {n}: " for n in self.names]

    def has(self, name: str) -> bool:
        """True when this counter exists on the device."""
        return name in self.index

    def rate(self, name: str, per_s: float) -> None:
        """Set the growth per second of ``name`` for the current cell (absent names: ignored)."""
        i = self.index.get(name)
        if i is not None:
            self.rates[i] = max(per_s, 0.0)

    def bump(self, name: str, n: float) -> None:
        """Add a discrete step to ``name`` (an event, not a rate)."""
        i = self.index.get(name)
        if i is not None:
            self.vals[i] += n

    def clear_rates(self) -> None:
        """Every counter stops growing until rates are set again."""
        self.rates = [0.0] * len(self.names)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.vals = [v + r * dt for v, r in zip(self.vals, self.rates, strict=True)]

    def zero(self) -> None:
        """Driver reload: every counter restarts from 0."""
        self.vals = [0.0] * len(self.names)

    def value(self, name: str, frac_s: float = 0.0) -> int:
        """Value of ``name`` at ``frac_s`` seconds into the current cell."""
        i = self.index[name]
        return int(self.vals[i] + self.rates[i] * frac_s)

    def items(self, frac_s: float = 0.0) -> list[tuple[str, int]]:
        """Every (name, value) at ``frac_s`` seconds into the current cell."""
        return [
            (n, int(v + r * frac_s))
            for n, v, r in zip(self.names, self.vals, self.rates, strict=True)
        ]

    def ethtool_text(self, frac_s: float = 0.0) -> str:
        """``ethtool -S`` output: a header line, then ``     name: value`` per counter."""
        lines = ["NIC statistics:"]
        lines += [
            p + str(int(v + r * frac_s))
            for p, v, r in zip(self._prefix, self.vals, self.rates, strict=True)
        ]
        return "\n".join(lines)


@dataclass(slots=True)
class PortTraffic:
    """What one RoCE/Ethernet port carries during one grid cell (bytes per second)."""

    up: bool = True
    rdma_tx: float = 0.0
    rdma_rx: float = 0.0
    eth_tx: float = 0.0
    eth_rx: float = 0.0
    tx_pause_frac: float = 0.0  # share of the cell this port held its peer paused
    rx_pause_frac: float = 0.0  # share of the cell the peer held this port paused
    ecn_marked_pps: float = 0.0  # CE-marked RoCE packets received
    cnp_sent_pps: float = 0.0
    cnp_handled_pps: float = 0.0


PAUSE_FRAMES_PER_S = 6000.0  # a fully paused 100G port refreshes XOFF about every 170 us
ETH_PKT = 1400.0
CNP_WIRE_BYTES = 78.0  # Eth+IP+UDP+BTH+16 reserved+ICRC+FCS
CNP_PRIO = 6  # ecn/roce_np/cnp_802p_prio in the sysfs fixture


class Mlx5Port:
    """One ConnectX port: its netdev counters, ``ethtool -S`` set and RDMA device counters."""

    __slots__ = ("eth", "global_pause", "hw", "ib", "lossless", "netdev", "pfc_prios",
                 "rdma_prio", "roce_mtu")  # fmt: skip

    def __init__(
        self,
        pfc_prios: Sequence[int],
        rdma_prio: int,
        roce_mtu: int,
        scale: float,
        global_pause: bool = False,
        channels: int = 4,
    ) -> None:
        self.pfc_prios = tuple(sorted(set(pfc_prios)))
        self.rdma_prio = rdma_prio
        self.lossless = rdma_prio in self.pfc_prios
        self.global_pause = global_pause
        self.roce_mtu = roce_mtu
        start = {k: int(v * scale) for k, v in _MLX5_CAPTURE_START.items()}
        start[f"rx_prio{rdma_prio}_bytes"] = start["rx_bytes_phy"] - start["rx_vport_unicast_bytes"]
        start[f"tx_prio{rdma_prio}_bytes"] = start["tx_bytes_phy"] - start["tx_vport_unicast_bytes"]
        start["rx_prio0_bytes"] = start["rx_vport_unicast_bytes"]
        start["tx_prio0_bytes"] = start["tx_vport_unicast_bytes"]
        start["rx_vport_rdma_unicast_bytes"] = start[f"rx_prio{rdma_prio}_bytes"]
        start["tx_vport_rdma_unicast_bytes"] = start[f"tx_prio{rdma_prio}_bytes"]
        self.eth = Counters(mlx5_ethtool_names(self.pfc_prios, global_pause, channels), start)
        # The kernel's netdev statistics are mlx5's software counters (mlx5e_get_stats).
        self.netdev = Counters(
            NETDEV_STATS,
            {k: start[k] for k in ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")},
        )
        self.ib = Counters(IB_PORT_COUNTERS, {
            "port_rcv_data": start["rx_vport_rdma_unicast_bytes"] // 4,
            "port_xmit_data": start["tx_vport_rdma_unicast_bytes"] // 4,
        })  # fmt: skip
        self.hw = Counters(IB_HW_Q_COUNTERS + IB_HW_CONG_COUNTERS, {"lifespan": 10})

    def all_counters(self) -> tuple[Counters, ...]:
        """Every counter set of this port (for resets and commits)."""
        return (self.eth, self.netdev, self.ib, self.hw)

    def apply(self, tr: PortTraffic) -> None:
        """Set every counter's growth for one cell from the port's traffic."""
        for c in self.all_counters():
            c.clear_rates()
        if not tr.up:
            return
        e, nd, ib, hw = self.eth, self.netdev, self.ib, self.hw
        rp = self.rdma_prio
        rpkt = float(self.roce_mtu) + 62.0
        rdma_rx_pps, rdma_tx_pps = tr.rdma_rx / rpkt, tr.rdma_tx / rpkt
        eth_rx_pps, eth_tx_pps = tr.eth_rx / ETH_PKT, tr.eth_tx / ETH_PKT
        cnp_rx_pps, cnp_tx_pps = tr.cnp_handled_pps, tr.cnp_sent_pps
        # PFC frames: sent while this port holds its peer, received while it is held.
        pause_tx_fps = PAUSE_FRAMES_PER_S * tr.tx_pause_frac
        pause_rx_fps = PAUSE_FRAMES_PER_S * tr.rx_pause_frac
        # Kernel path (sw counters, netdev statistics): the non-RDMA traffic only.
        for c in (e, nd):
            c.rate("rx_bytes", tr.eth_rx)
            c.rate("rx_packets", eth_rx_pps)
            c.rate("tx_bytes", tr.eth_tx)
            c.rate("tx_packets", eth_tx_pps)
        mc = 0.2 if tr.eth_rx > 0 else 0.0  # LLDP and the like, on a receiving port
        nd.rate("multicast", mc)
        e.rate("rx_csum_unnecessary", eth_rx_pps * 0.98)
        e.rate("rx_cache_reuse", eth_rx_pps * 0.9)
        e.rate("ch_events", eth_rx_pps / 64)
        e.rate("ch_poll", eth_rx_pps / 8)
        e.rate("ch_arm", eth_rx_pps / 64)
        for ch in range(4):
            e.rate(f"rx{ch}_packets", eth_rx_pps / 4)
            e.rate(f"rx{ch}_bytes", tr.eth_rx / 4)
            e.rate(f"rx{ch}_csum_unnecessary", eth_rx_pps * 0.98 / 4)
            e.rate(f"rx{ch}_cache_reuse", eth_rx_pps * 0.9 / 4)
            e.rate(f"ch{ch}_events", eth_rx_pps / 256)
            e.rate(f"ch{ch}_poll", eth_rx_pps / 32)
            e.rate(f"ch{ch}_arm", eth_rx_pps / 256)
        e.rate("rx_vport_unicast_bytes", tr.eth_rx)
        e.rate("rx_vport_unicast_packets", eth_rx_pps)
        e.rate("tx_vport_unicast_bytes", tr.eth_tx)
        e.rate("tx_vport_unicast_packets", eth_tx_pps)
        e.rate("rx_vport_multicast_packets", mc)
        e.rate("rx_vport_multicast_bytes", mc * 90)
        e.rate("rx_vport_rdma_unicast_bytes", tr.rdma_rx)
        e.rate("rx_vport_rdma_unicast_packets", rdma_rx_pps)
        e.rate("tx_vport_rdma_unicast_bytes", tr.rdma_tx)
        e.rate("tx_vport_rdma_unicast_packets", rdma_tx_pps)
        rx_phy_pkts = eth_rx_pps + rdma_rx_pps + cnp_rx_pps + mc
        tx_phy_pkts = eth_tx_pps + rdma_tx_pps + cnp_tx_pps
        e.rate("rx_bytes_phy", tr.eth_rx + tr.rdma_rx + cnp_rx_pps * CNP_WIRE_BYTES + mc * 90)
        e.rate("rx_packets_phy", rx_phy_pkts)
        e.rate("tx_bytes_phy", tr.eth_tx + tr.rdma_tx + cnp_tx_pps * CNP_WIRE_BYTES)
        e.rate("tx_packets_phy", tx_phy_pkts)
        e.rate("rx_multicast_phy", mc)
        e.rate("tx_mac_control_phy", pause_tx_fps)
        e.rate("rx_mac_control_phy", pause_rx_fps)
        # RFC 2819 size histogram of received frames.
        e.rate("rx_65_to_127_bytes_phy", eth_rx_pps * 0.4 + cnp_rx_pps + mc)
        e.rate("rx_1024_to_1518_bytes_phy", eth_rx_pps * 0.6)
        big = ("rx_4096_to_8191_bytes_phy" if self.roce_mtu >= 4096 else
               "rx_2048_to_4095_bytes_phy" if self.roce_mtu >= 2048 else
               "rx_1024_to_1518_bytes_phy")  # fmt: skip
        e.rate(big, rdma_rx_pps + (eth_rx_pps * 0.6 if big == "rx_1024_to_1518_bytes_phy" else 0))
        # Per-priority traffic: TCP on 0, RoCE on its priority, CNPs on the CNP priority.
        e.rate("rx_prio0_bytes", tr.eth_rx + mc * 90)
        e.rate("rx_prio0_packets", eth_rx_pps + mc)
        e.rate("tx_prio0_bytes", tr.eth_tx)
        e.rate("tx_prio0_packets", eth_tx_pps)
        e.rate(f"rx_prio{rp}_bytes", tr.rdma_rx + (tr.eth_rx + mc * 90 if rp == 0 else 0))
        e.rate(f"rx_prio{rp}_packets", rdma_rx_pps + (eth_rx_pps + mc if rp == 0 else 0))
        e.rate(f"tx_prio{rp}_bytes", tr.rdma_tx + (tr.eth_tx if rp == 0 else 0))
        e.rate(f"tx_prio{rp}_packets", rdma_tx_pps + (eth_tx_pps if rp == 0 else 0))
        e.rate(f"rx_prio{CNP_PRIO}_bytes", cnp_rx_pps * CNP_WIRE_BYTES)
        e.rate(f"rx_prio{CNP_PRIO}_packets", cnp_rx_pps)
        e.rate(f"tx_prio{CNP_PRIO}_bytes", cnp_tx_pps * CNP_WIRE_BYTES)
        e.rate(f"tx_prio{CNP_PRIO}_packets", cnp_tx_pps)
        e.rate(f"rx_prio{rp}_marked", tr.ecn_marked_pps)
        # Pause counters exist only on PFC priorities; a lossy RoCE priority drops instead.
        held = f"prio{rp}" if self.lossless else ("global" if self.global_pause else None)
        if held is not None:
            e.rate(f"tx_{held}_pause", pause_tx_fps)
            e.rate(f"tx_{held}_pause_duration", tr.tx_pause_frac * 1e6)
            e.rate(f"rx_{held}_pause", pause_rx_fps)
            e.rate(f"rx_{held}_pause_duration", tr.rx_pause_frac * 1e6)
            trans = 2000.0 * tr.rx_pause_frac * (1.0 - tr.rx_pause_frac) + 0.5 * pause_rx_fps / 600
            e.rate(f"rx_{held}_pause_transition", trans if tr.rx_pause_frac > 0 else 0.0)
            if held == "global":
                e.rate("tx_pause_ctrl_phy", pause_tx_fps)
                e.rate("rx_pause_ctrl_phy", pause_rx_fps)
        elif tr.tx_pause_frac > 0:
            # No PFC on the RoCE priority: congestion shows up as discards.
            drops = rdma_rx_pps * 0.02 * tr.tx_pause_frac
            e.rate(f"rx_prio{rp}_discards", drops)
            e.rate("rx_discards_phy", drops)
            e.rate(f"rx_prio{rp}_buf_discard", drops)
        # RDMA device: PMA data counters in 4-octet words; q and congestion counters.
        ib.rate("port_rcv_data", tr.rdma_rx / 4)
        ib.rate("port_xmit_data", tr.rdma_tx / 4)
        ib.rate("port_rcv_packets", rdma_rx_pps)
        ib.rate("port_xmit_packets", rdma_tx_pps)
        ib.rate("unicast_rcv_packets", rdma_rx_pps)
        ib.rate("unicast_xmit_packets", rdma_tx_pps)
        hw.rate("rx_write_requests", rdma_rx_pps / 16)
        hw.rate("rx_read_requests", rdma_rx_pps / 256)
        hw.rate("np_ecn_marked_roce_packets", tr.ecn_marked_pps)
        hw.rate("np_cnp_sent", cnp_tx_pps)
        hw.rate("rp_cnp_handled", cnp_rx_pps * 0.995)
        hw.rate("rp_cnp_ignored", cnp_rx_pps * 0.005)
        if not self.lossless and tr.tx_pause_frac > 0:
            hw.rate("out_of_sequence", rdma_rx_pps * 0.002 * tr.tx_pause_frac)
            hw.rate("packet_seq_err", rdma_rx_pps * 0.0005 * tr.tx_pause_frac)
            hw.rate("roce_adp_retrans", rdma_tx_pps * 0.0005)

    def commit(self, dt: float) -> None:
        """Advance every counter set to the next grid point."""
        for c in self.all_counters():
            c.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        for c in self.all_counters():
            c.zero()


class IbPort:
    """One native InfiniBand port: ``counters/`` (PMA) and ``hw_counters/`` (q counters)."""

    __slots__ = ("hw", "ib")

    def __init__(self, scale: float) -> None:
        # Starting point: the mlx5_0 IB port of the procfs sysfs fixture, scaled.
        start = {
            "port_rcv_data": 18126345378, "port_xmit_data": 2880761508848,
            "port_rcv_packets": 541889824, "port_xmit_packets": 10907922116,
            "unicast_rcv_packets": 541889824, "unicast_xmit_packets": 10907922116,
        }  # fmt: skip
        self.ib = Counters(IB_PORT_COUNTERS, {k: int(v * scale) for k, v in start.items()})
        self.hw = Counters(IB_HW_Q_COUNTERS, {
            "lifespan": 10, "rx_read_requests": int(175528982 * scale),
            "rx_write_requests": int(742114 * scale),
        })  # fmt: skip

    def apply(self, up: bool, tx: float, rx: float, wait_frac: float) -> None:
        """Set growth for one cell: bytes per second each way, share of time waiting for credit."""
        self.ib.clear_rates()
        self.hw.clear_rates()
        if not up:
            return
        mtu = 4096 + 30.0
        self.ib.rate("port_xmit_data", tx / 4)
        self.ib.rate("port_rcv_data", rx / 4)
        self.ib.rate("port_xmit_packets", tx / mtu)
        self.ib.rate("port_rcv_packets", rx / mtu)
        self.ib.rate("unicast_xmit_packets", tx / mtu)
        self.ib.rate("unicast_rcv_packets", rx / mtu)
        # port_xmit_wait counts ticks (HDR: about 1.6e8 per second) with data but no credit.
        self.ib.rate("port_xmit_wait", wait_frac * 1.6e8)
        self.hw.rate("rx_write_requests", rx / mtu / 16)
        self.hw.rate("rx_read_requests", rx / mtu / 256)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.ib.commit(dt)
        self.hw.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        self.ib.zero()
        self.hw.zero()


class PlainNetdev:
    """A netdev with kernel statistics only (thunderbolt-net, lo), or igb's ``ethtool -S`` too."""

    __slots__ = ("eth", "netdev", "pkt")

    def __init__(self, igb: bool = False, pkt: float = ETH_PKT) -> None:
        self.netdev = Counters(NETDEV_STATS)
        self.eth = Counters(IGB_NAMES) if igb else None
        self.pkt = pkt

    def apply(self, up: bool, tx: float, rx: float) -> None:
        """Set growth for one cell (bytes per second each way)."""
        sets = [self.netdev] + ([self.eth] if self.eth is not None else [])
        for c in sets:
            c.clear_rates()
            if not up:
                continue
            c.rate("rx_bytes", rx)
            c.rate("tx_bytes", tx)
            c.rate("rx_packets", rx / self.pkt)
            c.rate("tx_packets", tx / self.pkt)
            c.rate("rx_queue_0_packets", rx / self.pkt)
            c.rate("rx_queue_0_bytes", rx)
            c.rate("tx_queue_0_packets", tx / self.pkt)
            c.rate("tx_queue_0_bytes", tx)
            c.rate("multicast", 0.1)
            c.rate("rx_multicast", 0.1)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.netdev.commit(dt)
        if self.eth is not None:
            self.eth.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        self.netdev.zero()
        if self.eth is not None:
            self.eth.zero()
