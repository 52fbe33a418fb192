"""The big simulated fabric through the real CLI: doctor names the one faulty host among
many, ``fabtop test`` proves its 8 rails, and two export shards own disjoint hosts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.integration.sshd import free_port
from tests.testbed.prometheus import prometheus, query, wait_for


def _fabtop(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def test_doctor_names_the_one_host_of_the_big_fabric_in_a_storm() -> None:
    # 16 hosts: the demo's node3 is played by r9 (half way in), its rail 0 the stuck one.
    r = _fabtop(
        "doctor", "--demo-scenario", "pfc_storm", "--demo-hosts", "16", "--demo-prefix", "r",
        "--window", "1", "--json",
    )  # fmt: skip
    doc = json.loads(r.stdout)
    assert r.returncode == 2, r.stderr  # a critical finding (doctor's exit status)
    critical = [f for f in doc["findings"] if f["severity"] == "critical"]
    assert [f["subject"] for f in critical] == ["r9/enp65s0f0np0/prio3"], critical
    assert doc["coverage"]["reporting"] == [f"r{i}" for i in range(1, 17)]


def test_fabtop_test_proves_the_eight_rails_of_the_big_fabric(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    r = _fabtop(
        "test", "--demo-scenario", "healthy", "--demo-hosts", "3", "pairs",
        "--seconds", "1", "-o", str(report),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    steps = json.loads(report.read_text())["steps"]
    by_rail: dict[int, list[str]] = {}
    for s in steps:
        by_rail.setdefault(s["rail"], []).append(s["status"])
    assert sorted(by_rail) == list(range(8))  # rails 0..7, one per RoCE port
    assert all(v == ["pass"] * 6 for v in by_rail.values()), by_rail  # 3 hosts, both ways


def _start_shard(prefix: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "tui", "export", "--demo-hosts", "2",
            "--demo-prefix", prefix, "--shard", prefix, "--listen", f"127.0.0.1:{port}",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, port


def _labels(url: str, q: str) -> list[dict[str, str]]:
    return [r["metric"] for r in query(url, q)]  # type: ignore[misc]


def _by(url: str, q: str, *keys: str) -> set[tuple[str, ...]]:
    return {tuple(m.get(k, "") for k in keys) for m in _labels(url, q)}


def test_two_shards_scraped_by_a_real_prometheus_own_disjoint_hosts(tmp_path: Path) -> None:
    """Two ``fabtop export --shard`` processes, one real Prometheus: each shard's hosts,
    their info series and its name arrive, disjoint; a shard killed leaves its hosts
    findable, and blind (issue 31 items 1 and 5)."""
    shards = {p: _start_shard(p) for p in ("a", "b")}
    try:
        targets = [f"127.0.0.1:{port}" for _, port in shards.values()]
        with prometheus(tmp_path, {"fabtop": targets}) as url:
            wait_for(
                "both shards' hosts up with their info series",
                lambda: (
                    len(query(url, "fabtop_host_up == 1")) == 4
                    and len(_by(url, "fabtop_link_info", "host")) == 4
                    and len(_by(url, "fabtop_software_version_info", "host")) == 4
                ),
            )
            assert _by(url, "fabtop_shard_info", "shard", "instance") == {
                ("a", targets[0]),
                ("b", targets[1]),
            }
            up = _by(url, "fabtop_host_up == 1", "shard", "host")
            assert up == {("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")}
            # Info series of each shard's hosts, from that shard's target only.
            for fam in ("fabtop_link_info", "fabtop_link_qos_info", "fabtop_gpu_info"):
                got = _by(url, fam, "instance", "host")
                assert {h for _, h in got} == {"a1", "a2", "b1", "b2"}, fam
                assert all(inst == targets[h[0] == "b"] for inst, h in got), got
            # Nothing of fabtop's renamed by Prometheus: no job or instance label of its own.
            every = _labels(url, '{__name__=~"fabtop_.+"}')
            assert every and not any(k.startswith("exported_") for m in every for k in m)
            # Shard b killed: Prometheus's next scrape fails, and its hosts are found from
            # their last hour, blind (what the mixin's FabtopHostBlind reads).
            proc_b = shards["b"][0]
            proc_b.terminate()
            proc_b.wait(timeout=20)
            blind = 'last_over_time(fabtop_host_up{shard="b"}[1h]) and on (job, instance) (up == 0)'
            wait_for("shard b's hosts blind", lambda: len(query(url, blind)) == 2)
            assert _by(url, blind, "host") == {("b1",), ("b2",)}
    finally:
        for proc, _ in shards.values():
            proc.terminate()
            proc.wait(timeout=20)
