"""`fabtop snapshot` carries the findings `fabtop doctor` gives on the same fabric (issue 27,
class 6): the real CLI and the real probe over the local transport, on a simulated sysfs
tree (two InfiniBand nodes without a subnet manager) and on a fake Mac whose tools replay
public captures; and the demo fabric for the window rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fabtop.sim import Fabric, SimHostConfig, tree
from tests.conftest import IN_CI, REPO, skip_or_fail

DARWIN = REPO / "tests" / "fixtures" / "darwin"
STUDIO_TB = "system_profiler_SPThunderboltDataType_json_macstudio_m3ultra_tb5_omlx.json"


def fabtop(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run the CLI the way a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def snapshot_json(*args: str) -> dict[str, Any]:
    r = fabtop("snapshot", *args)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def rules(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], f["severity"]) for f in doc["findings"]}


def test_two_ib_nodes_without_a_subnet_manager_in_three_snapshots_and_in_doctor(
    tmp_path: Path,
) -> None:
    # Nobody started opensm: both ports train (LinkUp) but stay INIT with SM LID 0. No
    # inference server, so a snapshot takes two frames: one second of rates.
    hosts = [SimHostConfig(n, ib_port=True, ib_sm=False) for n in ("ib1", "ib2")]
    fab = Fabric(hosts, slow_every_s=0.0)
    fab.at(5.0)
    cfg = "interval = 1.0\n"
    for name, host in fab.hosts.items():
        root = tmp_path / name
        tree.write(host, root, 5.0)
        cfg += (
            f'[[host]]\nname = "{name}"\nssh = "local"\nsysfs = "{root}/sys"\n'
            f'path = ["{root}/bin"]\n'
        )
    (tmp_path / "fabtop.toml").write_text(cfg)
    conf = str(tmp_path / "fabtop.toml")
    for _ in range(3):
        doc = snapshot_json("-c", conf)
        assert ("no_subnet_manager", "critical") in rules(doc)
        (f,) = [f for f in doc["findings"] if f["rule"] == "no_subnet_manager"]
        assert f["evidence"]["hosts"] == "ib1, ib2" and "INIT/LinkUp" in f["evidence"]["state"]
        assert doc["span_s"] is not None and doc["span_s"] < 2.0
        assert "pfc_storm" in {n["rule"] for n in doc["not_judged"]}
    r = fabtop("doctor", "-c", conf, "--window", "1", "--json")
    assert r.returncode == 2, r.stdout + r.stderr
    doctor = json.loads(r.stdout)
    assert ("no_subnet_manager", "critical") in rules(doctor)
    # doctor says, as the snapshot does, what its window's rates were too short for
    (token,) = [n for n in doctor["not_judged"] if n["rule"] == "token_drop"]
    assert token["needs_s"] == 60.0 and 0 < token["span_s"] < 60.0


def _tool(bindir: Path, name: str, body: str) -> None:
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


def test_a_single_mac_with_rdma_enabled_and_no_device_in_snapshots_and_doctor(
    tmp_path: Path,
) -> None:
    if shutil.which("zsh") is None:
        skip_or_fail("zsh not installed (apt-get install zsh): the macOS probe runs in zsh")
    b = tmp_path / "bin"
    b.mkdir()
    _tool(b, "uname", "echo Darwin\n")
    _tool(b, "sysctl", 'echo "{ sec = 1700000000, usec = 250000 } Tue Nov 14 22:13:20 2023"\n')
    for name, capture in (
        ("netstat", "netstat_ibdn_gopsutil.txt"),
        ("rdma_ctl", "rdma_ctl_status_enabled_mlx2944.txt"),  # "enabled"
        ("system_profiler", STUDIO_TB),
        ("networksetup", "networksetup_listallhardwareports_macbookpro_osaurus.txt"),
        ("ifconfig", "ifconfig_bridge0_3members_macmini_mlx1903.txt"),
        ("pmset", "pmset_g_therm_nominal_go_test.txt"),
    ):
        _tool(b, name, f"exec cat '{DARWIN / capture}'\n")
    _tool(b, "ibv_devinfo", 'echo "No IB devices found"\n')  # what it prints with none
    if shutil.which("original-awk"):  # the awk a Mac has (BWK)
        os.symlink(shutil.which("original-awk") or "", b / "awk")
    elif IN_CI:
        pytest.fail("CI=true but original-awk is not installed")
    conf = tmp_path / "fabtop.toml"
    conf.write_text(f'[[host]]\nname = "mac1"\nssh = "local"\npath = ["{b}"]\n')
    for _ in range(3):
        doc = snapshot_json("-c", str(conf))
        assert ("rdma_enabled_no_device", "warning") in rules(doc), doc["findings"]
    r = fabtop("doctor", "-c", str(conf), "--window", "1", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("rdma_enabled_no_device", "warning") in rules(json.loads(r.stdout))


def test_a_window_rule_is_named_not_judged_until_the_interval_covers_its_window() -> None:
    # thunderbolt0 corrupting frames: the rule needs them for detect_s (2 s). The demo's
    # hosts have an inference server, so a snapshot takes three frames: 2 intervals.
    short = snapshot_json("--demo-scenario", "tb_link_errors", "--interval", "0.5")
    assert short["span_s"] == 1.0
    assert "tb_link_errors" not in {r for r, _ in rules(short)}
    assert {"rule": "tb_link_errors", "needs_s": 2.0, "span_s": 1.0} in short["not_judged"]
    covered = snapshot_json("--demo-scenario", "tb_link_errors", "--interval", "1")
    assert covered["span_s"] == 2.0
    assert ("tb_link_errors", "warning") in rules(covered)
    assert "tb_link_errors" not in {n["rule"] for n in covered["not_judged"]}
    # A storm the probe's own watchdog names at once is judged, whatever the span.
    storm = snapshot_json("--demo-scenario", "pfc_storm", "--interval", "0.5")
    assert ("pfc_storm", "critical") in rules(storm)
    assert "pfc_storm" not in {n["rule"] for n in storm["not_judged"]}
