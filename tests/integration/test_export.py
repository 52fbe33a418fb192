"""The Prometheus endpoint, scraped over real HTTP and parsed; the Prometheus source."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.core.state import FabricState
from fabtop.run.demo import demo_state, feed_until
from fabtop.run.export import registry_for, serve
from fabtop.run.promsource import PrometheusSource, ethtool_stat_name
from tests.conftest import REPO, skip_or_fail

ALLOWED_LABELS = {"host", "link", "priority", "gpu", "url", "rule", "severity", "subject", "source"}
# The info series' facts (docs/EXPORT.md): bounded by the fabric or by fabtop's own words.
INFO_LABELS = {
    "shard", "version", "state", "netdev", "rdma_device", "port", "kind", "link_layer",
    "node_type", "driver", "driver_version", "firmware", "port_state", "phys_state", "bound",
    "trust", "point", "dscp", "buffer", "name", "uuid", "bus_id", "vendor", "reason",
    "direction", "server", "model", "percentile", "self_uid", "peer_uid", "peer_name",
    "peer_host", "peer_port", "status", "software", "note", "field", "value", "detail", "uid",
    "identifier", "part", "serial", "connector", "rx_power_kind", "lane", "quantity",
    "limit", "flag", "configured", "active", "histogram", "device", "reporter", "auto_recover",
    "last_dump", "counted_from",
}  # fmt: skip


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
    assert up == dict.fromkeys(state.hosts, 1.0)
    rx = families["fabtop_link_rx_bytes"]
    assert rx.type == "counter" and all(s.name == "fabtop_link_rx_bytes_total" for s in rx.samples)
    pauses = [s for s in families["fabtop_link_tx_pause"].samples if s.labels["priority"] == "3"]
    assert pauses, "the demo's lossless priority 3 has per-priority pause counters"
    for fam in families.values():
        for s in fam.samples:
            assert set(s.labels) <= ALLOWED_LABELS | INFO_LABELS, (fam.name, s.labels)
    finding = {(s.labels["rule"], s.labels["subject"]) for s in families["fabtop_finding"].samples}
    assert ("pfc_storm", "node3/enp65s0f0np0/prio3") in finding
    assert families["fabtop_gpu_temperature_celsius"].samples


async def test_pfc_map_and_thermal_slowdown_are_exported_for_the_alerts() -> None:
    """What the mixin's alerts on pauses without PFC, lossless drops and thermal slowdown
    read: the lossless priorities the rules use and the GPU's thermal slowdown level."""
    state, _, _ = demo_state(until_s=120.0)  # the demo's GPU thermal episode: node4 GPU 1
    text = await _scrape(state)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    pfc = {
        (s.labels["host"], s.labels["link"], s.labels["priority"]): s.value
        for s in families["fabtop_link_pfc_enabled"].samples
    }
    assert pfc[("node1", "enp65s0f0np0", "3")] == 1.0  # the demo's lossless priority
    assert pfc[("node1", "enp65s0f0np0", "0")] == 0.0
    assert {k[2] for k in pfc} == {str(p) for p in range(8)}
    slow = {
        (s.labels["host"], s.labels["gpu"]): s.value
        for s in families["fabtop_gpu_thermal_slowdown"].samples
    }
    assert slow[("node4", "1")] == 2.0  # hardware slowdown: fabtop's finding is critical
    assert slow[("node4", "0")] == 0.0
    assert any(f.rule == "gpu_thermal_slowdown" for f in state.findings)


async def test_a_host_gone_silent_is_not_up() -> None:
    """fabtop_host_up says what the host_stale finding says: a silent host is blind."""
    state, clock, fab = demo_state(until_s=20.0)
    feed_until(fab, state, clock, 21.0, 40.0, silent=("node2",))
    families = {f.name: f for f in text_string_to_metric_families(await _scrape(state))}
    up = {s.labels["host"]: s.value for s in families["fabtop_host_up"].samples}
    assert up["node2"] == 0.0 and up["node1"] == 1.0
    assert any(f.rule == "host_stale" and f.subject == "node2" for f in state.findings)


async def test_promtool_accepts_the_exposition(tmp_path: object) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
    state, _, _ = demo_state(until_s=20.0)
    text = await _scrape(state)
    run = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True)
    assert run.returncode == 0, run.stderr.decode()


def _vector(name: str, value: float, **labels: str) -> dict[str, object]:
    return {
        "metric": {"__name__": name, "instance": "gpu7:9100", **labels},
        "value": [1700000000.0 + _vector.t, str(value)],
    }


_vector.t = 0.0  # type: ignore[attr-defined]


