"""Hardware rules: PCIe below capability, hot NIC, link flaps, module temperature events."""

from __future__ import annotations

from collectors.samples import PcieLink
from tests.unit.rules_support import Fabric, by_rule


def test_pcie_link_below_capability() -> None:
    fab = Fabric()
    p = fab.port("node3", pcie=PcieLink(16.0, 8, 16.0, 16))
    found = by_rule(fab.tick(), "pcie_degraded")
    assert [f.subject for f in found] == ["node3/enp65s0f0np0"]
    assert "x8 at 16.0 GT/s" in found[0].summary and "x16" in found[0].summary
    assert "LnkSta" in found[0].next_step
    p.pcie = PcieLink(16.0, 16, 16.0, 16)
    assert not by_rule(fab.tick(), "pcie_degraded")


def test_pcie_speed_downtrained() -> None:
    fab = Fabric()
    fab.port("node3", pcie=PcieLink(8.0, 16, 16.0, 16))
    assert by_rule(fab.tick(), "pcie_degraded")


def test_nic_temperature_warning_critical_and_restore() -> None:
    fab = Fabric()
    p = fab.port("node2", temperature_c=70.0)
    assert not by_rule(fab.run(2), "nic_temperature")
    p.temperature_c = 98.0
    found = by_rule(fab.tick(), "nic_temperature")
    assert [(f.subject, f.severity) for f in found] == [("node2/enp65s0f0np0", "warning")]
    p.temperature_c = 107.0
    assert by_rule(fab.tick(), "nic_temperature")[0].severity == "critical"
    p.temperature_c = 80.0
    fab.run(4)
    assert not by_rule(fab.findings, "nic_temperature")


def test_link_flap_is_seen_then_held_then_cleared() -> None:
    fab = Fabric()
    p = fab.port("node2").traffic(40)
    fab.run(2)
    p.set(link_down_events=1.0)
    p.state = "down"
    found = by_rule(fab.tick(), "link_flap")
    assert [(f.subject, f.severity) for f in found] == [("node2/enp65s0f0np0", "critical")]
    assert "down now" in found[0].summary
    p.set(link_down_events=0.0)
    p.state = "up"
    found = by_rule(fab.run(3), "link_flap")
    assert found[0].severity == "warning" and "up again" in found[0].summary
    assert found[0].evidence["down_events_seen"] == 1
    fab.run(120)
    assert not by_rule(fab.findings, "link_flap")


def test_repeated_flaps_are_counted() -> None:
    fab = Fabric()
    p = fab.port("node2").traffic(40)
    fab.run(2)
    for _ in range(3):
        p.set(link_down_events=1.0)
        fab.tick()
        p.set(link_down_events=0.0)
        fab.run(5)
    found = by_rule(fab.findings, "link_flap")
    assert "went down 3 time(s)" in found[0].summary


def test_module_high_temperature_events() -> None:
    fab = Fabric()
    p = fab.port("node1")
    fab.run(2)
    p.set(module_high_temp_events=1.0)
    found = by_rule(fab.tick(), "module_high_temp")
    assert [f.subject for f in found] == ["node1/enp65s0f0np0"]
    assert "ethtool -m enp65s0f0np0" in found[0].next_step
