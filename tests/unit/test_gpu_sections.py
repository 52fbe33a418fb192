"""GPU sections of a probe frame, built from real captures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder, Section, render_frame
from collectors.gpu_sections import gpus_from_frame
from collectors.parsers.nvidia_smi import QUERY_FIELDS

H100_LOAD = (
    "nvidia_smi/captures_utkuozdemir/"
    "query_gpu_csv_load__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
)
ALIASES = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}


def _nvidia_text(fixtures_dir: Path, fields: tuple[str, ...] = QUERY_FIELDS) -> str:
    header, row = list(
        csv.reader((fixtures_dir / H100_LOAD).read_text().splitlines(), skipinitialspace=True)
    )
    by_name = {h.split(" [")[0]: v for h, v in zip(header, row, strict=True)}

    def nounits(v: str) -> str:
        return v.split(" ")[0] if v[:1].isdigit() else v

    line = ", ".join(nounits(by_name[ALIASES.get(f, f)]) for f in fields)
    return "# " + ",".join(fields) + "\n" + line


def _frame(*sections: Section) -> Frame:
    # Round-trip through the wire format so the test sees what the decoder delivers.
    frames = FrameDecoder().feed(
        render_frame(Frame(7, 10**18, 100.0, 1e9, list(sections))).encode()
    )
    assert len(frames) == 1
    return frames[0]


def test_nvidia_section(fixtures_dir: Path) -> None:
    f = _frame(Section("gpu_nvidia", None, 123456789, "ok", None, _nvidia_text(fixtures_dir)))
    gpus, read_ns, warnings = gpus_from_frame(f)
    assert warnings == []
    assert read_ns == 123456789
    assert len(gpus) == 1
    assert gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert gpus[0].memory_used_mib == 19818


@pytest.mark.parametrize("status", ["stale", "timeout", "error", "missing"])
def test_non_ok_section_shows_no_gpus(fixtures_dir: Path, status: str) -> None:
    detail = "rc=6" if status == "error" else None
    f = _frame(Section("gpu_nvidia", None, 5, status, detail, _nvidia_text(fixtures_dir)))
    gpus, read_ns, warnings = gpus_from_frame(f)
    assert gpus == [] and read_ns is None
    assert len(warnings) == 1 and status in warnings[0]


def test_amd_sections(fixtures_dir: Path) -> None:
    rocm = (fixtures_dir / "amd_smi/rocm_smi_json_mi100_rocm571_telegraf.json").read_text()
    gpus, read_ns, warnings = gpus_from_frame(
        _frame(Section("gpu_amd", None, 42, "ok", "rocm-smi", rocm))
    )
    assert warnings == [] and read_ns == 42
    assert len(gpus) == 6 and all(g.vendor == "amd" for g in gpus)
    amd = (fixtures_dir / "amd_smi/amd_smi_metric_p_json_changelog_amdsmi.json").read_text()
    gpus, _, warnings = gpus_from_frame(_frame(Section("gpu_amd", None, 43, "ok", "amd-smi", amd)))
    assert warnings == [] and gpus[0].power_w == 10.0


def test_bad_sections_warn() -> None:
    gpus, _, warnings = gpus_from_frame(_frame(Section("gpu_nvidia", None, 1, "ok", None, "0, x")))
    assert gpus == [] and warnings
    gpus, _, warnings = gpus_from_frame(_frame(Section("gpu_amd", None, 1, "ok", "amd-smi", "{")))
    assert gpus == [] and warnings
    assert gpus_from_frame(_frame()) == ([], None, [])
