"""The timeline's cluster series, summed (or maxed) across hosts from History.

Bins sit on fixed multiples of their width (as Prometheus steps do), so a bin that is
complete never changes: :class:`TrackBins` keeps, per host, the bins its series closed
and reads each tick only the points newer than the last it read (about one per series),
instead of every point of the span of every series (512 links x 900 points at 64 x 8).
What it keeps is keyed by value (host, bin number) and trimmed to the span.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.history import History, SeriesKey
from fabtop.core.series import Series

Combine = Literal["sum", "max"]
Stat = Literal["mean", "max"]


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


def width_for(span_s: float, cols: int | None = None) -> float:
    """The bin width for ``span_s`` over ``cols`` plot columns: whole seconds, at least a
    column's worth (a young session's span grows every tick; the width then stays put)."""
    natural = bin_width(span_s)
    if not cols:
        return natural
    return float(max(natural, math.ceil(span_s / cols - 1e-9)))


def stat_for(how: Combine, span_s: float) -> Stat:
    """Per series and bin: the mean, or the max (a max track; spiky coarse data)."""
    return "max" if how == "max" or span_s > 900 else "mean"


def latest_time(history: History, keys: Iterable[SeriesKey]) -> float | None:
    """The newest point among ``keys``: the timeline's 'now' (remote time)."""
    newest: float | None = None
    for k in keys:
        s = history.get(k)
        t = s.newest() if s is not None else None
        if t is not None and (newest is None or t > newest):
            newest = t
    return newest


class _Open:
    """One series' newest bin, still open: its points so far."""

    __slots__ = ("b", "n", "top", "total")

    def __init__(self, b: int) -> None:
        self.b, self.total, self.n, self.top = b, 0.0, 0, -math.inf

    def value(self, stat: Stat) -> float | None:
        if not self.n:
            return None
        return self.top if stat == "max" else self.total / self.n


def _join(a: float | None, v: float, how: Combine) -> float:
    if a is None:
        return v
    return a + v if how == "sum" else max(a, v)


class _Host:
    """One host's series of a track: the bins they closed (combined) and each one's open bin."""

    __slots__ = ("closed", "keys", "open", "start", "upto")

    def __init__(self, keys: tuple[SeriesKey, ...], start: int) -> None:
        self.keys = keys
        self.start = start  # the first bin read: older ones were never looked at
        self.upto = -math.inf  # the newest point time read
        self.closed: dict[int, float] = {}  # bin -> the host's series combined, oldest first
        self.open: dict[SeriesKey, _Open] = {}


class _Track:
    """One track's bins at one width and statistic, per host and cluster-wide."""

    def __init__(self, how: Combine, width: float, stat: Stat) -> None:
        self.how, self.width, self.stat = how, width, stat
        self.hosts: dict[str, _Host] = {}
        self.closed: dict[int, float] = {}  # every host's closed bins combined

    def _read(
        self, h: _Host, key: SeriesKey, times: list[float], values: list[float | None]
    ) -> None:
        """Fold points (newer than any read before) into the key's open bin; a point in a
        later bin closes it into the host's and the cluster's closed bins."""
        w, how = self.width, self.how
        o = h.open.get(key)
        for t, v in zip(times, values, strict=True):
            b = math.floor(t / w)
            if o is None:
                o = h.open[key] = _Open(b)
            elif b != o.b:
                if (x := o.value(self.stat)) is not None:
                    h.closed[o.b] = _join(h.closed.get(o.b), x, how)
                    self.closed[o.b] = _join(self.closed.get(o.b), x, how)
                o.b, o.total, o.n, o.top = b, 0.0, 0, -math.inf
            if v is None:
                continue
            o.total += v
            o.n += 1
            if v > o.top:
                o.top = v

    def update(self, history: History, keys: dict[str, tuple[SeriesKey, ...]], lo: int) -> None:
        """Bring every host up to its newest points, from bin ``lo`` on; rebuild a host whose
        keys changed or whose history went back (a replay seek); forget hosts gone."""
        rebuilt = False
        for host in [h for h in self.hosts if h not in keys]:
            del self.hosts[host]
            rebuilt = True
        get = history.get
        for host, hkeys in keys.items():
            h = self.hosts.get(host)
            if h is not None and h.keys == hkeys and lo >= h.start and self._extend(h, get):
                pass
            else:
                h = self.hosts[host] = _Host(hkeys, lo)
                newest = max(
                    (t for k in hkeys if (s := get(k)) and (t := s.newest()) is not None),
                    default=-math.inf,
                )
                since = lo * self.width - 1e-9  # the whole first bin, as a fresh read would
                for k in hkeys:
                    if (s := get(k)) is not None:
                        times, values = s.points(newest - since, now=newest, stat=self.stat)
                        self._read(h, k, times, values)
                h.upto = newest
                rebuilt = True
            closed = h.closed
            while closed and (b := next(iter(closed))) < lo:
                del closed[b]
        if rebuilt:
            self.closed = {}
            for h in self.hosts.values():
                for b, v in h.closed.items():
                    self.closed[b] = _join(self.closed.get(b), v, self.how)
        for b in [b for b in self.closed if b < lo]:
            del self.closed[b]

    def _extend(self, h: _Host, get: Callable[[SeriesKey], Series | None]) -> bool:
        """Read the points newer than the host's last; False when its history went back,
        or on so far that the ring no longer holds them all (the screen was hidden)."""
        newest = h.upto
        for k in h.keys:
            s = get(k)
            if s is None:
                continue
            got = s.since(h.upto)
            if got is None:
                return False
            times, values = got
            if times:
                self._read(h, k, times, values)
                newest = max(newest, times[-1])
        if newest == h.upto:  # nothing new: a silent host, or one whose history went back
            last = max(
                (t for k in h.keys if (s := get(k)) and (t := s.newest()) is not None),
                default=None,
            )
            return last is None or last >= h.upto
        h.upto = newest
        return True

    def values(self, now: float, span_s: float) -> tuple[list[float], list[float | None]]:
        """(bin middle, combined value) from the span's first bin to the one holding ``now``."""
        w = self.width
        lo, hi = math.floor((now - span_s) / w), math.floor(now / w)
        out: list[float | None] = [self.closed.get(b) for b in range(lo, hi + 1)]
        for h in self.hosts.values():
            for o in h.open.values():
                if lo <= o.b <= hi and (x := o.value(self.stat)) is not None:
                    out[o.b - lo] = _join(out[o.b - lo], x, self.how)
        return [min(now, (b + 0.5) * w) for b in range(lo, hi + 1)], out