def _api_result(step: int) -> dict[str, list[dict[str, object]]]:
    _vector.t = float(step)  # type: ignore[attr-defined]
    gb = 10**9 * step
    return {
        "node_infiniband": [
            _vector(
                "node_infiniband_port_data_received_bytes_total", 4 * gb, device="mlx5_0", port="1"
            ),
            _vector(
                "node_infiniband_port_data_transmitted_bytes_total",
                2 * gb,
                device="mlx5_0",
                port="1",
            ),
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
            body = json.dumps(
                {"status": "success", "data": {"resultType": "vector", "result": result}}
            ).encode()
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


async def test_an_active_ib_port_is_up(fixtures_dir: Path) -> None:
    # node_exporter's archived sysfs: IB ports whose state file says "4: ACTIVE".
    from collectors.frames import Frame, Section
    from fabtop.config import HostConfig
    from tests.unit.test_parse_sysfs import sysfs_dump

    root = fixtures_dir / "sysfs/prometheus_node_exporter/sys/class/infiniband"
    state = FabricState([HostConfig(name="ib1")])
    t = 1_700_000_000_000_000_000
    state.apply_frame(
        "ib1",
        Frame(1, t, 100.0, t / 1e9, [Section("sysib", None, t, "ok", None, sysfs_dump(root))]),
    )
    families = {f.name: f for f in text_string_to_metric_families(await _scrape(state))}
    up = {s.labels["link"]: s.value for s in families["fabtop_link_up"].samples}
    assert up == {"mlx4_0/1": 1.0, "mlx4_0/2": 1.0, "i40iw0/1": 1.0}


async def test_an_unreachable_prometheus_is_said_not_an_empty_fabric(
    prometheus: tuple[str, list[int]],
) -> None:
    from tests.integration.sshd import free_port

    closed = f"http://127.0.0.1:{free_port()}"
    src = PrometheusSource(closed, interval=1.0)
    src.state = state = FabricState([])
    assert await src.poll_once() == 0
    text = await _scrape(state)
    name = f"Prometheus at {closed}"
    assert f'fabtop_source_up{{source="{name}"}} 0.0' in text
    assert (
        'fabtop_finding{host="",link="",priority="",rule="source_unreachable",'
        f'severity="critical",subject="{name}"}} 1.0'
    ) in text
    (f,) = state.findings
    assert f.summary.startswith(f"{name} did not answer: URLError: ")
    assert "refused" in f.summary
    # The same source once it answers: up, the finding gone, the node there.
    url, _ = prometheus
    ok = PrometheusSource(url, interval=1.0)
    ok.state = state2 = FabricState([])
    text = await _scrape(state2)
    assert f'fabtop_source_up{{source="Prometheus at {url}"}} 0.0' in text  # not yet asked
    assert await ok.poll_once() == 1
    text = await _scrape(state2)
    assert f'fabtop_source_up{{source="Prometheus at {url}"}} 1.0' in text
    assert "source_unreachable" not in text and 'fabtop_host_up{host="gpu7",shard=""} 1.0' in text


def test_export_from_an_unreachable_prometheus_says_so(tmp_path: Path) -> None:
    from tests.integration.sshd import free_port

    port, closed = free_port(), f"http://127.0.0.1:{free_port()}"
    err = tmp_path / "err"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui",
            "export",
            "--from-prometheus",
            closed,
            "--interval",
            "0.5",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=open(err, "wb"),  # noqa: SIM115 (the child holds it)
    )
    try:
        body = ""
        end = time.monotonic() + 20
        while "source_unreachable" not in body and time.monotonic() < end:
            time.sleep(0.2)
            with contextlib.suppress(OSError):
                body = asyncio.run(_real_scrape(port, 5))[1]
        assert f'fabtop_source_up{{source="Prometheus at {closed}"}} 0.0' in body
        assert "source_unreachable" in body
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(20)
    text = err.read_text()
    assert f"for the nodes Prometheus at {closed} reports" in text
    assert f"fabtop: export: Prometheus at {closed} did not answer: URLError" in text
    assert "0 host(s)" not in text and "Traceback" not in text


def test_ethtool_names_are_restored() -> None:
    assert ethtool_stat_name("node_ethtool_received_prio3_pause") == "rx_prio3_pause"
    assert ethtool_stat_name("node_ethtool_transmitted_pause_ctrl_phy") == "tx_pause_ctrl_phy"
    assert (
        ethtool_stat_name("node_ethtool_rx_vport_rdma_unicast_bytes")
        == "rx_vport_rdma_unicast_bytes"
    )


# --- bounded under abuse: slow clients, a flood of scrapes, stderr -------------------


def _start_export(tmp: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    """`fabtop export --demo` as a user starts it, at the usual 1024-descriptor soft limit."""
    import resource

    from tests.integration.sshd import free_port

    port = free_port()
    err = tmp / "export.stderr"

    def limit() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))

    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "export", "--demo", "--listen", f"127.0.0.1:{port}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=open(err, "wb"),  # noqa: SIM115 (the child holds it)
        preexec_fn=limit,
    )
    end = time.monotonic() + 20
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return proc, port, err
        time.sleep(0.1)
    proc.kill()
    pytest.fail("fabtop export did not start listening")


