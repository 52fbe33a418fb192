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

A sample that says no read time (one built by hand, or read from Prometheus, whose every
step is a read) had its slow counters read with its frame: the frame's time is the read's,
and they take this same path. Hand-built samples that carry a value between reads say so
with a read time, as the probes' frames do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from collectors.normalize import SLOW_METRICS
from collectors.numbers import ALL_ONES
from collectors.samples import HostSample, LinkSample, MetricValue, RateValue
from fabtop.core.believe import bound_kind, bounds

# The slow metrics' rate names and bound kinds (believe.bound_kind).
_KINDS: dict[str, tuple[str, int]] = {m: (m.per_s, bound_kind(m)) for m in SLOW_METRICS}
RATE_NAMES: tuple[str, ...] = tuple(per_s for per_s, _ in _KINDS.values())
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
    """True when ``link`` has a metric read at slow cadence (two lookups: most have none)."""
    return link.slow_read_ns is not None or any(m in link.metrics for m in SLOW_METRICS)


def link_slow_read(
    link: LinkSample, last: SlowRead | None, events_per_s: float, frame_ns: int
) -> tuple[SlowRead | None, list[str]]:
    """The last read of ``link``'s slow metrics (``SLOW_METRICS``, read at
    ``link.slow_read_ns``, else with the frame at ``frame_ns``; None: it has none), made now
    if this read is new, and the metrics that started over at it."""
    if not has_slow(link):
        return None, []
    t = frame_ns if link.slow_read_ns is None else link.slow_read_ns
    if last is not None and t == last.read_ns:
        return last, []  # carried: the rate between the last two reads holds
    values = {n: v for n, v in link.metrics.items() if n in SLOW_METRICS}
    return between_reads(t, values, last, _KINDS, events_per_s)


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
