"""A firewall on the RDMA path, for real (issue 15): nftables rulesets loaded with
``nft -f`` in namespace hosts of the test bed, read by the probe through each host's
sshd, judged by ``fabtop doctor --json``.

Each host serves a simulated ConnectX tree (hardware RoCE ports enp65s0f0np0 and
enp65s0f1np1, fabtop.sim) while its packet filter is the namespace's own:

- h1 drops new TCP connections to perftest's 18515 on enp65s0f0np0: a warning there,
  quoting that rule;
- h2 has the same drop with an accept for the port before it: quiet;
- h3 drops UDP 4791 (RoCE v2) on enp65s0f0np0: the NIC's RoCE never passes netfilter,
  so nothing is said about RoCE being blocked (h3 runs the sh probe, the others the
  fast one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.netns import Testbed, bed_for_test

pytestmark = [pytest.mark.root, pytest.mark.sshd]

ROOT = Path(__file__).resolve().parents[2]
DROP = 'iifname "enp65s0f0np0" tcp dport 18515 ct state new drop'
RULESETS = {
    "h1": [DROP],
    "h2": ['iifname "enp65s0f0np0" tcp dport 18515 accept', DROP],
    "h3": ['iifname "enp65s0f0np0" udp dport 4791 drop'],
}


def _ruleset(rules: list[str]) -> str:
    body = "\n".join(f"\t\t{r}" for r in rules)
    return (
        "table inet rdma_guard {\n\tchain input {\n"
        "\t\ttype filter hook input priority filter; policy accept;\n"
        f"\t\tct state established,related accept\n{body}\n\t}}\n}}\n"
    )


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    tmp = tmp_path_factory.mktemp("fw")
    with bed_for_test(3, sim_hosts=(1, 2, 3)) as b:
        for host, rules in RULESETS.items():
            f = tmp / f"{host}.nft"
            f.write_text(_ruleset(rules))
            b.exec(host, "nft", "-f", str(f))
        yield b


@pytest.fixture(scope="module")
def doctor(bed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    cfg = tmp_path_factory.mktemp("cfg") / "fabtop.toml"
    # h3 runs the sh probe: both probes read the packet filter the same way.
    cfg.write_text(bed.toml().replace('name = "h3"', 'name = "h3"\nprobe = "sh"'))
    p = subprocess.run(
        [sys.executable, "-m", "tui", "doctor", "-c", str(cfg), "--json", "--window", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode in (0, 1, 2), p.stderr
    doc: dict[str, object] = json.loads(p.stdout)
    return doc


def _firewall_findings(doc: dict[str, object]) -> list[dict[str, object]]:
    found = doc["findings"]
    assert isinstance(found, list)
    return [f for f in found if f["rule"] == "firewall_blocks_rdma"]


def test_a_drop_of_new_tcp_to_18515_on_the_data_interface_is_a_warning(
    doctor: dict[str, object],
) -> None:
    hits = [f for f in _firewall_findings(doctor) if f["host"] == "h1"]
    assert [(f["subject"], f["severity"]) for f in hits] == [("h1/enp65s0f0np0", "warning")]
    summary = str(hits[0]["summary"])
    assert "18515" in summary and "29500" not in summary  # only what the rule drops
    evidence = hits[0]["evidence"]
    assert isinstance(evidence, dict)
    assert evidence["rule"] == (
        'inet rdma_guard input: iifname "enp65s0f0np0" tcp dport 18515 ct state new drop (handle 3)'
    )


def test_the_same_drop_after_an_accept_stays_quiet(doctor: dict[str, object]) -> None:
    assert not [f for f in _firewall_findings(doctor) if f["host"] == "h2"]


def test_a_udp_4791_drop_on_a_hardware_roce_port_is_not_roce_blocked(
    doctor: dict[str, object],
) -> None:
    found = doctor["findings"]
    assert isinstance(found, list)
    on_h3 = [f for f in found if f["host"] == "h3"]
    assert not [f for f in on_h3 if f["rule"] == "firewall_blocks_rdma"]
    assert not [
        f
        for f in on_h3
        if "4791" in str(f["summary"])
        or ("RoCE" in str(f["summary"]) and "block" in str(f["summary"]))
    ]


def test_every_host_s_ruleset_was_read(doctor: dict[str, object]) -> None:
    # quiet must mean "read and open", not "not read": an unread ruleset is a gap
    cov = doctor["coverage"]
    assert isinstance(cov, dict)
    assert cov["reporting"] == ["h1", "h2", "h3"]
    assert not [g for g in cov["gaps"] if "firewall" in g]
