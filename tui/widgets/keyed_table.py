"""A DataTable that is synced by row key: cells update in place, rows come and go by set.

Rebuilding a table every tick loses the cursor and scroll position and costs a full
re-layout; here a tick touches only the cells whose text changed. Cells may be given
as ``Spec`` tuples, which are compared before any ``Text`` is built, and rendered cells
are cached per cell, so a refresh re-renders only what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from rich.console import JustifyMethod, OverflowMethod
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


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


class KeyedTable(DataTable[Cell]):
    """Rows keyed by a string; ``sync`` applies a full desired state with minimal changes."""

    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            id=id, classes=classes, cursor_type="row", zebra_stripes=False, cell_padding=1
        )
        self._columns: tuple[Column, ...] = ()
        self._cells: dict[str, dict[str, object]] = {}
        self._order: list[str] = []
        self.rebuilds = 0  # column-set changes; a test checks ticks do not rebuild
        # Rendered cells that outlive DataTable's own cache: that one is keyed by a
        # table-wide update counter, so one update_cell re-renders every visible cell.
        # Entries hold the cell object they were made from; a replaced cell misses.
        self._cell_lines: LRUCache[tuple[object, ...], tuple[object, list[list[Segment]]]] = (
            LRUCache(10000)
        )

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Replace the column set (only when it changed: a resize across a width class)."""
        cols = tuple(columns)
        if cols == self._columns:
            return
        self._columns = cols
        self.clear(columns=True)
        self._cells.clear()
        self._order = []
        self.rebuilds += 1
        for c in cols:
            label = Text(c.label, justify="right" if c.numeric else "left")
            self.add_column(label, key=c.key, width=c.width)

    @property
    def column_keys(self) -> tuple[str, ...]:
        """Keys of the shown columns, in order."""
        return tuple(c.key for c in self._columns)

    def sync(self, rows: Sequence[tuple[str, Mapping[str, CellInput]]]) -> None:
        """Make the table show exactly ``rows`` (key, cells by column key), in that order."""
        wanted = {k for k, _ in rows}
        cache = self._cells
        changed = False
        with self.app.batch_update():
            for gone in [k for k in cache if k not in wanted]:
                self.remove_row(gone)
                del cache[gone]
            keys = self.column_keys
            for key, cells in rows:
                old = cache.get(key)
                sig = {c: _sig(cells[c]) for c in keys}
                if old is None:
                    self.add_row(*(_text(cells[c]) for c in keys), key=key)
                    cache[key] = sig
                    continue
                if old == sig:
                    continue
                # update_cell bumps the table-wide update counter and schedules a repaint
                # per call; write the changed cells and do both once.
                data = self._data[RowKey(key)]
                for c in keys:
                    if old[c] != sig[c]:
                        data[ColumnKey(c)] = _text(cells[c])
                        changed = True
                cache[key] = sig
            if changed:
                self._update_count += 1
                self.refresh()
            order = [k for k, _ in rows]
            if order != self._order:
                rank = {k: i for i, k in enumerate(order)}
                first = keys[0]
                # DataTable sorts by cell values; the first column's cell object carries
                # no row key, so rank by identity of the stored cell instead.
                by_cell: dict[int, int] = {}
                for k, _ in rows:
                    by_cell[id(self.get_cell(k, first))] = rank[k]
                self.sort(first, key=_ranker(by_cell))
                self._order = order

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._cell_lines.clear()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        column_key = self._column_locations.get_key(column_index)
        row_key = self._row_locations.get_key(row_index) if row_index >= 0 else None
        if column_index < 0 or column_key is None or (row_index >= 0 and row_key is None):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        # the header's cell is the column's label
        cell: object = (self.columns[column_key].label if row_key is None
                        else self._data[row_key][column_key])
        key = (row_key, column_key, row_index, column_index, base_style, width, cursor, hover,
               self._show_hover_cursor, self._pseudo_class_state, self.show_cursor)
        hit = self._cell_lines.get(key)
        if hit is not None and hit[0] is cell:
            return hit[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cell_lines[key] = (cell, lines)
        return lines

    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        return [str(r.key.value) for r in self.ordered_rows]

    def cursor_key(self) -> str | None:
        """Key of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            rk, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:
            return None
        return str(rk.value) if rk.value is not None else None

    def column_at(self, key: ColumnKey) -> str:
        """Our column key for a DataTable column key."""
        return str(key.value)


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


def _ranker(by_cell: dict[int, int]) -> Callable[[Any], int]:
    def rank(cell: Any) -> int:
        return by_cell.get(id(cell), 1 << 30)

    return rank
