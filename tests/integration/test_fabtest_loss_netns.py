"""``fabtop test loss`` on a namespace fabric: three hosts with a real sshd each, an
incast of two into the first through a switch port shaped below what one sender can
send (tc tbf), a REAL iperf3 sender killed by its pid mid-run by the node's launcher,
and the other's recovery timed from the receiver's own per-interval figures; nothing
left running in any namespace afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.netns import Testbed, bed_for_test

REPO = Path(__file__).resolve().parents[2]
SENDER_MBIT = 220  # each host's egress on its data link
RECEIVER_MBIT = 150  # the switch's port into h1: one sender alone can fill it
# The recovery a healthy shaped path must show: one TCP sender doubling its window
# through a queue of at most 100 ms takes a few round trips; the mark is the default
# test_loss_recovery_s, and the report's figure is an upper bound (the end of its
# 0.25 s interval).
RECOVERY_BOUND_S = 2.0


@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    with bed_for_test(3) as b:
        for h in b.hosts:
            b.rate_limit(h.name, SENDER_MBIT)
        b.switch_rate_limit("h1", RECEIVER_MBIT)
        yield b


@pytest.fixture(scope="module")
def config(bed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = bed.toml().replace("[[host]]", "[[host]]\nrails = { eth0 = 0 }")
    text += "\n[nccl]\nib_timeout = 18\nib_retry_cnt = 5\n"
    path = tmp_path_factory.mktemp("loss") / "fabtop.toml"
    path.write_text(text)
    return path


def _iperf3(bed: Testbed) -> list[tuple[str, int]]:
    """(namespace, pid) of every iperf3 in the bed's namespaces."""
    out = []
    for ns in bed.namespaces:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if Path(argv0.decode(errors="replace")).name == "iperf3":
                out.append((ns, int(pid)))
    return out


def test_a_killed_sender_is_named_and_the_other_regains_the_receiver(
    bed: Testbed, config: Path, tmp_path: Path
) -> None:
    report = tmp_path / "loss.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "tui", "test", "loss", "-c", str(config), "-o", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    seen: set[tuple[str, int]] = set()  # every iperf3 that ran, where
    try:
        while p.poll() is None:
            seen.update(_iperf3(bed))
            time.sleep(0.1)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out + err
    (step,) = json.loads(report.read_text())["steps"]
    assert step["kind"] == "loss" and step["status"] == "pass", step
    assert step["senders"] == ["h2", "h3"] and step["receiver"] == "h1"
    loss, f = step["loss"], step["figures"]
    # The killed sender named, with the pid of a real iperf3 that ran in its namespace.
    assert loss["killed"] == "h3" and loss["hung"] == []
    assert (bed.host("h3").netns, loss["killed_pid"]) in seen, (loss["killed_pid"], seen)
    assert f"h3: iperf3 (pid {loss['killed_pid']}) killed" in out
    assert 1.9 <= loss["killed_at_s"] <= 2.5  # 40 % into the 5 s run
    # What the receiver had: the shaped port, from both senders.
    assert 0.8 * RECEIVER_MBIT / 1000 <= f["baseline_gbps"] <= 1.05 * RECEIVER_MBIT / 1000
    # h2 alone regained it, and how long it took is reported, within the bound.
    assert f["recovery_s"] is not None and 0 < f["recovery_s"] <= RECOVERY_BOUND_S, f
    assert f["survivors_after_gbps"] >= 0.9 * f["baseline_gbps"], f
    assert "regained the receiver's" in out
    # The counters of both parts of the window, and where NCCL's figures came from.
    assert loss["evidence_before_kill"] is not None and loss["evidence_after_kill"] is not None
    assert loss["nccl"]["ib_timeout"] == 18 and "[nccl]" in loss["nccl"]["source"]
    assert f["nccl_try_s"] == pytest.approx(4.096e-6 * 2**18)
    # Nothing left in any namespace but the sshd listeners: the killed one, its server,
    # the others, the launchers and their sleeps are gone (sessions close within moments).
    deadline = time.monotonic() + 5
    while _left(bed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(bed) == []


def _left(bed: Testbed) -> list[list[str]]:
    return [argv for _ns, argv in bed.processes() if "[listener]" not in " ".join(argv)]


def test_a_server_left_waiting_by_its_lost_sender_is_named_as_hung_and_ended(
    bed: Testbed, config: Path, tmp_path: Path
) -> None:
    # The switch drops everything h3 sends h1 from a moment before h3's sender is killed:
    # its FIN never arrives, and its iperf3 server on h1 waits for a client that is gone.
    report = tmp_path / "hung.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "tui", "test", "loss", "-c", str(config), "-o", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    h3 = bed.host("h3").netns
    try:
        deadline = time.monotonic() + 60
        while not any(ns == h3 for ns, _ in _iperf3(bed)):  # h3's client started
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        time.sleep(1.0)  # the kill comes 2 s after the clients' start
        bed.switch_cut("h3", "h1")
        out, err = p.communicate(timeout=120)
    finally:
        bed.switch_clear()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, out + err
    (step,) = json.loads(report.read_text())["steps"]
    assert step["status"] == "fail" and step["loss"]["killed"] == "h3", step
    hung = "h1: iperf3 server for h3 did not end within 5 s of its client: fabtop ended it"
    assert step["loss"]["hung"] == [hung] and f"hung: {hung}" in step["reasons"]
    assert f"hung: {hung}" in out
    # fabtop ended it: nothing is left waiting in any namespace.
    deadline = time.monotonic() + 5
    while _left(bed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(bed) == []
