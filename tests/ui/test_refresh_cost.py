"""What a tick costs the overview: no line is drawn when nothing shown changed, and a
row off screen draws nothing when its values move.

The fabric of the health grid's tests (40 hosts of two RoCE ports, frozen clock): every
link a row (folding off), sorted by host, so node1 is at the top and node39 far below.
"""

from __future__ import annotations

import gc

import pytest
from rich.text import Text
from textual.screen import Screen

from fabtop.run.demo import demo_state
from tests.ui.fabric import sample
from tests.ui.test_health_grid import app_over, big_fabric
from tui import format as fmt
from tui.app import GC_GEN0_THRESHOLD, REFREEZE_GROWTH, FabtopApp, Refreezer, refreezing
from tui.context import ViewContext
from tui.rows.links import host_rows, link_rows
from tui.screens.overview import OverviewScreen
from tui.widgets.gpu_thermal import ThermalPanel
from tui.widgets.health_grid import HealthGrid
from tui.widgets.host_table import HostTable, host_cells, host_sort_key
from tui.widgets.link_table import SORTS, LinkTable
from tui.widgets.top_bar import TopBar


async def test_a_tick_with_nothing_new_draws_nothing_and_a_row_off_screen_draws_nothing() -> None:
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        screen.group_by = ""  # no groups: every link a row
        links = screen.query_one(LinkTable)
        links.sort_spec = SORTS[1]  # by host
        screen.refresh_view()
        await pilot.pause()
        assert links.row_count > 60
        hosts, cells = screen.query_one(HostTable), screen.query_one(HealthGrid)

        def drawn() -> tuple[int, int, int]:
            return links.lines_drawn, hosts.lines_drawn, cells.paints

        before = drawn()
        for _ in range(3):  # the app's ticks, with no frame and the clock still
            app.refresh_now()
            await pilot.pause()
        assert drawn() == before
        # new words in the top line (as a tick's token rate or host count) repaint that
        # line alone, never the tables under it
        top = screen.query_one(TopBar)
        top.show(None, True, "since r 5s")
        await pilot.pause()
        assert "since r 5s" in str(top.render())
        assert drawn() == before
        # node39's links are rows 77 and 78, far below the window: its new frame moves
        # their rates, yet the table draws no line (its other widgets may).
        state.apply_sample("node39", sample("node39", 13))
        app.refresh_now()
        await pilot.pause()
        assert links.lines_drawn == before[0]
        # node1's, at the top, are drawn
        state.apply_sample("node1", sample("node1", 13))
        app.refresh_now()
        await pilot.pause()
        assert links.lines_drawn > before[0]
        # scrolled down, node39's rows show the new frame's values, not the old ones
        links.move_cursor(row=links.get_row_index("node39\x1fenp65s0f0np0"))
        await pilot.pause()
        row = links.get_row_index("node39\x1fenp65s0f0np0")
        fresh = next(
            r
            for r in link_rows(state, clock(), 1.0)
            if (r.host, r.lid) == ("node39", "enp65s0f0np0")
        )
        rx = links.drawn_cells(row)[links.column_keys.index("rx")]
        assert rx.endswith(fmt.gbps(fresh.rx_bps))


async def test_the_app_freezes_its_start_up_heap_and_collects_young_objects_rarely() -> None:
    # Full collections walked every object alive since start-up: 0.3-0.8 s pauses at 1000
    # links (docs/BENCHMARKS.md). The app freezes that heap and raises gen 0's threshold.
    was = gc.get_threshold()
    gc.set_threshold(700, *was[1:])  # as a fresh process has it (an earlier app raised it)
    state, clock = big_fabric()
    app = app_over(state, clock)
    try:
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold()[0] == GC_GEN0_THRESHOLD > 700
    finally:
        gc.unfreeze()
        gc.set_threshold(*was)


async def test_the_hosts_table_on_screen_is_what_its_rows_say_after_churn() -> None:
    # The hosts table makes the cells of the rows on screen only and keeps each line as
    # last drawn: after hosts move, go and come, each line on screen must be the cells of
    # the host now there (a line kept too long shows another host's or an old age).
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(HostTable)
        assert hosts.row_count > hosts.size.height  # some hosts are off screen

        def as_computed() -> None:
            rows = sorted(host_rows(state, clock(), 1.0), key=host_sort_key)
            assert hosts.row_keys() == [r.name for r in rows]
            for y in range(1, hosts.size.height):  # the lines on screen, under the header
                r = rows[y - 1 + int(hosts.scroll_y)]
                want = {k: s.text().plain for k, s in host_cells(r).items()}
                assert {c: hosts.get_cell(r.name, c).plain for c in hosts.column_keys} == {
                    c: want[c] for c in hosts.column_keys
                }

        as_computed()
        age = hosts.get_cell("node1", "age").plain
        clock.t += 1.0  # every age grows, in place: the same hosts on the same lines
        app.refresh_now()
        await pilot.pause()
        assert hosts.get_cell("node1", "age").plain != age
        as_computed()
        state.apply_status("node5", "down", "ssh: connection refused")  # to the top;
        state.remove_host("node2")  # forgotten
        app.refresh_now()
        await pilot.pause()
        as_computed()
        state.apply_sample("node7", sample("node7", 13))  # a new frame: node7's age 0
        hosts.focus()
        hosts.move_cursor(row=hosts.row_count - 1)  # scrolled to the bottom
        app.refresh_now()
        await pilot.pause()
        assert int(hosts.scroll_y) > 0
        as_computed()


