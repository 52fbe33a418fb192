"""The Prometheus endpoint, scraped over real HTTP and parsed; the Prometheus source."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.core.state import FabricState
from fabtop.run.demo import demo_state
from fabtop.run.export import registry_for, serve
from fabtop.run.promsource import PrometheusSource, ethtool_stat_name
from tests.conftest import skip_or_fail

ALLOWED_LABELS = {"host", "link", "priority", "gpu", "url", "rule", "severity", "subject"}


async def _scrape(state: FabricState) -> str:
    server = await serve(registry_for(state), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = await reader.read()
    writer.close()
    server.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    return body.decode()


async def test_scrape_parses_and_carries_the_fabric() -> None:
    state, _, _ = demo_state(until_s=60.0)
    text = await _scrape(state)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    up = {s.labels["host"]: s.value for s in families["fabtop_host_up"].samples}
    assert up == {"node1": 1.0, "node2": 1.0, "node3": 1.0, "node4": 1.0}
    rx = families["fabtop_link_rx_bytes"]
    assert rx.type == "counter" and all(s.name == "fabtop_link_rx_bytes_total" for s in rx.samples)
    pauses = [s for s in families["fabtop_link_tx_pause"].samples if s.labels["priority"] == "3"]
    assert pauses, "the demo's lossless priority 3 has per-priority pause counters"
    for fam in families.values():
        for s in fam.samples:
            assert set(s.labels) <= ALLOWED_LABELS, (fam.name, s.labels)
    finding = {(s.labels["rule"], s.labels["subject"]) for s in families["fabtop_finding"].samples}
    assert ("pfc_storm", "node3/enp65s0f0np0/prio3") in finding
    assert families["fabtop_gpu_temperature_celsius"].samples


async def test_promtool_accepts_the_exposition(tmp_path: object) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
    state, _, _ = demo_state(until_s=20.0)
    text = await _scrape(state)
    run = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True)
    assert run.returncode == 0, run.stderr.decode()


def _vector(name: str, value: float, **labels: str) -> dict[str, object]:
    return {"metric": {"__name__": name, "instance": "gpu7:9100", **labels},
            "value": [1700000000.0 + _vector.t, str(value)]}


_vector.t = 0.0  # type: ignore[attr-defined]


def _api_result(step: int) -> dict[str, list[dict[str, object]]]:
    _vector.t = float(step)  # type: ignore[attr-defined]
    gb = 10**9 * step
    return {
        "node_infiniband": [
            _vector("node_infiniband_port_data_received_bytes_total", 4 * gb, device="mlx5_0",
                    port="1"),
            _vector("node_infiniband_port_data_transmitted_bytes_total", 2 * gb,
                    device="mlx5_0", port="1"),
            _vector("node_infiniband_state_id", 4, device="mlx5_0", port="1"),
            _vector("node_infiniband_rate_bytes_per_second", 50e9, device="mlx5_0", port="1"),
        ],
        "node_ethtool": [
            _vector("node_ethtool_received_prio3_pause", 100 * step, device="eth2"),
            _vector("node_ethtool_received_bytes_phy", gb, device="eth2"),
        ],
        "DCGM_FI_DEV": [
            _vector("DCGM_FI_DEV_GPU_TEMP", 71, gpu="0", UUID="GPU-1"),
            _vector("DCGM_FI_DEV_POWER_USAGE", 350.5, gpu="0", UUID="GPU-1"),
        ],
    }


@pytest.fixture
def prometheus() -> Iterator[tuple[str, list[int]]]:
    step = [1]

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            u = urlsplit(self.path)
            query = parse_qs(u.query).get("query", [""])[0]
            if u.path != "/api/v1/query":
                self.send_error(404)
                return
            result = next((v for k, v in _api_result(step[0]).items() if k in query), [])
            body = json.dumps({"status": "success",
                               "data": {"resultType": "vector", "result": result}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", step
    httpd.shutdown()


async def test_prometheus_source_feeds_the_live_path(prometheus: tuple[str, list[int]]) -> None:
    url, step = prometheus
    src = PrometheusSource(url, interval=1.0)
    src.state = FabricState([])
    assert await src.poll_once() == 1
    step[0] = 2
    assert await src.poll_once() == 1
    hs = src.state.hosts["gpu7"]
    assert hs.sample is not None and hs.rates is not None
    ib = next(ln for ln in hs.sample.links.values() if ln.rdma_device == "mlx5_0")
    assert ib.metrics["rx_bytes"] == 8 * 10**9  # node_exporter's octets, as sysfs words x 4
    assert ib.state == "up" or ib.state == "active"
    rates = hs.rates.links[ib.id].rates
    assert rates["rx_bytes_per_s"] == pytest.approx(4e9)
    eth = next(ln for ln in hs.sample.links.values() if ln.netdev == "eth2")
    assert eth.counters["ethtool"]["rx_prio3_pause"] == 200
    assert hs.sample.gpus[0].temperature_c == 71


def test_ethtool_names_are_restored() -> None:
    assert ethtool_stat_name("node_ethtool_received_prio3_pause") == "rx_prio3_pause"
    assert ethtool_stat_name("node_ethtool_transmitted_pause_ctrl_phy") == "tx_pause_ctrl_phy"
    assert ethtool_stat_name("node_ethtool_rx_vport_rdma_unicast_bytes") == \
        "rx_vport_rdma_unicast_bytes"
