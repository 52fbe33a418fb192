"""A DataTable that is synced by row key: cells update in place, rows come and go by set.

Rebuilding a table every tick loses the cursor and scroll position and costs a full
re-layout; here a tick touches only the cells whose text changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey


@dataclass(slots=True, frozen=True)
class Column:
    """One column: key, header label, width, right-aligned numbers or not."""

    key: str
    label: str
    width: int | None = None
    numeric: bool = True


Cell = Text


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
        self._cells: dict[str, dict[str, tuple[str, str]]] = {}
        self._order: list[str] = []
        self.rebuilds = 0  # column-set changes; a test checks ticks do not rebuild

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

    def sync(self, rows: Sequence[tuple[str, dict[str, Cell]]]) -> None:
        """Make the table show exactly ``rows`` (key, cells by column key), in that order."""
        wanted = {k for k, _ in rows}
        with self.app.batch_update():
            for gone in [k for k in self._cells if k not in wanted]:
                self.remove_row(gone)
                del self._cells[gone]
            keys = self.column_keys
            for key, cells in rows:
                old = self._cells.get(key)
                sig = {c: (cells[c].plain, str(cells[c].style)) for c in keys}
                if old is None:
                    self.add_row(*(cells[c] for c in keys), key=key)
                    self._cells[key] = sig
                    continue
                for c in keys:
                    if old[c] != sig[c]:
                        self.update_cell(key, c, cells[c])
                self._cells[key] = sig
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


def _ranker(by_cell: dict[int, int]) -> Callable[[Any], int]:
    def rank(cell: Any) -> int:
        return by_cell.get(id(cell), 1 << 30)

    return rank
