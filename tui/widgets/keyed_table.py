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

It still pays on Textual 8.2.8 (benchmarks/keyed_table_paint.py: the same rows, sync and
widths with DataTable's own ``render_line``, 160x50, CPU per refresh, two runs): 192 rows
with four cells changed, 7.6-8.0 ms against 38-39 ms; with every row's rates changed,
15-16 ms against 41-42 ms; 1000 rows, 14-16 ms against 44-46 ms and 34-36 ms against
62-65 ms (44-80 % less). The paint alone is 4-11 ms against 32-38 ms. Drop it when
DataTable's caches stop keying on its table-wide counter and that benchmark shows under
20 % between them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, NamedTuple

from rich.cells import cell_len
from rich.console import ConsoleOptions, JustifyMethod, OverflowMethod
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.renderables.styled import Styled
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey

from tui import format as fmt
from tui.widgets.cell_paint import plain_segments


@dataclass(slots=True, frozen=True)
class Column:
    """One column: key, header label, width, right-aligned numbers or not.

    The other fields say how :func:`fit_columns` lays the column out in a table declared
    with :meth:`KeyedTable.set_layout`: a fixed column is as wide as ``width`` or its widest
    cell, whichever is more (digits are never dropped); a ``flex`` text column takes a
    share of the spare width, from ``min_width`` up to its longest cell (``width``, when
    given, caps it), and its cells end in "…" when cut.
    """

    key: str
    label: str
    width: int | None = None
    numeric: bool = True
    flex: bool = False
    min_width: int = 0
    drop: int = 0  # 0: always shown; else dropped when the width runs out, highest first
    short: str = ""  # the header when the label does not fit
    hide_empty: bool = False  # left out while no row has text in it
    middle: bool = False  # cut in the middle ("node1/enp6…f1np1"): the end tells ports apart


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
            return Text(
                body, self.style, justify=self.justify, no_wrap=self.no_wrap, overflow=self.overflow
            )
        t = Text(
            style=self.style, justify=self.justify, no_wrap=self.no_wrap, overflow=self.overflow
        )
        for part, style in body:
            t.append(part, style)
        return t


CellInput = Text | Spec


def _plain_width(cell: CellInput) -> int:
    """Cells the text of ``cell`` takes on one line."""
    if isinstance(cell, Text):
        return cell.cell_len
    body = cell.body
    if isinstance(body, str):
        return cell_len(body)
    return sum(cell_len(part) for part, _ in body)


def fit_columns(
    columns: Sequence[Column], width: int, content: Mapping[str, int], padding: int = 1
) -> tuple[Column, ...]:
    """The columns laid out in ``width`` cells, given each column's widest cell.

    Columns with ``drop`` go first, highest first, until the rest fits at their minimum;
    the spare width then goes to the columns below their natural width (a longer label,
    a flexible column's longest cell), the neediest last, so a long URL does not starve
    a short name. A fixed column is never narrower than its widest cell.
    """
    cols = [c for c in columns if not (c.hide_empty and not content.get(c.key, 0))]
    lo: dict[str, int] = {}
    want: dict[str, int] = {}
    for c in cols:
        widest = content.get(c.key, 0)
        head = cell_len(c.short or c.label)
        if c.flex:
            natural = max(widest, cell_len(c.label))
            if c.width is not None:
                natural = min(natural, max(c.width, c.min_width))
            lo[c.key] = min(natural, max(c.min_width, head))
        else:
            lo[c.key] = max(c.width or 0, widest, head)
            natural = max(lo[c.key], cell_len(c.label))
        want[c.key] = natural

    def used(cs: list[Column]) -> int:
        return sum(lo[c.key] + 2 * padding for c in cs)

    while used(cols) > width:
        droppable = [(c.drop, i) for i, c in enumerate(cols) if c.drop > 0]
        if not droppable:
            break  # nothing more may go: the table scrolls sideways
        del cols[max(droppable)[1]]
    given = _share(cols, lo, want, width, padding)
    # An optional text column more important than another optional one is shown whole
    # before that one is shown at all: a model name cut to make room for a p99 latency is
    # the wrong trade. (Columns never dropped share the spare as before.)
    while True:
        short = [c.drop for c in cols if c.flex and c.drop > 0 and given[c.key] < want[c.key]]
        victims = [
            (c.drop, i) for i, c in enumerate(cols) if c.drop > 0 and short and c.drop > min(short)
        ]
        if not victims:
            break
        del cols[max(victims)[1]]
        given = _share(cols, lo, want, width, padding)
    out: list[Column] = []
    for c in cols:
        w = given[c.key]
        label = c.label if cell_len(c.label) <= w or not c.short else c.short
        out.append(replace(c, width=w, label=label))
    return tuple(out)


def _share(
    cols: Sequence[Column], lo: Mapping[str, int], want: Mapping[str, int], width: int, padding: int
) -> dict[str, int]:
    """Each column's width: its minimum, plus a share of the spare up to its natural width.

    The neediest last, so a long URL does not starve a short name.
    """
    spare = max(0, width - sum(lo[c.key] + 2 * padding for c in cols))
    given = dict(lo)
    needy = sorted(
        (c for c in cols if want[c.key] > lo[c.key]), key=lambda c: want[c.key] - lo[c.key]
    )
    for i, c in enumerate(needy):
        share = min(want[c.key] - lo[c.key], spare // (len(needy) - i))
        given[c.key] += share
        spare -= share
    return given


def _label(c: Column) -> Text:
    # A header cut by a narrow column shows "…", as a cut cell does.
    return Text(
        c.label, justify="right" if c.numeric else "left", no_wrap=True, overflow="ellipsis"
    )


def _sig(cell: CellInput) -> object:
    """What decides whether a cell must be redrawn."""
    if isinstance(cell, Spec):
        return cell
    return (cell.plain, str(cell.style), tuple(cell.spans), cell.justify, cell.overflow)


def _text(cell: CellInput, middle: int | None = None) -> Text:
    """The cell as stored; a cell is one line, so text cut at the column's edge ends in "…".

    ``middle``: the width of a column cut in the middle instead.
    """
    t = cell.text() if isinstance(cell, Spec) else cell
    if middle is not None and t.cell_len > middle:
        t = Text(fmt.middle(t.plain, middle), t.style, justify=t.justify)
    if t.overflow is None:
        t.overflow = "ellipsis"
    return t


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
        # The cursor shows only while the table has the focus: one highlighted row on the
        # screen, where the keys go (a dimmed cursor in another table reads as a second
        # focus, and Enter then opens what the person did not pick).
        super().__init__(
            id=id,
            classes=classes,
            cursor_type="row",
            zebra_stripes=False,
            cell_padding=1,
            show_cursor=False,
        )
        self._column_set: tuple[Column, ...] = ()
        # The declared layout (set_layout) and the rows it was last fitted to.
        self._layout: tuple[Column, ...] = ()
        self._last_rows: Sequence[tuple[str, Mapping[str, CellInput]]] = ()
        # Per row key, the signature of each cell as last shown.
        self._cells: dict[str, dict[str, object]] = {}
        self._order: list[str] = []
        self.rebuilds = 0  # column-set changes; a test checks ticks do not rebuild
        # Lines drawn (header and rows): a test checks a tick with nothing new draws none.
        self.lines_drawn = 0
        # Rendered cells by (row, column, width, cursor, hover, look generation); an entry
        # holds the cell it was made from, so a replaced cell misses.
        self._drawn: LRUCache[
            tuple[int, int, int, bool, bool, int], tuple[Text, list[list[Segment]]]
        ] = LRUCache(10000)
        self._look: _Look | None = None
        self._generation = 0
        self._paint: _Paint | None = None
        # Whether the mouse's hover highlight shows: as DataTable, on when the mouse
        # moves over a cell or clicks, off when it leaves or the keyboard moves.
        self._hover_shown = False

    # ---- the model, through DataTable's public API -------------------------------

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Replace the column set (only when it changed: a resize across a width class).

        The same keys with other widths or labels are changed in place: rows, cells and
        the cursor stay.
        """
        cols = tuple(columns)
        if cols == self._column_set:
            return
        if self.columns and tuple(c.key for c in cols) == self.column_keys:
            self._column_set = cols
            self._relabel(cols)
            return
        self._column_set = cols
        self.clear(columns=True)
        self._cells.clear()
        self._drawn.clear()
        self._order = []
        self.rebuilds += 1
        for c in cols:
            self.add_column(_label(c), key=c.key, width=c.width)

    def _relabel(self, cols: tuple[Column, ...]) -> None:
        """New widths and labels on the existing columns (DataTable's public Column fields)."""
        for c in cols:
            col = self.columns[ColumnKey(c.key)]
            col.label = _label(c)
            col.auto_width = c.width is None
            if c.width is not None:
                col.width = c.width
        self._drawn.clear()
        width = sum(col.get_render_width(self) for col in self.columns.values())
        self.virtual_size = Size(width, self.virtual_size.height)
        self.notify_style_update()  # DataTable's own line caches do not key on widths

    def set_layout(self, columns: Sequence[Column]) -> None:
        """Lay ``columns`` out to the widget's width at every sync and resize (fit_columns)."""
        cols = tuple(columns)
        if cols == self._layout:
            return
        self._layout = cols
        self._fit(self._last_rows)

    def _fit(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Fit the declared layout to the width, from the widest cell of each column."""
        if not self._layout:
            return
        content = {c.key: 0 for c in self._layout}
        for _, cells in rows:
            for k in content:
                cell = cells.get(k)
                if cell is not None:
                    content[k] = max(content[k], _plain_width(cell))
        width = self.size.width or self.app.size.width
        # A vertical scrollbar takes its columns only when the rows overflow.
        if len(rows) + self.header_height > (self.size.height or self.app.size.height):
            width -= self.styles.scrollbar_size_vertical
        self.set_columns(fit_columns(self._layout, width, content, self.cell_padding))

    def on_resize(self, event: events.Resize) -> None:
        if self._layout and self._last_rows:
            self.sync(self._last_rows)
        else:
            self._fit(self._last_rows)

    @property
    def column_keys(self) -> tuple[str, ...]:
        """Keys of the shown columns, in order."""
        return tuple(c.key for c in self._column_set)

    def sync(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Make the table show exactly ``rows`` (key, cells by column key), in that order.

        The cursor stays on its row key while rows move, come and go around it.
        """
        cursor = self.cursor_key()
        if self._layout:
            self._last_rows = rows
            self._fit(rows)
        wanted = {k for k, _ in rows}
        cache = self._cells
        keys = self.column_keys
        # Middle-cut columns: the text depends on the width, so the width is in the signature.
        middle = {c.key: c.width for c in self._column_set if c.middle and c.width}
        with self.app.batch_update():
            for gone in [k for k in cache if k not in wanted]:
                self.remove_row(gone)
                del cache[gone]
            for key, cells in rows:
                old = cache.get(key)
                sig = {
                    c: _sig(cells[c]) if c not in middle else (_sig(cells[c]), middle[c])
                    for c in keys
                }
                if old is None:
                    self.add_row(*(_text(cells[c], middle.get(c)) for c in keys), key=key)
                elif old != sig:
                    for c in keys:
                        if old[c] != sig[c]:
                            self.update_cell(key, c, _text(cells[c], middle.get(c)))
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
        return (
            self.cursor_type == "row"
            and not self.zebra_stripes
            and not self.fixed_rows
            and not self.fixed_columns
        )

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
        return _Paint(
            look,
            self._generation,
            widths,
            [c.label for c in columns],
            sum(widths),
            self.app.console_options,
        )

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the widget: the header, or a row from DataTable's model."""
        self.lines_drawn += 1
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
        rest = (
            style
            + _highlight(look, row == -1, on_hover, on_cursor)
            + Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})
        )
        segments.append(Segment(" " * max(0, width - paint.table_width), rest))
        return Strip(segments).crop(scroll_x).adjust_cell_length(width, look.base).simplify()

    def _draw_cell(
        self,
        cell: Text,
        row: int,
        col: int,
        width: int,
        on_cursor: bool,
        on_hover: bool,
        paint: _Paint,
    ) -> list[list[Segment]]:
        """One cell's lines, as DataTable renders it: a row's cell of plain text made
        directly (cell_paint.py: at 64 hosts a tick repaints hundreds of cells), any other
        through rich."""
        look = paint.look
        header = row == -1
        highlight = _highlight(look, header, on_hover, on_cursor)
        post = Style.null()
        if look.css_foreground:
            post += Style.from_color(color=highlight.color)
        if look.css_background:
            post += Style.from_color(bgcolor=highlight.bgcolor)
        pre = (look.header if header else look.base) + Style.from_meta({"row": row, "column": col})
        console = self.app.console
        if not header:
            # Text.render leaves the text's own style to the caller where it has no spans
            own = console.get_style(cell.style)
            parts = [(s.text, own + s.style) for s in cell.render(console, end="")]
            plain = plain_segments(
                parts, own, cell.justify, width, look.padding, pre + highlight, post
            )
            if plain is not None:
                return [plain]
        return self._rich_cell(
            cell, width, look.header_height if header else 1, pre + highlight, post, paint
        )

    def _rich_cell(
        self, cell: Text, width: int, height: int, pre: Style, post: Style, paint: _Paint
    ) -> list[list[Segment]]:
        """One cell's lines through rich's Padding and Styled (DataTable's way)."""
        options = paint.options.update_dimensions(width, height)
        if height == 1:
            options = options.update(no_wrap=True)
        return self.app.console.render_lines(
            Styled(Padding(cell, (0, paint.look.padding)), pre_style=pre, post_style=post),
            options,
        )

    def drawn_cells(self, row: int) -> list[str]:
        """Each cell of ``row`` (-1: the header) as drawn in its column, padding off.

        The same drawing as the screen's lines, for every row, on screen or not: tests
        read what a user would see in each column.
        """
        paint = self._new_paint()
        cells: Sequence[Text] = (
            paint.labels if row < 0 else [c or _EMPTY for c in self.get_row_at(row)]
        )
        pad = paint.look.padding
        out: list[str] = []
        for col, (cell, width) in enumerate(zip(cells, paint.widths, strict=False)):
            lines = self._draw_cell(cell, row, col, width, False, False, paint)
            text = "".join(seg.text for seg in lines[0])
            out.append(text[pad : len(text) - pad])
        return out

    # ---- the hover highlight, shown and hidden as DataTable does ------------------

    def on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        self._hover_shown = bool(meta) and (
            self.cursor_type == "row" or not meta.get("out_of_bounds", False)
        )

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

    def on_focus(self) -> None:
        self.show_cursor = True

    def on_blur(self) -> None:
        self.show_cursor = False


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
        self.set_layout(self.COLUMNS)

    def show_rows(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Sync with ``rows``, filling the cells a row does not have."""
        if not self._layout:
            self.set_layout(self.COLUMNS)
        self.sync(
            [(k, {c.key: cells.get(c.key) or Text("") for c in self.COLUMNS}) for k, cells in rows]
        )


def _ranker(rank: dict[int, int]) -> Callable[[Any], int]:
    def by_rank(cell: Any) -> int:
        return rank.get(id(cell), 1 << 30)

    return by_rank
