"""rocm-smi and amd-smi JSON parsers, on the real captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.parsers.amd_smi import parse_amd_smi_metric_json, parse_rocm_smi_json


def test_every_rocm_smi_capture_parses(fixtures_dir: Path) -> None:
    files = sorted((fixtures_dir / "amd_smi").glob("rocm_smi_json_*.json"))
    assert len(files) == 7
    for f in files:
        r = parse_rocm_smi_json(f.read_text())
        assert r.warnings == [], f.name
        assert r.gpus, f.name
        for g in r.gpus:
            assert g.vendor == "amd"
            assert g.bus_id is not None and g.bus_id.startswith("0000:")
            assert g.memory_total_mib is not None and g.memory_total_mib > 0
            assert g.temperature_c is not None


def test_mi100_six_cards(fixtures_dir: Path) -> None:
    r = parse_rocm_smi_json(
        (fixtures_dir / "amd_smi/rocm_smi_json_mi100_rocm571_telegraf.json").read_text()
    )
    assert [g.index for g in r.gpus] == [0, 1, 2, 3, 4, 5]
    g = r.gpus[0]
    assert g.name == "Arcturus GL-XL [Instinct MI100]"
    assert g.bus_id == "0000:1E:00.0"
    assert g.utilization_pct == 0
    assert g.temperature_c == 31.0
    assert g.memory_temperature_c == 30.0
    assert g.power_w == 39.0
    assert g.power_limit_w == 290.0
    assert g.sm_clock_mhz == 300
    assert g.mem_clock_mhz == 1200
    assert g.memory_total_mib == pytest.approx(34342961152 / 2**20)
    assert g.memory_used_mib == pytest.approx(6782976 / 2**20)
    assert (g.pcie_gen, g.pcie_width) == (3, 16)  # "0 (8.0GT/s x16)"


def test_secondary_die_power_is_missing_not_zero(fixtures_dir: Path) -> None:
    g = parse_rocm_smi_json(
        (fixtures_dir / "amd_smi/rocm_smi_json_rx6700xt_rocm602_telegraf.json").read_text()
    ).gpus[0]
    assert g.power_w is None  # "N/A (Secondary die)"
    assert g.name == "Navi 22 [Radeon RX 6700/6700 XT / 6800M]"


def test_fan_and_vendor_id_instead_of_name(fixtures_dir: Path) -> None:
    vega = parse_rocm_smi_json(
        (fixtures_dir / "amd_smi/rocm_smi_json_vega-10-XT_telegraf.json").read_text()
    ).gpus[0]
    assert vega.fan_pct == 13
    old = parse_rocm_smi_json(
        (fixtures_dir / "amd_smi/rocm_smi_json_rx6700xt_rocm430_telegraf.json").read_text()
    ).gpus[0]
    assert old.name is None  # ROCm 4.3 prints "0x1002" as the card series


def test_amd_smi_metric_power_section(fixtures_dir: Path) -> None:
    r = parse_amd_smi_metric_json(
        (fixtures_dir / "amd_smi/amd_smi_metric_p_json_changelog_amdsmi.json").read_text()
    )
    assert r.warnings == []
    assert len(r.gpus) == 1
    g = r.gpus[0]
    assert (g.index, g.vendor, g.power_w) == (0, "amd", 10.0)
    assert g.throttle_reasons == ()  # "UNTHROTTLED"
    assert g.utilization_pct is None and g.memory_total_mib is None


def test_amd_smi_gpu_data_wrapper_and_throttled(fixtures_dir: Path) -> None:
    data = json.loads(
        (fixtures_dir / "amd_smi/amd_smi_metric_p_json_changelog_amdsmi.json").read_text()
    )
    data[0]["power"]["throttle_status"] = "THROTTLED"
    data[0]["usage"] = {"gfx_activity": {"value": 100, "unit": "%"}}
    data[0]["mem_usage"] = {"used_vram": {"value": 29777, "unit": "MB"}}
    g = parse_amd_smi_metric_json(json.dumps({"gpu_data": data})).gpus[0]
    assert g.throttle_reasons == ("throttled",)
    assert g.utilization_pct == 100
    assert g.memory_used_mib == 29777


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"card0": 5}', "null"])
def test_bad_input_warns_and_never_raises(text: str) -> None:
    for parse in (parse_rocm_smi_json, parse_amd_smi_metric_json):
        r = parse(text)
        assert r.gpus == []
        assert r.warnings
