"""All series of all hosts, keyed per host and link (or GPU, or inference server).

``History.record`` turns one frame's sample and rates into the standard series, named
as the rate engine names its rates (:mod:`collectors.vocabulary`); each series is a
bounded :class:`~fabtop.core.series.Series`. Subjects that stop being reported are
forgotten, so memory stays bounded on nodes whose interfaces come and go. Times are on
the operator's axis: the pipeline places each frame (:mod:`fabtop.core.clock`). A
reading the rate engine ignored as a glitch never enters a tier.
"""

from __future__ import annotations

import copy
import os
import resource
import sys
from collections.abc import Callable, Iterable, Sequence

from collectors.numbers import ALL_ONES
from collectors.samples import HostSample, RateValue
from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.rates import HostRates
from fabtop.core.series import DEFAULT_COARSE_TYPECODE, DEFAULT_TIERS, FloatTypecode, Series

# A link, GPU or server not reported for this long loses its history (the finest tier's
# span: 15 min at the defaults); checked once a minute per host.
FORGET_AFTER_S = 900.0
PRUNE_EVERY_S = 60.0

SeriesKey = tuple[str, ...]

# Series whose coarse buckets also keep the maximum: short spikes (a pause storm, a
# burst of drops, a TTFT outlier) vanish in a 1-minute mean. Traffic and gauges do not
# come in such bursts, and a mean is what their charts want.
_SPIKY: frozenset[str] = frozenset((
    *(m.per_s for m in Metric if m.category != "traffic"),
    Derived.RX_PAUSE_TIME_RATIO,
    Derived.TX_PAUSE_TIME_RATIO,
    InferenceRate.TTFT_P50_S,
    InferenceRate.TTFT_P99_S,
    InferenceRate.ITL_P50_S,
    InferenceRate.ITL_P99_S,
))

# Link rates kept as one series each, under the rate's own name.
_LINK_RATES: tuple[str, ...] = (
    Derived.RX_BPS,
    Derived.TX_BPS,
    Metric.RX_PACKETS.per_s,
    Metric.TX_PACKETS.per_s,
    Metric.ECN_MARKED.per_s,
    Metric.CNP_SENT.per_s,
    Metric.CNP_HANDLED.per_s,
    Metric.RX_DISCARDS.per_s,
    Metric.RX_OUT_OF_BUFFER.per_s,
    Metric.RX_PHY_ERRORS.per_s,
    Derived.RDMA_SHARE,
)
# Per-priority rates: the aggregate series is the sum (counts) or the max (ratios).
_LINK_PRIO_RATES: tuple[tuple[str, bool], ...] = (
    (Metric.RX_PAUSE.per_s, False),
    (Metric.TX_PAUSE.per_s, False),
    (Derived.RX_PAUSE_TIME_RATIO, True),
    (Derived.TX_PAUSE_TIME_RATIO, True),
)
_PRIO_KEYS = tuple(str(p) for p in range(8))
_GPU_FIELDS = ("utilization_pct", "temperature_c", "power_w", "sm_clock_mhz", "memory_used_mib")
_INFERENCE_FIELDS: tuple[str, ...] = (
    InferenceRate.GENERATED_TOKENS_PER_S,
    InferenceRate.PROMPT_TOKENS_PER_S,
    InferenceRate.TTFT_P50_S,
    InferenceRate.ITL_P50_S,
)


def keeps_max(key: SeriesKey) -> bool:
    """Default policy: keep per-bucket maxima for spiky series (pauses, drops, latencies)."""
    if not key:
        return False
    # per-priority keys end in "" (all priorities) or the priority number
    name = key[-2] if len(key) > 1 and (key[-1] == "" or key[-1].isdigit()) else key[-1]
    return name in _SPIKY


