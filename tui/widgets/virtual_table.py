"""A table that builds and paints only the rows on screen (issue 32 item 6).

It holds every row's key and model object (for the scrollbar, the cursor, sorting and
search), but turns a row into cells only while the row is on screen: at 1000 links a tick
formats the fifty rows a person sees, not a thousand. A tick repaints only the lines
whose cells changed (``lines_drawn`` counts them); a line that did not change is not
painted. Each cell is rendered as DataTable renders it (the same styles and component
classes, so the screen looks the same), through a cache keyed by the cell's content.

Replaced DataTable for the links (benchmarks/tui_refresh.py, 1000 links): DataTable
holds and sorts every row's cells and repaints every visible line on any update.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, Generic, NamedTuple, TypeVar

from rich.console import ConsoleOptions
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.widgets.cell_paint import plain_segments
from tui.widgets.keyed_table import Column, Spec

R = TypeVar("R")
PADDING = 1  # cells either side of a cell's text, as DataTable's cell_padding


class _Look(NamedTuple):
    """The styles a paint draws with, resolved from CSS (focus and theme included)."""

    base: Style
    header: Style
    cursor: Style
    show_cursor: bool


@dataclass(slots=True)
class _Line:
    """One screen line as last drawn: its row, cells and cursor; its strip once painted."""

    key: str
    cells: tuple[Spec, ...]
    on_cursor: bool
    strip: Strip | None = None


class VirtualTable(ScrollView, Generic[R], can_focus=True):
    """Rows keyed by a string, cells made by ``cells_of`` only for the rows on screen."""

    DEFAULT_CSS = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"datatable--header", "datatable--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home,home", "first", "Top", show=False),
        Binding("ctrl+end,end", "last", "Bottom", show=False),
    ]

    class RowChosen(Message):
        """Enter on a row, or a click on the row under the cursor."""

        def __init__(self, table: VirtualTable[object], key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class CursorMoved(Message):
        """The cursor is on another row."""

        def __init__(self, table: VirtualTable[object], key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class HeaderClicked(Message):
        """A click on a column's header."""

        def __init__(self, table: VirtualTable[object], column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

    header_height = 1  # lines of the header, as DataTable's

    def __init__(
        self,
        cells_of: Callable[[R], Mapping[str, Spec]],
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._cells_of = cells_of
        self._columns: tuple[Column, ...] = ()
        self._labels: tuple[Text, ...] = ()
        self._keys: list[str] = []
        self._rows: list[R] = []
        self._index: dict[str, int] = {}
        self.cursor_row = 0
        self._lines: dict[int, _Line] = {}  # screen line -> as last drawn
        self._header: Strip | None = None
        # Rendered cells by (cell, width, column, cursor, look): a cell that did not
        # change is not rendered again, whichever row it moved to.
        self._drawn: LRUCache[tuple[Spec, int, int, bool, _Look], list[Segment]] = LRUCache(4096)
        self._look: _Look | None = None
        self.rebuilds = 0  # column-set changes; a test checks ticks do not rebuild
        self.lines_drawn = 0  # header and row lines painted (tests count them)

    # ---- the model ----------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def column_keys(self) -> tuple[str, ...]:
        """Keys of the shown columns, in order."""
        return tuple(c.key for c in self._columns)

    @property
    def columns(self) -> tuple[Column, ...]:
        return self._columns

    def labels(self) -> dict[str, str]:
        """Each column's header as set (the sorted one with its arrow), by column key."""
        return {c.key: t.plain for c, t in zip(self._columns, self._labels, strict=True)}

    def set_columns(self, columns: Sequence[Column], labels: Sequence[str] | None = None) -> None:
        """The columns (fixed widths) and their header labels (default: each column's)."""
        cols = tuple(columns)
        texts = tuple(
            Text(lab, justify="right" if c.numeric else "left", no_wrap=True, overflow="ellipsis")
            for c, lab in zip(cols, labels or [c.label for c in cols], strict=True)
        )
        if cols == self._columns and texts == self._labels:
            return
        if tuple(c.key for c in cols) != self.column_keys:
            self.rebuilds += 1
        self._columns, self._labels = cols, texts
        self._header = None
        self._lines.clear()
        self._size_virtual()
        self.refresh()

    def set_rows(self, keys: Sequence[str], rows: Sequence[R]) -> None:
        """Show exactly ``rows``, keyed by ``keys``, in that order; the cursor stays on its
        key.

        Only the lines on screen whose cells changed are painted again.
        """
        before, was = self.cursor_key(), self.cursor_row
        keys, self._rows = list(keys), list(rows)
        if len(keys) != len(self._rows):
            raise ValueError(f"{len(keys)} keys for {len(self._rows)} rows")
        if keys != self._keys:  # most ticks keep the order: the index stays
            self._keys = keys
            self._index = {k: i for i, k in enumerate(keys)}
        if before is not None and before in self._index:
            self.cursor_row = self._index[before]
        self.cursor_row = max(0, min(self.cursor_row, len(self._keys) - 1))
        self._size_virtual()
        if before is not None and self.cursor_key() == before and self.cursor_row != was:
            # Rows came or went above the cursor's: the view moves with it, so the row
            # under the cursor stays on its line (what was read is not pulled away).
            top = max(0, int(self.scroll_y) + self.cursor_row - was)
            top = min(top, max(0, len(self._keys) - self._page))
            if top != int(self.scroll_y):
                self.scroll_to(y=top, animate=False, immediate=True, force=True)
        self._mark_changed()
        if self.cursor_key() != before:
            self.post_message(self.CursorMoved(self, self.cursor_key()))  # type: ignore[arg-type]

    def _size_virtual(self) -> None:
        width = sum((c.width or 0) + 2 * PADDING for c in self._columns)
        self.virtual_size = Size(width, len(self._keys) + self.header_height)

    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        return list(self._keys)

    def row(self, key: str) -> R | None:
        """The model object of row ``key``."""
        i = self._index.get(key)
        return None if i is None else self._rows[i]

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    def index_of(self, key: str) -> int | None:
        """Where row ``key`` is (None: not shown)."""
        return self._index.get(key)

    def cursor_key(self) -> str | None:
        """Key of the row under the cursor."""
        if not self._keys:
            return None
        return self._keys[self.cursor_row]

    def get_cell(self, key: str, column: str) -> Text:
        """The cell of row ``key`` in ``column``: as drawn, on screen; else as it would be."""
        for line in self._lines.values():
            if line.key == key:
                return line.cells[self.column_keys.index(column)].text()
        return self._cells_of(self._rows[self._index[key]])[column].text()

    def move_cursor(self, *, row: int, scroll: bool = True) -> None:
        """Put the cursor on ``row`` (clamped), scrolled into view."""
        before = self.cursor_key()
        self.cursor_row = max(0, min(row, len(self._keys) - 1))
        if scroll:
            self._cursor_into_view()
        self._mark_changed()
        if self.cursor_key() != before:
            self.post_message(self.CursorMoved(self, self.cursor_key()))  # type: ignore[arg-type]

    @property
    def _page(self) -> int:
        """Rows on screen under the header."""
        return max(1, self.scrollable_content_region.height - self.header_height)

    def _cursor_into_view(self) -> None:
        top = int(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True, force=True)
        elif self.cursor_row >= top + self._page:
            y = self.cursor_row - self._page + 1
            self.scroll_to(y=y, animate=False, immediate=True, force=True)

    # ---- painting -------------------------------------------------------------------

    def _row_at_line(self, y: int) -> int:
        return int(self.scroll_y) + y - self.header_height

    def _line_now(self, y: int) -> _Line | None:
        """Screen line ``y`` as it must look now (None: past the last row)."""
        i = self._row_at_line(y)
        if not 0 <= i < len(self._keys):
            return None
        key = self._keys[i]
        cells = self._cells_of(self._rows[i])
        specs = tuple(cells.get(c.key) or Spec("") for c in self._columns)
        return _Line(key, specs, i == self.cursor_row and self.has_focus)

    def _mark_changed(self) -> None:
        """Repaint the lines on screen whose row, cells or cursor changed."""
        dirty: list[int] = []
        for y in range(self.header_height, self.size.height):
            now = self._line_now(y)
            old = self._lines.get(y)
            if now is None:
                if old is not None:
                    del self._lines[y]
                    dirty.append(y)
                continue
            if (
                old is None
                or old.key != now.key
                or old.on_cursor != now.on_cursor
                or old.cells != now.cells
            ):
                self._lines[y] = now
                dirty.append(y)
        if dirty:
            # One call, each run of neighbouring lines one region: every refresh() call
            # clears the widget's style caches, and at 1 Hz most lines on screen change.
            width = self.size.width
            runs: list[Region] = []
            for y in dirty:
                last = runs[-1] if runs else None
                if last is not None and last.bottom == y:
                    runs[-1] = Region(0, last.y, width, last.height + 1)
                else:
                    runs.append(Region(0, y, width, 1))
            self.refresh(*runs)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._lines.clear()

    def on_resize(self, event: events.Resize) -> None:
        self._lines.clear()
        self._header = None

    def on_focus(self) -> None:
        self._mark_changed()

    def on_blur(self) -> None:
        self._mark_changed()

    def _new_look(self) -> _Look:
        look = _Look(
            base=self.rich_style,
            header=self.get_component_styles("datatable--header").rich_style,
            cursor=self.get_component_rich_style("datatable--cursor"),
            show_cursor=self.has_focus,
        )
        if look != self._look:
            self._look = look
            self._header = None
            self._lines.clear()
        return look

    def render_lines(self, crop: Region) -> list[Strip]:
        """Resolve the styles once for the lines this paint asks for."""
        self._new_look()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the widget: the header, or the row there."""
        self.lines_drawn += 1
        look = self._look or self._new_look()
        width = self.size.width
        scroll_x = int(self.scroll_x)
        if y == 0:
            if self._header is None:
                self._header = self._strip(self._labels, look, header=True, on_cursor=False)
            return self._header.crop(scroll_x, scroll_x + width)
        i = self._row_at_line(y)
        if not 0 <= i < len(self._keys):
            return Strip.blank(width, look.base)
        # The line as the last tick left it (set_rows and the cursor keep it current), or
        # made now: scrolled into view, or the look changed.
        line = self._lines.get(y)
        if (
            line is None
            or line.key != self._keys[i]
            or line.on_cursor != (i == self.cursor_row and self.has_focus)
        ):
            line = self._line_now(y)
            assert line is not None
            self._lines[y] = line
        if line.strip is None:
            line.strip = self._strip(line.cells, look, header=False, on_cursor=line.on_cursor)
        return line.strip.crop(scroll_x, scroll_x + width)

    def _strip(
        self, cells: Sequence[Spec | Text], look: _Look, header: bool, on_cursor: bool
    ) -> Strip:
        """One line: each cell padded to its column, the rest of the width in its style."""
        options = self.app.console_options.update(no_wrap=True, height=1)
        style = look.header if header else look.base
        highlight = look.cursor if on_cursor else Style()
        segments: list[Segment] = []
        total = 0
        for i, (col, cell) in enumerate(zip(self._columns, cells, strict=False)):
            w = (col.width or 0) + 2 * PADDING
            total += w
            if isinstance(cell, Text):  # a header label
                segments.extend(_render(cell, w, style, highlight, options, self, i))
                continue
            key = (cell, w, i, on_cursor, look)
            got = self._drawn.get(key)
            if got is None:
                got = _plain_cell(cell, w, style, highlight, self.app.console.get_style, i)
                if got is None:
                    text = cell.text()
                    if text.overflow is None:
                        text.overflow = "ellipsis"
                    got = _render(text, w, style, highlight, options, self, i)
                self._drawn[key] = got
            segments.extend(got)
        rest = max(0, self.size.width - total)
        segments.append(Segment(" " * rest, style + highlight + _REST))
        # Cells are not merged into their neighbours (as DataTable's, whose cells differ
        # by their mouse meta): the screen's text runs stay the ones DataTable drew.
        return Strip(segments, total + rest)

    def drawn_cells(self, row: int) -> list[str]:
        """Each cell of ``row`` (-1: the header) as drawn in its column, padding off:
        tests read what a user would see in each column, on screen or not."""
        look = self._look or self._new_look()
        options = self.app.console_options.update(no_wrap=True, height=1)
        if row < 0:
            cells: Sequence[Text] = self._labels
        else:
            made = self._cells_of(self._rows[row])
            cells = [(made.get(c.key) or Spec("")).text() for c in self._columns]
        out = []
        for col, cell in zip(self._columns, cells, strict=False):
            if cell.overflow is None:
                cell.overflow = "ellipsis"
            w = (col.width or 0) + 2 * PADDING
            segs = _render(cell, w, look.base, Style(), options, self, 0)
            text = "".join(s.text for s in segs)
            out.append(text[PADDING : len(text) - PADDING])
        return out

    # ---- keys and mouse -------------------------------------------------------------

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - self._page)

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + self._page)

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self._keys) - 1)

    def action_select_cursor(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.RowChosen(self, key))  # type: ignore[arg-type]

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x + int(self.scroll_x)
            for c in self._columns:
                x -= (c.width or 0) + 2 * PADDING
                if x < 0:
                    self.post_message(self.HeaderClicked(self, c.key))  # type: ignore[arg-type]
                    return
            return
        row = self._row_at_line(offset.y)
        if not 0 <= row < len(self._keys):
            return
        event.stop()
        if row == self.cursor_row and self.has_focus:
            self.action_select_cursor()
        else:
            self.move_cursor(row=row)


def _styles(style: Style, highlight: Style, column: int) -> tuple[Style, Style]:
    """The styles around a cell's own (DataTable's): the base, the column's meta and the
    cursor's colours before it; the cursor's foreground after it."""
    post = Style.from_color(color=highlight.color) if highlight.color is not None else Style()
    return style + _meta(column) + highlight, post


def _plain_cell(
    cell: Spec,
    width: int,
    style: Style,
    highlight: Style,
    get_style: Callable[[str], Style],
    column: int,
) -> list[Segment] | None:
    """The segments ``_render`` makes for a cell of plain text (one string, or (text,
    style) parts: a number beside its sparkline), made directly (cell_paint.py); None for
    any other cell."""
    body = cell.body
    base = get_style(cell.style)
    parts = [(body, base)] if isinstance(body, str) else [(t, base + get_style(p)) for t, p in body]
    pre, post = _styles(style, highlight, column)
    return plain_segments(parts, base, cell.justify, width, PADDING, pre, post)


def _render(
    text: Text,
    width: int,
    style: Style,
    highlight: Style,
    options: ConsoleOptions,
    widget: ScrollView,
    column: int,
) -> list[Segment]:
    """A cell's one line of segments, as DataTable renders it (padding and styles): the
    cursor's colour over the cell's own, its background under it (DataTable's
    cursor_foreground_priority "css", cursor_background_priority "renderable"). The
    column's meta keeps a cell's text runs apart from its neighbours', as DataTable's."""
    pre, post = _styles(style, highlight, column)
    lines = widget.app.console.render_lines(
        Styled(Padding(text, (0, PADDING)), pre_style=pre, post_style=post),
        options.update_dimensions(width, 1),
    )
    return list(Segment.simplify(lines[0]))


@lru_cache(maxsize=256)
def _meta(column: int) -> Style:
    return Style.from_meta({"column": column})


_REST = Style.from_meta({"out_of_bounds": True})
