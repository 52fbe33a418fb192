"""Map raw counters to fabtop's normalized vocabulary (DESIGN.md §3), one table per source.

Each normalized metric lists its sources in order of preference; the first source with
at least one of its raw names present wins, and the raw names of one source are summed
(``rx_crc_errors_phy`` + ``rx_symbol_err_phy``). A name holding ``{p}`` is read for the
eight priorities and gives a ``{priority: value}`` dict, unless ``rollup`` asks for the
sum. Names that are generic across drivers (``rx_bytes``) are only taken for the drivers
listed, because their meaning differs: mlx5's ``rx_bytes`` is software-only and misses
RDMA traffic, bnxt_en's is the port's.

Where a name is not in a capture under ``../shared/fixtures/ethtool``, its source is cited.
Intel PFC: ``*_xoff`` counts pause (XOFF) frames; ``*_xon`` (resume) frames are not pauses
and stay raw only.

Normalized names beyond DESIGN.md §3 (added here, same evidence rule):
``rx_discards_prio[p]`` (mlx5 ``rx_prio{p}_discards``), ``ecn_marked_prio[p]``,
``rx_bytes_prio[p]``/``tx_bytes_prio[p]`` (mlx5 per-priority traffic, all 8 priorities),
``tx_pause_storm_warning_events``/``tx_pause_storm_error_events`` (mlx5 names kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from collectors.samples import MetricValue

PRIORITIES = range(8)


@dataclass(frozen=True, slots=True)
class Src:
    """One way to read a metric: these raw names summed, times ``scale``."""

    names: tuple[str, ...]
    drivers: frozenset[str] | None = None  # None: names specific enough for any driver
    scale: int = 1
    rollup: bool = False  # sum a per-priority name over priorities into one value
    # names with {p} filled in, per priority (empty for scalar names); built once, not per tick
    per_prio: tuple[tuple[str, ...], ...] = ()


def _s(
    *names: str, drivers: tuple[str, ...] | None = None, scale: int = 1, rollup: bool = False
) -> Src:
    per_prio = (
        tuple(tuple(n.format(p=p) for n in names) for p in PRIORITIES)
        if any("{p}" in n for n in names)
        else ()
    )
    return Src(names, frozenset(drivers) if drivers else None, scale, rollup, per_prio)


_MLX5 = ("mlx5_core",)
_BNXT = ("bnxt_en",)

# mlx5 names: drivers/net/ethernet/mellanox/mlx5/core/en_stats.c (pport_802_3, 2863, per_prio,
# per_prio_pfc, pfc_stall, per_tc_prio, per_tc_congest_prio, pme_error, vport groups).
ETHTOOL_MAP: Mapping[str, tuple[Src, ...]] = {
    "rx_bytes": (
        _s("rx_bytes_phy"),
        _s("port.rx_bytes"),  # i40e
        _s("rx_bytes.nic"),  # ice
        _s("rx_bytes", drivers=_BNXT),  # bnxt_en: the un-bracketed one is the port's
    ),
    "tx_bytes": (
        _s("tx_bytes_phy"),
        _s("port.tx_bytes"),
        _s("tx_bytes.nic"),
        _s("tx_bytes", drivers=_BNXT),
    ),
    "rx_packets": (
        _s("rx_packets_phy"),
        _s("port.rx_unicast", "port.rx_multicast", "port.rx_broadcast"),
        _s("rx_unicast.nic", "rx_multicast.nic", "rx_broadcast.nic"),
    ),
    "tx_packets": (
        _s("tx_packets_phy"),
        _s("port.tx_unicast", "port.tx_multicast", "port.tx_broadcast"),
        _s("tx_unicast.nic", "tx_multicast.nic", "tx_broadcast.nic"),
    ),
    "rdma_rx_bytes": (_s("rx_vport_rdma_unicast_bytes"),),  # en_stats.c vport group
    "rdma_tx_bytes": (_s("tx_vport_rdma_unicast_bytes"),),
    "rx_pause": (
        _s("rx_prio{p}_pause"),  # en_stats.c; only PFC-enabled priorities
        _s("port.rx_priority_{p}_xoff_rx"),  # i40e (newer)
        _s("port.rx_priority_{p}_xoff"),  # i40e (older)
        _s("rx_priority_{p}_xoff.nic"),  # ice
        _s("rx_pfc_ena_frames_pri{p}"),  # bnxt_en
    ),
    "tx_pause": (
        _s("tx_prio{p}_pause"),
        _s("port.tx_priority_{p}_xoff_tx"),
        _s("port.tx_priority_{p}_xoff"),
        _s("tx_priority_{p}_xoff.nic"),
        _s("tx_pfc_ena_frames_pri{p}"),
    ),
    "rx_pause_us": (_s("rx_prio{p}_pause_duration"),),  # en_stats.c, microseconds
    "tx_pause_us": (_s("tx_prio{p}_pause_duration"),),
    "rx_pause_global": (
        _s("rx_pause_ctrl_phy"),  # en_stats.c pport_802_3
        _s("port.link_xoff_rx"),
        _s("link_xoff_rx.nic"),
        _s("rx_pause_frames", drivers=_BNXT),
        _s("rx_flow_control_xoff"),  # igb
    ),
    "tx_pause_global": (
        _s("tx_pause_ctrl_phy"),
        _s("port.link_xoff_tx"),
        _s("link_xoff_tx.nic"),
        _s("tx_pause_frames", drivers=_BNXT),
        _s("tx_flow_control_xoff"),
    ),
    "rx_discards": (
        _s("rx_discards_phy"),
        _s("port.rx_dropped"),
        _s("rx_dropped.nic"),
    ),
    "rx_discards_prio": (_s("rx_prio{p}_discards"),),
    "rx_out_of_buffer": (_s("rx_out_of_buffer"),),
    "rx_phy_errors": (
        _s("rx_crc_errors_phy", "rx_symbol_err_phy"),  # en_stats.c pport_802_3
        _s("port.rx_crc_errors"),
        _s("rx_crc_errors.nic"),
        _s("rx_fcs_err_frames", drivers=_BNXT),
    ),
    "link_down_events": (_s("link_down_events_phy"),),  # en_stats.c phy group
    # en_stats.c pport_per_tc_congest_prio_stats_desc: "rx_prio%d_marked" (ecn_marked_tc)
    "ecn_marked": (_s("rx_prio{p}_marked", rollup=True),),
    "ecn_marked_prio": (_s("rx_prio{p}_marked"),),
    "rx_buf_discard": (_s("rx_prio{p}_buf_discard"),),  # en_stats.c per_tc_prio
    "rx_cong_discard": (_s("rx_prio{p}_cong_discard"),),  # en_stats.c per_tc_congest_prio
    "module_high_temp_events": (_s("module_high_temp"),),  # en_stats.c pme_error
    "tx_pause_storm_warning_events": (_s("tx_pause_storm_warning_events"),),  # pfc_stall
    "tx_pause_storm_error_events": (_s("tx_pause_storm_error_events"),),
    "rx_bytes_prio": (_s("rx_prio{p}_bytes"),),
    "tx_bytes_prio": (_s("tx_prio{p}_bytes"),),
}

# InfiniBand port counters (counters/ and counters_ext/ merged). port_*_data count
# 4-octet words (IBA PortCounters; drivers/infiniband/core/sysfs.c); *_64 are the
# extended 64-bit set and are preferred when present.
IB_PORT_MAP: Mapping[str, tuple[Src, ...]] = {
    "rx_bytes": (_s("port_rcv_data_64", scale=4), _s("port_rcv_data", scale=4)),
    "tx_bytes": (_s("port_xmit_data_64", scale=4), _s("port_xmit_data", scale=4)),
    "rx_packets": (_s("port_rcv_packets_64"), _s("port_rcv_packets")),
    "tx_packets": (_s("port_xmit_packets_64"), _s("port_xmit_packets")),
    "xmit_wait": (_s("port_xmit_wait"),),
    "rx_discards": (_s("port_xmit_discards", "port_rcv_errors"),),  # as DESIGN.md §3
    "rx_phy_errors": (_s("symbol_error", "port_rcv_remote_physical_errors"),),
    "link_down_events": (_s("link_downed"),),
}

# RDMA hw_counters/ (mlx5: drivers/infiniband/hw/mlx5/counters.c; capture in
# ../shared/fixtures/sysfs/prometheus_procfs for out_of_buffer .. roce_adp_retrans).
IB_HW_MAP: Mapping[str, tuple[Src, ...]] = {
    "rx_out_of_buffer": (_s("out_of_buffer"),),
    "ecn_marked": (_s("np_ecn_marked_roce_packets"),),
    "cnp_sent": (_s("np_cnp_sent"),),
    "cnp_handled": (_s("rp_cnp_handled"),),
    "out_of_sequence": (_s("out_of_sequence"),),
    "packet_seq_err": (_s("packet_seq_err"),),
    "local_ack_timeout_err": (_s("local_ack_timeout_err"),),
    "retransmits": (_s("roce_adp_retrans"),),
}

# /sys/class/net/<dev>/statistics/* plus carrier counters.
NETDEV_MAP: Mapping[str, tuple[Src, ...]] = {
    "rx_bytes": (_s("rx_bytes"),),
    "tx_bytes": (_s("tx_bytes"),),
    "rx_packets": (_s("rx_packets"),),
    "tx_packets": (_s("tx_packets"),),
    "rx_discards": (_s("rx_dropped"),),
    "rx_phy_errors": (_s("rx_errors"),),
    # carrier_down_count counts downs only; carrier_changes counts downs and ups
    "link_down_events": (_s("carrier_down_count"), _s("carrier_changes")),
}

# Width in bits of each legacy PMA counter (drivers/infiniband/core/sysfs.c PORT_PMA_ATTR):
# such a counter stops at its maximum instead of wrapping.
IB_LEGACY_WIDTH: Mapping[str, int] = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_data": 32,
    "port_rcv_data": 32,
    "port_xmit_packets": 32,
    "port_rcv_packets": 32,
    "port_xmit_wait": 32,
}


def _read(src: Src, counters: Mapping[str, int]) -> MetricValue | None:
    if not src.per_prio:
        present = [counters[n] for n in src.names if n in counters]
        return sum(present) * src.scale if present else None
    per: dict[int, int] = {}
    for p, names in enumerate(src.per_prio):
        present = [counters[n] for n in names if n in counters]
        if present:
            per[p] = sum(present) * src.scale
    if not per:
        return None
    return sum(per.values()) if src.rollup else per


def apply_map(
    table: Mapping[str, tuple[Src, ...]], counters: Mapping[str, int], driver: str | None = None
) -> dict[str, MetricValue]:
    """Evaluate one mapping table over one source's raw counters."""
    out: dict[str, MetricValue] = {}
    for metric, sources in table.items():
        for src in sources:
            if src.drivers is not None and driver not in src.drivers:
                continue
            value = _read(src, counters)
            if value is not None:
                out[metric] = value
                break
    return out


