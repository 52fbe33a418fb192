"""Bounded tiered history: a ring of raw points plus coarser rings of bucket means (and maxima).

Memory is bounded whatever the run length (DESIGN.md §4): each tier is a ring of
``array`` that grows up to its capacity and then overwrites its oldest slot. Raw points
keep float64 (timestamps need it); coarse buckets default to float32, which halves them
and is far finer than any chart can show.
A gap (``None``) is stored as NaN and a bucket that saw no value is NaN too,
never 0, so charts show the hole instead of a fake drop.
"""

from __future__ import annotations

import copy
import math
import os
import resource
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from collectors.samples import HostSample, RateValue
from fabtop.core.rates import HostRates

NAN = math.nan

# (step in seconds, number of slots): 1 s for 15 min, 10 s for 6 h, 1 min for 3 days.
DEFAULT_TIERS: tuple[tuple[float, int], ...] = ((1.0, 900), (10.0, 2160), (60.0, 4320))
# A link, GPU or server not reported for this long loses its history (the finest tier's
# span: 15 min at the defaults); checked once a minute per host.
FORGET_AFTER_S = 900.0
PRUNE_EVERY_S = 60.0

# A pause this many times longer than the previous interval is a hole in the raw ring.
GAP_FACTOR = 3.0

SeriesKey = tuple[str, ...]
FloatTypecode = Literal["d", "f"]
DEFAULT_COARSE_TYPECODE: FloatTypecode = "f"

# Series whose coarse buckets also keep the maximum: short spikes (a pause storm, a
# burst of drops, a TTFT outlier) vanish in a 1-minute mean.
_SPIKY_MARKERS = (
    "pause",
    "discards",
    "out_of_buffer",
    "phy_errors",
    "ecn_marked",
    "cnp_",
    "ttft",
    "itl",
)

_LINK_RATES: tuple[tuple[str, str], ...] = (  # history name, rate name
    ("rx_bps", "rx_bps"),
    ("tx_bps", "tx_bps"),
    ("rx_pkts_per_s", "rx_packets_per_s"),
    ("tx_pkts_per_s", "tx_packets_per_s"),
    ("ecn_marked_per_s", "ecn_marked_per_s"),
    ("cnp_sent_per_s", "cnp_sent_per_s"),
    ("cnp_handled_per_s", "cnp_handled_per_s"),
    ("rx_discards_per_s", "rx_discards_per_s"),
    ("rx_out_of_buffer_per_s", "rx_out_of_buffer_per_s"),
    ("rx_phy_errors_per_s", "rx_phy_errors_per_s"),
    ("rdma_share", "rdma_share"),
)
# Per-priority rates: the aggregate series is the sum (counts) or the max (ratios).
_LINK_PRIO_RATES: tuple[tuple[str, bool], ...] = (
    ("rx_pause_per_s", False),
    ("tx_pause_per_s", False),
    ("rx_pause_time_ratio", True),
    ("tx_pause_time_ratio", True),
)
_PRIO_KEYS = tuple(str(p) for p in range(8))
_GPU_FIELDS = ("utilization_pct", "temperature_c", "power_w", "sm_clock_mhz", "memory_used_mib")
_INFERENCE_FIELDS = ("generated_tokens_per_s", "prompt_tokens_per_s", "ttft_p50_s", "itl_p50_s")


def keeps_max(key: SeriesKey) -> bool:
    """Default policy: keep per-bucket maxima for spiky series (pauses, drops, latencies)."""
    if not key:
        return False
    # per-priority keys end in "" (all priorities) or the priority number
    name = key[-2] if len(key) > 1 and (key[-1] == "" or key[-1].isdigit()) else key[-1]
    return any(m in name for m in _SPIKY_MARKERS)


def _exact(a: array[float]) -> array[float]:
    """A copy without the slack ``append`` over-allocates: a full ring never grows again."""
    return array(a.typecode, a)


def _none(v: float) -> float | None:
    return None if v != v else v


