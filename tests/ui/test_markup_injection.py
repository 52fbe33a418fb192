"""Remote strings are shown as written: never parsed as markup (no links, no actions, no styles).

A host name, a firmware version, a model label, an error text is data. Rendered through
Rich or Textual markup, ``[link="..."]`` would become an OSC 8 hyperlink on the operator's
screen, ``[@click=app.quit]`` a clickable action, and markup Textual cannot parse
(``[link=https://...]``, unquoted) a MarkupError that ends the dashboard. Each test puts
such strings where a node (or an exception about a node's bytes) puts them and checks what
is drawn: the text literally, and not one link or action in the styles of any line.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._toast import Toast

from collectors.samples import GpuSample, InferenceSample, SectionStatus
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from tests.ui.fabric import FakeClock, feed, sample
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.pfc import SEP
from tui.screens.host_detail import HostDetailScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.widgets.pfc_matrix import PauseMatrix

# Textual content markup (quoted values, actions) and Rich markup (bare values).
LINK = '[link="https://evil.example/t"]x[/link]'
RICH_LINK = "[link=https://evil.example/r]y[/link]"
ACTION = "[@click=app.quit]z[/]"
HOST = "[b]n1[/b]"  # fits the 8-column host cell whole
FIRMWARE = f"{LINK} 28.39.1002"
MODEL = f"{RICH_LINK}opt"
GPU_NAME = f"[reverse]{ACTION}"
INFERENCE_ERROR = f"{ACTION} refused"
DOWN_ERROR = f"{LINK} {ACTION} [bold]gone"
SECTION_DETAIL = f"{RICH_LINK} nvidia-smi hung"
# What an exception about a node's bytes may carry: markup, an unbalanced bracket, and an
# OSC 52 clipboard write with its payload.
PAYLOAD = "cGF5bG9hZC1tYXJrdXA"
EXCEPTION = f"{LINK} {ACTION} {RICH_LINK} [x \x1b]52;c;{PAYLOAD}\x07"


def drawn(app: FabtopApp) -> tuple[str, list[str]]:
    """Every line the screen's widgets draw, and every link or action in their styles.

    The Footer's keys are the app's own actions and are left out.
    """
    lines: list[str] = []
    found: list[str] = []
    for w in app.screen.walk_children(Widget, with_self=False):
        if (
            not w.display
            or not w.outer_size.area
            or any(isinstance(a, Footer) for a in (w, *w.ancestors))
        ):
            continue
        for strip in w.render_lines(Region(0, 0, *w.outer_size)):
            lines.append(strip.text)
            for seg in strip:
                style = seg.style
                if style is None:
                    continue
                if style.link:
                    found.append(f"link {style.link} in {type(w).__name__}")
                found += [
                    f"{k}={v} in {type(w).__name__}"
                    for k, v in style.meta.items()
                    if k.startswith("@")
                ]
    return "\n".join(lines), found


def hostile_state() -> tuple[FabricState, FakeClock]:
    """Host ``[b]n1[/b]`` with markup in its firmware, GPU, model and errors; n2 went down."""
    clock = FakeClock()
    state = FabricState(
        [HostConfig(name=HOST), HostConfig(name="n2")], rules=make_evaluator(), clock=clock
    )
    for tick in range(1, 8):
        clock.t += 1.0
        s = sample(HOST, tick)
        s.links = {
            k: replace(v, firmware=FIRMWARE) if v.kind == "roce" else v for k, v in s.links.items()
        }
        s.gpus = [GpuSample(index=0, name=GPU_NAME, temperature_c=50.0)]
        s.sections = [SectionStatus("gpu_nvidia", None, "timeout", detail=SECTION_DETAIL)]
        s.inference = [
            InferenceSample(
                url="http://127.0.0.1:8000/metrics",
                server="vllm",
                model=MODEL,
                error=INFERENCE_ERROR,
            )
        ]
        feed(state, HOST, s, clock)
        feed(state, "n2", sample("n2", tick), clock)
    state.apply_status("n2", "down", DOWN_ERROR)
    return state, clock


async def test_remote_strings_show_literally_on_every_screen() -> None:
    state, clock = hostile_state()
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        text, links = drawn(app)
        assert links == []
        assert HOST in text  # the host cells
        assert "[link=" in text and "[@click=app.quit]z[/]" in text  # n2's error, finding
        assert HOST in app.export_screenshot()  # the picture shows the brackets too
        app.push_screen(LinkDetailScreen(app.ctx, HOST, "enp65s0f0np0"))
        await pilot.pause()
        text, links = drawn(app)
        assert links == []
        assert f"fw {LINK}" in text, text[:600]
        for key, wanted in (("4", "[link=https://evi"), ("3", "[reverse]["), ("2", '[link="htt')):
            await pilot.press("escape") if isinstance(app.screen, LinkDetailScreen) else None
            await pilot.press(key)
            await pilot.pause()
            text, links = drawn(app)
            assert links == [], key
            assert wanted in text, (key, text)
        await pilot.press("4")
        await pilot.pause()
        inf = app.screen.query_one("#inference")
        row = f"{HOST}\x1fhttp://127.0.0.1:8000/metrics"
        assert inf.get_cell(row, "model").plain == MODEL  # type: ignore[attr-defined]
        assert inf.get_cell(row, "error").plain == INFERENCE_ERROR  # type: ignore[attr-defined]
        await pilot.press("3")
        await pilot.pause()
        text, _ = drawn(app)
        assert "GPU data t" in text
        # The host detail and the findings view show the remote texts whole, as written.
        for host, wanted in ((HOST, SECTION_DETAIL), ("n2", DOWN_ERROR)):
            app.push_screen(HostDetailScreen(app.ctx, host))
            await pilot.pause()
            text, links = drawn(app)
            assert links == [], host
            assert wanted in text, (host, text)
            await pilot.press("escape")
        await pilot.press("6")
        await pilot.pause()
        text, links = drawn(app)
        assert links == []
        assert DOWN_ERROR in text  # n2's finding, the worst, is selected and shown in full


def toasts(app: FabtopApp) -> list[str]:
    """The text of every toast on screen."""
    out = []
    for t in app.screen.query(Toast):
        out.append("\n".join(s.text for s in t.render_lines(Region(0, 0, *t.outer_size))))
    return out


class FailingSession:
    """Stands in for a Session: collection dies with an error about a node's bytes, and
    focus mode refuses the port with one."""

    on_change: Any = None

    def __init__(self, run_error: bool) -> None:
        self.run_error = run_error

    async def run(self) -> None:
        if self.run_error:
            raise ValueError(EXCEPTION)
        await asyncio.Event().wait()

    async def stop(self) -> None:
        pass

    def focus(self, host: str, netdev: str) -> None:
        raise ValueError(f"{netdev}: {EXCEPTION}")

    def unfocus(self) -> None:
        pass


async def _shown_toast(app: FabtopApp, pilot: Any) -> str:
    for _ in range(40):
        await pilot.pause(0.05)
        shown = toasts(app)
        # A toast can be mounted a frame before its text is drawn (seen on a loaded machine).
        if any(t.strip() for t in shown):
            return "\n".join(shown)
    raise AssertionError("no notification shown")


def _check_toast(app: FabtopApp, shown: str) -> None:
    text, links = drawn(app)
    assert links == []
    flat = " ".join(x.strip("▌ ") for x in shown.splitlines())
    assert "[@click=app.quit]z[/]" in flat and '[link="https://evil.example/t"]' in flat
    assert PAYLOAD not in text and "\x1b" not in text


async def test_a_collection_error_is_notified_as_written() -> None:
    state, clock = hostile_state()
    session: Any = FailingSession(run_error=True)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock), session)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        shown = await _shown_toast(app, pilot)
        assert "collection stopped" in shown
        _check_toast(app, shown)


async def test_a_focus_refusal_naming_the_port_is_notified_as_written() -> None:
    state, clock = hostile_state()
    session: Any = FailingSession(run_error=False)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock), session)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await pilot.press("2")
        await pilot.pause()
        matrix = app.screen.query_one(PauseMatrix)
        matrix.move_cursor(row=matrix.row_keys().index(f"{HOST}{SEP}enp65s0f0np0{SEP}rx"))
        await pilot.press("f")  # the PFC screen's focus key: the session refuses
        shown = await _shown_toast(app, pilot)
        assert "focus failed" in shown
        _check_toast(app, shown)
        assert app.is_running  # a MarkupError would have ended the dashboard
