"""The findings view (key 6, Enter on a finding): every word of every finding readable."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from tests.ui.fabric import dashboard as make
from tests.ui.fabric import words
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.findings import finding_key
from tui.screens.findings import FindingsScreen, FindingsTable
from tui.screens.host_detail import HostDetailScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.findings_panel import FindingsPanel

LONG_ERROR = (
    "node1 (admin@10.0.0.1): ssh: connect to host 10.0.0.1 port 22: Connection "
    "refused; the last lines of its stderr follow and go on well past any one "
    "line of an 80-column terminal so that only a wrapped view shows it all"
)


def detail_lines(app: FabtopApp) -> list[str]:
    """Every line of the detail pane, scrolled into view or not."""
    body = app.screen.query_one("#finding-text", Static)
    return [s.text for s in body.render_lines(Region(0, 0, *body.outer_size))]


def visible_detail(app: FabtopApp) -> str:
    """The detail pane's lines that are on screen now (not scrolled away)."""
    scroll = app.screen.query_one("#finding-detail", VerticalScroll)
    top = scroll.scroll_offset.y
    return "\n".join(detail_lines(app)[top : top + scroll.content_region.height])


async def test_enter_on_a_panel_finding_opens_it_in_full_at_80x24() -> None:
    app, state, _ = make()
    state.apply_status("node1", "down", LONG_ERROR)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        # Tab from the links reaches the findings panel; down moves to the storm
        await pilot.press("tab")
        panel = app.screen.query_one(FindingsPanel)
        assert panel.has_focus
        assert [f.rule for f in panel.findings][:2] == ["host_unreachable", "pfc_storm"]
        await pilot.press("down")
        storm = panel.chosen()
        assert storm is not None and storm.rule == "pfc_storm"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        table = app.screen.query_one(FindingsTable)
        assert table.cursor_key() == finding_key(storm)
        # the table cuts the long line with "…"; the pane below has every word
        cut = table.get_cell(finding_key(storm), "headline").plain
        assert (
            len(cut) > table.columns[next(k for k in table.columns if k.value == "headline")].width
        )
        shown = words(visible_detail(app))
        assert words(storm.summary) in shown
        assert words(storm.next_step) in shown  # on screen at 80x24, no scrolling
        # every evidence item is listed (the ports by label)
        every = words("\n".join(detail_lines(app)))
        for k, v in storm.shown_evidence().items():
            assert k in every
            if isinstance(v, str):
                assert words(v) in every


async def test_the_host_error_is_readable_in_full_and_enter_opens_the_host() -> None:
    app, state, _ = make()
    state.apply_status("node1", "down", LONG_ERROR)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        # the worst first: node1 down, selected, its whole error wrapped
        assert app.screen.query_one(FindingsTable).cursor_key() == "host_unreachable\x1fnode1"
        shown = words(visible_detail(app))
        assert words(LONG_ERROR.removeprefix("node1 ")) in shown
        assert "Next step" in shown
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen) and app.screen.host == "node1"
        await pilot.press("escape")
        assert isinstance(app.screen, FindingsScreen)


async def test_enter_on_a_port_finding_opens_its_link_detail() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, LinkDetailScreen)
        assert (scr.host, scr.lid) == ("node3", "enp65s0f0np0")


async def test_cleared_findings_are_listed_with_their_times() -> None:
    app, state, _ = make()
    state.apply_status("node2", "down", "node2: Connection refused")
    state.apply_status("node2", "up")
    assert not any(f.host == "node2" for f in state.findings)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        table = app.screen.query_one(FindingsTable)
        keys = table.row_keys()
        assert keys[0] == "pfc_storm\x1fnode3/enp65s0f0np0/prio3"  # active first
        cleared = [k for k in keys if k.startswith("host_unreachable\x1fnode2")]
        assert len(cleared) == 1
        assert table.get_cell(cleared[0], "when").plain.startswith("cleared")
        table.move_cursor(row=keys.index(cleared[0]))
        await pilot.pause()
        shown = words(visible_detail(app))
        assert "cleared" in shown and "raised" in shown and "lasted" in shown
        assert "node2 did not answer: Connection refused" in shown


async def test_no_findings_shows_what_was_seen_and_escape_goes_to_the_overview() -> None:
    app, _, _ = make(hosts=2)  # no storm
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        assert app.screen.query_one(FindingsTable).row_count == 0
        assert "no problems in what was seen" in visible_detail(app)
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_i_opens_the_host_of_the_selected_finding() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen) and app.screen.host == "node3"


async def test_a_cleared_finding_reads_as_it_did_while_it_held() -> None:
    # The demo's storm (45-70 s) has cleared by 150 s; its last version carried the
    # restore hold's "clears in N s", which is not true of a finding that cleared.
    from fabtop.run.demo import demo_state

    state, clock, _ = demo_state(150.0, history_s=150.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        table = app.screen.query_one(FindingsTable)
        keys = table.row_keys()
        storm = [k for k in keys if k.startswith("pfc_storm\x1f")]
        assert storm, keys
        table.move_cursor(row=keys.index(storm[0]))
        await pilot.pause()
        shown = words("\n".join(detail_lines(app)))
        assert "PFC storm" in shown and "cleared" in shown
        assert "clears in" not in shown and "quiet_s" not in shown


async def test_enter_on_a_finding_while_paused_opens_that_finding() -> None:
    app, state, _ = make()
    state.apply_status("node1", "down", LONG_ERROR)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("6")  # the view exists, its cursor on the first finding
        await pilot.pause()
        await pilot.press("1", "p", "tab", "down")
        panel = app.screen.query_one(FindingsPanel)
        chosen = panel.chosen()
        assert chosen is not None and chosen.rule == "pfc_storm"
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, FindingsScreen)
        assert scr.query_one(FindingsTable).cursor_key() == finding_key(chosen)
        assert "PFC storm" in words("\n".join(detail_lines(app)))
