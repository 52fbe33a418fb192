"""`fabtop snapshot --demo`: GPUs and inference servers carry what a script would read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU_NUMERIC = (
    "utilization_pct",
    "memory_used_mib",
    "memory_total_mib",
    "power_w",
    "temperature_c",
    "sm_clock_mhz",
)


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("snap") / "snap.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "snapshot", "--demo", "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


def test_demo_snapshot_gpus_and_servers(doc: dict[str, Any]) -> None:
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert set(hosts) == {"node1", "node2", "node3", "node4", "mac1", "mac2", "spark1"}
    # the DGX Spark is simulated without a GPU (no GB10 capture): none listed, never made up
    assert hosts.pop("spark1")["gpus"] == []
    macs = {n: hosts.pop(n) for n in ("mac1", "mac2")}  # one Apple GPU each, from macmon
    for m in macs.values():
        assert [g["name"] for g in m["gpus"]] == ["Apple M3 Ultra"]
    for h in hosts.values():
        assert len(h["gpus"]) == 2, h["name"]
        for g in h["gpus"]:
            assert g["name"].startswith("NVIDIA") and g["bus_id"]
            for k in GPU_NUMERIC:
                assert isinstance(g[k], (int, float)) and not isinstance(g[k], bool), (k, g)
            assert 0 <= g["utilization_pct"] <= 100
            assert g["memory_used_mib"] <= g["memory_total_mib"]
            assert isinstance(g["throttle_reasons"], list)
    servers = [i for h in hosts.values() for i in h["inference"]]
    assert len(servers) == 1
    inf = servers[0]
    assert inf["url"] == "http://127.0.0.1:8000/metrics" and inf["server"] == "vllm"
    assert "generated_tokens_per_s" in inf and "prompt_tokens_per_s" in inf
    for k in ("requests_running", "requests_waiting", "generated_tokens_total"):
        assert isinstance(inf[k], (int, float)) and inf[k] >= 0, (k, inf)


def test_demo_snapshot_has_a_token_rate(doc: dict[str, Any]) -> None:
    inf = next(i for h in doc["hosts"] for i in h["inference"])
    for k in ("generated_tokens_per_s", "prompt_tokens_per_s"):
        assert isinstance(inf[k], (int, float)) and inf[k] > 0, (k, inf)
