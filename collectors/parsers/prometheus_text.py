"""Read an inference server's Prometheus ``/metrics`` text into an :class:`InferenceSample`.

Parsing is prometheus_client's; this module only picks the series that matter for
vLLM, llama.cpp, SGLang and TGI (names from ``../shared/fixtures/llm_metrics/``: the
vLLM scrape and LLM_METRICS_NOTES.md, which cites each server's docs and source) and
sums them across label sets. Only cumulative counters and histograms are kept: the
servers' own windowed gauges (``llamacpp:predicted_tokens_seconds`` resets on every
scrape, ``vllm:avg_generation_throughput_toks_per_s``) are never used for rates.

The page is remote text: metric names and label values are cleaned of control
characters as they are read, and a non-finite value (NaN, ±Inf) is dropped where it is
read. A line the parser cannot read costs that line: the page is read again line by line
and the others kept, with one warning. A counter or gauge with a dropped value (or an
unreadable line of its name), or whose sum overflows, has no value (None) and a warning;
a histogram with one such number is left out whole.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from collectors.numbers import finite, parse_float
from collectors.samples import Histogram, InferenceSample
from collectors.text import MAX_TEXT, clean, clean_lines


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
    # Series (name as written) with at least one non-finite value left out of ``samples``,
    # mapped to how many: their sums are unknown, not smaller.
    non_finite: dict[str, int] = field(default_factory=dict)
    # Series (the name an unreadable line starts with) with a line left out, alike.
    unreadable: dict[str, int] = field(default_factory=dict)

    def left_out(self, name: str) -> str | None:
        """Why a value of series ``name`` is missing from ``samples`` (None: none is)."""
        if name in self.non_finite:
            return "not a finite number (NaN, ±Inf or overflow)"
        if name in self.unreadable:
            return "a line of it unreadable"
        return None


@dataclass(frozen=True, slots=True)
class _ServerMetrics:
    generated: str
    prompt: str
    running: str
    waiting: str
    histograms: tuple[str, ...]
    # Requests the engine preempted (evicted from the KV cache to run later), a counter:
    # vLLM's only (the capture's vllm:num_preemptions_total); the others export none.
    preemptions: str | None = None


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
            "vllm:request_queue_time_seconds",  # time in the WAITING phase (the capture)
        ),
        "vllm:num_preemptions_total",
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
            "sglang:queue_time_seconds",  # LLM_METRICS_NOTES.md, from SGLang's scrape
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


_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _read(out: PromText, text: str) -> None:
    """Every sample of ``text`` into ``out``; raises where the parser stops."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            value = finite(s.value)
            if value is None:
                out.non_finite[s.name] = out.non_finite.get(s.name, 0) + 1
                continue
            # The text is clean already; only the parser's own unescaping can bring a
            # control back (a label's \n), and only a label value can be long.
            labels = {
                k: clean(v) if "\n" in v or len(v) > MAX_TEXT else v for k, v in s.labels.items()
            }
            out.samples.append(PromSample(s.name, labels, value))


def _read_lines(text: str) -> PromText:
    """``text`` read line by line, each sample with its family's ``# TYPE`` line (which
    decides its name): a line the parser refuses costs that line alone."""
    out = PromText()
    typed = ""
    bad, first = 0, ""
    for line in text.splitlines():
        line = line.strip()
        try:
            if line.startswith("# TYPE "):
                typed = ""
                _read(out, line)
                typed = line
            elif line and not line.startswith("#"):
                try:
                    _read(out, f"{typed}\n{line}" if typed else line)
                except Exception:  # read alone, as an untyped sample
                    _read(out, line)
        except Exception as e:  # the parser raises ValueError; nothing may escape
            bad += 1
            first = first or (f"{line[:80]!r} ({e})" if str(e) else repr(line[:80]))
            m = _NAME.match(line)
            if m is not None:
                out.unreadable[m[0]] = out.unreadable.get(m[0], 0) + 1
    if bad:
        said = f"/metrics: {bad} unreadable line(s) left out, the first {first}"
        out.warnings.append(clean(said))
    return out


def parse_prometheus_text(text: str) -> PromText:
    """All samples of an exposition text; a line that cannot be read is left out, said once."""
    # Cleaned whole before parsing (newlines kept, no length bound: the body cap is the
    # fetcher's): names and labels come out clean, and so does the parser's own error
    # text, which quotes the offending line.
    out = PromText()
    text = _ascii_values(clean_lines(text, max(len(text), MAX_TEXT)), out)
    said = (list(out.warnings), dict(out.non_finite))
    try:
        _read(out, text)
    except Exception:  # the parser raises ValueError, but any failure must not escape
        # It stops at the first line it cannot read: read again, a line at a time.
        out = _read_lines(text)
        out.warnings[:0] = said[0]
        for name, n in said[1].items():
            out.non_finite[name] = out.non_finite.get(name, 0) + n
    return out


