"""What the screen says about itself: blind is shown, filters and sort are visible, REC, footer."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from fabtop.config import HostConfig
from fabtop.core.coverage import coverage
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.run.demo import demo_config
from fabtop.run.record import Recorder
from tests.ui.fabric import FakeClock, fabric, feed, sample, words
from tests.ui.fabric import dashboard as make
from tui.app import SCREEN_REGISTRY, FabtopApp
from tui.context import ViewContext
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable
from tui.widgets.top_bar import TopBar

CALM_WORDS = ("healthy", "no findings", "no problems")


def top_line(app: FabtopApp) -> str:
    return str(app.screen.query_one(TopBar).render())


def panel(app: FabtopApp) -> str:
    return str(app.screen.query_one(FindingsPanel).render())


def state_line(app: FabtopApp) -> str:
    return Text.from_markup(app.screen.query_one(HostTable).border_subtitle or "").plain


def labels(app: FabtopApp) -> dict[str, str]:
    t = app.screen.query_one(LinkTable)
    return t.labels()


async def test_all_hosts_down_is_never_healthy_and_names_them() -> None:
    app, state, _ = make()
    for h in ("node1", "node2", "node3"):
        state.apply_status(h, "down", f"{h} (admin@{h}): Connection refused")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        top, text = top_line(app), panel(app)
        for word in CALM_WORDS:
            assert word not in top and word not in text, word
        assert "3 down" in top and "3 not seen" in top
        for h in ("node1", "node2", "node3"):
            assert f"{h} did not answer" in text, text


async def test_waiting_for_the_first_frame_says_so_not_healthy() -> None:
    clock = FakeClock()
    state = FabricState(
        [HostConfig(name=n) for n in ("node1", "node2")], rules=make_evaluator(), clock=clock
    )
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        top, text = top_line(app), panel(app)
        for word in CALM_WORDS:
            assert word not in top and word not in text, word
        assert "2 blind" in top  # 80 columns: the short word
        assert "waiting for the first frame from node1, node2" in text


async def test_no_findings_is_said_only_when_every_host_reports() -> None:
    app, state, clock = make(hosts=2)  # node1 and node2: no storm
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert "no findings in what was seen" in top_line(app)
        assert "no problems in what was seen" in panel(app)
        # node2 goes silent: no frame, no status message; the app's tick finds it stale
        clock.t += 6.0
        feed(state, "node1", sample("node1", 21), clock)
        app._tick()
        app.refresh_now()
        await pilot.pause()
        top, text = top_line(app), panel(app)
        assert "no findings" not in top and "1 stale" in top and "1 not seen" in top
        assert "node2" in text and "no problems" not in text


async def test_the_overview_calm_line_counts_the_gaps_the_findings_screen_lists() -> None:
    # At 80x24 it took 5 of 24 rows, listing every source not monitored on every host.
    app, state, _ = make(hosts=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        state_gaps = coverage(state, state.now(), 1.0).gaps
        assert state_gaps, "the test fabric has gaps in coverage (no inference server)"
        text = panel(app)
        assert "no problems in what was seen" in text and "\n" not in text.strip()
        n = len(state_gaps)
        gaps = f"{n} gap{'s' * (n > 1)} in coverage (the findings screen lists them)"
        assert gaps in text
        assert all(g not in text for g in state_gaps)
        await pilot.press("6")
        await pilot.pause()
        shown = str(app.screen.query_one("#finding-text", Static).render())
        assert all(words(g) in words(shown) for g in state_gaps), shown


async def test_the_stale_finding_comes_from_the_tick_without_any_frame() -> None:
    app, state, clock = make(hosts=2, interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert not state.findings
        clock.t += 10.0  # every host silent for 10 s: nothing arrives to re-evaluate
        await pilot.pause(0.5)  # the 0.2 s tick runs
        assert {f.rule for f in state.findings} == {"host_stale"}
        text = panel(app)
        assert "node1" in text and "node2" in text and "WARN" in text


async def test_sort_shows_its_column_and_direction_and_O_reverses_it() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert "sort: worst first ▲" in state_line(app)  # the default: no column of its own
        await pilot.press("o")
        assert labels(app)["host"] == "Host ▲"
        assert "sort: host ▲" in state_line(app)
        await pilot.press("o")  # host -> rx, biggest first
        assert labels(app)["rx"] == "RX Gb/s ▼" and labels(app)["host"] == "Host"
        assert "sort: rx ▼" in state_line(app)
        assert not app._notifications  # no toast over the findings
        t = app.screen.query_one(LinkTable)

        def rx() -> list[float]:
            return [float(t.get_cell(k, "rx").plain.split()[-1]) for k in t.row_keys()]

        assert rx() == sorted(rx(), reverse=True)
        await pilot.press("O")
        assert labels(app)["rx"] == "RX Gb/s ▲" and "sort: rx ▲" in state_line(app)
        assert rx() == sorted(rx())
        await pilot.press("O")
        assert labels(app)["rx"] == "RX Gb/s ▼" and rx() == sorted(rx(), reverse=True)


async def test_at_80_columns_the_sort_arrow_fits_its_header() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("o", "o", "o", "o", "o", "o")  # host, rx, tx, line, loss, pause rx
        t = app.screen.query_one(LinkTable)
        width = next(c.width or 0 for c in t.columns if c.key == "prx")
        label = t.labels()["prx"]
        assert label.endswith("▼") and len(label) <= width
        assert t.row_keys()[0] == "node3\x1fenp65s0f0np0"


async def test_a_typed_filter_is_shown_and_esc_clears_it() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"f1np1", "enter")
        line = state_line(app)
        assert "filter: f1np1" in line and "Esc shows all" in line
        await pilot.press("escape")
        assert "filter" not in state_line(app)


async def test_rec_shows_while_recording_and_goes_when_it_stops(tmp_path: Path) -> None:
    state, clock = fabric(2, 5)
    rec = Recorder(tmp_path / "x.fabrec", demo_config(1.0)).open()
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock), recorder=rec)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "REC" in top_line(app)
        await pilot.press("3")  # every screen's top line says it
        await pilot.pause()
        assert "REC" in top_line(app)
        rec.close()
        app._tick()
        app.refresh_now()
        await pilot.pause()
        assert "REC" not in top_line(app)


async def test_no_rec_when_not_recording() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "REC" not in top_line(app)


def footer_keys(app: FabtopApp) -> list[tuple[str, str, int]]:
    """(key shown, description, right edge) of every key in the visible footer."""
    out = []
    for k in app.screen.query(FooterKey):
        if k.display and k.region.width:
            out.append((k.key_display, k.description, k.region.right))
    return out


async def test_footer_at_80_columns_has_help_and_every_screen_and_no_cut_key() -> None:
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        for key in SCREEN_REGISTRY:
            await pilot.press(key)
            await pilot.pause()
            keys = footer_keys(app)
            shown = {k for k, _, _ in keys}
            assert "?" in shown, (key, keys)
            # every screen: by its own key, or as one "1-6" key when the names do not fit
            assert f"1-{len(SCREEN_REGISTRY)}" in shown or set(SCREEN_REGISTRY) <= shown, (
                key,
                keys,
            )
            assert all(right <= 80 for _, _, right in keys), (key, keys)


async def test_footer_names_every_screen_when_wide() -> None:
    app, _, _ = make()
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        keys = {(k, d) for k, d, _ in footer_keys(app)}
        for key, (name, _) in SCREEN_REGISTRY.items():
            assert (key, name) in keys, keys
        assert ("?", "help") in keys and ("/", "filter") in keys
