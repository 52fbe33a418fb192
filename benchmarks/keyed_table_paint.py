"""KeyedTable's own painter against DataTable's: the CPU of one refresh, the same rows.

    python benchmarks/keyed_table_paint.py

One KeyedTable draws its lines itself (``render_line`` with a per-cell cache); the other
is the same class, the same row sync and column widths, with DataTable's own
``render_line``. Each shows 192 and then 1000 rows of eight link-table columns in a
160x50 terminal, driven by Textual's test harness, and refreshes in two ways: four
cells changed, and a live tick (both rate columns of every row changed). A refresh's CPU
is the sync plus Textual's layout and paint of the change (process time, so the
harness's idle sleeps are out); the paint alone, on every other tick, is one
``render_lines`` of the visible lines straight after the sync. The two painters take
turns, and the lines they draw at the end are compared. Prints medians; asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable

from tui.widgets.keyed_table import CellInput, Column, KeyedTable, Spec

SIZE = (160, 50)
REFRESHES = 30  # of each kind: whole refreshes, and paints alone
ROUNDS = 2  # each painter runs this many times, in turn

COLUMNS = (
    Column("link", "Link", None, False, flex=True, min_width=12),
    Column("state", "State", 6, False),
    Column("speed", "Speed", 6),
    Column("rx", "RX Gb/s", 8),
    Column("tx", "TX Gb/s", 8),
    Column("pause", "Pause/s", 8),
    Column("err", "Errors", 7),
    Column("util", "Util", 6),
)
Rows = list[tuple[str, Mapping[str, CellInput]]]


def table_rows(n: int, tick: int, few: bool) -> Rows:
    """``n`` link rows at ``tick``: with ``few``, four cells differ from tick 0; else the
    rates of every row move."""
    out: Rows = []
    for i in range(n):
        moved = (i in (1, 7) if few else True) and tick > 0
        rx = (i * 7 % 100) / 4 + (tick % 10 if moved else 0)
        tx = (i * 3 % 100) / 4 + (tick % 7 if moved else 0)
        out.append(
            (
                f"node{i // 2 + 1}\x1fmlx5_{i % 2}",
                {
                    "link": Spec(f"node{i // 2 + 1}/mlx5_{i % 2} (enp{i % 8}s0f{i % 2}np0)"),
                    "state": Spec("up", "green"),
                    "speed": Spec("400G", justify="right"),
                    "rx": Spec(f"{rx:.1f}", "bold" if rx > 20 else "", "right"),
                    "tx": Spec(f"{tx:.1f}", justify="right"),
                    "pause": Spec("0", justify="right"),
                    "err": Spec(str(i % 3), "red" if i % 3 else "", "right"),
                    "util": Spec((("▮" * (i % 5), "cyan"), ("▯" * (4 - i % 5), "dim"))),
                },
            )
        )
    return out


class DataTablePainted(KeyedTable):
    """The same row sync and widths; DataTable's own painter draws the lines."""

    def render_lines(self, crop: Region) -> list[Strip]:
        return DataTable.render_lines(self, crop)

    def render_line(self, y: int) -> Strip:
        return DataTable.render_line(self, y)


class TableApp(App[None]):
    def __init__(self, table: KeyedTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


async def measure(cls: type[KeyedTable], n: int, few: bool) -> tuple[float, float, list[str]]:
    """Median CPU ms of a refresh and of its paint; the lines drawn at the end."""
    table = cls(id="t")
    app = TableApp(table)
    async with app.run_test(size=SIZE) as pilot:
        table.set_layout(COLUMNS)
        table.sync(table_rows(n, 0, few))
        table.focus()
        await pilot.pause()
        visible = Region(0, 0, table.size.width, table.size.height)
        refresh, paint = [], []
        for tick in range(1, 2 * REFRESHES + 1):
            rows = table_rows(n, tick, few)
            c = time.process_time()
            table.sync(rows)
            if tick % 2:  # the whole refresh, as the dashboard does it
                await pilot.pause()
                refresh.append(time.process_time() - c)
                continue
            s = time.process_time()  # the paint alone, before Textual's own
            table.render_lines(visible)
            paint.append(time.process_time() - s)
            await pilot.pause()
        lines = [strip.text for strip in table.render_lines(visible)]
    return statistics.median(refresh) * 1e3, statistics.median(paint) * 1e3, lines


async def run() -> None:
    import textual

    print(f"Textual {textual.__version__}, {SIZE[0]}x{SIZE[1]} terminal, {REFRESHES} refreshes")
    painters = {"KeyedTable painter": KeyedTable, "DataTable painter": DataTablePainted}
    for n in (192, 1000):
        for few in (True, False):
            what = "4 cells changed" if few else "every row's rates changed"
            got: dict[str, list[tuple[float, float]]] = {p: [] for p in painters}
            drawn: dict[str, list[str]] = {}
            for _ in range(ROUNDS):
                for name, cls in painters.items():
                    refresh, paint, lines = await measure(cls, n, few)
                    got[name].append((refresh, paint))
                    drawn[name] = lines
            same = "same lines" if len(set(map(tuple, drawn.values()))) == 1 else "LINES DIFFER"
            print(f"{n} rows, {what} ({same}):")
            for name in painters:
                refresh = statistics.median(r for r, _ in got[name])
                paint = statistics.median(p for _, p in got[name])
                print(f"  {name:<18}  refresh {refresh:6.2f} ms CPU   paint {paint:6.2f} ms")
            ours, theirs = (statistics.median(r for r, _ in got[p]) for p in painters)
            print(f"  KeyedTable's refresh is {(1 - ours / theirs) * 100:+.0f}% faster")


if __name__ == "__main__":
    asyncio.run(run())
