"""Timeline (key 5): cluster tokens/s against pauses, ECN/CNP, drops and GPU slowdown."""

from __future__ import annotations

import string

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Footer, Static

from fabtop.core.findings import Finding
from tui.context import ViewContext
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.timeline_chart import SEVERITY_COLOR, Marker, TimelinePanel
from tui.widgets.timeline_series import TRACKS, first_time, track_series
from tui.widgets.top_bar import TopBar

SPANS = {"1m": 60.0, "15m": 900.0, "6h": 6 * 3600.0}
_COLORS = {"tokens": "cyan", "pause": "magenta", "ecn": "yellow", "drops": "red", "gpu": "orange"}
MAX_MARKERS = len(string.ascii_uppercase)


class TimelineScreen(DataScreen):
    """Every panel shares one time axis so a dip in tokens/s lines up with its cause."""

    BINDINGS = [
        Binding("m", "span('1m')", "1 min"),
        Binding("f", "span('15m')", "15 min"),
        Binding("h", "span('6h')", "6 h"),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="timeline")
        self.span = "15m"
        # Findings seen while the screen lives stay marked after they clear.
        self.seen: dict[tuple[str, str], Finding] = {}

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield Static(id="timeline-title")
        with Vertical(id="timeline-panels"):
            for tr in TRACKS:
                yield TimelinePanel(tr.title, _COLORS.get(tr.name, "white"),
                                    cap=100.0 if tr.unit == "%" else None, id=f"tl-{tr.name}")
        yield Static(id="timeline-legend")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_view()

    def markers(self) -> list[tuple[Marker, Finding]]:
        """Findings with a start time, oldest first, lettered A, B, ..."""
        for f in self.ctx.state.findings:
            if f.since is not None:
                self.seen[(f.rule, f.subject)] = f
        ordered = sorted(self.seen.values(), key=lambda f: f.since or 0.0)[-MAX_MARKERS:]
        return [(Marker(f.since or 0.0, string.ascii_uppercase[i], f.severity), f)
                for i, f in enumerate(ordered)]

    def refresh_view(self) -> None:
        """Redraw every panel over the same x-range."""
        super().refresh_view()
        ctx = self.ctx
        self.query_one(TopBar).show(summary(ctx.state, ctx.now(), ctx.interval), ctx.paused, None)
        span = SPANS[self.span]
        now, series = track_series(ctx.state.history, span)
        oldest = first_time(series)
        if now is not None and oldest is not None and now - oldest < span - 1:
            # Less history than the span: the axis starts where the history does, so a
            # young session is not squeezed into the right edge.
            span = max(10.0, now - oldest + 1)
            now, series = track_series(ctx.state.history, span, now)
        marked = self.markers()
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(" timeline ", "bold reverse")
        title.append(" span", "dim")
        for name in SPANS:
            title.append(f" {name} ", "bold reverse" if name == self.span else "dim")
        title.append("  one time axis for every panel; letters mark findings", "dim")
        self.query_one("#timeline-title", Static).update(title)
        last = len(TRACKS) - 1
        for i, tr in enumerate(TRACKS):
            panel = self.query_one(f"#tl-{tr.name}", TimelinePanel)
            times, values = series.get(tr.name, ([], []))
            if now is None:
                panel.draw([], [], 0.0, span, x_axis=i == last)
                continue
            panel.draw(times, values, now, span, [m for m, _ in marked], tr.unit,
                       x_axis=i == last)
        legend = Text(no_wrap=False)
        shown = [(m, f) for m, f in marked
                 if now is not None and now - span <= m.t <= now + 1]
        if not shown:
            legend.append("no findings in this span", "dim")
        for j, (m, f) in enumerate(shown):
            if j:
                legend.append("\n")
            ago = "" if now is None else f" {max(0.0, now - m.t):.0f}s ago"
            legend.append(f" {m.label} ", f"bold reverse {SEVERITY_COLOR.get(m.severity, '')}")
            legend.append(f"{ago}  {f.summary}")
        self.query_one("#timeline-legend", Static).update(legend)

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def action_span(self, span: str) -> None:
        """Show the last 1 min, 15 min or 6 h."""
        if span in SPANS:
            self.span = span
            self.refresh_view()
