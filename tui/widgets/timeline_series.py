"""The timeline's cluster series, summed (or maxed) across hosts on the fly from History."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.history import History, SeriesKey

Combine = Literal["sum", "max"]


@dataclass(frozen=True, slots=True)
class Track:
    """One panel of the timeline: which series, how they combine, how to scale."""

    name: str
    title: str
    match: Callable[[SeriesKey], bool]
    combine: Combine
    scale: float = 1.0
    unit: str = ""


def _leaf(*names: str) -> Callable[[SeriesKey], bool]:
    wanted = frozenset(names)
    return lambda k: len(k) == 3 and k[2] in wanted


def _prio_all(*names: str) -> Callable[[SeriesKey], bool]:
    wanted = frozenset(names)
    return lambda k: len(k) == 4 and k[2] in wanted and k[3] == ""


def _gpu_slowdown(k: SeriesKey) -> bool:
    return len(k) == 3 and k[1].startswith("gpu") and k[2] == "thermal_slowdown"


TRACKS: tuple[Track, ...] = (
    Track("tokens", "cluster tokens/s", _leaf(InferenceRate.GENERATED_TOKENS_PER_S), "sum"),
    Track(
        "pause",
        "pause time, worst link",
        _prio_all(Derived.RX_PAUSE_TIME_RATIO, Derived.TX_PAUSE_TIME_RATIO),
        "max",
        100.0,
        "%",
    ),
    Track(
        "ecn", "ECN marks + CNPs /s", _leaf(Metric.ECN_MARKED.per_s, Metric.CNP_SENT.per_s), "sum"
    ),
    Track(
        "drops",
        "drops /s (discards, out of buffer)",
        _leaf(Metric.RX_DISCARDS.per_s, Metric.RX_OUT_OF_BUFFER.per_s),
        "sum",
    ),
    Track("gpu", "GPUs in thermal slowdown", _gpu_slowdown, "sum"),
)


def bin_width(span_s: float) -> float:
    """Seconds per plotted point: the raw 1 s up to 1 min, coarser beyond (≤ about 240 points)."""
    if span_s <= 120:
        return 1.0
    return float(max(1, math.ceil(span_s / 240)))


def latest_time(history: History, keys: Iterable[SeriesKey]) -> float | None:
    """The newest point among ``keys``: the timeline's 'now' (remote time)."""
    newest: float | None = None
    for k in keys:
        s = history.get(k)
        if s is None:
            continue
        times, _ = s.points(1e-9)
        if times and (newest is None or times[-1] > newest):
            newest = times[-1]
    return newest


def combine_series(
    history: History,
    keys: Iterable[SeriesKey],
    how: Combine,
    span_s: float,
    now: float,
    width: float,
    bins: int | None = None,
) -> tuple[list[float], list[float | None]]:
    """Bucket every series into ``width``-second bins over the span and sum or max them.

    Each series contributes the mean of its points in a bin (max for spiky coarse data);
    a bin no series has a value in is a gap (None), never 0. ``bins``: exactly that many
    (one per plot column), the newest point in the last.
    """
    stat: Literal["mean", "max"] = "max" if how == "max" or span_s > 900 else "mean"
    lo = now - span_s
    n = bins if bins is not None else int(span_s // width) + 1
    acc: list[float | None] = [None] * n
    for k in keys:
        s = history.get(k)
        if s is None:
            continue
        times, values = s.points(span_s, now=now, stat=stat)
        sums: dict[int, tuple[float, int]] = {}
        for t, v in zip(times, values, strict=False):
            if v is None:
                continue
            i = min(n - 1, max(0, int((t - lo) // width)))
            tot, cnt = sums.get(i, (0.0, 0))
            sums[i] = (tot + v, cnt + 1)
        for i, (tot, cnt) in sums.items():
            v = tot / cnt
            cur = acc[i]
            if cur is None:
                acc[i] = v
            else:
                acc[i] = cur + v if how == "sum" else max(cur, v)
    times_out = [lo + (i + 0.5) * width for i in range(n)]
    return times_out, acc


def track_series(
    history: History, span_s: float, now: float | None = None, bins: int | None = None
) -> tuple[float | None, dict[str, tuple[list[float], list[float | None]]]]:
    """'now' and every track's combined (times, values), values already scaled.

    ``bins``: one bin per plot column (the timeline's panels), else :func:`bin_width`.
    """
    keys = list(history.keys())
    per_track = {tr.name: [k for k in keys if tr.match(k)] for tr in TRACKS}
    if now is None:
        now = latest_time(history, per_track["tokens"]) or latest_time(
            history, [k for ks in per_track.values() for k in ks]
        )
    out: dict[str, tuple[list[float], list[float | None]]] = {}
    if now is None:
        return None, out
    width = span_s / bins if bins else bin_width(span_s)
    for tr in TRACKS:
        times, values = combine_series(
            history, per_track[tr.name], tr.combine, span_s, now, width, bins or None
        )
        out[tr.name] = (times, [None if v is None else v * tr.scale for v in values])
    return now, out


def first_time(series: dict[str, tuple[list[float], list[float | None]]]) -> float | None:
    """The earliest bin any track has a value in (None when all are empty)."""
    firsts = [
        next((t for t, v in zip(ts, vs, strict=False) if v is not None), None)
        for ts, vs in series.values()
    ]
    present = [t for t in firsts if t is not None]
    return min(present) if present else None
