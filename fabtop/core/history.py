"""All series of all hosts, keyed per host and link (or GPU, or inference server).

``History.record`` turns one frame's sample and rates into the standard series, named
as the rate engine names its rates (:mod:`collectors.vocabulary`); each series is a
bounded :class:`~fabtop.core.series.Series`, and a host's series share one ring of raw
times (:class:`~fabtop.core.series.Clock`: they are appended at its frames' times).
Subjects that stop being reported are forgotten, so memory stays bounded on nodes whose
interfaces come and go. Times are on the operator's axis: the pipeline places each frame
(:mod:`fabtop.core.clock`). A reading the rate engine ignored as a glitch never enters a
tier.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from typing import cast

from collectors.numbers import ALL_ONES, is_digits
from collectors.samples import GpuSample, HostSample, RateValue
from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.rates import HostRates
from fabtop.core.series import (
    DEFAULT_COARSE_TYPECODE,
    DEFAULT_TIERS,
    Clock,
    FloatTypecode,
    Series,
    append_all,
)

# A link, GPU or server not reported for this long loses its history (the finest tier's
# span: 15 min at the defaults); checked once a minute per host.
FORGET_AFTER_S = 900.0
PRUNE_EVERY_S = 60.0

SeriesKey = tuple[str, ...]

# Numbers for History.generation, unique across instances: a view that groups the keys
# keeps its grouping while the number is the same (a replay seek's fresh History differs).
_GENERATIONS = itertools.count(1)

# The longest span a view charts (the link detail's and the timeline's 6h): coarse
# maxima are kept only in the tiers that serve spans up to it (the 10-s tier).
CHART_SPAN_S = 6 * 3600.0

# Series whose coarse buckets also keep the maximum: those a view charts the maxima of,
# since short spikes (a pause storm, a burst of drops) vanish in a 1-minute mean. The
# link detail's pause chart (per priority), its congestion and loss charts, and the
# timeline's pause (the worst priority), ECN and drops tracks; nothing else reads
# maxima, so nothing else pays for them.
_MAX_LEAVES: frozenset[str] = frozenset(
    (
        Metric.ECN_MARKED.per_s,
        Metric.CNP_SENT.per_s,
        Metric.CNP_HANDLED.per_s,
        Metric.RX_DISCARDS.per_s,
        Metric.RX_OUT_OF_BUFFER.per_s,
        Metric.RX_PHY_ERRORS.per_s,
    )
)
_MAX_PER_PRIORITY: frozenset[str] = frozenset((Metric.RX_PAUSE.per_s, Metric.TX_PAUSE.per_s))
_MAX_ALL_PRIORITIES: frozenset[str] = frozenset(
    (Derived.RX_PAUSE_TIME_RATIO, Derived.TX_PAUSE_TIME_RATIO)
)

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
    """Default policy: keep per-bucket maxima for the series a view charts maxima of."""
    if len(key) > 1 and key[-1] == "":  # all priorities (the worst, or the sum)
        return key[-2] in _MAX_ALL_PRIORITIES
    if len(key) > 1 and is_digits(key[-1]):  # one priority
        return key[-2] in _MAX_PER_PRIORITY
    return bool(key) and key[-1] in _MAX_LEAVES


class _Row:
    """The series of one subject for a tuple of fields: those that exist, and the rest.

    Resolved once rather than looked up by key every tick. A field's series is created
    by its first value (a metric the host never reports costs nothing); an existing one
    records every tick, a hole included.
    """

    __slots__ = ("fields", "keys", "names", "series", "want")

    def __init__(self, hist: History, host: str, subject: str, fields: tuple[str, ...]) -> None:
        self.fields = fields
        self.keys: tuple[SeriesKey, ...] = tuple((host, subject, f) for f in fields)
        self.names: list[str] = []  # the fields with a series, in field order
        self.series: list[Series] = []  # their series
        self.want: frozenset[str] = frozenset()  # the fields without one yet
        self._resolve(hist)

    def _resolve(self, hist: History) -> None:
        self.names, self.series = [], []
        for f, key in zip(self.fields, self.keys, strict=True):
            s = hist.get(key)
            if s is not None:
                self.names.append(f)
                self.series.append(s)
        self.want = frozenset(self.fields).difference(self.names)

    def grow(self, hist: History, t: float, value_of: Callable[[str], object]) -> None:
        """Create, in field order (the order keys() lists), the series of fields with a value."""
        made = False
        for f, key in zip(self.fields, self.keys, strict=True):
            if f in self.want and (v := value_of(f)) is not None:
                hist._new(key).append(t, cast("float", v))
                made = True
        if made:
            self._resolve(hist)


class _Prio:
    """One per-priority rate of one link: the aggregate series and one per priority.

    While a link reports the rate on one priority only (the usual lossless port), the
    aggregate is that priority's value: both keys then name one series (``alias``), until
    a tick tells them apart and the aggregate gets a copy of its own.
    """

    __slots__ = (
        "alias",
        "has_total",
        "is_ratio",
        "keys",
        "name",
        "only",
        "prios",
        "series",
        "total_key",
        "want",
    )

    def __init__(self, hist: History, host: str, lid: str, name: str, is_ratio: bool) -> None:
        self.name = name
        self.is_ratio = is_ratio
        self.total_key: SeriesKey = (host, lid, name, "")
        self.keys: tuple[SeriesKey, ...] = tuple((host, lid, name, pk) for pk in _PRIO_KEYS)
        self.has_total = False
        self.alias = False  # the aggregate is the one priority's series
        self.series: list[Series] = []  # the aggregate's series (if any), then the priorities'
        self.prios: list[int] = []  # the priorities with a series
        self.want: set[int] = set()  # the priorities without one yet
        self.only = -1  # the one priority, when the aggregate and it are all the series
        self._resolve(hist)

    def _resolve(self, hist: History) -> None:
        total = hist.get(self.total_key)
        self.has_total = total is not None
        self.series, self.prios, self.want = [], [], set()
        for p, key in enumerate(self.keys):
            s = hist.get(key)
            if s is None:
                self.want.add(p)
            else:
                self.prios.append(p)
                self.series.append(s)
        self.alias = total is not None and total in self.series
        if total is not None and not self.alias:
            self.series.insert(0, total)
        self.only = self.prios[0] if self.has_total and len(self.prios) == 1 else -1

    def split(self, hist: History, total: float | None, per: dict[int, float]) -> None:
        """The aggregate gets its own series when this tick tells it from the one priority."""
        x = per.get(self.only)
        if not (total is x if total is None or x is None else total == x):
            hist._own(self.total_key)
            self._resolve(hist)

    def grow(self, hist: History, t: float, total: float | None, per: dict[int, float]) -> None:
        """Create (the aggregate first, then by priority) the series that get a first value."""
        if not self.has_total and total is not None:
            if not self.prios and len(per) == 1 and total in per.values():  # one priority
                (p,) = per
                hist._new(self.total_key, self.keys[p]).append(t, total)
                self._resolve(hist)
                return
            hist._new(self.total_key).append(t, total)
        for p in range(len(self.keys)):
            if p in self.want and (pv := per.get(p)) is not None:
                hist._new(self.keys[p]).append(t, pv)
        self._resolve(hist)


class _Link:
    __slots__ = ("down", "down_key", "prio", "prio_live", "rates", "temp", "temp_key")

    def __init__(self, hist: History, host: str, lid: str) -> None:
        self.rates = _Row(hist, host, lid, _LINK_RATES)
        self.prio = tuple(_Prio(hist, host, lid, n, r) for n, r in _LINK_PRIO_RATES)
        self.prio_live = any(g.series for g in self.prio)  # else: skipped while all are None
        self.down_key: SeriesKey = (host, lid, _DOWN)
        self.down = hist.get(self.down_key)
        self.temp_key: SeriesKey = (host, lid, "temperature_c")
        self.temp = hist.get(self.temp_key)


class _Gpu:
    __slots__ = ("fields", "gid", "row", "thermal", "thermal_key")

    def __init__(self, hist: History, host: str, gid: str) -> None:
        self.gid = gid
        self.fields = _Row(hist, host, gid, _GPU_FIELDS)
        self.thermal_key: SeriesKey = (host, gid, "thermal_slowdown")
        self.thermal = hist.get(self.thermal_key)
        # once every field has a series: them and the thermal one, as record() lists values
        self.row: list[Series] = []


class _Host:
    """One host's subjects with their series resolved, and when each was last reported."""

    __slots__ = ("gpus", "links", "pruned", "seen", "servers")

    def __init__(self) -> None:
        self.links: dict[str, _Link] = {}
        self.gpus: dict[int, _Gpu] = {}
        self.servers: dict[str, _Row] = {}
        self.seen: dict[str, float] = {}  # link id, "gpu<i>" or url -> last time reported
        self.pruned: float | None = None


