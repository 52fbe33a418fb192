"""Is this delta believable: the one judgement of a counter's reading (DESIGN.md §4).

A delta that cannot be (bytes beyond the link's speed, packets beyond what those bytes
allow, pause time beyond the interval, events beyond ``events_max_per_s``, a counter
jumping to all-ones) is a glitch, treated like a reset: a gap, never a rate, an event
count or a spike in the history's max tiers. An all-ones read is looked at again on the
next tick: back, it was a glitch; still there, the counter is saturated (legacy 32-bit
InfiniBand counters stop at their maximum). The rate engine (fabtop/core/rates.py) asks
:func:`judge` of every counter whose reading it doubts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectors.normalize import FEEDS, Feed
from collectors.numbers import ALL_ONES
from collectors.samples import (
    LinkSample,
    MetricValue,
)
from collectors.vocabulary import (
    BYTES,
    EVENTS,
    FRAMES,
    MICROSECONDS,
    PACKETS,
    Metric,
)

# Legacy InfiniBand PMA counters (sysfs ports/N/counters; 4- to 32-bit, they stop at
# their maximum) and the normalized metric each feeds (DESIGN.md §3), with the 64-bit
# counters_ext name that the parser prefers when the port has it.
IB_SATURABLE: dict[str, tuple[Metric, str | None]] = {
    "port_rcv_data": (Metric.RX_BYTES, "port_rcv_data_64"),
    "port_xmit_data": (Metric.TX_BYTES, "port_xmit_data_64"),
    "port_rcv_packets": (Metric.RX_PACKETS, "port_rcv_packets_64"),
    "port_xmit_packets": (Metric.TX_PACKETS, "port_xmit_packets_64"),
    "port_xmit_wait": (Metric.XMIT_WAIT, None),
    "port_xmit_discards": (Metric.RX_DISCARDS, None),
    "port_rcv_errors": (Metric.RX_DISCARDS, None),
    "symbol_error": (Metric.RX_PHY_ERRORS, None),
    "port_rcv_remote_physical_errors": (Metric.RX_PHY_ERRORS, None),
    "link_downed": (Metric.LINK_DOWN_EVENTS, None),
}

# --- glitches -----------------------------------------------------------------------
# A read of a NIC that is resetting or has fallen off the bus returns all-ones; drivers
# have bugs. Such a delta is judged against what the link can do and costs one gap.

# The probe stamps a frame when its tick starts and reads each section within the tools'
# timeout (2 s by default; ``timeout -k 1`` kills a hung one a second later), so one
# counter's two reads can lie this much further apart than the two frames' stamps.
READ_SKEW_S = 3.0
# Headroom on every bound: what fails one is off by orders of magnitude (a 64-bit all-ones
# read is 10^8 times a 400G link's bytes per second), never by rounding or framing.
GLITCH_MARGIN = 1.5
# The smallest packet a physical port counts: Ethernet 60 bytes (64 with the FCS that
# netdev counters leave out), InfiniBand 26 (LRH + BTH + ICRC + VCRC); below both.
MIN_PACKET_BYTES = 20.0
# Packets and bytes are separate reads of one dump (sysfs files, milliseconds apart):
# packets counted between the two reads are no impossibility. A million is about 7 ms of
# minimum-size frames at 100 Gb/s; a glitched packet counter is off by billions.
PACKETS_READ_SLACK = 1_000_000

# Events that each ride on a packet (a NAK, a timeout's retransmission): as many as
# packets at most, bounded like them.
PER_PACKET_EVENTS = frozenset({Metric.PACKET_SEQ_ERR, Metric.LOCAL_ACK_TIMEOUT_ERR})


def bound_kind(m: Metric) -> int:
    """What bounds a counter's delta: 1 bytes (the line rate), 2 packets or frames (the line
    rate in minimum-size packets), 3 microseconds (the interval itself), 4 other events
    (a link going down, a module overheating, the NIC's stall watchdog: the threshold
    ``events_max_per_s``), 0 nothing (InfiniBand's transmit-wait ticks, whose length the
    port chooses: only the all-ones test applies)."""
    if m.unit == BYTES:
        return 1
    if m.unit in (PACKETS, FRAMES) or m in PER_PACKET_EVENTS:
        return 2
    if m.unit == MICROSECONDS:
        return 3
    return 4 if m.unit == EVENTS else 0


_INF = math.inf


FEEDS_OF = FEEDS  # which raw names feed which metric: collectors.normalize, derived once
NO_FEEDS: dict[str, tuple[Feed, ...]] = {}
NONE: frozenset[str] = frozenset()


def is_ones(v: MetricValue | None) -> bool:
    """True when ``v`` (or one of its priorities) reads all-ones."""
    if isinstance(v, int):
        return v in ALL_ONES
    if isinstance(v, dict):
        return not ALL_ONES.isdisjoint(v.values())
    return False


@dataclass(slots=True)
class Held:
    """A normalized counter whose last reading was ignored: the reading before it stands."""

    value: MetricValue
    extra_s: float  # seconds from that reading to the baseline frame
    pending: bool  # an all-ones read: a glitch if the next one is back, saturated if not


def line_bytes_per_s(cur: LinkSample, prev: LinkSample) -> float | None:
    """A physical port's line rate in bytes per second, when it reports its speed.

    Virtual links (veth, bridges, tunnels) report a nominal speed they routinely exceed.
    A speed that changed between the frames (renegotiation) counts at the higher one.
    """
    if not cur.physical:
        return None
    best = 0.0
    for g in (cur.rate_gbps, prev.rate_gbps):
        if g is not None and g > best:
            best = g
    return best * 1e9 / 8.0 if best > 0 else None


Limits = tuple[float, float, float, float, float]


def bounds(line: float | None, span_s: float, events_per_s: float) -> Limits:
    """The largest believable delta over ``span_s`` for each bound kind (see bound_kind)."""
    s = (span_s + READ_SKEW_S) * GLITCH_MARGIN
    if line is None:
        return _INF, _INF, _INF, s * 1e6, s * events_per_s
    return _INF, line * s, line * s / MIN_PACKET_BYTES, s * 1e6, s * events_per_s


def stuck_legacy(cur: LinkSample, prev: LinkSample) -> list[str]:
    """Legacy IB counters at their maximum in this read and the one before (DESIGN.md §4).

    One tick of look-ahead: a first read at the maximum may be a glitch gone by the next
    tick; a counter that reached its maximum stays there.
    """
    out: list[str] = []
    for raw in cur.saturated:
        for source, counters in cur.counters.items():
            v = counters.get(raw)
            if v is not None:
                if prev.counters.get(source, {}).get(raw) == v:
                    out.append(raw)
                break
    return out


def switched_feeds(cur: LinkSample, prev: LinkSample) -> frozenset[str]:
    """Normalized metrics whose raw counters came or went between the two reads.

    A tool that timed out this tick (or came back) moves a metric to another source
    (``rx_bytes_phy`` from ethtool, ``statistics/rx_bytes`` from sysfs): two different
    counters, so their difference is no rate. Those metrics start a new baseline.
    """
    out: set[str] = set()
    driver = cur.driver.strip().lower() if cur.driver else None
    for source in cur.counters.keys() | prev.counters.keys():
        now, before = cur.counters.get(source, {}), prev.counters.get(source, {})
        if len(now) == len(before) and now.keys() == before.keys():
            continue
        feeds = FEEDS_OF.get(source, {})
        for raw in now.keys() ^ before.keys():
            for metric, drivers in feeds.get(raw, ()):
                if drivers is None or driver in drivers:
                    out.add(metric)
    return frozenset(out)


def ones_feeds(
    cur: LinkSample, reads: list[tuple[str, str, bool]]
) -> tuple[frozenset[str], frozenset[str]]:
    """Normalized metrics fed by raw counters reading all-ones: (jumped there now, stuck there)."""
    jumped: set[str] = set()
    stuck: set[str] = set()
    driver = cur.driver.strip().lower() if cur.driver else None
    for source, name, was in reads:
        feeds = FEEDS_OF.get(source, {}).get(name)
        if not feeds:
            continue
        legacy = IB_SATURABLE.get(name)
        if legacy is not None and legacy[1] is not None and legacy[1] in cur.counters[source]:
            continue  # the metric is read from the 64-bit counter
        for metric, drivers in feeds:
            if drivers is None or driver in drivers:
                (stuck if was else jumped).add(metric)
    return frozenset(jumped), frozenset(stuck)


# How the reading of one normalized counter is taken this tick.
RATE, STUCK, PENDING, GLITCH, SHIFT = range(5)


def judge(
    metric: MetricValue,
    last: MetricValue | None,
    held: Held | None,
    top: int,
    limit: float,
    jumped: bool,
    stuck: bool,
) -> int:
    """The verdict on a suspicious delta (``top``: the largest, per priority, of this tick)."""
    ones_now, ones_before = is_ones(metric), is_ones(last)
    jumped = jumped or (ones_now and not ones_before)
    stuck = stuck or (ones_now and ones_before)
    if held is not None and held.pending:
        # the look-ahead: an all-ones read that stayed is a counter at its maximum
        if stuck or jumped:
            return STUCK
        return RATE if top <= limit else SHIFT
    if stuck and top == 0:
        return STUCK
    if jumped and top > 0:
        return PENDING
    if top > limit:
        # still beyond belief against the reading before a glitch: the level moved
        return SHIFT if held is not None else GLITCH
    return RATE
