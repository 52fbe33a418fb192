"""The big simulated fabric through the real CLI: doctor names the one faulty host among
many, ``fabtop test`` proves its 8 rails, and two export shards own disjoint hosts."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO
from tests.integration.sshd import free_port


def _fabtop(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def test_doctor_names_the_one_host_of_the_big_fabric_in_a_storm() -> None:
    # 16 hosts: the demo's node3 is played by r9 (half way in), its rail 0 the stuck one.
    r = _fabtop(
        "doctor", "--demo-scenario", "pfc_storm", "--demo-hosts", "16", "--demo-prefix", "r",
        "--window", "1", "--json",
    )  # fmt: skip
    doc = json.loads(r.stdout)
    assert r.returncode == 2, r.stderr  # a critical finding (doctor's exit status)
    critical = [f for f in doc["findings"] if f["severity"] == "critical"]
    assert [f["subject"] for f in critical] == ["r9/enp65s0f0np0/prio3"], critical
    assert doc["coverage"]["reporting"] == [f"r{i}" for i in range(1, 17)]


def test_fabtop_test_proves_the_eight_rails_of_the_big_fabric(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    r = _fabtop(
        "test", "--demo-scenario", "healthy", "--demo-hosts", "3", "pairs",
        "--seconds", "1", "-o", str(report),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    steps = json.loads(report.read_text())["steps"]
    by_rail: dict[int, list[str]] = {}
    for s in steps:
        by_rail.setdefault(s["rail"], []).append(s["status"])
    assert sorted(by_rail) == list(range(8))  # rails 0..7, one per RoCE port
    assert all(v == ["pass"] * 6 for v in by_rail.values()), by_rail  # 3 hosts, both ways


def _start_shard(prefix: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "tui", "export", "--demo-hosts", "3",
            "--demo-prefix", prefix, "--listen", f"127.0.0.1:{port}",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, port


def _hosts_up(port: int) -> set[str]:
    """The hosts the shard says are up, once each has a frame (within 30 s)."""
    end = time.monotonic() + 30
    up: set[str] = set()
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                body = resp.read().decode()
            up = {
                s.labels["host"]
                for fam in text_string_to_metric_families(body)
                if fam.name == "fabtop_host_up"
                for s in fam.samples
                if s.value == 1
            }
            if len(up) == 3:
                return up
        time.sleep(0.5)
    return up


def test_two_export_shards_own_disjoint_hosts() -> None:
    shards = [_start_shard(p) for p in ("a", "b")]
    try:
        for _, port in shards:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.1)
        assert _hosts_up(shards[0][1]) == {"a1", "a2", "a3"}
        assert _hosts_up(shards[1][1]) == {"b1", "b2", "b3"}
    finally:
        for proc, _ in shards:
            proc.terminate()
            proc.wait(timeout=20)