def _ascii_values(text: str, out: PromText) -> str:
    """``text`` without the samples whose value or timestamp is not ASCII.

    The library reads a value with ``float()``, which takes "٣" and full-width digits
    for numbers and stops the whole page at "²": such a sample is left out here, its
    series' sum unknown (as for a non-finite value), said in one warning.
    """
    if text.isascii():
        return text
    lines = text.split("\n")
    left_out: list[str] = []
    for i, line in enumerate(lines):
        if line.isascii() or line.lstrip().startswith("#"):
            continue
        # The value and timestamp follow the label set (no "}" in them) or the name.
        labels, brace, rest = line.rpartition("}")
        if brace:
            name = labels.partition("{")[0].strip()
        else:
            name, rest = [*line.split(None, 1), ""][:2]
        if not rest.isascii():
            lines[i] = ""
            out.non_finite[name] = out.non_finite.get(name, 0) + 1
            left_out.append(f"{name[:60]} {rest.strip()[:20]!r}")
    if left_out:
        out.warnings.append(
            clean(
                f"{len(left_out)} samples whose value is no ASCII number "
                f"left out, the first: {left_out[0]}"
            )
        )
    return "\n".join(lines)


def detect_server(samples: list[PromSample]) -> str | None:
    """Which inference server wrote these samples, from the first known metric prefix."""
    for s in samples:
        for prefix, server in _PREFIXES:
            if s.name.startswith(prefix):
                return server
    return None


def _fsum(values: list[float]) -> float | None:
    """The exact sum of finite values, or None when it overflows (fsum raises then)."""
    try:
        return finite(math.fsum(values))
    except (OverflowError, ValueError):
        return None


def _sum(parsed: PromText, samples: list[PromSample], name: str) -> float | None:
    values = [s.value for s in samples if s.name == name]
    if parsed.left_out(name) is not None:
        return None  # one label set unknown: the sum is unknown, not smaller
    return _fsum(values) if values else None


def _histogram(parsed: PromText, samples: list[PromSample], name: str) -> Histogram | str | None:
    """Bounds (+Inf last when the server wrote it), cumulative counts, count and sum.

    None when the server has no such histogram; a reason (str) when it has one that
    cannot be used: a non-finite number, a bound that is not a number, a sum overflowing.
    """
    parts = (name + "_bucket", name + "_count", name + "_sum")
    why = next((w for p in parts if (w := parsed.left_out(p)) is not None), None)
    if why is not None:
        return why
    buckets: dict[float, list[float]] = defaultdict(list)
    counts_seen: list[float] = []
    sums_seen: list[float] = []
    for s in samples:
        if s.name == parts[0]:
            le = s.labels.get("le", "")
            bound = math.inf if le.strip().lower() in ("+inf", "inf") else parse_float(le)
            if bound is None:
                return f"a bucket bound le={le[:20]!r}"
            buckets[bound].append(s.value)
        elif s.name == parts[1]:
            counts_seen.append(s.value)
        elif s.name == parts[2]:
            sums_seen.append(s.value)
    if not buckets:
        return None
    bounds = tuple(sorted(buckets))
    counts = tuple(_fsum(buckets[b]) for b in bounds)
    count = _fsum(counts_seen) if counts_seen else counts[-1]
    total = _fsum(sums_seen) if sums_seen else 0.0
    if count is None or total is None or any(c is None for c in counts):
        return "a sum beyond a float"
    return bounds, tuple(c for c in counts if c is not None), count, total


def parse_inference_metrics(text: str, url: str) -> InferenceSample:
    """Cumulative token counters, queue gauges and latency histograms of one server."""
    parsed = parse_prometheus_text(text)
    sample = InferenceSample(url=url)
    sample.warnings += parsed.warnings  # lines left out: the rest of the page was read
    server = detect_server(parsed.samples)
    sample.server = server
    if server is None:
        sample.error = "no vllm:, llamacpp:, sglang: or tgi_ metrics found"
        if parsed.warnings:  # nothing read at all: the parser's word is the error
            sample.error = parsed.warnings[0]
        return sample
    m = _SERVERS[server]
    prefix = next(p for p, srv in _PREFIXES if srv == server)
    own = [s for s in parsed.samples if s.name.startswith(prefix)]
    values: list[float | None] = []
    for name in (m.generated, m.prompt, m.running, m.waiting):
        value = _sum(parsed, own, name)
        values.append(value)
        if value is None and (why := parsed.left_out(name)) is not None:
            sample.warnings.append(f"{name}: {why}")
        elif value is None and any(s.name == name for s in own):
            sample.warnings.append(f"{name}: not a finite number (overflow)")
    (
        sample.generated_tokens_total,
        sample.prompt_tokens_total,
        sample.requests_running,
        sample.requests_waiting,
    ) = values
    if m.preemptions is not None:
        sample.preemptions_total = _sum(parsed, own, m.preemptions)
        if sample.preemptions_total is None and (why := parsed.left_out(m.preemptions)):
            sample.warnings.append(f"{m.preemptions}: {why}")
    models = sorted({s.labels["model_name"] for s in own if s.labels.get("model_name")})
    sample.model = clean(", ".join(models)) if models else None
    for name in m.histograms:
        h = _histogram(parsed, own, name)
        if isinstance(h, str):
            sample.warnings.append(f"{name}: histogram left out ({h})")
        elif h is not None:
            sample.histograms[name] = h
    return sample
