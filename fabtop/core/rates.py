"""Rate engine: per-second rates from two consecutive frames of one host (DESIGN.md §4).

Rates divide counter deltas by the *remote* time between frames (``clock_ns``),
never by when the bytes arrived, so SSH jitter does not show up as throughput
jitter. ``/proc/uptime`` never steps, so when the wall clock disagrees with it the
uptime delta is used instead. A counter that goes backwards is a reset: it gets a
new baseline and no rate, never a negative rate or a spike. A delta that cannot be
(bytes beyond the link's speed, packets beyond what those bytes allow, pause time beyond
the interval, a counter jumping to all-ones) is a glitch, treated like a reset: a gap,
never a rate, an event count or a spike in the history's max tiers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not, itemgetter
from typing import Any

from collectors.normalize import ETHTOOL_MAP, IB_HW_MAP, IB_PORT_MAP, NETDEV_MAP, Src
from collectors.numbers import ALL_ONES
from collectors.samples import (
    SLOW_SOURCES,
    HostSample,
    InferenceSample,
    LinkSample,
    MetricValue,
    RateValue,
)
from collectors.vocabulary import (
    BYTES,
    EVENTS,
    FRAMES,
    MICROSECONDS,
    PACKETS,
    Derived,
    InferenceRate,
    Metric,
)
from fabtop.core.quantile import histogram_quantile
from fabtop.core.thresholds import effective

# Wall clock and uptime may differ by rounding (uptime has 10 ms resolution) and by
# slewing; anything beyond this is a step (NTP, manual date) and must not become a spike.
CLOCK_STEP_TOLERANCE_S = 0.25
CLOCK_STEP_TOLERANCE_FRAC = 0.02

# Legacy InfiniBand PMA counters (sysfs ports/N/counters; 4- to 32-bit, they stop at
# their maximum) and the normalized metric each feeds (DESIGN.md §3), with the 64-bit
# counters_ext name that the parser prefers when the port has it.
_IB_SATURABLE: dict[str, tuple[Metric, str | None]] = {
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
_PER_PACKET_EVENTS = frozenset({Metric.PACKET_SEQ_ERR, Metric.LOCAL_ACK_TIMEOUT_ERR})


def _bound_kind(m: Metric) -> int:
    """What bounds a counter's delta: 1 bytes (the line rate), 2 packets or frames (the line
    rate in minimum-size packets), 3 microseconds (the interval itself), 4 other events
    (a link going down, a module overheating, the NIC's stall watchdog: the threshold
    ``events_max_per_s``), 0 nothing (InfiniBand's transmit-wait ticks, whose length the
    port chooses: only the all-ones test applies)."""
    if m.unit == BYTES:
        return 1
    if m.unit in (PACKETS, FRAMES) or m in _PER_PACKET_EVENTS:
        return 2
    if m.unit == MICROSECONDS:
        return 3
    return 4 if m.unit == EVENTS else 0


# Packet counters that must fit in the bytes of the same direction: (counter, its rate,
# the bytes' rate).
_PACKETS_OF_BYTES_RATES: tuple[tuple[str, str, str], ...] = (
    (Metric.RX_PACKETS, Metric.RX_PACKETS.per_s, Metric.RX_BYTES.per_s),
    (Metric.TX_PACKETS, Metric.TX_PACKETS.per_s, Metric.TX_BYTES.per_s),
)
_INF = math.inf


# (normalized metric, the drivers its source is read for; None: any driver)
Feed = tuple[str, frozenset[str] | None]


def _feeds_index() -> dict[str, dict[str, tuple[Feed, ...]]]:
    """Per counter source, the normalized metrics each raw name feeds (collectors.normalize)."""
    tables = {
        "ethtool": ETHTOOL_MAP,
        "ib_port": IB_PORT_MAP,
        "ib_hw": IB_HW_MAP,
        "netdev": NETDEV_MAP,
    }
    out: dict[str, dict[str, tuple[Feed, ...]]] = {}
    for source, table in tables.items():
        feeds: dict[str, list[Feed]] = {}
        for metric, srcs in table.items():
            for src in srcs:
                for name in _src_names(src):
                    feeds.setdefault(name, []).append((metric, src.drivers))
        out[source] = {name: tuple(fs) for name, fs in feeds.items()}
    return out


def _src_names(src: Src) -> tuple[str, ...]:
    if src.per_prio:
        return tuple(n for names in src.per_prio for n in names)
    return src.names


# Built once: only a tick with an all-ones read looks into it.
_FEEDS = _feeds_index()
_NONE: frozenset[str] = frozenset()


def _is_ones(v: MetricValue | None) -> bool:
    """True when ``v`` (or one of its priorities) reads all-ones."""
    if isinstance(v, int):
        return v in ALL_ONES
    if isinstance(v, dict):
        return not ALL_ONES.isdisjoint(v.values())
    return False


# The rate name of every counter, built once: the per-tick loop only looks it up.
_RATE_NAME: dict[str, str] = {m: m.per_s for m in Metric}
# ... and with its bound kind, for the per-tick loop's one lookup per counter.
_RATE_KIND: dict[str, tuple[str, int]] = {m: (m.per_s, _bound_kind(m)) for m in Metric}
# What _derive reads: byte rates (-> bits/s, the RDMA share), pause-duration rates (-> the
# share of the interval paused).
_RX_BYTES_RATE, _TX_BYTES_RATE = Metric.RX_BYTES.per_s, Metric.TX_BYTES.per_s
_RX_PAUSE_RATE, _TX_PAUSE_RATE = Metric.RX_PAUSE_US.per_s, Metric.TX_PAUSE_US.per_s
_RDMA_RX_RATE, _RDMA_TX_RATE = Metric.RDMA_RX_BYTES.per_s, Metric.RDMA_TX_BYTES.per_s
# ... and what it writes, as plain strings: a StrEnum key turns the rates dict (plain-string
# keys) into one of general keys, rebuilt on the spot and slower to read for every view.
_RX_BPS, _TX_BPS = Derived.RX_BPS.value, Derived.TX_BPS.value
_RX_PAUSED, _TX_PAUSED = Derived.RX_PAUSE_TIME_RATIO.value, Derived.TX_PAUSE_TIME_RATIO.value
_RDMA_SHARE = Derived.RDMA_SHARE.value

# Histogram names as servers expose them (llm_metrics/LLM_METRICS_NOTES.md); matched
# by suffix so a parser may keep or strip the "vllm:"/"sglang:" prefix.
TTFT_HISTOGRAMS: tuple[str, ...] = ("time_to_first_token_seconds",)
ITL_HISTOGRAMS: tuple[str, ...] = (
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",  # vLLM before V1
    "tgi_request_mean_time_per_token_duration",
)

INFERENCE_RATE_NAMES: tuple[str, ...] = tuple(InferenceRate)

Histogram = tuple[tuple[float, ...], tuple[float, ...], float, float]


# What raw-counter rates are made of when a view first asks: (counters now, before, 1/dt,
# raw names stuck at their maximum).
_RawInputs = tuple[dict[str, dict[str, int]], dict[str, dict[str, int]], float, list[str]]


@dataclass(slots=True)
class LinkRates:
    """Per-second rates of one link for one tick.

    Rates of the normalized metrics are made every tick; those of the raw counters (hundreds
    per mlx5 port) only when something reads ``raw_rates`` or ``reset`` (the link detail).
    """

    rates: dict[str, RateValue]  # normalized name + "_per_s", plus derived (rx_bps, ...)
    raw: dict[str, dict[str, float]] | None = None  # made on first use: see raw_rates
    gap: bool = False  # a normalized counter reset or glitched / the host restarted: a gap
    norm_reset: list[str] = field(default_factory=list)  # normalized names that reset
    saturated: list[str] = field(default_factory=list)  # raw names, then normalized names
    # Normalized counters whose reading this tick is ignored: a delta that cannot be, or an
    # all-ones read that the next tick tells apart (back: a glitch; stays: saturated).
    glitched: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)  # glitches known as such this tick
    raw_inputs: _RawInputs | None = None
    raw_reset: list[str] = field(default_factory=list)
    # Seconds the rates span: the time between the link's two reads (the fast probe stamps
    # each), else between the two frames. rate x span_s is the counter's change.
    span_s: float | None = None

    @property
    def raw_rates(self) -> dict[str, dict[str, float]]:
        """source -> raw counter name -> per second (made now if not yet)."""
        if self.raw is None:
            self.raw = _raw_rates(self)
        return self.raw

    @property
    def reset(self) -> list[str]:
        """Counters that went backwards: raw names, then normalized names."""
        self.raw_rates  # noqa: B018  (makes raw_reset)
        return [*self.raw_reset, *self.norm_reset]


@dataclass(slots=True)
class HostRates:
    """Everything the rate engine derived from one frame of one host."""

    host: str
    interval_s: float | None  # remote-time delta used; None when no rates this tick
    clock_stepped: bool
    links: dict[str, LinkRates]
    inference: dict[str, dict[str, float | None]]
    restarted: bool = False  # remote uptime went backwards: everything rebaselined
    cpu_throttle_per_s: float | None = None  # the host's CPU thermal throttle events
    glitches: list[str] = field(default_factory=list)  # one line per glitch confirmed now
    glitch_count: int = 0  # glitches confirmed on this host since the engine started
    # Set by the Pipeline: where the frame sits on the operator's time axis (unix seconds)
    # and how far the host's clock is ahead of the operator's (None: not measured).
    placed_s: float | None = None
    clock_offset_s: float | None = None


@dataclass(slots=True)
class _InferenceBase:
    # /metrics is polled on its own cadence and the last reading rides on later frames:
    # rates span the frames at which two *different* readings arrived.
    sample: InferenceSample
    clock_ns: int
    uptime_s: float
    rates: dict[str, float | None]


@dataclass(slots=True)
class _Held:
    """A normalized counter whose last reading was ignored: the reading before it stands."""

    value: MetricValue
    extra_s: float  # seconds from that reading to the baseline frame
    pending: bool  # an all-ones read: a glitch if the next one is back, saturated if not


@dataclass(slots=True)
class _Baseline:
    seq: int
    clock_ns: int
    uptime_s: float
    links: dict[str, LinkSample]
    inference: dict[str, _InferenceBase]
    cpu_throttle: int | None
    held: dict[str, dict[str, _Held]] = field(default_factory=dict)  # link id -> name -> held
    shapes: dict[str, _Shape] = field(default_factory=dict)  # link id -> what it read


def remote_interval(d_clock_s: float, d_uptime_s: float) -> tuple[float, bool]:
    """The remote-time delta to divide by, and whether the wall clock stepped."""
    tolerance = CLOCK_STEP_TOLERANCE_S + CLOCK_STEP_TOLERANCE_FRAC * d_uptime_s
    if abs(d_clock_s - d_uptime_s) > tolerance:
        return d_uptime_s, True
    return d_clock_s, False


def _find_histogram(hists: dict[str, Histogram], suffixes: tuple[str, ...]) -> str | None:
    for suffix in suffixes:
        for name in hists:
            if name.endswith(suffix):
                return name
    return None


def _histogram_delta(cur: Histogram, prev: Histogram) -> tuple[tuple[float, ...], list[float]]:
    """Bucket deltas as a cumulative histogram, +Inf bucket included; raises ValueError on reset."""
    bounds, counts, count, _ = cur
    pbounds, pcounts, pcount, _ = prev
    if bounds != pbounds or len(counts) != len(pcounts):
        raise ValueError("bucket layout changed")
    deltas = [c - p for c, p in zip(counts, pcounts, strict=True)]
    if any(d < 0 for d in deltas) or count < pcount:
        raise ValueError("histogram went backwards")
    if not bounds or not math.isinf(bounds[-1]):
        bounds = (*bounds, math.inf)
        deltas.append(count - pcount)
    return bounds, deltas


def _quantiles(
    cur: InferenceSample, prev: InferenceSample, suffixes: tuple[str, ...]
) -> tuple[float | None, float | None]:
    name = _find_histogram(cur.histograms, suffixes)
    if name is None or name not in prev.histograms:
        return None, None
    bounds, deltas = _histogram_delta(cur.histograms[name], prev.histograms[name])
    return histogram_quantile(0.5, bounds, deltas), histogram_quantile(0.99, bounds, deltas)


def _counter_rate(
    cur: float | None, prev: float | None, inv_dt: float, most: float
) -> float | None:
    if cur is None or prev is None:
        return None
    d = cur - prev
    if d < 0:
        raise ValueError("counter went backwards")
    if d * inv_dt > most:  # no server counts so fast: a glitched read, a gap
        raise ValueError("counter jumped beyond belief")
    return d * inv_dt


def _inference_rates(
    cur: InferenceSample, prev: InferenceSample, dt: float, tokens_per_s: float = _INF
) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(INFERENCE_RATE_NAMES)
    if not dt > 0 or cur.error is not None or prev.error is not None:
        return out
    if cur.rate_unknown is not None or prev.rate_unknown is not None:
        return out  # a server with no counter (exo, mlx_lm): unknown, never computed
    inv_dt = 1.0 / dt
    try:
        out[InferenceRate.GENERATED_TOKENS_PER_S] = _counter_rate(
            cur.generated_tokens_total, prev.generated_tokens_total, inv_dt, tokens_per_s
        )
        out[InferenceRate.PROMPT_TOKENS_PER_S] = _counter_rate(
            cur.prompt_tokens_total, prev.prompt_tokens_total, inv_dt, tokens_per_s
        )
        ttft = _quantiles(cur, prev, TTFT_HISTOGRAMS)
        out[InferenceRate.TTFT_P50_S], out[InferenceRate.TTFT_P99_S] = ttft
        itl = _quantiles(cur, prev, ITL_HISTOGRAMS)
        out[InferenceRate.ITL_P50_S], out[InferenceRate.ITL_P99_S] = itl
    except ValueError:
        # The server restarted (or changed its buckets), or a counter jumped past any
        # server's speed: nothing is comparable this tick.
        return dict.fromkeys(INFERENCE_RATE_NAMES)
    return out


def _line_bytes_per_s(cur: LinkSample, prev: LinkSample) -> float | None:
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


def _limits(line: float | None, span_s: float, events_per_s: float) -> Limits:
    """The largest believable delta over ``span_s`` for each bound kind (see _bound_kind)."""
    s = (span_s + READ_SKEW_S) * GLITCH_MARGIN
    if line is None:
        return _INF, _INF, _INF, s * 1e6, s * events_per_s
    return _INF, line * s, line * s / MIN_PACKET_BYTES, s * 1e6, s * events_per_s


def _stuck_legacy(cur: LinkSample, prev: LinkSample) -> list[str]:
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


def _switched_feeds(cur: LinkSample, prev: LinkSample) -> frozenset[str]:
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
        feeds = _FEEDS.get(source, {})
        for raw in now.keys() ^ before.keys():
            for metric, drivers in feeds.get(raw, ()):
                if drivers is None or driver in drivers:
                    out.add(metric)
    return frozenset(out)


def _ones_feeds(
    cur: LinkSample, reads: list[tuple[str, str, bool]]
) -> tuple[frozenset[str], frozenset[str]]:
    """Normalized metrics fed by raw counters reading all-ones: (jumped there now, stuck there)."""
    jumped: set[str] = set()
    stuck: set[str] = set()
    driver = cur.driver.strip().lower() if cur.driver else None
    for source, name, was in reads:
        feeds = _FEEDS.get(source, {}).get(name)
        if not feeds:
            continue
        legacy = _IB_SATURABLE.get(name)
        if legacy is not None and legacy[1] is not None and legacy[1] in cur.counters[source]:
            continue  # the metric is read from the 64-bit counter
        for metric, drivers in feeds:
            if drivers is None or driver in drivers:
                (stuck if was else jumped).add(metric)
    return frozenset(jumped), frozenset(stuck)


# How the reading of one normalized counter is taken this tick.
_RATE, _STUCK, _PENDING, _GLITCH, _SHIFT = range(5)


def _judge(
    metric: MetricValue,
    last: MetricValue | None,
    held: _Held | None,
    top: int,
    limit: float,
    jumped: bool,
    stuck: bool,
) -> int:
    """The verdict on a suspicious delta (``top``: the largest, per priority, of this tick)."""
    ones_now, ones_before = _is_ones(metric), _is_ones(last)
    jumped = jumped or (ones_now and not ones_before)
    stuck = stuck or (ones_now and ones_before)
    if held is not None and held.pending:
        # the look-ahead: an all-ones read that stayed is a counter at its maximum
        if stuck or jumped:
            return _STUCK
        return _RATE if top <= limit else _SHIFT
    if stuck and top == 0:
        return _STUCK
    if jumped and top > 0:
        return _PENDING
    if top > limit:
        # still beyond belief against the reading before a glitch: the level moved
        return _SHIFT if held is not None else _GLITCH
    return _RATE


def _careful(
    name: str,
    rname: str,
    kind: int,
    metric: MetricValue,
    last: MetricValue,
    h: _Held | None,
    lr: LinkRates,
    held_out: dict[str, _Held],
    sat_norm: list[str],
    dt: float,
    line: float | None,
    events_per_s: float,
    jumped: bool,
    stuck: bool,
) -> None:
    """One normalized counter whose reading is in doubt: a reset, a glitch, held, or fine."""
    base = last if h is None else h.value  # a held reading stands in for an ignored one
    span = dt if h is None else dt + h.extra_s
    top = 0  # the largest delta (of any priority)
    delta: int | dict[int, int]
    if isinstance(metric, int):
        if not isinstance(base, int):
            return
        d = metric - base
        if d < 0:
            if h is None and (metric in ALL_ONES or jumped):
                # an all-ones read below the last one (a 32-bit read of a 64-bit
                # counter): the look-ahead decides, as for one above it
                lr.glitched.append(name)
                lr.gap = True
                held_out[name] = _Held(base, dt, True)
                return
            lr.norm_reset.append(name)
            lr.gap = True
            return
        top = delta = d
    elif isinstance(base, dict):
        per: dict[int, int] = {}
        for prio, v in metric.items():
            pv = base.get(prio)
            if pv is None:
                continue
            d = v - pv
            if d < 0:
                if name not in lr.norm_reset:
                    lr.norm_reset.append(name)
                lr.gap = True
            else:
                per[prio] = d
                top = max(top, d)
        if not per:
            return
        delta = per
    else:
        return
    limit = _limits(line, span, events_per_s)[kind]
    verdict = _judge(metric, last, h, top, limit, jumped, stuck)
    if h is not None and h.pending and verdict != _STUCK:
        lr.confirmed.append(name)  # the all-ones read is gone again: it was a glitch
    if verdict == _RATE:
        inv = 1.0 / span
        if isinstance(delta, dict):
            lr.rates[rname] = {p: x * inv for p, x in delta.items()}
        else:
            lr.rates[rname] = delta * inv
    elif verdict == _STUCK:
        sat_norm.append(name)
    else:
        lr.glitched.append(name)
        lr.gap = True
        if verdict == _GLITCH:
            lr.confirmed.append(name)
        if verdict != _SHIFT:  # the reading before stands in for the ignored one
            held_out[name] = _Held(base, span, verdict == _PENDING)


def _read_interval(cur: LinkSample, prev: LinkSample | None, dt: float, stepped: bool) -> float:
    """The time between the two reads of a link's counters, else the frames' interval.

    The fast probe stamps each read: a tool started late in one tick and early in the next
    no longer bends a ratio (a storm at 99.5 % reads as 99.5 %). A read interval far from
    the frames' (a clock step, a stamp from another source) is not trusted.
    """
    if stepped or prev is None or cur.read_ns is None or prev.read_ns is None:
        return dt
    rdt = (cur.read_ns - prev.read_ns) / 1e9
    return rdt if 0.5 * dt < rdt < 1.5 * dt else dt


# How each normalized counter of a link becomes a rate: (rate name, bound kind, an int
# counter (else per priority)), one per metric in the read's order.
_Plan = tuple[tuple[str, int, bool], ...]


@dataclass(slots=True)
class _Moved:
    """What _moved_rates needs of a plan, made once per plan."""

    zero: dict[str, RateValue]  # every rate name of the plan, in its order (values: any)
    scalars: tuple[int, ...]  # the plan's int counters: their indices ...
    pick: Callable[[Sequence[Any]], tuple[Any, ...]]  # ... and their values, in one C call
    prios: tuple[int, ...]  # the indices of the per-priority counters


def _moved_of(plan: _Plan) -> _Moved:
    scalars = tuple(i for i, step in enumerate(plan) if step[2])
    pick: Callable[[Sequence[Any]], tuple[Any, ...]]
    if len(scalars) > 1:
        pick = itemgetter(*scalars)
    elif scalars:  # itemgetter of one index gives the value, not a tuple
        pick = itemgetter(scalars[0], scalars[0])
    else:
        pick = _no_values
    prios = tuple(i for i, step in enumerate(plan) if not step[2])
    return _Moved(dict.fromkeys([step[0] for step in plan], 0.0), scalars, pick, prios)


def _no_values(values: Sequence[Any]) -> tuple[Any, ...]:
    return ()


@dataclass(slots=True)
class _Shape:
    """What one read of a link held, kept so that the next tick compares against it."""

    sample: LinkSample  # the read it describes
    counter_names: dict[str, list[str]]  # source -> raw names, in the read's order
    feed_names: dict[str, tuple[str, ...]]  # source -> those of them a metric is made of
    feed_pickers: dict[str, _Pick | None]  # source -> reads those (None: there are none)
    metric_names: list[str]
    metric_types: tuple[type, ...]
    plan: _Plan | None  # None: a metric outside the vocabulary, or neither int nor dict
    plain: bool  # _plain_rates made its rates: none of its metrics reads all-ones
    values: list[Any]  # the metrics' values, in the read's order
    moved: _Moved | None  # of ``plan``


_NO_NAMES: dict[str, tuple[str, ...]] = {}
_NO_LISTS: dict[str, list[str]] = {}

# The values of a source's feeds, as one tuple (one C call: the usual tick looks at them all).
_Pick = Callable[[dict[str, int]], tuple[int, ...]]


def _pickers(feeds_of: dict[str, tuple[str, ...]]) -> dict[str, _Pick | None]:
    out: dict[str, _Pick | None] = {}
    for source, feeds in feeds_of.items():
        if len(feeds) == 1:  # itemgetter of one name gives the value, not a tuple
            feeds = (feeds[0], feeds[0])
        out[source] = itemgetter(*feeds) if feeds else None
    return out


def _feed_names(source: str, names: list[str]) -> tuple[str, ...]:
    """The raw names of ``names`` that feed a normalized metric (any driver)."""
    feeds = _FEEDS.get(source)
    if feeds is None or source in SLOW_SOURCES:
        return ()
    return tuple(n for n in names if n in feeds)


def _has_ones(cur: LinkSample, prev: LinkSample) -> bool:
    """Whether a raw counter that has a rate to make (read before too) reads all-ones."""
    for source, counters in cur.counters.items():
        pcounters = prev.counters.get(source)
        if pcounters is None or source in SLOW_SOURCES or ALL_ONES.isdisjoint(counters.values()):
            continue
        if any(v in ALL_ONES and n in pcounters for n, v in counters.items()):
            return True
    return False


def _plan(names: Sequence[str], types: tuple[type, ...]) -> _Plan | None:
    plan: list[tuple[str, int, bool]] = []
    for name, t in zip(names, types, strict=True):
        rk = _RATE_KIND.get(name)
        if rk is None or (t is not int and t is not dict):
            return None  # left to the per-counter loop, which knows what to skip
        plan.append((*rk, t is int))
    return tuple(plan)


def _plain_rates(
    plan: _Plan,
    metrics: Iterable[Any],
    pmetrics: Iterable[Any],
    limits: Limits,
    inv_dt: float,
    pclean: bool,
    moved: _Moved | None = None,
) -> dict[str, RateValue] | None:
    """The normalized counters' rates when nothing is in doubt; None as soon as one is.

    ``metrics`` and ``pmetrics``: the two reads' values, their names and value types those
    of ``plan`` (the caller checked); ``pclean``: no value of ``pmetrics`` reads all-ones
    (this function said so on their own tick). The checks are those of _link_rates'
    per-counter loop, which takes the link over on None (a reset, a glitch, a priority
    gone) and judges it counter by counter. This one is the common tick, so it is kept to
    few operations. With ``moved`` (pclean, and ``metrics`` the values of the plan's types
    as far as they are not ``pmetrics``' very objects: lists), see _moved_rates.
    """
    if moved is not None:
        return _moved_rates(plan, moved, metrics, pmetrics, limits, inv_dt)  # type: ignore[arg-type]
    rates: dict[str, RateValue] = {}
    for (rname, kind, scalar), v, pv in zip(plan, metrics, pmetrics):  # noqa: B905 (strict= is a keyword parse per call)
        if pclean and v == pv:
            # Nothing counted (most counters on most ticks), and that value was judged clean
            # on its own tick: the rate is 0, within any bound.
            if scalar:
                rates[rname] = 0.0
            elif v:
                rates[rname] = dict.fromkeys(v, 0.0)
            continue
        if scalar:
            d = v - pv
            if 0 <= d <= limits[kind] and v not in ALL_ONES:
                # most counters did not move: one 0.0 for all of them, not a new float each
                rates[rname] = d * inv_dt if d else 0.0
                continue
            return None
        if v == pv:  # nothing counted, on a read after one not judged clean
            if not v:
                continue
            if not ALL_ONES.isdisjoint(v.values()):
                return None
            rates[rname] = dict.fromkeys(v, 0.0)  # 0 x inv_dt, within any bound
            continue
        per = _prio_rates(v, pv, limits[kind], inv_dt)
        if per is None:
            return None
        if per:  # (empty: no priority read both times, no rate)
            rates[rname] = per
    return rates


def _prio_rates(
    v: dict[int, int], pv: dict[int, int], limit: float, inv_dt: float
) -> dict[int, float] | None:
    """The rates of a per-priority counter that changed since ``pv`` (empty: no priority
    was read both times); None as soon as one is in doubt (a priority went down, a delta
    beyond ``limit``, an all-ones read), for the careful look to judge."""
    per: dict[int, float] = {}
    top = 0
    for prio, x in v.items():
        px = pv.get(prio)
        if px is None:
            continue
        d = x - px
        if d < 0:
            return None
        if d > top:
            top = d
        per[prio] = d * inv_dt if d else 0.0
    if not per:  # (none at all-ones: a tick with rates made here never reads all-ones)
        return per if ALL_ONES.isdisjoint(v.values()) else None
    # The delta itself against the bound, as the careful look (where a raw all-ones read
    # sends every counter) judges it; rounding is monotonic, so the largest rate is then
    # within the bound per second too, which is the per-counter loop's own test.
    if not (top <= limit and ALL_ONES.isdisjoint(v.values())):
        return None
    return per


def _moved_rates(
    plan: _Plan,
    moved: _Moved,
    values: list[Any],
    pvalues: list[Any],
    limits: Limits,
    inv_dt: float,
) -> dict[str, RateValue] | None:
    """_plain_rates on a tick after one whose rates it made (pclean), the names those of
    ``plan`` in both reads: the same rates, or None where it would give None (or where a
    value is not of the plan's type: the caller then looks at the types).

    Most int counters do not move between ticks, and an unchanged one is most often the very
    int object of the read before (the decoder keeps what did not change; small ints are
    cached): such a one, of the type and judged clean last tick, has the rate 0, which
    ``moved.zero`` holds already. Those are found in one C pass; the rest, and every
    per-priority counter (a new dict each read), are judged here as _plain_rates does.
    """
    rates = moved.zero.copy()  # every rate of the plan at 0.0, in the plan's order
    pick = moved.pick
    for i in compress(moved.scalars, map(is_not, pick(values), pick(pvalues))):
        v = values[i]
        if v.__class__ is not int:  # (an unchanged one is last tick's object: an int)
            return None
        rname, kind, _ = plan[i]
        d = v - pvalues[i]
        if 0 <= d <= limits[kind] and v not in ALL_ONES:
            if d:
                rates[rname] = d * inv_dt
            continue
        return None
    for i in moved.prios:
        v, pv = values[i], pvalues[i]
        if v.__class__ is not dict:
            return None
        rname, kind, _ = plan[i]
        if v is pv or v == pv:  # nothing counted; that value was judged clean on its own tick
            if v:
                rates[rname] = dict.fromkeys(v, 0.0)
            else:
                del rates[rname]
            continue
        per = _prio_rates(v, pv, limits[kind], inv_dt)
        if per is None:
            return None
        if per:
            rates[rname] = per
        else:  # no priority read both times: no rate
            del rates[rname]
    return rates


def _eager_raw_rates(
    counters: dict[str, int],
    pcounters: dict[str, int],
    inv_dt: float,
    source: str,
    ones: list[tuple[str, str, bool]],
    reset: list[str],
) -> dict[str, float]:
    """Raw rates of a source with an all-ones read in either read (those get none)."""
    out: dict[str, float] = {}
    for name, value in counters.items():
        pvalue = pcounters.get(name)
        if pvalue is None:
            continue
        if value in ALL_ONES:
            ones.append((source, name, value == pvalue))  # no rate: glitch or stuck
            continue
        if pvalue in ALL_ONES:
            continue  # back from an all-ones read: nothing to measure against
        d = value - pvalue
        if d >= 0:
            out[name] = d * inv_dt
        else:
            reset.append(name)
    return out


def _link_rates(
    cur: LinkSample,
    prev: LinkSample | None,
    dt: float,
    held: dict[str, _Held] | None,
    events_per_s: float,
    pshape: _Shape | None = None,
) -> tuple[LinkRates, dict[str, _Held] | None, _Shape | None]:
    """Rates of one link against its previous reading.

    Also returns what to hold for the next tick, and what ``cur`` read, for the next tick
    to compare against (``pshape``: the same of ``prev``, from its own tick).
    """
    if prev is None:
        return LinkRates(rates={}, raw={}), None, None
    if pshape is not None and pshape.sample is not prev:
        pshape = None
    # every field given: a default factory is a call per list, per link and tick
    lr = LinkRates({}, None, False, [], [], [], [], None, [], dt)
    inv_dt = 1.0 / dt
    reset = lr.norm_reset
    ones: list[tuple[str, str, bool]] = []  # (source, raw name, read all-ones before too)

    # Of the raw counters (hundreds per mlx5 port), each tick looks at their names (the same
    # as last time?) and at the values of those that feed a metric (all-ones?). The rest
    # waits for raw_rates (the link detail), which judges every counter itself.
    counters_of, pcounters_of = cur.counters, prev.counters
    pnames_of = _NO_LISTS if pshape is None else pshape.counter_names
    pfeeds_of = _NO_NAMES if pshape is None else pshape.feed_names
    names_of: dict[str, list[str]]
    feeds_of: dict[str, tuple[str, ...]]
    # The usual tick: last tick's raw names, in its order (the same name objects, so one
    # compare of lists: a list is made and compared in about half the time of a tuple),
    # and no counter a metric is made of at all-ones. Known so, the tick keeps last tick's
    # tables.
    same_names = False
    if pshape is not None and len(counters_of) == len(pnames_of):
        same_names = True
        pick_of = pshape.feed_pickers
        # One layout (collectors.samples.LinkSample.layout): the names are last tick's.
        known = cur.layout is not None and cur.layout is prev.layout
        for source, counters in counters_of.items():
            if not known and list(counters) != pnames_of.get(source):
                same_names = False
                break
            pick = pick_of[source]
            if pick is not None and not ALL_ONES.isdisjoint(pick(counters)):
                same_names = False
                break
    if same_names:
        names_of, feeds_of = pnames_of, pfeeds_of
    else:
        names_of, feeds_of = {}, {}
        # The same raw names in both reads: no metric moved to another source.
        same_names = len(counters_of) == len(pcounters_of)
        for source, counters in counters_of.items():
            names = list(counters)
            pnames = pnames_of.get(source)
            pcounters = pcounters_of.get(source)
            if names == pnames:
                names, feeds = pnames, pfeeds_of[source]
            else:
                feeds = _feed_names(source, names)
                if same_names:
                    same_names = pcounters is not None and counters.keys() == pcounters.keys()
            names_of[source], feeds_of[source] = names, feeds
            if pcounters is None:
                same_names = False
            elif feeds and not ALL_ONES.isdisjoint(map(counters.__getitem__, feeds)):
                for name in feeds:
                    value = counters[name]
                    if value in ALL_ONES:
                        pvalue = pcounters.get(name)
                        if pvalue is not None:
                            ones.append((source, name, value == pvalue))  # glitch or stuck
    stuck_raw = _stuck_legacy(cur, prev) if cur.saturated else []
    lr.raw_inputs = (counters_of, pcounters_of, inv_dt, stuck_raw)

    # Raw-only resets drop that rate but do not cut the charts: some drivers list
    # gauges among their statistics, and those go down all the time.
    jumped, stuck = _ones_feeds(cur, ones) if ones else (_NONE, _NONE)
    line = _line_bytes_per_s(cur, prev)
    limits = _limits(line, dt, events_per_s)
    held_out: dict[str, _Held] = {}
    sat_norm: list[str] = []
    # With an all-ones read or a held counter on the link, every counter gets a careful look.
    # (Known so far: those that feed a metric. Other raw counters reading all-ones change
    # no rate _plain_rates makes, so they are looked for only when it makes none.)
    slow = bool(ones) or bool(held)
    metrics, pmetrics = cur.metrics, prev.metrics
    switched = _NONE if same_names else _switched_feeds(cur, prev)
    mnames = list(metrics)
    values = list(metrics.values())
    # (a finite 1/dt: 0 x inv_dt is then 0.0, as _plain_rates takes it to be)
    plain_ok = not (slow or switched) and 0.0 < inv_dt < _INF
    plain = None
    moved = None
    if pshape is not None and mnames == pshape.metric_names:
        # The usual tick: the same metrics as last tick, whose rates _plain_rates made
        # (its values' types are then the plan's).
        moved = pshape.moved
        if plain_ok and pshape.plain and moved is not None:
            plain = _plain_rates(
                pshape.plan or (), values, pshape.values, limits, inv_dt, True, moved
            )
    if plain is not None:
        mnames, mtypes, plan = pshape.metric_names, pshape.metric_types, pshape.plan  # type: ignore[union-attr]
    else:
        mtypes = tuple(map(type, values))
        if pshape is not None and mnames == pshape.metric_names and mtypes == pshape.metric_types:
            aligned, pclean = True, pshape.plain
            mnames, mtypes, plan = pshape.metric_names, pshape.metric_types, pshape.plan
        else:
            aligned = mnames == list(pmetrics) and mtypes == tuple(map(type, pmetrics.values()))
            pclean = False
            plan = _plan(mnames, mtypes)
            moved = None if plan is None else _moved_of(plan)
        if plan is not None and aligned and plain_ok:
            plain = _plain_rates(plan, values, pmetrics.values(), limits, inv_dt, pclean)
    if plain is not None:
        rates = lr.rates = plain
    else:
        rates = lr.rates
        slow = slow or _has_ones(cur, prev)
        rate_caps = (_INF, *(lim * inv_dt for lim in limits[1:]))
        for name, metric in metrics.items():
            rk = _RATE_KIND.get(name)
            if rk is None:  # outside the vocabulary: nothing could name it
                continue
            pmetric = pmetrics.get(name)
            if pmetric is None:
                continue
            if switched and name in switched:
                reset.append(name)
                lr.gap = True
                continue
            rname, kind = rk
            if isinstance(metric, int):
                if not isinstance(pmetric, int):
                    continue
                d = metric - pmetric
                if 0 <= d <= limits[kind] and not slow and metric not in ALL_ONES:
                    rates[rname] = d * inv_dt  # the common case: nothing to doubt
                    continue
            elif isinstance(pmetric, dict):
                per: dict[int, float] = {}
                bad = False
                for prio, v in metric.items():
                    pv = pmetric.get(prio)
                    if pv is None:
                        continue
                    d = v - pv
                    if d < 0:
                        bad = True
                    else:
                        per[prio] = d * inv_dt
                if not (slow or bad) and per:
                    if max(per.values()) <= rate_caps[kind] and ALL_ONES.isdisjoint(
                        metric.values()
                    ):
                        rates[rname] = per
                        continue
                elif not per and not bad:
                    continue
            else:
                continue
            h = held.get(name) if held else None
            _careful(
                name,
                rname,
                kind,
                metric,
                pmetric,
                h,
                lr,
                held_out,
                sat_norm,
                dt,
                line,
                events_per_s,
                name in jumped,
                name in stuck,
            )

    if cur.physical:
        for pkts, pkts_rate, bytes_rate in _PACKETS_OF_BYTES_RATES:
            pr, br = rates.get(pkts_rate), rates.get(bytes_rate)
            if (
                isinstance(pr, float)
                and isinstance(br, float)
                and pr * MIN_PACKET_BYTES
                > GLITCH_MARGIN * br + MIN_PACKET_BYTES * PACKETS_READ_SLACK * inv_dt
                and not (held and pkts in held)
            ):
                # more packets than those bytes can hold: the packet counter glitched
                del rates[pkts_rate]
                lr.glitched.append(pkts)
                lr.confirmed.append(pkts)
                lr.gap = True
                held_out[pkts] = _Held(pmetrics[pkts], dt, False)

    if stuck_raw:
        lr.saturated.extend(stuck_raw)
        for raw in stuck_raw:
            entry = _IB_SATURABLE.get(raw)
            if entry is None or entry[0] in lr.saturated:
                continue
            norm, wide = entry
            if wide is not None and any(wide in c for c in cur.counters.values()):
                continue  # the metric is read from the 64-bit counter, which is fine
            lr.saturated.append(norm)
            rates.pop(norm.per_s, None)
    for name in sat_norm:
        if name not in lr.saturated:
            lr.saturated.append(name)

    _derive(rates)
    if pshape is not None and names_of is pnames_of and mnames is pshape.metric_names:
        # The usual tick: last tick's tables describe this read too. Its shape (of the
        # baseline this tick replaces: nothing else holds it) takes the rest, not a new one.
        pshape.sample, pshape.values, pshape.plain = cur, values, plain is not None
        pshape.metric_types, pshape.plan, pshape.moved = mtypes, plan, moved
        return lr, held_out or None, pshape
    pickers = pshape.feed_pickers if pshape and names_of is pnames_of else _pickers(feeds_of)
    shape = _Shape(
        cur, names_of, feeds_of, pickers, mnames, mtypes, plan, plain is not None, values, moved
    )
    return lr, held_out or None, shape


def _raw_rates(lr: LinkRates) -> dict[str, dict[str, float]]:
    """The raw-counter rates of one link's tick, made from what _link_rates kept."""
    if lr.raw_inputs is None:
        return {}
    counters, pcounters_of, inv_dt, stuck = lr.raw_inputs
    lr.raw_inputs = None  # the two readings are not kept past this
    out: dict[str, dict[str, float]] = {}
    reset: list[str] = []  # sources with an all-ones read first, as they always came
    later: list[str] = []
    for source, now in counters.items():
        before = pcounters_of.get(source)
        if before is None or source in SLOW_SOURCES:
            continue  # slow-cadence values: a rate per frame would be 0, then a spike
        if not (ALL_ONES.isdisjoint(now.values()) and ALL_ONES.isdisjoint(before.values())):
            out[source] = _eager_raw_rates(now, before, inv_dt, source, [], reset)
            continue
        rates: dict[str, float] = {}
        for name, value in now.items():
            pvalue = before.get(name)
            if pvalue is None:
                continue
            d = value - pvalue
            if d >= 0:
                rates[name] = d * inv_dt
            else:
                later.append(name)
        out[source] = rates
    for name in stuck:
        for rates in out.values():
            rates.pop(name, None)
    lr.raw_reset = reset + later
    return out


def _derive(rates: dict[str, RateValue]) -> None:
    get = rates.get
    rx = get(_RX_BYTES_RATE)
    if isinstance(rx, float):
        rates[_RX_BPS] = rx * 8.0
    us = get(_RX_PAUSE_RATE)
    if us is not None:
        rates[_RX_PAUSED] = _paused(us)
    tx = get(_TX_BYTES_RATE)
    if isinstance(tx, float):
        rates[_TX_BPS] = tx * 8.0
    us = get(_TX_PAUSE_RATE)
    if us is not None:
        rates[_TX_PAUSED] = _paused(us)
    if isinstance(rx, float) and isinstance(tx, float) and rx + tx > 0:
        rdma_rx, rdma_tx = get(_RDMA_RX_RATE), get(_RDMA_TX_RATE)
        if isinstance(rdma_rx, float) and isinstance(rdma_tx, float):
            # vport and phy counters frame bytes differently: keep the share a share.
            r = (rdma_rx + rdma_tx) / (rx + tx)
            rates[_RDMA_SHARE] = (r if r < 1.0 else 1.0) if r > 0.0 else 0.0


def _paused(us: RateValue) -> RateValue:
    """Pause-duration rates (microseconds per second, mlx5 en_stats.c) as the share paused.

    Each is min(1.0, max(0.0, us / 1e6)) without the builtins' cost (every port, every
    tick): division is monotonic, so us < 1e6 iff the share is below 1 (or rounds to 1.0).
    """
    if isinstance(us, dict):
        shares: dict[int, float] = {}
        for p, v in us.items():
            shares[p] = (v / 1e6 if v < 1e6 else 1.0) if v > 0.0 else 0.0
        return shares
    return (us / 1e6 if us < 1e6 else 1.0) if us > 0.0 else 0.0


class RateEngine:
    """Per-host baselines; ``update`` turns each new frame into rates against the last one.

    ``thresholds``: the effective ``[thresholds]`` (fabtop.core.thresholds), for the rates
    no event or token counter can reach (``events_max_per_s``, ``tokens_max_per_s``).
    """

    __slots__ = ("_base", "_glitches", "events_per_s", "tokens_per_s")

    def __init__(self, thresholds: Mapping[str, float] | None = None) -> None:
        th = effective(thresholds)
        self.events_per_s = th["events_max_per_s"]
        self.tokens_per_s = th["tokens_max_per_s"]
        self._base: dict[str, _Baseline] = {}
        self._glitches: dict[str, int] = {}

    def update(self, sample: HostSample) -> HostRates:
        """Rates of ``sample`` against the previous frame of the same host."""
        host = sample.host
        prev = self._base.get(host)
        if prev is None:
            self._rebaseline(sample, {}, {}, {})
            return self._empty(sample, gap=False, restarted=False)
        if sample.seq == prev.seq:
            return HostRates(host, None, False, {}, {}, glitch_count=self._glitches.get(host, 0))
        d_up = sample.uptime_s - prev.uptime_s
        if d_up < 0:
            self._rebaseline(sample, {}, {}, {})
            return self._empty(sample, gap=True, restarted=True)
        dt, stepped = remote_interval((sample.clock_ns - prev.clock_ns) / 1e9, d_up)
        if not dt > 0:
            return HostRates(host, None, stepped, {}, {}, glitch_count=self._glitches.get(host, 0))
        inv_dt = 1.0 / dt

        links: dict[str, LinkRates] = {}
        held: dict[str, dict[str, _Held]] = {}
        shapes: dict[str, _Shape] = {}
        notes: list[str] = []
        pshapes = prev.shapes
        for lid, link in sample.links.items():
            plink = prev.links.get(lid)
            lr, hold, shape = _link_rates(
                link,
                plink,
                _read_interval(link, plink, dt, stepped),
                prev.held.get(lid),
                self.events_per_s,
                pshapes.get(lid),
            )
            links[lid] = lr
            if shape is not None:
                shapes[lid] = shape
            if hold:
                held[lid] = hold
            if lr.confirmed:
                where = link.netdev or lid
                notes.extend(f"counter glitch ignored on {where} {name}" for name in lr.confirmed)
        cpu: float | None = None
        n, pn = sample.cpu_throttle_count, prev.cpu_throttle
        # lower: the count was reset; all-ones or beyond any event rate: a glitched read
        if n is not None and pn is not None and n >= pn and n not in ALL_ONES:
            if n - pn <= _limits(None, dt, self.events_per_s)[4]:
                cpu = (n - pn) * inv_dt
            else:
                notes.append("counter glitch ignored on CPU thermal throttle count")
        inference = self._rebaseline(sample, prev.inference, held, shapes)
        count = self._glitches.get(host, 0) + len(notes)
        if notes:
            self._glitches[host] = count
        return HostRates(
            host,
            dt,
            stepped,
            links,
            inference,
            cpu_throttle_per_s=cpu,
            glitches=notes,
            glitch_count=count,
        )

    def forget(self, host: str) -> None:
        """Drop ``host``'s baseline (a host removed for good: its next frame starts afresh)."""
        self._base.pop(host, None)
        self._glitches.pop(host, None)

    def _rebaseline(
        self,
        sample: HostSample,
        prev: dict[str, _InferenceBase],
        held: dict[str, dict[str, _Held]],
        shapes: dict[str, _Shape],
    ) -> dict[str, dict[str, float | None]]:
        """Make ``sample`` the new baseline; return its inference rates against ``prev``."""
        bases: dict[str, _InferenceBase] = {}
        rates: dict[str, dict[str, float | None]] = {}
        for inf in sample.inference:
            base = prev.get(inf.url)
            if base is not None and inf is base.sample:
                bases[inf.url] = base  # same reading as before: keep showing its rates
            else:
                r: dict[str, float | None] = dict.fromkeys(INFERENCE_RATE_NAMES)
                if base is not None:
                    if inf.read_s is not None and base.sample.read_s is not None:
                        dt = inf.read_s - base.sample.read_s
                    else:
                        dt, _ = remote_interval(
                            (sample.clock_ns - base.clock_ns) / 1e9,
                            sample.uptime_s - base.uptime_s,
                        )
                    r = _inference_rates(inf, base.sample, dt, self.tokens_per_s)
                bases[inf.url] = _InferenceBase(inf, sample.clock_ns, sample.uptime_s, r)
            rates[inf.url] = bases[inf.url].rates
        # Samples are not mutated downstream, so keeping references costs no copy.
        self._base[sample.host] = _Baseline(
            sample.seq,
            sample.clock_ns,
            sample.uptime_s,
            sample.links,
            bases,
            sample.cpu_throttle_count,
            held,
            shapes,
        )
        return rates

    def _empty(self, sample: HostSample, *, gap: bool, restarted: bool) -> HostRates:
        links = {lid: LinkRates(rates={}, raw={}, gap=gap) for lid in sample.links}
        inference = {inf.url: dict.fromkeys(INFERENCE_RATE_NAMES) for inf in sample.inference}
        return HostRates(
            sample.host,
            None,
            False,
            links,
            inference,
            restarted,
            glitch_count=self._glitches.get(sample.host, 0),
        )
