"""``fabtop test`` on RDMA ports, through the real orchestration, on real captures.

This kernel has no RDMA device: two namespace hosts serve a simulated node each (fabtop.sim:
mlx5_0 and mlx5_1 on RoCE at 100 Gb/s, mlx5_2 on InfiniBand HDR at 200 Gb/s; their
counters kept moving), and their ``ib_write_bw``/``ib_write_lat`` are shims
(tests/testbed/perftest_shims.py) that replay captures from tests/fixtures/perftest/
(SOURCES.md). Everything else is what a cluster gets: ``fabtop test`` over each host's
real sshd, every tool through the launcher on the host's configured ``path``, the server
waiting for its client, the client retried while it is refused, each step's counters
window, the verdicts, the JSON report, and nothing left running after the plan or a
Ctrl-C. RDMA runs are verified on these captures only.

What the captures make of the verdicts, against the simulated ports' negotiated rates:
- ``pairs`` fails every step: the bandwidth client replays an Intel irdma 10 GbE run
  (1103.38 MB/sec = 9.26 Gb/s), below 0.9 x 100 Gb/s (RoCE rails) and 0.9 x 200 Gb/s (the
  IB rail); no pair is an outlier (all are equal);
- ``latency`` passes every step: the ConnectX InfiniBand capture's 2-byte row (t_avg 1.88
  us, p99 2.03 us) is under ngc_multinode_perf's 2.5 us mean and imbue's 4.2 us p99;
- ``sizes`` fails every step (9.26 Gb/s at 4 MiB), each size's latency the capture's own
  row of that size (``ib_write_lat -a``), the bend 9.26 Gb/s x 3.74 us.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabtop.fabtest.judge import gb
from fabtop.fabtest.plans import LATENCY_ITERATIONS
from tests.testbed.netns import Testbed, bed_for_test
from tests.testbed.perftest_shims import SHIM, TOOLS, install, waiting

REPO = Path(__file__).resolve().parents[2]
# The bandwidth client's capture (ib_write_bw_mb_irdma_roce.txt): 1103.38 MB/sec, where
# perftest's MB is 2^20 bytes.
CAPTURE_GBPS = 1103.38 * 2**20 * 8 / 1e9
# The latency capture's 2-byte row (ib_write_lat_all_sizes_mlx5_ib_client.txt):
# t_typical (the median), the 99 % and 99.9 % percentiles.
CAPTURE_P50_US, CAPTURE_P99_US, CAPTURE_P999_US = 1.87, 2.03, 5.41
GONE_WITHIN_S = 4.0  # the launcher's end of its group: TERM, 1 s grace, KILL
RATE_GBPS = {0: 100.0, 1: 100.0, 2: 200.0}  # the simulated ports' sysfs rate, by rail


@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    with bed_for_test(2, sim_hosts=(1, 2)) as b:
        install(b)
        yield b


def _fabtop(bed: Testbed, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "test", *args, "-c", str(bed.toml_path), "--seconds", "1"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _left(bed: Testbed) -> list[str]:
    """perftest (the shims, and the launchers that run them) still running in any of the
    bed's namespaces."""
    return [
        f"{ns}: {' '.join(argv)}"
        for ns, argv in bed.processes()
        if str(SHIM) in argv or any(w in TOOLS for w in argv)
    ]


