"""The RDMA port's detail says its addressing: an IB port's SM LID, a RoCE port's RoCE v2
GID (index and address) or that it has none (demo scenarios, the live code path)."""

from __future__ import annotations

from textual.widgets import Static

from fabtop.run.demo import demo_state, scenario_fabric
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.link_detail import LinkDetailScreen


async def _title(scenario: str, host: str, lid: str) -> tuple[str, list[str]]:
    state, clock, _ = demo_state(6.0, fabric=scenario_fabric(scenario), history_s=6.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(160, 36)) as pilot:
        await pilot.pause()
        app.push_screen(LinkDetailScreen(app.ctx, host, lid))
        await pilot.pause()
        title = app.screen.query_one("#link-title", Static).render()
        text = str(title)
        red = [text[s.start:s.end] for s in getattr(title, "spans", [])
               if "red" in str(s.style)]  # fmt: skip
    return text, red


async def test_roce_port_detail_shows_its_roce_v2_gid_or_its_absence() -> None:
    text, red = await _title("healthy", "node1", "enp65s0f0np0")
    assert "mlx5_0/1  v2 GID 3 10.0.0.1" in text and red == []
    text, _ = await _title("gid_index_mismatch", "node3", "enp65s0f1np1")
    assert "v2 GID 5 10.1.0.3" in text
    text, red = await _title("roce_no_ipv4_gid", "node3", "enp65s0f0np0")
    assert red == ["no v2 GID with an address"]


async def test_ib_port_detail_shows_its_sm_lid_red_without_a_subnet_manager() -> None:
    text, red = await _title("healthy", "node2", "mlx5_2/1")
    assert "InfiniBand" in text and "sm_lid 0x1" in text and red == []
    text, red = await _title("no_subnet_manager", "node2", "mlx5_2/1")
    assert "init" in text and red == ["sm_lid 0x0"]
