"""Both probes on a node with a Thunderbolt bus (kernel layout: devices under the NHI,
bus entries as links): the same ThunderboltInfo, at slow cadence, names checked, a
switch's secure-connect key never read."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame
from fabtop.core.pipeline import Pipeline
from fabtop.sim import Fabric, tree
from tests.integration.test_probe import (  # noqa: F401
    Probe,
    _args,
    _awk_shim,
    _start,
    node,
    run_probe,
)
from tests.integration.test_probe_fast import _run
from tests.unit.tb_sysfs import TbHost, Xd, write

A = "d2030000-0072-6b0e-23a4-1c9b3f5e8a01"
B = "d2030000-0072-6b0e-23a4-1c9b3f5e8a02"
C = "d2030000-0072-6b0e-23a4-1c9b3f5e8a03"


def _tb_node(node: Path) -> None:
    write(
        TbHost(
            A,
            xds=[Xd("1", B, "spark2", 40.0), Xd("2", C, "spark3", 20.0, 1, netdev="thunderbolt1")],
            dock=True,
        ),
        node / "sys",
    )
    bus = node / "sys/bus/thunderbolt/devices"
    (bus / "0-9;touch${IFS}pwned").mkdir()


def _tb(frames: list[Frame]) -> tuple[object, list[str]]:
    pipe = Pipeline()
    samples = [pipe.apply_frame("n1", f)[0] for f in frames]
    return samples[-1].thunderbolt, samples[0].warnings


@pytest.mark.parametrize("probe", ["sh", "python"])
def test_both_probes_read_the_bus_alike(probe: str, node: Path, run_probe: list[Probe]) -> None:
    _tb_node(node)
    args = replace(_args(node), probe=probe, max_frames=3, slow_ticks=2)
    frames = _run(args, node, run_probe, 3)
    # slow cadence: frames 1 and 3 are slow, the one between carries no Thunderbolt section
    assert [f.find("systb_slow") is not None for f in frames] == [True, False, True]
    text = frames[0].find("systb_slow").text  # type: ignore[union-attr]
    assert "SECRET" not in text and "0-3/key" not in text  # a switch's key is never read
    assert "0-1.0/key network" in text and "0-1.0/net/thunderbolt0 -" in text
    tb, warnings = _tb(frames)
    assert tb is not None
    got = (
        tb.self_uid,
        tb.generation,  # type: ignore[attr-defined]
        [
            (p.port, p.netdev, p.peer_uid, p.peer_name, p.rx_gbps_per_lane, p.rx_lanes)
            for p in tb.peers
        ],
    )  # type: ignore[attr-defined]
    assert got == (
        A,
        4,
        [
            ("0-1", "thunderbolt0", B, "spark2", 40.0, 2),
            ("0-2", "thunderbolt1", C, "spark3", 20.0, 1),
        ],
    )
    assert any("refused thunderbolt name" in w for w in warnings)
    assert not (node / "pwned").exists()


def test_the_two_probes_give_the_same_thunderbolt_info(node: Path, run_probe: list[Probe]) -> None:
    _tb_node(node)
    got = []
    for probe in ("sh", "python"):
        frames = _run(replace(_args(node), probe=probe, max_frames=1), node, run_probe, 1)
        got.append(_tb(frames)[0])
    assert got[0] is not None and got[0] == got[1]


@pytest.mark.parametrize("awk", ["mawk", "busybox"])
def test_sh_probe_under_other_awks(awk: str, node: Path, run_probe: list[Probe]) -> None:
    _tb_node(node)
    path = _awk_shim(node, awk)
    args = replace(_args(node), probe="sh", max_frames=1)
    from collectors.probe import build_argv

    p = _start(run_probe, ["dash", "-s", "--", *build_argv(args)], node, env_path=path)
    frames = p.frames(1, deadline_s=15)
    tb, _ = _tb(frames)
    assert tb is not None and len(tb.peers) == 2  # type: ignore[attr-defined]


def test_simulated_linux_pair_reads_through_the_real_probe(
    tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    # The demo's node3 as a tree: its text goes through the same probe and parser.
    from fabtop.sim.fabric import demo_hosts

    hosts = demo_hosts()
    fab = Fabric(hosts)
    root = tmp_path / "sim3"
    tree.write(fab.hosts["node3"], root, t=5.0)
    assert os.path.isdir(root / "sys/bus/thunderbolt/devices/0-1.0/net/thunderbolt0")
    args = replace(
        _args(node),
        sysfs=str(root / "sys"),
        path=(str(root / "bin"),),
        probe="python",
        max_frames=1,
    )
    frames = _run(args, node, run_probe, 1)
    pipe = Pipeline()
    s = pipe.apply_frame("node3", frames[0])[0]
    direct = Pipeline().apply_frame("node3", _decoded(fab.hosts["node3"].frame(5.0)))[0]
    assert s.thunderbolt == direct.thunderbolt and s.thunderbolt is not None
    assert s.links["thunderbolt0"].rate_gbps == 40.0  # 2 lanes x 20 Gb/s, no sysfs speed


def _decoded(text: str) -> Frame:
    from collectors.frames import FrameDecoder

    (f,) = FrameDecoder().feed(text.encode())
    return f
