"""Hosts table: status with the age of the last frame, RTT, counts, the last error."""

from __future__ import annotations

from collections.abc import Sequence

from collectors.text import natural
from tui import format as fmt
from tui.rows.links import STATUS_ORDER, HostRow
from tui.widgets.keyed_table import Column, Spec
from tui.widgets.virtual_table import VirtualTable

DIM = "grey50"
STATUS_CELL = {
    "up": ("● up", "green"),
    "stale": ("▲ STALE", "bold black on yellow"),
    "down": ("✖ DOWN", "bold white on red"),
    "failing": ("✖ FAILING", "bold white on red"),
    "connecting": ("… connecting", "dim"),
}


def host_columns(width: int) -> list[Column]:
    """Columns that fit ``width``; the error column takes what is left."""
    cols = [
        Column("host", "Host", 12, False),
        Column("status", "Status", 12, False),
        Column("age", "Age", 6),
        Column("rtt", "RTT", 6),
    ]
    if width >= 100:
        cols += [
            Column("links", "Links", 5),
            Column("gpus", "GPUs", 4),
            Column("tokens", "Tok/s", 6),
        ]
    used = sum((c.width or 0) + 2 for c in cols) + 2
    cols.append(Column("error", "Error", max(12, width - used - 2), False))
    return cols


def host_cells(r: HostRow) -> dict[str, Spec]:
    """The cells of one host row; rows of hosts that are not up are greyed out."""
    base = "" if r.live else DIM
    label, style = STATUS_CELL.get(r.status, (r.status, ""))
    err = (r.error or "").replace("\n", " ")
    return {
        "host": Spec(r.name, base or "bold"),
        "status": Spec(label, style),
        "age": Spec(fmt.age(r.age_s), base, "right"),
        "rtt": Spec(fmt.ms(r.rtt_s), base, "right"),
        "links": Spec(str(r.links) if r.links else fmt.DASH, base, "right"),
        "gpus": Spec(str(r.gpus) if r.gpus else fmt.DASH, base, "right"),
        "tokens": Spec(fmt.si(r.tokens_per_s), base, "right"),
        "error": Spec(err, "red" if err else base, None, True, "ellipsis"),
    }


def host_sort_key(r: HostRow) -> tuple[int, tuple[tuple[int, int | str], ...]]:
    """Worst first (down, failing, stale, connecting, up), then by name (node2 < node10)."""
    return (STATUS_ORDER.get(r.status, 9), natural(r.name))


class HostTable(VirtualTable[HostRow]):
    """The hosts table; the owner calls ``show`` with fresh rows.

    Its bottom border carries the owner's state line (``border_subtitle``): what narrows
    and orders the links below it. Enter on a host posts ``RowChosen`` with its name.

    A VirtualTable, as the links: every host's Age changes each tick, and at 125 hosts a
    DataTable updated 125 cells a tick for the dozen rows on screen (1.7 ms of a 35 ms
    refresh); this one makes the cells of the rows on screen only.
    """

    DEFAULT_CSS = """
    HostTable {
        border-subtitle-align: left;
        border-subtitle-color: $text-muted;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(host_cells, id=id, classes=classes)

    def show(self, rows: Sequence[HostRow], width: int) -> None:
        """Show ``rows``, worst first; the cursor stays on its host."""
        self.set_columns(host_columns(width))
        ordered = sorted(rows, key=host_sort_key)
        self.set_rows([r.name for r in ordered], ordered)
