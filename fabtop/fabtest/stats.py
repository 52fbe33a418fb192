"""Statistics of test results, computed by fabtop from raw samples, never taken from a tool.

Percentiles are nearest-rank: the ``q`` percentile of ``n`` samples is the sample of rank
``ceil(q * n)`` in ascending order. Every value it gives was measured (no interpolation
between two samples invents a latency nobody saw), and its rank says how many samples lie
beyond it: p99.9 of 10,000 samples is the 9990th, with 10 worse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fabtop.fabtest.plans import PERCENTILES


def rank(n: int, q: float) -> int:
    """The rank (from 1) of the nearest-rank ``q`` percentile (0 < q <= 1) of ``n`` samples."""
    if not 0.0 < q <= 1.0:
        raise ValueError(f"a percentile is in (0, 1], not {q}")
    # round(): 0.999 * 10000 is 9990.000000000002 in binary floating point, rank 9990.
    return max(1, math.ceil(round(q * n, 9)))


def nearest_rank(ordered: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile of ascending ``ordered``; None without samples."""
    r = rank(len(ordered), q)
    return ordered[r - 1] if ordered else None


def finite(samples: Sequence[float]) -> list[float]:
    """The samples that are numbers (a NaN or an infinity is a broken record, not a time)."""
    return [x for x in samples if math.isfinite(x)]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """What fabtop reports of one latency run, in microseconds."""

    n: int  # samples the figures come from
    mean_us: float | None
    min_us: float | None
    max_us: float | None
    p50_us: float | None
    p99_us: float | None
    p999_us: float | None
    dropped: int = 0  # samples that were not finite numbers


def summarize(samples_us: Sequence[float]) -> LatencySummary:
    """Count, mean, extremes and the reported percentiles of raw latency samples."""
    good = sorted(finite(samples_us))
    dropped = len(samples_us) - len(good)
    if not good:
        return LatencySummary(0, None, None, None, None, None, None, dropped)
    p50, p99, p999 = (nearest_rank(good, q) for q in PERCENTILES)
    return LatencySummary(
        n=len(good),
        mean_us=math.fsum(good) / len(good),
        min_us=good[0],
        max_us=good[-1],
        p50_us=p50,
        p99_us=p99,
        p999_us=p999,
        dropped=dropped,
    )


def jain_index(shares: Sequence[float]) -> float | None:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``: 1 when every sender got the same,
    ``1/n`` when one got everything. None without senders or when none moved a byte."""
    xs = [max(0.0, x) for x in shares]
    sq = math.fsum(x * x for x in xs)
    if not xs or sq <= 0.0:
        return None
    return math.fsum(xs) ** 2 / (len(xs) * sq)


def impact_factor(loaded: float | None, isolated: float | None) -> float | None:
    """GPCNeT's congestion impact factor: a figure under load divided by the same figure
    alone (None when either is missing or the isolated one is not positive)."""
    if loaded is None or isolated is None or isolated <= 0.0:
        return None
    return loaded / isolated
