"""Netdev addresses (``ip -o addr show``, slow cadence) through both probes.

The demo's node3 as a tree (its ``ip`` shim prints the simulator's addresses in
iproute2's one-line format): both probes give the links the addresses the simulator's own
frame gives, and a node without ``ip`` says the section is missing and leaves every
link's addresses unknown (None), never "no address".
"""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import FrameDecoder
from collectors.probe import build_argv
from fabtop.core.pipeline import Pipeline
from fabtop.sim import Fabric, tree
from fabtop.sim.fabric import demo_hosts
from tests.integration.test_probe import (  # noqa: F401
    Probe,
    _args,
    _start,
    bare_path,
    node,
    run_probe,
)
from tests.integration.test_probe_fast import _run


@pytest.mark.parametrize("probe", ["sh", "python"])
def test_both_probes_give_each_link_its_addresses(
    probe: str, tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    fab = Fabric(demo_hosts())
    root = tmp_path / "sim3"
    tree.write(fab.hosts["node3"], root, t=5.0)
    args = replace(
        _args(node), sysfs=str(root / "sys"), path=(str(root / "bin"),), probe=probe, max_frames=1
    )
    (frame,) = _run(args, node, run_probe, 1)
    sec = frame.find("ip_addr")
    assert sec is not None and sec.status == "ok"
    s = Pipeline().apply_frame("node3", frame)[0]
    (direct_frame,) = FrameDecoder().feed(fab.hosts["node3"].frame(5.0).encode())
    direct = Pipeline().apply_frame("node3", direct_frame)[0]
    got = {k: lk.addresses for k, lk in s.links.items()}
    assert got["enp65s0f0np0"] is not None and "10.0.0.3/24" in got["enp65s0f0np0"]
    assert got["thunderbolt0"] == ("10.254.0.3/24",)
    assert got == {k: lk.addresses for k, lk in direct.links.items()}


def test_a_node_without_ip_leaves_addresses_unknown(
    tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    fab = Fabric(demo_hosts())
    root = tmp_path / "sim3"
    tree.write(fab.hosts["node3"], root, t=5.0)
    (root / "bin" / "ip").unlink()
    bare = bare_path(tmp_path / "bare")  # the tools the probe itself needs, and no ip
    got = []
    for impl in ("sh", "python"):
        if impl == "python":
            (bare / "python3").symlink_to(sys.executable)
        args = replace(
            _args(node),
            sysfs=str(root / "sys"),
            path=(str(root / "bin"),),
            probe=impl,
            max_frames=1,
        )
        probe = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node, env_path=str(bare))
        (frame,) = probe.frames(1, deadline_s=15)
        sec = frame.find("ip_addr")
        assert sec is not None and (sec.status, sec.detail) == ("missing", "ip"), impl
        s = Pipeline().apply_frame("node3", frame)[0]
        got.append({k: lk.addresses for k, lk in s.links.items()})
    assert got[0] == got[1] and got[0] and all(a is None for a in got[0].values())
