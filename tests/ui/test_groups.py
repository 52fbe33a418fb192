"""The links in groups that fold: by host, by rail, by rule; one group or all; with the
filter and the sort, as a person types them (frozen clock, no sleeping).

The fabric (tests/ui/fabric.py): hosts of two RoCE ports, node3's first in a PFC storm;
here node2's second port is down too.
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text

from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.fabtest.rails import rails
from tests.ui.fabric import FakeClock, sample
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.groups import CLOSED, FOLDED, HOST, OPEN, RAIL, RULE, grouped
from tui.rows.links import link_rows
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable

STORM = "node3\x1fenp65s0f0np0"
DOWN = "node2\x1fenp65s0f1np1"


def down_fabric(hosts: int, ticks: int = 3) -> tuple[FabricState, FakeClock]:
    clock = FakeClock()
    names = [f"node{i + 1}" for i in range(hosts)]
    state = FabricState([HostConfig(name=n) for n in names], rules=make_evaluator(), clock=clock)
    for tick in range(1, ticks + 1):
        clock.t += 1.0
        for n in names:
            s = sample(n, tick)
            if n == "node2":
                s.links["enp65s0f1np1"] = replace(s.links["enp65s0f1np1"], state="down")
            state.apply_sample(n, s)
    return state, clock


def test_groups_by_host_rail_and_rule_worst_first_each_saying_what_it_holds() -> None:
    state, clock = down_fabric(4)
    rows = link_rows(state, clock(), 1.0)
    samples = {n: hs.sample for n, hs in state.hosts.items() if hs.sample is not None}
    rail_of = {(p.host, p.link): n for n, ps in rails(samples).ports.items() for p in ps}

    shown, groups = grouped(rows, RAIL, state.findings, rail_of, {}, OPEN)
    # the storm's rail first (critical), the down link's next; each whole, its row first
    assert [g.label for g in groups] == ["rail 0", "rail 1"]
    assert shown[0].key == "\x1erail:0" and len(shown) == 2 + 8
    assert groups[0].sentence().startswith("rail 0: 4 links, 1 with findings, rx ")
    assert groups[0].sentence().endswith("Gb/s")
    assert shown[0].bad == 1 and shown[0].folded == 4

    _, groups = grouped(rows, RULE, state.findings, rail_of, {}, OPEN)
    said = [g.sentence() for g in groups]
    assert said[0] == "pfc_storm: 1 link on node3"
    assert said[-1].startswith("healthy: 6 links on 4 hosts, rx ")
    # the down link is in a group of its own, never among the healthy ones
    assert [r.key for r in groups[1].links] == [DOWN]

    # by host, folded: each host's row, and only the links with something to say
    shown, groups = grouped(rows, HOST, state.findings, rail_of, {}, FOLDED)
    assert [r.key for r in shown[:4]] == ["\x1ehost:node3", STORM, "\x1ehost:node2", DOWN]
    assert [r.key for r in shown[4:]] == ["\x1ehost:node1", "\x1ehost:node4"]
    assert [r.hidden for r in shown if r.group] == [1, 1, 2, 2]
    # one group opened, one closed over how the rest start
    views = {"host:node1": OPEN, "host:node3": CLOSED}
    shown, _ = grouped(rows, HOST, state.findings, rail_of, views, FOLDED)
    keys = [r.key for r in shown]
    assert STORM not in keys and "node1\x1fenp65s0f1np1" in keys


def app_over(state: FabricState, clock: FakeClock, fold_past: int = 64) -> FabtopApp:
    return FabtopApp(ViewContext(state, interval=1.0, clock=clock, fold_past_links=fold_past))


def state_line(app: FabtopApp) -> str:
    return Text.from_markup(app.screen.query_one(HostTable).border_subtitle or "").plain


async def test_grouping_cycle_one_group_all_groups_sort_filter_and_esc_as_typed() -> None:
    # 18 links past [dashboard] fold_past_links = 16: by host, folded from the start
    state, clock = down_fabric(9)
    app = app_over(state, clock, fold_past=16)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(LinkTable)
        assert t.row_keys()[:4] == ["\x1ehost:node3", STORM, "\x1ehost:node2", DOWN]
        await pilot.press("b")  # by host -> by rail
        assert "by rail (b next)" in state_line(app)
        assert t.row_keys() == ["\x1erail:0", STORM, "\x1erail:1", DOWN]
        # Enter on rail 1 opens it in place; its sentence is on the line; Space closes it
        t.move_cursor(row=2)
        await pilot.press("enter")
        assert len(t.row_keys()) == 3 + 9 and t.row_keys()[2] == "\x1erail:1"
        # (its traffic is on its row: the line keeps still while the numbers move)
        assert "rail 1: 9 links, 1 with findings · " in state_line(app)
        await pilot.press("space")
        assert t.row_keys() == ["\x1erail:0", STORM, "\x1erail:1"]
        # sorted by rx within each group, the groups stay whole and worst first
        await pilot.press("o", "o", "z")  # worst -> host -> rx; every group open
        keys = t.row_keys()
        assert len(keys) == 2 + 18 and keys[0] == "\x1erail:0"
        assert keys.index("\x1erail:1") == 10 and keys[9] == STORM  # 40 Gb/s: rail 0's last
        await pilot.press("z")  # every group closed
        assert t.row_keys() == ["\x1erail:0", "\x1erail:1"]
        await pilot.press("b", "z")  # by rule; opened again
        keys = t.row_keys()
        assert keys[:4] == ["\x1erule:pfc_storm", STORM, "\x1erule:link down", DOWN]
        assert keys[4] == "\x1erule:healthy" and len(keys) == 3 + 18
        # a filter typed, then the groups of what it leaves; Enter on the storm, Esc back
        await pilot.press("slash", *"host:node[2-3]", "enter")
        assert t.row_keys()[:4] == ["\x1erule:pfc_storm", STORM, "\x1erule:link down", DOWN]
        assert len(t.row_keys()) == 3 + 4
        t.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LinkDetailScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        assert len(t.row_keys()) == 3 + 4 and "by rule" in state_line(app)
        await pilot.press("escape")  # the filter goes; the groups stay
        assert len(t.row_keys()) == 3 + 18
        await pilot.press("b")  # no groups: every link, in the sort chosen
        assert len(t.row_keys()) == 18 and not any(k.startswith("\x1e") for k in t.row_keys())
        assert "by " not in state_line(app)
