"""ethtool -S / -i parsers on every real capture in ../shared/fixtures/ethtool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collectors.parsers.ethtool import parse_ethtool_info, parse_ethtool_stats

_LINE_RE = re.compile(r"^\s*(?:\[(\d+)\]:\s*)?(.+):\s*(\d+)\s*$")


def _captures(fixtures_dir: Path, prefix: str) -> list[Path]:
    files = sorted((fixtures_dir / "ethtool").glob(f"{prefix}*"))
    assert files, f"no {prefix} captures"
    return files


def _expected(text: str) -> dict[str, int]:
    """Independent reading of a capture: every ``name: number`` line, first one wins."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _LINE_RE.match(line.strip("\r"))
        if m and not line.lstrip().startswith("#"):
            name = f"{m.group(2).strip()}[{m.group(1)}]" if m.group(1) else m.group(2).strip()
            out.setdefault(name, int(m.group(3)))
    return out


def test_every_stats_capture_parses_completely(fixtures_dir: Path) -> None:
    for path in _captures(fixtures_dir, "ethtool_S_"):
        text = path.read_text()
        stats = parse_ethtool_stats(text)
        assert stats.warnings == [], path.name
        assert stats.counters == _expected(text), path.name
        assert "NIC statistics" not in stats.counters


def test_mlx5_capture_values(fixtures_dir: Path) -> None:
    path = fixtures_dir / "ethtool" / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
    c = parse_ethtool_stats(path.read_text()).counters
    assert c["rx_bytes_phy"] == 6211329423080
    assert c["rx_discards_phy"] == 58591428329
    assert c["rx_out_of_buffer"] == 990473555
    assert c["tx_global_pause_duration"] == 771103810


def test_bnxt_per_queue_names(fixtures_dir: Path) -> None:
    path = fixtures_dir / "ethtool" / "ethtool_S_bnxt_en_10g_sfp_go-ethtool-metrics.txt"
    c = parse_ethtool_stats(path.read_text()).counters
    assert c["rx_ucast_packets[0]"] == 276347403
    assert c["rx_ucast_packets[1]"] == 292321566
    assert not any(k.startswith("[") for k in c)
    assert c["rx_pfc_ena_frames_pri3"] == 0  # port counters keep their plain name


def test_virtio_tabs_and_e1000e_odd_names(fixtures_dir: Path) -> None:
    virtio = parse_ethtool_stats(
        (fixtures_dir / "ethtool" / "ethtool_S_virtio_net_kvm_macvtap_xdp-newbies.txt").read_text()
    ).counters
    assert virtio["rx_queue_0_bytes"] == 119871244125
    assert len(virtio) == 13
    e1000e = parse_ethtool_stats(
        (fixtures_dir / "ethtool" / "ethtool_S_e1000e_node_exporter.txt").read_text()
    ).counters
    assert e1000e["port.rx_dropped"] == 12028
    assert e1000e["duplicate metric"] == 1
    assert e1000e["duplicate_metric"] == 2
    assert not any(k.startswith("#") for k in e1000e)


def test_crlf_capture(fixtures_dir: Path) -> None:
    path = fixtures_dir / "ethtool" / "ethtool_S_ice_oot1.8.8_e810_linkdown_iwl.txt"
    raw = path.read_bytes().decode()
    assert "\r" in raw
    stats = parse_ethtool_stats(raw)
    assert stats.warnings == []
    assert stats.counters["rx_unicast"] == 0


def test_duplicates_and_bad_values_warn(fixtures_dir: Path) -> None:
    text = (fixtures_dir / "ethtool" / "ethtool_S_igb_1g_go-ethtool-metrics.txt").read_text()
    first = parse_ethtool_stats(text).counters["rx_packets"]
    stats = parse_ethtool_stats(
        text.rstrip("\n") + "\n     rx_packets: 1\n     rx_foo: 12abc\nno colon here\n"
    )
    assert stats.counters["rx_packets"] == first
    assert "rx_foo" not in stats.counters
    assert any("duplicate counter rx_packets" in w for w in stats.warnings)
    assert any(w.startswith("bad value for rx_foo") for w in stats.warnings)
    assert len(stats.warnings) == 3


@pytest.mark.parametrize(
    ("name", "driver", "firmware", "bus"),
    [
        (
            "bnxt_en_10g_sfp_go-ethtool-metrics",
            "bnxt_en",
            "220.0.57.0/pkg 22.00.07.60",
            "0000:ca:00.0",
        ),
        ("e1000e_node_exporter", "e1000e", "0.5-4", "0000:00:1f.6"),
        ("ice_e810_25g_sfp_go-ethtool-metrics", "ice", "4.40 0x8001ba1d 22.5.7", "0000:22:00.3"),
        ("igb_1g_go-ethtool-metrics", "igb", "1.67, 0x800010dd, 20.5.16", "0000:01:00.0"),
    ],
)
def test_driver_info(fixtures_dir: Path, name: str, driver: str, firmware: str, bus: str) -> None:
    info = parse_ethtool_info((fixtures_dir / "ethtool" / f"ethtool_i_{name}.txt").read_text())
    assert (info.driver, info.firmware_version, info.bus_info) == (driver, firmware, bus)
    assert info.fields["supports-statistics"] == "yes"
    assert info.fields["expansion-rom-version"] == ""
    assert info.warnings == []


def test_every_info_capture_has_driver_and_version(fixtures_dir: Path) -> None:
    for path in _captures(fixtures_dir, "ethtool_i_"):
        info = parse_ethtool_info(path.read_text())
        assert info.driver and info.version and info.bus_info, path.name