class History:
    """All series of all hosts, keyed by tuples such as ``("gpu1", "eth2", "rx_bps")``."""

    __slots__ = ("_keep_max", "_keys", "_pruned", "_seen", "_series", "_typecode", "tiers")

    def __init__(
        self,
        tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
        keep_max: Callable[[SeriesKey], bool] = keeps_max,
        coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
    ) -> None:
        Series(tiers)  # validates the tiers
        self.tiers = tuple(tiers)
        self._keep_max = keep_max
        # "f" halves the coarse tiers (7 significant digits is plenty for a chart);
        # "d" keeps them exact
        self._typecode = coarse_typecode
        self._series: dict[SeriesKey, Series] = {}
        self._seen: dict[tuple[str, str], float] = {}  # (host, link/gpu/url) -> last time
        self._pruned: dict[str, float] = {}
        # (host, link) -> the series keys of its rates, built once, not per tick
        self._keys: dict[tuple[str, str], _LinkKeys] = {}

    def series(self, key: SeriesKey) -> Series:
        """The series for ``key``, created on first use."""
        s = self._series.get(key)
        if s is None:
            s = Series(self.tiers, self._keep_max(key), self._typecode)
            self._series[key] = s
        return s

    def get(self, key: SeriesKey) -> Series | None:
        """The series for ``key`` if it exists."""
        return self._series.get(key)

    def keys(self) -> Iterable[SeriesKey]:
        """Every key recorded so far."""
        return self._series.keys()

    @property
    def nbytes(self) -> int:
        """Bytes held by all series plus the index."""
        return sys.getsizeof(self._series) + sum(
            s.nbytes + sys.getsizeof(k) for k, s in self._series.items()
        )

    def _put(self, key: SeriesKey, t: float, value: float | None) -> None:
        # A series is created by its first value; a metric the host never reports
        # costs nothing, yet an existing series records the hole.
        if value is None:
            s = self._series.get(key)
            if s is not None:
                s.append(t, None)
        else:
            self.series(key).append(t, value)

    def record(self, t: float, sample: HostSample, rates: HostRates) -> None:
        """Append the standard series of one frame (``t``: its unix time on the operator's axis)."""
        host = sample.host
        put = self._put
        for lid, link in sample.links.items():
            lr = rates.links.get(lid)
            if lr is not None:
                self._record_link_rates(host, lid, t, lr.rates, lr.gap)
            down = link.metrics.get(Metric.LINK_DOWN_EVENTS)
            if not isinstance(down, int) or down in ALL_ONES or (
                lr is not None and Metric.LINK_DOWN_EVENTS in lr.glitched
            ):
                down = None  # a glitched count is no count (the next good read follows)
            put((host, lid, Metric.LINK_DOWN_EVENTS), t, down)
            put((host, lid, "temperature_c"), t, link.temperature_c)
        for gpu in sample.gpus:
            gid = f"gpu{gpu.index}"
            for name in _GPU_FIELDS:
                put((host, gid, name), t, getattr(gpu, name))
            thermal = any("thermal" in r.lower() for r in gpu.throttle_reasons)
            put((host, gid, "thermal_slowdown"), t, 1.0 if thermal else 0.0)
        for url, values in rates.inference.items():
            for name in _INFERENCE_FIELDS:
                put((host, url, name), t, values.get(name))
        seen = self._seen
        for subject in (*sample.links, *(f"gpu{g.index}" for g in sample.gpus), *rates.inference):
            seen[(host, subject)] = t
        if t - self._pruned.get(host, t - PRUNE_EVERY_S) >= PRUNE_EVERY_S:
            self._prune(host, t)

    def _prune(self, host: str, t: float) -> None:
        # Interfaces come and go (veth pairs of containers): forget the series of a subject
        # gone longer than the finest tier spans, so memory stays bounded on such nodes.
        self._pruned[host] = t
        gone = {subj for (h, subj), last in self._seen.items()
                if h == host and t - last > FORGET_AFTER_S}
        if not gone:
            return
        for key in [k for k in self._series if k[0] == host and k[1] in gone]:
            del self._series[key]
        for subj in gone:
            del self._seen[(host, subj)]
            self._keys.pop((host, subj), None)

    def _record_link_rates(
        self, host: str, lid: str, t: float, r: dict[str, RateValue], gap: bool
    ) -> None:
        keys = self._keys.get((host, lid))
        if keys is None:
            keys = self._keys[(host, lid)] = _link_keys(host, lid)
        put = self._put
        if gap:
            r = {}
        for name, key in keys[0]:
            rv = r.get(name)
            if isinstance(rv, dict):  # ecn_marked may be per priority (rx_prio{p}_marked)
                put(key, t, sum(rv.values()) if rv else None)
            else:
                put(key, t, rv)
        series = self._series
        for name, is_ratio, total_key, prio_keys in keys[1]:
            v = r.get(name)
            per = v if isinstance(v, dict) else {}
            total: float | None
            if isinstance(v, float):
                total = v
            elif per:
                total = max(per.values()) if is_ratio else sum(per.values())
            else:
                total = None
            put(total_key, t, total)
            for p, pkey in enumerate(prio_keys):
                pv = per.get(p)
                if pv is not None:
                    put(pkey, t, pv)
                elif (s := series.get(pkey)) is not None:
                    s.append(t, None)  # a priority that had values: its hole is recorded


