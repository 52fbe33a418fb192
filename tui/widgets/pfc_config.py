"""The QoS config of every RDMA port side by side; a cell that differs from its peers is marked."""

from __future__ import annotations

from collections.abc import Sequence

from tui.rows.pfc import QOS_COLUMNS, QosRow
from tui.widgets.keyed_table import Column, KeyedTable, Spec

ODD = "bold black on yellow"
WIDTHS = {"trust": 5, "pfc": 8, "ecn_np": 6, "ecn_rp": 6, "dscp": 9, "mtu": 5, "fw": 10}
# At narrow widths the driver and the DSCP map go first: the rest still fits 80 columns.
DROP = {"dscp": 1, "driver": 2}


def qos_columns() -> list[Column]:
    """The port (cut in the middle when it must be), the config columns, the driver."""
    labels = dict(QOS_COLUMNS)
    cols = [Column("port", "port", None, numeric=False, flex=True, min_width=18, middle=True)]
    for k, _ in QOS_COLUMNS:
        if k == "driver":
            cols.append(
                Column(k, labels[k], None, numeric=False, flex=True, min_width=12, drop=DROP[k])
            )
        else:
            cols.append(Column(k, labels[k], WIDTHS[k], numeric=False, drop=DROP.get(k, 0)))
    return cols


class QosTable(KeyedTable):
    """trust, PFC priorities, ECN enables, DSCP map, MTU, firmware, driver per port."""

    DEFAULT_CSS = """
    QosTable { height: auto; max-height: 8; }
    """

    _rows: list[QosRow] | None = None

    def show(self, rows: Sequence[QosRow]) -> None:
        """Sync with ``rows``; nothing is done when they are as last shown (the config
        rarely changes, and at 64 x 8 it is 512 rows)."""
        if list(rows) == self._rows:
            return
        self._rows = list(rows)
        self.set_layout(qos_columns())
        out: list[tuple[str, dict[str, Spec]]] = []
        for r in rows:
            cells: dict[str, Spec] = {"port": Spec(r.label)}
            for k, _ in QOS_COLUMNS:
                text = r.cells[k]
                cells[k] = Spec(text, ODD if k in r.odd else ("dim" if text == "-" else ""))
            out.append((r.key, cells))
        self.sync(out)
