"""A structured section's values: read off the wire by position, whole or as a delta.

The fast probe sends a structured section's values (collectors/structured.py) whole, or,
between its full frames, as a **delta**: only the values that moved since the values it
sent of that section in an earlier frame of the stream, as ``<position> <value>`` pairs
(or, ``enc=b64``, in binary), with ``base=<seq>`` naming that frame (docs/PROBE.md
"Structured sections"). The stream's
decoder (collectors/frames.py) keeps each section's last values and applies a delta only
to the very values it was made against: a delta whose base the decoder did not place (a
frame lost to a cap or garbage, a schema changed) is not placed, said in one warning,
until the probe sends the values whole again (every few seconds). Never a wrong value.

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
from binascii import a2b_base64, b2a_base64
from dataclasses import dataclass
from itertools import compress, count
from operator import lt, ne
from typing import cast

from collectors.numbers import U64_MAX, parse_uint

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
        warnings: list[str] = []
        for i, v in enumerate(vals):
            if v is not None and v > U64_MAX:
                vals[i] = None
                _warn(warnings, f"{names[i][:64]}: value beyond 64 bits")
        return vals, warnings
    tokens = text.split()
    if len(tokens) != n:
        return None, [f"{len(tokens)} values for {n} names: section not placed"]
    warnings = []
    out: list[int | None] = []
    for name, tok in zip(names, tokens, strict=True):
        v = None if tok == "-" else parse_uint(tok)
        if v is None and tok != "-":
            _warn(warnings, f"{name[:64]}: bad value {tok[:40]!r}")
        out.append(v)
    return out, warnings


# A values line as decode_changed keeps it: the line, its tokens and its values.
LastValues = tuple[str, list[str], list[int | None]]


def decode_changed(
    text: str, names: tuple[str, ...], last: LastValues | None
) -> tuple[list[int | None] | None, list[str], LastValues | None, list[int] | None]:
    """:func:`decode_values`, reading only the values that changed since ``last``.

    ``last``: this section's previous values line, its tokens and its values, as this
    function returned it (None: none kept). Most counters of a port do not move between
    two ticks (three in four here), and reading a number is most of what decoding costs,
    so a value whose token is the same as last time is taken from ``last``. Returns the values, the
    warnings, what to pass as ``last`` next tick, and the positions whose value changed
    since ``last`` (None: any may have); the values are those decode_values gives, and are
    shared with that next call: read them, do not change them.
    """
    if "\n" in text:
        text = text.replace("\n", " ")
    if last is not None:
        ptext, ptokens, pvals = last
        if text == ptext:
            return pvals, [], last, []
        tokens = text.split(" ")
        if len(tokens) == len(ptokens):
            moved = list(compress(count(), map(ne, tokens, ptokens)))
            if 2 * len(moved) <= len(tokens):
                vals = pvals.copy()
                for i in moved:
                    t = tokens[i]
                    # What _PLAIN takes (the unchanged tokens passed it last time); "-" and
                    # anything odd go to the whole decode, which says what it is.
                    if not (len(t) <= 20 and t.isdigit() and t.isascii()):
                        break
                    v = int(t)
                    if v > U64_MAX:
                        break
                    vals[i] = v
                else:
                    return vals, [], (text, tokens, vals), moved
    got, warnings = decode_values(text, names)
    # Kept only when every token was plain and read: a later line differs from it only
    # where a value moved, which is then read alone.
    keep = None
    if got is not None and not warnings and _PLAIN.fullmatch(text) is not None:
        keep = (text, text.split(" "), got)
    return got, warnings, keep, None


def _warn(warnings: list[str], msg: str) -> None:
    if len(warnings) < MAX_VALUE_WARNINGS:
        warnings.append(msg)
    elif len(warnings) == MAX_VALUE_WARNINGS:
        warnings.append("further bad values suppressed")


@dataclass(slots=True, eq=False)
class Values:
    """A structured section's values as its stream decoded them (frames.FrameDecoder).

    ``vals`` (None: not placed, ``warnings`` say why) are shared with the stream's next
    frame, which may be read against them: read them, never change them.
    """

    vals: list[int | None] | None
    warnings: list[str]
    # Positions not read (None in vals); None when vals is None.
    unread: tuple[int, ...] | None
    # Positions whose value changed since ``base``, in order (None: any may have).
    moved: list[int] | None = None
    base: list[int | None] | None = None  # the values ``moved`` is counted against
    line: LastValues | None = None  # what decode_changed reads the next whole line against
    # The section's text is its whole values line in decimal (else a delta, or binary:
    # the decoder then empties the text, and a recording writes the values in decimal).
    plain: bool = True


def _unread(vals: list[int | None]) -> tuple[int, ...]:
    return tuple(j for j, v in enumerate(vals) if v is None) if None in vals else ()


def _not_placed(why: str) -> Values:
    return Values(None, [why + ": section not placed"], None, plain=False)


def _moved_since(
    vals: list[int | None], last: Values | None
) -> tuple[list[int] | None, list[int | None] | None]:
    """Which positions differ from ``last``'s values (compared as numbers, in C)."""
    if last is None or last.vals is None or len(last.vals) != len(vals):
        return None, None
    return list(compress(count(), map(ne, vals, last.vals))), last.vals


