"""Configuration rules: MTU across hosts, RoCE MTU, firmware drift."""

from __future__ import annotations

from tests.unit.rules_support import Fabric, by_rule


def four(**odd: object) -> Fabric:
    fab = Fabric()
    for h in ("node1", "node2", "node4"):
        fab.port(h).traffic(10)
    fab.port("node3", **odd).traffic(10)
    return fab


def test_mtu_mismatch_names_the_odd_host_at_once() -> None:
    fab = four(mtu=1500)
    found = by_rule(fab.tick(), "mtu_mismatch")
    assert [f.subject for f in found] == ["fabric"]
    assert "most use 9000" in found[0].summary and "node3/enp65s0f0np0 (1500)" in found[0].summary
    assert "ip link set dev enp65s0f0np0 mtu 9000" in found[0].next_step
    fab.ports[("node3", "enp65s0f0np0")].mtu = 9000
    assert not by_rule(fab.tick(), "mtu_mismatch")


def test_management_nics_do_not_count_for_the_fabric_mtu() -> None:
    fab = four()
    fab.port("node3", "eno1", kind="netdev", mtu=1500, rdma_device=None, pfc=None, trust=None)
    assert not by_rule(fab.tick(), "mtu_mismatch")


def test_roce_mtu_below_4200() -> None:
    fab = four(mtu=4000)
    found = by_rule(fab.tick(), "roce_mtu_low")
    assert [f.subject for f in found] == ["node3/enp65s0f0np0"]
    assert "4096" in found[0].summary
    fab.ports[("node3", "enp65s0f0np0")].mtu = 4200  # exactly enough for RoCE MTU 4096
    assert not by_rule(fab.tick(), "roce_mtu_low")


def test_firmware_mismatch_for_the_same_nic_family() -> None:
    fab = four(firmware="22.36.1010")
    found = by_rule(fab.tick(), "firmware_mismatch")
    assert [f.subject for f in found] == ["fabric"]
    assert "most run 22.39.2048" in found[0].summary and "node3 (22.36.1010)" in found[0].summary


def test_different_nic_families_may_run_different_firmware() -> None:
    fab = four()
    # A ConnectX-7 (firmware 28.x) next to ConnectX-6 Dx cards (22.x) is no mismatch.
    fab.port("node4", "enp1s0f0np0", firmware="28.39.1002", rdma_device="mlx5_2").traffic(1)
    assert not by_rule(fab.tick(), "firmware_mismatch")


def test_firmware_board_id_separates_groups() -> None:
    fab = Fabric()
    fab.port("node1", firmware="16.35.2000 (MT_0000000008)")
    fab.port("node2", firmware="16.35.2000 (MT_0000000008)")
    fab.port("node3", firmware="16.31.1014 (MT_0000000012)")  # another board
    assert not by_rule(fab.tick(), "firmware_mismatch")
    fab.port("node4", firmware="16.28.1002 (MT_0000000008)")
    found = by_rule(fab.tick(), "firmware_mismatch")
    assert "node4 (16.28.1002)" in found[0].summary


def test_firmware_mismatch_clears_once_the_odd_host_is_flashed() -> None:
    fab = four(firmware="22.36.1010")
    assert by_rule(fab.tick(), "firmware_mismatch")
    fab.ports[("node3", "enp65s0f0np0")].firmware = "22.39.2048"
    assert not by_rule(fab.tick(), "firmware_mismatch")
    fab.ports[("node3", "enp65s0f0np0")].firmware = "22.36.1010"  # and back: named again
    assert by_rule(fab.tick(), "firmware_mismatch")


def test_two_firmware_versions_on_one_host_alone_are_no_mismatch_across_hosts() -> None:
    # Hosts are compared with each other; one host with two cards of the family that run
    # different versions has no other host to differ from.
    fab = Fabric()
    fab.port("node1", firmware="22.36.1010")
    fab.port("node1", "enp66s0f0np0", firmware="22.39.2048", rdma_device="mlx5_1")
    assert not by_rule(fab.tick(), "firmware_mismatch")
    fab.port("node2", firmware="22.39.2048")
    found = by_rule(fab.tick(), "firmware_mismatch")
    assert [f.subject for f in found] == ["fabric"]
    assert "22.36.1010+22.39.2048" in found[0].summary and "(22.39.2048)" in found[0].summary


def test_each_fabric_kind_is_compared_with_itself_only() -> None:
    # The pass that finds every kind agreeing stops early: a kind of its own MTU is no
    # mismatch, a second MTU within one kind still is.
    fab = four()
    for h in ("node1", "node2"):
        fab.port(h, "tb0", kind="tb", mtu=1500, rdma_device=None, pfc=None, trust=None)
    assert not by_rule(fab.tick(), "mtu_mismatch")
    fab.ports[("node2", "tb0")].mtu = 9000
    found = by_rule(fab.tick(), "mtu_mismatch")
    assert [f.summary.split(":")[0] for f in found] == ["MTU differs across Thunderbolt links"]
