"""Timeline: one x axis column for column, every panel readable at 80x24, markers from the
core's finding log (so a finding seen from another screen is marked too)."""

from __future__ import annotations

import pytest
from rich.color import Color
from textual.geometry import Region
from textual.strip import Strip

from fabtop.run.demo import demo_state
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.timeline import TimelineScreen
from tui.widgets.timeline_chart import BLOCKS, PLOT_X0, TINT, TimelinePanel

THERMAL_S = 122.0  # demo: the PFC storm (45-70 s) cleared, node4 GPU 1 in thermal slowdown


@pytest.fixture(scope="module")
def thermal_state():  # type: ignore[no-untyped-def]
    return demo_state(THERMAL_S, history_s=THERMAL_S)


def lines(panel: TimelinePanel) -> list[Strip]:
    return panel.render_lines(Region(0, 0, panel.size.width, panel.size.height))


def chart_rows(panel: TimelinePanel) -> list[Strip]:
    """The rows with y labels: after the title, before the axis."""
    rows = lines(panel)[1:]
    return rows[:-2] if panel.x_axis else rows


TINTS = {Color.parse(c) for c in TINT.values()}


def tinted_columns(strip: Strip) -> set[int]:
    """Columns drawn on a finding's tint (its raise time, through every chart row)."""
    out: set[int] = set()
    x = 0
    for seg in strip:
        n = len(seg.text)
        if seg.style is not None and seg.style.bgcolor in TINTS:
            out |= set(range(x, x + n))
        x += n
    return out


def axis_letters(panel: TimelinePanel) -> dict[str, int]:
    """Marker letter -> its column on the time axis (the last panel's axis line)."""
    return {ch: x for x, ch in enumerate(lines(panel)[-2].text) if ch.isalpha()}


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_panel_shares_the_x_axis_column_for_column(  # type: ignore[no-untyped-def]
    thermal_state, size: tuple[int, int]
) -> None:
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=size) as pilot:
        await pilot.press("5")
        await pilot.pause()
        panels = list(app.screen.query(TimelinePanel))
        assert len(panels) == 5
        # the plot's left border: the same column in every panel, every chart row
        borders = {
            next(i for i, ch in enumerate(row.text) if ch in "┤│")
            for p in panels
            for row in chart_rows(p)
        }
        assert len(borders) == 1, borders
        # a given time: each marker's letter sits on the axis at one column, and that
        # column is tinted in the chart rows of every panel, at the same x
        letters = axis_letters(panels[-1])
        assert "B" in letters  # the storm, raised while the screen was never shown
        for x in {letters["A"], letters["D"]}:
            for p in panels:
                for row in chart_rows(p):
                    assert x in tinted_columns(row), (p.id, x)
        # every panel shows its data, not a bare axis
        for p in panels:
            assert p.region.height >= 3 and p.region.bottom <= size[1] - 1, p.id
            drawn = "".join(r.text[PLOT_X0:] for r in chart_rows(p))
            assert p.drawn_points > 0 and any(ch in BLOCKS[1:] for ch in drawn), p.id


async def test_markers_come_from_the_core_finding_log(thermal_state) -> None:  # type: ignore[no-untyped-def]
    # The storm raised and cleared before the timeline was ever shown: still marked, with
    # its raise and clear times in the legend.
    state, clock, _ = thermal_state
    storm = [e for e in state.finding_log.episodes() if e.rule == "pfc_storm"]
    assert storm and storm[0].cleared is not None
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        legend = str(screen.query_one("#timeline-legend").render())
        line = next(ln for ln in legend.splitlines() if "PFC storm" in ln)
        assert "raised" in line and "cleared" in line
        assert any("active" in ln and "thermal slowdown" in ln for ln in legend.splitlines())


async def test_80x24_legend_keeps_the_critical_ones_and_counts_the_rest(thermal_state) -> None:  # type: ignore[no-untyped-def]
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        legend = str(app.screen.query_one("#timeline-legend").render()).splitlines()
        shown = sum(1 for ln in legend if "raised" in ln)
        marked = len(axis_letters(list(app.screen.query(TimelinePanel))[-1]))
        assert 2 <= shown < marked  # 80x24 has room for a few; the others are named
        assert legend[0].startswith(f"… {marked - shown} more: ")
        # the active critical one (the thermal slowdown now) is among the kept
        assert any("thermal slowdown" in ln and "active" in ln for ln in legend)
        assert app.screen.query_one("#timeline-legend").region.bottom <= 23


async def test_span_keys_change_the_axis(thermal_state) -> None:  # type: ignore[no-untyped-def]
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        panels = list(app.screen.query(TimelinePanel))
        assert "-2m" in lines(panels[-1])[-1].text  # 122 s of history: the axis starts there
        await pilot.press("m")
        await pilot.pause()
        assert all(p.span_s == 60.0 for p in panels)
        labels = lines(panels[-1])[-1].text
        assert "-30s" in labels and "now" in labels and "-2m" not in labels


async def test_a_refresh_with_nothing_new_renders_no_panel(thermal_state) -> None:  # type: ignore[no-untyped-def]
    """The app refreshes on its own 1 s timer and on frames: a second refresh in a tick,
    the history unchanged, must not redraw the charts (at 64 x 8 that was most of a tick)."""
    state, clock, _ = thermal_state
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        panels = list(app.screen.query(TimelinePanel))
        before = [p.renders for p in panels]
        assert all(before)
        app.refresh_now()
        await pilot.pause()
        assert [p.renders for p in panels] == before
