"""Pre-FEC bit error rate per link, and its trend (issue 33).

The BER over a window is the bit errors the physical layer corrected in it over the bits
the link carried in it:

- numerator: ``phy_corrected_bits`` where the driver counts corrected bits (mlx5's
  ``rx_corrected_bits_phy``); else ``fec_corrected_blocks`` x 1 bit, a *lower bound*:
  every corrected FEC codeword held at least one wrong bit, and RS(544,514) corrects up to
  15 symbols (150 bits) of one. A lower bound over a threshold is a BER over it for sure,
  so the estimate never raises a false alarm; its trend (a ratio of two windows) is
  exact as long as the errors per block stay alike.
- denominator: the negotiated rate x the time the link was up (the PHY carries bits at
  line rate whether or not there is traffic: idles are coded and checked too; mlxlink's
  raw BER divides by the same). The negotiated rate is the data rate; the lanes run about
  6 % faster with the FEC's and the line code's overhead, so the BER reads up to 6 % high.

Counters are cumulative and may come at slow cadence (a value carried between optics
rounds): a window's BER is the counts' difference between the readings where the count
moved, so a window holds whole rounds. A counter going back (a driver reset, a port
re-initialised) starts the window over. Each link keeps a bounded ring of readings: at
most ``POINTS_PER_WINDOW`` per window, for ``ber_trend_s`` at most.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from collectors.samples import LinkSample
from collectors.vocabulary import Metric

# What a BER was counted from (evidence "ber_counted_from").
FROM_BITS = "phy_corrected_bits / (rate x time up)"
FROM_BLOCKS = "fec_corrected_blocks x 1 bit / (rate x time up): a lower bound"

# Readings kept per BER window: enough that a window's edge falls within a sixth of it.
POINTS_PER_WINDOW = 6


def corrected_count(link: LinkSample) -> tuple[int, str] | None:
    """The link's cumulative count of corrected bit errors and what it counts, or None."""
    bits = link.metrics.get(Metric.PHY_CORRECTED_BITS)
    if isinstance(bits, int):
        return bits, FROM_BITS
    blocks = link.metrics.get(Metric.FEC_CORRECTED_BLOCKS)
    if isinstance(blocks, int):
        return blocks, FROM_BLOCKS
    return None


@dataclass(slots=True, frozen=True)
class Reading:
    """One point of a counter's window: time, cumulative count, bits carried until then."""

    t: float
    count: float
    carried: float


@dataclass(slots=True)
class CounterWindow:
    """A cumulative counter's readings over the recent past, for rates over a window.

    ``carried`` accumulates the bits the link carried (rate x time up), so a BER is a
    ratio of two differences; a counter without a denominator (symbol errors) uses the time.
    Windows run between *edges*, the readings where the count moved: a counter read at
    slow cadence moves once a round and is carried between rounds, so a window between
    two rounds counts whole rounds, never none or two of them by where a frame fell.
    """

    points: deque[Reading] = field(default_factory=deque)  # edges, at least a step apart
    first: Reading | None = None  # the first reading (a slow counter's: any time in a round)
    last: Reading | None = None  # the newest reading
    edge: Reading | None = None  # the newest reading whose count moved
    counted_from: str = ""

    def add(
        self, t: float, count: float, rate_bps: float | None, step_s: float, keep_s: float
    ) -> None:
        """Add a reading at ``t``; ``rate_bps``: bits a second carried since the last one
        (None or 0: the link was down or its rate is unknown: nothing carried)."""
        last = self.last
        if last is not None and t <= last.t:
            return  # a frame seen already
        if last is not None and count < last.count:
            self.clear()  # the counter went back: a reset, not a negative rate
            last = None
        carried = 0.0 if last is None else last.carried + (rate_bps or 0.0) * (t - last.t)
        now = Reading(t, float(count), carried)
        self.last = now
        if last is None:
            # Not a window's start: a slow counter's first reading falls anywhere in a
            # round, and its next move counts a whole round over part of one.
            self.first = now
            return
        if now.count != last.count:
            self.edge = now
            if not self.points or t - self.points[-1].t >= step_s:
                self.points.append(now)
        while len(self.points) > 1 and self.points[1].t <= t - keep_s:
            self.points.popleft()

    def clear(self) -> None:
        """Forget every reading (a reset, a flap: what came before is another link)."""
        self.points.clear()
        self.first = self.last = self.edge = None

    def span_s(self) -> float:
        """Seconds the windows can cover (from the count's first move)."""
        if self.last is None or not self.points:
            return 0.0
        return self.last.t - self.points[0].t

    def _end(self, window_s: float) -> Reading | None:
        """Where a window ending now ends: the last edge, or now when the count stood
        still for two windows (nothing counted: no round is still to come)."""
        last, edge = self.last, self.edge
        if last is None or edge is None:
            return None
        return last if last.t - edge.t > 2 * window_s else edge

    def _since(self, t: float) -> Reading | None:
        """The newest kept edge at or before ``t`` (None: the window starts later)."""
        found = None
        for p in self.points:
            if p.t > t:
                break
            found = p
        return found

    def ber(self, window_s: float) -> float | None:
        """Errors over bits carried in the last ``window_s`` (None: not covered, or nothing
        carried)."""
        first, last = self.first, self.last
        if not self.points and first is not None and last is not None:
            # never moved: nothing corrected, once two windows said so
            ok = last.t - first.t > 2 * window_s
            return ratio(0.0, last.carried - first.carried) if ok else None
        end = self._end(window_s)
        start = None if end is None else self._since(end.t - window_s)
        if end is None or start is None:
            return None
        return ratio(end.count - start.count, end.carried - start.carried)

    def first_ber(self, window_s: float) -> tuple[float, float] | None:
        """(BER, its window's middle time) over the first ``window_s`` of the readings."""
        if not self.points:
            return None
        first = self.points[0]
        end = next((p for p in self.points if p.t >= first.t + window_s), None)
        if end is None:
            return None
        got = ratio(end.count - first.count, end.carried - first.carried)
        return None if got is None else (got, (first.t + end.t) / 2)

    def per_s(self, window_s: float) -> float | None:
        """The counter's rate over the last ``window_s`` (None: not covered)."""
        last = self.last
        start = None if last is None else self._since(last.t - window_s)
        if last is None or start is None or last.t <= start.t:
            return None
        return (last.count - start.count) / (last.t - start.t)


