"""Nothing of the probe outlives its connection: stdin EOF, dropped SSH channels, reconnects.

Each probe here runs with a hung nvidia-smi (persistent, like ``nvidia-smi -lms``) and a
sysfs read that blocks (a file swapped for a FIFO after the scan: the reader sits in
open(2), as on a wedged driver attribute), so the probe has a process that never writes
and one the probe itself never waits for. Processes are counted by session: the probe
leads its own (sshd's setsid plus ``exec sh``; LocalTransport's new session).
"""

# The node and run_probe fixtures come from test_probe.py and are parameters here.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder
from collectors.probe import ProbeArgs, build_argv, probe_script
from tests.integration.sshd import Sshd
from tests.integration.test_probe import (  # noqa: F401
    Probe,
    _args,
    _frame_with,
    _nvidia_shim,
    _shell_argv,
    _start,
    node,
    run_probe,
)

REPO = Path(__file__).resolve().parents[2]
BLOCKED = "class/net/eth0/statistics/rx_dropped"
GONE_WITHIN_S = 4.0  # the watcher's EOF, TERM, 1 s grace, KILL


def _stat(pid: int) -> list[str] | None:
    try:
        raw = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()  # state ppid pgrp session ...


def _members(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``."""
    out: list[int] = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None and st[0] != "Z" and int(st[3]) == sid:
                out.append(int(d.name))
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _wait_gone(sid: int, within_s: float = GONE_WITHIN_S) -> list[int]:
    end = time.monotonic() + within_s
    left = _members(sid)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = _members(sid)
    return left


def _describe(pids: list[int]) -> str:
    return "; ".join(f"{p}: {' '.join(_cmdline(p))[:80]}" for p in pids)


def _probe_sessions(node: Path, flag: str = "-s") -> list[int]:
    """Sessions led by a probe of this node tree (its argv names our sysfs root): the sh
    probe's shell (``sh -s``) or, with ``flag="-c"``, the python3 of the fast probe."""
    word = f"sysfs={node}/sys"
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        argv = _cmdline(int(d.name))
        st = _stat(int(d.name))
        if word in argv and flag in argv and st is not None and int(st[3]) == int(d.name):
            out.append(int(d.name))
    return sorted(out)


def _restore(node: Path) -> Path:
    """rx_dropped back as a regular file (the scan lists it), returned for the swap."""
    victim = node / "sys" / BLOCKED
    with contextlib.suppress(FileNotFoundError):
        victim.unlink()
    victim.write_text("1002\n")
    return victim


def _swap_for_fifo(victim: Path) -> None:
    victim.unlink()
    os.mkfifo(victim)


def _lifetime_args(node: Path, fixtures_dir: Path) -> ProbeArgs:
    fields = _nvidia_shim(node, fixtures_dir, hang=True)
    return _args(
        node,
        max_frames=0,
        slow_ticks=100000,
        gpu="auto",
        gpu_fields=tuple(fields.split(",")),
    )


def _waits_on_pipe(pid: int) -> bool:
    """A member may exit between the listing and this read: gone is not blocked."""
    try:
        wchan = (Path("/proc") / str(pid) / "wchan").read_text().strip()
    except OSError:
        return False
    return wchan.startswith("fifo") or "pipe" in wchan


def _has_hung_gpu_and_blocked_reader(sid: int) -> None:
    argvs = [_cmdline(p) for p in _members(sid)]
    assert ["sleep", "100"] in argvs, argvs  # the hung nvidia-smi (exec sleep 100)
    # the abandoned reader: a shell blocked opening the FIFO
    blocked = [p for p in _members(sid) if _waits_on_pipe(p)]
    assert blocked, _describe(_members(sid))


def test_closing_stdin_ends_every_process(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    victim = _restore(node)
    probe = _start(run_probe, _shell_argv("dash", _lifetime_args(node, fixtures_dir)), node)
    assert len(probe.frames(2)) == 2
    _swap_for_fifo(victim)
    _frame_with(probe, f"skipped from now on: {BLOCKED}", deadline_s=6)
    sid = probe.proc.pid
    _has_hung_gpu_and_blocked_reader(sid)
    assert probe.proc.stdin is not None
    probe.proc.stdin.close()  # fabtop or the channel went away: nothing else is said
    left = _wait_gone(sid)
    assert left == [], _describe(left)
    assert probe.proc.wait(timeout=1) != 0  # ended by its watcher, not by max_frames


def test_max_frames_ends_the_group_too(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    # The CI flake this replaces: the hung nvidia-smi outlived a probe that ended on its own.
    args = replace(_lifetime_args(node, fixtures_dir), max_frames=3)
    probe = _start(run_probe, _shell_argv("dash", args), node)
    assert [f.seq for f in probe.frames(3)] == [1, 2, 3]
    assert probe.proc.wait(timeout=3) == 0
    left = _wait_gone(probe.proc.pid)
    assert left == [], _describe(left)


@pytest.mark.parametrize("kind", ["sh", "python"])
def test_a_probe_that_does_not_lead_its_group_never_kills_its_caller(
    kind: str, node: Path, run_probe: list[Probe]
) -> None:
    # Someone runs the probe from another program, in that program's process group: a
    # group kill would kill the caller and its other children. It ends only its own.
    argv = " ".join(build_argv(_args(node, max_frames=0, probe=kind)))
    caller = ["sh", "-c", f"sleep 60 & dash -s -- {argv}; echo caller-still-here >&2; wait"]
    probe = Probe(caller, node)
    run_probe.append(probe)
    assert len(probe.frames(2)) == 2
    sid = probe.proc.pid
    sibling = [p for p in _members(sid) if _cmdline(p) == ["sleep", "60"]]
    # the sh probe's shell, or the python3 that replaced it (same pid, same arguments)
    shells = [p for p in _members(sid) if f"probe={kind}" in _cmdline(p)]
    assert len(sibling) == 1 and shells
    assert probe.proc.stdin is not None
    probe.proc.stdin.close()
    end = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < end and any(_stat(p) for p in shells):
        time.sleep(0.05)
    assert [p for p in shells if (st := _stat(p)) and st[0] != "Z"] == []
    assert _stat(sibling[0]) is not None and _stat(sibling[0])[0] != "Z"  # type: ignore[index]
    assert probe.proc.poll() is None  # the caller waits for its sleep, alive


async def _frames(gen: AsyncGenerator[bytes, None], n: int) -> list[Frame]:
    decoder = FrameDecoder()
    got: list[Frame] = []
    async with asyncio.timeout(10):
        async for chunk in gen:
            got += decoder.feed(chunk)
            if len(got) >= n:
                break
    return got


async def _wait_gone_async(sid: int) -> list[int]:
    end = time.monotonic() + GONE_WITHIN_S
    left = _members(sid)
    while left and time.monotonic() < end:
        await asyncio.sleep(0.05)
        left = _members(sid)
    return left


async def _wait_blocked_reader(node: Path) -> int:
    """The one live probe session once its reader blocked and was abandoned."""
    end = time.monotonic() + 6
    while time.monotonic() < end:
        sids = _probe_sessions(node)
        if len(sids) == 1 and any(_cmdline(p) == ["sleep", "100"] for p in _members(sids[0])):
            with contextlib.suppress(AssertionError):
                _has_hung_gpu_and_blocked_reader(sids[0])
                return sids[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no blocked probe session: {_probe_sessions(node)}")


@pytest.mark.sshd
async def test_dropped_ssh_connections_leave_nothing_on_the_node(
    sshd: Sshd, node: Path, fixtures_dir: Path
) -> None:
    argv = build_argv(_lifetime_args(node, fixtures_dir))
    script = probe_script()
    # Three ways a connection goes: closed by fabtop, the session's sshd killed (the
    # channel dies without a word), the connection closed under a running stream.
    for how in ("close", "kill-sshd-session", "close-connection-first"):
        victim = _restore(node)
        t = sshd.transport()
        await t.connect()
        gen = t.stream(script, argv)
        try:
            assert len(await _frames(gen, 2)) == 2
            _swap_for_fifo(victim)
            sid = await _wait_blocked_reader(node)
            if how == "close":
                await gen.aclose()
                await t.close()
            elif how == "kill-sshd-session":
                sess = sshd.session_pid(f"sysfs={node}/sys")
                assert sess is not None
                os.kill(sess, signal.SIGKILL)
            else:
                await t.close()
            left = await _wait_gone_async(sid)
            assert left == [], f"after {how}: {_describe(left)}"
        finally:
            await gen.aclose()
            await t.close()
    # A live session after three drops: only its own tree is on the node, and it goes too.
    _restore(node)
    t = sshd.transport()
    await t.connect()
    gen = t.stream(script, argv)
    try:
        assert len(await _frames(gen, 2)) == 2
        live = _probe_sessions(node)
        assert len(live) == 1, live
    finally:
        await gen.aclose()
        await t.close()
    left = await _wait_gone_async(live[0])
    assert left == [], _describe(left)
    assert _probe_sessions(node) == []


_FABTOP_STAND_IN = """
import asyncio, sys
from collectors.frames import FrameDecoder
from collectors.probe import probe_script
from collectors.transport.local import LocalTransport

async def main():
    decoder, n = FrameDecoder(), 0
    async for chunk in LocalTransport("n").stream(probe_script(), sys.argv[1:]):
        n += len(decoder.feed(chunk))
        print(n, flush=True)

asyncio.run(main())
"""


def test_fabtop_killed_leaves_nothing_of_a_local_probe(node: Path, fixtures_dir: Path) -> None:
    # fabtop dies without cleaning up (SIGKILL): only the probe's stdin EOF is left to say so.
    victim = _restore(node)
    argv = build_argv(_lifetime_args(node, fixtures_dir))
    fabtop = subprocess.Popen(
        [sys.executable, "-c", _FABTOP_STAND_IN, *argv],
        stdout=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    try:
        assert fabtop.stdout is not None
        frames = 0
        while frames < 2:
            line = fabtop.stdout.readline()
            assert line, "fabtop stand-in ended early"
            frames = int(line)
        _swap_for_fifo(victim)
        sid = asyncio.run(_wait_blocked_reader(node))
        fabtop.kill()
        fabtop.wait(timeout=5)
        left = _wait_gone(sid)
        assert left == [], _describe(left)
    finally:
        fabtop.kill()
        fabtop.wait()
        for sid in _probe_sessions(node):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sid, signal.SIGKILL)