def test_a_full_collection_after_growth_freezes_what_survived_and_steady_use_never_does() -> None:
    # Refreezer, with the population a full collection leaves and the freeze counted:
    # hosts connect after start-up and their history fills (growth: freeze, then the
    # population after the freeze is measured as the usual one); a steady fabric's
    # collections, however many, freeze nothing (a freeze keeps dropped cycles for good).
    alive = [0]
    frozen: list[int] = []
    r = Refreezer(alive=lambda: alive[0], freeze=lambda: frozen.append(alive[0]))

    def full(n: int) -> None:
        alive[0] = n
        r("start", {"generation": 2})
        r("stop", {"generation": 2})

    r("stop", {"generation": 0})  # young collections: nothing read, nothing frozen
    for n in (20_000, 40_000, REFREEZE_GROWTH - 1):  # start-up's own growth: not yet
        full(n)
    assert frozen == []
    full(300_000)  # the history filled
    assert frozen == [300_000]
    full(30_000)  # the first collection after a freeze: the usual population (frames, rows)
    for _ in range(50):  # a steady fabric
        full(30_000 + REFREEZE_GROWTH // 2)
    assert frozen == [300_000]
    full(30_000 + REFREEZE_GROWTH + 1)  # new hosts: frozen in turn
    assert frozen == [300_000, 30_000 + REFREEZE_GROWTH + 1] and r.freezes == 2


def test_the_dashboard_runs_install_one_refreezer_and_apps_alone_none() -> None:
    before = list(gc.callbacks)
    # the apps this file's tests ran installed none
    assert not any(isinstance(cb, Refreezer) for cb in before)
    try:
        refreezing()
        refreezing()
        assert sum(isinstance(cb, Refreezer) for cb in gc.callbacks) == 1
    finally:
        gc.callbacks[:] = before


async def test_new_traffic_under_a_group_row_does_not_repaint_the_hosts_table() -> None:
    # The line above the links (the hosts table's border) names the group under the
    # cursor. It said the group's rx too, so every tick changed the border and repainted
    # every line of the hosts table (at 1000 links, a tenth of a tick's paint).
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        links, hosts = screen.query_one(LinkTable), screen.query_one(HostTable)
        assert links.has_focus and links.cursor_key() == "\x1ehost:node3"  # the storm's group row
        line = str(hosts.border_subtitle)
        assert Text.from_markup(line).plain.startswith(" node3: 2 links, 1 with findings · ")
        before = hosts.lines_drawn
        for tick in (13, 14):  # new traffic on the group's links, nothing else new
            state.apply_sample("node3", sample("node3", tick))
            app.refresh_now()
            await pilot.pause()
        assert str(hosts.border_subtitle) == line
        assert hosts.lines_drawn - before <= 2  # node3's own row (its Age), not the table


async def test_new_words_in_as_many_lines_repaint_a_panel_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The GPUs' thermal panel (one line a host) has new words every tick. Each update
    # laid the screen out again: Textual then composes every widget of the screen anew
    # (at 64 x 8, a tenth of the GPU screen's tick).
    state, clock, _ = demo_state(10.0, history_s=10.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    layouts = 0
    laid_out = Screen._refresh_layout

    def counted(self: Screen[object], *args: object, **kwargs: object) -> None:
        nonlocal layouts
        layouts += 1
        laid_out(self, *args, **kwargs)  # type: ignore[arg-type]

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        panel = app.screen.query_one(ThermalPanel)
        lines = str(panel.render()).count("\n") + 1
        height = panel.size.height
        panel.update(Text("\n".join(f"new words {i}" for i in range(lines)), no_wrap=True))
        await pilot.pause()
        assert "new words 0" in str(panel.render())
        assert layouts == 0  # the panel alone is painted
        # a line more: the panel grows (laid out), the table above it gives up a line
        panel.update(Text("\n".join(f"more {i}" for i in range(lines + 1)), no_wrap=True))
        await pilot.pause()
        assert layouts >= 1
        assert panel.size.height == height + 1
