"""Test tools run on a node through the launcher, over a real sshd on loopback: what they
print comes back, and nothing they started outlives the run (done, limit, Ctrl-C, a
dropped connection)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from collectors.launch import run_tool
from collectors.transport.base import TransportError
from tests.conftest import skip_or_fail
from tests.integration.sshd import Sshd, cmdline, free_port

GONE_WITHIN_S = 4.0  # the watcher's EOF, TERM, 1 s grace, KILL


def _running(argv: list[str]) -> list[int]:
    """Live processes anywhere (a process whose session died is no longer under sshd)
    whose argv is ``argv``: each test's sleeps have lengths of their own."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and cmdline(int(d.name)) == argv:
            try:
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                out.append(int(d.name))
    return out


async def _gone(argv: list[str]) -> list[int]:
    end = time.monotonic() + GONE_WITHIN_S
    left = _running(argv)
    while left and time.monotonic() < end:
        await asyncio.sleep(0.05)
        left = _running(argv)
    return left


async def _started(argv: list[str]) -> None:
    end = time.monotonic() + 10
    while not _running(argv):
        assert time.monotonic() < end, f"{argv} never started"
        await asyncio.sleep(0.02)


async def test_a_tool_runs_and_its_output_and_status_come_back(sshd: Sshd) -> None:
    t = sshd.transport("node1")
    await t.connect()
    try:
        # Words a shell would act on arrive as the tool's own, literally.
        words = ["a b", "$(id)", "`id`", ";reboot", "'", '"', "*"]
        run = await run_tool(t, ["printf", r"%s\n", *words], 10)
        assert run.ok and run.status == 0 and not run.timed_out
        assert run.text().splitlines() == words
        failed = await run_tool(t, ["sh", "-c", "echo oops >&2; exit 3"], 10)
        assert (failed.status, failed.ok, failed.text()) == (3, False, "oops\n")
        missing = await run_tool(t, ["ib_write_bw-not-here", "-d", "mlx5_0"], 10)
        assert missing.missing and not missing.ok and missing.output == b""
    finally:
        await t.close()


async def test_a_tool_is_found_in_the_hosts_configured_path(sshd: Sshd, tmp_path: Path) -> None:
    # perftest from source or MLNX_OFED lives outside a non-login SSH session's PATH; the
    # host's `path` (the probe's too) is put in front of it.
    bin_dir = tmp_path / "opt-bin"
    bin_dir.mkdir()
    tool = bin_dir / "ib_write_bw"
    tool.write_text('#!/bin/sh\necho "found: $*"\n')
    tool.chmod(0o755)
    t = sshd.transport("node1")
    await t.connect()
    try:
        run = await run_tool(t, ["ib_write_bw", "-d", "mlx5_0"], 10, (str(bin_dir), "/usr/bin"))
        assert run.ok and run.text() == "found: -d mlx5_0\n"
        assert (await run_tool(t, ["ib_write_bw", "-d", "mlx5_0"], 10)).missing
    finally:
        await t.close()


async def test_iperf3_server_and_client_through_the_launcher(sshd: Sshd) -> None:
    # A real pair: the server (one test, then it exits) and the client on the same node.
    if not os.access("/usr/bin/iperf3", os.X_OK):
        skip_or_fail("iperf3 not installed (apt-get install iperf3)")
    port = str(free_port())
    srv_t, cli_t = sshd.transport("rx"), sshd.transport("tx")
    await srv_t.connect()
    await cli_t.connect()
    try:
        srv_argv = ["iperf3", "-s", "-1", "-J", "-p", port]
        server = asyncio.create_task(run_tool(srv_t, srv_argv, 20))
        await _started(srv_argv)
        client = None
        for _ in range(50):  # the server binds a moment after it starts
            client = await run_tool(
                cli_t, ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"], 20
            )
            if client.ok:
                break
            await asyncio.sleep(0.1)
        assert client is not None and client.ok, client
        srv = await server
        assert srv.ok
        sent = json.loads(client.text())["end"]["sum_sent"]["bytes"]
        got = json.loads(srv.text())["end"]["sum_received"]["bytes"]
        assert sent > 0 and got > 0
        assert await _gone(srv_argv) == []
    finally:
        await srv_t.close()
        await cli_t.close()


async def test_the_limit_ends_the_tool_and_all_it_started(sshd: Sshd) -> None:
    t = sshd.transport("node1")
    await t.connect()
    try:
        # The tool starts a child of its own (a server's worker): both go.
        run = await run_tool(t, ["sh", "-c", "sleep 7331 & sleep 7332; echo never"], 1)
        assert run.timed_out and not run.ok and b"never" not in run.output
        assert run.elapsed_s is not None and 0.9 <= run.elapsed_s < 5
        assert await _gone(["sleep", "7331"]) == [] and await _gone(["sleep", "7332"]) == []
    finally:
        await t.close()


async def test_ctrl_c_ends_the_tool_on_the_node(sshd: Sshd) -> None:
    t = sshd.transport("node1")
    await t.connect()
    try:
        task = asyncio.create_task(run_tool(t, ["sleep", "7333"], 60))
        await _started(["sleep", "7333"])
        task.cancel()  # what Ctrl-C does to a plan's running step
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _gone(["sleep", "7333"]) == []
    finally:
        await t.close()


async def test_a_dropped_connection_ends_the_tool(own_sshd: Sshd) -> None:
    t = own_sshd.transport("node1")
    await t.connect()
    try:
        task = asyncio.create_task(run_tool(t, ["sleep", "7334"], 60))
        await _started(["sleep", "7334"])
        # The connection's server side dies (a crashed sshd session, a rebooted switch
        # on the way): the node's launcher sees its stdin end.
        session = own_sshd.session_pid("limit_s=60")
        assert session is not None
        os.kill(session, signal.SIGKILL)
        assert await _gone(["sleep", "7334"]) == []
        with pytest.raises(TransportError, match="node1"):
            await task  # said, naming the host
    finally:
        await t.close()


async def test_a_kill_on_purpose_ends_the_tool_by_its_pid_and_then_its_group(sshd: Sshd) -> None:
    t = sshd.transport("node1")
    await t.connect()
    try:
        # The tool (a shell, as a server with a worker) prints its own pid; the launcher
        # kills that pid 700 ms in, says so, and its worker goes with the group.
        argv = ["sh", "-c", "echo $$; sleep 7335; echo never"]
        started = time.monotonic()
        run = await run_tool(t, argv, 20, kill_ms=700)
        took = time.monotonic() - started
        assert run.killed_pid == int(run.output.split()[0]) and run.status == 137
        assert run.killed_at_s is not None and 0.7 <= run.killed_at_s < 1.5
        assert b"never" not in run.output and not run.ok and not run.timed_out
        assert took < 5  # not the 20 s limit
        assert await _gone(["sleep", "7335"]) == []
        # A tool done before its kill is not killed: its own status, at once.
        quick = await run_tool(t, ["sh", "-c", "echo done"], 20, kill_ms=5000)
        assert (quick.status, quick.killed_pid, quick.output) == (0, None, b"done\n")
        assert quick.elapsed_s is not None and quick.elapsed_s < 2
    finally:
        await t.close()
