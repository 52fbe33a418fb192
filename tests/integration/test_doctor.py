"""``fabtop doctor`` as a job launcher would run it: the real CLI in a subprocess.

The runs go against single-fault demo fabrics (``--demo-scenario``, simulated hosts
behind the same transports and pipeline) and run concurrently, so the file stays fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEVERITY_ORDER = ("critical", "warning", "info")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fabtop", "doctor", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, str, str]]:
    # --window 1 asks for less than the rules need: doctor stretches it to detect_s + 2 ticks.
    jobs = {
        "healthy": start("--demo-scenario", "healthy", "--window", "1"),
        "healthy_json": start("--demo-scenario", "healthy", "--window", "1", "--json"),
        "no_ecn": start("--demo-scenario", "no_ecn", "--window", "1"),
        "storm": start("--demo-scenario", "pfc_storm", "--window", "1"),
        "storm_json": start("--demo-scenario", "pfc_storm", "--window", "1", "--json"),
        "bad": start("--demo-scenario", "nonsense"),
    }
    out = {}
    for name, p in jobs.items():
        stdout, stderr = p.communicate(timeout=60)
        out[name] = (p.returncode, stdout, stderr)
    return out


def test_healthy_fabric_exits_0_with_one_calm_line(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["healthy"]
    assert rc == 0
    assert "looks healthy" in out
    rc, out, _ = runs["healthy_json"]
    assert rc == 0
    doc = json.loads(out)
    assert all(f["severity"] == "info" for f in doc["findings"])


def test_warnings_only_exit_1(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["no_ecn"]
    assert rc == 1, out
    assert out.startswith("WARNING (")
    assert "CRITICAL" not in out
    assert "node2/enp65s0f0np0" in out and "next: " in out


def test_pfc_storm_exits_2_grouped_worst_first(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["storm"]
    assert rc == 2, out
    heads = [line.split(" (")[0] for line in out.splitlines() if not line.startswith(" ")]
    assert heads[0] == "CRITICAL"
    ranks = [SEVERITY_ORDER.index(h.lower()) for h in heads]
    assert ranks == sorted(ranks)  # groups in severity order, each once
    assert "node3/enp65s0f0np0/prio3: " in out
    assert "stuck receiver" in out
    # the subject is not repeated at the start of its summary
    assert "prio3: node3/enp65s0f0np0 prio 3:" not in out


def test_json_is_the_snapshot_findings_format(runs: dict[str, tuple[int, str, str]]) -> None:
    from fabtop.core.findings import Finding
    from fabtop.run.snapshot import finding_entry

    rc, out, _ = runs["storm_json"]
    assert rc == 2
    doc = json.loads(out)
    keys = set(finding_entry(Finding("r", "info", "s", "x")))
    assert doc["findings"] and all(set(f) == keys for f in doc["findings"])
    storm = [f for f in doc["findings"] if f["rule"] == "pfc_storm"]
    assert storm[0]["subject"] == "node3/enp65s0f0np0/prio3"
    assert storm[0]["evidence"]["stuck_receiver"] == "node3/enp65s0f0np0"


def test_unknown_scenario_is_a_one_line_error(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, err = runs["bad"]
    assert rc == 2 and out == ""
    assert "unknown --demo-scenario 'nonsense'" in err and "pfc_storm" in err
