"""A Thunderbolt link on screen: its speed in the links table, its cable in the link detail."""

from __future__ import annotations

from textual.widgets import Static

from fabtop.run.demo import demo_state
from tests.ui.fabric import words
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.link_detail import LinkDetailScreen
from tui.widgets.link_table import LinkTable


async def test_thunderbolt0_shows_its_speed_and_its_cable() -> None:
    state, clock, _ = demo_state(10.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(LinkTable)
        key = "node3\x1fthunderbolt0"
        assert t.get_cell(key, "type").plain.split() == ["TB", "40G"]  # no longer "TB —"
        t.move_cursor(row=t.row_keys().index(key))
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, LinkDetailScreen)
        title = words(str(scr.query_one("#link-title", Static).render()))
        assert "node3:thunderbolt0 \u27f7 node4:thunderbolt0 2 \u00d7 20 = 40 Gb/s" in title
