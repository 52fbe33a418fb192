"""The links table draws a plain cell directly (virtual_table._plain_cell), not through
rich's Padding and Styled: both ways must give the same segments, for every cell the demo
shows (storms in red, sparklines, group rows, the cable column) and on the edges."""

from __future__ import annotations

import pytest
from rich.segment import Segment
from rich.style import Style

from fabtop.run.demo import demo_state
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.groups import HOST
from tui.screens.overview import OverviewScreen
from tui.widgets import cell_paint, keyed_table
from tui.widgets.keyed_table import KeyedTable, Spec
from tui.widgets.link_table import LinkTable
from tui.widgets.virtual_table import PADDING, _plain_cell, _render

EDGES = [
    Spec(""),
    Spec("", "", "right"),
    Spec("", "bold", "left"),
    Spec("1.5", "", "right"),
    Spec("exactly8", "red"),  # fills its column to the last cell
    Spec("exactly8", "", "right"),
    Spec("ノード", "bold", "left"),  # two cells a character
    Spec("▁▂▃▅▇", "green"),
    Spec("hot", "bold white on red", "right"),
    Spec("x", "", "center"),  # not plain: rich's way
    Spec("a\tb"),  # a tab: rich's way
    Spec("much too long for it"),  # cut: rich's way
    Spec((("12.5 ", ""), ("▁▂▃", "green")), "", "right"),  # a number and its sparkline
    Spec((("2", "red"), ("/3", "")), "grey50", "left"),
    Spec((("a", "bold"), ("b", "")), "on red"),
    Spec((), "", "right"),
    # Right-justified with trailing blanks: rich strips them first (the links' " gap ").
    Spec((("▁▂▃", "cyan"), (" ", ""), (" gap ", "bold magenta")), "", "right"),
    Spec("ab ", "", "right"),
    Spec((("ab", ""), ("  ", "red")), "", "right"),
    Spec("ab ", "", "left"),  # kept when left-justified
    Spec("two\nlines"),  # more than a line: rich's way
    Spec((("n1", ""), ("\x1b[2J", "")), "", "right"),  # a control character: rich's way
]


async def test_a_plain_cell_is_drawn_as_rich_draws_it() -> None:
    state, clock, _ = demo_state(30.0, history_s=30.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        screen.group_by = HOST  # group rows too
        screen.refresh_view()
        await pilot.pause()
        table = screen.query_one(LinkTable)
        look = table._new_look()
        options = app.console_options.update(no_wrap=True, height=1)
        specs = {
            (spec, (col.width or 0) + 2 * PADDING)
            for key in table.row_keys()
            for col in table.columns
            if (spec := table._cells_of(table.row(key)).get(col.key)) is not None
        }
        specs |= {(spec, 8 + 2 * PADDING) for spec in EDGES}
        fast = 0
        for spec, width in sorted(specs, key=repr):
            for highlight in (Style(), look.cursor):
                got = _plain_cell(spec, width, look.base, highlight, app.console.get_style, 3)
                text = spec.text()
                text.overflow = text.overflow or "ellipsis"
                want = _render(text, width, look.base, highlight, options, table, 3)
                if got is not None:
                    fast += 1
                    assert got == want, (spec, width, highlight)
        # most cells take the direct way; the edges that must not, do not
        assert fast > len(specs)
        for spec in [*EDGES[9:12], *EDGES[-2:]]:
            assert _plain_cell(spec, 10, look.base, Style(), app.console.get_style, 0) is None


async def test_every_table_cell_of_every_screen_is_drawn_as_rich_draws_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tables of the other screens (PFC, GPUs, inference, findings, test: DataTable's
    model) draw a plain cell directly too: each cell of each, and the edges, on and off
    the cursor, as rich's way draws it; most take the direct way."""
    state, clock, _ = demo_state(90.0, history_s=30.0)  # long enough for findings
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    direct = drawn = 0

    def counted(*args: object) -> object:
        nonlocal direct
        got = cell_paint.plain_segments(*args)  # type: ignore[arg-type]
        direct += got is not None
        return got

    def draw(table: KeyedTable, args: tuple[object, ...], plain: object) -> list[list[Segment]]:
        with monkeypatch.context() as m:
            m.setattr(keyed_table, "plain_segments", plain)
            lines = table._draw_cell(*args)  # type: ignore[arg-type]
        # as the line is drawn: neighbouring runs of one style merged
        return [list(Segment.simplify(line)) for line in lines]

    async with app.run_test(size=(200, 50)) as pilot:
        for key in "234567":
            await pilot.press(key)
            await pilot.pause()
            for table in app.screen.query(KeyedTable):
                paint = table._new_paint()
                # its own cells; the edges (parts in their styles, blanks, cut) in its
                # first column
                cells = [
                    (row, col, cell, paint.widths[col])
                    for row in range(table.row_count)
                    for col, cell in enumerate(table.get_row_at(row))
                    if cell is not None
                ] + [(0, 0, spec.text(), 8 + 2 * PADDING) for spec in EDGES]
                for row, col, cell, width in cells:
                    for on_cursor, on_hover in ((False, False), (True, False), (True, True)):
                        args = (cell, row, col, width, on_cursor, on_hover, paint)
                        got = draw(table, args, counted)
                        want = draw(table, args, lambda *a: None)
                        assert got == want, (key, row, col, cell, on_cursor, on_hover)
                        drawn += 1
    assert drawn > 1000
    assert direct > drawn * 0.7