class _Raw:
    """Finest tier: the samples as appended, with their own timestamps.

    Raw points rather than 1-s buckets: a 1 Hz remote clock that jitters by a few ms
    would otherwise leave empty buckets (false gaps) next to doubly filled ones.
    """

    __slots__ = ("capacity", "start", "step", "times", "values")

    def __init__(self, step: float, capacity: int) -> None:
        self.step = step
        self.capacity = capacity
        self.times = array("d")
        self.values = array("d")
        self.start = 0  # index of the oldest point once the ring is full

    def push(self, t: float, v: float) -> None:
        if len(self.times) < self.capacity:
            self.times.append(t)
            self.values.append(v)
            if len(self.times) == self.capacity:
                self.times, self.values = _exact(self.times), _exact(self.values)
        else:
            self.times[self.start] = t
            self.values[self.start] = v
            self.start = (self.start + 1) % self.capacity

    def oldest(self) -> float:
        return self.times[self.start]

    def full(self) -> bool:
        return len(self.times) >= self.capacity

    def ordered(self) -> tuple[array[float], array[float]]:
        s = self.start
        return self.times[s:] + self.times[:s], self.values[s:] + self.values[:s]

    def nbytes(self) -> int:
        return sys.getsizeof(self.times) + sys.getsizeof(self.values) + sys.getsizeof(self)


class _Coarse:
    """One coarse tier: a ring of fixed-width buckets holding the mean (and max) of their points."""

    __slots__ = (
        "capacity",
        "cur_bucket",
        "cur_max",
        "cur_n",
        "cur_sum",
        "first_bucket",
        "maxes",
        "means",
        "start",
        "step",
    )

    def __init__(self, step: float, capacity: int, keep_max: bool, typecode: FloatTypecode) -> None:
        self.step = step
        self.capacity = capacity
        self.means = array(typecode)
        self.maxes: array[float] | None = array(typecode) if keep_max else None
        self.start = 0
        self.first_bucket = 0  # bucket number of the oldest slot
        self.cur_bucket: int | None = None
        self.cur_sum = 0.0
        self.cur_n = 0
        self.cur_max = NAN

    def add(self, t: float, v: float) -> None:
        b = math.floor(t / self.step)
        cur = self.cur_bucket
        if cur is None or b > cur:
            if cur is None or b - cur > self.capacity:
                del self.means[:]
                if self.maxes is not None:
                    del self.maxes[:]
                self.start = 0
                self.first_bucket = b
            else:
                for _ in range(b - cur - 1):  # buckets nobody wrote to are gaps
                    self._push()
            self._push()
            self.cur_bucket = b
            self.cur_sum, self.cur_n, self.cur_max = 0.0, 0, NAN
        elif b < cur:
            return
        if v == v:
            self.cur_sum += v
            self.cur_n += 1
            if not self.cur_max >= v:
                self.cur_max = v
            i = (self.start + len(self.means) - 1) % self.capacity
            self.means[i] = self.cur_sum / self.cur_n
            if self.maxes is not None:
                self.maxes[i] = self.cur_max

    def _push(self) -> None:
        if len(self.means) < self.capacity:
            self.means.append(NAN)
            if self.maxes is not None:
                self.maxes.append(NAN)
            if len(self.means) == self.capacity:
                self.means = _exact(self.means)
                if self.maxes is not None:
                    self.maxes = _exact(self.maxes)
        else:
            self.means[self.start] = NAN
            if self.maxes is not None:
                self.maxes[self.start] = NAN
            self.start = (self.start + 1) % self.capacity
            self.first_bucket += 1

    def oldest(self) -> float:
        return self.first_bucket * self.step

    def full(self) -> bool:
        return len(self.means) >= self.capacity

    def ordered(self, use_max: bool) -> tuple[list[float], array[float]]:
        src = self.maxes if use_max and self.maxes is not None else self.means
        s = self.start
        times = [(self.first_bucket + i) * self.step for i in range(len(src))]
        return times, src[s:] + src[:s]

    def nbytes(self) -> int:
        n = sys.getsizeof(self.means) + sys.getsizeof(self)
        return n + (sys.getsizeof(self.maxes) if self.maxes is not None else 0)


