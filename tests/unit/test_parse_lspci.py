"""lspci -vvv parser on the real captures in ../shared/fixtures/lspci."""

from __future__ import annotations

import re
from pathlib import Path

from collectors.parsers.lspci import parse_lspci_vvv

_HEADER = re.compile(r"^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ", re.MULTILINE)


def test_every_capture_parses_all_device_headers(fixtures_dir: Path) -> None:
    for path in sorted((fixtures_dir / "lspci").iterdir()):
        text = path.read_text()
        res = parse_lspci_vvv(text)
        assert res.warnings == [], path.name
        assert len(res.devices) == len(_HEADER.findall(text)), path.name


def test_cx7_pcie5_x16(fixtures_dir: Path) -> None:
    res = parse_lspci_vvv(
        (fixtures_dir / "lspci/lspci_vvv_cx7_mt2910_400g_pcie5_gpud.txt").read_text()
    )
    (dev,) = res.devices
    assert dev.bdf == "1a:00.0"
    assert "ConnectX-7" in dev.description
    assert (dev.cap_speed_gts, dev.cap_width, dev.sta_speed_gts, dev.sta_width) == (
        32.0,
        16,
        32.0,
        16,
    )
    assert not dev.speed_downgraded and not dev.width_downgraded


def test_downgraded_links_in_full_node_capture(fixtures_dir: Path) -> None:
    text = (fixtures_dir / "lspci/lspci_vvv_full_h100_node_cx7_cx6dx_gpud.txt").read_text()
    res = parse_lspci_vvv(text)
    speed_down = [d for d in res.devices if d.speed_downgraded]
    width_down = [d for d in res.devices if d.width_downgraded]
    assert len(speed_down) == text.count("GT/s (downgraded)")
    assert len(width_down) == len(re.findall(r"Width x\d+ \(downgraded\)", text))
    for d in speed_down:
        assert d.sta_speed_gts is not None and d.cap_speed_gts is not None
        assert d.sta_speed_gts < d.cap_speed_gts
    nics = [d for d in res.devices if "MT2910" in d.description and "Bridge" not in d.description]
    assert nics and all(d.sta_width == 16 and d.sta_speed_gts == 32.0 for d in nics)


def test_mail_wrapped_capture(fixtures_dir: Path) -> None:
    text = (fixtures_dir / "lspci/lspci_vvv_mlx5_cx4lx_hpe_2func_wrapped_lkml-rdma.txt").read_text()
    res = parse_lspci_vvv(text)
    assert [d.bdf for d in res.devices] == ["0b:00.0", "0b:00.1"]
    for d in res.devices:
        assert (d.cap_speed_gts, d.cap_width, d.sta_speed_gts, d.sta_width) == (8.0, 8, 8.0, 8)


def test_plain_lspci_has_devices_without_link_info(fixtures_dir: Path) -> None:
    res = parse_lspci_vvv((fixtures_dir / "lspci/lspci_gb200_node_cx7_gpud.txt").read_text())
    assert res.devices[0].bdf == "0000:00:00.0"
    assert all(d.sta_speed_gts is None for d in res.devices)


def test_garbage_does_not_raise() -> None:
    assert parse_lspci_vvv("hello\n\tLnkSta: Speed xGT/s, Width xq\n").warnings
