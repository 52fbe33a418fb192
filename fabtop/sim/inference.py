"""A simulated vLLM server's ``/metrics``, shaped like the real exposition.

Metric names, HELP texts, labels and bucket bounds follow
``../shared/fixtures/llm_metrics/vllm_metrics_datadog.txt``; the inter-token latency
histogram uses the bounds that file gives ``vllm:time_per_output_token_seconds`` (its legacy
name), since its own ``inter_token_latency`` rows are the hand-maintained part.
"""

from __future__ import annotations

import math

TTFT_BOUNDS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)
# vLLM's request-latency buckets (the capture's vllm:request_queue_time_seconds shows the
# first, 0.3; the rest as vLLM's metrics code lists them, to a minute).
QUEUE_BOUNDS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)
ITL_BOUNDS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
TOKENS_PER_REQUEST = 256.0
PROMPT_PER_GENERATED = 1.6
MAX_RUNNING = 64.0
# The share of its token rate a server loses when the test's traffic fills its ports (a
# decode step waits for its collectives, queued behind the neighbour's bytes): a full
# port costs 40 %, so ``fabtop test serving`` in the demo sees its loads' impact.
NEIGHBOUR_COST = 0.4


def neighbour_share(busy: float) -> float:
    """The share of its token rate a server keeps while the test's loads take ``busy``
    (0 to 1) of its busiest port's line."""
    return 1.0 - NEIGHBOUR_COST * min(max(busy, 0.0), 1.0)


def _lognormal_cdf(x: float, median: float, sigma: float) -> float:
    if x <= 0:
        return 0.0
    return 0.5 * (1.0 + math.erf(math.log(x / median) / (sigma * math.sqrt(2.0))))


class Histogram:
    """Cumulative bucket counts grown from a latency distribution, one cell at a time."""

    __slots__ = ("bounds", "buckets", "count", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.buckets = [0.0] * len(bounds)
        self.count = 0.0
        self.sum = 0.0

    def observe(self, n: float, median: float, sigma: float = 0.35) -> None:
        """Add ``n`` observations drawn (in expectation) from a log-normal around ``median``."""
        if n <= 0:
            return
        for i, le in enumerate(self.bounds):
            self.buckets[i] += n * _lognormal_cdf(le, median, sigma)
        self.count += n
        self.sum += n * median * math.exp(sigma * sigma / 2.0)

    def lines(self, name: str, labels: str) -> list[str]:
        """Exposition rows: buckets (floored, so they stay monotone), +Inf, count, sum."""
        out = [
            f'{name}_bucket{{le="{le}",{labels}}} {math.floor(b):.1f}'
            for le, b in zip(self.bounds, self.buckets, strict=True)
        ]
        out.append(f'{name}_bucket{{le="+Inf",{labels}}} {math.floor(self.count):.1f}')
        out.append(f"{name}_count{{{labels}}} {math.floor(self.count):.1f}")
        out.append(f"{name}_sum{{{labels}}} {self.sum!r}")
        return out


class VllmServer:
    """Token counters, queue gauges and latency histograms driven by the cluster's token rate."""

    __slots__ = (
        "generated",
        "itl",
        "model",
        "preempted",
        "prompt",
        "queue",
        "rate",
        "running",
        "started_at",
        "succeeded",
        "ttft",
        "url",
        "waiting",
    )

    def __init__(self, url: str, model: str, started_at: float) -> None:
        self.url = url
        self.model = model
        self.started_at = started_at
        self.generated = 0.0
        self.prompt = 0.0
        self.succeeded = 0.0
        self.rate = 0.0
        self.running = 0.0
        self.waiting = 0.0
        self.ttft = Histogram(TTFT_BOUNDS)
        self.itl = Histogram(ITL_BOUNDS)
        self.queue = Histogram(QUEUE_BOUNDS)
        self.preempted = 0.0

    def step(self, tokens_per_s: float, healthy_tokens_per_s: float, dt: float) -> None:
        """Serve ``tokens_per_s`` for ``dt`` seconds."""
        share = tokens_per_s / healthy_tokens_per_s if healthy_tokens_per_s > 0 else 0.0
        self.rate = tokens_per_s
        self.generated += tokens_per_s * dt
        self.prompt += tokens_per_s * PROMPT_PER_GENERATED * dt
        requests = tokens_per_s / TOKENS_PER_REQUEST * dt
        self.succeeded += requests
        # Offered load stays the same, so a slow cluster builds a queue.
        self.running = min(MAX_RUNNING, 32.0 + 32.0 * (1.0 - share))
        self.waiting = max(0.0, min(400.0, self.waiting * 0.9 + (1.0 - share) * 40.0 * dt))
        slow = 1.0 / max(share, 0.05)
        self.ttft.observe(requests, 0.18 * slow)
        self.itl.observe(tokens_per_s * dt, 0.022 * slow)
        # A slow engine holds requests longer, so the waiting ones wait longer, and a
        # fuller KV cache evicts running ones to make room (vLLM's preemptions).
        self.queue.observe(requests, 0.12 * slow * slow)
        self.preempted += max(0.0, 1.0 - share) * 4.0 * dt

    def metrics_text(self) -> str:
        """The ``/metrics`` body, as vLLM's prometheus_client writes it."""
        lab = f'model_name="{self.model}"'
        out = [
            "# HELP vllm:num_requests_running Number of requests currently running on GPU.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lab}}} {math.floor(self.running):.1f}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{lab}}} {math.floor(self.waiting):.1f}",
            "# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.",
            "# TYPE vllm:gpu_cache_usage_perc gauge",
            f"vllm:gpu_cache_usage_perc{{{lab}}} {min(1.0, self.running / MAX_RUNNING)!r}",
            "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.",
            "# TYPE vllm:num_preemptions_total counter",
            f"vllm:num_preemptions_total{{{lab}}} {math.floor(self.preempted):.1f}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{lab}}} {math.floor(self.prompt):.1f}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{lab}}} {math.floor(self.generated):.1f}",
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            *self.ttft.lines("vllm:time_to_first_token_seconds", lab),
            "# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.",
            "# TYPE vllm:inter_token_latency_seconds histogram",
            *self.itl.lines("vllm:inter_token_latency_seconds", lab),
            "# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase "
            "for request.",
            "# TYPE vllm:request_queue_time_seconds histogram",
            *self.queue.lines("vllm:request_queue_time_seconds", lab),
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{finished_reason="stop",{lab}}} '
            f"{math.floor(self.succeeded):.1f}",
        ]
        return "\n".join(out) + "\n"
