"""Counter deltas between two points in time, one rule for ``fabtop diff`` and the ``r`` baseline.

A counter missing at either end has no delta (None, never 0), and a counter that went
backwards was reset in between, so it has no honest delta either. Neither has one that
reads all-ones at either end: a glitched read, or a counter stuck at its maximum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from collectors.numbers import ALL_ONES
from collectors.samples import LinkSample


def value_delta(cur: int | float | None, base: int | float | None) -> float | None:
    """``cur - base``; None when either is missing or all-ones, or the counter was reset."""
    if cur is None or base is None or cur < base or cur in ALL_ONES or base in ALL_ONES:
        return None
    return float(cur - base)


def metric_delta(cur: Any, base: Any) -> float | dict[int, float] | None:
    """Delta of one normalized metric: a number, or per priority (priorities in both ends)."""
    if isinstance(cur, Mapping) and isinstance(base, Mapping):
        b = {int(k): v for k, v in base.items()}
        out = {}
        for k, v in cur.items():
            d = value_delta(v, b.get(int(k)))
            if d is not None:
                out[int(k)] = d
        return out or None
    if isinstance(cur, int | float) and isinstance(base, int | float):
        return value_delta(cur, base)
    return None


def _total(v: Any) -> float | None:
    if isinstance(v, Mapping):
        return float(sum(v.values())) if v else None
    return float(v) if isinstance(v, int | float) else None


def _ones(v: Any) -> bool:
    if isinstance(v, Mapping):
        return any(x in ALL_ONES for x in v.values())
    return isinstance(v, int) and v in ALL_ONES


def counts_since(cur: LinkSample, base: LinkSample | None, names: Iterable[str]) -> float | None:
    """Sum of the deltas of ``names`` since ``base`` (the 'r' baseline); None on a reset."""
    if base is None:
        return None
    out, seen = 0.0, False
    for n in names:
        cv, bv = cur.metrics.get(n), base.metrics.get(n)
        c, b = _total(cv), _total(bv)
        if c is None or b is None:
            continue
        if _ones(cv) or _ones(bv):
            return None  # a glitched or stuck read at either end: no honest delta
        if c < b:
            return None  # reset since the baseline: no honest delta
        out += c - b
        seen = True
    return out if seen else None


def link_deltas(cur: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """Every normalized metric's delta between two metric maps (missing or reset left out)."""
    out = {}
    for name, v in cur.items():
        d = metric_delta(v, base.get(name))
        if d is not None:
            out[name] = d
    return out
