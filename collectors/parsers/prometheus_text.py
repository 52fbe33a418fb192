"""Read an inference server's Prometheus ``/metrics`` text into an :class:`InferenceSample`.

Parsing is prometheus_client's; this module only picks the series that matter for
vLLM, llama.cpp, SGLang and TGI (names from ``../shared/fixtures/llm_metrics/``: the
vLLM scrape and LLM_METRICS_NOTES.md, which cites each server's docs and source) and
sums them across label sets. Only cumulative counters and histograms are kept: the
servers' own windowed gauges (``llamacpp:predicted_tokens_seconds`` resets on every
scrape, ``vllm:avg_generation_throughput_toks_per_s``) are never used for rates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from collectors.samples import InferenceSample


@dataclass(slots=True)
class PromSample:
    """One exposition line: its series name (as written), labels and value."""

    name: str
    labels: dict[str, str]
    value: float


@dataclass(slots=True)
class PromText:
    """Every sample read from one exposition text, with what could not be read."""

    samples: list[PromSample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _ServerMetrics:
    generated: str
    prompt: str
    running: str
    waiting: str
    histograms: tuple[str, ...]


# Counter names carry their exposition suffix (_total, or _sum for TGI's histograms).
_SERVERS: dict[str, _ServerMetrics] = {
    "vllm": _ServerMetrics(
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        (
            "vllm:time_to_first_token_seconds",
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",  # legacy name of inter-token latency
            "vllm:e2e_request_latency_seconds",
        ),
    ),
    "llamacpp": _ServerMetrics(
        "llamacpp:tokens_predicted_total",
        "llamacpp:prompt_tokens_total",
        "llamacpp:requests_processing",
        "llamacpp:requests_deferred",
        (),
    ),
    "sglang": _ServerMetrics(
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        (
            "sglang:time_to_first_token_seconds",
            "sglang:inter_token_latency_seconds",
            "sglang:e2e_request_latency_seconds",
        ),
    ),
    "tgi": _ServerMetrics(
        "tgi_request_generated_tokens_sum",
        "tgi_request_input_length_sum",
        "tgi_batch_current_size",
        "tgi_queue_size",
        (
            "tgi_request_mean_time_per_token_duration",
            "tgi_request_queue_duration",
            "tgi_request_duration",
        ),
    ),
}
_PREFIXES = (("vllm:", "vllm"), ("llamacpp:", "llamacpp"), ("sglang:", "sglang"), ("tgi_", "tgi"))


def parse_prometheus_text(text: str) -> PromText:
    """All samples of an exposition text; on a syntax error, those read before it plus a warning."""
    out = PromText()
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out.samples.append(PromSample(s.name, dict(s.labels), float(s.value)))
    except Exception as e:  # the parser raises ValueError, but any failure must not escape
        out.warnings.append(f"/metrics parse stopped after {len(out.samples)} samples: {e}")
    return out


def detect_server(samples: list[PromSample]) -> str | None:
    """Which inference server wrote these samples, from the first known metric prefix."""
    for s in samples:
        for prefix, server in _PREFIXES:
            if s.name.startswith(prefix):
                return server
    return None


def _sum(samples: list[PromSample], name: str) -> float | None:
    values = [s.value for s in samples if s.name == name]
    return math.fsum(values) if values else None


def _histogram(
    samples: list[PromSample], name: str
) -> tuple[tuple[float, ...], tuple[float, ...], float, float] | None:
    buckets: dict[float, float] = defaultdict(float)
    count: float | None = None
    total: float | None = None
    for s in samples:
        if s.name == name + "_bucket":
            try:
                le = float(s.labels.get("le", "nan"))
            except ValueError:
                continue
            if not math.isnan(le):
                buckets[le] += s.value
        elif s.name == name + "_count":
            count = (count or 0.0) + s.value
        elif s.name == name + "_sum":
            total = (total or 0.0) + s.value
    if not buckets:
        return None
    bounds = tuple(sorted(buckets))
    counts = tuple(buckets[b] for b in bounds)
    return bounds, counts, count if count is not None else counts[-1], total or 0.0


def parse_inference_metrics(text: str, url: str) -> InferenceSample:
    """Cumulative token counters, queue gauges and latency histograms of one server."""
    parsed = parse_prometheus_text(text)
    sample = InferenceSample(url=url)
    if parsed.warnings:
        sample.error = parsed.warnings[0]
    server = detect_server(parsed.samples)
    sample.server = server
    if server is None:
        if sample.error is None:
            sample.error = "no vllm:, llamacpp:, sglang: or tgi_ metrics found"
        return sample
    m = _SERVERS[server]
    prefix = next(p for p, srv in _PREFIXES if srv == server)
    own = [s for s in parsed.samples if s.name.startswith(prefix)]
    sample.generated_tokens_total = _sum(own, m.generated)
    sample.prompt_tokens_total = _sum(own, m.prompt)
    sample.requests_running = _sum(own, m.running)
    sample.requests_waiting = _sum(own, m.waiting)
    models = sorted({s.labels["model_name"] for s in own if s.labels.get("model_name")})
    sample.model = ", ".join(models) if models else None
    for name in m.histograms:
        h = _histogram(own, name)
        if h is not None:
            sample.histograms[name] = h
    return sample

