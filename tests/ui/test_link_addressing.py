"""The RDMA port's detail says its addressing: an IB port's SM LID, a RoCE port's RoCE v2
GID (index and address) or that it has none; the findings view shows the subnet-manager
finding in full (demo scenarios, the live code path)."""

from __future__ import annotations

from textual.widgets import Static

from fabtop.run.demo import demo_state, scenario_fabric
from tests.ui.fabric import words
from tests.ui.test_findings_view import detail_lines
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.findings import finding_key
from tui.screens.findings import FindingsScreen, FindingsTable
from tui.screens.link_detail import LinkDetailScreen

Title = tuple[str, list[str]]  # the title's text, and its parts drawn red


def _title(app: FabtopApp) -> Title:
    title = app.screen.query_one("#link-title", Static).render()  # Content or Text
    text = str(title)
    return text, [
        text[s.start : s.end] for s in getattr(title, "spans", []) if "red" in str(s.style)
    ]


def _app(scenario: str) -> FabtopApp:
    state, clock, _ = demo_state(6.0, fabric=scenario_fabric(scenario), history_s=6.0)
    return FabtopApp(ViewContext(state, interval=1.0, clock=clock))


async def _titles(scenario: str, *links: tuple[str, str]) -> list[Title]:
    app = _app(scenario)
    out: list[Title] = []
    async with app.run_test(size=(160, 36)) as pilot:
        for host, lid in links:
            await app.push_screen(LinkDetailScreen(app.ctx, host, lid))
            await pilot.pause()
            out.append(_title(app))
            app.pop_screen()
    return out


async def test_roce_port_detail_shows_its_roce_v2_gid_or_its_absence() -> None:
    (text, red), (ib, ib_red) = await _titles(
        "healthy", ("node1", "enp65s0f0np0"), ("node2", "mlx5_2/1")
    )
    assert "mlx5_0/1  v2 GID 3 10.0.0.1" in text and red == []
    assert "InfiniBand" in ib and "sm_lid 0x1" in ib and ib_red == []
    [(text, _)] = await _titles("gid_index_mismatch", ("node3", "enp65s0f1np1"))
    assert "v2 GID 5 10.1.0.3" in text
    [(_, red)] = await _titles("roce_no_ipv4_gid", ("node3", "enp65s0f0np0"))
    assert red == ["no v2 GID with an address"]


async def test_no_subnet_manager_in_the_ib_port_detail_and_the_findings_view() -> None:
    app = _app("no_subnet_manager")
    found = next(f for f in app.ctx.state.findings if f.rule == "no_subnet_manager")
    async with app.run_test(size=(120, 36)) as pilot:
        await app.push_screen(LinkDetailScreen(app.ctx, "node2", "mlx5_2/1"))
        await pilot.pause()
        text, red = _title(app)
        assert "init" in text and red == ["sm_lid 0x0"]
        app.pop_screen()
        await pilot.press("6")
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        table = app.screen.query_one(FindingsTable)
        assert table.cursor_key() == finding_key(found)  # critical: first
        every = words("\n".join(detail_lines(app)))
        assert words(found.summary) in every and words(found.next_step) in every
        assert words("node1/mlx5_2/1 INIT/LinkUp sm_lid 0x0") in every
