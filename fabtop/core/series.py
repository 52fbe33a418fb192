"""One metric over time, bounded: a ring of raw points plus coarser rings of bucket means.

Memory is bounded whatever the run length (DESIGN.md §4): each tier is a ring (an
``array``) that grows up to its capacity and then overwrites its oldest slot. The raw
times are one ring per :class:`Clock`, which the series of a host share (they are
appended at the same frame times), each series holding only its values. Raw points keep
float64 (timestamps need it); coarse buckets default to float32, which halves them and
is far finer than any chart can show.
A gap (``None``) is stored as NaN and a bucket that saw no value is NaN too,
never 0, so charts show the hole instead of a fake drop.
"""

from __future__ import annotations

import copy
import math
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from functools import reduce
from itertools import repeat
from operator import add, truediv
from typing import Literal

NAN = math.nan

# (step in seconds, number of slots): 1 s for 15 min, 10 s for 6 h, 1 min for 24 h. The
# coarsest tier spans a day (DESIGN.md §8: a day of history per link): memory is level
# from then on.
DEFAULT_TIERS: tuple[tuple[float, int], ...] = ((1.0, 900), (10.0, 2160), (60.0, 1440))

# A pause this many times longer than the previous interval is a hole in the raw ring.
GAP_FACTOR = 3.0

FloatTypecode = Literal["d", "f"]

if sys.version_info < (3, 12):
    # adds one value at a time, in order: what a running sum updated point by point gives
    _sum_from = sum
else:  # from 3.12 on sum() compensates the rounding, which a running sum does not

    def _sum_from(values: list[float], start: float) -> float:
        return reduce(add, values, start)


DEFAULT_COARSE_TYPECODE: FloatTypecode = "f"


def _exact(a: array[float]) -> array[float]:
    """A copy without the slack ``append`` over-allocates: a full ring never grows again."""
    return array(a.typecode, a)


def _none(v: float) -> float | None:
    return None if v != v else v


class _Spans:
    """Where each bucket of one step starts and ends in a run of raw times (ascending)."""

    __slots__ = ("consecutive", "first", "runs", "slices")

    def __init__(self, times: list[float], step: float) -> None:
        floor = math.floor
        self.runs: list[tuple[int, int, int]] = []  # (bucket, start, end)
        i, hi = 0, len(times)
        while i < hi:
            b = floor(times[i] / step)
            # bisect on the bucket's end, then t / step itself decides (rounding near it)
            j = bisect_left(times, (b + 1) * step, i + 1, hi)
            while j > i + 1 and floor(times[j - 1] / step) > b:
                j -= 1
            while j < hi and floor(times[j] / step) <= b:
                j += 1
            self.runs.append((b, i, j))
            i = j
        self.slices = [slice(i, j) for _, i, j in self.runs]
        self.first = self.runs[0][0] if self.runs else 0
        # no bucket without a point between the first and the last
        self.consecutive = bool(self.runs) and self.runs[-1][0] - self.first == len(self.runs) - 1


# The last spans found for each step, with the times' bytes they were found for. The
# series of one subject are appended together, so their rings fill, and come round,
# alike: one after the other they ask for the spans of the same times.
_SPANS: dict[float, tuple[bytes, _Spans]] = {}


def _spans(times: list[float], key: bytes, step: float) -> _Spans:
    got = _SPANS.get(step)
    if got is not None and got[0] == key:
        return got[1]
    spans = _Spans(times, step)
    _SPANS[step] = (key, spans)
    return spans


