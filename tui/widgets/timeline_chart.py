"""One panel of the timeline: a series against time, findings marked as tinted columns.

Every panel draws its y labels in the same :data:`LABEL_W` cells and maps time to columns
with the same :func:`column_of`, so a time is the same terminal column in every panel:
a dip in tokens/s sits exactly above the pause storm that caused it. The panel draws
with block characters (eighths of a cell), so it still shows its data three rows high
(an 80x24 terminal); the last panel carries the shared time axis and the marker letters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from tui import format as fmt

SEVERITY_COLOR = {"critical": "red", "warning": "yellow", "info": "blue"}
RGB = {
    "red": (255, 85, 85),
    "yellow": (240, 200, 40),
    "blue": (110, 150, 255),
    "cyan": (60, 200, 230),
    "magenta": (230, 90, 200),
    "orange": (255, 150, 40),
    "white": (220, 220, 220),
}
# A marker's column through the chart rows: dark enough that the series stays readable.
TINT = {"critical": "#5f1f1f", "warning": "#4f4414", "info": "#1f2f5f"}
LABEL_W = 5  # y labels, right-aligned: "2.5k", "100%"
PLOT_X0 = LABEL_W + 1  # the first plot column, after the label and the axis character
AXIS_ROWS = 2  # the axis line with the marker letters, and the time labels
BLOCKS = " ▁▂▃▄▅▆▇█"
TICK_STEPS_S = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)


@dataclass(frozen=True, slots=True)
class Marker:
    """A finding drawn on every panel at the time it was raised."""

    t: float  # operator-axis unix time (Episode.raised)
    label: str  # "A", "B", ... (the legend under the panels says what each is)
    severity: str


def _rgb(name: str) -> str:
    r, g, b = RGB.get(name, RGB["white"])
    return f"rgb({r},{g},{b})"


def severity_style(severity: str) -> str:
    """The colour a finding's letter is drawn in."""
    return _rgb(SEVERITY_COLOR.get(severity, "white"))


def column_of(t: float, now: float, span_s: float, cols: int) -> int | None:
    """The plot column (0-based) that time ``t`` falls in, None outside the span."""
    lo = now - span_s
    if cols <= 0 or span_s <= 0 or t < lo or t > now + span_s / cols:
        return None
    return min(cols - 1, int((t - lo) / span_s * cols))


def resample(
    times: Sequence[float], values: Sequence[float | None], now: float, span_s: float, cols: int
) -> list[float | None]:
    """One value per plot column: the largest of the bins in it (a spike never vanishes),
    or the bin over the column's middle when bins are wider than columns; None: a gap."""
    out: list[float | None] = [None] * max(0, cols)
    if cols <= 0 or not times:
        return out
    per: list[list[float]] = [[] for _ in range(cols)]
    hit = [False] * cols
    for t, v in zip(times, values, strict=False):
        c = column_of(t, now, span_s, cols)
        if c is None:
            continue
        hit[c] = True
        if v is not None:
            per[c].append(v)
    width = span_s / cols
    for c in range(cols):
        if per[c]:
            out[c] = max(per[c])
        elif not hit[c]:
            mid = now - span_s + (c + 0.5) * width
            i = min(range(len(times)), key=lambda j: abs(times[j] - mid))
            if abs(times[i] - mid) <= max(width, _step(times)):
                out[c] = values[i]
    return out


def _step(times: Sequence[float]) -> float:
    return abs(times[1] - times[0]) if len(times) > 1 else 0.0


