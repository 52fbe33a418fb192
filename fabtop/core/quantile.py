"""Quantiles from cumulative histogram buckets, as Prometheus' ``histogram_quantile`` computes them.

The rate engine feeds it the bucket deltas of two scrapes of an inference server's
latency histograms (TTFT, ITL); it is plain arithmetic over numbers, so it lives in the
core and not beside the text parser that reads the buckets.
"""

from __future__ import annotations

import math


def histogram_quantile(
    q: float, bounds: tuple[float, ...] | list[float], counts: tuple[float, ...] | list[float]
) -> float | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket holding rank q.

    ``counts`` are cumulative per upper bound (typically the delta of two scrapes); the
    last bound must be +Inf. None when there is nothing to estimate from.
    """
    if not 0.0 <= q <= 1.0 or len(bounds) != len(counts) or len(bounds) < 2:
        return None
    if not math.isinf(bounds[-1]):
        return None
    # Buckets scraped at slightly different moments can dip; Prometheus forces monotony.
    fixed: list[float] = []
    for c in counts:
        fixed.append(max(c, fixed[-1]) if fixed else c)
    total = fixed[-1]
    if total <= 0:
        return None
    rank = q * total
    i = next(k for k, c in enumerate(fixed) if c >= rank)
    if i == len(bounds) - 1:
        return bounds[-2]  # rank lies in the +Inf bucket: the highest finite bound
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0 if i == 0 else bounds[i - 1]
    below = 0.0 if i == 0 else fixed[i - 1]
    inside = fixed[i] - below
    if inside <= 0:
        return bounds[i]
    return start + (bounds[i] - start) * (rank - below) / inside
