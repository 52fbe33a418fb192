"""Rate engine: per-second rates from two consecutive frames of one host (DESIGN.md §4).

Rates divide counter deltas by the *remote* time between frames (``clock_ns``),
never by when the bytes arrived, so SSH jitter does not show up as throughput
jitter. ``/proc/uptime`` never steps, so when the wall clock disagrees with it the
uptime delta is used instead. A counter that goes backwards is a reset: it gets a
new baseline and no rate, never a negative rate or a spike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from collectors.samples import HostSample, InferenceSample, LinkSample, RateValue
from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.quantile import histogram_quantile

# Wall clock and uptime may differ by rounding (uptime has 10 ms resolution) and by
# slewing; anything beyond this is a step (NTP, manual date) and must not become a spike.
CLOCK_STEP_TOLERANCE_S = 0.25
CLOCK_STEP_TOLERANCE_FRAC = 0.02

# Legacy InfiniBand PMA counters (sysfs ports/N/counters; 4- to 32-bit, they stop at
# their maximum) and the normalized metric each feeds (DESIGN.md §3), with the 64-bit
# counters_ext name that the parser prefers when the port has it.
_IB_SATURABLE: dict[str, tuple[Metric, str | None]] = {
    "port_rcv_data": (Metric.RX_BYTES, "port_rcv_data_64"),
    "port_xmit_data": (Metric.TX_BYTES, "port_xmit_data_64"),
    "port_rcv_packets": (Metric.RX_PACKETS, "port_rcv_packets_64"),
    "port_xmit_packets": (Metric.TX_PACKETS, "port_xmit_packets_64"),
    "port_xmit_wait": (Metric.XMIT_WAIT, None),
    "port_xmit_discards": (Metric.RX_DISCARDS, None),
    "port_rcv_errors": (Metric.RX_DISCARDS, None),
    "symbol_error": (Metric.RX_PHY_ERRORS, None),
    "port_rcv_remote_physical_errors": (Metric.RX_PHY_ERRORS, None),
    "link_downed": (Metric.LINK_DOWN_EVENTS, None),
}

# The rate name of every counter, built once: the per-tick loop only looks it up.
_RATE_NAME: dict[str, str] = {m: m.per_s for m in Metric}
# Per direction: byte rate -> bits/s, pause-duration rate -> share of the interval paused.
_SIDES: tuple[tuple[str, Derived, str, Derived], ...] = (
    (Metric.RX_BYTES.per_s, Derived.RX_BPS, Metric.RX_PAUSE_US.per_s, Derived.RX_PAUSE_TIME_RATIO),
    (Metric.TX_BYTES.per_s, Derived.TX_BPS, Metric.TX_PAUSE_US.per_s, Derived.TX_PAUSE_TIME_RATIO),
)
_RDMA_BYTES = (Metric.RDMA_RX_BYTES.per_s, Metric.RDMA_TX_BYTES.per_s)
_PORT_BYTES = (Metric.RX_BYTES.per_s, Metric.TX_BYTES.per_s)

# Histogram names as servers expose them (llm_metrics/LLM_METRICS_NOTES.md); matched
# by suffix so a parser may keep or strip the "vllm:"/"sglang:" prefix.
TTFT_HISTOGRAMS: tuple[str, ...] = ("time_to_first_token_seconds",)
ITL_HISTOGRAMS: tuple[str, ...] = (
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",  # vLLM before V1
    "tgi_request_mean_time_per_token_duration",
)

INFERENCE_RATE_NAMES: tuple[str, ...] = tuple(InferenceRate)

Histogram = tuple[tuple[float, ...], tuple[float, ...], float, float]


@dataclass(slots=True)
class LinkRates:
    """Per-second rates of one link for one tick."""

    rates: dict[str, RateValue]  # normalized name + "_per_s", plus derived (rx_bps, ...)
    raw_rates: dict[str, dict[str, float]]  # source -> raw counter name -> per second
    gap: bool = False  # a normalized counter reset / the host restarted: show a gap
    reset: list[str] = field(default_factory=list)  # raw names, then normalized names
    saturated: list[str] = field(default_factory=list)  # raw names, then normalized names


@dataclass(slots=True)
class HostRates:
    """Everything the rate engine derived from one frame of one host."""

    host: str
    interval_s: float | None  # remote-time delta used; None when no rates this tick
    clock_stepped: bool
    links: dict[str, LinkRates]
    inference: dict[str, dict[str, float | None]]
    restarted: bool = False  # remote uptime went backwards: everything rebaselined
    cpu_throttle_per_s: float | None = None  # the host's CPU thermal throttle events


@dataclass(slots=True)
class _InferenceBase:
    # /metrics is polled on its own cadence and the last reading rides on later frames:
    # rates span the frames at which two *different* readings arrived.
    sample: InferenceSample
    clock_ns: int
    uptime_s: float
    rates: dict[str, float | None]


@dataclass(slots=True)
class _Baseline:
    seq: int
    clock_ns: int
    uptime_s: float
    links: dict[str, LinkSample]
    inference: dict[str, _InferenceBase]
    cpu_throttle: int | None


def remote_interval(d_clock_s: float, d_uptime_s: float) -> tuple[float, bool]:
    """The remote-time delta to divide by, and whether the wall clock stepped."""
    tolerance = CLOCK_STEP_TOLERANCE_S + CLOCK_STEP_TOLERANCE_FRAC * d_uptime_s
    if abs(d_clock_s - d_uptime_s) > tolerance:
        return d_uptime_s, True
    return d_clock_s, False


def _find_histogram(hists: dict[str, Histogram], suffixes: tuple[str, ...]) -> str | None:
    for suffix in suffixes:
        for name in hists:
            if name.endswith(suffix):
                return name
    return None


def _histogram_delta(cur: Histogram, prev: Histogram) -> tuple[tuple[float, ...], list[float]]:
    """Bucket deltas as a cumulative histogram, +Inf bucket included; raises ValueError on reset."""
    bounds, counts, count, _ = cur
    pbounds, pcounts, pcount, _ = prev
    if bounds != pbounds or len(counts) != len(pcounts):
        raise ValueError("bucket layout changed")
    deltas = [c - p for c, p in zip(counts, pcounts, strict=True)]
    if any(d < 0 for d in deltas) or count < pcount:
        raise ValueError("histogram went backwards")
    if not bounds or not math.isinf(bounds[-1]):
        bounds = (*bounds, math.inf)
        deltas.append(count - pcount)
    return bounds, deltas


def _quantiles(
    cur: InferenceSample, prev: InferenceSample, suffixes: tuple[str, ...]
) -> tuple[float | None, float | None]:
    name = _find_histogram(cur.histograms, suffixes)
    if name is None or name not in prev.histograms:
        return None, None
    bounds, deltas = _histogram_delta(cur.histograms[name], prev.histograms[name])
    return histogram_quantile(0.5, bounds, deltas), histogram_quantile(0.99, bounds, deltas)


def _counter_rate(cur: float | None, prev: float | None, inv_dt: float) -> float | None:
    if cur is None or prev is None:
        return None
    d = cur - prev
    if d < 0:
        raise ValueError("counter went backwards")
    return d * inv_dt


def _inference_rates(
    cur: InferenceSample, prev: InferenceSample, dt: float
) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(INFERENCE_RATE_NAMES)
    if not dt > 0 or cur.error is not None or prev.error is not None:
        return out
    inv_dt = 1.0 / dt
    try:
        out[InferenceRate.GENERATED_TOKENS_PER_S] = _counter_rate(
            cur.generated_tokens_total, prev.generated_tokens_total, inv_dt
        )
        out[InferenceRate.PROMPT_TOKENS_PER_S] = _counter_rate(
            cur.prompt_tokens_total, prev.prompt_tokens_total, inv_dt
        )
        ttft = _quantiles(cur, prev, TTFT_HISTOGRAMS)
        out[InferenceRate.TTFT_P50_S], out[InferenceRate.TTFT_P99_S] = ttft
        itl = _quantiles(cur, prev, ITL_HISTOGRAMS)
        out[InferenceRate.ITL_P50_S], out[InferenceRate.ITL_P99_S] = itl
    except ValueError:
        # The server restarted (or changed its buckets): nothing is comparable this tick.
        return dict.fromkeys(INFERENCE_RATE_NAMES)
    return out


def _link_rates(cur: LinkSample, prev: LinkSample | None, inv_dt: float) -> LinkRates:
    lr = LinkRates(rates={}, raw_rates={})
    if prev is None:
        return lr
    reset = lr.reset
    sat_raw = set(cur.saturated)

    raw_rates = lr.raw_rates
    for source, counters in cur.counters.items():
        pcounters = prev.counters.get(source)
        if pcounters is None:
            continue
        out: dict[str, float] = {}
        for name, value in counters.items():
            pvalue = pcounters.get(name)
            if pvalue is None:
                continue
            d = value - pvalue
            if d < 0:
                reset.append(name)
            else:
                out[name] = d * inv_dt
        if sat_raw:
            for name in sat_raw:
                out.pop(name, None)
        raw_rates[source] = out

    # Raw-only resets drop that rate but do not cut the charts: some drivers list
    # gauges among their statistics, and those go down all the time.
    rates = lr.rates
    for name, metric in cur.metrics.items():
        pmetric = prev.metrics.get(name)
        rname = _RATE_NAME.get(name)
        if pmetric is None or rname is None:  # outside the vocabulary: nothing could name it
            continue
        if isinstance(metric, int):
            if isinstance(pmetric, int):
                d = metric - pmetric
                if d < 0:
                    reset.append(name)
                    lr.gap = True
                else:
                    rates[rname] = d * inv_dt
        elif isinstance(pmetric, dict):
            per: dict[int, float] = {}
            for prio, v in metric.items():
                pv = pmetric.get(prio)
                if pv is None:
                    continue
                d = v - pv
                if d < 0:
                    if name not in reset:
                        reset.append(name)
                    lr.gap = True
                else:
                    per[prio] = d * inv_dt
            if per:
                rates[rname] = per

    if sat_raw:
        lr.saturated.extend(cur.saturated)
        for raw in cur.saturated:
            entry = _IB_SATURABLE.get(raw)
            if entry is None or entry[0] in lr.saturated:
                continue
            norm, wide = entry
            if wide is not None and any(wide in c for c in cur.counters.values()):
                continue  # the metric is read from the 64-bit counter, which is fine
            lr.saturated.append(norm)
            rates.pop(norm.per_s, None)

    _derive(rates)
    return lr


def _derive(rates: dict[str, RateValue]) -> None:
    for bytes_rate, bps, pause_rate, ratio in _SIDES:
        b = rates.get(bytes_rate)
        if isinstance(b, float):
            rates[bps] = b * 8.0
        us = rates.get(pause_rate)
        if isinstance(us, dict):
            # Pause duration counters are in microseconds (mlx5 en_stats.c).
            rates[ratio] = {p: min(1.0, max(0.0, v / 1e6)) for p, v in us.items()}
        elif isinstance(us, float):
            rates[ratio] = min(1.0, max(0.0, us / 1e6))
    rdma_rx, rdma_tx = (rates.get(n) for n in _RDMA_BYTES)
    rx, tx = (rates.get(n) for n in _PORT_BYTES)
    if (
        isinstance(rdma_rx, float)
        and isinstance(rdma_tx, float)
        and isinstance(rx, float)
        and isinstance(tx, float)
        and rx + tx > 0
    ):
        # vport and phy counters frame bytes differently: keep the share a share.
        rates[Derived.RDMA_SHARE] = min(1.0, max(0.0, (rdma_rx + rdma_tx) / (rx + tx)))


class RateEngine:
    """Per-host baselines; ``update`` turns each new frame into rates against the last one."""

    __slots__ = ("_base",)

    def __init__(self) -> None:
        self._base: dict[str, _Baseline] = {}

    def update(self, sample: HostSample) -> HostRates:
        """Rates of ``sample`` against the previous frame of the same host."""
        prev = self._base.get(sample.host)
        if prev is None:
            self._rebaseline(sample, {})
            return self._empty(sample, gap=False, restarted=False)
        if sample.seq == prev.seq:
            return HostRates(sample.host, None, False, {}, {})
        d_up = sample.uptime_s - prev.uptime_s
        if d_up < 0:
            self._rebaseline(sample, {})
            return self._empty(sample, gap=True, restarted=True)
        dt, stepped = remote_interval((sample.clock_ns - prev.clock_ns) / 1e9, d_up)
        if not dt > 0:
            return HostRates(sample.host, None, stepped, {}, {})
        inv_dt = 1.0 / dt

        links = {
            lid: _link_rates(link, prev.links.get(lid), inv_dt)
            for lid, link in sample.links.items()
        }
        cpu: float | None = None
        n, pn = sample.cpu_throttle_count, prev.cpu_throttle
        if n is not None and pn is not None and n >= pn:  # lower: the count was reset
            cpu = (n - pn) * inv_dt
        inference = self._rebaseline(sample, prev.inference)
        return HostRates(sample.host, dt, stepped, links, inference, cpu_throttle_per_s=cpu)

    def _rebaseline(
        self, sample: HostSample, prev: dict[str, _InferenceBase]
    ) -> dict[str, dict[str, float | None]]:
        """Make ``sample`` the new baseline; return its inference rates against ``prev``."""
        bases: dict[str, _InferenceBase] = {}
        rates: dict[str, dict[str, float | None]] = {}
        for inf in sample.inference:
            base = prev.get(inf.url)
            if base is not None and inf is base.sample:
                bases[inf.url] = base  # same reading as before: keep showing its rates
            else:
                r: dict[str, float | None] = dict.fromkeys(INFERENCE_RATE_NAMES)
                if base is not None:
                    if inf.read_s is not None and base.sample.read_s is not None:
                        dt = inf.read_s - base.sample.read_s
                    else:
                        dt, _ = remote_interval(
                            (sample.clock_ns - base.clock_ns) / 1e9,
                            sample.uptime_s - base.uptime_s,
                        )
                    r = _inference_rates(inf, base.sample, dt)
                bases[inf.url] = _InferenceBase(inf, sample.clock_ns, sample.uptime_s, r)
            rates[inf.url] = bases[inf.url].rates
        # Samples are not mutated downstream, so keeping references costs no copy.
        self._base[sample.host] = _Baseline(
            sample.seq, sample.clock_ns, sample.uptime_s, sample.links, bases,
            sample.cpu_throttle_count,
        )
        return rates

    @staticmethod
    def _empty(sample: HostSample, *, gap: bool, restarted: bool) -> HostRates:
        links = {lid: LinkRates(rates={}, raw_rates={}, gap=gap) for lid in sample.links}
        inference = {inf.url: dict.fromkeys(INFERENCE_RATE_NAMES) for inf in sample.inference}
        return HostRates(sample.host, None, False, links, inference, restarted)