def ratio(errors: float, carried: float) -> float | None:
    """A BER: None when nothing was carried."""
    return errors / carried if carried > 0 else None


def decades_per_hour(before: float, now: float, dt_s: float) -> float | None:
    """How many decades a BER moved per hour (None: a zero end or no time between)."""
    if before <= 0 or now <= 0 or dt_s <= 0:
        return None
    return math.log10(now / before) * 3600.0 / dt_s


@dataclass(frozen=True, slots=True)
class BerNow:
    """A link's pre-FEC BER over the last window, and its trend on the link's baseline."""

    ber: float | None  # None: the window is not covered yet
    before: float | None  # over the first window kept (None: not two windows apart yet)
    decades_per_h: float | None
    counted_from: str  # FROM_BITS or FROM_BLOCKS


def ber_now(track: CableTrack | None, window_s: float) -> BerNow | None:
    """What the cable rules measure of a link's BER now (None: it counts no corrections)."""
    w = None if track is None else track.ber
    if w is None or w.last is None:
        return None
    now = w.ber(window_s)
    base = w.first_ber(window_s)
    if now is None or base is None or w.last.t - base[1] < window_s * 1.5:
        return BerNow(now, None, None, w.counted_from)  # the windows overlap: no trend yet
    per_h = decades_per_hour(base[0], now, w.last.t - window_s / 2 - base[1])
    return BerNow(now, base[0], per_h, w.counted_from)


def ber_text(ber: float | None) -> str:
    """A BER as people read it: ``2.1e-07``."""
    return "?" if ber is None else f"{ber:.1e}"


@dataclass(slots=True)
class CableTrack:
    """What the cable rules remember of one link across frames (RuleMemory.cables)."""

    last_t: float
    ber: CounterWindow = field(default_factory=CounterWindow)
    symbols: CounterWindow = field(default_factory=CounterWindow)  # IB symbol errors
    down_events: int | None = None  # link_down_events at the last frame
    up: bool = True
    # The link's BER over the window before its last flap, and when it came back up.
    ber_before_flap: float | None = None
    up_since: float | None = None
    # Devlink health reporters' (error, recover) counts at the last read, by (device, name).
    reporters: dict[tuple[str, str], tuple[int | None, int | None]] = field(default_factory=dict)
    # The module read last judged (its node time) and the frame time it was first seen at:
    # a read carried over frames is judged once, and its verdict stands until the next.
    module_read: int | None = None
    module_t: float | None = None