def normalize_ethtool(counters: Mapping[str, int], driver: str | None) -> dict[str, MetricValue]:
    """Normalized metrics from ``ethtool -S`` counters of a netdev with this driver."""
    return apply_map(ETHTOOL_MAP, counters, _driver_key(driver))


def normalize_ib(
    counters: Mapping[str, int], hw_counters: Mapping[str, int]
) -> dict[str, MetricValue]:
    """Normalized metrics from an RDMA port's counters(+counters_ext) and hw_counters."""
    out = apply_map(IB_PORT_MAP, counters)
    out.update(apply_map(IB_HW_MAP, hw_counters))
    return out


def normalize_netdev(
    statistics: Mapping[str, int],
    carrier_changes: int | None,
    carrier_down_count: int | None = None,
) -> dict[str, MetricValue]:
    """Normalized metrics from sysfs ``statistics/*`` and the carrier counters."""
    merged = dict(statistics)
    if carrier_changes is not None:
        merged["carrier_changes"] = carrier_changes
    if carrier_down_count is not None:
        merged["carrier_down_count"] = carrier_down_count
    return apply_map(NETDEV_MAP, merged)


def pfc_priorities_from_names(counters: Mapping[str, int]) -> tuple[int, ...] | None:
    """PFC-enabled priorities as told by which mlx5 per-priority pause names exist.

    mlx5 lists ``rx_prio{p}_pause*``/``tx_prio{p}_pause*`` only for priorities with PFC on,
    while ``rx_prio{p}_bytes`` exists for all eight: with the latter present and no pause
    names, no priority is lossless. Without either, nothing can be said (None).
    """
    names = (
        "rx_prio{p}_pause",
        "tx_prio{p}_pause",
        "rx_prio{p}_pause_duration",
        "tx_prio{p}_pause_duration",
        "rx_prio{p}_pause_transition",
    )
    enabled = tuple(p for p in PRIORITIES if any(n.format(p=p) in counters for n in names))
    if enabled:
        return enabled
    if any(f"rx_prio{p}_bytes" in counters for p in PRIORITIES):
        return ()
    return None


def saturated_ib_counters(counters: Mapping[str, int]) -> list[str]:
    """Legacy (non-extended) IB counters stuck at their maximum value, e.g. 2**32-1."""
    return sorted(
        name for name, width in IB_LEGACY_WIDTH.items() if counters.get(name) == (1 << width) - 1
    )


def _driver_key(driver: str | None) -> str | None:
    return driver.strip().lower() if driver else None
