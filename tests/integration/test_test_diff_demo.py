"""``fabtop diff`` of two reports that ``fabtop test --demo`` wrote: a healthy fabric, then
the same fabric behind a switch without PFC. What got worse comes first, with its figures,
its window's counters and the exit status a gate script reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _fabtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    out = tmp_path_factory.mktemp("reports")
    healthy, faulty = str(out / "healthy.json"), str(out / "no_pfc.json")
    for demo, path in (("--demo", healthy), ("--demo-scenario=switch_no_pfc", faulty)):
        r = _fabtop("test", demo, "pairs", "--seconds", "1", "-o", path)
        assert Path(path).exists(), r.stdout + r.stderr
    return healthy, faulty


def test_what_got_worse_comes_first_with_its_figures_and_counters(
    reports: tuple[str, str],
) -> None:
    healthy, faulty = reports
    r = _fabtop("diff", healthy, faulty)
    assert r.returncode == 1, r.stdout + r.stderr  # a verdict got worse
    lines = r.stdout.splitlines()
    worse = [line for line in lines if line.startswith("WORSE: ")]
    # Every step into node1 on the RoCE rail behind the switch without PFC fails now.
    assert worse and all(" rail 0  pass -> fail" in line for line in worse), worse
    assert all("-> node1 rail 0" in line or line.startswith("WORSE: node1 ->") for line in worse)
    first = lines.index(worse[0])
    assert lines[first - 1] == "" and not any(line.startswith("SAME: ") for line in lines[:first])
    block = lines[first : lines.index("", first)]
    # A step that lost bandwidth says by how much, as a ratio, and what its window counted.
    assert any(line.startswith("  gbps ") and "(x0." in line for line in block), block
    assert any(" out_of_sequence 0 -> " in line for line in block), block
    assert any(line.startswith("  now: ") and "lossless" in line for line in block), block
    assert lines[-1] == "a verdict got worse"


def test_the_other_way_round_nothing_got_worse(reports: tuple[str, str]) -> None:
    healthy, faulty = reports
    r = _fabtop("diff", faulty, healthy, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    changes = {s["change"] for s in doc["steps"]}
    assert changes == {"better", "same"}, changes
    better = [s for s in doc["steps"] if s["change"] == "better"]
    assert all((s["a"], s["b"]) == ("fail", "pass") for s in better)
    assert all(
        s["match"]["receiver"] == "node1" or s["match"]["senders"] == ["node1"] for s in better
    )
    assert doc["status"] == 0 and doc["engines"] == []


def test_a_report_against_a_snapshot_is_refused(reports: tuple[str, str], tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    r = _fabtop("snapshot", "--demo", "-o", str(snap))
    assert snap.exists(), r.stderr
    r = _fabtop("diff", reports[0], str(snap))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (
        f"fabtop: {reports[0]} is a test report and {snap} a snapshot: "
        "diff compares two of a kind\n"
    )
