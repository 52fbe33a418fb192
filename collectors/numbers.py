"""Numbers from remote text, checked where they are parsed: bounded, finite, or None.

Python's ``int()`` raises on strings beyond 4300 digits and ``float()`` accepts ``nan``
and ``inf``; a counter is at most 64 bits. Every parser reads numbers through these, so
one bad token costs one value, never the section or the host.
"""

from __future__ import annotations

import math
import re

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1
ALL_ONES = frozenset({U64_MAX, U32_MAX})  # what a glitched or saturated read looks like

_UINT = re.compile(r"[0-9]{1,20}")
_INT = re.compile(r"[+-]?[0-9]{1,20}")
MAX_FLOAT_TEXT = 64  # longer than any real float a tool prints


def parse_uint(text: str) -> int | None:
    """A non-negative counter (decimal, at most 64 bits); None for anything else."""
    t = text.strip()
    if not _UINT.fullmatch(t):
        return None
    v = int(t)
    return v if v <= U64_MAX else None


def parse_int(text: str) -> int | None:
    """A signed integer that fits in 64 bits; None for anything else."""
    t = text.strip()
    if not _INT.fullmatch(t):
        return None
    v = int(t)
    return v if -(2**63) <= v <= U64_MAX else None


def parse_float(text: str) -> float | None:
    """A finite float from a short token; None for NaN, ±Inf, garbage or huge text."""
    t = text.strip()
    if not t or len(t) > MAX_FLOAT_TEXT:
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def finite(v: float | int | None) -> float | None:
    """``v`` as a float when it is a finite number, else None (JSON values, computed sums)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return float(v) if abs(v) <= 2**1023 else None
    return v if math.isfinite(v) else None
