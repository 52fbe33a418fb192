"""One metric over time, bounded: a ring of raw points plus coarser rings of bucket means.

Memory is bounded whatever the run length (DESIGN.md §4): each tier is a ring (an
``array``; the raw times a list of floats that the series of a subject share) that grows
up to its capacity and then overwrites its oldest slot. Raw points keep float64
(timestamps need it); coarse buckets default to float32, which halves them and is far
finer than any chart can show.
A gap (``None``) is stored as NaN and a bucket that saw no value is NaN too,
never 0, so charts show the hole instead of a fake drop.
"""

from __future__ import annotations

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

# (step in seconds, number of slots): 1 s for 15 min, 10 s for 6 h, 1 min for 3 days.
DEFAULT_TIERS: tuple[tuple[float, int], ...] = ((1.0, 900), (10.0, 2160), (60.0, 4320))

# A pause this many times longer than the previous interval is a hole in the raw ring.
GAP_FACTOR = 3.0

FloatTypecode = Literal["d", "f"]

_NO_CLOCK = (-math.inf, 0.0)

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


class Series:
    """One metric over time: raw ring plus coarser tiers of bucket means (and maxima).

    Appending is the hot path (about a hundred series per host each second), so the
    finest tier lives in the series itself and a point is only written there: the coarse
    tiers take the points waiting in the raw ring (from ``_pend`` on) in one batch when
    the ring comes round to them, or when a reader wants a coarse tier. Buckets, sums and
    maxima come out as a point-by-point update makes them.
    """

    __slots__ = (
        "_cap",
        "_clock",
        "_coarse",
        "_pend",
        "_step",
        "_times",
        "_values",
        "_wi",
    )

    def __init__(
        self,
        tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
        keep_max: bool = True,
        coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
    ) -> None:
        if not tiers or any(cap < 1 or not step > 0 for step, cap in tiers):
            raise ValueError(f"bad tiers {tiers!r}: need (step > 0, capacity >= 1) pairs")
        # The finest tier: the samples as appended, with their own timestamps. Raw points
        # rather than 1-s buckets: a 1 Hz remote clock that jitters by a few ms would
        # otherwise leave empty buckets (false gaps) next to doubly filled ones.
        self._step, self._cap = tiers[0]
        # Times in a list, values in an array: the series of one subject are appended the
        # same time object (a list slot is a pointer to it, as small as a float64), and a
        # list store takes it as is where an array store parses it (PyArg_Parse, per point).
        self._times: list[float] = []
        self._values = array("d")
        self._wi = -1  # once the ring is full: the slot the next point overwrites (the oldest)
        self._pend = 0  # the oldest raw point the coarse tiers have not taken yet
        self._coarse = tuple(
            _Coarse(step, cap, keep_max, coarse_typecode) for step, cap in tiers[1:]
        )
        # (time of the last point, interval before it); a tuple that the series appended
        # together share (append_all). The first two points go the long way.
        self._clock = _NO_CLOCK

    def append(self, t: float, value: float | None) -> None:
        """Add one point; ``None`` is a gap. A point not newer than the last one is dropped."""
        t = float(t)  # a time kept as a float64 array would keep it
        # The steady state inline (as in append_all): newer, and no silence before it.
        last, last_dt = self._clock
        dt = t - last
        if 0.0 < dt <= GAP_FACTOR * last_dt:
            v = NAN if value is None else float(value)
            self._clock = (t, dt)
            wi = self._wi
            if wi < 0:
                times = self._times
                times.append(t)
                self._values.append(v)
                if len(times) == self._cap:
                    self._round()
            else:
                self._times[wi] = t
                self._values[wi] = v
                wi += 1
                if wi < self._cap:
                    self._wi = wi
                else:
                    self._round()
        else:
            self._append(t, value)

    def _append(self, t: float, value: float | None) -> None:
        """``append`` off the steady state: the first points, old points, silences."""
        last, last_dt = self._clock
        dt = t - last
        if self._times and not dt > 0:
            return
        if self._coarse and not -math.inf < t < math.inf:
            math.floor(t / self._coarse[0].step)  # raises here, not when the tiers take it
        # converted before the series changes: a value float() refuses leaves it as it was
        v = NAN if value is None else float(value)
        if not self._times:
            self._clock = (t, 0.0)
        else:
            if last_dt and dt > GAP_FACTOR * last_dt:
                # Nothing came for several intervals (host unreachable): mark the hole in
                # the raw ring too, or a chart would draw a line across it. The marker is
                # no point of the coarse tiers: they take what waits, then skip it.
                self._fold()
                if self._write(last + last_dt, NAN):
                    self._restart()
                self._pend = self._end()
            self._clock = (t, dt)
        if self._write(t, v):
            self._round()

    def _write(self, t: float, v: float) -> bool:
        """Put a point in the raw ring; True when it took the ring's last slot."""
        wi = self._wi
        if wi < 0:
            self._times.append(t)
            self._values.append(v)
            return len(self._times) == self._cap
        self._times[wi] = t
        self._values[wi] = v
        if wi + 1 < self._cap:
            self._wi = wi + 1
            return False
        return True

    def _round(self) -> None:
        """The raw ring's last slot was just written: the coarse tiers take what waits
        before the next point overwrites the oldest, and writing goes on from slot 0."""
        self._fold_to(self._cap)
        self._pend = 0
        self._restart()

    def _restart(self) -> None:
        """Go on writing from slot 0, the oldest point."""
        if self._wi < 0:
            # without the slack ``append`` over-allocates: a full ring never grows again
            self._times, self._values = self._times[:], _exact(self._values)
        self._wi = 0

    def _fold(self) -> None:
        """The coarse tiers take every point waiting for them."""
        self._fold_to(self._end())

    def _fold_to(self, hi: int) -> None:
        lo = self._pend
        if hi > lo and self._coarse:
            times = self._times[lo:hi]
            key = array("d", times).tobytes()
            values = self._values[lo:hi].tolist()  # a list: reading an array makes floats
            for tier in self._coarse:
                tier.fold(_spans(times, key, tier.step), values)
        self._pend = hi

    def _end(self) -> int:
        """The raw index the next point goes to."""
        return self._wi if self._wi >= 0 else len(self._times)

    def _start(self) -> int:
        """The raw index of the oldest point."""
        return self._wi if self._wi > 0 else 0

    def latest(self) -> float | None:
        """The newest point's value (None for a gap or an empty series)."""
        values = self._values
        if not values:
            return None
        return _none(values[(self._start() + len(values) - 1) % self._cap])

    def last(self, n: int, span_s: float | None = None) -> list[float | None]:
        """The newest ``n`` raw values, oldest first, without copying the ring.

        With ``span_s``, only points at most ``span_s`` older than the newest one count,
        as ``points(span_s)`` would select them (sparklines read this every tick).
        """
        size = len(self._values)
        if n <= 0 or not size:
            return []
        times, values, cap = self._times, self._values, self._cap
        end = self._start() + size - 1  # index of the newest point, before wrapping
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
        if not self._times:
            return [], []
        if now is None:
            now = self._clock[0]
        lo = now - span_s
        if self._wi < 0 or self._times[self._wi] <= lo + self._step or not self._coarse:
            s = self._start()
            times = self._times[s:] + self._times[:s]
            values = self._values[s:] + self._values[:s]
            i, j = bisect_left(times, lo), bisect_right(times, now)
            return list(times[i:j]), [_none(v) for v in values[i:j]]
        self._fold()
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
        """Bytes held by this series (arrays, headers and tier objects), tiers up to date."""
        self._fold()
        return (
            sys.getsizeof(self)
            + sys.getsizeof(self._times)
            + sys.getsizeof(self._values)
            + sum(c.nbytes() for c in self._coarse)
            + sys.getsizeof(self._coarse)
        )


