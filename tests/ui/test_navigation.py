"""Navigation a person can predict (issue 32): sequences of keys as a person types them.

The same keys do the same thing however often they are typed and wherever the person
has been: the focused panel is the one with a highlighted row (and the findings panel
says so), every hint names the keys that reach it from where the focus is, number keys
go to their screen from anywhere, Esc goes back one step, and a newly picked finding
opens at its top.
"""

from __future__ import annotations

from typing import Any

from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Static

from tests.ui.fabric import dashboard as make
from tui.app import FabtopApp
from tui.rows.findings import finding_key
from tui.screens.findings import FindingsScreen, FindingsTable
from tui.screens.host_detail import HostDetailScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pfc import PfcScreen
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.host_table import HostTable
from tui.widgets.keyed_table import KeyedTable
from tui.widgets.link_table import LinkTable
from tui.widgets.virtual_table import VirtualTable

LONG_ERROR = (
    "node1 (admin@10.0.0.1): ssh: connect to host 10.0.0.1 port 22: Connection refused; "
    + "the last lines of its stderr follow, long enough to scroll at 80x24; " * 12
)


def cursor_drawn(table: KeyedTable | VirtualTable[Any]) -> bool:
    """Whether the table paints its cursor row highlighted (what a person sees)."""
    cursor = table.get_component_rich_style("datatable--cursor")
    y = table.header_height + table.cursor_row - table.scroll_offset.y
    return any(
        seg.style is not None and seg.style.bgcolor == cursor.bgcolor
        for seg in table.render_line(y)
    )


async def read_storm_from_the_panel(app: FabtopApp, pilot: Pilot[int]) -> str | None:
    """Tab, down, Enter: what the panel's hint promises. The finding the view opened on."""
    await pilot.press("tab", "down", "enter")
    await pilot.pause()
    if not isinstance(app.screen, FindingsScreen):
        return None
    return app.screen.query_one(FindingsTable).cursor_key()


async def test_tab_down_enter_reads_the_same_finding_every_time() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = await read_storm_from_the_panel(app, pilot)
        assert first == finding_key(app.ctx.state.findings[0])  # the storm
        # Back with Esc, then the same keys: the same finding, not a host's detail.
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        assert await read_storm_from_the_panel(app, pilot) == first
        # Away to another screen and back with its number: the same again.
        await pilot.press("2", "1")
        assert await read_storm_from_the_panel(app, pilot) == first


async def test_the_focused_panel_is_the_one_marked_and_hints_name_the_keys_from_there() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        panel, links = screen.query_one(FindingsPanel), screen.query_one(LinkTable)
        hosts = screen.query_one(HostTable)
        assert links.has_focus and cursor_drawn(links) and not cursor_drawn(hosts)
        assert panel.border_title == "Tab here, ↑↓ choose, Enter reads it in full"
        await pilot.press("tab")
        assert panel.has_focus and not cursor_drawn(links)  # one highlighted row: the panel's
        assert str(panel.border_title).startswith("▶ findings")
        # From the hosts the panel is one shift+Tab away, and its hint says so.
        await pilot.press("escape", "shift+tab")
        assert hosts.has_focus and cursor_drawn(hosts) and not cursor_drawn(links)
        assert panel.border_title == "shift+Tab here, ↑↓ choose, Enter reads it in full"
        await pilot.press("shift+tab")
        assert panel.has_focus


async def test_number_keys_go_to_their_screen_from_anywhere() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("i")  # the host under the cursor, over the overview
        assert isinstance(app.screen, HostDetailScreen)
        await pilot.press("6", "1")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("6", "enter")  # the storm's link, over the findings view
        assert isinstance(app.screen, LinkDetailScreen)
        await pilot.press("1", "6")
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("i", "6")  # its own number from a detail opened there
        assert isinstance(app.screen, FindingsScreen)


async def test_escape_goes_back_one_step() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("2", "6", "escape")
        assert isinstance(app.screen, PfcScreen)  # where the findings view was opened from
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        overview = app.screen
        await pilot.press("slash", *"node1", "enter")
        assert overview.filter_text == "node1"
        # From the findings panel, one step is back to the links: the filter stays.
        await pilot.press("tab", "escape")
        assert overview.query_one(LinkTable).has_focus and overview.filter_text == "node1"
        await pilot.press("escape")  # the next step drops the filter
        assert overview.filter_text == ""


async def test_a_newly_picked_finding_opens_at_its_top() -> None:
    app, state, _ = make()
    state.apply_status("node1", "down", LONG_ERROR)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        scroll = app.screen.query_one("#finding-detail", VerticalScroll)
        assert scroll.max_scroll_y > 0  # the host's error is longer than the pane
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_offset.y > 0
        await pilot.press("down")  # another finding: read from its first line
        await pilot.pause()
        assert scroll.scroll_offset.y == 0


async def test_the_findings_views_hint_follows_the_focus() -> None:
    app, state, _ = make()
    state.apply_status("node1", "down", LONG_ERROR)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        title = app.screen.query_one("#findings-title", Static)
        table = app.screen.query_one(FindingsTable)
        assert "Tab scrolls" in str(title.render()) and cursor_drawn(table)
        await pilot.press("tab")  # the text has the keys: the list's cursor goes
        assert "Tab list" in str(title.render()) and not cursor_drawn(table)
        await pilot.press("tab", "down")  # back on the list, as the hint said
        assert table.has_focus and table.cursor_row == 1
