"""The fabtop dashboard: wires a Session to the screens. Screens live in tui/screens/."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual.app import App, ScreenStackError
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from collectors.guard import failure_line
from collectors.text import clean, clean_lines
from fabtop.commands.fabtest import Bench
from fabtop.config import Config
from fabtop.core.state import FabricState
from fabtop.run import snapshot
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.link_filter import LinkFilter
from fabtop.run.record import Recorder, RecordError
from fabtop.run.replay import SPEEDS, Replay
from fabtop.run.session import Session
from tui.context import WRITE_OFF, ViewContext
from tui.messages import FindingChosen, HostLinksChosen, StateChanged
from tui.screens.base import DataScreen
from tui.screens.findings import FindingsScreen
from tui.screens.gpus import GpuScreen
from tui.screens.help import HelpScreen, HelpSection, binding_rows
from tui.screens.host_detail import HostDetailScreen
from tui.screens.inference import InferenceScreen
from tui.screens.link_detail import LinkDetailScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pfc import PfcScreen
from tui.screens.test import TestScreen
from tui.screens.timeline import TimelineScreen
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.health_grid import HealthGrid
from tui.widgets.replay_bar import ReplayBar

# Number key -> (name, screen class). Adding a screen is one line here; the class takes
# the ViewContext as its only argument. The findings view is a screen of its own (a
# number key, in the footer, reachable from every screen), not a letter: letters mean
# different things on different screens (f is a span here, focus there).
SCREEN_REGISTRY: dict[str, tuple[str, type[DataScreen]]] = {
    "1": ("overview", OverviewScreen),
    "2": ("PFC", PfcScreen),
    "3": ("GPUs", GpuScreen),
    "4": ("inference", InferenceScreen),
    "5": ("timeline", TimelineScreen),
    "6": ("findings", FindingsScreen),
    "7": ("test", TestScreen),
}
BACK_STEPS = 16  # screens Esc can go back through
FINDINGS_KEY = next(k for k, (_, cls) in SCREEN_REGISTRY.items() if cls is FindingsScreen)


def snapshot_name(now: datetime | None = None) -> str:
    """``fabtop-snapshot-<UTC time>.json``."""
    t = now or datetime.now(UTC)
    return f"fabtop-snapshot-{t.strftime('%Y%m%dT%H%M%SZ')}.json"


# The garbage collector's young generation: collected every this many new objects
# (CPython's default is 700). A refresh of 1000 links allocates tens of thousands of
# short-lived objects, so at 700 it ran ~400 collections a tick.
GC_GEN0_THRESHOLD = 10_000


def quiet_gc() -> None:
    """Stop the garbage collector's long pauses in a long-lived dashboard.

    Full collections walked every object alive since start-up (Textual, the modules, the
    state's history: ~500 k objects at 125 hosts x 8 rails), pausing 0.3-0.8 s every few
    ticks. Frozen, start-up objects are no longer walked; a higher gen-0 threshold makes
    collections rare. Measured on benchmarks/tui_refresh.py's 1000 links, every link a
    row, 30 ticks: worst tick 430 -> 62 ms, longest GC pause 814 -> 127 ms, collections
    12607 -> 108 (docs/BENCHMARKS.md). Once a process: a test run starts many apps, and
    each collect-and-freeze would cost a full collection and keep the tests' garbage.
    What grows after start-up (hosts connecting, their history filling) is frozen in
    turn by ``Refreezer``, which the dashboard's own runs install (``refreezing``).
    """
    if gc.get_threshold()[0] >= GC_GEN0_THRESHOLD:
        return
    gc.collect()  # what start-up left as garbage is freed, not frozen for good
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def refreezing() -> None:
    """Install a Refreezer, once a process: in the dashboard's runs (run_dashboard,
    run_replay) and the benchmark, not in every app a test starts, where freezing the
    apps of the tests before would keep their dropped widget trees (cycles) for good."""
    if not any(isinstance(cb, Refreezer) for cb in gc.callbacks):
        gc.callbacks.append(Refreezer())


# Long-lived objects a full collection may find beyond the dashboard's usual ones before
# they are frozen: about 25-50 ms of walking at ~0.5-1 us an object.
REFREEZE_GROWTH = 50_000


class Refreezer:
    """After a full collection, freeze what survived it once it has grown by
    REFREEZE_GROWTH objects beyond its usual size.

    The state is built after start-up: hosts connect and their history fills (400 k
    objects at 125 hosts x 8 rails, most of them history rings), and every full
    collection walked all of it: 0.3-0.45 s, about every 30 s at 1000 links. Freezing
    costs nothing to what is frozen but that a cycle frozen and later dropped is never
    freed: so a freeze waits for growth, and the population after each freeze is measured
    at the next full collection and taken as the usual size (the frames and rows of the
    moment, which die by reference counting, frozen or not). A fabric that stops growing
    stops freezing; the number of freezes is its growth over REFREEZE_GROWTH.
    """

    def __init__(
        self,
        alive: Callable[[], int] = lambda: len(gc.get_objects(generation=2)),
        freeze: Callable[[], None] = gc.freeze,
    ) -> None:
        self.alive, self.freeze = alive, freeze  # a unit test gives its own
        self.usual: int | None = 0  # None: measure it at the next full collection
        self.freezes = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        alive = self.alive()  # after a full collection every survivor is in generation 2
        if self.usual is None:
            self.usual = alive
        elif alive > self.usual + REFREEZE_GROWTH:
            self.freeze()
            self.freezes += 1
            self.usual = None


class FabtopApp(App[int]):
    """The dashboard. Reads FabricState only; the Session (if any) runs in a worker."""

    CSS_PATH = "fabtop.tcss"
    TITLE = "fabtop"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "quit", "quit"),
        Binding("s", "snapshot", "snapshot"),
        Binding("p", "pause", "pause"),
        Binding("r", "baseline", "Δ baseline"),
        Binding("d", "delta", "Δ / rates", show=False),
        # Screens and panels with an Esc of their own (a detail, a filter) take it first.
        Binding("escape", "back", "back", show=False),
        # Shown by the screens' footer (tui/screens/base.py): by name, or as one "1-6" key.
        *(
            Binding(k, f"screen('{k}')", name, show=False)
            for k, (name, _) in SCREEN_REGISTRY.items()
        ),
    ]

    def __init__(
        self,
        ctx: ViewContext,
        session: Session | None = None,
        replay: Replay | None = None,
        recorder: Recorder | None = None,
        allow_write: bool = True,
    ) -> None:
        super().__init__()
        # False in fabtop serve's sessions: whoever holds the browser URL must not write
        # files on the serving machine (DESIGN §10). Every key that writes checks it.
        self.allow_write = ctx.allow_write = allow_write
        self.ctx = ctx
        if isinstance(session, Session):  # SSH or the demo: plans can run (key 7)
            ctx.bench = Bench(session.config, ctx.state, session)
        ctx.screens = tuple((k, name) for k, (name, _) in SCREEN_REGISTRY.items())
        ctx.recording = recorder is not None and recorder.active
        self.session = session
        self.replay = replay
        self.recorder = recorder
        self.replay_speed = 1.0
        self.replay_paused = False
        self.replay_step_s = 0.1
        self._last_refresh = 0.0
        self._refresh_timer: Any = None
        self.ticker: Timer | None = None
        self._came_from: list[str] = []  # the modes Esc goes back through, latest last
        for key, (_, cls) in SCREEN_REGISTRY.items():
            self.add_mode(f"screen{key}", self._factory(cls))

    def _factory(self, cls: type[DataScreen]) -> Any:
        def make() -> Screen[None]:
            return cls(self.ctx)

        return make

    def on_mount(self) -> None:
        quiet_gc()
        self.switch_mode("screen1")
        # The tick (public: a benchmark that moves simulated time itself pauses it, so each
        # of its ticks is one refresh as live, not one plus a deferred one).
        self.ticker = self.set_interval(self.ctx.interval, self._tick)
        if self.session is not None:
            session = self.session
            if session.on_change is None:
                session.on_change = self._state_changed
            self.run_worker(
                session.run(), name="session", group="session", exclusive=True, exit_on_error=False
            )
        if self.recorder is not None:
            self.recorder.on_error = self._record_failed
            self.recorder.on_limit = self._record_limit
        if self.replay is not None:
            self.replay.on_reset = self._replay_reset
            self.set_interval(self.replay_step_s, self._replay_step)
            self.call_after_refresh(self._show_replay_bar)

    async def on_unmount(self) -> None:
        if self._refresh_timer is not None:
            self._refresh_timer.stop()
            self._refresh_timer = None
        if self.session is not None:
            await self.session.stop()
        if self.recorder is not None:
            self.recorder.close()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast whose text is shown as written: never markup, never a control character.

        Notifications carry error texts, netdev and host names and paths; parsed as
        markup, ``[link=...]`` in any of them would become a hyperlink, ``[@click=...]`` an
        action, and markup Textual cannot parse a MarkupError that ends the dashboard.
        Every notify of every screen ends here (Widget.notify calls the app's), so
        ``markup`` is ignored: nothing fabtop shows is markup.
        """
        del markup
        super().notify(
            clean_lines(message),
            title=clean(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    # recording and replay --------------------------------------------------------

    def _record_failed(self, message: str) -> None:
        # A full disk stops the recording, never the dashboard; REC goes off.
        self.ctx.recording = False
        self.notify(message, severity="error", timeout=30)
        self.refresh_now()

    def _record_limit(self, message: str) -> None:
        self.ctx.recording = False
        self.notify(message, timeout=10)
        self.refresh_now()

    def _replay_reset(self, state: FabricState) -> None:
        # Seeking backwards re-feeds a fresh state from the start; screens read ctx.state.
        self.ctx.state = state

    def _show_replay_bar(self) -> None:
        rp = self.replay
        screen = self.screen
        if rp is None or not isinstance(screen, DataScreen):
            return
        bars = screen.query(ReplayBar)
        bar = bars.first() if bars else None
        if bar is None:
            bar = ReplayBar(rp.path.name)
            screen.mount(bar)
        bar.show(rp.cursor, rp.duration, self.replay_speed, self.replay_paused)

    def _replay_step(self) -> None:
        rp = self.replay
        if rp is None:
            return
        step = self.replay_step_s * self.replay_speed
        if not self.replay_paused and not rp.at_end and rp.advance_to(rp.cursor + step):
            self.request_refresh()
        self._show_replay_bar()

    def replay_seek(self, delta_s: float) -> None:
        """Jump the replay cursor by ``delta_s`` seconds (backwards re-feeds from the start)."""
        if self.replay is None:
            return
        self.replay.seek(self.replay.cursor + delta_s)
        self.refresh_now()
        self._show_replay_bar()

    def action_replay_pause(self) -> None:
        """Pause or resume the replay."""
        self.replay_paused = not self.replay_paused
        self._show_replay_bar()

    def action_replay_seek(self, delta_s: float) -> None:
        """Seek the replay by ``delta_s`` seconds."""
        self.replay_seek(delta_s)

    def action_replay_speed(self, faster: int) -> None:
        """Step the replay speed through 0.5x .. 16x."""
        i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.replay_speed))
        i = max(0, min(len(SPEEDS) - 1, i + (1 if faster else -1)))
        self.replay_speed = SPEEDS[i]
        self._show_replay_bar()

    # refresh -------------------------------------------------------------------

    def _state_changed(self) -> None:
        # Called by the Session on the app's own loop for every frame and status change.
        self.post_message(StateChanged())

    def on_state_changed(self, _: StateChanged) -> None:
        self.request_refresh()

    def _tick(self) -> None:
        # Ages grow without any new frame: a frozen host must grey out, and raise its
        # finding, by itself.
        self.ctx.state.refresh_liveness(self.ctx.now())
        if self.recorder is not None:
            self.ctx.recording = self.recorder.active
        self.request_refresh()

    def on_finding_chosen(self, message: FindingChosen) -> None:
        # Enter on a finding in a panel: the findings view, on that finding.
        self.ctx.finding_key = message.key
        self.action_screen(FINDINGS_KEY)

    def on_host_links_chosen(self, message: HostLinksChosen) -> None:
        # 'l' in a host's detail: close it and show the overview with its links only.
        self.ctx.links_host = message.host
        if isinstance(self.screen, HostDetailScreen):
            self.pop_screen()
        if self.current_mode != "screen1":
            self.action_screen("1")
        else:
            self.call_after_refresh(self.refresh_now)

    def request_refresh(self) -> None:
        """Refresh the visible screen now, or once the current tick is over."""
        if self.ctx.paused:
            return
        gap = max(0.05, 0.9 * self.ctx.interval)
        wait = self._last_refresh + gap - time.monotonic()
        if wait <= 0:
            self.refresh_now()
        elif self._refresh_timer is None:
            self._refresh_timer = self.set_timer(wait, self._deferred)

    def _deferred(self) -> None:
        self._refresh_timer = None
        if not self.ctx.paused:
            self.refresh_now()

    def refresh_now(self) -> None:
        """Redraw the visible screen (background screens wait until they are shown)."""
        if self.ctx.paused or not self.is_running:
            # not running: a tick that fires while the app shuts down, its screens' widgets
            # already being removed; there is nothing to draw
            return
        self._last_refresh = time.monotonic()
        try:
            screen = self.screen
        except ScreenStackError:  # a frame that lands while the app shuts down: nothing to draw
            return
        if isinstance(screen, DataScreen) and screen.is_mounted:
            screen.refresh_view()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "session" and event.state == WorkerState.ERROR:
            error = event.worker.error
            line = failure_line("collection stopped", error) if error else "collection stopped"
            self.notify(line, severity="error", timeout=30)

    # actions -------------------------------------------------------------------

    def help_sections(self) -> list[HelpSection]:
        """Every key of every screen, from the BINDINGS themselves."""
        screens = [f"{k} {name}" for k, (name, _) in SCREEN_REGISTRY.items()]
        keys = f"{min(SCREEN_REGISTRY)}-{max(SCREEN_REGISTRY)}"
        return [
            (
                "everywhere",
                [
                    *binding_rows(
                        b
                        for b in self.BINDINGS
                        if isinstance(b, Binding) and "screen(" not in b.action
                    ),
                    (keys, "screens: " + ", ".join(screens)),
                ],
            ),
            ("overview", binding_rows(OverviewScreen.BINDINGS)),
            ("health grid (g to it)", binding_rows(HealthGrid.BINDINGS)),
            ("findings panel (Tab to it)", binding_rows(FindingsPanel.BINDINGS)),
            ("link detail", binding_rows(LinkDetailScreen.BINDINGS)),
            ("host detail", binding_rows(HostDetailScreen.BINDINGS)),
            *(
                # Only the screen's own keys: Screen's inherited tab/shift+tab are not news.
                (name, binding_rows(cls.__dict__["BINDINGS"]))
                for key, (name, cls) in SCREEN_REGISTRY.items()
                if key != "1" and cls.__dict__.get("BINDINGS")
            ),
            ("help", binding_rows(HelpScreen.BINDINGS)),
        ]

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections()))

    def action_screen(self, key: str) -> None:
        """Go to screen ``key`` (1 overview, 2 PFC, ...) from anywhere: its own view, in the
        state it starts in, never a detail or help screen left open over it."""
        if key not in SCREEN_REGISTRY:
            return
        mode = f"screen{key}"
        if self.current_mode != mode:
            self._came_from = [*self._came_from, self.current_mode][-BACK_STEPS:]
        self._go(mode)

    def action_back(self) -> None:
        """Esc on a screen that has no Esc of its own: the screen it was reached from (the
        overview when none)."""
        while self._came_from and self._came_from[-1] == self.current_mode:
            self._came_from.pop()
        if self._came_from:
            self._go(self._came_from.pop())
        elif self.current_mode != "screen1":
            self._go("screen1")

    def _go(self, mode: str) -> None:
        if self.current_mode != mode:
            self.switch_mode(mode)
        # Detail and help screens pushed over it in an earlier visit close: a number key
        # names a screen, and shows that screen.
        while len(self.screen_stack) > 1:
            self.pop_screen()
        screen = self.screen
        # (A screen seen for the first time is not mounted yet: its on_mount sets it up.)
        if isinstance(screen, DataScreen) and screen.is_mounted:
            screen.home()

    def action_pause(self) -> None:
        """Freeze the display; collection continues."""
        self.ctx.paused = not self.ctx.paused
        screen = self.screen
        if isinstance(screen, DataScreen):
            screen.show_flags()
        if not self.ctx.paused:
            self.refresh_now()

    def action_baseline(self) -> None:
        """Remember the counters now; the links table then shows counts since then."""
        self.ctx.state.set_baseline()
        if not self.ctx.state.baseline:  # before the first frame there is nothing to keep
            self.notify("no data yet: no baseline set", timeout=3)
            return
        self.ctx.baseline_at = self.ctx.now()
        self.ctx.delta_mode = True
        self.notify(
            "baseline set: loss, pause, ECN and CNP columns count since now (d toggles rates)",
            timeout=4,
        )
        self.refresh_now()

    def action_delta(self) -> None:
        """Toggle the links table between rates and counts since the baseline."""
        if not self.ctx.state.baseline:
            self.notify("no baseline yet: press r first", timeout=3)
            return
        self.ctx.delta_mode = not self.ctx.delta_mode
        self.refresh_now()

    def action_snapshot(self) -> None:
        """Write the current state to fabtop-snapshot-<UTC>.json in the current directory."""
        if not self.allow_write:
            self.notify(WRITE_OFF, severity="warning", timeout=6)
            return
        try:
            path = Path.cwd() / snapshot_name()
            doc = snapshot.build(self.ctx.state, self.ctx.interval)
            snapshot.write_atomic(path, snapshot.render(doc, "json"))
        except Exception as e:  # a full or read-only disk is a message, not a crash
            self.notify(f"snapshot failed: {e}", severity="error", timeout=10)
            return
        self.notify(f"snapshot written to {path}", timeout=6)

    async def action_quit(self) -> None:
        """Stop collecting and leave."""
        if self.session is not None:
            await self.session.stop()
        self.exit(0)


