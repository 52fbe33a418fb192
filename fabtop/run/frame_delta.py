"""A frame written against the same host's previous frames (``fabtop.rec/3`` frame bodies).

A frame's wire text repeats most of the frame before it: the schemas' names, the slow
sections, every counter that did not move. zlib's 32 KB window cannot reach the host's
previous frame when frames are large or many hosts take turns, so the recording writes
each frame as what changed, and zlib then compresses what is left.

The text is cut into chunks: the lines before the first section, then each section from
its ``@@section`` line to the next (the ``@@end`` line ends the last one). A chunk's key is
its head's kind and subject (a second chunk of the same key in one frame gets `` 1``, and
so on); its base is the chunk of that key as this host last wrote it. A chunk without a
base is written as is. A chunk with one starts with ``@@>key``; then, line by line
against the base's line at the same place:

- a run of ``N`` equal lines: ``@@=N``;
- a line of as many space-separated tokens as the base line's: ``@@~`` and, per token,
  nothing where it did not change, the difference where a number (plain decimal) moved
  (``^k``: the same difference as the ``k``-th number before it in this frame, counters
  that move together), ``=`` and the token for any other change;
- any other line as is (``@@!`` in front of one that starts like a marker).

Writer and reader keep the same bases: updated after every frame, a key unseen for
:data:`FORGET_FRAMES` of its host's frames forgotten, and all of them forgotten at once
when together they pass :data:`MAX_BASE_BYTES`, so reading stays bounded whatever a file
holds. A frame the reader cannot rebuild (no base, a run past the base, a bad number)
raises ``ValueError``.
"""

from __future__ import annotations

import re
from itertools import compress
from operator import add, ne, sub

# A base unseen for this many of its host's frames goes (a section of an interface that
# went away); slow sections come once a minute, far more often than this at any interval.
FORGET_FRAMES = 3600
# What writer and reader keep of all hosts' bases together (bytes, as ``_keep`` counts
# them); past it both forget every base and the next frames are written whole.
MAX_BASE_BYTES = 64 * 1024 * 1024
# A number is plain decimal of at most this many digits (a u64 has 20).
MAX_DIGITS = 30
_MARKS = frozenset(("@@>", "@@=", "@@~", "@@!"))
_SECTION = "@@section "
_NUM = f"(?:0|[1-9][0-9]{{0,{MAX_DIGITS - 1}}})"
_NUMBER = re.compile(_NUM + r"\Z").match
_NUMBERS = re.compile(f"{_NUM}(?: {_NUM})*\\Z").match  # a values line
_DIFF = f"(?:-?{_NUM}|\\^[1-9][0-9]{{0,8}})"
_DIFFS = re.compile(f"{_DIFF}(?: {_DIFF})*\\Z").match
_COUNT = re.compile(r"[1-9][0-9]{0,8}\Z").match
_TOO_BIG = 10**MAX_DIGITS


def _key(head: str, used: set[str]) -> str:
    """The key of the chunk that ``head`` starts: kind and subject, made unique in the frame."""
    key = " ".join(head.split(" ", 3)[1:3]) if head.startswith(_SECTION) else ""
    full, n = key, 0
    while full in used:
        n += 1
        full = f"{key} {n}"
    used.add(full)
    return full


class _Host:
    __slots__ = ("bases", "frames")

    def __init__(self) -> None:
        # key -> (lines, the host's frame that last had it, bytes as _keep counts them)
        self.bases: dict[str, tuple[list[str], int, int]] = {}
        self.frames = 0


