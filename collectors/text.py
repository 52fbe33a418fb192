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

# Whole escape sequences go, not only their introducer: an OSC 52 payload shown as text is
# still the attacker's text on the operator's screen. String commands (OSC, DCS, SOS, PM,
# APC; 7- and 8-bit forms) run to BEL or ST or the end; CSI to its final byte.
_SEQUENCE = re.compile(
    "(?:\x1b\\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|\x1b[ -~]?"
)

MAX_TEXT = 4096  # one remote string (a label, a firmware version, an error tail)


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """One line of remote text: control characters removed (a tab becomes a space), bounded."""
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    out = _CONTROL.sub(lambda m: " " if m.group() == "\t" else "", _SEQUENCE.sub("", text))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def clean_lines(text: str, limit: int = 16 * MAX_TEXT) -> str:
    """Multi-line remote text (an error's stderr tail): newlines kept, other controls removed."""
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    text = _SEQUENCE.sub("", text.replace("\r\n", "\n").replace("\t", " "))
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