def _settled(bed: Testbed) -> list[str]:
    """What is left once the launchers' own ending is over: the tools end with their run,
    a launcher's group is ended (TERM, 1 s, KILL) just after it."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while (_left(bed) or waiting(bed)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _left(bed) + [str(p) for p in waiting(bed)]


def _steps(report: Path) -> list[dict[str, Any]]:
    doc = json.loads(report.read_text())
    assert doc["format"] == "fabtop.test/1"
    steps: list[dict[str, Any]] = doc["steps"]
    return steps


def test_pairs_run_perftest_on_every_rail_and_are_judged_by_the_port_rate(
    bed: Testbed, tmp_path: Path
) -> None:
    report = tmp_path / "pairs.json"
    r = _fabtop(bed, "pairs", "-o", str(report))
    assert r.returncode == 2, r.stdout + r.stderr
    # The plan: each direction of the one pair on each of the three rails, rails by position.
    assert "fabtop test pairs: 6 steps in 2 rounds" in r.stderr
    assert "rail 2: h1/mlx5_2/1, h2/mlx5_2/1" in r.stderr
    steps = _steps(report)
    assert sorted(s["label"] for s in steps) == [
        f"{a} -> {b} rail {n}" for a, b in (("h1", "h2"), ("h2", "h1")) for n in range(3)
    ]
    for s in steps:
        rail, f = s["rail"], s["figures"]
        assert s["engine"] == "perftest" and s["problems"] == [], s
        assert sorted(s["ports"]) == [f"h1/mlx5_{rail}/1", f"h2/mlx5_{rail}/1"]
        assert f["gbps"] == pytest.approx(CAPTURE_GBPS, abs=0.01)
        assert f["reference_gbps"] == RATE_GBPS[rail]
        assert s["status"] == "fail" and not s["retested"]
        assert f"{gb(CAPTURE_GBPS)} Gb/s is below 0.9 x {RATE_GBPS[rail]:g} Gb/s" in s["reasons"][0]
        # The window read the simulated ports' own counters: RoCE ports say what they
        # ruled out (nothing unread); on the IB port the sim's own traffic moves its
        # congestion counter (xmit_wait) on an end or both, as the driver's ticks fall.
        ev = s["evidence"]
        assert 0.5 <= ev["seconds"] <= 5.0  # the 1 s run's ticks, not the whole plan's
        if rail < 2:
            assert ev["not_read"] == [] and "PFC and global pauses" in ev["ruled_out"]
        else:
            moved = {(m["port"], m["metric"]) for m in ev["moved"]}
            assert {(p, "xmit_wait") for p in s["ports"]} & moved, ev
    assert "FAIL: h1 -> h2 rail 0" in r.stdout
    assert _settled(bed) == []


def test_latency_percentiles_come_from_every_replayed_sample(bed: Testbed, tmp_path: Path) -> None:
    report = tmp_path / "lat.json"
    r = _fabtop(bed, "latency", "-o", str(report))
    assert r.returncode == 0, r.stdout + r.stderr
    steps = _steps(report)
    assert sorted(s["rail"] for s in steps) == [0, 1, 2]
    for s in steps:
        f = s["figures"]
        assert s["engine"] == "perftest" and s["problems"] == [] and s["status"] == "pass", s
        assert f["samples"] == LATENCY_ITERATIONS  # every -U sample, not perftest's 1000
        assert f["p50_us"] == pytest.approx(CAPTURE_P50_US, abs=0.01)
        assert f["p99_us"] == pytest.approx(CAPTURE_P99_US, abs=0.01)
        assert f["p999_us"] == pytest.approx(CAPTURE_P999_US, abs=0.01)
    assert _settled(bed) == []


def test_ctrl_c_ends_every_perftest_on_every_node(bed: Testbed) -> None:
    p = subprocess.Popen(
        [sys.executable, "-m", "tui", "test", "bidir", "-c", str(bed.toml_path), "--seconds", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 60
        # Both sides of every rail's run started (a server and its client per rail).
        while len([x for x in _left(bed) if str(SHIM) in x]) < 6:
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, f"not every tool started: {_left(bed)}"
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert _settled(bed) == []


def test_a_size_sweep_runs_perftest_per_size_and_reads_each_sizes_own_row(
    bed: Testbed, tmp_path: Path
) -> None:
    report = tmp_path / "sizes.json"
    r = _fabtop(bed, "sizes", "-o", str(report), timeout=400)
    assert r.returncode == 2, r.stdout + r.stderr  # 9.26 Gb/s at 4 MiB: below every rail's mark
    assert "rail 2: h1/mlx5_2/1 -> h2/mlx5_2/1" in r.stderr
    # The latency shim answers each -s with the ConnectX capture's row of that size
    # (ib_write_lat -a): t_typical per size, as the capture printed it.
    typical = {4096: 3.85, 8192: 4.22, 65536: 6.76, 1 << 20: 46.92, 4 << 20: 175.03}
    steps = _steps(report)
    assert sorted(s["rail"] for s in steps) == [0, 1, 2]
    for s in steps:
        f, rows = s["figures"], {row["size_bytes"]: row for row in s["sizes"]}
        assert s["engine"] == "perftest" and s["problems"] == [], s
        assert len(rows) == 11
        for size, t in typical.items():
            assert rows[size]["p50_us"] == pytest.approx(t, abs=0.01), (size, rows[size])
            assert rows[size]["gbps"] == pytest.approx(CAPTURE_GBPS, abs=0.01)
        # The bend: the peak (the replayed 9.26 Gb/s) x the 2-byte row's round trip.
        assert f["base_rtt_us"] == pytest.approx(2 * CAPTURE_P50_US, abs=0.02)
        assert f["bend_bytes"] == pytest.approx(
            CAPTURE_GBPS * 1e9 / 8 * 2 * CAPTURE_P50_US / 1e6, rel=0.01
        )
        assert s["status"] == "fail"
        assert f"at 4 MiB is below 0.9 x {RATE_GBPS[s['rail']]:g} Gb/s" in s["reasons"][0]
    assert _settled(bed) == []
