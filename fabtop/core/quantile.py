"""Quantiles from cumulative histogram buckets, as Prometheus' ``histogram_quantile`` computes them.

The rate engine feeds it the bucket deltas of two scrapes of an inference server's
latency histograms (TTFT, ITL); it is plain arithmetic over numbers, so it lives in the
core and not beside the text parser that reads the buckets.
"""

from __future__ import annotations

import math

Buckets = tuple[float, ...] | list[float]


def _usable(bounds: Buckets, counts: Buckets) -> bool:
    """Finite, strictly increasing bounds ending in +Inf, and finite, non-negative counts.

    A count that falls from one bound to the next is usable: the demo's and some
    servers' buckets are updated one by one, and Prometheus forces monotony for them.
    """
    if len(bounds) != len(counts) or len(bounds) < 2 or bounds[-1] != math.inf:
        return False
    prev_b = -math.inf
    for b in bounds[:-1]:
        if not (math.isfinite(b) and b > prev_b):
            return False
        prev_b = b
    return all(math.isfinite(c) and c >= 0 for c in counts)


def histogram_quantile(q: float, bounds: Buckets, counts: Buckets) -> float | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket holding rank q.

    ``counts`` are cumulative per upper bound (typically the delta of two scrapes); the
    last bound must be +Inf. None when there is nothing to estimate from, and for buckets
    that cannot be (NaN or Inf, bounds out of order): never raises.
    """
    if not 0.0 <= q <= 1.0 or not _usable(bounds, counts):
        return None
    # Buckets scraped at slightly different moments can dip; Prometheus forces monotony.
    fixed: list[float] = []
    for c in counts:
        fixed.append(max(c, fixed[-1]) if fixed else c)
    total = fixed[-1]
    if total <= 0:
        return None
    rank = q * total
    i = next((k for k, c in enumerate(fixed) if c >= rank), len(fixed) - 1)
    if i == len(bounds) - 1:
        return bounds[-2]  # rank lies in the +Inf bucket: the highest finite bound
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0 if i == 0 else bounds[i - 1]
    below = 0.0 if i == 0 else fixed[i - 1]
    inside = fixed[i] - below
    if inside <= 0:
        return bounds[i]
    frac = (rank - below) / inside  # in [0, 1]: divided first, so huge bounds cannot overflow
    v = start + (bounds[i] - start) * frac
    # Bounds of opposite sign near the float limit overflow their difference: the same
    # point as a weighted mean of the two, which stays between them.
    return v if math.isfinite(v) else start * (1.0 - frac) + bounds[i] * frac
