"""Remote and file-borne strings made safe to show: one place, used where strings enter.

A node, an inference server or a crafted file controls these bytes. Whole escape
sequences and every character that is not visible text are removed, so what reaches a
terminal, a log line, a JSON file or a spreadsheet is only text, and two names that look
alike are alike:

- C0 and C1 controls and DEL (ESC starts every terminal escape: OSC 0 sets the title,
  OSC 52 writes the clipboard);
- Unicode format characters (Cf: zero-width spaces and joiners U+200B-U+200D, the marks
  U+200E/U+200F, the bidirectional embeddings, overrides and isolates, U+FEFF, the tag
  characters U+E0000-U+E007F), private-use (Co), surrogates (Cs) and unassigned code
  points (Cn): Python's ``str.isprintable`` is False for each of them;
- the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), letters that draw nothing;
- a space other than the ASCII one (Zs, NBSP, ideographic) and a tab become a space.

Strings are cleaned where they enter (the transports' error lines, the parsers, the
loaders of files), once: a stored snapshot holds no sequence for ``jq -r`` to replay.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Letters that draw nothing (category Lo, so isprintable() passes them).
_FILLERS = "\u115f\u1160\u3164\uffa0"
_FILLER = re.compile(f"[{_FILLERS}]")

# Whole escape sequences go, not only their introducer: an OSC 52 payload shown as text is
# still the attacker's text on the operator's screen. String commands (OSC, DCS, SOS, PM,
# APC; 7- and 8-bit forms) run to BEL or ST or the end; CSI to its final byte.
_SEQUENCE = re.compile(
    "(?:\x1b\\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|\x1b[ -~]?"
)

_INTRODUCER = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")


def _strip_sequences(text: str) -> str:
    """``text`` without its escape sequences.

    A scan for the few introducer characters is fast; the sequence pattern only runs
    where one is found (run over a whole 15 MB page it holds the GIL for a second).
    """
    parts: list[str] = []
    pos = 0
    search, match = _INTRODUCER.search, _SEQUENCE.match
    while (m := search(text, pos)) is not None:
        start = m.start()
        parts.append(text[pos:start])
        seq = match(text, start)
        pos = seq.end() if seq is not None and seq.end() > start else start + 1
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


MAX_TEXT = 4096  # one remote string (a label, a firmware version, an error tail)


def _visible(text: str, keep: str = "") -> str:
    """``text`` with every character that is not visible text removed (those in ``keep``
    kept; a tab and any non-ASCII space made a space)."""
    out = []
    for c in text:
        if c.isprintable():
            if c not in _FILLERS:
                out.append(c)
        elif c in keep:
            out.append(c)
        elif c == "\t" or unicodedata.category(c) == "Zs":
            out.append(" ")
    return "".join(out)


def _plain(text: str) -> bool:
    """Nothing to clean: visible text only (one C call for ASCII, two otherwise)."""
    return text.isprintable() and (text.isascii() or _FILLER.search(text) is None)


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """One line of remote text: sequences and invisible characters removed, bounded."""
    # Nearly every string is plain printable ASCII: that needs no regex (ethtool -S names
    # run through here by the hundred thousand per tick on a large host).
    if len(text) <= limit and _plain(text):
        return text
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    out = _visible(_strip_sequences(text))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def clean_lines(text: str, limit: int = 16 * MAX_TEXT) -> str:
    """Multi-line remote text (an error's stderr tail): newlines kept, the rest as clean()."""
    if len(text) <= limit and all(map(_plain, text.split("\n"))):
        return text
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    text = _strip_sequences(text.replace("\r\n", "\n"))
    out = _visible(text, keep="\n")
    return out if len(out) <= limit else out[: limit - 1] + "…"


def has_control(text: str) -> bool:
    """Whether ``text`` still holds a character :func:`clean` removes (tests and checks)."""
    return not _plain(text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "|", "%")


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a leading formula character is quoted away."""
    text = clean(text)
    if text.startswith(_FORMULA_START):
        # A number like -3 or +1.5 stays a number; anything else starting a formula is text.
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


# Names repeat on every host and every refresh (the dashboard's grid numbers rails each
# tick): bounded, and a pure function of the name.
@functools.lru_cache(maxsize=4096)
def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key comparing the numbers inside a name as numbers (node2 < node10, mlx5_2 <
    mlx5_10): hosts and ports are read in that order."""
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|\D+", text))