def append_all(t: float, series: Iterable[Series], values: Iterable[float | None]) -> None:
    """``s.append(t, v)`` for each pair: one loop for a subject's series at one time.

    The steady state of ``Series.append`` inline, without a call per series (History
    appends about a hundred per host each second); keep the two in step. Series appended
    together share their clock, so whether a point is the steady state is decided once
    for them. Values are numbers or None, stored as the array converts them (as float()
    does numbers); one it refuses (TypeError) leaves its series as it was.
    """
    t = float(t)  # a time kept as a float64 array would keep it
    seen: object = None  # the clock of the series before
    ok = False
    clock = _NO_CLOCK
    for s, value in zip(series, values):  # noqa: B905 (strict= costs a keyword parse a call)
        c = s._clock
        if c is not seen:
            seen = c
            dt = t - c[0]
            ok = 0.0 < dt <= GAP_FACTOR * c[1]
            if ok and (t, dt) != clock:  # else: equal to the last group's, share that one
                clock = (t, dt)
        if ok:
            wi = s._wi
            if wi < 0:
                s._values.append(NAN if value is None else value)
                times = s._times
                times.append(t)
                s._clock = clock
                if len(times) == s._cap:
                    s._round()
            else:
                s._values[wi] = NAN if value is None else value
                s._times[wi] = t
                s._clock = clock
                wi += 1
                if wi < s._cap:
                    s._wi = wi
                else:
                    s._round()
        else:
            s._append(t, value)
