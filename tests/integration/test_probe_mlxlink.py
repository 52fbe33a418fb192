"""mlxlink (issue 33, opt-in) as both probes run it on a node, over the real sshd.

Verified on captures only: this machine has no ConnectX and no MFT, so a shim ``mlxlink``
on the node's PATH answers the public capture of tests/fixtures/optics (SOURCES.md) for
one PCI function and hangs for the other; the real probe.sh and probe_fast.py run it
through a real sshd on loopback, and the frames go through the pipeline to samples."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.probe import ProbeArgs
from collectors.vocabulary import Metric
from fabtop.core.coverage import host_gaps
from fabtop.core.pipeline import Pipeline
from tests.integration.sshd import Sshd
from tests.integration.test_probe import ETHTOOL_I, ETHTOOL_S, _args, _write_tool, node  # noqa: F401
from tests.integration.test_probe_optics import CAPTURES, _as_nobody, _over_ssh, open_node  # noqa: F401

CAPTURE = CAPTURES / "mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json"
GOOD, HUNG = "0000:b1:00.2", "0000:b1:00.3"  # eth0's PCI function, eth1's


def _node(node: Path, fixtures_dir: Path) -> None:
    """eth0 and eth1 on two PCI functions (sysfs ``device`` links); ethtool says the same
    bus-info and has no module EEPROM for either (a veth's answer); mlxlink answers the
    capture for eth0's function and hangs for eth1's, its pid written down."""
    net = node / "sys/class/net"
    for ndev, bdf in (("eth0", GOOD), ("eth1", HUNG)):
        fn = node / "sys/devices/pci0000:b0" / bdf
        fn.mkdir(parents=True)
        (net / ndev / "statistics").mkdir(parents=True, exist_ok=True)
        dev = net / ndev / "device"
        if dev.exists() or dev.is_symlink():
            dev.unlink()
        dev.symlink_to(fn)
        info = (fixtures_dir / ETHTOOL_I).read_text().replace("0000:b3:00.0", bdf)
        (node / f"ethtool_i_{ndev}.txt").write_text(info)
    veth = CAPTURES / "ethtool_m_veth_not_supported_testbed.txt"
    _write_tool(
        node / "bin",
        "ethtool",
        f"""case "$1 $2" in
"-S "*) cat "{fixtures_dir / ETHTOOL_S}" ;;
"-i eth0" | "-i eth1") cat "{node}/ethtool_i_$2.txt" ;;
"-m "*) cat "{veth}" >&2; exit 1 ;;
*) exit 1 ;;
esac
""",
    )
    _write_tool(
        node / "bin",
        "mlxlink",
        f"""echo "$*" >> {node}/mlxlink.log