class Series:
    """One metric over time: raw ring plus coarser tiers of bucket means (and maxima)."""

    __slots__ = ("_coarse", "_last_dt", "_last_t", "_raw")

    def __init__(
        self,
        tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
        keep_max: bool = True,
        coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
    ) -> None:
        if not tiers or any(cap < 1 or not step > 0 for step, cap in tiers):
            raise ValueError(f"bad tiers {tiers!r}: need (step > 0, capacity >= 1) pairs")
        self._raw = _Raw(*tiers[0])
        self._coarse = tuple(
            _Coarse(step, cap, keep_max, coarse_typecode) for step, cap in tiers[1:]
        )
        self._last_t: float | None = None
        self._last_dt = 0.0

    def append(self, t: float, value: float | None) -> None:
        """Add one point; ``None`` is a gap. A point not newer than the last one is dropped."""
        last = self._last_t
        if last is not None:
            dt = t - last
            if not dt > 0:
                return
            if self._last_dt and dt > GAP_FACTOR * self._last_dt:
                # Nothing came for several intervals (host unreachable): mark the hole in
                # the raw ring too, or a chart would draw a line across it.
                self._raw.push(last + self._last_dt, NAN)
            self._last_dt = dt
        self._last_t = t
        v = NAN if value is None else float(value)
        self._raw.push(t, v)
        for tier in self._coarse:
            tier.add(t, v)

    def latest(self) -> float | None:
        """The newest point's value (None for a gap or an empty series)."""
        r = self._raw
        if not r.times:
            return None
        return _none(r.values[(r.start + len(r.values) - 1) % r.capacity])

    def last(self, n: int, span_s: float | None = None) -> list[float | None]:
        """The newest ``n`` raw values, oldest first, without copying the ring.

        With ``span_s``, only points at most ``span_s`` older than the newest one count,
        as ``points(span_s)`` would select them (sparklines read this every tick).
        """
        r = self._raw
        size = len(r.values)
        if n <= 0 or not size:
            return []
        times, values, cap = r.times, r.values, r.capacity
        end = r.start + size - 1  # index of the newest point, before wrapping
        lo = None if span_s is None else times[end % cap] - span_s
        out: list[float | None] = []
        for k in range(min(n, size)):
            i = (end - k) % cap
            if lo is not None and times[i] < lo:
                break
            v = values[i]
            out.append(None if v != v else v)
        out.reverse()
        return out

    def points(
        self, span_s: float, now: float | None = None, stat: Literal["mean", "max"] = "mean"
    ) -> tuple[list[float], list[float | None]]:
        """Times and values of the last ``span_s`` seconds from the finest tier that covers them.

        Coarse points are stamped with their bucket's start; ``stat="max"`` returns bucket
        maxima where the series keeps them (means otherwise).
        """
        if self._last_t is None:
            return [], []
        if now is None:
            now = self._last_t
        lo = now - span_s
        raw = self._raw
        if not raw.full() or raw.oldest() <= lo + raw.step or not self._coarse:
            times, values = raw.ordered()
            i, j = bisect_left(times, lo), bisect_right(times, now)
            return list(times[i:j]), [_none(v) for v in values[i:j]]
        tier = self._coarse[-1]
        for c in self._coarse:
            if not c.full() or c.oldest() <= lo + c.step:
                tier = c
                break
        ctimes, cvalues = tier.ordered(stat == "max")
        step = tier.step
        i = bisect_left(ctimes, lo - step + 1e-9)  # a bucket counts if it ends after lo
        j = bisect_right(ctimes, now)
        return ctimes[i:j], [_none(v) for v in cvalues[i:j]]

    @property
    def nbytes(self) -> int:
        """Bytes held by this series (arrays, headers and tier objects)."""
        return (
            sys.getsizeof(self)
            + self._raw.nbytes()
            + sum(c.nbytes() for c in self._coarse)
            + sys.getsizeof(self._coarse)
        )