class FrameBases:
    """One side's bases, every host's; ``encode`` on the writer, ``decode`` on the reader."""

    __slots__ = ("_bytes", "_hosts")

    def __init__(self) -> None:
        self._hosts: dict[str, _Host] = {}
        self._bytes = 0

    def encode(self, host: str, text: str) -> str:
        """``text`` (a frame's wire text) as written against the host's bases."""
        h = self._hosts.get(host) or _Host()
        out: list[str] = []
        seen: dict[str, list[str]] = {}
        diffs = _Diffs()
        for key, chunk in _chunks(text):
            seen[key] = chunk
            got = h.bases.get(key)
            if got is None:
                out += ["@@!" + ln if ln[:3] in _MARKS else ln for ln in chunk]
                continue
            out.append("@@>" + key)
            _encode_chunk(got[0], chunk, diffs, out)
        self._keep(host, h, seen)
        return "\n".join(out)

    def decode(self, host: str, body: str) -> str:
        """The frame's wire text back from what ``encode`` wrote; ValueError if it cannot be."""
        h = self._hosts.get(host) or _Host()
        seen: dict[str, list[str]] = {}
        used: set[str] = set()
        diffs = _Diffs()
        chunk: list[str] | None = None
        base: list[str] | None = None
        head_due = False  # the line after @@>key is the chunk's head, whatever it holds
        for ln in body.split("\n"):
            mark = ln[:3]
            if mark == "@@>":
                key = ln[3:]
                if key in used:
                    raise ValueError(f"section {key!r} twice in one frame")
                used.add(key)
                got = h.bases.get(key)
                if got is None:
                    raise ValueError(f"no earlier section {key!r} of this host")
                base, chunk, head_due = got[0], [], True
                seen[key] = chunk
                continue
            if chunk is None or (not head_due and ln.startswith(_SECTION)):
                base, chunk = None, []
                seen[_key(ln, used)] = chunk
            head_due = False
            if mark == "@@!":
                chunk.append(ln[3:])
            elif mark not in _MARKS:
                chunk.append(ln)
            elif base is None:
                raise ValueError(f"{mark} in a section with no earlier one")
            elif mark == "@@=":
                n, i = _count(ln[3:]), len(chunk)
                if n > len(base) - i:
                    raise ValueError(f"a run of {ln[3:]!r} lines past the earlier section")
                chunk += base[i : i + n]
            else:  # @@~
                i = len(chunk)
                if i >= len(base):
                    raise ValueError("changed numbers past the earlier section")
                chunk.append(diffs.decode(base[i], ln[3:]))
        self._keep(host, h, seen)
        return "\n".join(ln for c in seen.values() for ln in c)

    def _keep(self, host: str, h: _Host, seen: dict[str, list[str]]) -> None:
        """The frame's chunks become the host's bases (both sides, the same way)."""
        h.frames += 1
        bases = h.bases
        for key, lines in seen.items():
            old = bases.get(key)
            size = sum(map(len, lines)) + 64 * len(lines)  # text, and a str and a slot a line
            self._bytes += size - (0 if old is None else old[2])
            bases[key] = (lines, h.frames, size)
        if h.frames % 64 == 0:
            for key in [k for k, got in bases.items() if h.frames - got[1] > FORGET_FRAMES]:
                self._bytes -= bases.pop(key)[2]
        self._hosts[host] = h
        if self._bytes > MAX_BASE_BYTES:
            for other in self._hosts.values():
                other.bases.clear()
            self._bytes = 0


def _encode_chunk(base: list[str], chunk: list[str], diffs: _Diffs, out: list[str]) -> None:
    """``chunk`` against ``base``, line by line, onto ``out``."""
    nb, lines, tail = len(base), chunk, 0
    if len(chunk) == nb and chunk[1:] == base[1:]:  # the usual: only the head moved (or none)
        lines, tail = chunk[:1], nb - 1
    run = 0
    for i, ln in enumerate(lines):
        if i < nb and base[i] == ln:
            run += 1
            continue
        if run:
            out.append(f"@@={run}")
            run = 0
        d = diffs.encode(base[i], ln) if i < nb else None
        out.append(d if d is not None else "@@!" + ln if ln[:3] in _MARKS else ln)
    if run + tail:
        out.append(f"@@={run + tail}")


def _chunks(text: str) -> list[tuple[str, list[str]]]:
    """The frame's lines cut into keyed chunks (see the module's docstring)."""
    first, *sections = text.split("\n" + _SECTION)
    chunks = [first.split("\n")] + [(_SECTION + s).split("\n") for s in sections]
    used: set[str] = set()
    return [(_key(c[0], used), c) for c in chunks]


