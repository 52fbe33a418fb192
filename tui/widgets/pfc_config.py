"""The QoS config of every RDMA port side by side; a cell that differs from its peers is marked."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from tui import format as fmt
from tui.rows.pfc import QOS_COLUMNS, QosRow
from tui.widgets.keyed_table import Cell, Column, KeyedTable

ODD = "bold black on yellow"
WIDTHS = {"trust": 5, "pfc": 8, "ecn_np": 6, "ecn_rp": 6, "dscp": 9, "mtu": 5, "fw": 10,
          "driver": 24}  # fmt: skip
NARROW_DROP = ("dscp", "driver")  # under 110 columns: the rest still fits 80


class QosTable(KeyedTable):
    """trust, PFC priorities, ECN enables, DSCP map, MTU, firmware, driver per port."""

    DEFAULT_CSS = """
    QosTable { height: auto; max-height: 8; }
    """

    def show(self, rows: Sequence[QosRow], width: int) -> None:
        """Sync with ``rows``."""
        keys = [k for k, _ in QOS_COLUMNS if width >= 110 or k not in NARROW_DROP]
        labels = dict(QOS_COLUMNS)
        used = sum(WIDTHS[k] + 2 for k in keys)
        port_w = max(12, min(28, width - used - 4))
        self.set_columns([
            Column("port", "port", port_w, numeric=False),
            *(Column(k, labels[k], WIDTHS[k], numeric=False) for k in keys),
        ])  # fmt: skip
        out: list[tuple[str, dict[str, Cell]]] = []
        for r in rows:
            cells: dict[str, Cell] = {"port": Text(fmt.middle(r.label, port_w))}
            for k in keys:
                text = r.cells[k]
                cells[k] = Text(text, ODD if k in r.odd else ("dim" if text == "-" else ""))
            out.append((r.key, cells))
        self.sync(out)