_DOWN = Metric.LINK_DOWN_EVENTS
_PRIO_NAMES = frozenset(name for name, _ in _LINK_PRIO_RATES)
_NO_RATES: dict[str, RateValue] = {}  # a gap tick's rates (never written to)
_NO_PRIOS: dict[int, float] = {}


def _number(v: object) -> float | None:
    """A value as Series.append takes it; a rate per priority where one value is
    recorded (a dict): the sum."""
    if v is None:
        return None
    if isinstance(v, dict):
        return sum(v.values()) if v else None
    return float(cast("float", v))


class History:
    """All series of all hosts, keyed by tuples such as ``("gpu1", "eth2", "rx_bps")``."""

    __slots__ = ("_clocks", "_hosts", "_keep_max", "_series", "_typecode", "generation", "tiers")

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
        # One raw time ring per host: its series are appended at the same frame times.
        self._clocks: dict[str, Clock] = {}
        # Per host, its subjects' series resolved once: record() is the hot path (about a
        # hundred points per host each second) and looks no key up in the steady state.
        self._hosts: dict[str, _Host] = {}
        # Changes whenever a key comes or goes (or a key gets a series of its own).
        self.generation = next(_GENERATIONS)

    def series(self, key: SeriesKey) -> Series:
        """The series for ``key``, created on first use."""
        s = self._series.get(key)
        if s is None:
            s = self._new(key)
            if len(key) > 1:
                self._unresolve(key[0], {key[1]})  # record() appends to it from now on
        return s

    def get(self, key: SeriesKey) -> Series | None:
        """The series for ``key`` if it exists."""
        return self._series.get(key)

    def keys(self) -> Iterable[SeriesKey]:
        """Every key recorded so far."""
        return self._series.keys()

    @property
    def appended(self) -> int:
        """Slots written in every host's clock: it grows whenever a newer point comes."""
        return sum(c.n for c in self._clocks.values())

    @property
    def nbytes(self) -> int:
        """Bytes held by all series (their hosts' clocks included) plus the index."""
        distinct = {id(s): s for s in self._series.values()}  # a series two keys name: once
        return (
            sys.getsizeof(self._series)
            + sum(map(sys.getsizeof, self._series))
            + sum(s.nbytes for s in distinct.values())
        )

    def _new(self, key: SeriesKey, also: SeriesKey | None = None) -> Series:
        """The series of ``key``, created if new; ``also``: a second key that names it."""
        s = self._series.get(key)
        if s is None:
            host = key[0] if key else ""
            clock = self._clocks.get(host)
            if clock is None:
                clock = self._clocks[host] = Clock(self.tiers[0][1])
            keep = self._keep_max(key) or (also is not None and self._keep_max(also))
            s = self._series[key] = Series(self.tiers, keep, self._typecode, clock, CHART_SPAN_S)
            if also is not None:
                self._series[also] = s
            self.generation = next(_GENERATIONS)
        return s

    def _own(self, key: SeriesKey) -> None:
        """``key`` gets a copy of the series it shares with another key."""
        self._series[key] = self._series[key].copy()
        self.generation = next(_GENERATIONS)

    def _drop(self, keys: Iterable[SeriesKey]) -> None:
        gone = [self._series.pop(key) for key in keys]
        if gone:
            self.generation = next(_GENERATIONS)
            named = {id(s) for s in self._series.values()}  # one two keys named may stay
            for s in gone:
                if id(s) not in named:
                    s.drop()

    def record(self, t: float, sample: HostSample, rates: HostRates) -> None:
        """Append the standard series of one frame (``t``: its unix time on the operator's axis)."""
        host = sample.host
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        seen = h.seen
        # The existing series and their values, appended in one loop at the end; a series
        # is created (with its first value) where its subject is read, so keys() keeps the
        # order of first values.
        row: list[Series] = []
        values: list[object] = []
        links, lrates = h.links, rates.links
        for lid, link in sample.links.items():
            c = links.get(lid)
            if c is None:
                c = links[lid] = _Link(self, host, lid)
            lr = lrates.get(lid)
            if lr is not None:
                lrs = _NO_RATES if lr.gap else lr.rates
                get = lrs.get
                r = c.rates
                row += r.series
                values += map(get, r.names)
                # a metric without a series yet, or per-priority rates: are they in there?
                if r.want and not lrs.keys().isdisjoint(r.want):
                    r.grow(self, t, lambda name: _number(get(name)))  # noqa: B023 (called right here)
                if c.prio_live or not lrs.keys().isdisjoint(_PRIO_NAMES):
                    self._record_prio(c, t, get, row, values)
            down = link.metrics.get(_DOWN)
            if (
                not isinstance(down, int)
                or down in ALL_ONES
                or (lr is not None and _DOWN in lr.glitched)
            ):
                down = None  # a glitched count is no count (the next good read follows)
            if c.down is not None:
                row.append(c.down)
                values.append(down)
            elif down is not None:
                c.down = self._new(c.down_key)
                c.down.append(t, down)
            temp = link.temperature_c
            if c.temp is not None:
                row.append(c.temp)
                values.append(temp)
            elif temp is not None:
                c.temp = self._new(c.temp_key)
                c.temp.append(t, temp)
            seen[lid] = t
        gpus = h.gpus
        for gpu in sample.gpus:
            g = gpus.get(gpu.index)
            if g is None:
                g = gpus[gpu.index] = _Gpu(self, host, f"gpu{gpu.index}")
            reasons = gpu.throttle_reasons
            # as the driver words them: "SW Thermal Slowdown", "HW_THERMAL_SLOWDOWN", ...
            thermal = 1.0 if reasons and any("thermal" in why.lower() for why in reasons) else 0.0
            if g.row:  # all its series exist: _GPU_FIELDS, read as attributes, then thermal
                row += g.row
                values += (
                    gpu.utilization_pct,
                    gpu.temperature_c,
                    gpu.power_w,
                    gpu.sm_clock_mhz,
                    gpu.memory_used_mib,
                    thermal,
                )
            else:
                self._record_gpu(g, t, gpu, thermal, row, values)
            seen[g.gid] = t
        servers = h.servers
        for url, got in rates.inference.items():
            srv = servers.get(url)
            if srv is None:
                srv = servers[url] = _Row(self, host, url, _INFERENCE_FIELDS)
            row += srv.series
            values += map(got.get, srv.names)
            if srv.want and not got.keys().isdisjoint(srv.want):
                srv.grow(self, t, got.get)
            seen[url] = t
        try:
            append_all(t, row, cast("list[float | None]", values))
        except TypeError:
            # A rate given per priority where one value is recorded (ecn_marked may come
            # as rx_prio{p}_marked): its series gets the sum. Not checked value by value,
            # at a cost every tick: the array refused it before its series changed, and
            # the series appended already drop the repeated time.
            append_all(t, row, [_number(v) for v in values])
        last = t - PRUNE_EVERY_S if h.pruned is None else h.pruned
        if t - last >= PRUNE_EVERY_S:
            self._prune(h, host, t)

    def _record_gpu(
        self,
        g: _Gpu,
        t: float,
        gpu: GpuSample,
        thermal: float,
        row: list[Series],
        values: list[object],
    ) -> None:
        """A GPU with series still to create (its first ticks; a field it never reports)."""
        f = g.fields
        row += f.series
        values += [getattr(gpu, name) for name in f.names]
        if any(getattr(gpu, name) is not None for name in f.want):
            f.grow(self, t, partial(getattr, gpu))
        if g.thermal is not None:
            row.append(g.thermal)
            values.append(thermal)
        else:
            g.thermal = self._new(g.thermal_key)
            g.thermal.append(t, thermal)
        if not f.want:
            g.row = [*f.series, g.thermal]

    def _record_prio(
        self,
        c: _Link,
        t: float,
        get: Callable[[str], RateValue | None],
        row: list[Series],
        values: list[object],
    ) -> None:
        for g in c.prio:
            v = get(g.name)
            if g.only >= 0 and v.__class__ is dict and len(v) == 1 and g.only in v:
                # The usual lossless port: one priority, as before. The aggregate of one
                # value: max() gives it, sum() gives 0 + it (one series for both, mostly).
                x = v[g.only]
                row += g.series
                if not g.alias:
                    values.append(x if g.is_ratio else 0 + x)
                values.append(x)
                continue
            if v is None and not g.series:
                continue  # the link never reported it
            per = v if isinstance(v, dict) else _NO_PRIOS
            total: float | None
            if isinstance(v, float):
                total = v
            elif per:
                total = max(per.values()) if g.is_ratio else sum(per.values())
            else:
                total = None
            if g.alias:
                g.split(self, total, per)
            row += g.series
            if g.has_total and not g.alias:
                values.append(total)
            values += map(per.get, g.prios)  # None: a priority that had values, its hole
            if (per and not g.want.isdisjoint(per)) or (total is not None and not g.has_total):
                g.grow(self, t, total, per)
                c.prio_live = True

    def _prune(self, h: _Host, host: str, t: float) -> None:
        # Interfaces come and go (veth pairs of containers): forget the series of a subject
        # gone longer than the finest tier spans, so memory stays bounded on such nodes.
        h.pruned = t
        gone = {subj for subj, last in h.seen.items() if t - last > FORGET_AFTER_S}
        if not gone:
            return
        self._drop([k for k in self._series if k[0] == host and k[1] in gone])
        for subj in gone:
            del h.seen[subj]
        self._unresolve(host, gone)

    def forget(self, hosts: Collection[str]) -> None:
        """Drop every series of ``hosts`` (hosts removed for good), in one pass over the keys."""
        drop = set(hosts)
        if not drop:
            return
        self._drop([k for k in self._series if k[0] in drop])
        for host in drop:
            self._hosts.pop(host, None)
            self._clocks.pop(host, None)

    def _unresolve(self, host: str, subjects: set[str]) -> None:
        """Forget the resolved series of these subjects: record() looks them up again."""
        h = self._hosts.get(host)
        if h is None:
            return
        for subj in subjects:
            h.links.pop(subj, None)
            h.servers.pop(subj, None)
        for index in [i for i, g in h.gpus.items() if g.gid in subjects]:
            del h.gpus[index]
