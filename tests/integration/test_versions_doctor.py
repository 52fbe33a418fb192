"""Software versions across hosts (issue 15) through the real CLI: ``fabtop doctor
--demo-scenario version_mismatch --json`` names the odd host's rdma-core and kernel under
the firmware/driver rule; the healthy demo, on one stack everywhere, stays quiet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _doctor(scenario: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui",
            "doctor",
            "--demo-scenario",
            scenario,
            "--window",
            "1",
            "--json",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, dict]]:  # type: ignore[type-arg]
    jobs = {s: _doctor(s) for s in ("version_mismatch", "healthy")}
    out = {}
    for name, p in jobs.items():
        stdout, _ = p.communicate(timeout=60)
        out[name] = (p.returncode, json.loads(stdout))
    return out


def test_version_mismatch_names_the_odd_host_and_its_versions(
    runs: dict[str, tuple[int, dict]],  # type: ignore[type-arg]
) -> None:
    rc, doc = runs["version_mismatch"]
    found = [f for f in doc["findings"] if f["rule"] == "firmware_mismatch"]
    assert rc == 1  # warnings only
    seen = {(f["subject"], f["severity"], f["host"]) for f in found}
    assert seen == {("fabric", "warning", None)}
    by = {f["summary"].split(" differs")[0]: f for f in found}
    assert set(by) == {"kernel", "rdma-core"}
    assert "node3 (6.5.0-35-generic)" in by["kernel"]["summary"]
    assert by["kernel"]["evidence"]["majority"] == "6.8"
    assert "node3 (2307mlnx47-1.2307050)" in by["rdma-core"]["summary"]
    assert by["rdma-core"]["evidence"]["majority"] == "2307mlnx47-1.2310119"


def test_healthy_demo_on_one_stack_stays_quiet(
    runs: dict[str, tuple[int, dict]],  # type: ignore[type-arg]
) -> None:
    rc, doc = runs["healthy"]
    assert rc == 0 and doc["findings"] == []
