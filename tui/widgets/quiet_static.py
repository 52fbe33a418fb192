"""A Static that repaints only when what it shows changed.

Textual's ``Static.update`` refreshes with a layout on every call, and a layout repaints
every widget of the screen: a top line redrawn each tick with the same words repainted
the links table too, 1000 rows' worth of lines (tests/ui/test_refresh_cost.py). Text and
strings are compared by what they draw (the characters, styles and layout); anything
else (a Group of renderables) is shown as given.
"""

from __future__ import annotations

from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Static


def drawn_as(content: object) -> object:
    """What decides whether ``content`` draws differently (None: cannot tell)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Text):
        return (
            content.plain,
            str(content.style),
            tuple(content.spans),
            content.justify,
            content.overflow,
            content.no_wrap,
            content.end,
        )
    return None


class QuietStatic(Static):
    """``update`` with what is shown already does nothing."""

    # True for a widget whose size its CSS fixes (a one-line bar): new text repaints it
    # alone, with no layout of the screen.
    FIXED_SIZE = False
    _drawn: object = None

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        sig = drawn_as(content)
        if sig is not None and sig == self._drawn:
            return
        self._drawn = sig
        super().update(content, layout=layout and not self.FIXED_SIZE)
