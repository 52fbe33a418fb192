"""Rate engine: per-second rates from two consecutive frames of one host (DESIGN.md §4).

Rates divide counter deltas by the *remote* time between frames (``clock_ns``),
never by when the bytes arrived, so SSH jitter does not show up as throughput
jitter. ``/proc/uptime`` never steps, so when the wall clock disagrees with it the
uptime delta is used instead. A counter that goes backwards is a reset: it gets a
new baseline and no rate, never a negative rate or a spike. A delta that cannot be
(bytes beyond the link's speed, packets beyond what those bytes allow, pause time beyond
the interval, a counter jumping to all-ones) is a glitch, treated like a reset: a gap,
never a rate, an event count or a spike in the history's max tiers.

Counters read at slow cadence and carried between reads (the FEC's, the CPU throttle
count) get their rates between two reads, never per frame: fabtop/core/slow_rates.py.
A sample that gives them no read time had them read with its frame, on the same path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    Derived,
    Metric,
)
from fabtop.core.believe import (
    FEEDS_OF,
    GLITCH,
    GLITCH_MARGIN,
    IB_SATURABLE,
    MIN_PACKET_BYTES,
    NO_FEEDS,
    NONE,
    PACKETS_READ_SLACK,
    PENDING,
    RATE,
    SHIFT,
    STUCK,
    Held,
    Limits,
    bound_kind,
    bounds,
    judge,
    line_bytes_per_s,
    ones_feeds,
    stuck_legacy,
    switched_feeds,
)
from fabtop.core.inference_rates import INFERENCE_RATE_NAMES, inference_rates
from fabtop.core.slow_rates import SlowRead, cpu_read, first_reads, has_slow, slow_rates
from fabtop.core.thresholds import effective

# Wall clock and uptime may differ by rounding (uptime has 10 ms resolution) and by
# slewing; anything beyond this is a step (NTP, manual date) and must not become a spike.
CLOCK_STEP_TOLERANCE_S = 0.25
CLOCK_STEP_TOLERANCE_FRAC = 0.02


# Packet counters that must fit in the bytes of the same direction: (counter, its rate,
# the bytes' rate).
_PACKETS_OF_BYTES_RATES: tuple[tuple[str, str, str], ...] = (
    (Metric.RX_PACKETS, Metric.RX_PACKETS.per_s, Metric.RX_BYTES.per_s),
    (Metric.TX_PACKETS, Metric.TX_PACKETS.per_s, Metric.TX_BYTES.per_s),
)

_INF = math.inf

# The rate name of every counter, built once: the per-tick loop only looks it up.
_RATE_NAME: dict[str, str] = {m: m.per_s for m in Metric}
# ... and with its bound kind, for the per-tick loop's one lookup per counter.
_RATE_KIND: dict[str, tuple[str, int]] = {m: (m.per_s, bound_kind(m)) for m in Metric}
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
    # ... and the slow metrics' rates (SLOW_METRICS), on the frame whose fresh read made
    # them; None on the frames they are held on (carried: no new read), or none made.
    slow_span_s: float | None = None
    mlxlink_span_s: float | None = None  # ... and mlxlink's corrected bits', likewise

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
class _Baseline:
    seq: int
    clock_ns: int
    uptime_s: float
    links: dict[str, LinkSample]
    inference: dict[str, _InferenceBase]
    held: dict[str, dict[str, Held]] = field(default_factory=dict)  # link id -> name -> held
    tables: dict[str, _Table] = field(default_factory=dict)  # link id -> how it made rates
    slow: dict[str, SlowRead] = field(default_factory=dict)  # link id -> its last slow read
    mlx: dict[str, SlowRead] = field(default_factory=dict)  # ... and of mlxlink's counters
    cpu_read: SlowRead | None = None  # the last read of the CPU thermal throttle count


def remote_interval(d_clock_s: float, d_uptime_s: float) -> tuple[float, bool]:
    """The remote-time delta to divide by, and whether the wall clock stepped."""
    tolerance = CLOCK_STEP_TOLERANCE_S + CLOCK_STEP_TOLERANCE_FRAC * d_uptime_s
    if abs(d_clock_s - d_uptime_s) > tolerance:
        return d_uptime_s, True
    return d_clock_s, False


def _careful(
    name: str,
    rname: str,
    kind: int,
    metric: MetricValue,
    last: MetricValue,
    h: Held | None,
    lr: LinkRates,
    held_out: dict[str, Held],
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
                held_out[name] = Held(base, dt, True)
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
    limit = bounds(line, span, events_per_s)[kind]
    verdict = judge(metric, last, h, top, limit, jumped, stuck)
    if h is not None and h.pending and verdict != STUCK:
        lr.confirmed.append(name)  # the all-ones read is gone again: it was a glitch
    if verdict == RATE:
        inv = 1.0 / span
        if isinstance(delta, dict):
            lr.rates[rname] = {p: x * inv for p, x in delta.items()}
        else:
            lr.rates[rname] = delta * inv
    elif verdict == STUCK:
        sat_norm.append(name)
    else:
        lr.glitched.append(name)
        lr.gap = True
        if verdict == GLITCH:
            lr.confirmed.append(name)
        if verdict != SHIFT:  # the reading before stands in for the ignored one
            held_out[name] = Held(base, span, verdict == PENDING)


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
class _Table:
    """How one link's metrics become rates while they are the same names of the same types
    tick after tick: their rate names and bounds, in order (``plan``), and whether the last
    tick's values were judged clean (none read all-ones: an unchanged one is rate 0)."""

    names: list[str]
    types: tuple[type, ...]
    plan: _Plan | None  # None: a metric outside the vocabulary, or neither int nor dict
    clean: bool


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
) -> dict[str, RateValue] | None:
    """The normalized counters' rates when nothing is in doubt; None as soon as one is.

    ``metrics`` and ``pmetrics``: the two reads' values, their names and value types those
    of ``plan`` (the caller checked); ``pclean``: no value of ``pmetrics`` reads all-ones
    (this function said so on their own tick). The checks are those of _link_rates'
    per-counter loop, which takes the link over on None (a reset, a glitch, a priority
    gone) and judges it counter by counter. This one is the common tick, so it is kept to
    few operations.
    """
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
    held: dict[str, Held] | None,
    events_per_s: float,
    table: _Table | None = None,
) -> tuple[LinkRates, dict[str, Held] | None, _Table | None]:
    """Rates of one link against its previous reading.

    Also returns what to hold for the next tick, and how ``cur``'s metrics became rates,
    for the next tick (``table``: the same of ``prev``, from its own tick).
    """
    if prev is None:
        return LinkRates(rates={}, raw={}), None, None
    # every field given: a default factory is a call per list, per link and tick
    lr = LinkRates({}, None, False, [], [], [], [], None, [], dt)
    inv_dt = 1.0 / dt
    reset = lr.norm_reset
    ones: list[tuple[str, str, bool]] = []  # (source, raw name, read all-ones before too)

    # Of the raw counters (hundreds per mlx5 port) each tick looks at whether their names
    # are last tick's (else a metric may have moved to another source) and, in one pass in
    # C, whether one reads all-ones (a glitched or saturated read: then which). The rest
    # waits for raw_rates (the link detail), which judges every counter itself.
    counters_of, pcounters_of = cur.counters, prev.counters
    same_names = len(counters_of) == len(pcounters_of)
    for source, counters in counters_of.items():
        pcounters = pcounters_of.get(source)
        if pcounters is None:
            same_names = False
            continue
        if same_names and counters.keys() != pcounters.keys():
            same_names = False
        if source in SLOW_SOURCES or ALL_ONES.isdisjoint(counters.values()):
            continue
        feeds = FEEDS_OF.get(source, NO_FEEDS)
        for name, value in counters.items():
            if value in ALL_ONES and name in feeds:
                pvalue = pcounters.get(name)
                if pvalue is not None:
                    ones.append((source, name, value == pvalue))  # glitch or stuck
    stuck_raw = stuck_legacy(cur, prev) if cur.saturated else []
    lr.raw_inputs = (counters_of, pcounters_of, inv_dt, stuck_raw)

    # Raw-only resets drop that rate but do not cut the charts: some drivers list
    # gauges among their statistics, and those go down all the time.
    jumped, stuck = ones_feeds(cur, ones) if ones else (NONE, NONE)
    line = line_bytes_per_s(cur, prev)
    limits = bounds(line, dt, events_per_s)
    held_out: dict[str, Held] = {}
    sat_norm: list[str] = []
    # With an all-ones read or a held counter on the link, every counter gets a careful look.
    slow = bool(ones) or bool(held)
    metrics, pmetrics = cur.metrics, prev.metrics
    switched = NONE if same_names else switched_feeds(cur, prev)
    mnames = list(metrics)
    values = list(metrics.values())
    mtypes = tuple(map(type, values))
    # The usual tick: the same metrics of the same types as last tick, with last tick's
    # plan (and, when its values were judged clean, an unchanged value is rate 0).
    if table is not None and mnames == table.names and mtypes == table.types:
        aligned, pclean, plan = True, table.clean, table.plan
    else:
        aligned = mnames == list(pmetrics) and mtypes == tuple(map(type, pmetrics.values()))
        pclean = False
        plan = _plan(mnames, mtypes)
    plain = None
    # (a finite 1/dt: 0 x inv_dt is then 0.0, as _plain_rates takes it to be)
    if plan is not None and aligned and not (slow or switched) and 0.0 < inv_dt < _INF:
        plain = _plain_rates(plan, values, pmetrics.values(), limits, inv_dt, pclean)
    if plain is not None:
        rates = lr.rates = plain
    else:
        # A counter in doubt on the link (a reset, a glitch, an all-ones read, a held
        # reading, a metric from another source): each counter is judged on its own.
        rates = lr.rates
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
            h = held.get(name) if held else None
            _careful(
                name,
                rk[0],
                rk[1],
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
                held_out[pkts] = Held(pmetrics[pkts], dt, False)

    if stuck_raw:
        lr.saturated.extend(stuck_raw)
        for raw in stuck_raw:
            entry = IB_SATURABLE.get(raw)
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
    return lr, held_out or None, _Table(mnames, mtypes, plan, plain is not None)


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
        clock = sample.clock_ns

        links: dict[str, LinkRates] = {}
        held: dict[str, dict[str, Held]] = {}
        tables: dict[str, _Table] = {}
        slow: dict[str, SlowRead] = {}
        mlxs: dict[str, SlowRead] = {}
        notes: list[str] = []
        ptables = prev.tables
        for lid, link in sample.links.items():
            plink = prev.links.get(lid)
            lr, hold, table = _link_rates(
                link,
                plink,
                _read_interval(link, plink, dt, stepped),
                prev.held.get(lid),
                self.events_per_s,
                ptables.get(lid),
            )
            links[lid] = lr
            if has_slow(link):  # slow-cadence metrics, carried between reads
                last = (prev.slow.get(lid), prev.mlx.get(lid))
                read, mlx = slow_rates(link, lr, last, self.events_per_s, clock)
                if read is not None:
                    slow[lid] = read
                if mlx is not None:
                    mlxs[lid] = mlx
            if table is not None:
                tables[lid] = table
            if hold:
                held[lid] = hold
            if lr.confirmed:
                where = link.netdev or lid
                notes.extend(f"counter glitch ignored on {where} {name}" for name in lr.confirmed)
        cpu_last, cpu, glitch = cpu_read(sample, prev.cpu_read, self.events_per_s)
        if glitch:
            notes.append("counter glitch ignored on CPU thermal throttle count")
        inference = self._rebaseline(sample, prev.inference, held, tables, (slow, mlxs), cpu_last)
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
        held: dict[str, dict[str, Held]],
        tables: dict[str, _Table],
        slow: tuple[dict[str, SlowRead], dict[str, SlowRead]] | None = None,
        cpu_last: SlowRead | None = None,
    ) -> dict[str, dict[str, float | None]]:
        """Make ``sample`` the new baseline; return its inference rates against ``prev``.

        ``slow``, ``cpu_last``: the last slow reads of each link (the FEC's, mlxlink's) and
        of the CPU throttle count; None: this sample's own are the first.
        """
        if slow is None:
            slow = ({}, {})
            for lid, link in sample.links.items():
                first_reads(link, lid, slow, self.events_per_s, sample.clock_ns)
            cpu_last = cpu_read(sample, None, self.events_per_s)[0]
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
                    r = inference_rates(inf, base.sample, dt, self.tokens_per_s)
                bases[inf.url] = _InferenceBase(inf, sample.clock_ns, sample.uptime_s, r)
            rates[inf.url] = bases[inf.url].rates
        # Samples are not mutated downstream, so keeping references costs no copy.
        self._base[sample.host] = _Baseline(
            sample.seq,
            sample.clock_ns,
            sample.uptime_s,
            sample.links,
            bases,
            held,
            tables,
            slow[0],
            slow[1],
            cpu_last,
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