class _Coarse:
    """One coarse tier: a ring of fixed-width buckets holding the mean (and max) of their points.

    Points reach it in batches (``fold``), in time order, each as the point-by-point
    update would take it: a point in a later bucket opens that bucket (the ones skipped
    are gaps), a value adds to the running sum, count and maximum of its bucket.
    """

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

    def fold(self, spans: _Spans, values: list[float]) -> None:
        """Take raw values, in time order, newer than any taken before (none a hole's
        marker), their buckets found in ``spans``.

        The usual case in one go, bucket after bucket with C loops (map): every bucket
        has a point, the first one is the current bucket or the next, no value is NaN.
        """
        cur = self.cur_bucket
        if not spans.consecutive or cur is None or not cur <= spans.first <= cur + 1:
            self._fold_each(spans.runs, values)
            return
        chunks = list(map(values.__getitem__, spans.slices))
        sums = list(map(_sum_from, chunks, repeat(0.0)))
        go_on = spans.first == cur  # the first chunk goes on with the current bucket
        if go_on:
            sums[0] = _sum_from(chunks[0], self.cur_sum)
        total = sum(sums)
        if total != total:  # NaN among them (gaps; or inf - inf): bucket by bucket
            self._fold_each(spans.runs, values)
            return
        counts = list(map(len, chunks))
        if go_on:
            counts[0] += self.cur_n
        means = list(map(truediv, sums, counts))
        tops: list[float] | None = None
        if self.maxes is not None:
            tops = list(map(max, chunks))  # the first of equal maxima, as point by point
            if go_on and self.cur_max >= tops[0]:
                tops[0] = self.cur_max
        self.cur_bucket = spans.first + len(chunks) - 1
        self.cur_sum, self.cur_n = sums[-1], counts[-1]
        self.cur_max = NAN if tops is None else tops[-1]
        if go_on:
            k = (self.start + len(self.means) - 1) % self.capacity
            self.means[k] = means[0]
            if self.maxes is not None and tops is not None:
                self.maxes[k] = tops[0]
            del means[0]
            if tops is not None:
                del tops[0]
        self._push_all(means, tops)

    def _push_all(self, means: list[float], tops: list[float] | None) -> None:
        """``_push`` for each (mean, max), in order, as whole slices."""
        i, n = 0, len(means)
        while i < n:
            cap = self.capacity
            if len(self.means) < cap:
                k = min(cap - len(self.means), n - i)
                self.means.extend(means[i : i + k])
                if self.maxes is not None and tops is not None:
                    self.maxes.extend(tops[i : i + k])
                if len(self.means) == cap:
                    self.means = _exact(self.means)
                    if self.maxes is not None:
                        self.maxes = _exact(self.maxes)
            else:
                st = self.start
                k = min(cap - st, n - i)
                self.means[st : st + k] = array(self.means.typecode, means[i : i + k])
                if self.maxes is not None and tops is not None:
                    self.maxes[st : st + k] = array(self.maxes.typecode, tops[i : i + k])
                self.start = (st + k) % cap
                self.first_bucket += k
            i += k

    def _fold_each(self, spans: list[tuple[int, int, int]], values: list[float]) -> None:
        """``fold`` bucket by bucket: gaps, NaN, a first bucket further on."""
        keep_max = self.maxes is not None
        for b, i, j in spans:
            cur = self.cur_bucket
            if cur is None or b > cur:
                if cur is None or b - cur > self.capacity:
                    del self.means[:]
                    if self.maxes is not None:
                        del self.maxes[:]
                    self.start = 0
                    self.first_bucket = b
                elif b - cur > 1:
                    for _ in range(b - cur - 1):  # buckets nobody wrote to are gaps
                        self._push(NAN, NAN)
                self.cur_bucket = b
                total, n, top = 0.0, 0, NAN
                new = True
            elif b == cur:
                total, n, top = self.cur_sum, self.cur_n, self.cur_max
                new = False
            else:  # older than the current bucket: not taken (never: times only grow)
                continue
            vals = values[i:j]
            got = _sum_from(vals, total)
            if got != got:  # NaN among them (gaps; or inf - inf): a bucket counts values
                vals = [v for v in vals if v == v]
                got = _sum_from(vals, total)
            if vals:
                total, n = got, n + len(vals)
                if keep_max:
                    m = max(vals)  # the first of equal maxima, as point by point
                    if not top >= m:
                        top = m
            self.cur_sum, self.cur_n, self.cur_max = total, n, top
            if new:
                mean = total / n if n else NAN
                means, maxes = self.means, self.maxes
                if len(means) < self.capacity:
                    means.append(mean)
                    if maxes is not None:
                        maxes.append(top)
                    if len(means) == self.capacity:
                        self.means = _exact(means)
                        if maxes is not None:
                            self.maxes = _exact(maxes)
                else:
                    k = self.start
                    means[k] = mean
                    if maxes is not None:
                        maxes[k] = top
                    self.start = (k + 1) % self.capacity
                    self.first_bucket += 1
            elif vals:
                k = (self.start + len(self.means) - 1) % self.capacity
                self.means[k] = total / n
                if self.maxes is not None:
                    self.maxes[k] = top

    def _push(self, mean: float, top: float) -> None:
        """Add a bucket (its mean and max) as the newest slot."""
        if len(self.means) < self.capacity:
            self.means.append(mean)
            if self.maxes is not None:
                self.maxes.append(top)
            if len(self.means) == self.capacity:
                self.means = _exact(self.means)
                if self.maxes is not None:
                    self.maxes = _exact(self.maxes)
        else:
            self.means[self.start] = mean
            if self.maxes is not None:
                self.maxes[self.start] = top
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