def _ago(seconds: float) -> str:
    """A tick label: 30s, 5m, 2h, 1m30s."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m" + (f"{s % 60:02d}s" if s % 60 else "")
    return f"{s // 3600}h" + (f"{s % 3600 // 60:02d}m" if s % 3600 else "")


def ticks(now: float, span_s: float, cols: int) -> list[tuple[int, str]]:
    """(column, label) of the time axis: 'now' at the right, a round step back from it."""
    room = max(1, cols // 12)  # a label every 12 columns at most ("-1m30s" and a gap)
    step = next((s for s in TICK_STEPS_S if span_s / s <= room), TICK_STEPS_S[-1])
    out: list[tuple[int, str]] = []
    k = 0
    while k * step <= span_s:
        c = column_of(now - k * step, now, span_s, cols)
        if c is not None:
            out.append((c, "now" if k == 0 else f"-{_ago(k * step)}"))
        k += 1
    return out


class TimelinePanel(Widget):
    """A stacked panel; the screen gives every panel the same span, now and markers."""

    DEFAULT_CSS = """
    TimelinePanel { height: 1fr; width: 1fr; min-height: 3; }
    """

    def __init__(
        self, title: str, color: str, *, cap: float | None = None, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.title = title
        self.color = color
        self.cap = cap  # a ratio shown in % tops out at 100
        self.drawn_points = 0
        self.headline = title  # the title line as drawn (before any cut)
        self.span_s = 0.0
        self.now: float | None = None
        self._times: list[float] = []
        self._values: list[float | None] = []
        self._markers: tuple[Marker, ...] = ()
        self._unit = ""
        self.x_axis = False
        self._drawn: tuple[object, ...] = ()
        self.renders = 0  # a test checks a refresh with nothing new renders none

    @property
    def plot_cols(self) -> int:
        """How many columns the plot area has at the current width."""
        return max(0, self.size.width - PLOT_X0)

    def draw(
        self,
        times: Sequence[float],
        values: Sequence[float | None],
        now: float | None,
        span_s: float,
        markers: Sequence[Marker] = (),
        unit: str = "",
        x_axis: bool = False,
    ) -> int:
        """Show one series over ``[now - span_s, now]``; return how many points had values.

        Nothing is painted when all of it is as last drawn (a second refresh in a tick)."""
        drawn = (list(times), list(values), now, span_s, tuple(markers), unit, x_axis)
        if drawn == self._drawn:
            return self.drawn_points
        self._drawn = drawn
        self._times, self._values = drawn[0], drawn[1]
        self.now, self.span_s = now, span_s
        self._markers, self._unit, self.x_axis = tuple(markers), unit, x_axis
        present = [v for v in values if v is not None]
        last = present[-1] if present else None
        peak = fmt.si(max(present) if present else None)
        self.headline = (
            f"{self.title}  now {fmt.si(last)}{unit if present else ''}"
            f"  peak {peak}{unit if present else ''}"
        )
        self.drawn_points = len(present)
        self.refresh()
        return self.drawn_points

    def render(self) -> Text:
        """The title line, the chart rows and (last panel) the axis, at the current size."""
        self.renders += 1
        width, height = self.size.width, self.size.height
        cols = self.plot_cols
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        title = Text(" " * PLOT_X0, no_wrap=True, overflow="ellipsis")
        title.append(self.headline, "bold")
        title.truncate(width, overflow="ellipsis")
        out.append_text(title)
        axis_rows = AXIS_ROWS if self.x_axis else 0
        n = max(1, height - 1 - axis_rows)
        now = self.now
        vals = (
            resample(self._times, self._values, now, self.span_s, cols)
            if now is not None
            else [None] * cols
        )
        present = [v for v in vals if v is not None]
        top = self.cap if self.cap is not None else (max(present) if present else 0.0)
        top = top if top > 0 else 1.0
        tint: dict[int, str] = {}
        for m in self._markers:
            c = column_of(m.t, now, self.span_s, cols) if now is not None else None
            if c is not None and (c not in tint or _worse(m.severity, tint[c])):
                tint[c] = m.severity
        color = _rgb(self.color)
        for r in range(n):
            out.append("\n")
            label = fmt.si(top) + self._unit if r == 0 else ("0" if r == n - 1 else "")
            out.append(f"{label:>{LABEL_W}}", "dim")
            out.append("┤" if label else "│", "dim")
            below = n - 1 - r  # full rows under this one
            # Cells of one style go out as one run: a span per cell made the paint's
            # conversion of the text cost more than everything else on this screen.
            run: list[str] = []
            run_style = ""
            for c, v in enumerate(vals):
                bg = f" on {TINT[tint[c]]}" if c in tint and tint[c] in TINT else ""
                if v is None:
                    ch, style = (fmt.GAP_CHAR if r == n - 1 else " "), "dim" + bg
                elif v <= 0:
                    ch, style = (BLOCKS[1] if r == n - 1 else " "), "dim" + bg
                else:
                    eighths = max(2, round(min(1.0, v / top) * n * 8))
                    ch, style = BLOCKS[max(0, min(8, eighths - below * 8))], color + bg
                if style != run_style and run:
                    out.append("".join(run), run_style)
                    run = []
                run_style = style
                run.append(ch)
            if run:
                out.append("".join(run), run_style)
        if axis_rows and height >= 1 + 1 + axis_rows:
            out.append("\n")
            out.append_text(self._axis_line(cols, now))
            out.append("\n")
            out.append_text(self._tick_labels(cols, now, width))
        return out

    def _axis_line(self, cols: int, now: float | None) -> Text:
        """└──┴──A──┴─ : the axis with its ticks and the markers' letters."""
        chars = ["─"] * cols
        styles = ["dim"] * cols
        if now is not None:
            for tick, _ in ticks(now, self.span_s, cols):
                chars[tick] = "┴"
            used = -1
            for m in sorted(self._markers, key=lambda m: m.t):
                at = column_of(m.t, now, self.span_s, cols)
                if at is None:
                    continue
                c = max(at, used + 1)  # letters raised in the same column sit side by side
                if c >= cols:
                    break
                chars[c], styles[c] = m.label, "bold " + severity_style(m.severity)
                used = c
        t = Text(" " * LABEL_W + "└", "dim", no_wrap=True)
        for ch, st in zip(chars, styles, strict=True):
            t.append(ch, st)
        return t

    def _tick_labels(self, cols: int, now: float | None, width: int) -> Text:
        line = [" "] * width
        if now is not None:
            taken = -1
            for c, label in sorted(ticks(now, self.span_s, cols)):
                x = PLOT_X0 + c
                start = min(width - len(label), max(0, x - len(label) // 2))
                if label == "now":
                    start = width - len(label)
                if start <= taken + 1:
                    continue  # would touch the previous label
                line[start : start + len(label)] = label
                taken = start + len(label) - 1
        return Text("".join(line), "dim", no_wrap=True)


def _worse(a: str, b: str) -> bool:
    order = list(SEVERITY_COLOR)
    return (order.index(a) if a in order else 9) < (order.index(b) if b in order else 9)
