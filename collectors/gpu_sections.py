"""Turn a frame's ``gpu_nvidia`` / ``gpu_amd`` section into GPU samples (see docs/PROBE.md)."""

from __future__ import annotations

from collections.abc import Callable

from collectors.frames import Frame, Section
from collectors.memo import Memo
from collectors.parsers.amd_smi import parse_amd_smi_metric_json, parse_rocm_smi_json
from collectors.parsers.nvidia_smi import parse_query_csv
from collectors.samples import GpuSample


def _query_fields(first: str) -> tuple[str, ...] | str:
    """The fields a section's ``# <fields>`` line names, or what is wrong with it."""
    first = first.strip()
    if not first.startswith("#"):
        return "gpu_nvidia section has no '# <fields>' line"
    fields = tuple(f.strip() for f in first[1:].split(",") if f.strip())
    return fields or "gpu_nvidia section names no query fields"


# The sections GPUs are read from, in the order they are looked for.
GPU_KINDS = ("gpu_nvidia", "gpu_amd")

# The first line repeats every tick, the same on every host of a kind.
_FIELD_LINES = Memo(_query_fields, 16, 4096)


def _nvidia(section: Section) -> tuple[list[GpuSample], list[str]]:
    first, _, body = section.text.partition("\n")
    fields = _FIELD_LINES[first]
    if isinstance(fields, str):
        return [], [fields]
    result = parse_query_csv(body, fields)
    return result.gpus, result.warnings


def _amd(section: Section) -> tuple[list[GpuSample], list[str]]:
    detail = section.detail or ""
    if "rocm-smi" in detail:
        r = parse_rocm_smi_json(section.text)
    elif "amd-smi" in detail:
        r = parse_amd_smi_metric_json(section.text)
    # No detail: amd-smi prints a list (or {"gpu_data": ...}), rocm-smi {"card0": ...}.
    elif '"card' in section.text:
        r = parse_rocm_smi_json(section.text)
    else:
        r = parse_amd_smi_metric_json(section.text)
    return r.gpus, r.warnings


# One GPU section's GPUs and what it said (its status, its parser's warnings).
GpuRead = tuple[list[GpuSample], list[str]]
_READERS = {"gpu_nvidia": _nvidia, "gpu_amd": _amd}


def read_gpu_section(section: Section) -> GpuRead:
    """The GPUs of one ``gpu_*`` section and its warnings, each naming the section.

    A section that is not ``ok`` yields no GPUs: a stale reading shown as current would
    hide exactly the hang the user needs to see.
    """
    kind = section.kind
    if section.status != "ok":
        detail = f" ({section.detail})" if section.detail else ""
        return [], [f"{kind} section {section.status}{detail}: GPUs not shown"]
    found, notes = _READERS[kind](section)
    return found, [f"{kind}: {n}" for n in notes]


def gpus_from_frame(
    frame: Frame, read: Callable[[Section], GpuRead] = read_gpu_section
) -> tuple[list[GpuSample], int | None, list[str]]:
    """GPUs of one frame, the time their section was read, and warnings.

    ``read``: read_gpu_section, or a reading kept of that very section (the assembler
    keeps a carried section's: a ``gpu_amd`` section comes once a minute).
    """
    gpus: list[GpuSample] = []
    read_ns: int | None = None
    warnings: list[str] = []
    for kind in GPU_KINDS:
        section = frame.find(kind)
        if section is None:
            continue
        found, notes = read(section)
        warnings.extend(notes)
        if found:
            gpus.extend(found)
            if read_ns is None:
                read_ns = section.read_ns
    return gpus, read_ns, warnings
