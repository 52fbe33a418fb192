"""Record the demo fabric, replay it, and check the replay says what the live run said."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.frames import Frame
from fabtop.core.findings import Finding
from fabtop.core.state import FabricState
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.demo import demo_config
from fabtop.run.record import FRAME, Recorder, RecordingReader
from fabtop.run.replay import Replay, finding_transitions, replay_findings
from fabtop.run.session import MetricsReading
from tests.conftest import skip_or_fail
from tests.stepped import run_ticks, stepped_demo

REPO = Path(__file__).resolve().parents[2]


class LiveTap:
    """A recorder that also notes the findings the live session had after each rules run."""

    def __init__(self, rec: Recorder, state: FabricState) -> None:
        self.rec, self.state = rec, state
        self.findings: list[list[Finding]] = []

    def frame(self, host: str, frame: Frame, arrived_unix: float | None = None) -> None:
        self.rec.frame(host, frame, arrived_unix)

    def stalled(self, late_s: float) -> None:
        self.rec.stalled(late_s)

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        self.rec.status(host, state, error, rtt_s)

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        self.rec.metrics(host, readings)

    def evaluated(self) -> None:
        self.rec.evaluated()
        self.findings.append(list(self.state.findings))


async def _record_demo(path: Path, sim_seconds: int) -> LiveTap:
    """Record the demo tick by tick: the same frames and rules runs on any machine, idle or
    starved (the simulation moves only when told to, never with the wall clock)."""
    cfg = demo_config(1.0)
    transports, clock = stepped_demo(cfg)
    # The state and the recording keep simulated time: host ages and record times are
    # the simulation's, as a replay reads them.
    state = fabric_state(cfg, clock=clock.now)
    rec = Recorder(path, cfg, clock=clock.now).open()
    tap = LiveTap(rec, state)
    session = open_session(cfg, state=state, transports=transports, events=tap)
    task = asyncio.create_task(session.run())
    try:
        # each tick: every host's frame, then the rules run over them
        await run_ticks(clock, len(transports), sim_seconds, done=lambda: len(tap.findings))
    finally:
        await session.stop()
        task.cancel()
        rec.close()
    assert rec.frames >= len(transports) * sim_seconds  # every tick of every host
    return tap


def _key(f: Finding) -> tuple[object, ...]:
    return (f.rule, f.severity, f.subject, f.summary, f.since, tuple(sorted(f.evidence.items())))


async def test_replay_gives_the_same_findings_at_the_same_times(tmp_path: Path) -> None:
    path = tmp_path / "demo.fabrec"
    live = await _record_demo(path, 60)
    assert any(live.findings), "the demo's PFC storm should show within 60 s"
    replayed = replay_findings(path)
    times = [r.t for r in RecordingReader(path).records() if r.kind == "E"]
    assert len(times) == len(live.findings)
    by_time: dict[float, list[Finding]] = {}
    for t, f in replayed:
        by_time.setdefault(t, []).append(f)
    for t, live_findings in zip(times, live.findings, strict=True):
        assert [_key(f) for f in by_time.get(t, [])] == [_key(f) for f in live_findings]
    rules = {f.rule for fs in live.findings for f in fs}
    assert "pfc_storm" in rules


async def test_seeking_back_rebuilds_without_a_rate_spike(tmp_path: Path) -> None:
    path = tmp_path / "demo.fabrec"
    await _record_demo(path, 20)
    rp = Replay(path)
    rp.advance_to(rp.duration * 0.8)
    before = {n: h.frames for n, h in rp.state.hosts.items()}
    old_state = rp.state
    rp.seek(rp.duration * 0.3)
    assert rp.state is not old_state
    after = {n: h.frames for n, h in rp.state.hosts.items()}
    assert all(after[n] < before[n] for n in before)
    # Every rate after the seek equals what a straight read to that point gives.
    straight = Replay(path)
    straight.advance_to(rp.cursor)
    for name, hs in rp.state.hosts.items():
        ref = straight.state.hosts[name]
        assert hs.rates is not None and ref.rates is not None
        for lid, lr in hs.rates.links.items():
            assert lr.rates.get("rx_bps") == ref.rates.links[lid].rates.get("rx_bps")
            assert not lr.gap


async def test_replay_findings_are_transitions_and_seeking_rebuilds_the_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "demo.fabrec"
    live = await _record_demo(path, 75)  # the storm runs from 45 s to 70 s
    changes = list(finding_transitions(path))
    # One line per raise and per clear, not one per tick per finding: per finding, the
    # kinds alternate raised, cleared, raised...
    per_key: dict[tuple[str, str], list[str]] = {}
    for _, kind, f in changes:
        per_key.setdefault((f.rule, f.subject), []).append(kind)
    for kinds in per_key.values():
        assert kinds == ["raised", "cleared"] * (len(kinds) // 2) + ["raised"] * (len(kinds) % 2)
    # A finding that holds across rules runs is one line, not one per run. (Counted per
    # finding: the fast probe's watchdog events run the rules between the ticks too, so a
    # short-lived finding may rise and clear between two of the runs the tap sees.)
    seen_in: dict[tuple[str, str], int] = {}
    for fs in live.findings:
        for f in fs:
            seen_in[(f.rule, f.subject)] = seen_in.get((f.rule, f.subject), 0) + 1
    storm_key = ("pfc_storm", "node3/enp65s0f0np0/prio3")  # the stuck receiver, held
    assert seen_in.get(storm_key, 0) >= 2, seen_in
    assert len(per_key[storm_key]) < seen_in[storm_key], (per_key[storm_key], seen_in)
    # Recording time is the recorder's clock, here the simulation's: its storm runs from
    # 45 s to 70 s of simulated time.
    storm = [t for t, kind, f in changes if kind == "raised" and f.rule == "pfc_storm"]
    assert storm and all(44.0 <= t <= 75.0 for t in storm)
    times = [t for t, _, _ in changes]
    assert times == sorted(times) and times[0] >= 0.0

    # The log in the core: after a seek backwards, every episode raised before the
    # cursor is there, with the times a straight read gives.
    rp = Replay(path)
    rp.advance_to(rp.duration)
    full = rp.state.finding_log.episodes()
    assert any(e.rule == "pfc_storm" for e in full)
    mid = rp.duration * 0.8
    rp.seek(mid)
    after = {(e.rule, e.subject, e.raised) for e in rp.state.finding_log.episodes()}
    straight = Replay(path)
    straight.advance_to(mid)
    assert after == {(e.rule, e.subject, e.raised) for e in straight.state.finding_log.episodes()}
    at_mid = rp.state.data_now()
    # An episode is raised at the time its condition started, which the rules confirm a
    # detection time (and a sample of measurement noise) later: one that started just
    # before the cursor is not raised there yet, in a straight read either.
    settled = at_mid - 2 * DEFAULT_THRESHOLDS["detect_s"] - 1.0
    before_cursor = {(e.rule, e.subject, e.raised) for e in full if e.raised <= settled}
    assert before_cursor and before_cursor <= after
    # on the recording's axis (the demo's calendar), where its charts are
    rx = rp.state.history.series(("node3", "enp65s0f0np0", "rx_bps")).points(3600)[0]
    storm_ep = next(e for e in full if e.rule == "pfc_storm")
    assert rx[0] <= storm_ep.raised <= rx[-1] + 30


def _run_cli(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _frames(path: Path) -> int:
    return sum(1 for r in RecordingReader(path).records() if r.kind == FRAME)


def _wait_for_frames(path: Path, n: int, timeout: float = 8.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.stat().st_size > 0 and _frames(path) >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"no {n} frames in {path} after {timeout} s")


def test_sigkilled_recorder_leaves_a_replayable_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.fabrec"
    proc = _run_cli("record", "--demo", "--demo-speed", "10", "-o", str(path))
    try:
        _wait_for_frames(path, 12)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
    reader = RecordingReader(path)
    frames = [r for r in reader.records() if r.kind == FRAME]
    assert len(frames) >= 12
    assert not reader.clean_end and reader.torn is not None
    rp = Replay(path)
    rp.advance_to(rp.duration)
    assert sum(h.frames for h in rp.state.hosts.values()) == len(frames)
    # Tear the last record in half too: everything before it still replays.
    data = path.read_bytes()
    cut = tmp_path / "cut.fabrec"
    cut.write_bytes(data[: len(data) - 7])
    assert len([r for r in RecordingReader(cut).records() if r.kind == FRAME]) >= len(frames) - 1


def test_sigint_closes_the_file_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "int.fabrec"
    proc = _run_cli("record", "--demo", "--demo-speed", "10", "-o", str(path))
    _wait_for_frames(path, 4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err.decode()
    reader = RecordingReader(path)
    list(reader.records())
    assert reader.clean_end and reader.torn is None
    assert reader.header["config"]["interval"] == 1.0
    from fabtop.sim import demo_hosts

    assert [h["name"] for h in reader.header["config"]["hosts"]] == [h.name for h in demo_hosts()]


def test_full_disk_is_one_clear_line(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        skip_or_fail("no /dev/full on this system")
    proc = _run_cli("record", "--demo", "-o", "/dev/full", "--duration", "2")
    _, err = proc.communicate(timeout=15)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2  # as `snapshot`: the file could not be written
    assert lines == ["fabtop: /dev/full: recording stopped: No space left on device"]


def _snapshot(out: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [sys.executable, "-m", "tui", "snapshot", "-o", str(out), "--interval", "0.2"],
        cwd=REPO,
        env=env,
        check=False,
        capture_output=True,
        timeout=30,
    )
    doc: dict[str, object] = json.loads(out.read_text())
    return doc


def _wait_listening(port: int, timeout: float) -> None:
    """Wait until something listens on TCP `port`, read from /proc so no client is spent."""
    want = f":{port:04X}"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError), open(table) as fh:
                rows = [line.split() for line in fh]
                # Column 1 is local addr:port in hex, column 3 the state; 0A is LISTEN.
                if any(len(r) > 3 and r[1].endswith(want) and r[3] == "0A" for r in rows):
                    return
        time.sleep(0.02)
    pytest.fail(f"nothing listening on port {port} after {timeout} s")


def test_diff_around_iperf3_shows_the_bytes_moved(tmp_path: Path) -> None:
    iperf = shutil.which("iperf3")
    if iperf is None:
        skip_or_fail("iperf3 is not installed (apt-get install iperf3)")
    port = "15201"
    server = subprocess.Popen(
        [iperf, "-s", "-1", "-B", "127.0.0.1", "-p", port],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(int(port), 5.0)
        a = _snapshot(tmp_path / "a.json")
        run = subprocess.run(
            [iperf, "-c", "127.0.0.1", "-p", port, "-n", "200M", "--json"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        # What the receiver got crossed lo; the tail still in socket buffers at the end may not.
        moved = json.loads(run.stdout)["end"]["sum_received"]["bytes"]
        assert moved >= 190e6
        b = _snapshot(tmp_path / "b.json")
    finally:
        server.kill()
        server.wait(5)
    assert a["schema"] == b["schema"] == "fabtop.snapshot/2"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "diff",
            str(tmp_path / "a.json"),
            str(tmp_path / "b.json"),
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=30,
        check=True,
    )
    rows = json.loads(out.stdout)["deltas"]
    lo = {r["metric"]: r["delta"] for r in rows if r["link"] == "lo"}
    assert lo.get("rx_bytes", 0) >= moved and lo.get("tx_bytes", 0) >= moved


def test_record_to_stdout_and_through_a_symlink(tmp_path: Path) -> None:
    out = tmp_path / "piped.fabrec"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(out, "wb") as f:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "tui",
                "record",
                "--demo",
                "--demo-speed",
                "10",
                "--frames",
                "8",
                "-o",
                "-",
            ],
            cwd=tmp_path,
            env=env,
            stdout=f,
            stderr=subprocess.PIPE,
            timeout=30,
        )
    assert run.returncode == 0, run.stderr.decode()
    assert "to stdout" in run.stderr.decode()
    assert not (tmp_path / "-").exists()  # not a file named "-"
    reader = RecordingReader(out)
    assert sum(1 for r in reader.records() if r.kind == FRAME) == 8 and reader.clean_end
    assert "frame limit of 8 reached" in run.stderr.decode()
    # Through a symlink: the link stays, the recording lands in its target.
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "today.fabrec"
    link = tmp_path / "latest.fabrec"
    link.symlink_to(target)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "record",
            "--demo",
            "--demo-speed",
            "10",
            "--frames",
            "7",
            "-o",
            str(link),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert RecordingReader(target).read_header()["schema"] == "fabtop.rec/3"
    # A loop of links is one line, exit 2.
    loop = tmp_path / "loop.fabrec"
    loop.symlink_to(loop)
    run = subprocess.run(
        [sys.executable, "-m", "tui", "record", "--demo", "--duration", "1", "-o", str(loop)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=30,
    )
    assert run.returncode == 2
    assert run.stderr.decode().strip().splitlines() == [
        f"fabtop: {loop}: cannot write recording: Too many levels of symbolic links"
    ]