class Clock:
    """The raw times of series appended together (a host's): one ring for all of them.

    A slot is numbered by how many came before it (``k``); it sits at ``k % cap`` and holds
    the time of one frame, or of a hole: when nothing came for several intervals, a slot
    one interval after the last marks the silence, so a chart does not draw a line across
    it. Each series keeps its values in the same places. Before a slot is written over,
    every series of the clock hands its points of the round to its coarse tiers.
    """

    __slots__ = ("cap", "dt", "last", "members", "n", "times")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.times = array("d")
        self.n = 0  # slots written so far
        self.last = -math.inf  # the newest slot's time
        self.dt = 0.0  # the interval before it (0: the first point)
        self.members: dict[Series, None] = {}  # in order of creation

    def slot(self, t: float) -> int:
        """The slot of time ``t``: the newest when ``t`` is its time, a new one when later,
        -1 when older (a point not newer than the host's last is dropped)."""
        if t == self.last:
            return self.n - 1
        if not t > self.last:
            return -1
        if not -math.inf < t < math.inf:
            raise ValueError(f"a time of {t!r}")
        if self.n:
            dt = t - self.last
            if self.dt and dt > GAP_FACTOR * self.dt:
                self._write(self.last + self.dt)  # the hole: no series has a point there
            self.dt = dt
        self.last = t
        return self._write(t)

    def _write(self, t: float) -> int:
        k, cap, times = self.n, self.cap, self.times
        i = k % cap
        if k < cap:
            times.append(t)
            if k + 1 == cap:
                self.times = _exact(times)
        else:
            if i == 0:  # the oldest round is about to go: the coarse tiers take it first
                for s in self.members:
                    s._fold_to(k)
            times[i] = t
        self.n = k + 1
        return k

    def span(self, lo: int, hi: int) -> list[float]:
        """The times of slots ``lo`` to ``hi - 1`` (all still in the ring), oldest first."""
        return _ring(self.times, self.cap, lo, hi)

    def nbytes(self) -> int:
        return sys.getsizeof(self) + sys.getsizeof(self.times) + sys.getsizeof(self.members)


def _ring(a: array[float], cap: int, lo: int, hi: int) -> list[float]:
    """``a``'s entries for slots ``lo`` to ``hi - 1`` of a ring of ``cap``, oldest first."""
    if hi <= lo:
        return []
    i, n = lo % cap, hi - lo
    if i + n <= cap:
        return a[i : i + n].tolist()
    return a[i:].tolist() + a[: i + n - cap].tolist()


