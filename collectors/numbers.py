"""Numbers from remote text, checked where they are parsed: bounded, finite, or None.

Python's ``int()`` raises on strings beyond 4300 digits and ``float()`` accepts ``nan``
and ``inf``; a counter is at most 64 bits. Every parser reads numbers through these, so
one bad token costs one value, never the section or the host.

Only ASCII digits are numbers. ``str.isdigit()`` is true for "²" and "①", which
``int()`` refuses (ValueError); ``int()`` and ``float()`` take "٣", full-width digits
(U+FF10-FF19) and underscores ("1_0" is 10): no tool fabtop reads prints any of them, so
here each is no number (None), never an exception and never a value read from a
look-alike.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1
ALL_ONES = frozenset({U64_MAX, U32_MAX})  # what a glitched or saturated read looks like

_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}")
MAX_FLOAT_TEXT = 64  # longer than any real float a tool prints
# The largest integer finite() takes as a float: a constant, as Python folds no power this
# big and computed 2**1023 on every call (1.9 µs for each integer value a scrape exports).
_FLOAT_INT_MAX = 2**1023


def is_digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits (what ``str.isdigit()`` is not)."""
    return text.isascii() and text.isdigit()


def parse_uint(text: str) -> int | None:
    """A non-negative counter (decimal, at most 64 bits); None for anything else."""
    t = text.strip()
    # isdigit() on ASCII is exactly [0-9]; the length check comes before int() (its limit).
    # (is_digits inline: this runs for every counter of a text frame)
    if len(t) > 20 or not (t.isascii() and t.isdigit()):
        return None
    v = int(t)
    return v if v <= U64_MAX else None


def parse_int(text: str) -> int | None:
    """A signed integer that fits in 64 bits; None for anything else."""
    t = text.strip()
    digits = t[1:] if t[:1] in ("+", "-") else t
    if len(digits) > 20 or not (digits.isascii() and digits.isdigit()):
        return None
    v = int(t)
    return v if -(2**63) <= v <= U64_MAX else None


def parse_hex(text: str) -> int | None:
    """``0x``-prefixed hexadecimal (a sysfs flag word, a bitmask) of at most 64 bits; else None."""
    t = text.strip()
    if _HEX.fullmatch(t) is None:
        return None
    digits = t[2:]
    return int(digits, 16)


def parse_float(text: str) -> float | None:
    """A finite float from a short ASCII token; None for NaN, ±Inf, garbage or huge text."""
    t = text.strip()
    if not t or len(t) > MAX_FLOAT_TEXT or not t.isascii() or "_" in t:
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
        return float(v) if abs(v) <= _FLOAT_INT_MAX else None
    return v if math.isfinite(v) else None


def _json_constant(_: str) -> None:
    return None  # NaN, Infinity, -Infinity: tokens Python's json accepts, JSON does not


def json_loads(text: str) -> Any:
    """``json.loads`` whose numbers are bounded and finite (a bad number becomes None).

    Raises ValueError for text that is not JSON, nesting too deep included (which the
    standard library reports as RecursionError).
    """
    try:
        return json.loads(
            text, parse_int=parse_int, parse_float=parse_float, parse_constant=_json_constant
        )
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
