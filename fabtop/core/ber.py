"""Pre-FEC bit error rate per link, and its trend (issue 33).

The BER over a window is the bit errors the physical layer corrected in it over the bits
the link carried in it:

- numerator: ``phy_corrected_bits`` where the driver counts corrected bits (mlx5's
  ``rx_corrected_bits_phy``), else where opt-in ``mlxlink`` answers (the sum of its
  per-lane raw physical errors, read one device per optics round: its windows are made of
  its reads, over the negotiated rate x time, as its own raw BER is); else
  ``fec_corrected_blocks`` x 1 bit, a *lower bound*:
  every corrected FEC codeword held at least one wrong bit, and RS(544,514) corrects up to
  15 symbols (150 bits) of one. A lower bound over a threshold is a BER over it for sure,
  so the estimate never raises a false alarm; its trend (a ratio of two windows) is
  exact as long as the errors per block stay alike.
- denominator: ``phy_received_bits`` where the driver counts the bits the port received
  (``rx_bits_phy``: mlx5's documented denominator of ``rx_corrected_bits_phy``, see
  collectors/normalize.py), with corrected bits only (both count at the port's receiver).
  Elsewhere the negotiated rate x the time the link was up: the PHY carries bits at line
  rate whether or not there is traffic (idles are coded and checked too; mlxlink's raw
  BER divides by the same). The negotiated rate is the data rate; the lanes run about
  6 % faster with the FEC's and the line code's overhead, so that BER reads up to 6 % high.
  Which of them a BER was counted from is said with it (``counted_from``).

A window is made of the rate engine's reads, never of counts seen on frames: each fresh
read of a counter comes with its rate since the read before, over the node time between
the two (fabtop/core/slow_rates.py for the FEC's, read on optics rounds and carried
between them; the frame's own read for ``ethtool -S``), and the window adds up rate x
span. A counter carried between rounds is no read, so a window holds whole rounds; a read
without a rate (the first, a reset, a glitch: the engine's judgement) adds nothing.
Each link keeps a bounded ring: reads are summed into buckets of at least ``step_s``
(a sixth of a window), for ``ber_trend_s`` at most.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from collectors.samples import LinkSample
from collectors.vocabulary import Metric
from fabtop.core.rates import LinkRates

# What a BER was counted from (evidence "ber_counted_from").
FROM_BITS = "phy_corrected_bits / (negotiated rate x time up)"
FROM_BITS_RX = "phy_corrected_bits / phy_received_bits (rx_bits_phy)"
FROM_BLOCKS = "fec_corrected_blocks x 1 bit / (negotiated rate x time up): a lower bound"
FROM_MLXLINK = "mlxlink raw physical errors (corrected bits) / (negotiated rate x time up)"
# ... and what it divided by, on its own (BerNow.denominator: for the cable panel).
BY_RX_BITS = "bits received (rx_bits_phy)"
BY_RATE_TIME = "negotiated rate x time up"

# Buckets of reads per BER window: enough that a window's edge falls within a sixth of it.
POINTS_PER_WINDOW = 6
# Seconds a window may fall short of its length and count as covered: read spans are node
# times, and a minute of 1 s reads sums to 59.99... as often as to 60.
COVERED_SLACK_S = 0.05

_BITS_RATE = Metric.PHY_CORRECTED_BITS.per_s
_BLOCKS_RATE = Metric.FEC_CORRECTED_BLOCKS.per_s
_RX_BITS_RATE = Metric.PHY_RECEIVED_BITS.per_s
_SYMBOLS_RATE = Metric.RX_PHY_ERRORS.per_s


def corrected_count(link: LinkSample) -> tuple[int, str] | None:
    """The link's cumulative count of corrected bit errors and what it counts, or None."""
    bits = link.metrics.get(Metric.PHY_CORRECTED_BITS)
    if isinstance(bits, int):
        return bits, FROM_BITS if link.mlxlink_read_ns is None else FROM_MLXLINK
    blocks = link.metrics.get(Metric.FEC_CORRECTED_BLOCKS)
    if isinstance(blocks, int):
        return blocks, FROM_BLOCKS
    return None


