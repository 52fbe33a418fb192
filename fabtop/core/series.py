"""One metric over time, bounded: a ring of raw points plus coarser rings of bucket means.

Memory is bounded whatever the run length (DESIGN.md §4): each tier is a ring of
``array`` that grows up to its capacity and then overwrites its oldest slot. Raw points
keep float64 (timestamps need it); coarse buckets default to float32, which halves them
and is far finer than any chart can show.
A gap (``None``) is stored as NaN and a bucket that saw no value is NaN too,
never 0, so charts show the hole instead of a fake drop.
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Literal

NAN = math.nan

# (step in seconds, number of slots): 1 s for 15 min, 10 s for 6 h, 1 min for 3 days.
DEFAULT_TIERS: tuple[tuple[float, int], ...] = ((1.0, 900), (10.0, 2160), (60.0, 4320))

# A pause this many times longer than the previous interval is a hole in the raw ring.
GAP_FACTOR = 3.0

FloatTypecode = Literal["d", "f"]
DEFAULT_COARSE_TYPECODE: FloatTypecode = "f"


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
        raw = self._raw
        start = raw.start
        if start or len(raw.times) == raw.capacity:  # a full ring: the steady state, inline
            raw.times[start] = t
            raw.values[start] = v
            start += 1
            raw.start = start if start < raw.capacity else 0
        else:
            raw.push(t, v)
        floor = math.floor
        for tier in self._coarse:
            # Inline, the common case: one more value in the tier's current bucket.
            if v == v and floor(t / tier.step) == tier.cur_bucket:
                n = tier.cur_n + 1
                total = tier.cur_sum + v
                tier.cur_n, tier.cur_sum = n, total
                i = (tier.start + len(tier.means) - 1) % tier.capacity
                tier.means[i] = total / n
                maxes = tier.maxes
                if maxes is not None:
                    if not tier.cur_max >= v:
                        tier.cur_max = v
                    maxes[i] = tier.cur_max
            else:
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
