"""Inference-server /metrics parsing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from collectors.parsers.prometheus_text import (
    parse_inference_metrics,
    parse_prometheus_text,
)

URL = "http://127.0.0.1:8000/metrics"


@pytest.fixture
def vllm_text(fixtures_dir: Path) -> str:
    return (fixtures_dir / "llm_metrics/vllm_metrics_datadog.txt").read_text()


def test_vllm_capture(vllm_text: str) -> None:
    s = parse_inference_metrics(vllm_text, URL)
    assert s.error is None
    assert s.server == "vllm"
    assert s.model == "facebook/opt-125m"
    assert s.generated_tokens_total == 7.0
    assert s.prompt_tokens_total == 5.0
    assert s.requests_running == 0.0
    assert s.requests_waiting == 0.0
    bounds, counts, count, total = s.histograms["vllm:time_to_first_token_seconds"]
    assert bounds[0] == 0.001 and math.isinf(bounds[-1]) and len(bounds) == 17
    assert counts[bounds.index(0.25)] == 0.0 and counts[bounds.index(0.5)] == 1.0
    assert count == 1.0 and total == pytest.approx(0.31326723098754883)
    itl = s.histograms["vllm:inter_token_latency_seconds"]
    assert itl[0] == (0.01, 0.1, math.inf) and itl[1] == (141.0, 144.0, 144.0)
    assert "vllm:time_per_output_token_seconds" in s.histograms


def test_vllm_counters_summed_across_engines(vllm_text: str) -> None:
    line = 'vllm:generation_tokens_total{model_name="facebook/opt-125m"} 7.0'
    assert line in vllm_text
    second = 'vllm:generation_tokens_total{engine="1",model_name="facebook/opt-125m"} 3.0'
    s = parse_inference_metrics(vllm_text.replace(line, line + "\n" + second), URL)
    assert s.error is None
    assert s.generated_tokens_total == 10.0


def test_truncated_scrape_keeps_what_was_read(vllm_text: str) -> None:
    cut = vllm_text.split("vllm:time_to_first_token_seconds_bucket")[0]
    broken = cut + 'vllm:time_to_first_token_seconds_bucket{le="0.001" 0.0\n'
    parsed = parse_prometheus_text(broken)
    assert parsed.warnings and parsed.samples
    s = parse_inference_metrics(broken, URL)
    assert s.error is None  # the page was read, less one line
    assert s.generated_tokens_total == 7.0
    assert any("1 unreadable line(s) left out" in w for w in s.warnings)
    assert "vllm:time_to_first_token_seconds" not in s.histograms  # its buckets incomplete


@pytest.mark.parametrize(
    "bad",
    [
        'vllm:num_requests_swapped{model_name="m" 0.0',  # a label set never closed
        'vllm:num_requests_swapped{model_name="m"} zero',  # a value that is no number
        "vllm:num_requests_swapped 1 soon",  # a timestamp that is no number
        '{le="0.1"} 5',  # no name at all
        "# TYPE vllm:num_requests_swapped",  # a TYPE line without a type
    ],
)
def test_one_unreadable_line_costs_that_line_only(vllm_text: str, bad: str) -> None:
    # The parser stops at the first line it cannot read: every counter after it was lost,
    # and the page's error stopped the server's token rate (rates need no error).
    head, sep, tail = vllm_text.partition("# HELP vllm:generation_tokens_total")
    assert sep
    s = parse_inference_metrics(head + bad + "\n" + sep + tail, URL)
    assert s.error is None
    assert (s.generated_tokens_total, s.prompt_tokens_total) == (7.0, 5.0)
    assert (s.requests_running, s.requests_waiting) == (0.0, 0.0)
    assert "vllm:e2e_request_latency_seconds" in s.histograms
    assert s.model == "facebook/opt-125m"
    (w,) = s.warnings
    assert w.startswith("/metrics: 1 unreadable line(s) left out, the first ")


def test_read_line_by_line_the_capture_gives_what_a_whole_read_gives(vllm_text: str) -> None:
    # The fallback keeps each sample's # TYPE line, which decides a counter's name.
    whole = parse_prometheus_text(vllm_text)
    by_line = parse_prometheus_text("x{ 1\n" + vllm_text)  # one bad line first: line by line
    assert by_line.samples == whole.samples and len(whole.samples) > 100
    assert len(by_line.warnings) == 1 and not whole.warnings


def test_an_unreadable_line_of_a_counter_makes_its_sum_unknown_not_smaller() -> None:
    text = (
        'vllm:generation_tokens_total{engine="0",model_name="m"} 100\n'
        'vllm:generation_tokens_total{engine="1",model_name="m"} twenty\n'
        'vllm:prompt_tokens_total{model_name="m"} 5\n'
    )
    s = parse_inference_metrics(text, URL)
    assert s.generated_tokens_total is None and s.prompt_tokens_total == 5.0
    assert "vllm:generation_tokens_total: a line of it unreadable" in s.warnings


def test_a_page_of_nothing_readable_is_an_error() -> None:
    s = parse_inference_metrics("\x00garbage{\nmore garbage{{\n", URL)
    assert s.error is not None and s.error.startswith("/metrics: 2 unreadable line(s)")


# Hand-written from the format documented in LLM_METRICS_NOTES.md (llama.cpp
# server-context.cpp: unlabelled, C++ default float formatting); not a capture.
LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1.5e+06
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 4321
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 87.5
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
"""


