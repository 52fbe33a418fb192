"""fabtop's normalized vocabulary (DESIGN.md §3): every metric declared once, with its unit.

The parsers map raw driver counters onto these names (:mod:`collectors.normalize`), the
core's rate engine derives ``<name>_per_s`` and the derived rates below, and the exporter,
the diff, the rules and the views all name a metric through its member here, never by a
string of their own. Renaming a member breaks every one of them at once, at import time.

Every normalized link metric is a cumulative counter (gauges such as temperature, speed
and MTU are fields of :class:`collectors.samples.LinkSample`); ``per_priority`` ones hold
``{priority: value}`` for the priorities the driver reports.
"""

from __future__ import annotations

from enum import StrEnum

# Significance, like reading ``pfcstat -c`` and ``ethtool -S`` after a test: errors and
# losses first, then pauses and congestion signals, then the traffic itself.
CATEGORIES: tuple[str, ...] = ("errors", "discards", "pauses", "congestion", "traffic")

# Units of the cumulative values (what one count of the counter is).
BYTES, PACKETS, FRAMES, MICROSECONDS, EVENTS, TICKS, BLOCKS, BITS = (
    "bytes",
    "packets",
    "frames",
    "microseconds",
    "events",
    "ticks",
    "blocks",
    "bits",
)

# Prometheus wants base units in names: unit -> (base unit word, scale to it).
BASE_UNITS: dict[str, tuple[str, float]] = {MICROSECONDS: ("seconds", 1e-6)}


class Metric(StrEnum):
    """A normalized per-link counter; the member's value is its name everywhere."""

    unit: str
    per_priority: bool
    category: str
    help: str
    per_s: str  # the name of this counter's per-second rate (what the rate engine writes)

    def __new__(cls, name: str, unit: str, per_priority: bool, category: str, help_: str) -> Metric:
        obj = str.__new__(cls, name)
        obj._value_ = name
        obj.per_s = f"{name}_per_s"  # an attribute, not a property: rules read it per link
        obj.unit = unit
        obj.per_priority = per_priority
        obj.category = category
        obj.help = help_
        return obj

    # errors
    RX_PHY_ERRORS = ("rx_phy_errors", PACKETS, False, "errors", "CRC and symbol errors")
    LINK_DOWN_EVENTS = ("link_down_events", EVENTS, False, "errors", "Times the link went down")
    MODULE_HIGH_TEMP_EVENTS = (
        "module_high_temp_events",
        EVENTS,
        False,
        "errors",
        "Module high-temperature events",
    )
    TX_PAUSE_STORM_ERROR_EVENTS = (
        "tx_pause_storm_error_events",
        EVENTS,
        False,
        "errors",
        "NIC stall watchdog: critical watermark crossed (flow control disabled)",
    )
    TX_PAUSE_STORM_WARNING_EVENTS = (
        "tx_pause_storm_warning_events",
        EVENTS,
        False,
        "errors",
        "NIC stall watchdog: minor watermark crossed",
    )
    # the cable's own health (issue 33): what the FEC corrected, what it could not, and the
    # physical layer's recoveries; read at slow cadence
    FEC_CORRECTED_BLOCKS = (
        "fec_corrected_blocks",
        BLOCKS,
        False,
        "errors",
        "FEC blocks with errors the FEC corrected",
    )
    FEC_UNCORRECTABLE_BLOCKS = (
        "fec_uncorrectable_blocks",
        BLOCKS,
        False,
        "errors",
        "FEC blocks the FEC could not correct",
    )
    PHY_CORRECTED_BITS = (
        "phy_corrected_bits",
        BITS,
        False,
        "errors",
        "Bits the physical layer corrected (pre-FEC bit errors)",
    )
    LINK_ERROR_RECOVERIES = (
        "link_error_recoveries",
        EVENTS,
        False,
        "errors",
        "Link error recoveries (InfiniBand link_error_recovery)",
    )
    LINK_INTEGRITY_ERRORS = (
        "link_integrity_errors",
        EVENTS,
        False,
        "errors",
        "Local link integrity errors (InfiniBand local_link_integrity_errors)",
    )
    PACKET_SEQ_ERR = ("packet_seq_err", EVENTS, False, "errors", "RoCE packet sequence errors")
    LOCAL_ACK_TIMEOUT_ERR = (
        "local_ack_timeout_err",
        EVENTS,
        False,
        "errors",
        "RoCE local ACK timeouts",
    )
    OUT_OF_SEQUENCE = ("out_of_sequence", PACKETS, False, "errors", "RoCE out-of-sequence packets")
    RETRANSMITS = ("retransmits", PACKETS, False, "errors", "RoCE adaptive retransmissions")
    # discards
    RX_DISCARDS = ("rx_discards", PACKETS, False, "discards", "Packets dropped on receive")
    RX_DISCARDS_PRIO = (
        "rx_discards_prio",
        PACKETS,
        True,
        "discards",
        "Packets dropped on receive, per priority",
    )
    RX_OUT_OF_BUFFER = (
        "rx_out_of_buffer",
        PACKETS,
        False,
        "discards",
        "Drops for lack of receive buffers",
    )
    RX_BUF_DISCARD = (
        "rx_buf_discard",
        PACKETS,
        True,
        "discards",
        "Drops for lack of port buffer, per priority",
    )
    RX_CONG_DISCARD = (
        "rx_cong_discard",
        PACKETS,
        True,
        "discards",
        "Congestion drops, per priority",
    )
    # pauses
    RX_PAUSE = ("rx_pause", FRAMES, True, "pauses", "PFC pause frames received, per priority")
    TX_PAUSE = ("tx_pause", FRAMES, True, "pauses", "PFC pause frames sent, per priority")
    RX_PAUSE_GLOBAL = ("rx_pause_global", FRAMES, False, "pauses", "Global pause frames received")
    TX_PAUSE_GLOBAL = ("tx_pause_global", FRAMES, False, "pauses", "Global pause frames sent")
    RX_PAUSE_US = (
        "rx_pause_us",
        MICROSECONDS,
        True,
        "pauses",
        "Time paused by the peer, per priority",
    )
    TX_PAUSE_US = (
        "tx_pause_us",
        MICROSECONDS,
        True,
        "pauses",
        "Time the port paused its peer, per priority",
    )
    XMIT_WAIT = ("xmit_wait", TICKS, False, "pauses", "InfiniBand transmit wait (congestion)")
    # congestion
    ECN_MARKED = ("ecn_marked", PACKETS, False, "congestion", "ECN-marked packets received")
    ECN_MARKED_PRIO = (
        "ecn_marked_prio",
        PACKETS,
        True,
        "congestion",
        "ECN-marked packets, per priority",
    )
    CNP_SENT = ("cnp_sent", PACKETS, False, "congestion", "Congestion notification packets sent")
    CNP_HANDLED = (
        "cnp_handled",
        PACKETS,
        False,
        "congestion",
        "Congestion notification packets handled",
    )
    # traffic
    RX_BYTES = ("rx_bytes", BYTES, False, "traffic", "Bytes received on the port")
    TX_BYTES = ("tx_bytes", BYTES, False, "traffic", "Bytes sent on the port")
    RDMA_RX_BYTES = ("rdma_rx_bytes", BYTES, False, "traffic", "RDMA bytes received")
    RDMA_TX_BYTES = ("rdma_tx_bytes", BYTES, False, "traffic", "RDMA bytes sent")
    RX_BYTES_PRIO = ("rx_bytes_prio", BYTES, True, "traffic", "Bytes received, per priority")
    TX_BYTES_PRIO = ("tx_bytes_prio", BYTES, True, "traffic", "Bytes sent, per priority")
    RX_PACKETS = ("rx_packets", PACKETS, False, "traffic", "Packets received")
    TX_PACKETS = ("tx_packets", PACKETS, False, "traffic", "Packets sent")
    # what the pre-FEC BER divides by where the driver counts it (fabtop/core/ber.py)
    PHY_RECEIVED_BITS = (
        "phy_received_bits",
        BITS,
        False,
        "traffic",
        "Bits the physical layer received (the pre-FEC BER's denominator)",
    )