class Series:
    """One metric over time: raw values beside their clock's times, coarser tiers of bucket
    means (and maxima).

    Appending is the hot path (about a hundred series per host each second): a point is
    only written into the raw ring; the coarse tiers take the points waiting there (from
    ``_pend`` on) in one batch, when the clock comes round to them or when a reader wants
    a coarse tier. Buckets, sums and maxima come out as a point-by-point update makes them.
    A slot of the clock this series has no point in (its subject was not reported in that
    frame, or a silence) reads as a gap in the raw points; the coarse tiers skip it.
    """

    __slots__ = ("_clock", "_coarse", "_first", "_last", "_pend", "_step", "_values")

    def __init__(
        self,
        tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
        keep_max: bool = True,
        coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
        clock: Clock | None = None,
        max_span_s: float = math.inf,
    ) -> None:
        """``clock``: shared with the series appended at the same times (a private one
        otherwise); ``max_span_s``: maxima (``keep_max``) only in the coarse tiers that
        serve spans up to this long."""
        if not tiers or any(cap < 1 or not step > 0 for step, cap in tiers):
            raise ValueError(f"bad tiers {tiers!r}: need (step > 0, capacity >= 1) pairs")
        # The finest tier: the samples as appended, with their own timestamps. Raw points
        # rather than 1-s buckets: a 1 Hz remote clock that jitters by a few ms would
        # otherwise leave empty buckets (false gaps) next to doubly filled ones.
        self._step, cap = tiers[0]
        if clock is None:
            clock = Clock(cap)
        elif clock.cap != cap:
            raise ValueError(f"a clock of {clock.cap} slots for a raw tier of {cap}")
        self._clock = clock
        clock.members[self] = None
        # At the clock's slots (what is outside [_first, _last] is stale), as large as the
        # ring from the start: a write is one store.
        self._values = array("d", bytes(8 * cap))
        self._first = 0  # the slot of the oldest point (set by the first)
        self._last = -1  # the slot of the newest point
        self._pend = 0  # the oldest point the coarse tiers have not taken yet
        coarse: list[_Coarse] = []
        maxima = keep_max
        for step, n in tiers[1:]:
            coarse.append(_Coarse(step, n, maxima, coarse_typecode))
            maxima = maxima and step * n < max_span_s  # the next tier serves longer spans
        self._coarse = tuple(coarse)

    def append(self, t: float, value: float | None) -> None:
        """Add one point; ``None`` is a gap. A point not newer than the last one is dropped."""
        t = float(t)  # a time kept as a float64 array would keep it
        v = NAN if value is None else float(value)  # refused before the series changes
        k = self._clock.slot(t)
        if k > self._last:
            self._put(k, v)

    def _put(self, k: int, v: float | None) -> None:
        """Write the point of slot ``k`` (newer than the last): the first point, and one
        after slots without a point (``append_all`` writes the rest inline)."""
        last, cap, values = self._last, self._clock.cap, self._values
        # stored first: a value the array refuses (TypeError) leaves the series as it was
        values[k % cap] = NAN if v is None else v
        if last < 0:
            self._first = self._pend = k
        elif k > last + 1:
            # Slots this series has no point in: the coarse tiers take what waits, then skip
            # them; a raw reader sees gaps there (those still in the ring).
            self._fold()
            for j in range(max(last + 1, k - cap + 1), k):
                values[j % cap] = NAN
            self._pend = k
        self._last = k

    def _fold(self) -> None:
        """The coarse tiers take every point waiting for them."""
        self._fold_to(self._clock.n)

    def _fold_to(self, hi: int) -> None:
        """The coarse tiers take the points waiting before slot ``hi``."""
        lo, hi = self._pend, min(hi, self._last + 1)
        if hi > lo and self._coarse:
            times = self._clock.span(lo, hi)
            key = array("d", times).tobytes()
            values = _ring(self._values, self._clock.cap, lo, hi)
            for tier in self._coarse:
                tier.fold(_spans(times, key, tier.step), values)
        if hi > lo:
            self._pend = hi

    def _window(self) -> tuple[int, int]:
        """The slots of this series' points still in the raw ring: ``lo`` to ``hi - 1``."""
        c = self._clock
        if self._last < 0:
            return 0, 0
        return max(self._first, c.n - c.cap), self._last + 1

    def latest(self) -> float | None:
        """The newest point's value (None for a gap or an empty series)."""
        lo, hi = self._window()
        if hi <= lo:
            return None
        return _none(self._values[self._last % self._clock.cap])

    def newest(self) -> float | None:
        """The newest point's time (None for an empty series or one left the ring)."""
        lo, hi = self._window()
        return self._clock.times[(hi - 1) % self._clock.cap] if hi > lo else None

    def oldest(self) -> float | None:
        """The oldest point's time in any tier (a coarse bucket's start), None when empty."""
        c = self._clock
        if self._last < 0:
            return None
        if self._first >= c.n - c.cap:  # the ring still holds every point
            return c.times[self._first % c.cap]
        held = [t.oldest() for t in self._coarse if t.means]
        return min(held) if held else c.times[(c.n - c.cap) % c.cap]

    def since(self, t0: float) -> tuple[list[float], list[float | None]] | None:
        """The raw points newer than ``t0``, oldest first, found from the newest back: a
        view that extends its own bins each tick reads one or two points here, not the
        ring. None when the ring came round since ``t0`` (some of them are gone)."""
        lo, hi = self._window()
        c, values = self._clock, self._values
        times, cap = c.times, c.cap
        k = hi
        while k > lo and times[(k - 1) % cap] > t0:
            k -= 1
        if k == lo and self._first < lo:
            return None
        return [times[j % cap] for j in range(k, hi)], [
            _none(values[j % cap]) for j in range(k, hi)
        ]

    def last(self, n: int, span_s: float | None = None) -> list[float | None]:
        """The newest ``n`` raw values, oldest first, without copying the ring.

        With ``span_s``, only points at most ``span_s`` older than the newest one count,
        as ``points(span_s)`` would select them (sparklines read this every tick).
        """
        lo, hi = self._window()
        if n <= 0 or hi <= lo:
            return []
        c, values = self._clock, self._values
        times, cap = c.times, c.cap
        floor = None if span_s is None else times[(hi - 1) % cap] - span_s
        out: list[float | None] = []
        for k in range(hi - 1, max(lo, hi - n) - 1, -1):
            i = k % cap
            if floor is not None and times[i] < floor:
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
        if self._last < 0:
            return [], []
        c = self._clock
        lo_k, hi_k = self._window()
        if now is None:
            now = c.times[self._last % c.cap] if hi_k > lo_k else c.last
        lo = now - span_s
        raw_all = self._first >= c.n - c.cap  # the ring still holds every point
        if (
            raw_all
            or not self._coarse
            or (hi_k > lo_k and c.times[lo_k % c.cap] <= lo + self._step)
        ):
            times = c.span(lo_k, hi_k)
            values = _ring(self._values, c.cap, lo_k, hi_k)
            i, j = bisect_left(times, lo), bisect_right(times, now)
            return times[i:j], [_none(v) for v in values[i:j]]
        self._fold()
        tier = self._coarse[-1]
        for t in self._coarse:
            if not t.full() or t.oldest() <= lo + t.step:
                tier = t
                break
        ctimes, cvalues = tier.ordered(stat == "max")
        step = tier.step
        i = bisect_left(ctimes, lo - step + 1e-9)  # a bucket counts if it ends after lo
        j = bisect_right(ctimes, now)
        return ctimes[i:j], [_none(v) for v in cvalues[i:j]]

    @property
    def nbytes(self) -> int:
        """Bytes held by this series (arrays, headers and tier objects, tiers up to date)
        and its share of its clock's."""
        self._fold()
        c = self._clock
        return (
            sys.getsizeof(self)
            + sys.getsizeof(self._values)
            + sum(t.nbytes() for t in self._coarse)
            + sys.getsizeof(self._coarse)
            + c.nbytes() // max(1, len(c.members))
        )

    def copy(self) -> Series:
        """A series of its own with this one's points so far, on the same clock."""
        new = Series.__new__(Series)
        new._clock, new._step = self._clock, self._step
        new._values = array(self._values.typecode, self._values)
        new._first, new._last, new._pend = self._first, self._last, self._pend
        new._coarse = copy.deepcopy(self._coarse)
        self._clock.members[new] = None
        return new

    def drop(self) -> None:
        """Leave the clock (a series forgotten): it no longer keeps this one in step."""
        self._clock.members.pop(self, None)


def append_all(t: float, series: Iterable[Series], values: Iterable[float | None]) -> None:
    """``s.append(t, v)`` for each pair: one loop for a subject's series at one time.

    The steady state of ``Series._put`` inline, without a call per series (History
    appends about a hundred per host each second); keep the two in step. Series of one
    clock find the slot of ``t`` once. Values are numbers or None, stored as the array
    converts them (as float() does numbers); one it refuses (TypeError) leaves its series
    as it was.
    """
    t = float(t)  # a time kept as a float64 array would keep it
    seen: Clock | None = None  # the clock of the series before
    k = i = -1
    for s, value in zip(series, values):  # noqa: B905 (strict= costs a keyword parse a call)
        c = s._clock
        if c is not seen:
            seen = c
            k = c.slot(t)
            i = k % c.cap
        if k == s._last + 1:  # the steady state (an older time: k is -1, no write)
            s._values[i] = NAN if value is None else value
            s._last = k
        elif k > s._last:
            s._put(k, value)