_LinkKeys = tuple[
    tuple[tuple[str, SeriesKey], ...],
    tuple[tuple[str, bool, SeriesKey, tuple[SeriesKey, ...]], ...],
]


def _link_keys(host: str, lid: str) -> _LinkKeys:
    return (
        tuple((name, (host, lid, name)) for name in _LINK_RATES),
        tuple((name, is_ratio, (host, lid, name, ""),
               tuple((host, lid, name, pk) for pk in _PRIO_KEYS))
              for name, is_ratio in _LINK_PRIO_RATES),
    )  # fmt: skip


# The series History.record creates for one mlx5 RoCE port with one lossless priority
# (priority 3, as in the captures and the demo): link suffixes of the series keys.
ROCE_LINK_SERIES: tuple[tuple[str, ...], ...] = (
    (Metric.LINK_DOWN_EVENTS,),
    ("temperature_c",),
    *((name,) for name in _LINK_RATES),
    *((name, p) for name, _ in _LINK_PRIO_RATES for p in ("", "3")),
)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def estimate_24h(
    links: int,
    hours: float = 24.0,
    link_series: Sequence[tuple[str, ...]] = ROCE_LINK_SERIES,
    tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
    coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
) -> tuple[int, int]:
    """History bytes and RSS growth for ``links`` RoCE links after ``hours`` at 1 Hz.

    One series of each kind is filled point by point (1 Hz for the raw ring's span, one
    point per finest coarse bucket before, which fills the tiers alike), then copied for
    every link, so the figure costs seconds, not a day of appends.
    """
    span = hours * 3600.0
    t0 = 1_700_000_000.0
    raw_span = tiers[0][0] * tiers[0][1]
    coarse_step = tiers[1][0] if len(tiers) > 1 else tiers[0][0]
    templates: dict[bool, Series] = {}
    for keep in (False, True):
        s = Series(tiers, keep, coarse_typecode)
        t = 0.0
        while t < span:
            s.append(t0 + t, float(int(t) % 97))
            t += coarse_step if t < span - raw_span else tiers[0][0]
        templates[keep] = s
    rss0 = _rss_bytes()
    hist = History(tiers, coarse_typecode=coarse_typecode)
    for i in range(links):
        host, lid = f"host{i // 2}", f"eth{i % 2}"
        for suffix in link_series:
            key = (host, lid, *suffix)
            hist._series[key] = copy.deepcopy(templates[hist._keep_max(key)])
    rss = _rss_bytes() - rss0
    return hist.nbytes, rss
