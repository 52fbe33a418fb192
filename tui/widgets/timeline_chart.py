"""One panel of the timeline: a series against time with the findings marked as vertical lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual_plotext import PlotextPlot

from tui import format as fmt
from tui.widgets.charts import segments

SEVERITY_COLOR = {"critical": "red", "warning": "yellow", "info": "blue"}
# plotext colour names follow the terminal palette (yellow may come out purple): RGB is exact.
RGB = {
    "red": (255, 85, 85), "yellow": (240, 200, 40), "blue": (110, 150, 255),
    "cyan": (60, 200, 230), "magenta": (230, 90, 200), "orange": (255, 150, 40),
    "white": (220, 220, 220),
}


@dataclass(frozen=True, slots=True)
class Marker:
    """A finding drawn on every panel at the time it was first seen."""

    t: float  # remote unix time (Finding.since)
    label: str  # "A", "B", ... (the legend under the panels says what each is)
    severity: str


class TimelinePanel(PlotextPlot):
    """A stacked panel; all panels of the screen get the same x-range."""

    DEFAULT_CSS = """
    TimelinePanel { height: 1fr; width: 1fr; }
    """

    def __init__(self, title: str, color: str, *, cap: float | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.color = color
        self.cap = cap  # a ratio shown in % tops out at 100
        self.drawn_points = 0

    def draw(
        self,
        times: Sequence[float],
        values: Sequence[float | None],
        now: float,
        span_s: float,
        markers: Sequence[Marker] = (),
        unit: str = "",
        x_axis: bool = False,
    ) -> int:
        """Plot one series over ``[now - span_s, now]``; return how many points had values."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        minutes = span_s > 300
        div = 60.0 if minutes else 1.0
        present = [v for v in values if v is not None]
        last = present[-1] if present else None
        top = max(present) if present else 0.0
        peak = fmt.si(top if present else None)
        head = f"{self.title}  now {fmt.si(last)}{unit}  peak {peak}{unit if present else ''}"
        plt.title(head)
        xs_all = [(t - now) / div for t in times]
        for xs, ys in segments(xs_all, list(values)):
            plt.plot(xs, ys, color=RGB.get(self.color, RGB["white"]), marker="braille")
        hi = top * 1.15 if top > 0 else 1.0
        if self.cap is not None:
            hi = min(hi, self.cap) if top > 0 else self.cap
        # Findings first seen in the same second share one line: "CD", worst colour.
        at: dict[float, list[Marker]] = {}
        for m in markers:
            x = round((m.t - now) / div, 1 if minutes else 0)
            if -span_s / div <= x <= 0:
                at.setdefault(x, []).append(m)
        for x, ms in at.items():
            worst = min(ms, key=lambda m: list(SEVERITY_COLOR).index(m.severity)
                        if m.severity in SEVERITY_COLOR else 9)
            rgb = RGB[SEVERITY_COLOR.get(worst.severity, "white")]
            plt.vline(x, rgb)
            plt.text("".join(m.label for m in ms), x=x, y=hi * 0.92, color=rgb)
        plt.xlim(-span_s / div, 0)
        plt.ylim(0, hi)
        # Two ticks only: panels are a few rows high, and plotext drops a middle tick or
        # not depending on rounding, which made the picture differ from run to run.
        plt.yticks([0, hi], [fmt.si(0), fmt.si(hi)])
        if x_axis:
            plt.xlabel("minutes ago" if minutes else "seconds ago")
        else:
            plt.xticks([])
        self.drawn_points = len(present)
        self.refresh()
        return self.drawn_points
