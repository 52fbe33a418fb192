"""Remote and file-borne strings made safe to show: one place, used where strings are parsed.

A node, an inference server or a crafted file controls these bytes. C0 and C1 control
characters (ESC starts every terminal escape: OSC 0 sets the title, OSC 52 writes the
clipboard) and the bidirectional overrides are removed, so what reaches a terminal, a
log line or a spreadsheet is only text.
"""

from __future__ import annotations

import re

# C0 (U+0000-U+001F), DEL, C1 (U+0080-U+009F), and the bidi embeddings/overrides/isolates
# that can make a name read as something else.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What clean_lines() changes: every control but the newline (tab and CR included).
_NEEDS_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

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


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """One line of remote text: control characters removed (a tab becomes a space), bounded."""
    # Nearly every string is plain printable ASCII: that needs no regex (ethtool -S names
    # run through here by the hundred thousand per tick on a large host).
    if len(text) <= limit and text.isascii() and text.isprintable():
        return text
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    out = _CONTROL.sub(lambda m: " " if m.group() == "\t" else "", _strip_sequences(text))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def clean_lines(text: str, limit: int = 16 * MAX_TEXT) -> str:
    """Multi-line remote text (an error's stderr tail): newlines kept, other controls removed."""
    # A scan for one character class is ~10 ms per MB; the sequence regex below is ~15x that.
    if len(text) <= limit and _NEEDS_LINES.search(text) is None:
        return text
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    text = _strip_sequences(text.replace("\r\n", "\n").replace("\t", " "))
    out = _CONTROL_KEEP_LINES.sub("", text)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def has_control(text: str) -> bool:
    """Whether ``text`` still holds a character :func:`clean` removes (tests and checks)."""
    return _CONTROL.search(text) is not None


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
