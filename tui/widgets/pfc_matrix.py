"""The PFC matrix: one row per port and direction, one column per priority 0-7.

A cell is red where the pfc_storm rule's pause ratio is reached and yellow from the
pfc_pressure rule's, at the thresholds the rules run with (the state's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text

from fabtop.core.rules.pauses import PRIOS
from tui import format as fmt
from tui.rows.pfc import PauseRow
from tui.widgets.keyed_table import Cell, Column, KeyedTable

MODES = ("time", "frames")  # pause time % of the interval, pause frames per second
STORM_STYLE = "bold white on red"
PRESSURE_STYLE = "bold yellow"


def pause_pct(ratio: float | None) -> str:
    """Pause time as a percentage in 4 characters; 99.x keeps its decimal (storm or not)."""
    if ratio is None:
        return fmt.DASH
    p = ratio * 100
    if p <= 0:
        return "0"
    if p < 1:
        return "<1"
    if 99.5 <= p < 100:
        return f"{p:.1f}"
    return f"{min(p, 100):.0f}"


def cell(row: PauseRow, prio: int, mode: str, thresholds: Mapping[str, float]) -> Cell:
    """One priority's cell: text in the mode, colour by how hard it pauses."""
    if mode == "time" and prio in row.ratio:
        text = pause_pct(row.ratio[prio])
    elif prio in row.per_s:
        text = fmt.si(row.per_s[prio])
    else:
        return Text(fmt.DASH, "dim", justify="right")
    level = row.level(prio)
    moving = row.per_s.get(prio, 0.0) > 0 or row.ratio.get(prio, 0.0) > 0
    if level >= thresholds["storm_pause_ratio"]:
        style = STORM_STYLE
    elif level >= thresholds["pressure_pause_ratio"]:
        style = PRESSURE_STYLE
    elif row.pfc is not None and prio not in row.pfc and moving:
        style = "bold magenta"  # pauses on a priority without PFC
    elif not moving:
        style = "dim"
    else:
        style = ""
    return Text(text, style, justify="right")


class PauseMatrix(KeyedTable):
    """rx (being paused) and tx (sending pauses) per port, per priority."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = MODES[0]

    def column_set(self) -> list[Column]:
        """Port, direction and the 8 priorities; the port column takes what is left."""
        unit = "%" if self.mode == "time" else "/s"
        return [
            Column("port", "port", None, numeric=False, flex=True, min_width=18, middle=True),
            Column("dir", "", 2, numeric=False),
            *(Column(f"p{p}", f"p{p}{unit}" if p == 0 else f"p{p}", 4) for p in PRIOS),
        ]

    def show(self, rows: Sequence[PauseRow], thresholds: Mapping[str, float]) -> None:
        """Sync with ``rows``; the port name is written on its rx line only."""
        self.set_layout(self.column_set())
        out: list[tuple[str, dict[str, Cell]]] = []
        pressure = thresholds["pressure_pause_ratio"]
        hot_ports = {
            (r.host, r.link_id)
            for r in rows
            if max((r.level(p) for p in PRIOS), default=0.0) >= pressure
        }
        for r in rows:
            label = r.label if r.direction == "rx" else ""
            hot = (r.host, r.link_id) in hot_ports
            cells: dict[str, Cell] = {
                "port": Text(label, "bold" if hot else ""),
                "dir": Text(r.direction, "dim"),
            }
            for p in PRIOS:
                cells[f"p{p}"] = cell(r, p, self.mode, thresholds)
            out.append((r.key, cells))
        self.sync(out)

    def cycle_mode(self) -> str:
        """Switch between pause time % and pause frames/s."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode
