"""Timeline (key 5): cluster tokens/s against pauses, ECN/CNP, drops and GPU slowdown.

The findings marked are the core's finding log (``state.finding_log``), so a storm seen
from any screen, or before a replay seek, is marked here with its raise and clear times.
"""

from __future__ import annotations

import string

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Footer, Static

from fabtop.core.finding_log import Episode
from tui import format as fmt
from tui.context import ViewContext
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.quiet_static import QuietStatic
from tui.widgets.timeline_chart import (
    AXIS_ROWS,
    PLOT_X0,
    SEVERITY_COLOR,
    Marker,
    TimelinePanel,
)
from tui.widgets.timeline_series import TRACKS, TrackBins, width_for
from tui.widgets.top_bar import TopBar

SPANS = {"1m": 60.0, "15m": 900.0, "6h": 6 * 3600.0}
_COLORS = {"tokens": "cyan", "pause": "magenta", "ecn": "yellow", "drops": "red", "gpu": "orange"}
MAX_MARKERS = len(string.ascii_uppercase)
PANEL_MIN_ROWS = 3  # a title and two chart rows: 16 levels, enough to see a dip
CHROME_ROWS = 3  # the top bar, the span line and the footer
LEGEND_MAX = 8


def _ago(seconds: float) -> str:
    s = max(0.0, seconds)
    return f"{s:.0f}s" if s < 60 else fmt.age(s)


def shown_episodes(episodes: list[Episode], now: float, span_s: float) -> list[Episode]:
    """The episodes that overlap the span, oldest raise first, at most one per letter."""
    lo = now - span_s
    inside = [e for e in episodes if e.raised <= now + 1 and (e.cleared is None or e.cleared >= lo)]
    return inside[-MAX_MARKERS:]


def legend_line(m: Marker, ep: Episode, now: float) -> Text:
    """`` A  raised 1m16s ago, cleared 45s ago  node3/enp65s0f0np0: summary``."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f" {m.label} ", f"bold reverse {SEVERITY_COLOR.get(m.severity, '')}".strip())
    when = f" raised {_ago(now - ep.raised)} ago, "
    when += "active" if ep.cleared is None else f"cleared {_ago(now - ep.cleared)} ago"
    t.append(when, "dim")
    t.append("  ")
    t.append(ep.shown.summary)
    return t


class TimelineScreen(DataScreen):
    """Every panel shares one time axis, column for column: a dip lines up with its cause."""

    BINDINGS = [
        Binding("m", "span('1m')", "1 min"),
        Binding("f", "span('15m')", "15 min"),
        Binding("h", "span('6h')", "6 h"),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="timeline")
        self.span = "15m"
        self._bins = TrackBins()  # kept between ticks

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield QuietStatic(id="timeline-title")
        with Vertical(id="timeline-panels"):
            for tr in TRACKS:
                yield TimelinePanel(
                    tr.title,
                    _COLORS.get(tr.name, "white"),
                    cap=100.0 if tr.unit == "%" else None,
                    id=f"tl-{tr.name}",
                )
        yield QuietStatic(id="timeline-legend")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_view()

    def on_resize(self) -> None:
        self.refresh_view()

    def markers(self, now: float, span_s: float) -> list[tuple[Marker, Episode]]:
        """The finding log's episodes in the span, lettered A, B, ... oldest raise first."""
        shown = shown_episodes(self.ctx.state.finding_log.episodes(), now, span_s)
        return [
            (Marker(e.raised, string.ascii_uppercase[i], e.severity), e)
            for i, e in enumerate(shown)
        ]

    def legend_rows(self) -> int:
        """Lines the legend may take, leaving every panel its minimum height."""
        height = self.size.height or 24
        panels = PANEL_MIN_ROWS * len(TRACKS) + AXIS_ROWS
        return max(1, min(LEGEND_MAX, height - CHROME_ROWS - panels - 1))  # 1: its border

    def refresh_view(self) -> None:
        """Redraw every panel over the same x-range, one bin per plot column."""
        super().refresh_view()
        ctx = self.ctx
        self.query_one(TopBar).show(summary(ctx.state, ctx.now(), ctx.interval), ctx.paused, None)
        span = SPANS[self.span]
        cols = max(1, (self.size.width or 80) - PLOT_X0)
        hist = ctx.state.history
        now = self._bins.now(hist)
        oldest = self._bins.start(hist, now - span + 1) if now is not None else None
        if now is not None and oldest is not None:
            # Less history than the span: the axis starts where the history does, so a
            # young session is not squeezed into the right edge.
            span = max(10.0, now - oldest + 1)
        now, series = self._bins.series(hist, span, width_for(span, cols), now)
        marked = self.markers(now, span) if now is not None else []
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
            panel.draw(times, values, now, span, [m for m, _ in marked], tr.unit, x_axis=i == last)
        self.query_one("#timeline-legend", Static).update(self._legend(marked, now))

    def _legend(self, marked: list[tuple[Marker, Episode]], now: float | None) -> Text:
        """One line per marker, in letter order; when they do not all fit, the critical
        and active ones are kept and the rest are named on the first line, never dropped
        silently (the findings view has them all)."""
        legend = Text(no_wrap=True, overflow="ellipsis")
        if now is None or not marked:
            legend.append("no findings in this span", "dim")
            return legend
        room = self.legend_rows()
        keep = set(range(len(marked)))
        if len(marked) > room:
            order = sorted(
                range(len(marked)),
                key=lambda i: (marked[i][1].severity != "critical", not marked[i][1].active, -i),
            )
            keep = set(order[: room - 1])
            rest = [marked[i][0].label for i in range(len(marked)) if i not in keep]
            legend.append(f"… {len(rest)} more: {', '.join(rest)}", "dim")
        for i, (m, ep) in enumerate(marked):
            if i not in keep:
                continue
            if legend.plain:
                legend.append("\n")
            legend.append_text(legend_line(m, ep, now))
        return legend

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def action_span(self, span: str) -> None:
        """Show the last 1 min, 15 min or 6 h."""
        if span in SPANS:
            self.span = span
            self.refresh_view()