@dataclass(slots=True)
class Bucket:
    """Reads summed: seconds they span, what they counted, the bits carried meanwhile."""

    start: float  # frame time of the first read's start (end - its span)
    end: float  # frame time of the last read
    span: float  # seconds the reads span (the engine's read spans; a gap is left out)
    count: float
    carried: float


@dataclass(slots=True)
class ReadWindow:
    """A counter's reads over the recent past, for its rate or its BER over a window.

    Windows are whole buckets, newest first, until they span the window: a counter read on
    optics rounds 30 s or more apart moves once a read, so a window counts whole rounds.
    """

    buckets: deque[Bucket] = field(default_factory=deque)
    # A read seen since the window (re)started: the first one is not counted. After a flap
    # it spans part of the time down (nothing carried then); at the start its read before
    # may have been made anywhere in the round before, where a sample gives no read time.
    primed: bool = False
    counted_from: str = ""
    denominator: str = ""  # BY_RX_BITS or BY_RATE_TIME
    # Over all the buckets (every pass reads them: kept, not summed again)
    total_span: float = 0.0
    total_count: float = 0.0

    def add(
        self, t: float, span: float, count: float, carried: float, step_s: float, keep_s: float
    ) -> None:
        """A read at frame time ``t``: ``count`` counted and ``carried`` bits carried over
        the ``span`` seconds since the read before."""
        if not self.primed:
            self.primed = True
            return
        last = self.buckets[-1] if self.buckets else None
        if last is not None and last.span < step_s:
            last.end, last.span = t, last.span + span
            last.count += count
            last.carried += carried
        else:
            self.buckets.append(Bucket(t - span, t, span, count, carried))
        self.total_span += span
        self.total_count += count
        while len(self.buckets) > 1 and self.buckets[1].start <= t - keep_s:
            gone = self.buckets.popleft()
            self.total_span -= gone.span
            self.total_count -= gone.count

    def clear(self) -> None:
        """Forget every read (a flap: what came before is another link)."""
        self.buckets.clear()
        self.total_span = self.total_count = 0.0
        self.primed = False

    def end(self) -> float | None:
        """Frame time of the newest read (None: none)."""
        return self.buckets[-1].end if self.buckets else None

    def span_s(self) -> float:
        """Seconds the reads kept span."""
        return self.total_span

    def _sums(self, window_s: float, newest: bool) -> tuple[float, float, float, Bucket] | None:
        """(count, carried, span, the last bucket taken) of whole buckets from the newest
        (or the oldest) until they span ``window_s``; None: the reads do not span it."""
        count = carried = span = 0.0
        for b in reversed(self.buckets) if newest else self.buckets:
            count, carried, span = count + b.count, carried + b.carried, span + b.span
            if span >= window_s - COVERED_SLACK_S:
                return count, carried, span, b
        return None

    def ber(self, window_s: float) -> float | None:
        """Errors over bits carried in the last ``window_s`` (None: not covered, or nothing
        carried)."""
        got = self._sums(window_s, True)
        return None if got is None else ratio(got[0], got[1])

    def first_ber(self, window_s: float) -> tuple[float, float] | None:
        """(BER, its window's middle time) over the first ``window_s`` of the reads."""
        got = self._sums(window_s, False)
        if got is None:
            return None
        ber = ratio(got[0], got[1])
        return None if ber is None else (ber, (self.buckets[0].start + got[3].end) / 2)

    def per_s(self, window_s: float) -> float | None:
        """The counter's rate over the last ``window_s`` (None: not covered)."""
        if window_s >= self.total_span > 0:  # all of it (the symbol errors' look)
            return self.total_count / self.total_span
        got = self._sums(window_s, True)
        return None if got is None or got[2] <= 0 else got[0] / got[2]


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
    counted_from: str  # FROM_BITS_RX, FROM_BITS, FROM_MLXLINK, FROM_BLOCKS: numerator / denominator
    denominator: str = BY_RATE_TIME  # BY_RX_BITS or BY_RATE_TIME


