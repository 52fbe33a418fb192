"""The health grid: every host x rail as one glyph, so a bad rail is a row and a bad host
a column (64 hosts x 8 rails: eight lines of 64 glyphs).

Each cell carries a glyph as well as a colour (the first line is the legend, with the
count of each state), so the grid reads on a monochrome terminal too. Hosts past the width
wrap into a second band of the same lines. The line under the grid names the cell under
the cursor. Folded (the overview folds it on short terminals), the grid is its legend line
alone: the counts say whether anything is wrong, ``g`` unfolds it at the worst cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget

from tui.rows.grid import GLYPHS, OK, RARE, STATES, WORDS, Cell, Grid

STYLES = {
    "down": "bold white on red",
    "storm": "bold white on magenta",
    "loss": "bold red",
    "hot": "bold black on yellow",
    "cable": "bold white on dark_orange3",
    "blind": "bold yellow",
    "finding": "yellow",
    "ok": "green",
}
LABEL_W = 5  # "r12 " / "+3  "
GROUP = 8  # hosts between two gaps when a column is one glyph wide


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each host's column sits: hosts per band, the column width, the gaps."""

    col_w: int  # 1: glyphs only; more: the host's name fits above its glyph
    per_band: int

    def x(self, i: int) -> int:
        """The column of the ``i``-th host of a band (after the line's label)."""
        return LABEL_W + (i * self.col_w if self.col_w > 1 else i + i // GROUP)


def layout(hosts: tuple[str, ...], width: int) -> Layout:
    """Names above the glyphs when every host fits so; else one glyph per host, grouped."""
    room = max(width - LABEL_W, 1)
    name_w = max((len(h) for h in hosts), default=1) + 1
    if len(hosts) * name_w <= room:
        return Layout(name_w, max(len(hosts), 1))
    per = max(room - room // (GROUP + 1), 1)
    return Layout(1, per)


class HealthGrid(Widget, can_focus=True):
    """Cells of :class:`tui.rows.grid.Grid`; arrows move, Enter posts :class:`Chosen`."""

    DEFAULT_CSS = """
    HealthGrid {
        height: auto;
        border-bottom: solid $panel;
    }
    HealthGrid:focus {
        border-bottom: heavy $accent;
    }
    """

    BINDINGS = [
        Binding("up", "move(0, -1)", "the rail above", key_display="↑", show=False),
        Binding("down", "move(0, 1)", "the rail below", key_display="↓", show=False),
        Binding("left", "move(-1, 0)", "the host before", key_display="←", show=False),
        Binding("right", "move(1, 0)", "the host after", key_display="→", show=False),
        Binding("enter", "choose", "open"),  # its link, or its host when it has none
        # g went to the worst cell; n to the next worst: a storm beside a down link
        Binding("n", "next_problem", "next problem"),
    ]

    @dataclass
    class Chosen(Message):
        """Enter on a cell."""

        cell: Cell

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.grid = Grid()
        self.cursor = (0, 0)  # (host index, line index)
        self.paints = 0  # renders, for the tests that check nothing repaints idly
        self.folded = False

    # model -------------------------------------------------------------------

    def show(self, grid: Grid) -> None:
        """Take ``grid``; repaint only when a cell changed (the cursor keeps its cell)."""
        if grid == self.grid:
            return
        old = self.current()
        resized = (len(grid.hosts), len(grid.lines)) != (len(self.grid.hosts), len(self.grid.lines))
        self.grid = grid
        if old is not None and old.host in grid.hosts and old.line in grid.lines:
            self.cursor = (grid.hosts.index(old.host), grid.lines.index(old.line))
        else:
            self.cursor = (
                min(self.cursor[0], max(len(grid.hosts) - 1, 0)),
                min(self.cursor[1], max(len(grid.lines) - 1, 0)),
            )
        self._said()
        self.refresh(layout=resized)

    def current(self) -> Cell | None:
        """The cell under the cursor (None on an empty place)."""
        g, (hx, ly) = self.grid, self.cursor
        if not g.hosts or not g.lines:
            return None
        return g.cell(g.lines[ly], g.hosts[hx])

    def to_worst(self) -> None:
        """Put the cursor on the worst cell (where it is when every cell is ok)."""
        w = self.grid.worst()
        if w is not None:
            self.cursor = (self.grid.hosts.index(w.host), self.grid.lines.index(w.line))
            self._said()
            self.refresh()

    def fold(self, folded: bool) -> None:
        """Fold to the legend line (no cursor, no focus) or unfold to every cell."""
        if folded == self.folded:
            return
        self.folded = folded
        self.can_focus = not folded
        self._said()
        self.refresh(layout=True)

    def _said(self) -> None:
        """The line under the grid: the cell under the cursor, else the worst one."""
        c = self.current()
        if self.has_focus and c is not None:
            self.border_subtitle = c.label() + " · Enter opens"
            return
        w = self.grid.worst()
        if w is not None:
            self.border_subtitle = f"worst: {w.label()} · g goes there"
        else:
            self.border_subtitle = "every link ok" if self.grid.cells else ""

    # actions -----------------------------------------------------------------

    def action_move(self, dx: int, dy: int) -> None:
        g = self.grid
        if not g.hosts or not g.lines:
            return
        hx = min(max(self.cursor[0] + dx, 0), len(g.hosts) - 1)
        ly = min(max(self.cursor[1] + dy, 0), len(g.lines) - 1)
        self.cursor = (hx, ly)
        self._said()
        self.refresh()

    def action_next_problem(self) -> None:
        """To the next cell that is not ok, worst first (after the last, the first again)."""
        bad = self.grid.problems()
        if not bad:
            return
        c = self.current()
        nxt = bad[(bad.index(c) + 1) % len(bad)] if c in bad else bad[0]
        self.cursor = (self.grid.hosts.index(nxt.host), self.grid.lines.index(nxt.line))
        self._said()
        self.refresh()

    def action_choose(self) -> None:
        c = self.current()
        if c is not None:
            self.post_message(self.Chosen(c))

    def watch_has_focus(self, has_focus: bool) -> None:
        # After the focus changed (an on_focus handler here runs before Widget sets it).
        super().watch_has_focus(has_focus)
        self._said()
        self.refresh()

    # painting ----------------------------------------------------------------

    def _bands(self, width: int) -> tuple[Layout, int]:
        lay = layout(self.grid.hosts, width)
        n = len(self.grid.hosts)
        return lay, max((n + lay.per_band - 1) // lay.per_band, 1)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.folded:
            return 1
        lay, bands = self._bands(width)
        names = 1 if lay.col_w > 1 else 0
        return 1 + bands * (len(self.grid.lines) + names)

    def legend(self) -> Text:
        """``X down  S PFC storm ...``: each glyph in its colour, with its word."""
        t = Text(no_wrap=True, overflow="ellipsis")
        counts = self.grid.counts()
        for s in STATES:
            if s in RARE and not counts[s]:
                continue
            t.append(f" {GLYPHS[s]}", STYLES[s])
            n = f" {counts[s]}" if counts[s] and s != OK else ""
            t.append(f" {WORDS[s]}{n} ")
        return t

    def render(self) -> Text:
        self.paints += 1
        g = self.grid
        width = self.content_region.width or 100
        lay, bands = self._bands(width)
        out = Text(no_wrap=True, overflow="crop")
        out.append_text(self.legend())
        if self.folded:
            return out
        if not g.hosts:
            out.append("\n no host to show")
            return out
        cursor = self.current() if self.has_focus else None
        for b in range(bands):
            hosts = g.hosts[b * lay.per_band : (b + 1) * lay.per_band]
            if lay.col_w > 1:
                out.append("\n" + " " * LABEL_W)
                out.append("".join(h.ljust(lay.col_w) for h in hosts), "dim")
            for line in g.lines:
                out.append("\n" + line.ljust(LABEL_W - 1) + " ", "dim")
                at = LABEL_W
                for i, h in enumerate(hosts):
                    x = lay.x(i)
                    out.append(" " * (x - at))
                    c = g.cell(line, h)
                    glyph, style = (c.glyph, STYLES[c.state]) if c is not None else (" ", "")
                    if c is not None and c == cursor:
                        style = "bold reverse"
                    out.append(glyph, style)
                    at = x + 1
        return out
