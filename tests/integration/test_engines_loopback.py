"""Real iperf3 and sockperf runs over loopback, started from the engines' own argv words
(no shell) and read back by their parsers: what a test on a node would see.

Each run lasts one second; the servers are ended by their PIDs. perftest is not run
here (no RDMA device on this kernel): its parser is checked on captures.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from collectors.engines import (
    Iperf3Run,
    SockperfRun,
    iperf3_argv,
    missing_tool_line,
    sockperf_argv,
)
from collectors.parsers.iperf3 import parse_iperf3
from collectors.parsers.sockperf import parse_sockperf
from tests.conftest import skip_or_fail

LOOPBACK = "127.0.0.1"


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        skip_or_fail(missing_tool_line("localhost", tool))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _bound(port: int, udp: bool) -> bool:
    """Whether a socket listens (TCP) or is bound (UDP) on ``port``, read from the kernel:
    connecting would use up iperf3's one-off server."""
    want = f":{port:04X}"
    tables = ("/proc/net/udp", "/proc/net/udp6") if udp else ("/proc/net/tcp", "/proc/net/tcp6")
    for table in tables:
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(want) and (udp or fields[3] == "0A"):
                return True
    return False


@contextmanager
def _server(argv: list[str], port: int, udp: bool = False) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 10
        while not _bound(port, udp):
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.communicate()[0] if proc.poll() is not None else ""
                pytest.fail(f"{argv[4]} server did not start: {out[-500:]}")
            time.sleep(0.02)
        yield proc
    finally:
        _end(proc)


def _end(proc: subprocess.Popen[str]) -> None:
    """End a bounded run by its PID: SIGTERM, which ``timeout`` passes on to the tool.
    (SIGKILL would end the wrapper alone and leave the tool running, unbounded.)"""
    if proc.poll() is None:
        proc.terminate()
    proc.communicate(timeout=10)


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(c) for c in text.split()]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_iperf3_client_and_server_over_loopback() -> None:
    _need("iperf3")
    port = _free_port()
    server = iperf3_argv(Iperf3Run(port, bind=LOOPBACK, duration_s=1))
    client = iperf3_argv(Iperf3Run(port, server=LOOPBACK, duration_s=1, streams=2))
    with _server(server, port) as srv:
        done = _run(client)
        server_out = srv.communicate(timeout=20)[0]  # -1: it exits after the one client
    r = parse_iperf3(done.stdout)
    assert r.ok, (r.error, done.stderr)
    assert (r.role, r.protocol, r.streams, r.duration_s) == ("client", "TCP", 2, 1)
    assert r.received is not None and r.received.bytes and r.received.bits_per_second
    assert r.received.bits_per_second > 1e6  # loopback moves far more than a Mbit/s
    assert r.sent is not None and r.sent.retransmits is not None
    assert len(r.intervals) >= 1
    s = parse_iperf3(server_out)
    assert s.ok and s.role == "server"
    assert s.received is not None and s.received.bytes == r.received.bytes


def test_iperf3_refused_is_one_line() -> None:
    _need("iperf3")
    done = _run(iperf3_argv(Iperf3Run(_free_port(), server=LOOPBACK, duration_s=1)))
    r = parse_iperf3(done.stdout)
    assert not r.ok
    assert r.error is not None and r.error.startswith("iperf3: unable to connect to server")


@pytest.mark.parametrize("tcp", [True, False], ids=["tcp", "udp"])
def test_sockperf_ping_pong_over_loopback_with_every_sample(tcp: bool) -> None:
    _need("sockperf")
    port = _free_port()
    log_dir = tempfile.mkdtemp(prefix="fabtop-", dir="/tmp")
    try:
        server = sockperf_argv(SockperfRun(LOOPBACK, port, tcp=tcp, duration_s=1))
        run = SockperfRun(
            LOOPBACK, port, server=LOOPBACK, tcp=tcp, duration_s=1, mps=2000, log_dir=log_dir
        )
        with _server(server, port, udp=not tcp):
            done = _run(sockperf_argv(run))
        summary = parse_sockperf(done.stdout + done.stderr)
        log = parse_sockperf((Path(log_dir) / run.log_file).read_text())
    finally:
        shutil.rmtree(log_dir)
    assert summary.ok, summary.error
    assert summary.received and summary.received > 100
    assert summary.dropped == 0
    assert summary.avg_us is not None and summary.avg_us > 0
    assert summary.percentiles_us["99.900"] >= summary.percentiles_us["50.000"] > 0
    assert log.ok and log.warnings == []
    assert len(log.samples_us) == summary.received
    assert max(log.samples_us) == pytest.approx(summary.max_us, abs=0.002)


def test_sockperf_without_server_is_one_line() -> None:
    _need("sockperf")
    argv = sockperf_argv(SockperfRun(LOOPBACK, _free_port(), server=LOOPBACK, duration_s=1))
    done = _run(argv)
    r = parse_sockperf(done.stdout + done.stderr)
    assert not r.ok
    assert r.error == "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)"


def test_ending_the_bounded_run_by_its_pid_ends_the_tool() -> None:
    """The orchestration ends a run by the PID it started (the ``timeout`` wrapper): the
    tool under it must end too, or a server would wait for a client forever."""
    _need("sockperf")
    port = _free_port()
    with _server(sockperf_argv(SockperfRun(LOOPBACK, port, duration_s=60)), port) as proc:
        (tool,) = _children(proc.pid)
        assert _alive(tool)
        _end(proc)
    deadline = time.monotonic() + 10
    while _alive(tool) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(tool)
    assert not _bound(port, udp=False)
