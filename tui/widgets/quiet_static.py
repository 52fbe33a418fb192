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


def lines_of(content: object) -> int | None:
    """How many lines ``content`` takes at any width: a Text that never wraps (None: it
    may wrap, or cannot tell)."""
    if isinstance(content, Text) and content.no_wrap:
        return content.plain.count("\n") + 1
    return None


class QuietStatic(Static):
    """``update`` with what is shown already does nothing; new words in as many lines,
    that never wrap, repaint the widget alone."""

    # True for a widget whose size its CSS fixes (a one-line bar): new text repaints it
    # alone, with no layout of the screen.
    FIXED_SIZE = False
    _drawn: object = None
    _lines: int | None = None

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        sig = drawn_as(content)
        if sig is not None and sig == self._drawn:
            return
        self._drawn = sig
        # A panel of one line a host (the GPUs' thermal panel) changes its words every
        # tick: as long as it keeps its lines and its width is not its text's, its size
        # stays, and a layout would repaint every widget of the screen (512 GPUs' cells).
        lines, before = lines_of(content), self._lines
        self._lines = lines
        width = self.styles.width
        same_size = (
            lines is not None and lines == before and not (width is not None and width.is_auto)
        )
        super().update(content, layout=layout and not self.FIXED_SIZE and not same_size)
