"""GPU, inference and timeline screens on the demo: what a user reads off them."""

from __future__ import annotations

import pytest

from fabtop.run.demo import demo_state
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.gpus import GpuScreen
from tui.screens.inference import InferenceScreen
from tui.screens.timeline import TimelineScreen
from tui.widgets.gpu_inference_table import InferenceTable
from tui.widgets.gpu_table import GpuTable, spell_reasons
from tui.widgets.timeline_chart import TimelinePanel
from tui.widgets.timeline_series import track_series

THERMAL_S = 122.0  # demo: node4 GPU 1 in thermal slowdown, the PFC storm (45-70 s) behind


@pytest.fixture(scope="module")
def thermal_state():  # type: ignore[no-untyped-def]
    return demo_state(THERMAL_S, history_s=THERMAL_S)


def _cell(table: GpuTable | InferenceTable, row: str, col: str) -> str:
    return str(table.get_cell(row, col))


async def test_gpu_screen_spells_out_thermal_slowdown(thermal_state) -> None:  # type: ignore[no-untyped-def]
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(160, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        table = app.screen.query_one(GpuTable)
        assert len(table.row_keys()) == 10  # 4 hosts x 2 GPUs, 2 Macs x 1 (macmon)
        hot = _cell(table, "node4\x1f1", "throttle")
        assert "HW+SW thermal slowdown" in hot
        assert _cell(table, "node4\x1f0", "throttle") == "none"
        assert _cell(table, "node4\x1f1", "temp").startswith("90")
        thermal = str(app.screen.query_one("#thermal").render())
        assert "gpu1 90° SLOWDOWN" in thermal and "enp65s0f0np0" in thermal


def test_reasons_read_like_nvidia_smi() -> None:
    assert spell_reasons(("sw_power_cap", "hw_slowdown")) == "SW power cap, HW slowdown"
    assert spell_reasons(("something_new",)) == "something new"
    # both thermal slowdowns in one phrase: it fits the narrowest Clocks column whole
    assert spell_reasons(("sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown")) == (
        "SW power cap, HW+SW thermal slowdown"
    )
    assert spell_reasons(("hw_thermal_slowdown",)) == "HW thermal slowdown"


async def test_gpu_and_inference_answers_survive_80x24(thermal_state) -> None:  # type: ignore[no-untyped-def]
    # The screens' answers: what slows a GPU down (and its temperature), the token rate.
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.screen.query_one(GpuTable)
        assert {"temp", "throttle"} <= set(table.column_keys)
        row = table.row_keys().index("node4\x1f1")
        drawn = dict(zip(table.column_keys, table.drawn_cells(row), strict=True))
        assert drawn["throttle"].strip() == "HW+SW thermal slowdown"
        assert drawn["temp"].strip() == "90°"
        assert table.virtual_size.width <= table.scrollable_content_region.width
        thermal = str(app.screen.query_one("#thermal").render())
        assert "gpu1 90° SLOWDOWN" in thermal  # the compact line names the hot GPU
        await pilot.press("4")
        await pilot.pause()
        inf = app.screen.query_one(InferenceTable)
        assert "gen" in inf.column_keys
        url = "http://127.0.0.1:8000/metrics"
        row = inf.row_keys().index(f"node1\x1f{url}")
        drawn = dict(zip(inf.column_keys, inf.drawn_cells(row), strict=True))
        assert drawn["gen"].strip() == _cell(inf, f"node1\x1f{url}", "gen") != "—"
        assert inf.virtual_size.width <= inf.scrollable_content_region.width


async def test_inference_shows_url_and_model_whole_when_wide() -> None:
    state, clock, _ = demo_state(40.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        inf = app.screen.query_one(InferenceTable)
        url = "http://127.0.0.1:8000/metrics"
        row = inf.row_keys().index(f"node1\x1f{url}")
        drawn = dict(zip(inf.column_keys, inf.drawn_cells(row), strict=True))
        assert drawn["url"].strip() == url
        assert drawn["model"].strip() == _cell(inf, f"node1\x1f{url}", "model")


async def test_inference_screen_shows_rates_and_cluster_total() -> None:
    state, clock, _ = demo_state(40.0)  # incast: tokens at 85 %
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        assert isinstance(app.screen, InferenceScreen)
        table = app.screen.query_one(InferenceTable)
        url = "http://127.0.0.1:8000/metrics"
        rates = state.hosts["node1"].rates
        assert rates is not None
        gen = rates.inference[url]["generated_tokens_per_s"]
        assert gen is not None and 1500 < gen < 2400
        assert _cell(table, f"node1\x1f{url}", "server") == "vllm"
        assert _cell(table, f"node1\x1f{url}", "gen") == f"{gen / 1000:.1f}k"
        assert _cell(table, "\x1fcluster", "gen") == f"{gen / 1000:.1f}k"
        assert _cell(table, f"node1\x1f{url}", "ttft50").endswith("s")


def test_timeline_series_show_the_storm_dip(thermal_state) -> None:  # type: ignore[no-untyped-def]
    state, _, _ = thermal_state
    now, series = track_series(state.history, 130.0)
    assert now is not None
    times, tokens = series["tokens"]
    _, pause = series["pause"]

    def at(values: list[float | None], ago: float) -> float | None:
        i = min(range(len(times)), key=lambda j: abs(times[j] - (now - ago)))
        return values[i]

    storm_ago = THERMAL_S - 60.0  # middle of the storm
    healthy_ago = THERMAL_S - 10.0
    tok_storm, tok_ok = at(tokens, storm_ago), at(tokens, healthy_ago)
    assert tok_storm is not None and tok_ok is not None and tok_storm < 0.1 * tok_ok
    p = at(pause, storm_ago)
    assert p is not None and p > 90.0  # percent of time paused on the worst link
    _, slow = series["gpu"]
    assert slow[-1] == 1.0 and at(slow, storm_ago) == 0.0


async def test_timeline_screen_marks_findings_and_switches_span(thermal_state) -> None:  # type: ignore[no-untyped-def]
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        panels = list(screen.query(TimelinePanel))
        assert len(panels) == 5 and all(p.drawn_points > 50 for p in panels)
        legend = str(screen.query_one("#timeline-legend").render())
        assert "stall watchdog" in legend and "thermal slowdown" in legend
        await pilot.press("m")
        await pilot.pause()
        assert screen.span == "1m"
        assert all(p.drawn_points <= 61 for p in panels)