class TrackBins:
    """Every track's bins, kept between ticks: one per timeline view (the span it shows).

    ``series`` gives what a fresh computation over the whole span gives (a test holds it
    to that), reading only the points that came since the last call. A new width or
    statistic (another span, a resize) starts the track over.
    """

    def __init__(self) -> None:
        self._tracks: dict[str, _Track] = {}
        self._grouped: tuple[int, dict[str, dict[str, tuple[SeriesKey, ...]]]] = (0, {})
        self._start: tuple[int, float | None] = (0, None)
        # What the last call was asked and gave: asked again with nothing appended since
        # (a second refresh in one tick), it is given again.
        self._last: tuple[object, ...] = ()
        self._shown: tuple[float | None, dict[str, tuple[list[float], list[float | None]]]] = (
            None,
            {},
        )

    def _keys(self, history: History) -> dict[str, dict[str, tuple[SeriesKey, ...]]]:
        """Per track, per host, the keys it combines (grouped again when keys come or go)."""
        gen, grouped = self._grouped
        if gen != history.generation:
            by: dict[str, dict[str, list[SeriesKey]]] = {tr.name: {} for tr in TRACKS}
            every = history.keys()
            for k in every:
                for tr in TRACKS:
                    if tr.match(k):
                        by[tr.name].setdefault(k[0], []).append(k)
            grouped = {n: {h: tuple(ks) for h, ks in hs.items()} for n, hs in by.items()}
            self._grouped = (history.generation, grouped)
        return grouped

    def start(self, history: History, before: float) -> float | None:
        """Where the tracks' history starts when that is after ``before`` (a young
        session), else None. The oldest point moves only when keys come or go (or after
        the coarsest tier's day, beyond any span): found once per key set."""
        gen, oldest = self._start
        if gen != history.generation:
            held = [
                t
                for hosts in self._keys(history).values()
                for keys in hosts.values()
                for k in keys
                if (s := history.get(k)) is not None and (t := s.oldest()) is not None
            ]
            oldest = min(held, default=None)
            self._start = (history.generation, oldest)
        return oldest if oldest is not None and oldest > before else None

    def now(self, history: History) -> float | None:
        """The newest point of the tokens track, else of any track: the timeline's now."""
        grouped = self._keys(history)
        tokens = [k for ks in grouped["tokens"].values() for k in ks]
        return latest_time(history, tokens) or latest_time(
            history, [k for hs in grouped.values() for ks in hs.values() for k in ks]
        )

    def series(
        self, history: History, span_s: float, width: float, now: float | None = None
    ) -> tuple[float | None, dict[str, tuple[list[float], list[float | None]]]]:
        """'now' and every track's (bin middles, values scaled), ``width``-second bins."""
        grouped = self._keys(history)
        if now is None:
            now = self.now(history)
        out: dict[str, tuple[list[float], list[float | None]]] = {}
        if now is None:
            return None, out
        asked = (history.generation, history.appended, span_s, width, now)
        if asked == self._last:
            return self._shown
        for tr in TRACKS:
            stat = stat_for(tr.combine, span_s)
            t = self._tracks.get(tr.name)
            if t is None or t.width != width or t.stat != stat:
                t = self._tracks[tr.name] = _Track(tr.combine, width, stat)
            t.update(history, grouped[tr.name], math.floor((now - span_s) / width))
            times, values = t.values(now, span_s)
            out[tr.name] = (times, [None if v is None else v * tr.scale for v in values])
        self._last, self._shown = asked, (now, out)
        return now, out


def track_series(
    history: History, span_s: float, now: float | None = None, cols: int | None = None
) -> tuple[float | None, dict[str, tuple[list[float], list[float | None]]]]:
    """'now' and every track's combined (times, values), computed afresh over the span.

    ``cols``: the plot columns (the timeline's panels), else :func:`bin_width` bins.
    """
    return TrackBins().series(history, span_s, width_for(span_s, cols), now)


def combine_series(
    history: History,
    keys: Iterable[SeriesKey],
    how: Combine,
    span_s: float,
    now: float,
    width: float,
) -> tuple[list[float], list[float | None]]:
    """Bucket every series into ``width``-second bins over the span and sum or max them.

    Each series contributes the mean of its points in a bin (max for spiky coarse data);
    a bin no series has a value in is a gap (None), never 0.
    """
    by_host: dict[str, list[SeriesKey]] = {}
    for k in keys:
        by_host.setdefault(k[0], []).append(k)
    t = _Track(how, width, stat_for(how, span_s))
    t.update(
        history, {h: tuple(ks) for h, ks in by_host.items()}, math.floor((now - span_s) / width)
    )
    return t.values(now, span_s)
