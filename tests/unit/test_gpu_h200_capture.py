"""The GPU parser on fabtop's own H200 capture (driver 580.159.04), idle and under load,
against NVML read under the same load (tests/fixtures/gpu_h200/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.parsers.nvidia_smi import FALLBACK_FIELDS, QUERY_FIELDS, parse_query_csv

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "gpu_h200"


def _read(name: str) -> str:
    return (H200 / name).read_text()


def test_the_fields_fabtop_asks_for_are_the_ones_it_sent_and_the_driver_knows() -> None:
    assert _read("fields.txt").strip() == ",".join(QUERY_FIELDS)
    known = _read("help_query_gpu.txt")
    aliases = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}
    for f in QUERY_FIELDS:
        assert f'"{aliases.get(f, f)}"' in known or f'"{f}"' in known, f


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("query_csv_header.csv", QUERY_FIELDS),
        ("query_fallback.csv", FALLBACK_FIELDS),
        ("query_lms.csv", QUERY_FIELDS),
    ],
)
def test_idle_h200(name: str, fields: tuple[str, ...]) -> None:
    r = parse_query_csv(_read(name), fields)
    assert r.warnings == []
    (g,) = r.gpus
    assert (g.index, g.name, g.bus_id) == (0, "NVIDIA H200", "00000000:00:06.0")
    assert (g.utilization_pct, g.memory_total_mib) == (0.0, 143771.0)
    assert g.throttle_reasons == ()  # 0x...01 is "GPU idle", not a throttle
    assert g.power_w is not None and 70 < g.power_w < 100
    assert (g.pcie_gen, g.pcie_width) == (5, 16)


def test_loaded_h200_as_the_probe_streams_it_and_as_nvml_reads_it() -> None:
    r = parse_query_csv(_read("query_lms_loaded.csv"), QUERY_FIELDS)
    assert r.warnings == []
    (g,) = r.gpus  # ten rows of one GPU: the latest wins
    nvml = json.loads(_read("nvml.json"))[0]
    assert (g.name, g.bus_id, g.memory_total_mib) == (
        nvml["name"],
        nvml["bus_id"],
        nvml["memory_total_mib"],
    )
    assert g.utilization_pct == nvml["utilization_pct"] == 99
    assert (g.sm_clock_mhz, g.mem_clock_mhz) == (nvml["sm_clock_mhz"], nvml["mem_clock_mhz"])
    assert g.temperature_c == nvml["temperature_c"]
    assert g.power_w == pytest.approx(nvml["power_w"], abs=5)  # half a second apart
    # NVML's clocks-event mask 4 is the SW power cap, and so is the CSV's reason column.
    assert nvml["throttle_mask"] == 4 and g.throttle_reasons == ("sw_power_cap",)