class History:
    """All series of all hosts, keyed by tuples such as ``("gpu1", "eth2", "rx_bps")``."""

    __slots__ = (
        "_keep_max", "_last_t", "_offset", "_pruned", "_seen", "_series", "_typecode", "tiers",
    )

    def __init__(
        self,
        tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
        keep_max: Callable[[SeriesKey], bool] = keeps_max,
        coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
    ) -> None:
        Series(tiers)  # validates the tiers
        self.tiers = tuple(tiers)
        self._keep_max = keep_max
        # "f" halves the coarse tiers (7 significant digits is plenty for a chart);
        # "d" keeps them exact
        self._typecode = coarse_typecode
        self._series: dict[SeriesKey, Series] = {}
        self._offset: dict[str, float] = {}
        self._last_t: dict[str, float] = {}
        self._seen: dict[tuple[str, str], float] = {}  # (host, link/gpu/url) -> last time
        self._pruned: dict[str, float] = {}

    def series(self, key: SeriesKey) -> Series:
        """The series for ``key``, created on first use."""
        s = self._series.get(key)
        if s is None:
            s = Series(self.tiers, self._keep_max(key), self._typecode)
            self._series[key] = s
        return s

    def get(self, key: SeriesKey) -> Series | None:
        """The series for ``key`` if it exists."""
        return self._series.get(key)

    def keys(self) -> Iterable[SeriesKey]:
        """Every key recorded so far."""
        return self._series.keys()

    def drop_host(self, host: str) -> None:
        """Forget every series of ``host``."""
        for key in [k for k in self._series if k[0] == host]:
            del self._series[key]
        self._offset.pop(host, None)
        self._last_t.pop(host, None)
        self._pruned.pop(host, None)
        for key in [k for k in self._seen if k[0] == host]:
            del self._seen[key]

    @property
    def nbytes(self) -> int:
        """Bytes held by all series plus the index."""
        return sys.getsizeof(self._series) + sum(
            s.nbytes + sys.getsizeof(k) for k, s in self._series.items()
        )

    def _put(self, key: SeriesKey, t: float, value: float | None) -> None:
        # A series is created by its first value; a metric the host never reports
        # costs nothing, yet an existing series records the hole.
        if value is None:
            s = self._series.get(key)
            if s is not None:
                s.append(t, None)
        else:
            self.series(key).append(t, value)

    def _timeline(self, host: str, t: float, rates: HostRates) -> float:
        # When the wall clock stepped the rate engine followed uptime; the history does
        # too, so a step back does not stall the charts and a step forward leaves no hole.
        last = self._last_t.get(host)
        if rates.restarted:
            self._offset[host] = 0.0
        elif rates.clock_stepped and last is not None and rates.interval_s is not None:
            self._offset[host] = last + rates.interval_s - t
        t += self._offset.get(host, 0.0)
        if last is None or t > last:
            self._last_t[host] = t
        return t

    def record(self, t: float, sample: HostSample, rates: HostRates) -> None:
        """Append the standard series of one frame (``t``: remote unix time in seconds)."""
        host = sample.host
        t = self._timeline(host, t, rates)
        put = self._put
        for lid, link in sample.links.items():
            lr = rates.links.get(lid)
            if lr is not None:
                self._record_link_rates(host, lid, t, lr.rates, lr.gap)
            down = link.metrics.get("link_down_events")
            put((host, lid, "link_down_events"), t, down if isinstance(down, int) else None)
            put((host, lid, "temperature_c"), t, link.temperature_c)
        for gpu in sample.gpus:
            gid = f"gpu{gpu.index}"
            for name in _GPU_FIELDS:
                put((host, gid, name), t, getattr(gpu, name))
            thermal = any("thermal" in r.lower() for r in gpu.throttle_reasons)
            put((host, gid, "thermal_slowdown"), t, 1.0 if thermal else 0.0)
        for url, values in rates.inference.items():
            for name in _INFERENCE_FIELDS:
                put((host, url, name), t, values.get(name))
        seen = self._seen
        for subject in (*sample.links, *(f"gpu{g.index}" for g in sample.gpus), *rates.inference):
            seen[(host, subject)] = t
        if t - self._pruned.get(host, t - PRUNE_EVERY_S) >= PRUNE_EVERY_S:
            self._prune(host, t)

    def _prune(self, host: str, t: float) -> None:
        # Interfaces come and go (veth pairs of containers): forget the series of a subject
        # gone longer than the finest tier spans, so memory stays bounded on such nodes.
        self._pruned[host] = t
        gone = {subj for (h, subj), last in self._seen.items()
                if h == host and t - last > FORGET_AFTER_S}
        if not gone:
            return
        for key in [k for k in self._series if k[0] == host and k[1] in gone]:
            del self._series[key]
        for subj in gone:
            del self._seen[(host, subj)]

    def _record_link_rates(
        self, host: str, lid: str, t: float, r: dict[str, RateValue], gap: bool
    ) -> None:
        put = self._put
        for hname, rname in _LINK_RATES:
            rv = None if gap else r.get(rname)
            if isinstance(rv, dict):  # ecn_marked may be per priority (rx_prio{p}_marked)
                put((host, lid, hname), t, sum(rv.values()) if rv else None)
            else:
                put((host, lid, hname), t, rv)
        for name, is_ratio in _LINK_PRIO_RATES:
            v = None if gap else r.get(name)
            per = v if isinstance(v, dict) else {}
            total: float | None
            if isinstance(v, float):
                total = v
            elif per:
                total = max(per.values()) if is_ratio else sum(per.values())
            else:
                total = None
            put((host, lid, name, ""), t, total)
            for p, pkey in enumerate(_PRIO_KEYS):
                put((host, lid, name, pkey), t, per.get(p))


