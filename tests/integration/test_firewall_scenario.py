"""``fabtop doctor --demo-scenario firewall_blocked --json``: the cluster guide's pitfall,
firewalld's default zone on every interface of node3, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_firewalld_default_zone_on_node3_is_named_per_fabric_interface() -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "doctor",
            "--demo-scenario",
            "firewall_blocked",
            "--window",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1, p.stderr  # warnings only
    found = [
        (f["rule"], f["host"], f["subject"], f["severity"])
        for f in json.loads(p.stdout)["findings"]
    ]
    assert sorted(found) == [
        ("firewall_blocks_rdma", "node3", "node3/enp65s0f0np0", "warning"),
        ("firewall_blocks_rdma", "node3", "node3/enp65s0f1np1", "warning"),
        ("firewall_blocks_rdma", "node3", "node3/thunderbolt0", "warning"),
    ]
    tb = next(f for f in json.loads(p.stdout)["findings"] if f["subject"] == "node3/thunderbolt0")
    assert tb["evidence"]["rule"] == (
        "inet firewalld filter_INPUT: reject with icmpx admin-prohibited (handle 19)"
    )
    assert "thunderbolt0" in tb["next_step"] and "trusted" in tb["next_step"]
