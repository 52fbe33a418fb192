"""Thunderbolt through ``fabtop doctor`` on the demo's Linux pair (node3 <-> node4): the
simulated hosts print the sysfs the probe would send, through the live path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doctor(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "doctor", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, Any]]:
    jobs = {
        "healthy": doctor("--demo-scenario", "healthy", "--window", "1", "--json"),
        "lanes": doctor("--demo-scenario", "tb_lane_degraded", "--window", "1", "--json"),
        "errors": doctor("--demo-scenario", "tb_link_errors", "--window", "1", "--json"),
        "text": doctor("--demo-scenario", "tb_lane_degraded", "--window", "1"),
    }
    out: dict[str, tuple[int, Any]] = {}
    for name, p in jobs.items():
        stdout, _ = p.communicate(timeout=90)
        out[name] = (p.returncode, stdout if name == "text" else json.loads(stdout))
    return out


def test_healthy_pair_is_one_proven_cable_and_no_finding(runs: dict[str, tuple[int, Any]]) -> None:
    rc, doc = runs["healthy"]
    assert rc == 0
    assert not [f for f in doc["findings"] if f["rule"].startswith("tb_")]
    cables = {c["text"]: c for c in doc["thunderbolt_cables"]}
    assert all(c["status"] == "paired" for c in cables.values())
    cable = cables["node3:thunderbolt0 \u27f7 node4:thunderbolt0  2 \u00d7 20 = 40 Gb/s"]
    assert [e["host"] for e in cable["ends"]] == ["node3", "node4"]


def test_one_lane_where_two_are_possible_is_named_on_both_ends(
    runs: dict[str, tuple[int, Any]],
) -> None:
    rc, doc = runs["lanes"]
    assert rc == 1
    hits = [f for f in doc["findings"] if f["rule"] == "tb_link_degraded"]
    assert sorted(f["subject"] for f in hits) == ["node3/thunderbolt0", "node4/thunderbolt0"]
    ev = hits[0]["evidence"]
    assert (ev["rx_lanes"], ev["can_lanes"], ev["generation"]) == (1, 2, 4)
    assert "generation 4" in ev["known_from"]
    assert "certified Thunderbolt" in hits[0]["next_step"]
    node3 = [c for c in doc["thunderbolt_cables"] if c["text"].startswith("node3:")]
    assert [c["total_gbps"] for c in node3] == [20.0]
    _, text = runs["text"]
    cable = "node3:thunderbolt0 \u27f7 node4:thunderbolt0  1 \u00d7 20 = 20 Gb/s"
    assert "thunderbolt cables:\n" in text and f"\n  {cable}\n" in text


def test_errors_rising_on_thunderbolt0_are_named(runs: dict[str, tuple[int, Any]]) -> None:
    rc, doc = runs["errors"]
    assert rc == 1
    (hit,) = [f for f in doc["findings"] if f["rule"] == "tb_link_errors"]
    assert hit["subject"] == "node3/thunderbolt0"
    assert hit["evidence"]["rx_errors_per_s"] == pytest.approx(40.0, rel=0.05)
    assert not [f for f in doc["findings"] if f["rule"] == "tb_link_degraded"]