def ber_now(track: CableTrack | None, window_s: float) -> BerNow | None:
    """What the cable rules measure of a link's BER now (None: it counts no corrections)."""
    w = None if track is None else track.ber
    end = None if w is None else w.end()
    if w is None or end is None:
        return None
    now = w.ber(window_s)
    base = w.first_ber(window_s)
    if now is None or base is None or end - base[1] < window_s * 1.5:
        # the windows overlap: no trend yet
        return BerNow(now, None, None, w.counted_from, w.denominator)
    per_h = decades_per_hour(base[0], now, end - window_s / 2 - base[1])
    return BerNow(now, base[0], per_h, w.counted_from, w.denominator)


def rise(b: BerNow) -> tuple[float, float | None] | None:
    """How far a BER moved from its baseline: (decades, over how many seconds; None when
    unknown). Said as it happened: a minute's climb extrapolated to an hour ("+82
    decades/hour") reads as nonsense at 3 a.m."""
    if b.ber is None or b.before is None or b.ber <= 0 or b.before <= 0:
        return None
    dec = math.log10(b.ber / b.before)
    per_h = b.decades_per_h
    return dec, (dec / per_h * 3600.0 if per_h else None)


def ber_text(ber: float | None) -> str:
    """A BER as people read it: ``2.1e-07``."""
    return "?" if ber is None else f"{ber:.1e}"


def add_reads(
    tr: CableTrack,
    t: float,
    link: LinkSample,
    lr: LinkRates | None,
    up: bool,
    step_s: float,
    keep_s: float,
) -> None:
    """Put the fresh reads of frame ``t`` of ``link``'s corrected count (and an InfiniBand
    port's symbol errors) into its windows, each as the engine's rate since the read before
    x the span between the two. A link that is down adds nothing to the BER (a window
    after a flap starts once it is up); one whose bits carried are unknown neither."""
    if tr.read_t is not None and t <= tr.read_t:
        return  # a frame seen already (a pass with no new frame from this host)
    tr.read_t = t
    if lr is None:
        return
    rates = lr.rates
    symbols = rates.get(_SYMBOLS_RATE)
    if link.link_layer == "InfiniBand" and isinstance(symbols, float) and lr.span_s:
        tr.symbols.add(t, lr.span_s, symbols * lr.span_s, 0.0, step_s, keep_s)
    counted = corrected_count(link)
    if counted is None or not up:
        return
    # The frame's own read (ethtool -S), else the FEC's on optics rounds, or mlxlink's on
    # its rounds: the engine sets that span on the frame whose read made the rates, None on
    # those it is carried on.
    frm = counted[1]
    per_s = rates.get(_BLOCKS_RATE if frm == FROM_BLOCKS else _BITS_RATE)
    span = {FROM_BLOCKS: lr.slow_span_s, FROM_MLXLINK: lr.mlxlink_span_s}.get(frm, lr.span_s)
    if not (isinstance(per_s, float) and span):
        return
    rx = rates.get(_RX_BITS_RATE) if frm == FROM_BITS else None  # read with the frame's
    w = tr.ber
    if isinstance(rx, float) and rx > 0:
        w.counted_from, w.denominator, carried = FROM_BITS_RX, BY_RX_BITS, rx * span
    elif link.rate_gbps:
        w.counted_from, w.denominator = counted[1], BY_RATE_TIME
        carried = link.rate_gbps * 1e9 * span
    else:
        return
    w.add(t, span, per_s * span, carried, step_s, keep_s)


@dataclass(slots=True)
class CableTrack:
    """What the cable rules remember of one link across frames (RuleMemory.cables)."""

    last_t: float
    read_t: float | None = None  # the frame whose reads went into the windows last
    ber: ReadWindow = field(default_factory=ReadWindow)
    symbols: ReadWindow = field(default_factory=ReadWindow)  # IB symbol errors
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