class Derived(StrEnum):
    """Per-link rates the rate engine derives from the counters above."""

    unit: str
    help: str

    def __new__(cls, name: str, unit: str, help_: str) -> Derived:
        obj = str.__new__(cls, name)
        obj._value_ = name
        obj.unit = unit
        obj.help = help_
        return obj

    RX_BPS = ("rx_bps", "bits/s", "Receive rate in bits per second")
    TX_BPS = ("tx_bps", "bits/s", "Transmit rate in bits per second")
    RX_PAUSE_TIME_RATIO = (
        "rx_pause_time_ratio",
        "ratio",
        "Share of the last interval the port was paused by its peer",
    )
    TX_PAUSE_TIME_RATIO = (
        "tx_pause_time_ratio",
        "ratio",
        "Share of the last interval the port paused its peer",
    )
    RDMA_SHARE = ("rdma_share", "ratio", "RDMA share of the bytes over the last interval")


class InferenceRate(StrEnum):
    """What the rate engine derives from an inference server's /metrics."""

    GENERATED_TOKENS_PER_S = "generated_tokens_per_s"
    PROMPT_TOKENS_PER_S = "prompt_tokens_per_s"
    TTFT_P50_S = "ttft_p50_s"
    TTFT_P99_S = "ttft_p99_s"
    ITL_P50_S = "itl_p50_s"
    ITL_P99_S = "itl_p99_s"


def by_category() -> tuple[tuple[str, tuple[Metric, ...]], ...]:
    """The metrics grouped by category, most significant category first."""
    return tuple((c, tuple(m for m in Metric if m.category == c)) for c in CATEGORIES)
