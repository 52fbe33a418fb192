"""Prometheus exporter: ``fabtop export --listen ADDR:PORT`` (metric table in docs/EXPORT.md).

A custom prometheus-client Collector reads the FabricState at scrape time. The
HTTP server runs on the session's own asyncio loop, so a scrape never sees the state
half-updated and needs no lock. Labels are bounded: host, link, priority, gpu, url
(and rule/severity/subject on findings). Raw driver counter names are never labels:
only the normalized vocabulary (DESIGN §3) is exported, each as its own metric.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.vocabulary import BASE_UNITS, MICROSECONDS, Derived, InferenceRate
from collectors.vocabulary import Metric as VocabMetric
from fabtop.core.state import UP, FabricState

# Every normalized link counter, exported as fabtop_link_<name>_total.
LINK_COUNTERS: tuple[VocabMetric, ...] = tuple(VocabMetric)
# A normalized name ends in its unit (rx_pause_us); Prometheus wants the base unit in the
# name instead (rx_pause_seconds) and the value scaled to it.
_UNIT_SUFFIX: dict[str, str] = {MICROSECONDS: "_us"}
COUNTER_UNITS: dict[str, tuple[str, float]] = {
    m: (f"{m.removesuffix(_UNIT_SUFFIX[m.unit])}_{BASE_UNITS[m.unit][0]}", BASE_UNITS[m.unit][1])
    for m in LINK_COUNTERS
    if m.unit in BASE_UNITS
}


def _per_second(m: VocabMetric) -> tuple[str, str, str]:
    return m.per_s, f"fabtop_link_{m}_per_second", f"{m.help}, per second over the last interval"


# Per-link gauges of the rate engine: rate name -> (metric, help).
LINK_GAUGES: tuple[tuple[str, str, str], ...] = (
    _per_second(VocabMetric.RX_BYTES),
    _per_second(VocabMetric.TX_BYTES),
    *((d, f"fabtop_link_{d}", d.help)
      for d in (Derived.RX_PAUSE_TIME_RATIO, Derived.TX_PAUSE_TIME_RATIO, Derived.RDMA_SHARE)),
)

# GpuSample field -> (metric, help, scale to base units).
GPU_GAUGES: tuple[tuple[str, str, str, float], ...] = (
    ("utilization_pct", "fabtop_gpu_utilization_percent", "GPU utilization", 1.0),
    ("memory_used_mib", "fabtop_gpu_memory_used_bytes", "GPU memory used", 1048576.0),
    ("memory_total_mib", "fabtop_gpu_memory_total_bytes", "GPU memory size", 1048576.0),
    ("power_w", "fabtop_gpu_power_watts", "GPU power draw", 1.0),
    ("temperature_c", "fabtop_gpu_temperature_celsius", "GPU core temperature", 1.0),
    ("memory_temperature_c", "fabtop_gpu_memory_temperature_celsius",
     "GPU memory (HBM) temperature", 1.0),
    ("sm_clock_mhz", "fabtop_gpu_sm_clock_hertz", "GPU SM clock", 1e6),
)


class FabricCollector(Collector):
    """Builds every metric family from the FabricState at scrape time."""

    def __init__(self, state: FabricState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        """One pass over the state."""
        st = self.state
        up = GaugeMetricFamily("fabtop_host_up", "1 when the host's frames arrive", labels=["host"])
        frames = CounterMetricFamily("fabtop_host_frames", "Frames received from the host",
                                     labels=["host"])
        counters: dict[str, CounterMetricFamily] = {
            m: CounterMetricFamily(f"fabtop_link_{COUNTER_UNITS.get(m, (m, 1.0))[0]}",
                                   f"{m.help} (normalized {m}, DESIGN §3)",
                                   labels=["host", "link", "priority"])
            for m in LINK_COUNTERS
        }
        link_up = GaugeMetricFamily("fabtop_link_up", "1 when the link state is up",
                                    labels=["host", "link"])
        speed = GaugeMetricFamily("fabtop_link_speed_bytes_per_second", "Link speed",
                                  labels=["host", "link"])
        temp = GaugeMetricFamily("fabtop_link_temperature_celsius", "NIC/module temperature",
                                 labels=["host", "link"])
        gauges = {r: GaugeMetricFamily(m, h, labels=["host", "link", "priority"])
                  for r, m, h in LINK_GAUGES}
        gpus = {f: GaugeMetricFamily(m, h, labels=["host", "gpu"]) for f, m, h, _ in GPU_GAUGES}
        tokens = GaugeMetricFamily("fabtop_inference_generated_tokens_per_second",
                                   "Generated tokens per second", labels=["host", "url"])
        tokens_total = CounterMetricFamily("fabtop_inference_generated_tokens",
                                           "Generated tokens", labels=["host", "url"])
        running = GaugeMetricFamily("fabtop_inference_requests_running", "Requests running",
                                    labels=["host", "url"])
        waiting = GaugeMetricFamily("fabtop_inference_requests_waiting", "Requests waiting",
                                    labels=["host", "url"])
        for name, hs in st.hosts.items():
            up.add_metric([name], 1.0 if hs.status == UP and hs.sample is not None else 0.0)
            frames.add_metric([name], float(hs.frames))
            s = hs.sample
            if s is None:
                continue
            rates = hs.rates.links if hs.rates is not None else {}
            for lid, link in s.links.items():
                link_up.add_metric([name, lid], 1.0 if link.state == "up" else 0.0)
                if link.rate_gbps is not None:
                    speed.add_metric([name, lid], link.rate_gbps * 1e9 / 8)
                if link.temperature_c is not None:
                    temp.add_metric([name, lid], link.temperature_c)
                for n, v in link.metrics.items():
                    cfam = counters.get(n)
                    if cfam is not None:
                        _add(cfam, [name, lid], v, COUNTER_UNITS.get(n, (n, 1.0))[1])
                lr = rates.get(lid)
                if lr is not None:
                    for r, gfam in gauges.items():
                        rv = lr.rates.get(r)
                        if rv is not None:
                            _add(gfam, [name, lid], rv)
            for g in s.gpus:
                for f, _, _, scale in GPU_GAUGES:
                    v = getattr(g, f)
                    if v is not None:
                        gpus[f].add_metric([name, str(g.index)], float(v) * scale)
            inf_rates = hs.rates.inference if hs.rates is not None else {}
            for inf in s.inference:
                lab = [name, inf.url]
                rate = (inf_rates.get(inf.url) or {}).get(InferenceRate.GENERATED_TOKENS_PER_S)
                if rate is not None:
                    tokens.add_metric(lab, rate)
                if inf.generated_tokens_total is not None:
                    tokens_total.add_metric(lab, inf.generated_tokens_total)
                if inf.requests_running is not None:
                    running.add_metric(lab, inf.requests_running)
                if inf.requests_waiting is not None:
                    waiting.add_metric(lab, inf.requests_waiting)
        finding = GaugeMetricFamily("fabtop_finding", "1 for each current health finding",
                                    labels=["rule", "severity", "subject"])
        seen: set[tuple[str, str, str]] = set()
        for fd in st.findings:
            key = (fd.rule, fd.severity, fd.subject)
            if key not in seen:  # one series per label set, whatever the rule emitted
                seen.add(key)
                finding.add_metric(list(key), 1.0)
        yield from (up, frames, link_up, speed, temp)
        yield from (fam for fam in counters.values() if fam.samples)
        yield from (fam for fam in gauges.values() if fam.samples)
        yield from (fam for fam in gpus.values() if fam.samples)
        yield from (tokens, tokens_total, running, waiting, finding)


def _add(fam: Any, labels: list[str], v: Any, scale: float = 1.0) -> None:
    # A per-priority value gets one series per priority; a plain one has priority="".
    if isinstance(v, dict):
        for p, x in sorted(v.items()):
            fam.add_metric([*labels, str(p)], float(x) * scale)
    elif isinstance(v, int | float):
        fam.add_metric([*labels, ""], float(v) * scale)


def registry_for(state: FabricState) -> CollectorRegistry:
    """A registry holding only fabtop's collector (no process/platform noise)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(FabricCollector(state))
    return reg


async def serve(registry: CollectorRegistry, host: str, port: int) -> asyncio.Server:
    """Serve ``GET /metrics`` (and ``/``) on the running loop."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass  # headers: nothing in them changes the answer
            parts = line.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            if path.split("?")[0] in ("/metrics", "/"):
                body, status = generate_latest(registry), "200 OK"
                ctype = "text/plain; version=0.0.4; charset=utf-8"
            else:
                body, status, ctype = b"not found\n", "404 Not Found", "text/plain"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                         + body)
            await asyncio.wait_for(writer.drain(), 10)  # a client that never reads
        except (TimeoutError, ConnectionError, ValueError):  # ValueError: a 64 KiB+ line
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.start_server(handle, host, port)


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:9877`` / ``[::1]:9877`` / ``:9877`` -> (host, port); raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--listen {text!r}: want HOST:PORT, e.g. 127.0.0.1:9877")
    return host.strip("[]") or "127.0.0.1", int(port)