def decode_whole(text: str, names: tuple[str, ...], last: Values | None) -> Values:
    """A whole values line (the ``text`` of a structured section), read against ``last``
    (the section's values in the stream's previous frame, or None) to find what moved."""
    line = last.line if last is not None else None
    vals, warnings, keep, moved = decode_changed(text, names, line)
    base = line[2] if moved is not None and line is not None else None
    if vals is None:
        return Values(None, warnings, None)
    if moved is None:  # after a delta there is no line to compare tokens with
        moved, base = _moved_since(vals, last)
    return Values(vals, warnings, _unread(vals), moved, base, keep)


def apply_delta(text: str, names: tuple[str, ...], last: Values) -> Values:
    """A decimal delta (``<position> <value>`` pairs, positions rising) applied to
    ``last``, the values it was made against. A position that cannot be read, repeats or
    lies outside the schema costs the section (a value somewhere would be stale); a bad
    value costs itself."""
    if "\n" in text:
        text = text.replace("\n", " ")
    if not text:  # nothing moved
        return _placed([], [], names, last, [], True)
    tokens = text.split(" ")
    # Plain when every token is ASCII digits (no "-", sign, "_" or other space): one look
    # at them all, cheaper than a pattern; a token too long for int() raises (slow path).
    if len(tokens) % 2 or not text.isascii() or not "".join(tokens).isdigit():
        return _delta_slow(text, names, last)
    try:
        pos = list(map(int, tokens[0::2]))
        new = list(map(int, tokens[1::2]))
    except ValueError:
        return _delta_slow(text, names, last)
    return _placed(pos, cast(list[int | None], new), names, last, [], max(new) <= U64_MAX)


def _delta_slow(text: str, names: tuple[str, ...], last: Values) -> Values:
    """A decimal delta with a token that is no plain number: each value read alone."""
    tokens = text.split()
    n = len(names)
    if len(tokens) % 2:
        return _not_placed(f"delta of {len(tokens)} tokens, not pairs")
    pos: list[int] = []
    for t in tokens[0::2]:
        p = parse_uint(t)
        if p is None or p >= n:
            return _not_placed(f"delta position {t[:20]!r} outside {n} names")
        pos.append(p)
    warnings: list[str] = []
    new: list[int | None] = []
    for p, tok in zip(pos, tokens[1::2], strict=True):
        v = None if tok == "-" else parse_uint(tok)
        if v is None and tok != "-":
            _warn(warnings, f"{names[p][:64]}: bad value {tok[:40]!r}")
        new.append(v)
    return _placed(pos, new, names, last, warnings)


