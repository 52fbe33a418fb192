"""Pilot tests: what a person does at the keyboard, and what they then see."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Input

from fabtop.config import HostConfig
from fabtop.core.state import FabricState
from tests.ui.fabric import FakeClock, fabric, feed, sample
from tests.ui.fabric import dashboard as make
from tui.app import SCREEN_REGISTRY, WRITE_OFF, FabtopApp
from tui.context import ViewContext
from tui.screens.help import HelpScreen
from tui.screens.host_detail import HostDetailScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable
from tui.widgets.top_bar import TopBar


def tick(app: FabtopApp, state: FabricState, clock: FakeClock, hosts: list[str]) -> None:
    """One more second: the given hosts send a frame, the screen refreshes."""
    clock.t += 1.0
    for h in hosts:
        n = state.hosts[h].frames + 1
        feed(state, h, sample(h, n), clock)
    app.refresh_now()


def links(app: FabtopApp) -> LinkTable:
    return app.screen.query_one(LinkTable)


def cell(table: HostTable | LinkTable, row: str, col: str) -> str:
    return str(table.get_cell(row, col).plain)


def top_line(app: FabtopApp) -> str:
    return str(app.screen.query_one(TopBar).render())


async def test_overview_lists_every_physical_link_and_hides_virtual_ones() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        keys = links(app).row_keys()
        assert len(keys) == 6
        assert not any(k.endswith("\x1flo") for k in keys)
        await pilot.press("v")
        assert "node1\x1flo" in links(app).row_keys()
        await pilot.press("v")
        assert len(links(app).row_keys()) == 6


async def test_storm_link_shows_pauses_drops_and_a_critical_finding() -> None:
    app, state, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = links(app)
        storm, calm = "node3\x1fenp65s0f0np0", "node1\x1fenp65s0f0np0"
        assert cell(t, storm, "prx") == "90k"
        assert cell(t, storm, "loss") == "12"
        assert cell(t, calm, "prx") == "0"
        assert cell(t, calm, "rx").endswith("160")  # 120 + 10 x (19 % 5) in the last second
        assert "1 critical" in top_line(app)
        # the real rules (fabtop.core.rules) found the storm; the panel shows their words
        [f] = state.findings
        assert (f.rule, f.severity, f.subject) == (
            "pfc_storm",
            "critical",
            "node3/enp65s0f0np0/prio3",
        )
        assert f.evidence["rx_pause_time_ratio"] == 0.995
        findings = str(app.screen.query_one("#findings").render())
        assert "CRIT" in findings and "node3/enp65s0f0np0/prio3" in findings
        assert (
            "PFC storm: paused 99.5% of the time while tx is flat "
            "(stuck receiver beyond the switch)"
        ) in findings


async def test_filter_narrows_hosts_and_links_and_esc_clears_it() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        assert app.screen.query_one("#filter", Input).has_focus
        await pilot.press(*"node2")
        assert {k.split("\x1f")[0] for k in links(app).row_keys()} == {"node2"}
        assert app.screen.query_one(HostTable).row_keys() == ["node2"]
        await pilot.press("enter")  # keeps the filter, back to the table
        assert links(app).has_focus and len(links(app).row_keys()) == 2
        await pilot.press("escape")
        assert len(links(app).row_keys()) == 6


async def test_the_filter_language_as_typed_fields_inversion_a_bad_term_and_esc() -> None:
    app, _, _ = make()  # node1..node3, two RoCE ports each; node3's first in a PFC storm
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"rule:pfc_storm", "enter")
        assert links(app).row_keys() == ["node3\x1fenp65s0f0np0"]
        assert app.screen.query_one(HostTable).row_keys() == ["node3"]
        assert "/ rule:pfc_storm" in str(app.screen.query_one(TopBar).render())
        # Another filter replaces it: every RoCE link not on node[1-2], nor in a finding.
        await pilot.press("slash", *(["backspace"] * 20), *"kind:roce !host:node[1-2]")
        await pilot.press(*" !sev:info", "enter")
        assert links(app).row_keys() == ["node3\x1fenp65s0f1np1"]
        # A bad term says so in one line; the input stays open to mend it.
        await pilot.press("slash", *(["backspace"] * 40), *"rail:x", "enter")
        await pilot.pause()
        assert app.screen.query_one("#filter", Input).has_focus
        assert any("rail must be a number" in n.message for n in app._notifications)
        await pilot.press("backspace", "1", "enter")  # rails as fabtop test numbers them
        assert sorted(links(app).row_keys()) == [f"node{i}\x1fenp65s0f1np1" for i in (1, 2, 3)]
        await pilot.press("escape", "escape")  # Esc leaves the input, Esc clears the filter
        await pilot.pause()
        assert len(links(app).row_keys()) == 6
        assert "/ " not in str(app.screen.query_one(TopBar).render())


async def test_past_64_links_hosts_start_folded_worst_first_and_z_unfolds_all() -> None:
    app, _, _ = make(hosts=33)  # 66 links; node3's first port in a PFC storm
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = links(app)
        keys = t.row_keys()
        # node3's group on top, its storm showing; every other host one row ("2 links").
        assert keys[:2] == ["\x1ehost:node3", "node3\x1fenp65s0f0np0"]
        assert len(keys) == 2 + 32
        assert cell(t, "\x1ehost:node1", "link") == "2 links"
        assert cell(t, "\x1ehost:node1", "host") == "▸ node1"
        assert (
            "65 links folded"
            in Text.from_markup(app.screen.query_one(HostTable).border_subtitle or "").plain
        )
        # Enter on a host's row opens its links in place.
        t.move_cursor(row=keys.index("\x1ehost:node1"))
        await pilot.press("enter")
        assert {"node1\x1fenp65s0f0np0", "node1\x1fenp65s0f1np1"} <= set(t.row_keys())
        assert cell(t, "\x1ehost:node1", "host") == "▾ node1"
        await pilot.press("z")  # every link of every host
        assert len(t.row_keys()) == 33 + 66
        await pilot.press("z")  # every group closed to its row, node1 too
        assert t.row_keys()[0] == "\x1ehost:node3" and len(t.row_keys()) == 33


async def test_hosts_read_in_natural_order_node2_before_node10() -> None:
    app, _, _ = make(hosts=10)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("o")  # host order
        hosts = [k.split("\x1f")[0] for k in links(app).row_keys()]
        assert list(dict.fromkeys(hosts)) == [f"node{i}" for i in range(1, 11)]
        assert app.screen.query_one(HostTable).row_keys() == [f"node{i}" for i in range(1, 11)]


async def test_sort_key_and_header_click_reorder_the_links() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        # Worst first by default: the stormed port on top, the rest in host order.
        keys = links(app).row_keys()
        assert links(app).sort_spec.key == "worst"
        assert keys[0] == "node3\x1fenp65s0f0np0"
        assert keys[1:3] == ["node1\x1fenp65s0f0np0", "node1\x1fenp65s0f1np1"]
        await pilot.press("o", "o")  # worst -> host -> rx
        keys = links(app).row_keys()
        assert links(app).sort_spec.key == "rx"
        # node1/node2 port 0 carry 120+ Gb/s, node3's stormed port 40+, the rest 30
        assert keys[:2] == ["node1\x1fenp65s0f0np0", "node2\x1fenp65s0f0np0"]
        # a click on the PauRx header sorts by rx pauses: the storm comes first
        t = links(app)
        x = 0
        for c in t.columns:
            if c.key == "prx":
                break
            x += (c.width or 0) + 2  # a cell's padding either side
        await pilot.click(LinkTable, offset=(x + 2, 0))
        await pilot.pause()
        assert t.sort_spec.key == "prx"
        assert t.row_keys()[0] == "node3\x1fenp65s0f0np0"


async def test_ticks_update_cells_in_place_without_rebuilding() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = links(app)
        t.move_cursor(row=3)
        before_keys, cursor = t.row_keys(), t.cursor_row
        rebuilds = t.rebuilds
        row = "node1\x1fenp65s0f0np0"
        old = cell(t, row, "rx")
        # cells that do not change read as before: rows not re-added
        unchanged = {(k, c): cell(t, k, c) for k in before_keys for c in ("host", "link")}
        for _ in range(3):
            tick(app, state, clock, ["node1", "node2", "node3"])
            await pilot.pause()
        assert t.rebuilds == rebuilds
        assert t.row_keys() == before_keys and t.cursor_row == cursor
        assert cell(t, row, "rx") != old
        assert all(cell(t, k, c) == v for (k, c), v in unchanged.items())


async def test_frozen_host_greys_out_and_comes_back_by_itself() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(HostTable)
        for _ in range(3):  # node2 goes silent; no status message arrives
            tick(app, state, clock, ["node1", "node3"])
        await pilot.pause()
        assert "STALE" in cell(hosts, "node2", "status")
        assert hosts.row_keys()[0] == "node2"  # worst first
        row = links(app).get_cell("node2\x1fenp65s0f0np0", "host")
        assert "grey" in str(row.style)
        assert "1 stale" in top_line(app)
        tick(app, state, clock, ["node1", "node2", "node3"])
        await pilot.pause()
        assert "up" in cell(hosts, "node2", "status")
        assert "grey" not in str(links(app).get_cell("node2\x1fenp65s0f0np0", "host").style)


async def test_down_host_shows_its_error_on_one_line() -> None:
    app, state, _ = make()
    state.apply_status("node3", "down", "node3 (admin@10.0.0.3): connection refused\nretry")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(HostTable)
        assert "DOWN" in cell(hosts, "node3", "status")
        assert cell(hosts, "node3", "error") == "node3 (admin@10.0.0.3): connection refused retry"


async def test_gap_shows_a_marker_never_a_spike() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        clock.t += 1
        s = sample("node1", 2)  # counters went backwards: a driver reload
        s.seq, s.clock_ns = 99, s.clock_ns + 90 * 10**9
        s.uptime_s += 90
        feed(state, "node1", s, clock)
        app.refresh_now()
        await pilot.pause()
        rx = cell(links(app), "node1\x1fenp65s0f0np0", "rx")
        assert "gap" in rx
        assert cell(links(app), "node1\x1fenp65s0f0np0", "loss") == "—"


async def test_snapshot_key_writes_valid_json_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        files = list(tmp_path.glob("fabtop-snapshot-*Z.json"))
        assert len(files) == 1
        doc = json.loads(files[0].read_text())
        assert doc["schema"] == "fabtop.snapshot/2"
        assert [h["name"] for h in doc["hosts"]] == ["node1", "node2", "node3"]
        assert any(str(files[0]) in n.message for n in app._notifications)


async def test_a_browser_session_without_allow_write_writes_no_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fabtop serve's sessions: whoever holds the URL must not write on the serving machine.
    monkeypatch.chdir(tmp_path)
    state, clock = fabric(3, 20)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock), allow_write=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        assert list(tmp_path.iterdir()) == []
        assert [n.message for n in app._notifications] == [WRITE_OFF]


async def test_snapshot_failure_is_an_error_notification_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)  # the working directory vanished: nothing can be written there
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "snapshot failed" in errors[0].message
        assert app.is_running


async def test_pause_freezes_the_display_while_state_moves_on() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        assert "PAUSED" in top_line(app)
        before = cell(links(app), "node1\x1fenp65s0f0np0", "rx")
        frames = state.hosts["node1"].frames
        tick(app, state, clock, ["node1", "node2", "node3"])
        app.request_refresh()
        await pilot.pause()
        assert state.hosts["node1"].frames == frames + 1
        assert cell(links(app), "node1\x1fenp65s0f0np0", "rx") == before
        await pilot.press("p")
        assert "PAUSED" not in top_line(app)
        assert cell(links(app), "node1\x1fenp65s0f0np0", "rx") != before


async def test_r_sets_a_baseline_and_the_table_counts_since_then() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        assert set(state.baseline) == {"node1", "node2", "node3"}
        assert "ΔPRx" in links(app).labels().values()
        assert cell(links(app), "node3\x1fenp65s0f0np0", "prx") == "0"
        for _ in range(2):
            tick(app, state, clock, ["node1", "node2", "node3"])
        await pilot.pause()
        assert cell(links(app), "node3\x1fenp65s0f0np0", "prx") == "180k"  # 2 s x 90k
        await pilot.press("d")  # back to rates
        assert cell(links(app), "node3\x1fenp65s0f0np0", "prx") == "90k"


async def test_r_before_the_first_frame_says_so_and_d_stays_on_rates() -> None:
    clock = FakeClock()
    state = FabricState([HostConfig(name="node1")], clock=clock)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert not app.ctx.delta_mode
        assert any("no data yet" in str(n.message) for n in app._notifications)
        assert "ΔPRx" not in links(app).labels().values()


async def test_number_keys_switch_to_their_screens() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for key, (_, cls) in SCREEN_REGISTRY.items():
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen) is cls, key
            assert app.current_mode == f"screen{key}"
        await pilot.press("1")
        assert isinstance(app.screen, OverviewScreen)


async def test_enter_opens_link_detail_spans_filter_and_esc_goes_back() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = links(app)
        t.move_cursor(row=t.row_keys().index("node3\x1fenp65s0f0np0"))
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, LinkDetailScreen) and (scr.host, scr.lid) == (
            "node3",
            "enp65s0f0np0",
        )
        raw = scr.query_one("#raw")
        names = [k.split("\x1f")[1] for k in raw.row_keys()]  # type: ignore[attr-defined]
        assert "rx_prio3_pause" in names and "np_cnp_sent" in names
        assert "rx_pause_ctrl_phy" not in names  # never moved
        for key, span in (("f", "15m"), ("h", "6h"), ("m", "1m")):
            await pilot.press(key)
            assert scr.span == span
        await pilot.press("o")
        # 40+ Gb/s of rx bytes is the biggest mover, then the flat tx (25 MB/s), then the
        # 995 000 µs/s of pause duration, then the 90k pauses/s
        assert [k.split("\x1f")[1] for k in raw.row_keys()[:4]] == [  # type: ignore[attr-defined]
            "rx_bytes_phy",
            "tx_bytes_phy",
            "rx_prio3_pause_duration",
            "rx_prio3_pause",
        ]
        await pilot.press("slash", *"cnp")
        assert [k.split("\x1f")[1] for k in raw.row_keys()] == ["np_cnp_sent"]  # type: ignore[attr-defined]
        await pilot.press("escape")  # first Esc clears the filter
        assert len(raw.row_keys()) > 1  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_help_lists_every_key_of_every_screen() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = {k for _, rows in app.screen.sections for k, _ in rows}
        text = " ".join(w for _, rows in app.screen.sections for _, w in rows)
        others = [cls for _, cls in SCREEN_REGISTRY.values()]
        for cls in (
            FabtopApp,
            OverviewScreen,
            LinkDetailScreen,
            HostDetailScreen,
            FindingsPanel,
            HelpScreen,
            *others,
        ):
            for b in cls.__dict__.get("BINDINGS", []):  # its own, not Screen's tab/shift+tab
                if "screen(" in b.action:
                    continue
                assert b.description in text
        assert {
            "?",
            "q",
            "s",
            "p",
            "r",
            "d",
            "/",
            "o",
            "O",
            "v",
            "i",
            "l",
            "Enter",
            "Esc",
            "m",
            "f",
            "h",
            "1-7",
        } <= shown
        # one line names every screen, in the registry's order (seven screens: 1-7, not 1-9)
        assert (
            "screens: 1 overview, 2 PFC, 3 GPUs, 4 inference, 5 timeline, 6 findings, 7 test"
            in text
        )
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_q_quits() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_80x24_keeps_the_essential_columns_without_horizontal_scrolling() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        t = links(app)
        cols = set(t.column_keys)
        assert {"host", "link", "state", "rx", "tx", "loss", "prx", "ptx"} <= cols
        assert t.virtual_size.width <= t.size.width
        # below 100 columns the top line uses the short words
        assert " 1 crit " in top_line(app) and "critical" not in top_line(app)


async def test_only_the_visible_screen_refreshes() -> None:
    app, state, clock = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        overview = app.screen
        assert isinstance(overview, OverviewScreen)
        await pilot.press("enter")
        await pilot.pause()
        n = overview.refreshes
        tick(app, state, clock, ["node1", "node2", "node3"])
        await pilot.pause()
        assert overview.refreshes == n
        detail = app.screen
        assert isinstance(detail, LinkDetailScreen) and detail.refreshes >= 2


async def test_rows_scrolled_into_view_show_the_latest_tick() -> None:
    # Off-screen rows skip the per-tick cell work; scrolling to them must catch them up.
    app, state, clock = make(hosts=12)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("o")  # host order: worst first would lift the silent host's links
        t = links(app)
        last = t.row_keys()[-1]
        assert t.row_count > t.size.height  # the last link starts off-screen
        host = last.split("\x1f")[0]
        assert "grey" not in str(t.get_cell(last, "host").style)
        for _ in range(3):  # the last link's host goes silent
            tick(app, state, clock, [h for h in state.hosts if h != host])
        await pilot.pause()
        t.move_cursor(row=t.row_count - 1)  # scrolls the last link into view
        await pilot.pause()
        assert t.row_keys()[-1] == last
        assert "grey" in str(t.get_cell(last, "host").style)
        assert "grey" in str(t.get_cell(last, "state").style)


def test_a_refresh_that_lands_after_the_screens_are_gone_draws_nothing() -> None:
    # A deferred refresh timer fired while the app shut down (no screens left on the
    # stack) and raised ScreenStackError out of the dashboard's exit.
    app, _, _ = make()
    app.refresh_now()


async def test_a_tick_while_the_app_shuts_down_draws_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The interval tick fired while the app closed its screens: the screen was still on
    # the stack but its widgets were gone, and refresh_view raised NoMatches (TopBar).
    app, _, _ = make()
    prune = app._prune
    errors: list[BaseException] = []

    def prune_then_tick(*nodes: object, **kw: object) -> object:
        done = prune(*nodes, **kw)  # type: ignore[arg-type]

        async def after() -> None:
            await done
            try:
                app.refresh_now()
            except Exception as e:
                errors.append(e)

        return after()

    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        monkeypatch.setattr(app, "_prune", prune_then_tick)
    assert errors == []
