"""Structured sections: values by position against a schema sent once (collectors/frames.py).

The fast probe sends its counters this way (``ethtool_S`` per netdev, and the counter
files of ``sysnet``/``sysib`` as ``sysnet_counters``/``sysib_counters``); everything else
stays text. :func:`decode_values` turns one values line into numbers with a few calls
into C (one pattern match, one split, one ``map(int)``), checked as every parser checks
numbers: at most 20 digits, at most 64 bits, ``-`` for a value the probe did not read.
Values run over lines of at most 512 (the probe's ``ROW``), one space apart.

:class:`StructuredEncoder` turns a text frame into the structured form the fast probe
sends, for the simulated hosts and the benchmarks; the probe has its own copy (it runs
on the node with the standard library only).
"""

from __future__ import annotations

import re
from itertools import compress, count
from operator import ne
from typing import cast

from collectors.frames import SCHEMA_KIND, Frame, Schema, Section
from collectors.numbers import U64_MAX, parse_uint

MAX_VALUE_WARNINGS = 20

# Plain values: decimal of at most 20 digits or "-", one space apart.
_PLAIN = re.compile(r"(?:[0-9]{1,20}|-)(?: (?:[0-9]{1,20}|-))*")

# The counter files the fast probe sends by position (the rest of sysfs stays text).
COUNTER_KINDS = {"sysnet": "sysnet_counters", "sysib": "sysib_counters"}
_IB_COUNTER_DIRS = frozenset({"counters", "counters_ext", "hw_counters"})


def is_counter_path(kind: str, rel: str) -> bool:
    """Whether ``rel`` of a ``sysnet``/``sysib`` dump is a counter sent by position."""
    parts = rel.split("/")
    if kind == "sysnet":
        return len(parts) == 3 and parts[1] == "statistics"
    if kind == "sysib":
        return len(parts) == 5 and parts[1] == "ports" and parts[3] in _IB_COUNTER_DIRS
    return False


def decode_values(
    text: str, names: tuple[str, ...]
) -> tuple[list[int | None] | None, list[str]]:
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


def section_values(
    section: Section, keys: tuple[str, ...] | None = None
) -> tuple[dict[str, int], list[str]]:
    """A structured section as ``key -> value``, keyed by its names or by ``keys`` (one per
    position; ``""`` drops one). A repeated key keeps its first value; unread values go."""
    schema = section.schema
    if schema is None:
        return {}, []
    vals, warnings = decode_values(section.text, schema.names)
    if vals is None:
        return {}, warnings
    return keyed_values(schema.names if keys is None else keys, vals), warnings


def keyed_values(keys: tuple[str, ...], vals: list[int | None]) -> dict[str, int]:
    """``key -> value`` by position (``""`` drops one); a repeated key keeps its first value
    (as the text parser does), an unread value (None) goes."""
    pairs = dict(zip(keys, vals, strict=True))
    if len(pairs) == len(vals) and None not in pairs.values() and "" not in pairs:
        return cast(dict[str, int], pairs)
    out: dict[str, int] = {}  # rare: repeats or unread values
    for key, v in zip(keys, vals, strict=True):
        if v is not None and key and key not in out:
            out[key] = v
    return out


class StructuredEncoder:
    """One stream's structured encoding of text frames (what the fast probe sends).

    ``ethtool_S`` text becomes values against a schema of its names; the counter lines
    of ``sysnet``/``sysib`` move into ``*_counters`` sections. A schema is sent in the
    first frame that needs it and again, under a new id, when its names change.
    """

    def __init__(self) -> None:
        self._sids: dict[tuple[str, str | None], Schema] = {}
        self._next = 1

    def encode(self, frame: Frame) -> Frame:
        out = Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, event=frame.event)
        for s in frame.sections:
            if s.schema is not None or s.status != "ok":
                out.sections.append(s)
            elif s.kind == "ethtool_S" and s.subject:
                self._ethtool(out, s)
            elif s.kind in COUNTER_KINDS:
                self._sysfs(out, s)
            else:
                out.sections.append(s)
        return out

    def _schema(self, out: Frame, kind: str, subject: str | None, names: list[str]) -> Schema:
        key = (kind, subject)
        schema = self._sids.get(key)
        if schema is None or list(schema.names) != names:
            schema = self._sids[key] = Schema(self._next, kind, tuple(names))
            self._next += 1
            out.sections.append(Section(SCHEMA_KIND, str(schema.sid), None, "ok",
                                        f"for={kind}", "\n".join(names)))
        return schema

    def _values(self, out: Frame, s: Section, kind: str, names: list[str],
                vals: list[str]) -> None:
        schema = self._schema(out, kind, s.subject, names)
        out.sections.append(Section(kind, s.subject, s.read_ns, "ok", f"schema={schema.sid}",
                                    " ".join(vals)))

    def _ethtool(self, out: Frame, s: Section) -> None:
        names: list[str] = []
        vals: list[str] = []
        for line in s.text.splitlines():
            name, sep, value = line.rpartition(":")
            value = value.strip()
            if sep and value.isascii() and value.isdigit():
                names.append(name.strip())
                vals.append(value)
        self._values(out, s, s.kind, names, vals)

    def _sysfs(self, out: Frame, s: Section) -> None:
        names: list[str] = []
        vals: list[str] = []
        text: list[str] = []
        for line in s.text.splitlines():
            path, _, value = line.partition(" ")
            if is_counter_path(s.kind, path):
                names.append(path)
                ok = value.isascii() and value.isdigit()
                vals.append(value if ok else "-")
                if not ok:
                    text.append(line)  # said by the text parser (N/A, a bad value)
            else:
                text.append(line)
        out.sections.append(Section(s.kind, s.subject, s.read_ns, "ok", s.detail,
                                    "\n".join(text)))
        if names:
            self._values(out, s, COUNTER_KINDS[s.kind], names, vals)
