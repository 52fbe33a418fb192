"""The GID table and the subnet-manager facts of RDMA ports, sysfs lines -> records -> links.

GID tables are real captures (tests/fixtures/rdma_gids: show_gids output, turned back into
the sysfs lines it read); port states are the procfs tree's mlx5_0 with the kernel's
formats (sysfs.c: ``state`` "2: INIT", ``sm_lid`` ``0x%x``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.parsers.sysfs import ZERO_GID, parse_sysib
from collectors.samples import GidEntry
from tests.unit.gid_captures import GIDS, rows, sysib_text, table
from tests.unit.test_parse_sysfs import sysfs_dump

CAPTURES = sorted(p.name for p in GIDS.glob("show_gids_*.txt"))


def _frame(sysib: str, slow: str = "") -> Frame:
    secs = [Section("sysib", None, 1_700_000_000_000_000_000, "ok", None, sysib)]
    if slow:
        secs.append(Section("sysib_slow", None, 1_700_000_000_000_000_000, "ok", None, slow))
    return Frame(7, 1_700_000_000_000_000_000, 12345.5, 1_700_000_000.0, secs)


@pytest.mark.parametrize("name", CAPTURES)
def test_every_line_of_a_show_gids_capture_is_one_entry(name: str) -> None:
    got = parse_sysib(sysib_text(name))
    assert got.warnings == []
    want = rows(name)
    assert want
    for dev, port, index, gid, kind, ndev in want:
        rec = got.devices[dev].ports[port]
        assert rec.gids is not None and rec.gids[index] == gid
        assert (rec.gid_types[index], rec.gid_ndevs[index]) == (kind, ndev)
    assert sum(len(p.gids or {}) for d in got.devices.values() for p in d.ports.values()) == len(
        want
    )


def test_gid_entries_say_ipv4_and_link_local() -> None:
    gids = table("show_gids_mlx5_ipv4_at_3_nccl1131.txt", "mlx5_0")
    assert [(g.index, g.link_local, g.ipv4_mapped, g.type) for g in gids] == [
        (0, True, False, "IB/RoCE v1"),
        (1, True, False, "RoCE v2"),
        (2, False, True, "IB/RoCE v1"),
        (3, False, True, "RoCE v2"),
    ]
    ula = table("show_gids_rocep_ipv6_ula_v2_only_mooncake1617.txt", "rocep105s0")
    assert [(g.link_local, g.ipv4_mapped) for g in ula] == [(True, False), (False, False)]


def test_a_table_read_empty_is_empty_not_unknown_and_zero_entries_are_left_out() -> None:
    read = parse_sysib(f"mlx5_0/ports/1/gids/0 {ZERO_GID}\nmlx5_0/ports/1/gids -\n")
    assert read.devices["mlx5_0"].ports[1].gids == {}
    unread = parse_sysib("mlx5_0/ports/1/state 4: ACTIVE\n")
    assert unread.devices["mlx5_0"].ports[1].gids is None
    capped = parse_sysib("mlx5_0/ports/1/gids capped\n").devices["mlx5_0"].ports[1]
    assert capped.gids == {} and capped.gids_truncated


def test_bad_gid_lines_cost_their_entry_only() -> None:
    text = "\n".join(
        [
            "mlx5_0/ports/1/gids/0 fe80::1",  # not the kernel's %pI6 form
            "mlx5_0/ports/1/gids/1 fe80:0000:0000:0000:0E42:A1FF:FE5D:4DB8",  # case: accepted
            "mlx5_0/ports/1/gids/99999999 fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8",  # index
            "mlx5_0/ports/1/gid_attrs/types/1 RoCE v2" + "x" * 500,
            "mlx5_0/ports/1/gid_attrs/ndevs/1 ens\x1b[31m1f0",
            "mlx5_0/ports/1/gids -",
        ]
    )
    got = parse_sysib(text)
    port = got.devices["mlx5_0"].ports[1]
    assert port.gids == {1: "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8"}
    assert len(port.gid_types[1]) <= 32 and port.gid_ndevs[1].isprintable()
    assert len(got.warnings) == 2 and all("bad GID" in w for w in got.warnings)


def test_links_carry_the_ports_states_sm_lid_and_gid_table(fixtures_dir: Path) -> None:
    procfs = fixtures_dir / "sysfs/prometheus_procfs/sys/class/infiniband"
    # mlx5_0 port 1: InfiniBand, "4: ACTIVE"; the archive's phys_state reads "4: ACTIVE"
    # too (procfs test data), so the kernel's "5: LinkUp" is put after it.
    base = sysfs_dump(procfs) + "mlx5_0/ports/1/phys_state 5: LinkUp\n"
    stuck = base.replace("mlx5_0/ports/1/state 4: ACTIVE", "mlx5_0/ports/1/state 2: INIT")
    assert stuck != base
    sample = assemble("n1", _frame(stuck + "mlx5_0/ports/1/sm_lid 0x0\nmlx5_0/ports/1/lid 0x0\n"))
    ib = sample.links["mlx5_0/1"]
    assert (ib.link_layer, ib.port_state, ib.phys_state, ib.sm_lid) == (
        "InfiniBand",
        "INIT",
        "LinkUp",
        0,
    )
    assert ib.gids is None  # no slow section yet: unknown
    layer = "mlx5_0/ports/1/link_layer "
    roce = base.replace(layer + "InfiniBand", layer + "Ethernet")
    slow = sysib_text("show_gids_mlx5_ipv4_at_3_nccl1131.txt")
    sample = assemble(
        "n2", _frame(roce + "mlx5_0/ports/1/sm_lid 0x0\n", slow + "\nmlx5_0/node_type 1: CA")
    )
    link = sample.links["ens3np0"]  # the GIDs' netdev names the port's link
    assert link.kind == "roce" and link.sm_lid == 0 and link.port_state == "ACTIVE"
    assert link.node_type == "CA" and ib.node_type is None  # not read: unknown
    assert link.gids == table("show_gids_mlx5_ipv4_at_3_nccl1131.txt", "mlx5_0")
    assert link.gids[3] == GidEntry(
        3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2", "ens3np0"
    )
    assert not link.gids_truncated