# The series History.record creates for one mlx5 RoCE port with one lossless priority
# (priority 3, as in the captures and the demo): link suffixes of the series keys.
ROCE_LINK_SERIES: tuple[tuple[str, ...], ...] = (
    ("link_down_events",),
    ("temperature_c",),
    *((name,) for name, _ in _LINK_RATES),
    *((name, p) for name, _ in _LINK_PRIO_RATES for p in ("", "3")),
)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def estimate_24h(
    links: int,
    hours: float = 24.0,
    link_series: Sequence[tuple[str, ...]] = ROCE_LINK_SERIES,
    tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
    coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
) -> tuple[int, int]:
    """History bytes and RSS growth for ``links`` RoCE links after ``hours`` at 1 Hz.

    One series of each kind is filled point by point (1 Hz for the raw ring's span, one
    point per finest coarse bucket before, which fills the tiers alike), then copied for
    every link, so the figure costs seconds, not a day of appends.
    """
    span = hours * 3600.0
    t0 = 1_700_000_000.0
    raw_span = tiers[0][0] * tiers[0][1]
    coarse_step = tiers[1][0] if len(tiers) > 1 else tiers[0][0]
    templates: dict[bool, Series] = {}
    for keep in (False, True):
        s = Series(tiers, keep, coarse_typecode)
        t = 0.0
        while t < span:
            s.append(t0 + t, float(int(t) % 97))
            t += coarse_step if t < span - raw_span else tiers[0][0]
        templates[keep] = s
    rss0 = _rss_bytes()
    hist = History(tiers, coarse_typecode=coarse_typecode)
    for i in range(links):
        host, lid = f"host{i // 2}", f"eth{i % 2}"
        for suffix in link_series:
            key = (host, lid, *suffix)
            hist._series[key] = copy.deepcopy(templates[hist._keep_max(key)])
    rss = _rss_bytes() - rss0
    return hist.nbytes, rss
