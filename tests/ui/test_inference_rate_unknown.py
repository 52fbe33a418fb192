"""The inference screen says "token rate unknown" and why for exo, never a number.

The demo's ``exo_cluster`` scenario runs a simulated exo on mac1 (cluster with mac2)
beside node1's vLLM; frames and readings go through the live path (demo_state).
"""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from textual.widgets import Static

from collectors.parsers.exo_state import RATE_UNKNOWN
from fabtop.run.demo import demo_state, scenario_fabric
from fabtop.sim.exo import EXO_DEMO_URL
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.host_detail import host_detail
from tui.screens.inference import InferenceScreen
from tui.widgets.gpu_inference_table import InferenceTable
from tui.widgets.top_bar import TopBar

VLLM = "http://127.0.0.1:8000/metrics"
EXO_ROW = f"mac1\x1f{EXO_DEMO_URL}"


def _text(renderable: object) -> str:
    out = StringIO()
    Console(file=out, width=200, color_system=None).print(renderable)
    return out.getvalue()


def _state():  # type: ignore[no-untyped-def]
    return demo_state(20.0, fabric=scenario_fabric("exo_cluster"), history_s=20.0)


async def test_inference_screen_says_token_rate_unknown_and_why() -> None:
    state, clock, _ = _state()
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        assert isinstance(app.screen, InferenceScreen)
        table = app.screen.query_one(InferenceTable)
        cell = lambda row, col: str(table.get_cell(row, col))  # noqa: E731
        assert cell(EXO_ROW, "server") == "exo"
        assert cell(EXO_ROW, "gen") == "unknown" and cell(EXO_ROW, "prompt") == "unknown"
        assert cell(EXO_ROW, "note") == f"token rate unknown: {RATE_UNKNOWN}"
        # node1's vLLM keeps its rate; the cluster total says it leaves exo out
        assert cell(f"node1\x1f{VLLM}", "gen")[0].isdigit()
        assert cell("\x1fcluster", "gen").endswith("+?")
        # what the operator sees on screen, not only the cells
        row = table.row_keys().index(EXO_ROW)
        drawn = dict(zip(table.column_keys, table.drawn_cells(row), strict=True))
        assert drawn["gen"].strip() == "unknown"
        assert drawn["note"].strip().startswith("token rate unknown: exo has no token counter")
        shown = app.screen.query_one("#inference-clusters", Static)
        assert shown.display and shown.size.height >= 1
        placement = _text(shown.content)
        assert f"mac1 exo: token rate unknown: {RATE_UNKNOWN}" in " ".join(placement.split())
        assert "exo on mac1:" in placement
        top = _text(app.screen.query_one(TopBar).render_line(0).text)
        assert "+? tokens/s" in top, top  # the cluster's rate is a floor, said so
        assert "mac1 0-40/80" in placement and "mac2 40-80/80" in placement


async def test_without_exo_the_screen_is_as_before() -> None:
    state, clock, _ = demo_state(20.0, history_s=20.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        table = app.screen.query_one(InferenceTable)
        assert "note" not in table.column_keys  # hidden while empty
        assert not app.screen.query_one("#inference-clusters").display


def test_host_detail_shows_the_exo_cluster_and_placement() -> None:
    state, clock, _ = _state()
    hs = state.hosts["mac1"]
    text = _text(host_detail(state, hs, clock(), 1.0))
    assert f"exo cluster at {EXO_DEMO_URL}" in text
    assert "Apple M3 Ultra" in text and "206/256" in text
    assert "mac1 0-40/80 Running" in text or "mac1 0-40/80 Ready" in text
    assert "mac2 40-80/80 Ready" in text
    assert f"token rate unknown on mac1 ({RATE_UNKNOWN})" in text
