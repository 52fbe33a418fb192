"""The health grid above the links: one glyph per host x rail, found and opened by keys.

The fabric: 40 hosts of two RoCE ports each (tests/ui/fabric.py), node3's first port in
a PFC storm, node29's second port down, node40 unreachable since its last frame, node41
never heard from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from textual.geometry import Size

from fabtop.config import HostConfig
from fabtop.core.findings import Finding, PortRef
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.run.link_filter import parse
from tests.ui.fabric import FakeClock, sample
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.filtering import narrowed
from tui.rows.grid import (
    BLIND,
    CABLE,
    DOWN,
    GLYPHS,
    OK,
    STATES,
    STORM,
    Cell,
    Grid,
    grid,
    rail_index,
)
from tui.rows.links import host_rows, link_rows
from tui.screens.host_detail import HostDetailScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.health_grid import HealthGrid, layout
from tui.widgets.link_table import LinkTable

HOSTS = 40
DOWN_HOST, DOWN_LINK = "node29", "enp65s0f1np1"
NEVER = f"node{HOSTS + 1}"


def big_fabric(ticks: int = 12) -> tuple[FabricState, FakeClock]:
    clock = FakeClock()
    names = [f"node{i + 1}" for i in range(HOSTS)]
    configs = [HostConfig(name=n) for n in [*names, NEVER]]
    state = FabricState(configs, rules=make_evaluator(), clock=clock)
    for tick in range(1, ticks + 1):
        clock.t += 1.0
        for n in names:
            s = sample(n, tick)
            if n == DOWN_HOST:
                s.links[DOWN_LINK] = replace(s.links[DOWN_LINK], state="down")
            state.apply_sample(n, s)
    state.apply_status(f"node{HOSTS}", "down", "ssh: connect to host: Connection refused")
    return state, clock


def cells_of(state: FabricState, clock: FakeClock, flt: str = "") -> Grid:
    now = clock()
    hosts, links = host_rows(state, now, 1.0), link_rows(state, now, 1.0)
    rail_of = rails_of(state)
    if flt:
        hosts, links = narrowed(parse(flt), state, hosts, links, now, rail_of)
    return grid(hosts, links, rail_of, state.findings)


def rails_of(state: FabricState) -> Mapping[tuple[str, str], int]:
    """Each port's rail, over every host (as the overview numbers them)."""
    return rail_index({n: hs.sample for n, hs in state.hosts.items() if hs.sample is not None})


def state_of(g: Grid, line: str, host: str) -> str | None:
    c = g.cell(line, host)
    return c.state if c is not None else None


def test_cells_by_host_and_rail_with_the_worst_state_on_each() -> None:
    state, clock = big_fabric()
    g = cells_of(state, clock)
    # rails as fabtop test numbers them: the two RoCE ports of every host, by name
    assert g.lines == ("r0", "r1")
    assert g.hosts == tuple(f"node{i + 1}" for i in range(HOSTS + 1))
    storm = g.cell("r0", "node3")
    assert storm is not None and storm.state == STORM and storm.link == "enp65s0f0np0"
    assert "pfc_storm" in storm.why
    down = g.cell("r1", DOWN_HOST)
    assert down is not None and down.state == DOWN and down.link == DOWN_LINK
    # the unreachable host and the one never heard from are blind, not healthy
    for host in (f"node{HOSTS}", NEVER):
        assert {state_of(g, line, host) for line in g.lines} == {BLIND}
    never = g.cell("r0", NEVER)
    assert never is not None and never.link is None
    assert state_of(g, "r0", "node1") == OK
    assert g.counts()[OK] == 2 * HOSTS - 4
    # worst first: the down link, then the storm
    worst = g.worst()
    assert worst is not None and (worst.host, worst.state) == (DOWN_HOST, DOWN)


def test_a_hosts_own_finding_does_not_paint_its_links() -> None:
    # a GPU's heat is the host's, not its ports': the column stays as its links are
    state, clock = big_fabric()
    now = clock()
    hot_gpu = Finding("gpu_hot", "critical", "node1/gpu0", "node1/gpu0: 92 C", host="node1")
    g = grid(host_rows(state, now, 1.0), link_rows(state, now, 1.0), rails_of(state), [hot_gpu])
    assert {state_of(g, line, "node1") for line in g.lines} == {OK}


