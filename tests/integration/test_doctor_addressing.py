"""``fabtop doctor`` on the addressing scenarios: no subnet manager on the IB fabric, a RoCE
port without an address, the RoCE v2 IPv4 GID at another index on one host; and the
healthy demo quiet for all three rules. The real CLI in subprocesses, run at once."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_doctor import start

RULES = ("no_subnet_manager", "roce_no_ip_gid", "gid_index_mismatch")
Runs = dict[str, tuple[int, str, str]]


@pytest.fixture(scope="module")
def runs() -> Runs:
    jobs = {
        name: start("--demo-scenario", name, "--window", "1", "--json")
        for name in ("healthy", "no_subnet_manager", "roce_no_ipv4_gid", "gid_index_mismatch")
    }
    jobs["no_sm_text"] = start("--demo-scenario", "no_subnet_manager", "--window", "1")
    out = {}
    for name, p in jobs.items():
        stdout, stderr = p.communicate(timeout=90)
        out[name] = (p.returncode, stdout, stderr)
    return out


def _findings(runs: Runs, name: str) -> list[dict[str, object]]:
    _, out, err = runs[name]
    assert "Traceback" not in err, err
    return list(json.loads(out)["findings"])


def test_the_healthy_demo_stays_quiet_for_the_addressing_rules(runs: Runs) -> None:
    assert [f for f in _findings(runs, "healthy") if f["rule"] in RULES] == []
    assert runs["healthy"][0] == 0


def test_no_subnet_manager_is_one_critical_finding_naming_both_ib_hosts(runs: Runs) -> None:
    found = [f for f in _findings(runs, "no_subnet_manager") if f["rule"] == "no_subnet_manager"]
    assert len(found) == 1, found
    f = found[0]
    assert (f["severity"], f["subject"]) == ("critical", "fabric")
    ev = f["evidence"]
    assert isinstance(ev, dict) and ev["hosts"] == "node1, node2"
    assert ev["ports"] == "node1/mlx5_2/1, node2/mlx5_2/1"
    assert "INIT/LinkUp sm_lid 0x0" in ev["state"]
    assert "systemctl start opensm" in str(f["next_step"])
    assert runs["no_subnet_manager"][0] == 2
    rc, text, _ = runs["no_sm_text"]
    assert rc == 2 and "CRITICAL" in text and "no subnet manager is running" in text
    assert "evidence: ports=node1/mlx5_2/1, node2/mlx5_2/1" in text


def test_a_roce_port_without_an_address_is_a_warning_per_port(runs: Runs) -> None:
    found = [f for f in _findings(runs, "roce_no_ipv4_gid") if f["rule"] == "roce_no_ip_gid"]
    assert sorted((f["host"], f["subject"]) for f in found) == [
        ("node3", "node3/enp65s0f0np0"),
        ("node3", "node3/enp65s0f1np1"),
    ]
    assert all(f["severity"] == "warning" for f in found)
    assert "RoCE v2 cannot work" in str(found[0]["summary"])
    assert [
        f
        for f in _findings(runs, "roce_no_ipv4_gid")
        if f["rule"] != "roce_no_ip_gid" and f["severity"] != "info"
    ] == []


def test_the_gid_index_differing_on_one_host_is_info_on_that_host(runs: Runs) -> None:
    found = [f for f in _findings(runs, "gid_index_mismatch") if f["rule"] == "gid_index_mismatch"]
    assert len(found) == 1
    f = found[0]
    assert (f["severity"], f["subject"], f["host"]) == ("info", "fabric", "node3")
    assert f["evidence"] == {"values": "3: node1, node2, node4; 5: node3", "majority": "3"}
    assert runs["gid_index_mismatch"][0] == 0  # info only: doctor passes
