"""sysnet/sysib parsers on dumps built from the real sysfs trees in ../shared/fixtures/sysfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.parsers.sysfs import (
    parse_ib_rate,
    parse_ib_width,
    parse_pcie_speed,
    parse_sysib,
    parse_sysnet,
)


def sysfs_dump(class_dir: Path) -> str:
    """Print ``<relpath> <value>`` for every file below ``class_dir``, as the probe does.

    The value is the file's content without its trailing newline; a ``device`` entry (a
    symlink on a live system, a plain file in the archived trees) prints as ``<dev>/device -``.
    """
    lines: list[str] = []
    for path in sorted(class_dir.rglob("*")):
        rel = path.relative_to(class_dir).as_posix()
        if path.name == "device" and (path.is_symlink() or path.is_file()):
            lines.append(f"{rel} -")
        elif path.is_file():
            lines.append(f"{rel} {path.read_text(errors='replace').rstrip(chr(10))}")
    return "\n".join(lines) + "\n"


def _read(path: Path) -> str:
    return path.read_text().strip()


@pytest.fixture(scope="module")
def procfs_sys(fixtures_dir: Path) -> Path:
    return fixtures_dir / "sysfs" / "prometheus_procfs" / "sys" / "class"


@pytest.fixture(scope="module")
def node_exporter_sys(fixtures_dir: Path) -> Path:
    return fixtures_dir / "sysfs" / "prometheus_node_exporter" / "sys" / "class"


def test_sysnet_eth0_matches_files(procfs_sys: Path) -> None:
    net = parse_sysnet(sysfs_dump(procfs_sys / "net"))
    assert net.warnings == []
    eth0 = net.netdevs["eth0"]
    d = procfs_sys / "net" / "eth0"
    assert eth0.mtu == int(_read(d / "mtu"))
    assert eth0.operstate == _read(d / "operstate")
    assert eth0.speed_mbps == int(_read(d / "speed"))
    assert eth0.carrier_changes == int(_read(d / "carrier_changes"))
    assert eth0.carrier_down_count == int(_read(d / "carrier_down_count"))
    assert eth0.physical is True
    # the archived tree has no statistics/ directory: nothing is made up
    assert eth0.statistics == {}
    assert eth0.attrs["address"] == _read(d / "address")


def test_sysnet_ecn_enable_per_priority(procfs_sys: Path) -> None:
    eth0 = parse_sysnet(sysfs_dump(procfs_sys / "net")).netdevs["eth0"]
    d = procfs_sys / "net" / "eth0" / "ecn"
    np_on = tuple(p for p in range(8) if _read(d / "roce_np" / "enable" / str(p)) == "1")
    rp_on = tuple(p for p in range(8) if _read(d / "roce_rp" / "enable" / str(p)) == "1")
    assert eth0.ecn_np_enabled == np_on
    assert eth0.ecn_rp_enabled == rp_on
    assert np_on != rp_on  # the capture differs at priority 7: both sides are read apart


def test_sysnet_speed_minus_one_pcie_hwmon_and_missing_values() -> None:
    # A live mlx5 port's shape (paths as in docs/PROBE.md); values cover the edge cases.
    text = "\n".join(
        [
            "eth2/device -",
            "eth2/speed -1",
            "eth2/ifalias",
            "eth2/statistics/rx_bytes 123",
            "eth2/statistics/tx_bytes not-a-number",
            "eth2/device/current_link_speed 16.0 GT/s PCIe",
            "eth2/device/max_link_speed 16.0 GT/s PCIe",
            "eth2/device/current_link_width 8",
            "eth2/device/max_link_width 16",
            "eth2/device/hwmon/hwmon3/temp1_input 61000",
            "eth2/device/hwmon/hwmon3/temp2_input 73500",
            "veth0/mtu 1500",
        ]
    )
    net = parse_sysnet(text)
    eth2 = net.netdevs["eth2"]
    assert eth2.speed_mbps is None
    assert eth2.statistics == {"rx_bytes": 123}
    assert any("tx_bytes" in w for w in net.warnings)
    assert eth2.attrs["ifalias"] == ""
    assert eth2.pcie is not None and eth2.pcie.degraded
    assert (eth2.pcie.speed_gts, eth2.pcie.width, eth2.pcie.max_width) == (16.0, 8, 16)
    assert eth2.temperature_c == 73.5
    assert net.netdevs["veth0"].physical is False
    assert net.netdevs["veth0"].pcie is None


def test_sysib_mlx5_device_and_port_match_files(procfs_sys: Path) -> None:
    ib = parse_sysib(sysfs_dump(procfs_sys / "infiniband"))
    assert ib.warnings == []
    d = procfs_sys / "infiniband" / "mlx5_0"
    dev = ib.devices["mlx5_0"]
    assert dev.fw_ver == _read(d / "fw_ver")
    assert dev.hca_type == _read(d / "hca_type")
    assert dev.board_id == _read(d / "board_id")
    assert dev.node_guid == _read(d / "node_guid")
    port = dev.ports[1]
    assert port.state == "ACTIVE"
    assert port.rate_gbps == 25.0
    assert port.link_layer == _read(d / "ports" / "1" / "link_layer")
    for group, parsed in (("counters", port.counters), ("hw_counters", port.hw_counters)):
        files = sorted((d / "ports" / "1" / group).iterdir())
        assert parsed == {f.name: int(_read(f)) for f in files}


def test_sysib_all_devices_ports_and_states(procfs_sys: Path, node_exporter_sys: Path) -> None:
    for root in (procfs_sys, node_exporter_sys):
        ib = parse_sysib(sysfs_dump(root / "infiniband"))
        for dev_dir in (root / "infiniband").iterdir():
            dev = ib.devices[dev_dir.name]
            for port_dir in (dev_dir / "ports").iterdir():
                port = dev.ports[int(port_dir.name)]
                assert port.state is not None and port.state in _read(port_dir / "state")
                assert ":" not in port.state
                assert port.phys_state is not None and ":" not in port.phys_state
                assert port.rate_gbps == float(_read(port_dir / "rate").split()[0])
                # "(4X EDR)", "(1X EDR)", iWARP's "(4X)": the lanes [expect] width checks
                assert f"({port.width}X" in _read(port_dir / "rate")


def test_sysib_no_pma_counters_are_absent_not_zero(node_exporter_sys: Path) -> None:
    ib = parse_sysib(sysfs_dump(node_exporter_sys / "infiniband"))
    assert (
        (node_exporter_sys / "infiniband/i40iw0/ports/1/counters/port_rcv_data")
        .read_text()
        .startswith("N/A (no PMA)")
    )
    port = ib.devices["i40iw0"].ports[1]
    assert port.counters == {}
    assert "port_rcv_data" not in port.counters
    assert ib.warnings == []  # a known state of iWARP devices, not a parse problem


def test_sysib_counters_ext_kept_apart(node_exporter_sys: Path) -> None:
    ib = parse_sysib(sysfs_dump(node_exporter_sys / "infiniband"))
    port = ib.devices["mlx4_0"].ports[1]
    ext = node_exporter_sys / "infiniband/mlx4_0/ports/1/counters_ext"
    assert port.counters_ext == {f.name: int(_read(f)) for f in ext.iterdir()}
    assert port.counters["port_xmit_wait"] == 2**32 - 1


def test_sysib_netdev_links_lid_and_garbage() -> None:
    text = "\n".join(
        [
            "mlx5_0/ports/1/gid_attrs/ndevs/0 eth2",
            "mlx5_0/ports/1/gid_attrs/ndevs/1 eth2",
            "mlx5_0/ports/1/gid_attrs/ndevs/2",
            "mlx5_0/ports/1/lid 0x1a",
            "mlx5_0/ports/1/sm_lid 0x1",
            "mlx5_0/ports/1/state 1: DOWN",
            "mlx5_0/device/net/eth2 -",
            "mlx5_0/ports/x/state 4: ACTIVE",
            "garbage-without-slash",
        ]
    )
    ib = parse_sysib(text)
    dev = ib.devices["mlx5_0"]
    assert dev.ports[1].netdevs == ["eth2"]
    assert dev.netdevs == ["eth2"]
    assert (dev.ports[1].lid, dev.ports[1].sm_lid) == (0x1A, 1)
    assert dev.ports[1].state == "DOWN"
    assert len(ib.warnings) == 2


@pytest.mark.parametrize(
    ("text", "value"),
    [("25 Gb/sec (1X EDR)", 25.0), ("2.5 Gb/sec (1X SDR)", 2.5), ("", None), ("junk", None)],
)
def test_parse_ib_rate(text: str, value: float | None) -> None:
    assert parse_ib_rate(text) == value


@pytest.mark.parametrize(
    ("text", "lanes"),
    [
        ("200 Gb/sec (4X HDR)", 4),  # ibstatus of an Azure CX-6 (shared fixtures)
        ("25 Gb/sec (1X EDR)", 1),
        ("600 Gb/sec (12X HDR)", 12),
        ("400 Gb/sec", None),  # the Prometheus source writes no width
        ("400 Gb/sec (0X)", None),
        ("junk (4X)", None),
    ],
)
def test_parse_ib_width(text: str, lanes: int | None) -> None:
    """The lanes an [expect] width is checked against come from the same rate file."""
    assert parse_ib_width(text) == lanes


@pytest.mark.parametrize(
    ("text", "value"),
    [("16.0 GT/s PCIe", 16.0), ("8 GT/s", 8.0), ("2.5 GT/s PCIe", 2.5), ("Unknown", None)],
)
def test_parse_pcie_speed(text: str, value: float | None) -> None:
    assert parse_pcie_speed(text) == value