def test_llamacpp_hand_written() -> None:
    s = parse_inference_metrics(LLAMACPP, URL)
    assert s.server == "llamacpp"
    assert s.prompt_tokens_total == 1_500_000
    assert s.generated_tokens_total == 4321  # the counter, never the 87.5 tok/s gauge
    assert (s.requests_running, s.requests_waiting) == (2, 1)
    assert s.model is None


# Hand-written from TGI's docs/source/reference/metrics.md names and types (see
# LLM_METRICS_NOTES.md); not a capture.
TGI = """\
# TYPE tgi_queue_size gauge
tgi_queue_size 3
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 8
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="10"} 1
tgi_request_generated_tokens_bucket{le="100"} 4
tgi_request_generated_tokens_bucket{le="+Inf"} 5
tgi_request_generated_tokens_sum 900
tgi_request_generated_tokens_count 5
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="100"} 2
tgi_request_input_length_bucket{le="+Inf"} 5
tgi_request_input_length_sum 1200
tgi_request_input_length_count 5
# TYPE tgi_request_mean_time_per_token_duration histogram
tgi_request_mean_time_per_token_duration_bucket{le="0.01"} 1
tgi_request_mean_time_per_token_duration_bucket{le="0.1"} 5
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 5
tgi_request_mean_time_per_token_duration_sum 0.2
tgi_request_mean_time_per_token_duration_count 5
"""


def test_tgi_hand_written() -> None:
    s = parse_inference_metrics(TGI, URL)
    assert s.server == "tgi"
    assert s.generated_tokens_total == 900
    assert s.prompt_tokens_total == 1200
    assert (s.requests_running, s.requests_waiting) == (8, 3)
    assert s.histograms["tgi_request_mean_time_per_token_duration"][1] == (1, 5, 5)


# SGLang names as listed in LLM_METRICS_NOTES.md; two tp ranks to show label summing.
SGLANG = """\
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m",tp_rank="0"} 100
sglang:generation_tokens_total{model_name="m",tp_rank="1"} 50
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m",tp_rank="0"} 10
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 4
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m",tp_rank="0"} 1
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m",tp_rank="0"} 2
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m",tp_rank="1"} 3
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m",tp_rank="1"} 4
sglang:time_to_first_token_seconds_sum{model_name="m",tp_rank="0"} 1.0
sglang:time_to_first_token_seconds_count{model_name="m",tp_rank="0"} 2
sglang:time_to_first_token_seconds_sum{model_name="m",tp_rank="1"} 1.0
sglang:time_to_first_token_seconds_count{model_name="m",tp_rank="1"} 4
"""


def test_sglang_sums_label_sets() -> None:
    s = parse_inference_metrics(SGLANG, URL)
    assert s.server == "sglang" and s.model == "m"
    assert s.generated_tokens_total == 150
    assert s.requests_running == 4 and s.requests_waiting == 0
    assert s.histograms["sglang:time_to_first_token_seconds"] == ((0.1, math.inf), (4, 6), 6, 2.0)


def test_unknown_server_and_garbage() -> None:
    assert parse_inference_metrics("up 1\n", URL).error is not None
    s = parse_inference_metrics("\x00{{{ not prometheus", URL)
    assert s.server is None and s.error is not None
