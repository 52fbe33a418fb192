"""``fabtop test serving --demo``: the simulated vLLM server on node1 slows while the
test's incast and bidir load its ports (fabtop/sim/inference.py) and recovers after,
read through the same session, scrape, runner and report as a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _fabtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "test", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
    )


def test_the_demo_server_slows_beside_the_loads_and_recovers(tmp_path: Path) -> None:
    report = tmp_path / "serving.json"
    r = _fabtop(
        "--demo-scenario", "healthy", "serving", "--allow-busy", "--seconds", "2", "-o", str(report)
    )
    assert r.returncode == 1, r.stdout + r.stderr  # warnings beside the loads, no failure
    doc = json.loads(report.read_text())
    steps: dict[str, dict[str, Any]] = {s["window"]: s for s in doc["steps"]}
    assert [s["status"] for s in steps.values()] == ["pass", "warn", "warn", "pass"]
    base = steps["baseline"]["figures"]
    assert 2300 < base["tokens_per_s"] < 2600  # the demo's healthy 2,400 tokens/s
    for name in ("incast", "bidir"):
        f = steps[name]["figures"]
        # A full port costs the simulated server 40 % of its tokens, and lengthens its
        # inter-token latency and its queue (vLLM's histograms) and preempts requests.
        assert 0.4 < f["token_ratio"] < 0.75, (name, f)
        assert f["itl_p99_ratio"] > 1.3 and f["queue_p99_ratio"] > 2, (name, f)
        assert f["preemptions"] > 0 and steps[name]["engine"] == "perftest"
        assert f["server_rx_gbps"] > 1.5 * base["server_rx_gbps"], (name, f, base)
    after = steps["after"]["figures"]
    assert 0.9 < after["token_ratio"] < 1.1 and after["itl_p99_ratio"] < 1.1, after
    assert "WARN: node1 serving beside incast node2,node3,node4 -> node1" in r.stdout
    assert "queue time p99 rose" in r.stdout
    # The impact at a glance, in the last lines and the report, each ratio to the baseline.
    incast = steps["incast"]["figures"]["token_ratio"]
    assert f"serving on node1: token rate x{incast:.2f}, x" in r.stdout
    assert set(doc["serving"]) == {
        "token_ratio",
        "ttft_p99_ratio",
        "itl_p99_ratio",
        "queue_p99_ratio",
    }
    assert doc["serving"]["token_ratio"] == {
        w: steps[w]["figures"]["token_ratio"] for w in ("incast", "bidir", "after")
    }


def test_serving_is_never_run_without_allow_busy(tmp_path: Path) -> None:
    r = _fabtop("--demo", "serving", "-o", str(tmp_path / "no.json"))
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "fabtop test: refused: serving loads the fabric beside a live inference server on "
        "purpose (its token rate may fall and its latency rise while the loads run): "
        "--allow-busy to run it"
    )
    assert not (tmp_path / "no.json").exists()
