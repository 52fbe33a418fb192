"""``fabtop doctor`` on a fabric with exo: "token rate unknown" and why, one line, exit 0.

The real CLI in a subprocess, on the demo's ``exo_cluster`` scenario (a simulated exo on
mac1 reached through the demo transport's http_get, as SSH reaches a real one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from collectors.parsers.exo_state import RATE_UNKNOWN, UNVERIFIED
from fabtop.sim.exo import EXO_DEMO_URL as EXO_STATE

ROOT = Path(__file__).resolve().parents[2]
LINE = f"token rate unknown on mac1 ({RATE_UNKNOWN})"


def _doctor(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui",
            "doctor",
            "--demo-scenario",
            "exo_cluster",
            "--window",
            "1",
            *args,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_doctor_says_token_rate_unknown_and_why() -> None:
    plain, as_json = _doctor(), _doctor("--json")  # side by side: the file stays fast
    out, err = plain.communicate(timeout=90)
    assert plain.returncode == 0, (out, err)  # not monitored is not a failure
    assert LINE in out, out
    assert "tok/s" not in out  # no number made up for it
    assert f"mac1: {EXO_STATE}: {UNVERIFIED}" in out  # documented only: unverified, said
    out, err = as_json.communicate(timeout=90)
    assert as_json.returncode == 0, err
    doc = json.loads(out)
    assert LINE in doc["coverage"]["gaps"]
    assert not [f for f in doc["findings"] if f["rule"] == "token_drop"]
