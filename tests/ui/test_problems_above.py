"""A problem that appears above the part of the links a person is reading: the row under
the cursor stays on its line, the new problem is announced on the line above the links
until seen, and ``n`` goes to it (frozen clock, keys as typed)."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text

from tests.ui.fabric import dashboard, sample
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable

DOWN = "node2\x1fenp65s0f1np1"


def state_line(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    return Text.from_markup(screen.query_one(HostTable).border_subtitle or "").plain


async def test_a_new_problem_above_the_view_keeps_the_cursor_row_and_n_goes_to_it() -> None:
    app, state, clock = dashboard(hosts=20, ticks=3)  # 40 links: one row each, worst first
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(LinkTable)
        await pilot.press("pagedown", "pagedown")  # reading further down
        await pilot.pause()
        top = int(t.scroll_y)
        assert top > 2
        key, line = t.cursor_key(), t.cursor_row - top
        # node2's second port goes down: worst first puts it under the storm, row 1
        clock.t += 1.0
        for name, hs in state.hosts.items():
            s = sample(name, hs.frames + 1)
            if name == "node2":
                s.links["enp65s0f1np1"] = replace(s.links["enp65s0f1np1"], state="down")
            state.apply_sample(name, s)
        app.refresh_now()
        await pilot.pause()
        assert t.row_keys().index(DOWN) == 1
        # the row under the cursor did not move on the screen; the new one is above it
        assert t.cursor_key() == key and t.cursor_row - int(t.scroll_y) == line
        assert int(t.scroll_y) > 1
        assert "▲ 1 new problem above (n)" in state_line(app)
        await pilot.press("n")
        await pilot.pause()
        assert t.cursor_key() == DOWN
        assert "new problem" not in state_line(app)
        # n again: the next problem down from there, round to the top (the storm)
        await pilot.press("n")
        assert t.cursor_key() == "node3\x1fenp65s0f0np0"
