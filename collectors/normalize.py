"""Map raw counters to fabtop's normalized vocabulary (DESIGN.md §3), one table per source.

The tables are keyed by :class:`collectors.vocabulary.Metric` members; every string in
them is a raw name exactly as the driver reports it, some of which (netdev's
``rx_bytes``) happen to spell a normalized name.

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

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from collectors.numbers import U64_MAX
from collectors.samples import MetricValue
from collectors.vocabulary import Metric

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
ETHTOOL_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.RX_BYTES: (
        _s("rx_bytes_phy"),
        _s("port.rx_bytes"),  # i40e
        _s("rx_bytes.nic"),  # ice
        _s("rx_bytes", drivers=_BNXT),  # bnxt_en: the un-bracketed one is the port's
    ),
    Metric.TX_BYTES: (
        _s("tx_bytes_phy"),
        _s("port.tx_bytes"),
        _s("tx_bytes.nic"),
        _s("tx_bytes", drivers=_BNXT),
    ),
    Metric.RX_PACKETS: (
        _s("rx_packets_phy"),
        _s("port.rx_unicast", "port.rx_multicast", "port.rx_broadcast"),
        _s("rx_unicast.nic", "rx_multicast.nic", "rx_broadcast.nic"),
    ),
    Metric.TX_PACKETS: (
        _s("tx_packets_phy"),
        _s("port.tx_unicast", "port.tx_multicast", "port.tx_broadcast"),
        _s("tx_unicast.nic", "tx_multicast.nic", "tx_broadcast.nic"),
    ),
    Metric.RDMA_RX_BYTES: (_s("rx_vport_rdma_unicast_bytes"),),  # en_stats.c vport group
    Metric.RDMA_TX_BYTES: (_s("tx_vport_rdma_unicast_bytes"),),
    Metric.RX_PAUSE: (
        _s("rx_prio{p}_pause"),  # en_stats.c; only PFC-enabled priorities
        _s("port.rx_priority_{p}_xoff_rx"),  # i40e (newer)
        _s("port.rx_priority_{p}_xoff"),  # i40e (older)
        _s("rx_priority_{p}_xoff.nic"),  # ice
        _s("rx_pfc_ena_frames_pri{p}"),  # bnxt_en
    ),
    Metric.TX_PAUSE: (
        _s("tx_prio{p}_pause"),
        _s("port.tx_priority_{p}_xoff_tx"),
        _s("port.tx_priority_{p}_xoff"),
        _s("tx_priority_{p}_xoff.nic"),
        _s("tx_pfc_ena_frames_pri{p}"),
    ),
    Metric.RX_PAUSE_US: (_s("rx_prio{p}_pause_duration"),),  # en_stats.c, microseconds
    Metric.TX_PAUSE_US: (_s("tx_prio{p}_pause_duration"),),
    Metric.RX_PAUSE_GLOBAL: (
        _s("rx_pause_ctrl_phy"),  # en_stats.c pport_802_3
        _s("port.link_xoff_rx"),
        _s("link_xoff_rx.nic"),
        _s("rx_pause_frames", drivers=_BNXT),
        _s("rx_flow_control_xoff"),  # igb
    ),
    Metric.TX_PAUSE_GLOBAL: (
        _s("tx_pause_ctrl_phy"),
        _s("port.link_xoff_tx"),
        _s("link_xoff_tx.nic"),
        _s("tx_pause_frames", drivers=_BNXT),
        _s("tx_flow_control_xoff"),
    ),
    Metric.RX_DISCARDS: (
        _s("rx_discards_phy"),
        _s("port.rx_dropped"),
        _s("rx_dropped.nic"),
    ),
    Metric.RX_DISCARDS_PRIO: (_s("rx_prio{p}_discards"),),
    Metric.RX_OUT_OF_BUFFER: (_s("rx_out_of_buffer"),),
    Metric.RX_PHY_ERRORS: (
        _s("rx_crc_errors_phy", "rx_symbol_err_phy"),  # en_stats.c pport_802_3
        _s("port.rx_crc_errors"),
        _s("rx_crc_errors.nic"),
        _s("rx_fcs_err_frames", drivers=_BNXT),
    ),
    Metric.LINK_DOWN_EVENTS: (_s("link_down_events_phy"),),  # en_stats.c phy group
    # en_stats.c pport_phy_statistical_stats_desc (devices with the PPCNT statistical group;
    # torvalds/linux 01dd74246c75: rx_pcs_symbol_err_phy, rx_corrected_bits_phy)
    Metric.PHY_CORRECTED_BITS: (_s("rx_corrected_bits_phy"),),
    # The bits the port received (PPCNT phy_received_bits), the BER's denominator: named in
    # mlx5's counters.rst (Documentation/networking/device_drivers/ethernet/mellanox/mlx5,
    # "the corrected bit rate is rx_corrected_bits_phy divided by rx_bits_phy"), but the
    # upstream en_stats.c above does not list it; the patch "net/mlx5e: Expose physical
    # received bits counters to ethtool" (linux-rdma, 2026-01-06/12, RFC) adds it to that
    # table; ionic reports the same name (kernel commit cb683ff6ee07, "ionic: Report
    # rx_bits_phy stat to ethtool"). No capture has it: without it the BER divides by the
    # negotiated rate x time (fabtop/core/ber.py).
    Metric.PHY_RECEIVED_BITS: (_s("rx_bits_phy"),),
    # en_stats.c pport_per_tc_congest_prio_stats_desc: "rx_prio%d_marked" (ecn_marked_tc)
    Metric.ECN_MARKED: (_s("rx_prio{p}_marked", rollup=True),),
    Metric.ECN_MARKED_PRIO: (_s("rx_prio{p}_marked"),),
    Metric.RX_BUF_DISCARD: (_s("rx_prio{p}_buf_discard"),),  # en_stats.c per_tc_prio
    Metric.RX_CONG_DISCARD: (_s("rx_prio{p}_cong_discard"),),  # en_stats.c per_tc_congest_prio
    Metric.MODULE_HIGH_TEMP_EVENTS: (_s("module_high_temp"),),  # en_stats.c pme_error
    Metric.TX_PAUSE_STORM_WARNING_EVENTS: (_s("tx_pause_storm_warning_events"),),  # pfc_stall
    Metric.TX_PAUSE_STORM_ERROR_EVENTS: (_s("tx_pause_storm_error_events"),),
    Metric.RX_BYTES_PRIO: (_s("rx_prio{p}_bytes"),),
    Metric.TX_BYTES_PRIO: (_s("tx_prio{p}_bytes"),),
}

# InfiniBand port counters (counters/ and counters_ext/ merged). port_*_data count
# 4-octet words (IBA PortCounters; drivers/infiniband/core/sysfs.c); *_64 are the
# extended 64-bit set and are preferred when present.
IB_PORT_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.RX_BYTES: (_s("port_rcv_data_64", scale=4), _s("port_rcv_data", scale=4)),
    Metric.TX_BYTES: (_s("port_xmit_data_64", scale=4), _s("port_xmit_data", scale=4)),
    Metric.RX_PACKETS: (_s("port_rcv_packets_64"), _s("port_rcv_packets")),
    Metric.TX_PACKETS: (_s("port_xmit_packets_64"), _s("port_xmit_packets")),
    Metric.XMIT_WAIT: (_s("port_xmit_wait"),),
    Metric.RX_DISCARDS: (_s("port_xmit_discards", "port_rcv_errors"),),  # as DESIGN.md §3
    Metric.RX_PHY_ERRORS: (_s("symbol_error", "port_rcv_remote_physical_errors"),),
    Metric.LINK_DOWN_EVENTS: (_s("link_downed"),),
    Metric.LINK_ERROR_RECOVERIES: (_s("link_error_recovery"),),  # IBA PortCounters
    Metric.LINK_INTEGRITY_ERRORS: (_s("local_link_integrity_errors"),),
}

# ``ethtool -I --show-fec`` (collectors/parsers/fec.py: the counters of LinkSample.counters
# "fec", read on optics rounds): the FEC's blocks, totals over the lanes.
FEC_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.FEC_CORRECTED_BLOCKS: (_s("corrected_blocks"),),
    Metric.FEC_UNCORRECTABLE_BLOCKS: (_s("uncorrectable_blocks"),),
}
# ``mlxlink -c`` (collectors/parsers/mlxlink.py: LinkSample.counters "mlxlink", opt-in, read
# on optics rounds, one device a round): the corrected bits are the sum of its per-lane raw
# physical errors (PPCNT's phy_raw_errors_laneN: "when FEC is enabled, corrected errors";
# the capture's four lanes sum to its Raw Physical BER x rate x time since the clear). The
# link's PHY_CORRECTED_BITS only where ethtool -S has none (older firmware without the
# statistical group), at mlxlink's read time (LinkSample.mlxlink_read_ns).
MLXLINK_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.PHY_CORRECTED_BITS: (_s(*(f"raw_physical_errors_lane{i}" for i in range(16))),),
}
# The normalized metrics read at slow cadence and carried between reads (the tables of
# sources read on optics rounds): the rate engine makes their rates between two fresh
# reads (LinkSample.slow_read_ns), never per frame (0, then a round's delta over one frame).
SLOW_METRICS: frozenset[Metric] = frozenset(FEC_MAP)

# RDMA hw_counters/ (mlx5: drivers/infiniband/hw/mlx5/counters.c; capture in
# ../shared/fixtures/sysfs/prometheus_procfs for out_of_buffer .. roce_adp_retrans).
IB_HW_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.RX_OUT_OF_BUFFER: (_s("out_of_buffer"),),
    Metric.ECN_MARKED: (_s("np_ecn_marked_roce_packets"),),
    Metric.CNP_SENT: (_s("np_cnp_sent"),),
    Metric.CNP_HANDLED: (_s("rp_cnp_handled"),),
    Metric.OUT_OF_SEQUENCE: (_s("out_of_sequence"),),
    Metric.PACKET_SEQ_ERR: (_s("packet_seq_err"),),
    Metric.LOCAL_ACK_TIMEOUT_ERR: (_s("local_ack_timeout_err"),),
    Metric.RETRANSMITS: (_s("roce_adp_retrans"),),
}


def _names(table: Mapping[Metric, tuple[Src, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for srcs in table.values() for src in srcs for n in src.names))


# The RDMA port files read on every tick: those a metric reads (no rule reads raw names);
# the rest only on slow ticks (probe arguments ib_hw_tick, ib_port_tick). On real hardware
# each hw_counters read is a firmware command and each counters/ read a PMA query; the
# slow ones (a ConnectX port's unicast/multicast packets, VL15_dropped, the constraint,
# relay, integrity and overrun errors) are kept apart, with no per-frame rate.
IB_HW_TICK: tuple[str, ...] = _names(IB_HW_MAP)
IB_PORT_TICK: tuple[str, ...] = _names(IB_PORT_MAP)

# /sys/class/net/<dev>/statistics/* plus carrier counters.
NETDEV_MAP: Mapping[Metric, tuple[Src, ...]] = {
    Metric.RX_BYTES: (_s("rx_bytes"),),
    Metric.TX_BYTES: (_s("tx_bytes"),),
    Metric.RX_PACKETS: (_s("rx_packets"),),
    Metric.TX_PACKETS: (_s("tx_packets"),),
    Metric.RX_DISCARDS: (_s("rx_dropped"),),
    Metric.RX_PHY_ERRORS: (_s("rx_errors"),),
    # carrier_down_count counts downs only; carrier_changes counts downs and ups
    Metric.LINK_DOWN_EVENTS: (_s("carrier_down_count"), _s("carrier_changes")),
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


# (normalized metric, the drivers its source is read for; None: any driver)
Feed = tuple[str, frozenset[str] | None]


def _feeds_index() -> dict[str, dict[str, tuple[Feed, ...]]]:
    """Per counter source, the normalized metrics each raw name feeds (the tables above)."""
    tables = {
        "ethtool": ETHTOOL_MAP,
        "ib_port": IB_PORT_MAP,
        "ib_hw": IB_HW_MAP,
        "netdev": NETDEV_MAP,
        "fec": FEC_MAP,
        "mlxlink": MLXLINK_MAP,
    }
    out: dict[str, dict[str, tuple[Feed, ...]]] = {}
    for source, table in tables.items():
        feeds: dict[str, list[Feed]] = {}
        for metric, srcs in table.items():
            for src in srcs:
                names = [n for per in src.per_prio for n in per] if src.per_prio else src.names
                for name in names:
                    feeds.setdefault(name, []).append((metric, src.drivers))
        out[source] = {name: tuple(fs) for name, fs in feeds.items()}
    return out


# Which raw counter of which source feeds which metric (for which drivers), derived once
# from the tables: the rate engine tells by it a counter that moved source or glitched.
FEEDS = _feeds_index()


def apply_map(
    table: Mapping[Metric, tuple[Src, ...]], counters: Mapping[str, int], driver: str | None = None
) -> dict[str, MetricValue]:
    """Evaluate one mapping table over one source's raw counters.

    The first source with a name present decides: when its value is beyond 64 bits the
    metric is absent this tick, not read from the next source (switching sources for one
    tick would make a jump between two different counters look like traffic).

    Which source decides depends on which names are present, not on their values: that
    choice is made once per set of names (a tick of the same driver has the same names)
    and only the sums are made each tick.
    """
    return apply_plan(metric_plan(table, counters, driver), counters)


def metric_plan(
    table: Mapping[Metric, tuple[Src, ...]], names: Mapping[str, object], driver: str | None
) -> MetricPlan:
    """Which raw names make each metric of ``table`` for this set of names (apply_plan)."""
    if len(names) > _PLAN_NAMES_MAX:
        return _plan(table, names, driver)  # a key this long is not kept (memory)
    key = (id(table), driver, tuple(names))
    hit = _PLANS.get(key)
    if hit is None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        hit = _PLANS[key] = _plan(table, names, driver)
    return hit


def apply_plan(plan: MetricPlan, counters: Mapping[str, int]) -> dict[str, MetricValue]:
    """The metrics of ``plan`` made of ``counters`` (which have the names it was made for)."""
    out: dict[str, MetricValue] = {}
    for metric, names, scale, prios, rollup, one in plan:
        if prios is None:
            if one is not None:  # the usual step: one name, scale 1 (a str on a scalar step)
                v = counters[one]  # type: ignore[index]
            else:
                v = counters[names[0]] if len(names) == 1 else sum([counters[n] for n in names])
                if scale != 1:
                    v *= scale
            if v <= U64_MAX:
                out[metric] = v
            continue
        per: dict[int, int] = {}
        if one is not None:  # (priority, name) pairs on a per-priority step
            for p, name in one:  # type: ignore[str-unpack]
                v = counters[name]
                if v <= U64_MAX:
                    per[p] = v  # type: ignore[index]
        else:
            for p, pnames in prios:
                v = counters[pnames[0]] if len(pnames) == 1 else sum([counters[n] for n in pnames])
                if scale != 1:
                    v *= scale
                if v <= U64_MAX:
                    per[p] = v
        if per:
            if rollup:
                total = sum(per.values())
                if total <= U64_MAX:
                    out[metric] = total
            else:
                out[metric] = per
    return out


def without_unknown(
    plans: Sequence[MetricPlan], lost: Sequence[AbstractSet[str]]
) -> tuple[MetricPlan, ...]:
    """``plans`` (lowest precedence first, each made for its source's names read *and*
    not read) without the metrics that are unknown: a step of plan ``i`` that reads a name
    in ``lost[i]`` would give the sum of the other parts (symbol_error lost, and
    rx_phy_errors would read port_rcv_remote_physical_errors alone). The metric goes from
    that plan and every plan below it (no other source stands in for one tick: that
    would be a jump between two counters); a plan above it still gives it."""
    out = list(plans)
    unknown: set[str] = set()
    for i in reversed(range(len(out))):
        gone = lost[i]
        if gone:
            unknown.update(step[0] for step in out[i] if not gone.isdisjoint(step_names(step)))
        if unknown:
            out[i] = tuple(step for step in out[i] if step[0] not in unknown)
    return tuple(out)


def step_names(step: Step) -> tuple[str, ...]:
    """The raw names one step of a plan reads."""
    _, names, _, prios, _, _ = step
    return names if prios is None else tuple(n for _, pnames in prios for n in pnames)


# (metric, present names, scale, per priority (priority, present names) or None, rollup,
# and where every sum is of one name at scale 1: that name, or per priority (priority, name))
Step = tuple[
    Metric,
    tuple[str, ...],
    int,
    tuple[tuple[int, tuple[str, ...]], ...] | None,
    bool,
    str | tuple[tuple[int, str], ...] | None,
]
MetricPlan = tuple[Step, ...]
_PLANS: dict[tuple[int, str | None, tuple[str, ...]], MetricPlan] = {}
# Distinct name sets (drivers x firmware x PFC settings), each key at most _PLAN_NAMES_MAX
# names: at most 256 x 20,000 references kept, whatever a host sends.
_PLANS_MAX = 256
_PLAN_NAMES_MAX = 20_000


def _plan(
    table: Mapping[Metric, tuple[Src, ...]], counters: Mapping[str, object], driver: str | None
) -> MetricPlan:
    steps: list[Step] = []
    for metric, sources in table.items():
        for src in sources:
            if src.drivers is not None and driver not in src.drivers:
                continue
            if not src.per_prio:
                present = tuple(n for n in src.names if n in counters)
                if present:
                    one = present[0] if len(present) == 1 and src.scale == 1 else None
                    steps.append((metric, present, src.scale, None, False, one))
                    break
                continue
            prios = tuple(
                (p, tuple(n for n in names if n in counters))
                for p, names in enumerate(src.per_prio)
            )
            prios = tuple((p, ns) for p, ns in prios if ns)
            if prios:
                each = None
                if src.scale == 1 and all(len(ns) == 1 for _, ns in prios):
                    each = tuple((p, ns[0]) for p, ns in prios)
                steps.append((metric, (), src.scale, prios, src.rollup, each))
                break
    return tuple(steps)


def normalize_ethtool(counters: Mapping[str, int], driver: str | None) -> dict[str, MetricValue]:
    """Normalized metrics from ``ethtool -S`` counters of a netdev with this driver."""
    return apply_map(ETHTOOL_MAP, counters, _driver_key(driver))


def ethtool_plan(names: Mapping[str, object], driver: str | None) -> MetricPlan:
    """normalize_ethtool's plan for counters of these names (apply_plan makes the metrics)."""
    return metric_plan(ETHTOOL_MAP, names, _driver_key(driver))


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
    merged = netdev_counters(statistics, carrier_changes, carrier_down_count)
    return apply_map(NETDEV_MAP, merged)


