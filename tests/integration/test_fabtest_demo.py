"""``fabtop test --demo``: the simulated fabric answers the plans through the same runner,
launcher and parsers a real fabric does (its perftest, iperf3 and sockperf outputs are
built from the captures' formats, its figures and counters from the sim's ports and
episodes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINES: dict[str, dict[str, str | None]] = {}  # the last report's: host -> tool -> version


def _test(
    tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    report = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-m", "tui", "test", *args, "--seconds", "1", "-o", str(report)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
    )
    assert report.exists(), r.stdout + r.stderr
    doc = json.loads(report.read_text())
    ENGINES.clear()
    ENGINES.update(doc["engines"])
    return r, doc["steps"]


def test_the_demo_fabric_is_proven_rail_by_rail(tmp_path: Path) -> None:
    r, steps = _test(tmp_path, "--demo", "pairs")
    by_rail: dict[int, list[dict[str, Any]]] = {}
    for s in steps:
        by_rail.setdefault(s["rail"], []).append(s)
    # Rails never cross fabrics: the RoCE ports' two rails, then InfiniBand, then the
    # Macs' Thunderbolt link; each Linux node's RoCE pair both ways, in parallel rounds.
    assert {s["engine"] for s in by_rail[0] + by_rail[1] + by_rail[2]} == {"perftest"}
    assert len(by_rail[0]) == len(by_rail[1]) == 12  # 4 hosts: 6 pairs, both ways
    for s in by_rail[0] + by_rail[1]:
        f = s["figures"]
        assert s["status"] == "pass", s
        assert f["reference_gbps"] == 100 and 0.95 < f["of_reference"] <= 1, f
    assert {s["receiver"] for s in by_rail[2]} == {"node1", "node2"}  # the IB port
    assert all(s["figures"]["reference_gbps"] == 200 for s in by_rail[2])
    # The Macs in the demo have no iperf3: said with the package, a failure (exit 2).
    macs = [s for s in steps if s["receiver"].startswith("mac")]
    assert macs and all(s["status"] == "fail" for s in macs)
    assert any("install the iperf3 package" in p for s in macs for p in s["problems"])
    assert r.returncode == 2
    assert "rail 4: pairs needs 2 hosts with a port on it, it has 1 (mac1)" in r.stderr
    # Which engine ran where, with the version perftest gives only to --version.
    assert ENGINES["node1"] == {"ib_write_bw": "6.29"}
    assert "mac1" not in ENGINES  # nothing ran there
    assert "engines: node1 ib_write_bw 6.29; " in r.stdout


def test_an_incast_into_a_switch_without_pfc_is_failed_by_its_counters(tmp_path: Path) -> None:
    r, steps = _test(tmp_path, "--demo-scenario", "switch_no_pfc", "incast", "--senders", "3")
    into = next(s for s in steps if s["receiver"] == "node1" and s["rail"] == 0)
    assert into["status"] == "fail", into
    why = " ".join(into["reasons"])
    assert "lost on a lossless priority" in why, why
    moved = {(m["port"], m["metric"]) for m in into["evidence"]["moved"]}
    assert ("node1/enp65s0f0np0", "out_of_sequence") in moved or any(
        metric.startswith("rx_discards") for _, metric in moved
    ), moved
    # The other fabric's rail of the same receiver is clean.
    other = next(s for s in steps if s["receiver"] == "node1" and s["rail"] == 1)
    assert other["status"] == "pass", other
    assert r.returncode == 2


def test_the_demo_fabric_bends_between_decode_and_prefill_sizes(tmp_path: Path) -> None:
    r, steps = _test(tmp_path, "--demo", "sizes")
    assert "11 sizes (4 KiB to 4 MiB)" in r.stderr and "23 runs" in r.stderr
    rdma = [s for s in steps if s["engine"] == "perftest"]
    assert [s["rail"] for s in rdma] == [0, 1, 2]  # one pair per rail, every rail at once
    for s in rdma:
        f, rows = s["figures"], s["sizes"]
        assert (s["senders"], s["receiver"]) == (["node1"], "node2")
        assert [row["size_bytes"] for row in rows] == [4096 * 2**i for i in range(11)]
        # The simulated ports bend where RDMA does: a few µs of round trip at 100-200
        # Gb/s is tens of KiB, above a decode dispatch (7 KiB), far below prefill (MiB).
        assert 7 * 1024 < f["bend_bytes"] < 1024 * 1024, f
        assert f["bend_bytes"] == pytest.approx(f["peak_gbps"] * 1e9 / 8 * f["base_rtt_us"] / 1e6)
        # Latency grows with the size: serialization at the port's rate.
        assert rows[-1]["p50_us"] > 10 * rows[0]["p50_us"], rows
    ib = next(s for s in rdma if s["rail"] == 2)
    assert ib["status"] == "pass" and 0.9 < ib["figures"]["of_reference"] <= 1, ib
    # The Macs have no iperf3: said once with its package, not at every size.
    mac = next(s for s in steps if s["receiver"].startswith("mac"))
    assert mac["status"] == "fail"
    assert sum("install the iperf3 package" in p for p in mac["problems"]) == 2  # both ends
    assert "bend (half-power size)" in r.stdout and "decode dispatch" in r.stdout


def test_a_killed_simulated_sender_is_named_and_the_others_recover(tmp_path: Path) -> None:
    r, steps = _test(tmp_path, "--demo", "--interval", "0.5", "loss")
    assert r.returncode == 0, r.stdout + r.stderr
    # Said before it runs: what it will do on purpose (--seconds 1: 5 s at least).
    assert "each sender runs 5 s; node4's is killed by its pid 2 s in" in r.stderr
    # One step per rail with 3 hosts or more: the RoCE rails; the last sender killed.
    assert [(s["rail"], s["kind"]) for s in steps] == [(0, "loss"), (1, "loss")]
    for s in steps:
        loss, f = s["loss"], s["figures"]
        assert s["status"] == "pass" and s["engine"] == "perftest", s
        assert s["senders"] == ["node2", "node3", "node4"] and loss["killed"] == "node4"
        assert isinstance(loss["killed_pid"], int) and loss["hung"] == []
        assert f"node4: ib_write_bw (pid {loss['killed_pid']}) killed " in r.stdout
        # Timed by the receiver's counters frame by frame: the others regained its ~100
        # Gb/s within the mark (the figure is the end of the frame it happened in).
        assert 90 < f["baseline_gbps"] <= 105 and f["survivors_after_gbps"] > 90, f
        assert f["recovery_s"] is not None
        assert f["recovery_s"] - f["resolution_s"] <= f["bound_s"] == 2.0, f
        # The counters before and after the kill: the incast's pauses and CNPs on both.
        for part in ("evidence_before_kill", "evidence_after_kill"):
            assert {m["metric"] for m in loss[part]["moved"]} >= {"cnp_handled"}, part
        assert loss["nccl"]["ib_timeout"] == 20 and "defaults" in loss["nccl"]["source"]
