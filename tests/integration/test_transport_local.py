"""LocalTransport: subprocess probe, PATH prefix, netlink statistics."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from collectors.transport.base import TransportError
from collectors.transport.local import LocalTransport, read_netlink_stats
from tests.conftest import skip_or_fail


async def test_stream_uses_path_prefix_and_arrives_before_exit(tmp_path: Path) -> None:
    tool = tmp_path / "ethtool"
    tool.write_text('#!/bin/sh\necho "fake ethtool $*"\n')
    tool.chmod(0o755)
    t = LocalTransport("node1", env_path_prefix=[str(tmp_path)])
    # stdin stays open after the script (the probe's end of life is its EOF): a script
    # that is done says so itself.
    script = 'ethtool -S "$1"; sleep 0.4; echo done; exit\n'
    arrivals: list[tuple[float, bytes]] = []
    async for chunk in t.stream(script, ["eth 0"]):
        arrivals.append((time.monotonic(), chunk))
    assert b"".join(c for _, c in arrivals) == b"fake ethtool -S eth 0\ndone\n"
    assert arrivals[-1][0] - arrivals[0][0] > 0.3


async def test_stream_failure_names_host_and_stderr() -> None:
    t = LocalTransport("node1")
    with pytest.raises(TransportError, match=r"^node1 \(local\): probe exited with status 2: nope"):
        async for _ in t.stream("echo nope >&2; exit 2\n", []):
            pass


async def test_closing_the_stream_early_kills_the_probe() -> None:
    t = LocalTransport()
    gen = t.stream("echo $$; sleep 30 & wait\n", [])
    pid = int((await gen.__anext__()).split()[0])
    await gen.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_run_times_out() -> None:
    t = LocalTransport("node1")
    assert await t.run(["sh", "-c", "echo out; echo err >&2; exit 3"], 5) == (3, b"out\n", b"err\n")
    start = time.monotonic()
    with pytest.raises(TransportError, match=r"timed out after 0\.3 s"):
        await t.run(["sleep", "10"], 0.3)
    assert time.monotonic() - start < 2


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(f"path={self.path}\n".encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


async def test_http_get(http_port: int) -> None:
    assert await LocalTransport().http_get("127.0.0.1", http_port, "/metrics", 5) == (
        200,
        b"path=/metrics\n",
    )


class _Big(BaseHTTPRequestHandler):
    """/big: 9 MiB with Content-Length; /stream: 9 MiB without one (read to EOF)."""

    def do_GET(self) -> None:
        body = b"x" * (9 * 1024 * 1024)
        self.send_response(200)
        if self.path == "/big":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # we hang up once over the cap
            for i in range(0, len(body), 65536):
                self.wfile.write(body[i : i + 65536])

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def big_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


async def test_http_get_refuses_a_body_over_the_cap(big_port: int) -> None:
    t = LocalTransport("node1")
    with pytest.raises(TransportError, match=r"body of 9437184 bytes .* over the 8388608-byte"):
        await t.http_get("127.0.0.1", big_port, "/big", 5)
    with pytest.raises(TransportError, match=r"^node1 \(local\): .*/stream: HTTP body larger "):
        await t.http_get("127.0.0.1", big_port, "/stream", 5)
    status, body = await t.http_get("127.0.0.1", big_port, "/stream", 5, max_bytes=10 << 20)
    assert status == 200 and len(body) == 9 * 1024 * 1024


def test_netlink_stats_match_sysfs_for_lo() -> None:
    sysfs = Path("/sys/class/net/lo/statistics")
    if not sysfs.is_dir():
        skip_or_fail("no /sys/class/net/lo (network namespace without loopback?)")
    # Put some traffic on lo so the counters are not all zero.
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx,
    ):
        rx.bind(("127.0.0.1", 0))
        for _ in range(20):
            tx.sendto(b"x" * 1000, rx.getsockname())
    before = {n: int((sysfs / n).read_text()) for n in ("rx_bytes", "rx_packets", "tx_bytes")}
    stats = read_netlink_stats()
    after = {n: int((sysfs / n).read_text()) for n in before}
    assert "lo" in stats
    for name, low in before.items():
        # Other processes may use lo meanwhile: netlink's value lies between the two reads.
        assert low <= stats["lo"][name] <= after[name], name
    assert stats["lo"]["rx_bytes"] >= 20_000
