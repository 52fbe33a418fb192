"""Rates of counters read at slow cadence and carried between reads (fabtop/core/rates.py).

A counter read on slow ticks (the FEC's on optics rounds 30 s or more apart, the CPU
thermal throttle count on slow ticks) rides unchanged on the frames between its reads. A
rate per frame would say 0 for those frames, then the whole delta over one frame (a spike
~30x too high). Its rate is the change between two *fresh* reads over the node time
between them, and holds on the frames until the next read: a chart at 3 a.m. then shows
the rate the counter really ran at on every frame (a step per read), and the exporter's
gauge is there at every scrape. Before the second read it is unknown (None), never 0; a
counter that did not move between two reads is 0; one that went back (a driver reload) or
beyond belief starts over from that read. The pre-FEC BER's windows are made of the same
reads (fabtop/core/ber.py: each read's rate x its span, ``LinkRates.slow_span_s``).

mlxlink's corrected bits (the link's PHY_CORRECTED_BITS only where ``ethtool -S`` counts
none: collectors/normalize.py MLXLINK_MAP) are read at a time of their own, one device per
optics round (every N rounds for N devices), ``LinkSample.mlxlink_read_ns``: the same path
with a read of their own (``mlxlink_read``). A clear by anyone (``mlxlink --pc``) takes
them back: a reset, which starts over from that read.

A sample that says no read time (one built by hand, or read from Prometheus, whose every
step is a read) had its slow counters read with its frame: the frame's time is the read's,
and they take this same path. Hand-built samples that carry a value between reads say so
with a read time, as the probes' frames do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from collectors.normalize import MLXLINK_MAP, SLOW_METRICS
from collectors.numbers import ALL_ONES
from collectors.samples import HostSample, LinkSample, MetricValue, RateValue
from fabtop.core.believe import bound_kind, bounds

if TYPE_CHECKING:
    from fabtop.core.rates import LinkRates  # rates.py calls slow_rates with its LinkRates

# The slow metrics' rate names and bound kinds (believe.bound_kind).
_KINDS: dict[str, tuple[str, int]] = {m: (m.per_s, bound_kind(m)) for m in SLOW_METRICS}
RATE_NAMES: tuple[str, ...] = tuple(per_s for per_s, _ in _KINDS.values())
# ... and mlxlink's (its corrected bits, where they are the link's)
_MLX_KINDS: dict[str, tuple[str, int]] = {m: (m.per_s, bound_kind(m)) for m in MLXLINK_MAP}
MLX_RATE_NAMES: tuple[str, ...] = tuple(per_s for per_s, _ in _MLX_KINDS.values())
# The CPU thermal throttle count (the cputhrottle section), as between_reads takes it.
_CPU = "cpu_throttle"
_CPU_RATE = "cpu_throttle_per_s"
_CPU_KINDS = {_CPU: (_CPU_RATE, 4)}  # an event count (believe.bound_kind 4)


@dataclass(slots=True)
class SlowRead:
    """The last fresh read of slow-cadence counters and the rates it made against the read
    before (empty: no read before, or each counter started over): held until the next."""

    read_ns: int
    values: dict[str, MetricValue]
    rates: dict[str, RateValue]
    span_s: float | None = None  # seconds from the read before (None: the first read)


def between_reads(
    t: int,
    values: dict[str, MetricValue],
    last: SlowRead | None,
    kinds: Mapping[str, tuple[str, int]],
    events_per_s: float,
) -> tuple[SlowRead, list[str]]:
    """A fresh read at node time ``t`` with its rates against ``last`` (the read before),
    and the names without one because their count went back (a reset) or beyond belief
    (a glitch): each starts over from this read. ``kinds``: name -> (rate name, bound kind).
    """
    rates: dict[str, RateValue] = {}
    bad: list[str] = []
    span = None
    if last is not None and t > last.read_ns:
        span = (t - last.read_ns) / 1e9
        for name, v in values.items():
            pv = last.values.get(name)
            if not (isinstance(v, int) and isinstance(pv, int)):
                continue
            d = v - pv
            rname, kind = kinds[name]
            if 0 <= d <= bounds(None, span, events_per_s)[kind] and v not in ALL_ONES:
                rates[rname] = d / span
            else:
                bad.append(name)
    return SlowRead(t, values, rates, span), bad


def has_slow(link: LinkSample) -> bool:
    """True when ``link`` has a metric read at slow cadence (three lookups: most have none)."""
    return link.mlxlink_read_ns is not None or _has_fec(link)


def _has_fec(link: LinkSample) -> bool:
    return link.slow_read_ns is not None or any(m in link.metrics for m in SLOW_METRICS)


def link_slow_read(
    link: LinkSample, last: SlowRead | None, events_per_s: float, frame_ns: int
) -> tuple[SlowRead | None, list[str]]:
    """The last read of ``link``'s slow metrics (``SLOW_METRICS``, read at
    ``link.slow_read_ns``, else with the frame at ``frame_ns``; None: it has none), made now
    if this read is new, and the metrics that started over at it."""
    if not _has_fec(link):
        return None, []
    t = frame_ns if link.slow_read_ns is None else link.slow_read_ns
    return _read(link, t, last, _KINDS, events_per_s)


def _read(
    link: LinkSample,
    t: int,
    last: SlowRead | None,
    kinds: Mapping[str, tuple[str, int]],
    events_per_s: float,
) -> tuple[SlowRead, list[str]]:
    """The read at ``t`` of ``link``'s metrics named in ``kinds``: ``last`` itself when it is
    that read (carried: the rate between the last two reads holds), else made now."""
    if last is not None and t == last.read_ns:
        return last, []
    values = {n: v for n, v in link.metrics.items() if n in kinds}
    return between_reads(t, values, last, kinds, events_per_s)


def mlxlink_read(
    link: LinkSample, last: SlowRead | None, events_per_s: float
) -> tuple[SlowRead | None, list[str]]:
    """The last read of mlxlink's corrected bits on ``link`` (None: they are not its), made
    now if this read is new, and the metrics that started over at it (a clear)."""
    t = link.mlxlink_read_ns
    if t is None:
        return None, []
    return _read(link, t, last, _MLX_KINDS, events_per_s)


def slow_rates(
    link: LinkSample,
    lr: LinkRates,
    last: tuple[SlowRead | None, SlowRead | None],
    events_per_s: float,
    frame_ns: int,
) -> tuple[SlowRead | None, SlowRead | None]:
    """Put the rates of ``link``'s slow metrics on ``lr`` in place of per-frame ones: those
    between its last two fresh reads (between_reads), the FEC's and mlxlink's
    each at their own read times (``last``: the last read of each); one that started over
    is a gap, as a reset of any counter is."""
    read, bad = link_slow_read(link, last[0], events_per_s, frame_ns)
    mlx, mbad = mlxlink_read(link, last[1], events_per_s)
    for rname in (*RATE_NAMES, *MLX_RATE_NAMES) if mlx is not None else RATE_NAMES:
        lr.rates.pop(rname, None)
    if read is not None:
        lr.rates.update(read.rates)
        if read is not last[0] and read.rates:
            lr.slow_span_s = read.span_s
    if mlx is not None:
        lr.rates.update(mlx.rates)
        if mlx is not last[1] and mlx.rates:
            lr.mlxlink_span_s = mlx.span_s
    for name in (*bad, *mbad):
        if name not in lr.norm_reset:
            lr.norm_reset.append(name)
        lr.gap = True
    return read, mlx


def first_reads(
    link: LinkSample,
    lid: str,
    into: tuple[dict[str, SlowRead], dict[str, SlowRead]],
    events_per_s: float,
    frame_ns: int,
) -> None:
    """The first reads of ``link``'s slow metrics (the FEC's, mlxlink's) ``into`` the
    baseline's maps by link id ``lid``."""
    read = link_slow_read(link, None, events_per_s, frame_ns)[0]
    if read is not None:
        into[0][lid] = read
    mlx = mlxlink_read(link, None, events_per_s)[0]
    if mlx is not None:
        into[1][lid] = mlx


def cpu_read(
    sample: HostSample, last: SlowRead | None, events_per_s: float
) -> tuple[SlowRead | None, float | None, bool]:
    """The host's last read of its CPU thermal throttle count (None: no count; no read time:
    read with the frame), its rate, and whether this read glitched (rose beyond any event
    rate): said once, on the read; a count that went down was reset, said by none."""
    n, t = sample.cpu_throttle_count, sample.cpu_throttle_read_ns
    if n is None:
        return None, None, False
    if t is None:
        t = sample.clock_ns
    if last is not None and t == last.read_ns:
        r = last.rates.get(_CPU_RATE)
        return last, r if isinstance(r, float) else None, False
    read, bad = between_reads(t, {_CPU: n}, last, _CPU_KINDS, events_per_s)
    r = read.rates.get(_CPU_RATE)
    pv = last.values.get(_CPU) if last is not None else None
    glitch = bool(bad) and isinstance(pv, int) and pv <= n and n not in ALL_ONES
    return read, r if isinstance(r, float) else None, glitch