def _placed(
    pos: list[int],
    new: list[int | None],
    names: tuple[str, ...],
    last: Values,
    warnings: list[str],
    numbers: bool = False,
) -> Values:
    """``new`` put at ``pos`` in a copy of ``last``'s values (positions checked here).
    ``numbers``: every one of ``new`` is an int of at most 64 bits (binary: nothing to
    look for; ``None in`` a list of ints costs a rich comparison per item)."""
    base = last.vals
    assert base is not None  # the decoder keeps only placed values
    n = len(names)
    if not pos:
        return Values(base, warnings, last.unread, [], base, None, False)
    if pos[-1] >= min(n, len(base)) or not all(map(lt, pos, pos[1:])):
        return _not_placed(
            f"delta of {len(pos)} values for {n} names: positions out of order or range"
        )
    vals = base.copy()
    if not numbers:  # the rare deltas: unread values, or one beyond 64 bits
        for i, (p, v) in enumerate(zip(pos, new, strict=True)):
            if v is not None and v > U64_MAX:
                new[i] = None
                _warn(warnings, f"{names[p][:64]}: value beyond 64 bits")
    for p, v in zip(pos, new, strict=True):
        vals[p] = v
    unread = last.unread if last.unread == () and (numbers or None not in new) else _unread(vals)
    return Values(vals, warnings, unread, pos, base, None, False)


# --- binary values: base64 of little-endian unsigned integers ------------------------

# One line of base64 carries at most this many characters (a multiple of 4: the lines
# join into one base64 text); a line stays far below every line cap.
B64_LINE = 4096
_U64 = "Q"
_U32 = "I" if array("I").itemsize == 4 else "L"
_SWAP = sys.byteorder != "little"


def _b64(text: str) -> bytes | None:
    if "\n" in text:
        text = text.replace("\n", "")
    try:
        return a2b_base64(text, strict_mode=True)
    except (BinasciiError, ValueError):  # not base64, or not ASCII
        return None


def _ints(blob: bytes, code: str) -> list[int]:
    arr = array(code)
    arr.frombytes(blob)
    if _SWAP:
        arr.byteswap()
    return arr.tolist()


def decode_whole_b64(text: str, names: tuple[str, ...], last: Values | None) -> Values:
    """Whole values in binary (``enc=b64``): base64 of one u64 per name, little-endian.
    Every value was read (the ioctl fills them all); a count that does not match costs
    the section."""
    n = len(names)
    if not text and n:
        return Values(None, [f"no values for {n} names"], None, plain=False)
    blob = _b64(text)
    if blob is None or len(blob) != 8 * n:
        got = "no base64" if blob is None else f"{len(blob)} bytes"
        return _not_placed(f"binary values: {got} for {n} names")
    vals = cast(list[int | None], _ints(blob, _U64))
    moved, base = _moved_since(vals, last)
    return Values(vals, [], (), moved, base, None, False)


def apply_delta_b64(text: str, names: tuple[str, ...], last: Values) -> Values:
    """A binary delta (``enc=b64``): base64 of k u32 positions then k u64 values."""
    blob = _b64(text)
    if blob is None or len(blob) % 12:
        got = "no base64" if blob is None else f"{len(blob)} bytes"
        return _not_placed(f"binary delta: {got}, not position-value pairs")
    k = len(blob) // 12
    return _placed(
        _ints(blob[: 4 * k], _U32),
        cast(list[int | None], _ints(blob[4 * k :], _U64)),
        names,
        last,
        [],
        True,
    )


def encode_whole_b64(vals: list[int]) -> str:
    """What :func:`decode_whole_b64` reads (for the simulated hosts and tests)."""
    return _lines(array(_U64, vals))


def encode_delta_b64(pos: list[int], vals: list[int]) -> str:
    """What :func:`apply_delta_b64` reads."""
    return _lines(array(_U32, pos), array(_U64, vals))


def _lines(*arrays: array[int]) -> str:
    blob = b""
    for arr in arrays:
        if _SWAP:
            arr = array(arr.typecode, arr)
            arr.byteswap()
        blob += arr.tobytes()
    text = b2a_base64(blob, newline=False).decode()
    return "\n".join(text[i : i + B64_LINE] for i in range(0, len(text), B64_LINE))


def values_line(vals: list[int | None], row: int = 512) -> str:
    """``vals`` as the probe sends them whole: lines of at most ``row`` values."""
    toks = ["-" if v is None else str(v) for v in vals]
    return "\n".join(" ".join(toks[i : i + row]) for i in range(0, len(toks), row))
