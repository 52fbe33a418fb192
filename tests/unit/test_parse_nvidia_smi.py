"""The nvidia-smi --query-gpu CSV parser, on the real captures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from collectors.parsers.nvidia_smi import (
    FALLBACK_FIELDS,
    QUERY_FIELDS,
    parse_query_csv,
    reasons_from_mask,
)

CAPTURES = "nvidia_smi/captures_utkuozdemir"
H100_LOAD = f"{CAPTURES}/query_gpu_csv_load__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
H200_MIG_IDLE = f"{CAPTURES}/query_gpu_csv_idle__linux-x86_64__nvidia-h200-mig__590.48.01.txt"
RTX2080_IDLE = (
    f"{CAPTURES}/query_gpu_csv_idle__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt"
)


def _read(fixtures_dir: Path, rel: str) -> str:
    return (fixtures_dir / rel).read_text()


def _header_names(text: str) -> set[str]:
    header = next(csv.reader(text.splitlines(), skipinitialspace=True))
    return {h.split(" [")[0] for h in header}


def test_every_header_capture_parses_one_gpu_with_name_and_memory(fixtures_dir: Path) -> None:
    files = sorted((fixtures_dir / CAPTURES).glob("query_gpu_csv_*"))
    assert len(files) == 18
    for f in files:
        r = parse_query_csv(f.read_text())
        assert r.warnings == [], f.name
        assert len(r.gpus) == 1, f.name
        g = r.gpus[0]
        assert g.name is not None and g.name.startswith("NVIDIA"), f.name
        assert g.memory_total_mib is not None and g.memory_total_mib > 0, f.name
        assert g.power_limit_w is not None and g.power_limit_w > 0, f.name
        assert g.pcie_width == 16, f.name


def test_h100_under_load(fixtures_dir: Path) -> None:
    r = parse_query_csv(_read(fixtures_dir, H100_LOAD))
    g = r.gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3"
    assert g.bus_id == "00000000:00:09.0"
    assert g.memory_total_mib == 81559
    assert g.memory_used_mib == 19818
    assert g.utilization_pct == 100
    assert g.power_w == pytest.approx(631.95)
    assert g.power_limit_w == 700
    assert g.temperature_c == 59
    assert g.memory_temperature_c == 54
    assert g.sm_clock_mhz == 1980
    assert g.mem_clock_mhz == 2619
    assert g.fan_pct is None  # "[N/A]" on a passively cooled SXM board
    assert (g.pcie_gen, g.pcie_width) == (5, 16)
    assert g.throttle_reasons == ()
    assert r.timestamp == "2026/07/14 08:12:53.353"


def test_mig_gpu_reports_no_utilization(fixtures_dir: Path) -> None:
    g = parse_query_csv(_read(fixtures_dir, H200_MIG_IDLE)).gpus[0]
    assert g.name == "NVIDIA H200"
    assert g.memory_total_mib == 143771
    assert g.utilization_pct is None  # "[N/A]" in MIG mode, not 0


def test_idle_bit_is_not_a_throttle_but_power_cap_is(fixtures_dir: Path) -> None:
    # H100 idle: clocks_event_reasons.active = 0x...01 (GPU idle)
    idle = parse_query_csv(_read(fixtures_dir, H100_LOAD.replace("_load__", "_idle__"))).gpus[0]
    assert idle.throttle_reasons == ()
    # RTX 2080 SUPER idle on 595.71.05: 0x...04 and "sw_power_cap = Active"
    capped = parse_query_csv(_read(fixtures_dir, RTX2080_IDLE)).gpus[0]
    assert capped.throttle_reasons == ("sw_power_cap",)


def test_query_fields_exist_in_the_drivers_header(fixtures_dir: Path) -> None:
    names = _header_names(_read(fixtures_dir, H100_LOAD))
    aliases = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}
    for f in QUERY_FIELDS:
        assert aliases.get(f, f) in names, f
    for f in FALLBACK_FIELDS:
        f = aliases.get(f, f).replace("clocks_throttle_reasons.", "clocks_event_reasons.")
        assert f in names, f


def test_lms_noheader_nounits_row_built_from_a_capture(fixtures_dir: Path) -> None:
    text = _read(fixtures_dir, H100_LOAD)
    header, row = list(csv.reader(text.splitlines(), skipinitialspace=True))
    by_name = {h.split(" [")[0]: v for h, v in zip(header, row, strict=True)}
    aliases = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}

    def nounits(v: str) -> str:
        return v.split(" ")[0] if v[:1].isdigit() else v

    line = ", ".join(nounits(by_name[aliases.get(f, f)]) for f in QUERY_FIELDS)
    # A persistent -lms stream repeats the GPU; the latest line wins.
    older = line.replace("19818", "100")
    r = parse_query_csv(older + "\n" + line + "\n", QUERY_FIELDS)
    assert r.warnings == []
    assert len(r.gpus) == 1
    g = r.gpus[0]
    assert g.index == 0
    assert g.memory_used_mib == 19818
    assert g.power_w == pytest.approx(631.95)
    assert g.sm_clock_mhz == 1980


def test_netdata_p100_header_with_units_and_nounits_values(fixtures_dir: Path) -> None:
    r = parse_query_csv(
        _read(fixtures_dir, "nvidia_smi/nvidia_smi_query_gpu_csv_tesla-p100_netdata.csv")
    )
    assert r.warnings == []
    g = r.gpus[0]
    assert g.name == "Tesla P100-PCIE-16GB"
    assert g.uuid == "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6"
    assert g.power_w == pytest.approx(28.16)
    assert g.temperature_c == 37
    assert g.sm_clock_mhz == 405
    assert g.mem_clock_mhz == 715
    assert g.fan_pct is None
    assert g.memory_total_mib is None  # not queried by netdata: missing, not 0


def test_unknown_field_error_and_short_lines_become_warnings() -> None:
    r = parse_query_csv(
        'Field "clocks_event_reasons.active" is not a valid field to query.\n0, 1\n',
        ("index", "name", "memory.used"),
    )
    assert r.gpus == []
    assert len(r.warnings) == 2


def test_error_values_are_missing() -> None:
    r = parse_query_csv(
        "0, ERR!, [Not Supported], N/A\n", ("index", "power.draw", "fan.speed", "temperature.gpu")
    )
    g = r.gpus[0]
    assert (g.power_w, g.fan_pct, g.temperature_c) == (None, None, None)


def test_mask_bits_follow_nvml() -> None:
    assert reasons_from_mask(0x48) == {"hw_slowdown", "hw_thermal_slowdown"}
    assert reasons_from_mask(0x1FF) >= {"gpu_idle", "display_clock_setting", "sync_boost"}
