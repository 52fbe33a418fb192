"""A structured section's values, read off the wire by position.

The fast probe sends a structured section's values (docs/PROBE.md "Structured sections")
whole in every frame: in decimal (counter files: ``-`` for a value it did not read), or,
``enc=b64``, as base64 of one little-endian u64 per name (what the ``ETHTOOL_GSTATS``
ioctl read: every value a number). Nothing is kept from one frame to the next: a frame
decodes on its own, with its stream's schemas.

:func:`decode_values` turns one values line into numbers with a few calls into C (one
pattern match, one split, one ``map(int)``), checked as every parser checks numbers: at
most 20 digits, at most 64 bits, ``-`` for a value the probe did not read. Values run
over lines of at most 512 (the probe's ``ROW``), one space apart.
"""

from __future__ import annotations

import re
import sys
from array import array
from binascii import Error as BinasciiError
from binascii import a2b_base64
from dataclasses import dataclass
from typing import cast

from collectors.numbers import U64_MAX, parse_uint
from collectors.warning_lines import WarningLines

MAX_VALUE_WARNINGS = 20

# Plain values: decimal of at most 20 digits or "-", one space apart.
_PLAIN = re.compile(r"(?:[0-9]{1,20}|-)(?: (?:[0-9]{1,20}|-))*")


def decode_values(text: str, names: tuple[str, ...]) -> tuple[list[int | None] | None, list[str]]:
    """The values of one structured section, by position; None when they cannot be placed.

    A bad token costs its one value (a warning naming the counter); a count that does not
    match the schema costs the section, since no value could be placed with certainty.
    """
    n = len(names)
    if "\n" in text:  # the probe writes at most 512 values per line
        text = text.replace("\n", " ")
    if not text:
        return ([], []) if n == 0 else (None, [f"no values for {n} names"])
    if _PLAIN.fullmatch(text) is not None:
        tokens = text.split(" ")
        if len(tokens) != n:
            return None, [f"{len(tokens)} values for {n} names: section not placed"]
        if "-" in text:
            vals: list[int | None] = [None if t == "-" else int(t) for t in tokens]
            top = max((v for v in vals if v is not None), default=0)
        else:
            ints = list(map(int, tokens))
            top = max(ints, default=0)
            vals = cast(list[int | None], ints)
        if top <= U64_MAX:
            return vals, []
        warnings = _warnings()
        for i, v in enumerate(vals):
            if v is not None and v > U64_MAX:
                vals[i] = None
                warnings.add(f"{names[i][:64]}: value beyond 64 bits")
        return vals, warnings
    tokens = text.split()
    if len(tokens) != n:
        return None, [f"{len(tokens)} values for {n} names: section not placed"]
    warnings = _warnings()
    out: list[int | None] = []
    for name, tok in zip(names, tokens, strict=True):
        v = None if tok == "-" else parse_uint(tok)
        if v is None and tok != "-":
            warnings.add(f"{name[:64]}: bad value {tok[:40]!r}")
        out.append(v)
    return out, warnings


def _warnings() -> WarningLines:
    return WarningLines(MAX_VALUE_WARNINGS, "further bad values suppressed")


@dataclass(slots=True, eq=False)
class Values:
    """A structured section's values as its stream decoded them (frames.FrameDecoder)."""

    vals: list[int | None] | None  # None: not placed (``warnings`` say why)
    warnings: list[str]
    # Positions not read (None in vals); None when vals is None.
    unread: tuple[int, ...] | None
    # The section's text is its values line in decimal (binary: the decoder empties the
    # text, and a recording writes the values in decimal).
    plain: bool = True


def _unread(vals: list[int | None]) -> tuple[int, ...]:
    return tuple(j for j, v in enumerate(vals) if v is None) if None in vals else ()


def decode_whole(text: str, names: tuple[str, ...]) -> Values:
    """A values line in decimal (the ``text`` of a structured section)."""
    vals, warnings = decode_values(text, names)
    if vals is None:
        return Values(None, warnings, None)
    return Values(vals, warnings, _unread(vals))


# --- binary values: base64 of little-endian unsigned integers ------------------------

_U64 = "Q"
_SWAP = sys.byteorder != "little"


def decode_whole_b64(text: str, names: tuple[str, ...]) -> Values:
    """Values in binary (``enc=b64``): base64 of one u64 per name, little-endian. Every
    value was read (the ioctl fills them all); a count that does not match costs the
    section."""
    n = len(names)
    if not text and n:
        return Values(None, [f"no values for {n} names"], None, plain=False)
    if "\n" in text:
        text = text.replace("\n", "")
    try:
        blob: bytes | None = a2b_base64(text, strict_mode=True)
    except (BinasciiError, ValueError):  # not base64, or not ASCII
        blob = None
    if blob is None or len(blob) != 8 * n:
        got = "no base64" if blob is None else f"{len(blob)} bytes"
        return Values(
            None, [f"binary values: {got} for {n} names: section not placed"], None, plain=False
        )
    arr = array(_U64)
    arr.frombytes(blob)
    if _SWAP:
        arr.byteswap()
    return Values(cast(list[int | None], arr.tolist()), [], (), False)


def values_line(vals: list[int | None], row: int = 512) -> str:
    """``vals`` as the probe sends them in decimal: lines of at most ``row`` values."""
    toks = ["-" if v is None else str(v) for v in vals]
    return "\n".join(" ".join(toks[i : i + row]) for i in range(0, len(toks), row))
