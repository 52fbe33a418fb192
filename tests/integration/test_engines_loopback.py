"""Real iperf3 and sockperf runs over loopback, started from the engines' own argv words
(no shell) and read back by their parsers: what a test on a node would see.

Every run goes through the launcher over the real sshd on loopback, as ``fabtop test``
runs it on a node; each lasts about one second, and a server left waiting is ended with
its run. perftest is not run here (no RDMA device on this kernel): its parser is checked
on captures.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from collectors.engines import (
    Command,
    Iperf3Run,
    SockperfRun,
    iperf3_argv,
    missing_tool_line,
    sockperf_argv,
)
from collectors.launch import ToolRun, run_tool
from collectors.parsers.iperf3 import parse_iperf3
from collectors.parsers.sockperf import parse_sockperf
from collectors.transport.base import Transport
from tests.conftest import skip_or_fail
from tests.integration.sshd import Sshd

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


@asynccontextmanager
async def _server(
    node: Transport, cmd: Command, port: int, udp: bool = False
) -> AsyncIterator[asyncio.Task[ToolRun]]:
    """The server side through the launcher, up once its socket is bound; ended (the
    launcher's process group) when the block leaves, whatever happened in it."""
    task = asyncio.create_task(run_tool(node, cmd.argv, cmd.limit_s))
    try:
        deadline = time.monotonic() + 10
        while not _bound(port, udp):
            if task.done() or time.monotonic() > deadline:
                out = task.result().text() if task.done() else ""
                pytest.fail(f"{cmd.argv[0]} server did not start: {out[-500:]}")
            await asyncio.sleep(0.02)
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _run(node: Transport, cmd: Command) -> ToolRun:
    return await run_tool(node, cmd.argv, cmd.limit_s)


@pytest.fixture
async def node(sshd: Sshd) -> AsyncIterator[Transport]:
    """One node over the real sshd on loopback: every run goes through the launcher."""
    t = sshd.transport("loopback")
    await t.connect()
    try:
        yield t
    finally:
        await t.close()


async def test_iperf3_client_and_server_over_loopback(node: Transport) -> None:
    _need("iperf3")
    port = _free_port()
    server = iperf3_argv(Iperf3Run(port, bind=LOOPBACK, duration_s=1))
    client = iperf3_argv(Iperf3Run(port, server=LOOPBACK, duration_s=1, streams=2))
    async with _server(node, server, port) as srv:
        done = await _run(node, client)
        served = await srv  # -1: it exits after the one client
    r = parse_iperf3(done.text())
    assert r.ok and done.ok, (r.error, done)
    assert (r.role, r.protocol, r.streams, r.duration_s) == ("client", "TCP", 2, 1)
    assert r.received is not None and r.received.bytes and r.received.bits_per_second
    assert r.received.bits_per_second > 1e6  # loopback moves far more than a Mbit/s
    assert r.sent is not None and r.sent.retransmits is not None
    assert len(r.intervals) >= 1
    s = parse_iperf3(served.text())
    assert s.ok and served.ok and s.role == "server"
    assert s.received is not None and s.received.bytes == r.received.bytes


async def test_iperf3_refused_is_one_line(node: Transport) -> None:
    _need("iperf3")
    done = await _run(node, iperf3_argv(Iperf3Run(_free_port(), server=LOOPBACK, duration_s=1)))
    r = parse_iperf3(done.text())
    # iperf3 3.12 with -J exits 0 on a refused connection: the JSON says it, not the status.
    assert not r.ok and done.status is not None and not done.timed_out
    assert r.error is not None and r.error.startswith("iperf3: unable to connect to server")


@pytest.mark.parametrize("tcp", [True, False], ids=["tcp", "udp"])
async def test_sockperf_ping_pong_over_loopback_with_every_sample(
    node: Transport, tcp: bool
) -> None:
    _need("sockperf")
    port = _free_port()
    log_dir = tempfile.mkdtemp(prefix="fabtop-", dir="/tmp")
    try:
        server = sockperf_argv(SockperfRun(LOOPBACK, port, tcp=tcp, duration_s=1))
        run = SockperfRun(
            LOOPBACK, port, server=LOOPBACK, tcp=tcp, duration_s=1, mps=2000, log_dir=log_dir
        )
        async with _server(node, server, port, udp=not tcp):
            done = await _run(node, sockperf_argv(run))
        summary = parse_sockperf(done.text())
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


async def test_sockperf_without_server_is_one_line(node: Transport) -> None:
    _need("sockperf")
    cmd = sockperf_argv(SockperfRun(LOOPBACK, _free_port(), server=LOOPBACK, duration_s=1))
    r = parse_sockperf((await _run(node, cmd)).text())
    assert not r.ok
    assert r.error == "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)"


async def test_a_server_waiting_for_a_client_is_ended_with_its_run(node: Transport) -> None:
    """A sockperf server waits for a client forever: leaving its run (done, Ctrl-C) ends
    it on the node, and its port is free again."""
    _need("sockperf")
    port = _free_port()
    async with _server(node, sockperf_argv(SockperfRun(LOOPBACK, port, duration_s=60)), port):
        pass
    deadline = time.monotonic() + 5
    while _bound(port, udp=False) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _bound(port, udp=False)