def _own_fd_room(n: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < n:
        skip_or_fail(f"needs {n} descriptors for the clients, hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, n), hard))


async def _real_scrape(port: int, timeout: float) -> tuple[float, str]:
    start = time.monotonic()
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = await asyncio.wait_for(reader.read(), timeout - (time.monotonic() - start))
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:100]
    return time.monotonic() - start, body.decode()


async def _slow_client(port: int, stop: asyncio.Event, opened: list[int]) -> None:
    # A slowloris: a request that never ends, one byte at a time.
    with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 20)
        opened.append(1)
        writer.write(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
            writer.write(b"a")
            await writer.drain()
        writer.close()


async def test_slow_clients_never_lock_a_real_scrape_out_and_stderr_stays_small(
    tmp_path: Path,
) -> None:
    from fabtop.run.export import REQUEST_DEADLINE_S

    _own_fd_room(3000 + 200)
    proc, port, err = _start_export(tmp_path)
    try:
        await _real_scrape(port, 20)  # the demo is up
        stop, opened = asyncio.Event(), []
        slow = [asyncio.create_task(_slow_client(port, stop, opened)) for _ in range(3000)]
        end = time.monotonic() + 20
        while len(opened) < 2900 and time.monotonic() < end:
            await asyncio.sleep(0.2)  # every slow client connected (a slow machine: longer)
        assert len(opened) > 2000, len(opened)
        took, body = await _real_scrape(port, REQUEST_DEADLINE_S)
        assert "fabtop_host_up" in body and took < REQUEST_DEADLINE_S
        await asyncio.sleep(REQUEST_DEADLINE_S + 2)  # past the deadline of every slow one
        took, body = await _real_scrape(port, REQUEST_DEADLINE_S)
        assert "fabtop_link_rx_bytes_total" in body
        stop.set()
        await asyncio.gather(*slow)
        assert proc.poll() is None, "the exporter died"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(20)
    text = err.read_text(errors="replace")
    assert "Traceback" not in text
    assert len(text) < 4096, text[-2000:]
    assert proc.returncode == 0


async def test_3000_concurrent_scrapes_are_all_answered(tmp_path: Path) -> None:
    _own_fd_room(3000 + 200)
    proc, port, err = _start_export(tmp_path)
    try:
        await _real_scrape(port, 20)
        results = await asyncio.gather(
            *(_real_scrape(port, 60) for _ in range(3000)), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        assert not failed, (len(failed), repr(failed[0]))
        assert all("fabtop_host_up" in r[1] for r in results if not isinstance(r, BaseException))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(20)
    assert "Traceback" not in err.read_text(errors="replace")


async def test_a_full_table_pushes_out_slow_clients_for_a_real_scrape() -> None:
    from fabtop.run.export import PUSH_OUT_AFTER_S, ErrorLog

    state, _, _ = demo_state(until_s=20.0)
    log = io.StringIO()
    server = await serve(
        registry_for(state), "127.0.0.1", 0, max_connections=64, log=ErrorLog(stream=log)
    )
    port = server.sockets[0].getsockname()[1]
    try:
        stop, opened = asyncio.Event(), []
        slow = [asyncio.create_task(_slow_client(port, stop, opened)) for _ in range(400)]
        end = time.monotonic() + 20
        while len(opened) < 64 and time.monotonic() < end:
            await asyncio.sleep(0.05)  # the table is full (a slow machine: longer)
        assert len(opened) >= 64, len(opened)
        took, body = await _real_scrape(port, 10.0)
        assert "fabtop_host_up" in body
        assert took < 10 * PUSH_OUT_AFTER_S  # the slow ones made room, one per second or less
        stop.set()
        await asyncio.gather(*slow)
    finally:
        server.close()
    assert log.getvalue() == ""


def test_error_log_is_one_line_per_interval_with_a_count() -> None:
    from fabtop.run.export import ErrorLog

    now = [0.0]
    out = io.StringIO()
    log = ErrorLog(every_s=10.0, stream=out, clock=lambda: now[0])
    for i in range(10000):
        now[0] = i * 0.001  # 10,000 errors in 10 s
        log.say("accept failed: Too many open files\x1b]0;x\x07")
    now[0] = 10.5
    log.say("accept failed: Too many open files")
    lines = out.getvalue().splitlines()
    assert lines == [
        "fabtop: export: accept failed: Too many open files",
        "fabtop: export: accept failed: Too many open files (9999 more in the last 10 s not shown)",
    ]