def test_a_reporting_host_whose_links_are_hidden_has_no_column() -> None:
    # the filter kept node1 for a finding of its own, or 'l' narrowed the links to node2:
    # node1 has nothing on the grid, never a column of "ok" where no link was judged
    state, clock = big_fabric()
    now = clock()
    links = [r for r in link_rows(state, now, 1.0) if r.host == "node2"]
    g = grid(host_rows(state, now, 1.0)[:2], links, rails_of(state), [])
    assert g.hosts == ("node2",)


def test_the_filter_in_force_narrows_the_grid() -> None:
    state, clock = big_fabric()
    g = cells_of(state, clock, "host:node[1-4] rail:0")
    assert g.hosts == ("node1", "node2", "node3", "node4")
    assert g.lines == ("r0",)
    g = cells_of(state, clock, "state:down")
    # the down link, and the host that is down (its last links, blind)
    assert g.hosts == (DOWN_HOST, f"node{HOSTS}")


def app_over(state: FabricState, clock: FakeClock) -> FabtopApp:
    return FabtopApp(ViewContext(state, interval=1.0, clock=clock))


async def test_g_finds_the_down_link_and_the_storm_enter_opens_them_esc_comes_back() -> None:
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        cells = app.screen.query_one(HealthGrid)
        # 41 hosts x 2 rails: a legend and two lines, hosts as columns
        assert not cells.folded
        assert cells.size.height <= 6
        await pilot.press("g")  # to the worst cell: the down link
        assert cells.has_focus
        # the line under the grid names the cell under the cursor
        said = str(cells.border_subtitle)
        assert said.startswith(f"{DOWN_HOST} r1 {DOWN_LINK}: down") and said.endswith("Enter opens")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LinkDetailScreen)
        assert (app.screen.host, app.screen.lid) == (DOWN_HOST, DOWN_LINK)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        cells = app.screen.query_one(HealthGrid)
        assert cells.has_focus
        # from node29 rail 1 to node3 rail 0: up once, left 26 times, as a person would
        await pilot.press("up", *["left"] * 26)
        chosen = cells.current()
        assert chosen is not None and (chosen.host, chosen.state) == ("node3", STORM)
        assert str(cells.border_subtitle).startswith("node3 r0 enp65s0f0np0: PFC storm")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LinkDetailScreen)
        assert (app.screen.host, app.screen.lid) == ("node3", "enp65s0f0np0")
        await pilot.press("escape")
        await pilot.pause()
        # the host that never answers has no link: Enter reads the host
        cells = app.screen.query_one(HealthGrid)
        await pilot.press(*["right"] * 50)
        chosen = cells.current()
        assert chosen is not None and chosen.host == NEVER and chosen.link is None
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)


async def test_at_80x24_the_grid_folds_to_its_counts_g_and_n_find_the_down_link_and_storm() -> None:
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        cells = app.screen.query_one(HealthGrid)
        # folded: one line of counts (and the line saying how to open it)
        assert cells.outer_size.height == 2
        legend = cells.legend().plain
        assert "X down 1" in legend and "S PFC storm 1" in legend and "? no data 4" in legend
        await pilot.press("g")  # unfolded: one line per rail, 41 glyphs fit 80 columns
        assert cells.has_focus
        assert cells.outer_size.height == 1 + 2 + 1  # legend, two rails, the cell's line
        worst = cells.current()
        assert worst is not None and (worst.host, worst.state) == (DOWN_HOST, DOWN)
        assert str(cells.border_subtitle).startswith(f"{DOWN_HOST} r1 {DOWN_LINK}: down")
        # the storm beside it: the second key, n, goes to the next worst cell
        await pilot.press("n")
        chosen = cells.current()
        assert chosen is not None and (chosen.host, chosen.state) == ("node3", STORM)
        assert str(cells.border_subtitle).startswith("node3 r0 enp65s0f0np0: PFC storm")
        await pilot.press("n")  # then the hosts not reporting, blind
        chosen = cells.current()
        assert chosen is not None and chosen.state == BLIND
        await pilot.press("left", "n")  # from an ok cell: the worst again
        assert cells.current() == worst
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LinkDetailScreen)
        assert (app.screen.host, app.screen.lid) == (DOWN_HOST, DOWN_LINK)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("g")  # on the grid: folds it, back to the links
        assert cells.outer_size.height == 2
        assert app.screen.query_one(LinkTable).has_focus
        # the choice stays over the next refreshes
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        screen.refresh_view()
        await pilot.pause()
        assert cells.folded


