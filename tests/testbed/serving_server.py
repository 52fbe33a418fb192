"""A small stand-in for an inference server, for ``fabtop test serving`` on the namespace
bed: its "tokens" are what its peer can deliver to it over the bed's shaped data link.

``serve`` runs in the server's namespace: it accepts the feed on its data address and
counts one token per :data:`BYTES_PER_TOKEN` bytes received, timing each (inter-token
latency) and each "request" of :data:`TOKENS_PER_REQUEST` tokens (time to its first
token); it exposes them on ``/metrics`` with prometheus_client (as vLLM does) under the
names of the real vLLM capture (``../shared/fixtures/llm_metrics/vllm_metrics_datadog.txt``)
and its bucket bounds. ``feed`` runs in the peer's namespace and sends as fast as TCP
lets it: the peer's egress is shaped (tc tbf), so when the test's incast or bidir
compete for it the feed slows, and the token rate falls for real.

    python serving_server.py serve METRICS_HOST:PORT DATA_HOST:PORT
    python serving_server.py feed DATA_HOST:PORT
"""

from __future__ import annotations

import socket
import sys
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

BYTES_PER_TOKEN = 16 * 1024  # 220 Mbit/s of feed: about 1,700 tokens/s
TOKENS_PER_REQUEST = 64
MODEL = "fabtop/testbed-serving"
# The capture's bounds (vllm:time_to_first_token_seconds, time_per_output_token_seconds).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
CHUNK = 64 * 1024


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def serve(metrics: str, data: str) -> None:
    reg = CollectorRegistry()
    labels = ["model_name"]
    generated = Counter(
        "vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg
    ).labels(MODEL)
    prompt = Counter(
        "vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=reg
    ).labels(MODEL)
    running = Gauge(
        "vllm:num_requests_running",
        "Number of requests currently running on GPU.",
        labels,
        registry=reg,
    ).labels(MODEL)
    Gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        labels,
        registry=reg,
    ).labels(MODEL).set(0)
    ttft = Histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        labels,
        buckets=TTFT_BUCKETS,
        registry=reg,
    ).labels(MODEL)
    itl = Histogram(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        labels,
        buckets=ITL_BUCKETS,
        registry=reg,
    ).labels(MODEL)
    host, port = _addr(metrics)
    start_http_server(port, addr=host, registry=reg)
    listener = socket.create_server(_addr(data))
    while True:
        conn, _ = listener.accept()
        threading.Thread(
            target=_count, args=(conn, generated, prompt, running, ttft, itl), daemon=True
        ).start()


def _count(conn: socket.socket, generated, prompt, running, ttft, itl) -> None:  # type: ignore[no-untyped-def]
    """One feed: every BYTES_PER_TOKEN bytes a token, timed."""
    have = 0
    last = started = time.monotonic()
    in_request = 0
    running.inc()
    with conn:
        while data := conn.recv(CHUNK):
            have += len(data)
            while have >= BYTES_PER_TOKEN:
                have -= BYTES_PER_TOKEN
                now = time.monotonic()
                if in_request == 0:
                    ttft.observe(now - started)
                    prompt.inc(TOKENS_PER_REQUEST)
                else:
                    itl.observe(now - last)
                generated.inc()
                last = now
                in_request += 1
                if in_request == TOKENS_PER_REQUEST:
                    in_request, started = 0, now
    running.dec()


def feed(data: str) -> None:
    payload = b"\0" * CHUNK
    while True:
        try:
            with socket.create_connection(_addr(data), timeout=5) as s:
                while True:
                    s.sendall(payload)
        except OSError:
            time.sleep(0.2)  # the server not yet listening, or gone: try again


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        feed(sys.argv[2])
