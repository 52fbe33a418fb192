"""The PFC matrix: one row per port and direction, one column per priority 0-7.

A cell is red where the pfc_storm rule's pause ratio is reached and yellow from the
pfc_pressure rule's, at the thresholds the rules run with (the state's).

At 64 x 8 the matrix has 1024 rows and a screen shows a few dozen: cells are made for the
rows on screen (and a margin) whose reading changed; a row scrolled away keeps its last
cells until it comes back, as the links table's rows do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabtop.core.rules.pauses import PRIOS
from tui import format as fmt
from tui.rows.pfc import PauseRow
from tui.widgets.keyed_table import Column, KeyedTable, Spec

VIEW_MARGIN = 8  # rows beyond the visible ones whose cells are kept current
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


def cell(row: PauseRow, prio: int, mode: str, thresholds: Mapping[str, float]) -> Spec:
    """One priority's cell: text in the mode, colour by how hard it pauses."""
    if mode == "time" and prio in row.ratio:
        text = pause_pct(row.ratio[prio])
    elif prio in row.per_s:
        text = fmt.si(row.per_s[prio])
    else:
        return Spec(fmt.DASH, "dim", justify="right")
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
    return Spec(text, style, justify="right")


def row_cells(
    r: PauseRow, hot: bool, mode: str, thresholds: Mapping[str, float]
) -> dict[str, Spec]:
    """The cells of one row; the port name is written on its rx line only."""
    cells = {
        "port": Spec(r.label if r.direction == "rx" else "", "bold" if hot else ""),
        "dir": Spec(r.direction, "dim"),
    }
    for p in PRIOS:
        cells[f"p{p}"] = cell(r, p, mode, thresholds)
    return cells


class PauseMatrix(KeyedTable):
    """rx (being paused) and tx (sending pauses) per port, per priority."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = MODES[0]
        # Per row key: what its cells were made from, and the cells.
        self._made: dict[str, tuple[tuple[object, ...], dict[str, Spec]]] = {}
        self._shown: tuple[Sequence[PauseRow], Mapping[str, float]] | None = None
        self._window = (0, 0)

    def column_set(self) -> list[Column]:
        """Port, direction and the 8 priorities; the port column takes what is left."""
        unit = "%" if self.mode == "time" else "/s"
        return [
            Column("port", "port", None, numeric=False, flex=True, min_width=18, middle=True),
            Column("dir", "", 2, numeric=False),
            *(Column(f"p{p}", f"p{p}{unit}" if p == 0 else f"p{p}", 4) for p in PRIOS),
        ]

    def show(self, rows: Sequence[PauseRow], thresholds: Mapping[str, float]) -> None:
        """Sync with ``rows``: cells made for the rows on screen whose reading changed."""
        self.set_layout(self.column_set())
        self._shown = (rows, thresholds)
        top = int(self.scroll_y)
        lo, hi = max(0, top - VIEW_MARGIN), top + max(self.size.height, 1) + VIEW_MARGIN
        self._window = (lo, hi)
        pressure = thresholds["pressure_pause_ratio"]
        peaks: dict[tuple[str, str], float] = {}
        for r in rows:
            k = r.port.key
            peaks[k] = max(peaks.get(k, 0.0), r.peak())
        th = tuple(thresholds.items())
        made, kept = self._made, {}
        out: list[tuple[str, dict[str, Spec]]] = []
        for i, r in enumerate(rows):
            key = r.key
            old = made.get(key)
            if old is None or lo <= i < hi:
                hot = peaks[r.port.key] >= pressure
                src = (r, hot, self.mode, th)
                if old is None or old[0] != src:
                    old = (src, row_cells(r, hot, self.mode, thresholds))
            kept[key] = old
            out.append((key, old[1]))
        self._made = kept  # rows gone are forgotten
        self.sync(out)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        lo, hi = self._window
        top = int(new_value)
        if self._shown is not None and (top < lo or top + self.size.height > hi):
            self.show(*self._shown)

    def cycle_mode(self) -> str:
        """Switch between pause time % and pause frames/s."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode
