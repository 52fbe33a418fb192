"""Both probes read the packet filter alike: nft's JSON or iptables-save as root (or
through ``sudo -n`` when told), and otherwise say why not, never "fine".

The tools are shims printing the captures (tests/fixtures/firewall), so what the
section carries is known; "not root" is the probe run as nobody (setpriv).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.parsers.firewall import firewall_state
from collectors.probe import ProbeArgs, local_command
from tests.conftest import skip_or_fail
from tests.integration.test_probe import SYSTEM_PATH, Probe

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "firewall"
KINDS = ("sh", "python")


@pytest.fixture()
def node() -> Iterator[Path]:
    """A node every user can read (nobody runs the probe in some tests)."""
    d = Path(tempfile.mkdtemp(prefix="fabtop-fw-"))
    d.chmod(0o755)
    (d / "bin").mkdir(mode=0o755)
    (d / "sys/class/net").mkdir(parents=True)
    yield d
    shutil.rmtree(d)


def _tool(node: Path, name: str, body: str) -> None:
    p = node / "bin" / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


def _first_frame(node: Path, kind: str, as_nobody: bool = False, **kw: object) -> Frame:
    args = replace(
        ProbeArgs(
            interval_ms=200,
            sysfs=str(node / "sys"),
            path=(str(node / "bin"),),
            timeout_s=1,
            max_frames=1,
            gpu="off",
            probe=kind,
        ),
        **kw,
    )  # type: ignore[arg-type]
    argv = local_command(args)
    if as_nobody:
        if shutil.which("setpriv") is None or os.geteuid() != 0:
            skip_or_fail("running the probe as nobody needs root and setpriv")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    p = Probe(argv, node, SYSTEM_PATH)
    try:
        frames = p.frames(1)
    finally:
        p.close()
    assert frames, "no frame"
    return frames[0]


@pytest.mark.parametrize("kind", KINDS)
def test_root_reads_nft_json_and_the_collector_reads_the_ruleset(node: Path, kind: str) -> None:
    if os.geteuid() != 0:
        skip_or_fail("reading the ruleset as root needs root")
    _tool(node, "nft", f'[ "$*" = "-j list ruleset" ] || exit 9\ncat {FIX / "firewalld.json"}\n')
    sec = _first_frame(node, kind).find("firewall")
    assert sec is not None and sec.status == "ok"
    fw = firewall_state(sec.status, sec.detail, sec.text)
    assert fw.known and fw.tool == "nft" and fw.ruleset is not None
    assert ("inet", "firewalld", "filter_INPUT") in fw.ruleset.chains


@pytest.mark.parametrize("kind", KINDS)
def test_without_nft_iptables_save_is_read(node: Path, kind: str) -> None:
    if os.geteuid() != 0:
        skip_or_fail("reading the ruleset as root needs root")
    _tool(node, "iptables-save", f"cat {FIX / 'algo_iptables_save.txt'}\n")
    sec = _first_frame(node, kind).find("firewall")
    assert sec is not None
    assert firewall_state(sec.status, sec.detail, sec.text).tool == "iptables-save"


@pytest.mark.parametrize("kind", KINDS)
def test_no_tool_is_missing(node: Path, kind: str) -> None:
    sec = _first_frame(node, kind).find("firewall")
    assert sec is not None and (sec.status, sec.detail) == ("missing", "no nft or iptables-save")


@pytest.mark.parametrize("kind", KINDS)
def test_not_root_says_needs_root_and_runs_nothing(node: Path, kind: str) -> None:
    _tool(node, "nft", f"touch {node}/ran\n")
    sec = _first_frame(node, kind, as_nobody=True).find("firewall")
    assert sec is not None and (sec.status, sec.detail) == ("missing", "needs root")
    assert not (node / "ran").exists()
    assert firewall_state(sec.status, sec.detail, "").status == "needs root"


@pytest.mark.parametrize("kind", KINDS)
def test_fw_sudo_reads_through_sudo_n(node: Path, kind: str) -> None:
    _tool(node, "nft", f"cat {FIX / 'docker.json'}\n")
    _tool(node, "sudo", '[ "$1" = -n ] || exit 9\nshift\nexec "$@"\n')
    sec = _first_frame(node, kind, as_nobody=True, fw_sudo=True).find("firewall")
    assert sec is not None and sec.status == "ok"
    assert firewall_state(sec.status, sec.detail, sec.text).known


@pytest.mark.parametrize("kind", KINDS)
def test_a_ruleset_past_the_section_cap_is_truncated_never_half_read(node: Path, kind: str) -> None:
    if os.geteuid() != 0:
        skip_or_fail("reading the ruleset as root needs root")
    # 8 KiB of JSON into a 4 KiB section
    _tool(
        node,
        "nft",
        "printf '{\"nftables\": ['; i=0\nwhile [ $i -lt 200 ]; do "
        'printf \'{"table": {"family": "inet", "name": "t%d", "handle": %d}}, \' $i $i; '
        "i=$((i+1)); done\nprintf '{}]}\\n'\n",
    )
    sec = _first_frame(node, kind, section_bytes=4096).find("firewall")
    assert sec is not None and sec.status == "truncated"
    fw = firewall_state(sec.status, sec.detail, sec.text)
    assert fw.status == "truncated" and not fw.known


@pytest.mark.parametrize("kind", KINDS)
def test_a_ruleset_on_one_line_past_64_kib_comes_whole(node: Path, kind: str) -> None:
    if os.geteuid() != 0:
        skip_or_fail("reading the ruleset as root needs root")
    # nft prints its JSON on one line; a line's cap is 64 KiB: 3000 chains are ~300 KiB
    chains = ", ".join(
        f'{{"chain": {{"family": "inet", "table": "t", "name": "c{i}", "handle": {i}}}}}'
        for i in range(3000)
    )
    doc = '{"nftables": [{"table": {"family": "inet", "name": "t", "handle": 1}}, ' + chains + "]}"
    (node / "big.json").write_text(doc + "\n")
    _tool(node, "nft", f"cat {node / 'big.json'}\n")
    sec = _first_frame(node, kind).find("firewall")
    assert sec is not None and sec.status == "ok"
    assert max(len(ln) for ln in sec.text.splitlines()) <= 60000
    fw = firewall_state(sec.status, sec.detail, sec.text)
    assert fw.known and fw.ruleset is not None and len(fw.ruleset.chains) == 3000
