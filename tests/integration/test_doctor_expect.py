"""``[expect]`` makes ``fabtop doctor`` a launch gate (issue 29 item 7), through the real CLI.

This machine, reached through a real sshd on loopback and probed for real, has no RDMA
device: the issue's VM that doctor passed with exit 0. With ``rdma_ports = 2`` expected it
fails (exit 2) naming the host, the field, what was expected and what was found; without
``[expect]`` it says what it said before. ``--write-expect`` writes the fabric as it is,
and doctor over the written file passes; the demo does the same with every field
(RDMA ports, link layer, speed, width, MTU, lossless priority, GPUs, inference).
The runs of each phase go concurrently, so the file costs two doctor windows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from fabtop.config import load_config
from tests.conftest import REPO
from tests.integration.sshd import Sshd, free_port

pytestmark = pytest.mark.sshd

Run = tuple[int, str, str]


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "doctor", "--window", "1", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def finish(jobs: dict[str, subprocess.Popen[str]]) -> dict[str, Run]:
    out = {}
    for name, p in jobs.items():
        stdout, stderr = p.communicate(timeout=90)
        out[name] = (p.returncode, stdout, stderr)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, sshd: Sshd) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("expect")
    ssh_cfg = tmp / "ssh_config"
    ssh_cfg.write_text(f"Host *\n  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n")
    ssh = ["--known-hosts", str(sshd.known_hosts_path), "--ssh-config", str(ssh_cfg)]
    host = f'[[host]]\nname = "vm"\nssh = "{sshd.target}"\n'
    gate = tmp / "gate.toml"
    gate.write_text("[expect]\nrdma_ports = 2\n\n" + host)
    plain = tmp / "plain.toml"
    plain.write_text(host)
    bad = tmp / "bad.toml"  # the demo's nodes run 2 GPUs on 100 Gb/s RoCE
    bad.write_text("[expect]\ngpus = 8\n")
    written, demo_written = tmp / "written.toml", tmp / "demo.toml"
    demo = ("--demo-scenario", "healthy")
    first = finish(
        {
            "gate": start("-c", str(gate), *ssh),
            "gate_json": start("-c", str(gate), *ssh, "--json"),
            "plain": start("-c", str(plain), *ssh, "--json", "--write-expect", str(written)),
            "demo_write": start(*demo, "--write-expect", str(demo_written)),
            "demo_bad": start(*demo, "--expect", str(bad), "--json"),
            "down": start(f"gone=nobody@127.0.0.1:{free_port()}", "--expect", str(gate), "--json"),
        }
    )
    before = written.read_text()
    second = finish(
        {
            "written": start("-c", str(written), *ssh, "--json"),
            "refused": start("-c", str(plain), *ssh, "--write-expect", str(written)),
            "demo_match": start(*demo, "--expect", str(demo_written)),
        }
    )
    return {
        **first,
        **second,
        "text": before,
        "after_refusal": written.read_text(),
        "written_path": written,
        "demo_path": demo_written,
    }


def test_a_node_with_no_rdma_device_fails_the_gate_naming_it(runs: dict[str, Any]) -> None:
    rc, out, err = runs["gate"]
    assert rc == 2, out + err
    assert "CRITICAL (" in out
    assert "  vm: rdma_ports expected 2, found 0\n" in out
    assert "      next: ssh -p " in out and " rdma link show" in out
    rc, out, _ = runs["gate_json"]
    assert rc == 2
    doc = json.loads(out)
    assert doc["expect"] == [
        {
            "host": "vm",
            "field": "rdma_ports",
            "status": "unmet",
            "expected": 2,
            "found": 0,
            "why": None,
            "port": None,
        }
    ]
    (f,) = [f for f in doc["findings"] if f["rule"].startswith("expect_")]
    assert (f["rule"], f["severity"], f["host"]) == ("expect_unmet", "critical", "vm")
    assert f["evidence"] == {"field": "rdma_ports", "expected": "2", "found": "0"}


def test_without_expect_doctor_says_what_it_said_before(runs: dict[str, Any]) -> None:
    rc, out, err = runs["plain"]
    doc = json.loads(out)
    assert "expect" not in doc
    assert not [f for f in doc["findings"] if f["rule"].startswith("expect_")]
    assert any(g.startswith("no RDMA device on vm") for g in doc["coverage"]["gaps"])
    assert rc == max(
        ({"info": 0, "warning": 1, "critical": 2}[f["severity"]] for f in doc["findings"]),
        default=0,
    )
    assert f"expectations of 1 host(s) written to {runs['written_path']}" in err


def test_the_written_fabric_loads_back_and_passes(runs: dict[str, Any]) -> None:
    text = runs["text"]
    assert "[expect]\nrdma_ports = 0\n" in text
    cfg = load_config(runs["written_path"])
    (h,) = cfg.hosts
    assert h.name == "vm" and h.ssh is not None and h.expect is not None
    assert h.expect.rdma_ports == 0
    rc, out, err = runs["written"]
    doc = json.loads(out)
    assert doc["expect"] == [], out + err
    assert rc < 2


def test_an_existing_file_is_not_overwritten_without_force(runs: dict[str, Any]) -> None:
    rc, out, err = runs["refused"]
    assert rc == 2 and out == ""
    assert err.strip() == f"fabtop: {runs['written_path']}: exists; pass --force to overwrite it"
    assert runs["after_refusal"] == runs["text"]


def test_the_demo_meets_its_own_written_expectation_and_fails_another(
    runs: dict[str, Any],
) -> None:
    rc, out, err = runs["demo_write"]
    assert rc == 0, out + err
    fields = {
        k
        for h in load_config(runs["demo_path"]).hosts
        if h.expect is not None
        for k in h.expect.declared()
    }
    assert fields >= {
        "rdma_ports",
        "link_layer",
        "speed_gbps",
        "width",
        "mtu",
        "lossless_priority",
        "gpus",
        "inference",
    }
    rc, out, err = runs["demo_match"]
    assert rc == 0, out + err
    assert out.rstrip().endswith("expect: met on 7 hosts")
    rc, out, _ = runs["demo_bad"]
    assert rc == 2
    unmet = {(e["host"], e["found"], e["status"]) for e in json.loads(out)["expect"]}
    assert ("node1", 2, "unmet") in unmet and ("mac1", 1, "unmet") in unmet
    # the Spark runs no GPU tool: not read, never met
    assert ("spark1", None, "unchecked") in unmet


def test_a_host_not_seen_is_said_once_and_never_passes(runs: dict[str, Any]) -> None:
    """A host that did not answer cannot meet anything: its one critical finding says so,
    and the expectation it could not be checked against is in ``expect``."""
    rc, out, _ = runs["down"]
    assert rc == 2
    doc = json.loads(out)
    assert [(e["host"], e["field"], e["status"]) for e in doc["expect"]] == [
        ("gone", "host", "unchecked")
    ]
    assert [f["rule"] for f in doc["findings"]] == ["host_unreachable"]