async def test_nothing_repaints_when_no_cell_changed() -> None:
    state, clock = big_fabric()
    app = app_over(state, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        cells = screen.query_one(HealthGrid)
        before = cells.paints
        for _ in range(3):
            screen.refresh_view()
            await pilot.pause()
        assert cells.paints == before
        # a new frame where node5's first port goes down repaints it
        clock.t += 1.0
        s = sample("node5", 13)
        s.links["enp65s0f0np0"] = replace(s.links["enp65s0f0np0"], state="down")
        state.apply_sample("node5", s)
        screen.refresh_view()
        await pilot.pause()
        assert cells.paints > before
        assert state_of(cells.grid, "r0", "node5") == DOWN


def test_every_state_reads_without_colour_its_own_glyph_on_the_grid() -> None:
    # a monochrome terminal, or a reader who cannot tell red from magenta: the glyph says it
    assert len({GLYPHS[s] for s in STATES}) == len(STATES)
    hosts = tuple(f"n{i}" for i in range(len(STATES)))
    cells = {("r0", h): Cell(h, "r0", "p0", s) for h, s in zip(hosts, STATES, strict=True)}
    widget = HealthGrid()
    widget.grid = Grid(hosts, ("r0",), cells)
    line = widget.render().plain.splitlines()[-1]
    assert [c for c in line[5:] if c != " "] == [GLYPHS[s] for s in STATES]


def test_64_hosts_by_8_rails_is_eight_lines_at_100_and_at_80_columns() -> None:
    hosts = tuple(f"node{i + 1:02d}" for i in range(64))
    lines = tuple(f"r{n}" for n in range(8))
    cells = {(ln, h): Cell(h, ln, f"mlx5_{ln[1:]}", OK) for ln in lines for h in hosts}
    widget = HealthGrid()
    widget.grid = Grid(hosts, lines, cells)
    for width in (100, 80):
        # the legend, then one line per rail: every host in one band
        assert widget.get_content_height(Size(width, 24), Size(width, 24), width) == 1 + 8
        lay = layout(hosts, width)
        assert lay.per_band >= 64 and lay.x(63) < width
    # twice the hosts at 80 columns: a second band of the same eight lines
    two = tuple(f"n{i}" for i in range(128))
    widget.grid = Grid(two, lines, {})
    assert widget.get_content_height(Size(80, 24), Size(80, 24), 80) == 1 + 2 * 8


def test_a_failing_cable_is_its_own_state_and_named_in_the_legend_only_then() -> None:
    state, clock = big_fabric()
    quiet = HealthGrid()
    quiet.show(cells_of(state, clock))
    assert " C " not in quiet.legend().plain  # most fabrics: no word for what is not there
    ref = PortRef("node5", "enp65s0f1np1", "enp65s0f1np1")
    state.findings.append(
        Finding("cable_ber", "warning", "node5/enp65s0f1np1", "BER up", host="node5", port=ref)
    )
    g = cells_of(state, clock)
    cable = g.cell("r1", "node5")
    assert cable is not None and (cable.state, cable.glyph, cable.why) == (
        CABLE,
        "C",
        "cable_ber",
    )
    shown = HealthGrid()
    shown.show(g)
    assert "C cable failing 1" in shown.legend().plain


async def test_a_filter_does_not_renumber_the_rails() -> None:
    # Two RoCE rails (r0, r1) and one InfiniBand port: rails are numbered by fabric, so the
    # IB port is r2 whatever the filter shows. The grid numbered the rails of the hosts
    # shown: with only the IB port shown it said r0 while its rail group said rail 2.
    clock = FakeClock()
    state = FabricState(
        [HostConfig(name=n) for n in ("node1", "node2", "ib1")], rules=make_evaluator(), clock=clock
    )
    for tick in range(1, 4):
        clock.t += 1.0
        for n in ("node1", "node2"):
            state.apply_sample(n, sample(n, tick))
        s = sample("ib1", tick)
        port = s.links["enp65s0f0np0"]
        ib = replace(
            port,
            id="mlx5_0/1",
            netdev=None,
            rdma_device="mlx5_0",
            link_layer="InfiniBand",
            kind="ib",
        )
        state.apply_sample("ib1", replace(s, links={ib.id: ib}))
    app = app_over(state, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        cells = app.screen.query_one(HealthGrid)
        assert cells.grid.lines == ("r0", "r1", "r2")
        await pilot.press("slash", *"kind:ib", "enter")
        await pilot.pause()
        assert cells.grid.lines == ("r2",)
        assert cells.grid.cell("r2", "ib1") is not None
        await pilot.press("b", "b")  # by host, then by rail
        await pilot.pause()
        links = app.screen.query_one(LinkTable)
        assert links.drawn_cells(0)[0].endswith("rail 2")  # the one group: the IB rail
