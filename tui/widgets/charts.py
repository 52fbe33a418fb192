"""Time charts over the history tiers (textual-plotext), gaps drawn as holes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from textual.app import RenderResult
from textual_plotext import PlotextPlot

from fabtop.core.history import History
from tui import format as fmt

COLORS = ("cyan", "magenta", "yellow", "green", "red", "blue", "orange", "white")


def segments(
    times: Sequence[float], values: Sequence[float | None]
) -> list[tuple[list[float], list[float]]]:
    """Runs of consecutive present points: a None splits the line instead of dropping to 0."""
    out: list[tuple[list[float], list[float]]] = []
    xs: list[float] = []
    ys: list[float] = []
    for t, v in zip(times, values, strict=False):
        if v is None:
            if xs:
                out.append((xs, ys))
            xs, ys = [], []
        else:
            xs.append(t)
            ys.append(v)
    if xs:
        out.append((xs, ys))
    return out


class TimeChart(PlotextPlot):
    """One chart of several series; ``draw`` replaces its data."""

    DEFAULT_CSS = """
    TimeChart { height: 1fr; width: 1fr; }
    """

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self._hi = 1.0

    def render(self) -> RenderResult:
        # The ticks depend on the rows the chart has, which are known only once it is laid
        # out: a draw before the first layout (a slow machine) would pick them for 0 rows.
        ticks = y_ticks(self._hi, self.size.height - _CHROME_ROWS)
        self.plt.yticks(ticks, [fmt.si(t) for t in ticks])
        return super().render()

    def draw(
        self,
        history: History,
        series: Sequence[tuple[str, tuple[str, ...], float]],
        span_s: float,
        now: float | None,
        stat: Literal["mean", "max"] = "mean",
        unit: str = "",
    ) -> int:
        """Plot ``(label, key, scale)`` series over ``span_s``; return how many had data."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title)
        minutes = span_s > 300
        plt.xlabel("minutes ago" if minutes else "seconds ago")
        if unit:
            plt.ylabel(unit)
        drawn = 0
        top = 0.0
        for i, (label, key, scale) in enumerate(series):
            s = history.get(key)
            if s is None or now is None:
                continue
            times, values = s.points(span_s, now=now, stat=stat)
            xs_all = [(t - now) / (60 if minutes else 1) for t in times]
            ys_all = [None if v is None else v * scale for v in values]
            if not any(v is not None for v in ys_all):
                continue
            top = max(top, max(v for v in ys_all if v is not None))
            color = COLORS[i % len(COLORS)]
            for j, (xs, ys) in enumerate(segments(xs_all, ys_all)):
                plt.plot(xs, ys, color=color, label=label if j == 0 else None, marker="braille")
            drawn += 1
        lo = -span_s / (60 if minutes else 1)
        plt.xlim(lo, 0)
        # Rates are never negative: pin the floor at 0 so a flat line is not centred.
        hi = top * 1.15 if top > 0 else 1.0
        plt.ylim(0, hi)
        self._hi = hi
        if not drawn:
            plt.title(f"{self.title} (nothing moved)")
        self.refresh()
        return drawn


# The rows of a chart that are not its plot: title, x tick labels, x label, border.
_CHROME_ROWS = 4


def y_ticks(hi: float, rows: int) -> list[float]:
    """Ticks from 0 to ``hi`` that each get a row of their own: on a short chart (80x24)
    five ticks over three rows put two labels on one row and hid the 0."""
    steps = 4 if rows >= 9 else 2 if rows >= 5 else 1
    return [hi * i / steps for i in range(steps + 1)]
