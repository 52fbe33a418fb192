"""Both probes read RDMA port addressing from a tree: the GID table (populated entries
only, capped per port and said), the IB port's state, physical state and SM LID."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.parsers.sysfs import ZERO_GID
from collectors.samples import HostSample, LinkSample
from fabtop.core.pipeline import Pipeline
from tests.integration.test_probe import (  # noqa: F401
    Probe,
    _args,
    _awk_shim,
    _lines,
    _shell_argv,
    _start,
    node,
    run_probe,
)

EXTRA = 70  # populated entries added to mlx5_1/1: past the probes' cap of 64


def _gid_node(tmp_path: Path) -> Path:
    """A simulated node: two RoCE ports whose IPv4 GIDs sit at 4/5 (an extra link-local
    address first), zero entries after them, a long table on mlx5_1, and an IB port
    without a subnet manager."""
    from fabtop.sim import Fabric, SimHostConfig, tree

    cfg = SimHostConfig("n1", roce_ports=2, ib_port=True, ib_sm=False, roce_addrs=("ll6", "ipv4"))
    fab = Fabric([cfg, SimHostConfig("n2")])
    root = tmp_path / "gidnode"
    tree.write(fab.hosts["n1"], root, t=30.0)
    port = root / "sys/class/infiniband/mlx5_1/ports/1"
    for k in range(EXTRA):  # macvlans' GIDs, as a host with many pods has them
        idx = 100 + k
        (port / "gids" / str(idx)).write_text(f"fe80:0000:0000:0000:0000:0000:0001:{k:04x}\n")
        (port / "gid_attrs/types" / str(idx)).write_text("RoCE v2\n")
        (port / "gid_attrs/ndevs" / str(idx)).write_text(f"mv{k}\n")
    return root


def _frames(root: Path, probe: str, started: list[Probe], path: str | None = None) -> list[Frame]:
    args = replace(
        _args(root),
        sysfs=str(root / "sys"),
        path=(str(root / "bin"),),
        max_frames=2,
        slow_ticks=100000,
        probe=probe,
    )
    p = _start(started, _shell_argv("dash", args), root, *([path] if path else []))
    frames = p.frames(2, deadline_s=15)
    assert len(frames) == 2
    return frames


def _samples(frames: list[Frame]) -> list[HostSample]:
    pipe = Pipeline()  # carries the slow section (the GID table) into the second frame
    return [pipe.apply_frame("n1", f)[0] for f in frames]


def _addressing(link: LinkSample) -> tuple[object, ...]:
    return (
        link.gids,
        link.gids_truncated,
        link.port_state,
        link.phys_state,
        link.sm_lid,
        link.node_type,
    )


@pytest.mark.parametrize("awk", ["mawk", "gawk", "busybox"])
def test_both_probes_send_populated_gids_capped_and_the_ib_ports_sm_lid(
    awk: str, tmp_path: Path, run_probe: list[Probe]
) -> None:
    root = _gid_node(tmp_path)
    sh = _frames(root, "sh", run_probe, _awk_shim(root, awk))
    fast = _frames(root, "python", run_probe)
    for frames in (sh, fast):
        slow = frames[0].find("sysib_slow")
        assert slow is not None
        lines = _lines(slow.text)
        # empty entries (zero GID, unreadable type) never go out; a type only with its GID
        assert ZERO_GID not in lines.values()
        assert "mlx5_0/ports/1/gids/6" not in lines
        assert "mlx5_0/ports/1/gid_attrs/types/6" not in lines
        assert lines["mlx5_0/ports/1/gids/5"] == "0000:0000:0000:0000:0000:ffff:0a00:0001"
        assert lines["mlx5_0/ports/1/gid_attrs/types/5"] == "RoCE v2"
        assert lines["mlx5_0/ports/1/gids"] == "-" and lines["mlx5_1/ports/1/gids"] == "capped"
        sent = [r for r in lines if r.startswith("mlx5_1/ports/1/gids/")]
        assert len(sent) == 64
        types = {r.rsplit("/", 1)[1] for r in lines if r.startswith("mlx5_1/ports/1/gid_attrs/t")}
        assert types == {r.rsplit("/", 1)[1] for r in sent}
    a, b = _samples(sh), _samples(fast)
    for sa, sb in zip(a, b, strict=True):
        assert {k: _addressing(v) for k, v in sa.links.items()} == {
            k: _addressing(v) for k, v in sb.links.items()
        }
    second = a[1].links  # a tick without the slow section: the table carried over
    roce = second["enp65s0f0np0"]
    assert roce.gids is not None and not roce.gids_truncated
    assert [(g.index, g.type, g.netdev) for g in roce.gids] == [
        (i, ("IB/RoCE v1", "RoCE v2")[i % 2], "enp65s0f0np0") for i in range(6)
    ]
    assert [g.index for g in roce.gids if g.ipv4_mapped and g.type == "RoCE v2"] == [5]
    assert roce.sm_lid == 0 and roce.port_state == "ACTIVE"  # RoCE: SM LID 0 by design
    assert roce.node_type == "CA"
    long = second["enp65s0f1np1"]
    assert long.gids is not None and len(long.gids) == 64 and long.gids_truncated
    ib = second["mlx5_2/1"]
    assert (ib.link_layer, ib.port_state, ib.phys_state, ib.sm_lid) == (
        "InfiniBand",
        "INIT",
        "LinkUp",
        0,
    )
    for s in (a[0], b[0]):
        assert any("GID table of mlx5_1/ports/1: more than 64" in w for w in s.warnings)
