"""A table cell of plain text made into segments directly, as rich draws it.

DataTable draws each cell through rich's Padding and Styled, then a wrap: about 80 us a
cell. A tick at 1 Hz repaints every changed cell on screen, and a screen of 64 hosts' GPUs
or PFC priorities changes hundreds of them (tui/widgets/keyed_table.py), as the links table
does at 1000 links (tui/widgets/virtual_table.py). A cell that is one line of printable
text that fits its column is made here, the same segments rich makes; any other (centred,
cut with an ellipsis, a tab, a control character) goes rich's way. tests/ui/test_cell_paint.py
checks the two agree on every cell the demo's screens draw and on the edges.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.segment import Segment
from rich.style import Style

Part = tuple[str, Style]  # a piece of the cell's text and its style, the cell's own included


def _rstripped(parts: Sequence[Part]) -> list[Part]:
    """The parts without the text's trailing blanks (rich right-justifies a line so)."""
    out = list(parts)
    while out:
        text, style = out[-1]
        kept = text.rstrip(" ")
        if kept:
            out[-1] = (kept, style)
            break
        out.pop()
    return out


def plain_segments(
    parts: Sequence[Part],
    own: Style,
    justify: JustifyMethod | None,
    width: int,
    padding: int,
    pre: Style,
    post: Style,
) -> list[Segment] | None:
    """The segments of a cell ``width`` cells wide, ``padding`` either side, of ``parts``
    in the cell's style ``own`` (its justified room takes it), with ``pre`` (the table's
    style, the column's meta, the cursor's colours) under it and ``post`` over it; None
    when the cell is not plain (rich's way then)."""
    inner = width - 2 * padding
    if justify not in (None, "default", "left", "right") or inner < 0:
        return None
    if not all(text.isprintable() for text, _ in parts):
        return None
    if justify == "right":
        parts = _rstripped(parts)
    room = inner - sum(cell_len(text) for text, _ in parts)
    if room < 0:  # cut with an ellipsis: rich's way
        return None
    edge = pre + post
    made = [(text, pre + style + post) for text, style in parts]
    pad = (" " * padding, edge)
    if justify == "right":
        out = [pad, (" " * room, pre + own + post), *made, pad]
    elif justify == "left":
        out = [pad, *made, (" " * room, pre + own + post), pad]
    else:  # as it is: the rest of the column in the cell's surroundings, not its style
        out = [pad, *made, (" " * (room + padding), edge)]
    return list(Segment.simplify(Segment(t, s) for t, s in out if t))