REPLAY_BINDINGS = [
    Binding("space", "replay_pause", "play/pause"),
    Binding("comma", "replay_seek(-10)", "-10 s", key_display=","),
    Binding("full_stop", "replay_seek(10)", "+10 s", key_display="."),
    Binding("less_than_sign", "replay_seek(-60)", "-60 s", show=False, key_display="<"),
    Binding("greater_than_sign", "replay_seek(60)", "+60 s", show=False, key_display=">"),
    Binding("minus", "replay_speed(0)", "slower", show=False, key_display="-"),
    Binding("plus", "replay_speed(1)", "faster", show=False, key_display="+"),
]


class ReplayApp(FabtopApp):
    """The dashboard fed from a recording: the same screens, plus the replay keys and bar."""

    BINDINGS = [*FabtopApp.BINDINGS, *REPLAY_BINDINGS]


def build_app(
    cfg: Config,
    record: str | None = None,
    source: Any = None,
    allow_write: bool = True,
    link_filter: LinkFilter | None = None,
) -> FabtopApp:
    """The app over a fresh FabricState and a Session (or ``source``) for ``cfg``.

    ``record``: also write every frame to that file (raises RecordError if it cannot
    be created; a later write error is a notification and collection goes on).
    ``allow_write``: False turns the keys that write files (``s``) into a notice.
    ``link_filter``: the overview's filter from the start (``--filter``).
    """
    state = fabric_state(cfg)
    flt = link_filter or LinkFilter()
    recorder = None
    if record is not None:
        recorder = Recorder(Path(record), cfg).open()
    if source is not None:
        source.state = state
        return FabtopApp(
            ViewContext(
                state,
                interval=cfg.interval,
                link_filter=flt,
                fold_past_links=cfg.fold_past_links,
                cables=cfg.cables,
            ),
            source,
            recorder=recorder,
            allow_write=allow_write,
        )
    session = open_session(cfg, state=state, events=recorder)
    return FabtopApp(
        ViewContext(
            state,
            interval=cfg.interval,
            link_filter=flt,
            fold_past_links=cfg.fold_past_links,
            cables=cfg.cables,
        ),
        session,
        recorder=recorder,
        allow_write=allow_write,
    )


def build_replay_app(replay: Replay, speed: float = 1.0) -> ReplayApp:
    """The dashboard over a recording (no session: the replay drives the state)."""
    ctx = ViewContext(
        replay.state,
        interval=replay.config.interval,
        clock=replay.now,
        fold_past_links=replay.config.fold_past_links,
        cables=replay.config.cables,
    )
    app = ReplayApp(ctx, replay=replay)
    app.replay_speed = min(16.0, max(0.5, speed))
    return app


def run_dashboard(
    cfg: Config,
    record: str | None = None,
    source: Any = None,
    allow_write: bool = True,
    link_filter: LinkFilter | None = None,
) -> int:
    """Run the dashboard until the user quits; return the exit code."""
    try:
        app = build_app(cfg, record, source, allow_write, link_filter)
    except RecordError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 1
    refreezing()
    rc = app.run()
    return rc if isinstance(rc, int) else (app.return_code or 0)


def run_replay(replay: Replay, speed: float = 1.0) -> int:
    """Replay a recording in the dashboard until the user quits."""
    app = build_replay_app(replay, speed)
    refreezing()
    rc = app.run()
    return rc if isinstance(rc, int) else (app.return_code or 0)