def _count(text: str) -> int:
    if not _COUNT(text):
        raise ValueError(f"bad count {text[:20]!r}")
    return int(text)


class _Diffs:
    """The numbers' differences of one frame, in order: what ``^k`` points back into."""

    __slots__ = ("last", "seen")

    def __init__(self) -> None:
        self.seen: list[int] = []  # every difference so far
        self.last: dict[int, int] = {}  # a difference -> where it last came

    def encode(self, old: str, new: str) -> str | None:
        """``new`` against ``old``, token by token, or None when that is no shorter."""
        a, b = old.split(" "), new.split(" ")
        if len(a) != len(b):
            return None
        at = list(compress(range(len(a)), map(ne, a, b)))  # the tokens that changed
        xs, ys = list(map(a.__getitem__, at)), list(map(b.__getitem__, at))
        toks = [""] * len(a)  # a token that did not change: nothing
        if xs and _NUMBERS(" ".join(xs)) and _NUMBERS(" ".join(ys)):  # counters, the usual
            ds = list(map(sub, map(int, ys), map(int, xs)))
        else:  # text moved too (a clock, a float): that token as is
            ds, nums = [], []
            for i, x, y in zip(at, xs, ys, strict=True):
                if _NUMBER(x) and _NUMBER(y):
                    ds.append(int(y) - int(x))
                    nums.append(i)
                else:
                    toks[i] = "=" + y
            at = nums
        dtoks = list(map(str, ds))
        size = sum(map(len, toks)) + sum(map(len, dtoks)) + len(toks) + 2
        if size >= len(new):
            return None  # the line as is (decided before its numbers count in)
        self._refs(ds, dtoks)
        for i, t in zip(at, dtoks, strict=True):
            toks[i] = t
        return "@@~" + " ".join(toks)

    def _refs(self, ds: list[int], toks: list[str]) -> None:
        """Count ``ds`` in; one that came before in this frame (two or more digits) is
        written ``^k``: counters that move together (bytes on the port and on the netdev)."""
        start, last = len(self.seen), self.last
        self.seen += ds
        for i in compress(range(len(ds)), map((10).__le__, map(abs, ds))):
            d, pos = ds[i], start + i
            j = last.get(d)
            last[d] = pos
            if j is not None:
                toks[i] = f"^{pos - j}"

    def decode(self, old: str, enc: str) -> str:
        """The line ``encode`` wrote ``enc`` for, against ``old``; ValueError if none."""
        a, e = old.split(" "), enc.split(" ")
        if len(a) != len(e):
            raise ValueError("changed tokens do not match the earlier line")
        at = list(compress(range(len(e)), e))  # the tokens that changed
        out = a[:]
        if "=" in enc:  # text moved too: those tokens as written
            nums = []
            for i in at:
                if e[i][0] == "=":
                    out[i] = e[i][1:]
                else:
                    nums.append(i)
            at = nums
        xs = list(map(a.__getitem__, at))
        if xs and not _NUMBERS(" ".join(xs)):
            raise ValueError("a changed number where the earlier line has text")
        vals = list(map(add, map(int, xs), self._take(list(map(e.__getitem__, at)))))
        if vals and not (min(vals) >= 0 and max(vals) < _TOO_BIG):
            raise ValueError("a difference that makes no counter")
        for i, v in zip(at, map(str, vals), strict=True):
            out[i] = v
        return " ".join(out)

    def _take(self, toks: list[str]) -> list[int]:
        """The differences ``toks`` write, references resolved, counted in."""
        if not toks:
            return []
        if not _DIFFS(" ".join(toks)):
            raise ValueError("bad changed numbers")
        seen, start = self.seen, len(self.seen)
        if not any(t[0] == "^" for t in toks):
            seen += map(int, toks)
        else:
            for t in toks:
                if t[0] == "^":
                    pos = len(seen) - int(t[1:])
                    if pos < 0:
                        raise ValueError(f"a reference before the frame's first number {t!r}")
                    seen.append(seen[pos])
                else:
                    seen.append(int(t))
        return seen[start:]