def netdev_counters(
    statistics: Mapping[str, int], carrier_changes: int | None, carrier_down_count: int | None
) -> dict[str, int]:
    """What normalize_netdev reads: the statistics and the carrier counts."""
    merged = dict(statistics)
    if carrier_changes is not None:
        merged["carrier_changes"] = carrier_changes
    if carrier_down_count is not None:
        merged["carrier_down_count"] = carrier_down_count
    return merged


# The mlx5 names that exist only for a PFC-enabled priority, per priority (built once).
_PFC_NAMES: tuple[tuple[str, ...], ...] = tuple(
    tuple(
        n.format(p=p)
        for n in (
            "rx_prio{p}_pause",
            "tx_prio{p}_pause",
            "rx_prio{p}_pause_duration",
            "tx_prio{p}_pause_duration",
            "rx_prio{p}_pause_transition",
        )
    )
    for p in PRIORITIES
)
_PRIO_BYTES: tuple[str, ...] = tuple(f"rx_prio{p}_bytes" for p in PRIORITIES)


def pfc_priorities_from_names(counters: Mapping[str, int]) -> tuple[int, ...] | None:
    """PFC-enabled priorities as told by which mlx5 per-priority pause names exist.

    mlx5 lists ``rx_prio{p}_pause*``/``tx_prio{p}_pause*`` only for priorities with PFC on,
    while ``rx_prio{p}_bytes`` exists for all eight: with the latter present and no pause
    names, no priority is lossless. Without either, nothing can be said (None).
    """
    enabled = tuple(p for p in PRIORITIES if any(n in counters for n in _PFC_NAMES[p]))
    if enabled:
        return enabled
    if any(n in counters for n in _PRIO_BYTES):
        return ()
    return None


def saturated_ib_counters(counters: Mapping[str, int]) -> list[str]:
    """Legacy (non-extended) IB counters stuck at their maximum value, e.g. 2**32-1."""
    return sorted(
        name for name, width in IB_LEGACY_WIDTH.items() if counters.get(name) == (1 << width) - 1
    )


def _driver_key(driver: str | None) -> str | None:
    return driver.strip().lower() if driver else None
