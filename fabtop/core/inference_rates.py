"""Inference rates: tokens per second from a server's counters, TTFT and ITL quantiles from
the deltas of its latency histograms between two readings.

The rate engine (:mod:`fabtop.core.rates`) calls :func:`inference_rates` once per new
/metrics reading of each server. The quantiles are Prometheus' ``histogram_quantile``
over the bucket deltas: plain arithmetic over numbers, so it lives in the core and not
beside the text parser that reads the buckets.
"""

from __future__ import annotations

import math

from collectors.samples import Histogram, InferenceSample
from collectors.vocabulary import InferenceRate

# Histogram names as servers expose them (llm_metrics/LLM_METRICS_NOTES.md); matched
# by suffix so a parser may keep or strip the "vllm:"/"sglang:" prefix.
TTFT_HISTOGRAMS: tuple[str, ...] = ("time_to_first_token_seconds",)
ITL_HISTOGRAMS: tuple[str, ...] = (
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",  # vLLM before V1
    "tgi_request_mean_time_per_token_duration",
)
# Time a request waited before it ran (vLLM's WAITING phase, SGLang's queue, TGI's queue).
QUEUE_HISTOGRAMS: tuple[str, ...] = (
    "request_queue_time_seconds",
    "queue_time_seconds",
    "tgi_request_queue_duration",
)

INFERENCE_RATE_NAMES: tuple[str, ...] = tuple(InferenceRate)

Buckets = tuple[float, ...] | list[float]


def _usable(bounds: Buckets, counts: Buckets) -> bool:
    """Finite, strictly increasing bounds ending in +Inf, and finite, non-negative counts.

    A count that falls from one bound to the next is usable: the demo's and some
    servers' buckets are updated one by one, and Prometheus forces monotony for them.
    """
    if len(bounds) != len(counts) or len(bounds) < 2 or bounds[-1] != math.inf:
        return False
    prev_b = -math.inf
    for b in bounds[:-1]:
        if not (math.isfinite(b) and b > prev_b):
            return False
        prev_b = b
    return all(math.isfinite(c) and c >= 0 for c in counts)


def histogram_quantile(q: float, bounds: Buckets, counts: Buckets) -> float | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket holding rank q.

    ``counts`` are cumulative per upper bound (typically the delta of two scrapes); the
    last bound must be +Inf. None when there is nothing to estimate from, and for buckets
    that cannot be (NaN or Inf, bounds out of order): never raises.
    """
    if not 0.0 <= q <= 1.0 or not _usable(bounds, counts):
        return None
    # Buckets scraped at slightly different moments can dip; Prometheus forces monotony.
    fixed: list[float] = []
    for c in counts:
        fixed.append(max(c, fixed[-1]) if fixed else c)
    total = fixed[-1]
    if total <= 0:
        return None
    rank = q * total
    i = next((k for k, c in enumerate(fixed) if c >= rank), len(fixed) - 1)
    if i == len(bounds) - 1:
        return bounds[-2]  # rank lies in the +Inf bucket: the highest finite bound
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0 if i == 0 else bounds[i - 1]
    below = 0.0 if i == 0 else fixed[i - 1]
    inside = fixed[i] - below
    if inside <= 0:
        return bounds[i]
    frac = (rank - below) / inside  # in [0, 1]: divided first, so huge bounds cannot overflow
    v = start + (bounds[i] - start) * frac
    # Bounds of opposite sign near the float limit overflow their difference: the same
    # point as a weighted mean of the two, which stays between them.
    return v if math.isfinite(v) else start * (1.0 - frac) + bounds[i] * frac


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


def window_p99(
    cur: InferenceSample, prev: InferenceSample, suffixes: tuple[str, ...]
) -> float | None:
    """The p99 of histogram ``suffixes`` over the requests between two readings (None:
    the server has no such histogram, nothing was observed, or it restarted)."""
    try:
        return _quantiles(cur, prev, suffixes)[1]
    except ValueError:
        return None


def _counter_rate(
    cur: float | None, prev: float | None, inv_dt: float, most: float
) -> float | None:
    if cur is None or prev is None:
        return None
    d = cur - prev
    if d < 0:
        raise ValueError("counter went backwards")
    if d * inv_dt > most:  # no server counts so fast: a glitched read, a gap
        raise ValueError("counter jumped beyond belief")
    return d * inv_dt


def inference_rates(
    cur: InferenceSample, prev: InferenceSample, dt: float, tokens_per_s: float = math.inf
) -> dict[str, float | None]:
    """Every inference rate of a server between readings ``prev`` and ``cur``, ``dt``
    seconds apart (None: unknown); ``tokens_per_s``: the most a server can count."""
    out: dict[str, float | None] = dict.fromkeys(INFERENCE_RATE_NAMES)
    if not dt > 0 or cur.error is not None or prev.error is not None:
        return out
    if cur.rate_unknown is not None or prev.rate_unknown is not None:
        return out  # a server with no counter (exo, mlx_lm): unknown, never computed
    inv_dt = 1.0 / dt
    try:
        out[InferenceRate.GENERATED_TOKENS_PER_S] = _counter_rate(
            cur.generated_tokens_total, prev.generated_tokens_total, inv_dt, tokens_per_s
        )
        out[InferenceRate.PROMPT_TOKENS_PER_S] = _counter_rate(
            cur.prompt_tokens_total, prev.prompt_tokens_total, inv_dt, tokens_per_s
        )
        ttft = _quantiles(cur, prev, TTFT_HISTOGRAMS)
        out[InferenceRate.TTFT_P50_S], out[InferenceRate.TTFT_P99_S] = ttft
        itl = _quantiles(cur, prev, ITL_HISTOGRAMS)
        out[InferenceRate.ITL_P50_S], out[InferenceRate.ITL_P99_S] = itl
    except ValueError:
        # The server restarted (or changed its buckets), or a counter jumped past any
        # server's speed: nothing is comparable this tick.
        return dict.fromkeys(INFERENCE_RATE_NAMES)
    return out