case "$*" in
"-d {GOOD} -m -c --json") cat "{CAPTURE}" ;;
"-d {HUNG} -m -c --json") echo $$ >> {node}/hung.pids; exec sleep 60 ;;
*) exit 3 ;;
esac
""",
    )


def _frames(sshd: Sshd, node: Path, n: int) -> dict[str, list[Frame]]:
    """``n`` frames of each probe, both running at once (one node, one sshd)."""

    def args(impl: str) -> ProbeArgs:
        base = _args(node, probe=impl, interval_ms=250, slow_ticks=1, optics_s=0)
        return replace(base, max_frames=n, mlxlink=True, interfaces=("eth0", "eth1"))

    async def both() -> list[list[Frame]]:
        return list(await asyncio.gather(*(_over_ssh(sshd, args(i), n) for i in ("sh", "python"))))

    sh, py = asyncio.run(both())
    return {"sh": sh, "python": py}


def test_both_probes_run_mlxlink_beside_the_ticks_end_a_hung_one_and_feed_the_module(
    node: Path, fixtures_dir: Path, sshd: Sshd
) -> None:
    _node(node, fixtures_dir)
    runs = _frames(sshd, node, 18)
    for impl, frames in runs.items():
        # One function a round, round-robin: eth0's answers; eth1's hangs past its own
        # 3 s, is ended, said as a timeout, and eth0's latest goes out beside it.
        got = [
            (f.seq, s.subject, s.status, s.detail)
            for f in frames
            for s in f.sections
            if s.kind == "mlxlink"
        ]
        firsts = [g for g in got if g[1] == GOOD][:1] + [g for g in got if g[1] == HUNG][:1]
        assert [g[1:] for g in firsts] == [(GOOD, "ok", None), (HUNG, "timeout", "after 3s")], (
            impl,
            got,
        )
        last = next(f for f in frames if f.find("mlxlink", HUNG) is not None)
        good = last.find("mlxlink", GOOD)
        assert good is not None and good.status == "ok" and '"Module Info"' in good.text
        # The frames went on meanwhile, on time: no frame waited for mlxlink.
        gaps = [(b.clock_ns - a.clock_ns) / 1e9 for a, b in pairwise(frames)]
        assert max(gaps) < 2.0, (impl, gaps)
        assert not [
            f.seq
            for f in frames
            for s in f.sections
            if s.kind == "probe" and "skipped_ticks" in s.text
        ]

        # The module of eth0's function, where ethtool -m has none; none for eth1.
        pipe = Pipeline()
        sample = [pipe.apply_frame("n1", f)[0] for f in frames][-1]
        m = sample.links["eth0"].module
        assert m is not None and (m.identifier, m.part, m.temperature_c) == (
            "OSFP",
            "OSFP-400G-DR4",
            61.0,
        )
        newest = [s for f in frames for s in f.sections if (s.kind, s.subject) == ("mlxlink", GOOD)]
        assert m.read_ns == newest[-1].read_ns and len(m.lanes) == 4
        # ... and its corrected bits (the capture's four lanes), the BER's numerator where
        # ethtool -S counts none (this mlx5 capture has no rx_corrected_bits_phy), at
        # mlxlink's own read time
        eth0 = sample.links["eth0"]
        assert eth0.metrics[Metric.PHY_CORRECTED_BITS] == 3017647 + 15132549 + 7368641 + 9233545
        assert eth0.mlxlink_read_ns == newest[-1].read_ns
        assert sample.links["eth1"].module is None
        assert [w for w in sample.warnings if "mlxlink" in w] == [
            f"n1: mlxlink {HUNG}: timeout (after 3s)"
        ], (impl, sample.warnings)

    # Read-only flags only; every hung one ended.
    log = (node / "mlxlink.log").read_text().splitlines()
    assert set(log) == {f"-d {GOOD} -m -c --json", f"-d {HUNG} -m -c --json"}
    assert log.count(f"-d {HUNG} -m -c --json") == 2  # one round each, then it backs off
    for pid in map(int, (node / "hung.pids").read_text().split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"the hung mlxlink {pid} was not ended")


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_mlxlink_absent_or_without_root_is_one_word_and_sudo_n_runs_it(
    impl: str, open_node: Path
) -> None:
    bdf = open_node / "sys/devices/pci0000:b0" / GOOD
    bdf.mkdir(parents=True)
    dev = open_node / "sys/class/net/eth0/device"
    dev.unlink()
    dev.symlink_to(bdf)
    # Not installed: one section a round says so, no warning
    frames, hs = _as_nobody(open_node, impl, 1, mlxlink=True)
    said = [(s.subject, s.status, s.detail) for s in frames[0].sections if s.kind == "mlxlink"]
    assert said == [(None, "missing", "mlxlink")]
    assert not [w for w in hs.warnings if "mlxlink" in w]
    assert "mlxlink not installed on n1" in host_gaps(hs)  # asked for: said once, for the host
    # Installed, the user not root: not run (it needs root), said alike
    _write_tool(
        open_node / "bin", "mlxlink", f'echo "$*" >> {open_node}/mlxlink.log\ncat "{CAPTURE}"\n'
    )
    frames, hs = _as_nobody(open_node, impl, 1, mlxlink=True)
    said = [(s.subject, s.status, s.detail) for s in frames[0].sections if s.kind == "mlxlink"]
    assert said == [(None, "missing", "needs root")] and not (open_node / "mlxlink.log").exists()
    # optics_sudo: through `sudo -n`, as ethtool -m
    frames, hs = _as_nobody(open_node, impl, 2, mlxlink=True, optics_sudo=True)
    assert f"-n mlxlink -d {GOOD} -m -c --json" in (open_node / "sudo.log").read_text().splitlines()
    secs = [s for f in frames for s in f.sections if (s.kind, s.subject) == ("mlxlink", GOOD)]
    assert secs and secs[0].status == "ok" and '"Module Info"' in secs[0].text
