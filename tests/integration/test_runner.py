"""HostRunner through real sshd: frames flow, hosts drop and come back, silence goes stale."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.gate import ConnectGate
from collectors.runner import HostRunner, HostStatus, collect_once
from collectors.transport.base import Transport, TransportError
from collectors.transport.local import LocalTransport
from collectors.transport.ssh import SshTransport
from tests.integration.sshd import Sshd, free_port

# A stand-in probe in the real wire format: one frame per $1 seconds; $2 only tags the
# process so a test can find (and freeze) the sshd session that serves it.
FRAMES_SH = """\
i=0
while :; do
  i=$((i+1))
  echo "@@fabtop-frame $i $(date +%s%N) 1.00 $(date +%s)"
  echo "@@section probe - - ok"
  echo "interval_ms 100"
  echo "tag $2"
  echo "@@end $i"
  sleep "$1"
done
"""

FAST = (0.05, 0.1, 0.2)


@dataclass
class Recorder:
    """Everything a runner reported, as a UI would receive it."""

    frames: list[Frame] = field(default_factory=list)
    statuses: list[HostStatus] = field(default_factory=list)

    def on_frame(self, host: str, frame: Frame) -> None:
        self.frames.append(frame)

    def on_status(self, host: str, status: HostStatus) -> None:
        self.statuses.append(status)

    @property
    def states(self) -> list[str]:
        return [s.state for s in self.statuses]


async def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running(
    transport: Transport, tag: str, rec: Recorder, **kw: float
) -> AsyncIterator[HostRunner]:
    runner = HostRunner(
        transport.name,
        transport,
        FRAMES_SH,
        ["0.1", tag],
        rec.on_frame,
        rec.on_status,
        backoff=FAST,
        interval=0.1,
        **kw,
    )
    task = asyncio.create_task(runner.run())
    try:
        yield runner
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)  # run() must end by itself after stop()


@pytest.mark.sshd
async def test_frames_arrive_and_status_is_up(sshd: Sshd) -> None:
    rec = Recorder()
    async with running(sshd.transport("gpu1"), "t1", rec) as runner:
        await wait_until(lambda: len(rec.frames) >= 3, 5, "3 frames")
        assert runner.status.state == "up"
        assert runner.status.error is None
        assert runner.status.last_frame_monotonic is not None
    seqs = [f.seq for f in rec.frames]
    assert seqs == list(range(1, len(seqs) + 1))
    probe = rec.frames[0].find("probe")
    assert probe is not None and "tag t1" in probe.text
    assert rec.states[0] == "up"


@pytest.mark.sshd
async def test_killed_sshd_goes_down_then_recovers_by_itself(own_sshd: Sshd) -> None:
    rec = Recorder()
    async with running(own_sshd.transport("gpu2", keepalive_interval=0.5), "t2", rec) as runner:
        await wait_until(lambda: len(rec.frames) >= 2, 5, "first frames")
        own_sshd.stop()
        await wait_until(lambda: runner.status.state == "down", 5, "down")
        err = runner.status.error or ""
        assert err.startswith(f"gpu2 ({own_sshd.target})")
        # While sshd is gone each retry fails with a clear cause, and no frame arrives.
        await wait_until(lambda: "refused" in (runner.status.error or ""), 5, "refused")
        seen = len(rec.frames)
        own_sshd.start()
        await wait_until(lambda: runner.status.state == "up", 5, "up again")
        await wait_until(lambda: len(rec.frames) >= seen + 2, 5, "frames after restart")
    # A new session starts its probe from seq 1 again.
    assert rec.frames[seen].seq == 1
    assert runner.status.failures == 0


@pytest.mark.sshd
async def test_stopped_host_goes_stale_without_stalling_others(own_sshd: Sshd) -> None:
    frozen, other = Recorder(), Recorder()
    frozen_t = own_sshd.transport("gpu3", keepalive_interval=0.5, keepalive_count_max=2)
    async with (
        running(frozen_t, "frozen-host", frozen, stale_after=0.4) as runner,
        running(own_sshd.transport("gpu4"), "other-host", other),
    ):
        await wait_until(lambda: runner.status.state == "up" and len(other.frames) > 0, 5, "up")
        pid = own_sshd.session_pid("frozen-host")
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            await wait_until(lambda: runner.status.state == "stale", 2, "stale")
            before = len(other.frames)
            # The other host keeps delivering at its 0.1 s interval meanwhile.
            await wait_until(lambda: len(other.frames) >= before + 3, 3, "the other's frames")
            # No keepalive answer: the connection is given up on.
            await wait_until(lambda: runner.status.state == "down", 5, "down")
        finally:
            os.kill(pid, signal.SIGCONT)
        seen = len(frozen.frames)
        await wait_until(lambda: len(frozen.frames) > seen, 5, "frames again")
        await wait_until(lambda: runner.status.state == "up", 5, "up again")
    assert frozen.states.index("stale") < frozen.states.index("down")
    assert "not responding" in (frozen.statuses[frozen.states.index("down")].error or "")


async def test_silent_local_probe_goes_stale_then_down_then_restarts() -> None:
    # One frame, then silence: only the runner's watchdog can notice.
    script = 'echo "@@fabtop-frame 1 1 1.00 1"; echo "@@end 1"; exec sleep 30\n'
    rec = Recorder()
    t = LocalTransport("node5")
    runner = HostRunner(
        "node5",
        t,
        script,
        [],
        rec.on_frame,
        rec.on_status,
        backoff=FAST,
        stale_after=0.3,
        down_after=0.8,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: rec.states.count("up") >= 2, 5, "second session up")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    assert rec.states[:4] == ["up", "stale", "down", "up"]
    down = rec.statuses[2]
    assert down.error is not None and down.error.startswith("node5 (local): no frame for")


async def test_a_slow_first_frame_gets_twice_the_silence_before_a_reconnect() -> None:
    # 64 handshakes at once on one sshd: a probe that starts slowly must not be reconnected
    # (one more handshake in the storm) before it could send anything.
    script = 'sleep 1.2; echo "@@fabtop-frame 1 1 1.00 1"; echo "@@end 1"; exec sleep 30\n'
    rec = Recorder()
    runner = HostRunner(
        "node7",
        LocalTransport("node7"),
        script,
        [],
        rec.on_frame,
        rec.on_status,
        backoff=FAST,
        stale_after=0.3,
        down_after=0.8,
        start_after=1.6,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: "up" in rec.states, 5, "first frame")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    assert rec.states[0] == "up", rec.states
    # ... and a probe that never sends one is still given up on: a slow start is not the
    # host's failure (it stays "connecting", started again at once), a second one is.
    rec = Recorder()
    runner = HostRunner(
        "node8",
        LocalTransport("node8"),
        "exec sleep 30\n",
        [],
        rec.on_frame,
        rec.on_status,
        backoff=FAST,
        stale_after=0.3,
        down_after=0.4,
        start_after=0.8,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: "down" in rec.states, 10, "given up twice")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    assert rec.states[:2] == ["connecting", "down"], rec.states
    first, second = rec.statuses[0].error or "", rec.statuses[1].error or ""
    assert first.startswith("node8 (local): probe sent no frame in 0.") or first.startswith(
        "node8 (local): probe sent no frame in 1."
    ), first
    assert "starting it again (that try waits 1.6 s)" in first, first
    assert rec.statuses[0].failures == 0 and rec.statuses[1].failures == 1
    assert "probe sent no frame in 1." in second or "probe sent no frame in 2." in second, second


async def test_stop_ends_run_during_backoff() -> None:
    rec = Recorder()
    t = SshTransport("gpu9", f"root@127.0.0.1:{free_port()}", config_paths=[], agent=None)
    runner = HostRunner("gpu9", t, FRAMES_SH, [], rec.on_frame, rec.on_status, backoff=(30,))
    task = asyncio.create_task(runner.run())
    await wait_until(lambda: runner.status.state == "down", 5, "down")
    assert "refused" in (runner.status.error or "")
    start = time.monotonic()
    runner.stop()
    await asyncio.wait_for(task, 2)
    assert time.monotonic() - start < 1


async def test_a_failing_consumer_does_not_end_the_runner() -> None:
    rec = Recorder()

    def bad_on_frame(host: str, frame: Frame) -> None:
        rec.frames.append(frame)
        raise RuntimeError("consumer bug")

    runner = HostRunner(
        "node6", LocalTransport("node6"), FRAMES_SH, ["0.05", "x"], bad_on_frame, rec.on_status
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: len(rec.frames) >= 3, 5, "frames despite errors")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    # The host stays up (its connection is fine), and the failure is said once, on one line.
    assert set(rec.states) == {"up"}
    said = [w for w in rec.statuses[-1].warnings if "consumer bug" in w]
    assert said == ["node6: frame consumer failed: RuntimeError: consumer bug"], said


@pytest.mark.sshd
async def test_collect_once_reads_n_frames(sshd: Sshd) -> None:
    frames = await collect_once(sshd.transport("gpu1"), FRAMES_SH, ["0.05", "snap"], 3, 5)
    assert [f.seq for f in frames] == [1, 2, 3]


async def test_collect_once_reports_missing_frames() -> None:
    with pytest.raises(TransportError, match=r"^node7 \(local\): 0 of 2 frames after 0.3 s"):
        await collect_once(LocalTransport("node7"), "sleep 5\n", [], 2, 0.3)
    with pytest.raises(TransportError, match="probe ended after 1 of 2 frames"):
        await collect_once(
            # stdin stays open after the script (the probe's lifeline): this one exits itself
            LocalTransport("node7"),
            'echo "@@fabtop-frame 1 1 1 1"; echo "@@end 1"; exit 0\n',
            [],
            2,
            5,
        )


async def test_a_probe_always_slower_to_start_than_the_deadline_still_comes_up() -> None:
    # A loaded node (256 probe starts on one machine, a heavy login shell) starts the probe
    # in 2 s every time; the first-frame deadline here is 1.6 s. Reconnecting at the same
    # deadline forever is a livelock: each try waits longer than the last.
    script = 'sleep 2; echo "@@fabtop-frame 1 1 1.00 1"; echo "@@end 1"; exec sleep 30\n'
    rec = Recorder()
    runner = HostRunner(
        "node9",
        LocalTransport("node9"),
        script,
        [],
        rec.on_frame,
        rec.on_status,
        backoff=FAST,
        stale_after=0.2,
        down_after=0.8,
        start_after=1.6,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: "up" in rec.states, 15, "a first frame after a slow start")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    # The slow start was given up on once, and not taken for the host's failure.
    assert "down" not in rec.states and rec.states[-1] == "up", rec.states
    slow = [s.error or "" for s in rec.statuses if s.state == "connecting"]
    assert slow and all("probe sent no frame" in e and "starting it again" in e for e in slow), slow


async def test_a_host_slow_to_start_does_not_hold_the_connect_gate() -> None:
    # One slot for hosts between connecting and their first frame: a host whose probe
    # never starts holds it for start_after at most, not for the longer wait of a retry.
    gate = ConnectGate(1)
    rec_slow, rec_fast = Recorder(), Recorder()
    slow = HostRunner(
        "slow",
        LocalTransport("slow"),
        "exec sleep 30\n",
        [],
        rec_slow.on_frame,
        rec_slow.on_status,
        backoff=FAST,
        stale_after=0.5,
        down_after=1.0,
        start_after=1.0,
        gate=gate,
    )
    fast = HostRunner(
        "fast",
        LocalTransport("fast"),
        FRAMES_SH,
        ["0.1", "x"],
        rec_fast.on_frame,
        rec_fast.on_status,
        backoff=FAST,
        interval=0.1,
        gate=gate,
    )
    t_slow = asyncio.create_task(slow.run())
    await wait_until(lambda: rec_slow.states == ["connecting"], 5, "the slow host's first give-up")
    # Its second try (given 2 s) takes the slot again before the fast host asks for it.
    await wait_until(lambda: gate.locked(), 5, "the slow host's second try holding the slot")
    t_fast = asyncio.create_task(fast.run())
    try:
        await wait_until(lambda: "up" in rec_fast.states, 10, "the fast host up")
        # Up during the slow host's second try: it gave the slot away after 1 s, and it
        # is still waiting for its probe (not given up on a second time).
        assert rec_slow.states == ["connecting"], rec_slow.states
    finally:
        slow.stop()
        fast.stop()
        await asyncio.wait_for(asyncio.gather(t_slow, t_fast), 5)


async def test_a_start_given_up_on_is_retried_at_once_not_after_a_backoff(
    tmp_path: Path,
) -> None:
    # The first start hangs (a node busy with 255 other logins); the retry is quick. A
    # slow start is not the host's failure: no reconnect backoff (30 s here) before it.
    mark = tmp_path / "started-once"
    script = (
        f'if [ -e "{mark}" ]; then echo "@@fabtop-frame 1 1 1.00 1"; echo "@@end 1"; '
        f'else : > "{mark}"; fi; exec sleep 30\n'
    )
    rec = Recorder()
    runner = HostRunner(
        "node10",
        LocalTransport("node10"),
        script,
        [],
        rec.on_frame,
        rec.on_status,
        backoff=(30.0,),
        stale_after=0.3,
        down_after=0.4,
        start_after=0.8,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: "up" in rec.states, 6, "up on the second start")
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    assert rec.states == ["connecting", "up"], rec.states
    assert runner.status.failures == 0
