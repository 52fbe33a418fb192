"""A DataTable that is synced by row key: cells update in place, rows come and go by set.

Rebuilding a table every tick loses the cursor and scroll position and costs a full
re-layout; here a tick touches only the cells whose text changed, through DataTable's
public API (``add_row``, ``remove_row``, ``update_cell``, ``sort``). Cells may be given as
``Spec`` tuples, which are compared before any ``Text`` is built.

DataTable re-renders every visible cell after any update (its caches are keyed by a
table-wide update counter), so the table draws its own lines on Textual's Line API
(``render_line``) from DataTable's public model, caching each rendered cell by the cell
object it was made from: a tick re-renders only the cells it replaced. The lines are the
ones DataTable would draw, segment for segment, meta included, so DataTable's own mouse
handling, cursor and messages work unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from rich.console import ConsoleOptions, JustifyMethod, OverflowMethod
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region
from textual.renderables.styled import Styled
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey


@dataclass(slots=True, frozen=True)
class Column:
    """One column: key, header label, width, right-aligned numbers or not."""

    key: str
    label: str
    width: int | None = None
    numeric: bool = True


Cell = Text


class Spec(NamedTuple):
    """A cell as plain data: text (or (text, style) parts), style and layout; cheap to compare."""

    body: str | tuple[tuple[str, str], ...]
    style: str = ""
    justify: JustifyMethod | None = None
    no_wrap: bool | None = None
    overflow: OverflowMethod | None = None

    def text(self) -> Text:
        """The ``Text`` this spec describes."""
        body = self.body
        if isinstance(body, str):
            return Text(body, self.style, justify=self.justify, no_wrap=self.no_wrap,
                        overflow=self.overflow)
        t = Text(style=self.style, justify=self.justify, no_wrap=self.no_wrap,
                 overflow=self.overflow)
        for part, style in body:
            t.append(part, style)
        return t


CellInput = Text | Spec


def _sig(cell: CellInput) -> object:
    """What decides whether a cell must be redrawn."""
    if isinstance(cell, Spec):
        return cell
    return (cell.plain, str(cell.style), tuple(cell.spans), cell.justify, cell.overflow)


def _text(cell: CellInput) -> Text:
    return cell.text() if isinstance(cell, Spec) else cell


# What DataTable draws for an empty cell.
_EMPTY = Text(no_wrap=True, end="")


class _Look(NamedTuple):
    """The styles a paint draws with, resolved from CSS (focus and theme included)."""

    base: Style
    header: Style
    hover: Style
    header_hover: Style
    cursor: Style
    header_cursor: Style
    css_foreground: bool
    css_background: bool
    show_cursor: bool
    padding: int
    header_height: int


@dataclass(slots=True)
class _Paint:
    """What every line of one paint shares: the look, its generation, the columns."""

    look: _Look
    generation: int
    widths: list[int]
    labels: list[Text]
    table_width: int
    options: ConsoleOptions


class KeyedTable(DataTable[Cell]):
    """Rows keyed by a string; ``sync`` applies a full desired state with minimal changes."""

    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            id=id, classes=classes, cursor_type="row", zebra_stripes=False, cell_padding=1
        )
        self._column_set: tuple[Column, ...] = ()
        # Per row key, the signature of each cell as last shown (LinkTable hands these
        # back for the rows it does not recompute).
        self._cells: dict[str, dict[str, object]] = {}
        self._order: list[str] = []
        self.rebuilds = 0  # column-set changes; a test checks ticks do not rebuild
        # Rendered cells by (row, column, width, cursor, hover, look generation); an entry
        # holds the cell it was made from, so a replaced cell misses.
        self._drawn: LRUCache[tuple[int, int, int, bool, bool, int],
                              tuple[Text, list[list[Segment]]]] = LRUCache(10000)
        self._look: _Look | None = None
        self._generation = 0
        self._paint: _Paint | None = None
        # Whether the mouse's hover highlight shows: as DataTable, on when the mouse
        # moves over a cell or clicks, off when it leaves or the keyboard moves.
        self._hover_shown = False

    # ---- the model, through DataTable's public API -------------------------------

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Replace the column set (only when it changed: a resize across a width class)."""
        cols = tuple(columns)
        if cols == self._column_set:
            return
        self._column_set = cols
        self.clear(columns=True)
        self._cells.clear()
        self._drawn.clear()
        self._order = []
        self.rebuilds += 1
        for c in cols:
            label = Text(c.label, justify="right" if c.numeric else "left")
            self.add_column(label, key=c.key, width=c.width)

    @property
    def column_keys(self) -> tuple[str, ...]:
        """Keys of the shown columns, in order."""
        return tuple(c.key for c in self._column_set)

    def sync(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Make the table show exactly ``rows`` (key, cells by column key), in that order.

        The cursor stays on its row key while rows move, come and go around it.
        """
        wanted = {k for k, _ in rows}
        cache = self._cells
        cursor = self.cursor_key()
        keys = self.column_keys
        with self.app.batch_update():
            for gone in [k for k in cache if k not in wanted]:
                self.remove_row(gone)
                del cache[gone]
            for key, cells in rows:
                old = cache.get(key)
                if cells is old:  # handed back as shown (LinkTable's rows off screen)
                    continue
                sig = {c: _sig(cells[c]) for c in keys}
                if old is None:
                    self.add_row(*(_text(cells[c]) for c in keys), key=key)
                elif old != sig:
                    for c in keys:
                        if old[c] != sig[c]:
                            self.update_cell(key, c, _text(cells[c]))
                else:
                    continue
                cache[key] = sig
            order = [k for k, _ in rows]
            if order != self._order:
                self._put_in_order(order)
            if cursor is not None and cursor in wanted:
                row = self.get_row_index(cursor)
                if row != self.cursor_row:
                    self.move_cursor(row=row)

    def _put_in_order(self, order: list[str]) -> None:
        """Sort the rows into ``order``."""
        self._order = order
        if not order:
            return
        first = self.column_keys[0]
        # DataTable sorts by cell values, which carry no row key: rank the rows by the
        # identity of their first cell, made unique first (a caller may share one object).
        rank: dict[int, int] = {}
        for i, k in enumerate(order):
            cell = self.get_cell(k, first)
            if id(cell) in rank:
                cell = cell.copy()
                self.update_cell(k, first, cell)
            rank[id(cell)] = i
        self.sort(first, key=_ranker(rank))

    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        return [str(r.key.value) for r in self.ordered_rows]

    def cursor_key(self) -> str | None:
        """Key of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            rk, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except CellDoesNotExist:
            return None
        return str(rk.value) if rk.value is not None else None

    def column_at(self, key: ColumnKey) -> str:
        """Our column key for a DataTable column key."""
        return str(key.value)

    # ---- drawing, on the Line API --------------------------------------------------

    def _draws_itself(self) -> bool:
        """True for what this class draws: a row cursor, no zebra stripes, nothing fixed."""
        return (self.cursor_type == "row" and not self.zebra_stripes
                and not self.fixed_rows and not self.fixed_columns)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Resolve the styles once for the lines this paint asks for."""
        self._paint = self._new_paint()
        return super().render_lines(crop)

    def _new_paint(self) -> _Paint:
        """The styles and columns of one paint; a changed look starts a cache generation."""
        look = _Look(
            base=self.rich_style,
            header=self.get_component_styles("datatable--header").rich_style,
            hover=self.get_component_rich_style("datatable--hover"),
            header_hover=self.get_component_rich_style("datatable--header-hover"),
            cursor=self.get_component_rich_style("datatable--cursor"),
            header_cursor=self.get_component_rich_style("datatable--header-cursor"),
            css_foreground=self.cursor_foreground_priority == "css",
            css_background=self.cursor_background_priority == "css",
            show_cursor=self.show_cursor,
            padding=self.cell_padding,
            header_height=self.header_height,
        )
        if look != self._look:
            self._look = look
            self._generation += 1
        columns = self.ordered_columns
        widths = [c.get_render_width(self) for c in columns]
        return _Paint(look, self._generation, widths, [c.label for c in columns],
                      sum(widths), self.app.console_options)

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the widget: the header, or a row from DataTable's model."""
        if not self._draws_itself():
            return super().render_line(y)
        paint = self._paint if self._paint is not None else self._new_paint()
        look = paint.look
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        header = look.header_height if self.show_header else 0
        cells: Sequence[Text]
        if y < header:
            row, line = -1, y
            cells = paint.labels
        else:
            row, line = y - header + scroll_y, 0
            if row >= self.row_count:
                return Strip.blank(width, look.base)
            cells = [c or _EMPTY for c in self.get_row_at(row)]
        on_cursor = look.show_cursor and row == self.cursor_coordinate.row
        on_hover = look.show_cursor and self._hover_shown and row == self.hover_coordinate.row
        drawn = self._drawn
        segments: list[Segment] = []
        for col, (cell, cell_width) in enumerate(zip(cells, paint.widths, strict=False)):
            key = (row, col, cell_width, on_cursor, on_hover, paint.generation)
            hit = drawn.get(key)
            if hit is not None and hit[0] is cell:
                lines = hit[1]
            else:
                lines = self._draw_cell(cell, row, col, cell_width, on_cursor, on_hover, paint)
                drawn[key] = (cell, lines)
            segments.extend(lines[line])
        # the rest of the width, in the row's style (and the cursor's, on its row)
        style = look.header if row == -1 else look.base
        rest = (style + _highlight(look, row == -1, on_hover, on_cursor)
                + Style.from_meta({"row": row, "column": 0, "out_of_bounds": True}))
        segments.append(Segment(" " * max(0, width - paint.table_width), rest))
        return Strip(segments).crop(scroll_x).adjust_cell_length(width, look.base).simplify()

    def _draw_cell(self, cell: Text, row: int, col: int, width: int, on_cursor: bool,
                   on_hover: bool, paint: _Paint) -> list[list[Segment]]:
        """One cell's lines, as DataTable renders it."""
        look = paint.look
        header = row == -1
        highlight = _highlight(look, header, on_hover, on_cursor)
        post = Style.null()
        if look.css_foreground:
            post += Style.from_color(color=highlight.color)
        if look.css_background:
            post += Style.from_color(bgcolor=highlight.bgcolor)
        height = look.header_height if header else 1
        options = paint.options.update_dimensions(width, height)
        if height == 1:
            options = options.update(no_wrap=True)
        pre = (look.header if header else look.base) + Style.from_meta(
            {"row": row, "column": col})
        return self.app.console.render_lines(
            Styled(Padding(cell, (0, look.padding)),
                   pre_style=pre + highlight, post_style=post),
            options,
        )

    # ---- the hover highlight, shown and hidden as DataTable does ------------------

    def on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        self._hover_shown = bool(meta) and (
            self.cursor_type == "row" or not meta.get("out_of_bounds", False))

    def on_click(self, event: events.Click) -> None:
        self._hover_shown = True

    def on_leave(self, event: events.Leave) -> None:
        self._hover_shown = False

    def watch_cursor_type(self, old: str, new: str) -> None:
        self._hover_shown = False
        super().watch_cursor_type(old, new)

    def action_page_down(self) -> None:
        self._hover_shown = False
        super().action_page_down()

    def action_page_up(self) -> None:
        self._hover_shown = False
        super().action_page_up()

    def action_page_left(self) -> None:
        self._hover_shown = False
        super().action_page_left()

    def action_page_right(self) -> None:
        self._hover_shown = False
        super().action_page_right()

    def action_scroll_top(self) -> None:
        self._hover_shown = False
        super().action_scroll_top()

    def action_scroll_bottom(self) -> None:
        self._hover_shown = False
        super().action_scroll_bottom()

    def action_scroll_home(self) -> None:
        self._hover_shown = False
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        self._hover_shown = False
        super().action_scroll_end()

    def action_cursor_up(self) -> None:
        self._hover_shown = False
        super().action_cursor_up()

    def action_cursor_down(self) -> None:
        self._hover_shown = False
        super().action_cursor_down()

    def action_cursor_right(self) -> None:
        self._hover_shown = False
        super().action_cursor_right()

    def action_cursor_left(self) -> None:
        self._hover_shown = False
        super().action_cursor_left()

    def action_select_cursor(self) -> None:
        self._hover_shown = False
        super().action_select_cursor()


def _highlight(look: _Look, header: bool, on_hover: bool, on_cursor: bool) -> Style:
    """The hover and cursor styles over a cell, in DataTable's order."""
    style = Style()
    if on_hover:
        style += look.hover
        if header:
            style += look.header_hover
    if on_cursor:
        style += look.cursor
        if header:
            style += look.header_cursor
    return style


class FixedTable(KeyedTable):
    """A KeyedTable with one column set; rows may leave cells out, which show blank."""

    COLUMNS: ClassVar[tuple[Column, ...]] = ()

    def on_mount(self) -> None:
        self.set_columns(self.COLUMNS)

    def show_rows(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Sync with ``rows``, filling the cells a row does not have."""
        if not self.column_keys:
            self.set_columns(self.COLUMNS)
        self.sync([(k, {c.key: cells.get(c.key) or Text("") for c in self.COLUMNS})
                   for k, cells in rows])


def _ranker(rank: dict[int, int]) -> Callable[[Any], int]:
    def by_rank(cell: Any) -> int:
        return rank.get(id(cell), 1 << 30)

    return by_rank
