"""Parse AMD GPU tools' JSON: ``rocm-smi ... --json`` and ``amd-smi metric --json``.

rocm-smi keys are the ones in ``../shared/fixtures/amd_smi/rocm_smi_json_*.json`` (ROCm
4.3-6.1). amd-smi keys: ``power.socket_power``/``throttle_status`` from the changelog
fixture; ``usage.gfx_activity``, ``mem_usage.used_vram``/``total_vram``, and
``temperature.edge``/``hotspot``/``mem`` from ROCm/amdsmi ``amdsmi_cli/amdsmi_commands.py``
(the metric command); older amd-smi releases name the same readings ``gfx_usage``,
``current_power`` and ``clock.gfx.cur_clk`` (same file, earlier revisions).

The JSON is read with bounded, finite numbers (Python's json takes ``NaN`` and
``Infinity``): a bad number is None, and strings are cleaned of control characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from collectors.numbers import finite, json_loads, parse_float, parse_uint
from collectors.samples import GpuSample
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

# A reading as the tools print it ("16.0GT/s x16", "1000 MHz", "0x1002", "N/A") is a few
# dozen characters: a longer string is no reading, and no pattern runs over it.
_FIELD_MAX = 128
MAX_WARNINGS = 50  # one per GPU entry: a list of garbage must not make thousands
_NUM = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# A search whose pattern starts with a repeated class, tried at every position of a long
# run of that class, costs the square of the run; the look-behinds start each try at the
# start of a run only (a try from inside a run finds nothing the run's start would not).
_UNIT = re.compile(r"(?<![A-Za-z])[A-Za-z]+\Z")
_GTS = re.compile(r"(?<![0-9])([0-9]+(?:\.[0-9]+)?)\s*GT/s")
_WIDTH = re.compile(r"x([0-9]+)")
_CARD = re.compile(r"card([0-9]{1,9})")
# PCIe transfer rate per lane (GT/s) -> generation, as rocm-smi prints "16.0GT/s x16".
_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


@dataclass(slots=True)
class AmdResult:
    """GPUs read from one AMD tool's output, with what could not be read."""

    gpus: list[GpuSample] = field(default_factory=list)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))


def _num(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return finite(raw)
    if isinstance(raw, dict):
        return _num(raw.get("value"))
    if not isinstance(raw, str):
        return None
    s = raw.strip()
    if not s or len(s) > _FIELD_MAX or s.upper().startswith("N/A"):
        return None
    m = _NUM.search(s)
    return parse_float(m.group(0)) if m else None


def _unit(raw: Any) -> str | None:
    if isinstance(raw, dict):
        u = raw.get("unit")
        return u if isinstance(u, str) else None
    if isinstance(raw, str) and len(raw) <= _FIELD_MAX:
        m = _UNIT.search(raw.strip())
        return m.group(0) if m else None
    return None


def _mib(raw: Any) -> float | None:
    v = _num(raw)
    if v is None:
        return None
    unit = (_unit(raw) or "MB").upper()
    # amd-smi's "MB" is bytes // 2**20 (amdsmi_commands.py), i.e. MiB.
    scale = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "MIB": 1.0, "GB": 1024.0, "GIB": 1024.0}
    return finite(v * scale.get(unit, 1.0))


def _pcie_level(text: str | None) -> tuple[int | None, int | None]:
    """'1 (16.0GT/s x16)' -> (gen 4, width 16)."""
    if not text or len(text) > _FIELD_MAX:
        return None, None
    gts = _GTS.search(text)
    width = _WIDTH.search(text)
    rate = parse_float(gts.group(1)) if gts else None
    gen = _GEN_BY_GTS.get(rate) if rate is not None else None
    return gen, parse_uint(width.group(1)) if width else None


def _card_index(key: str) -> int | None:
    m = _CARD.fullmatch(key)
    return parse_uint(m.group(1)) if m else None


def _load(text: str, result: AmdResult, tool: str) -> Any:
    try:
        return json_loads(text)
    except ValueError as e:
        result.warnings.append(clean(f"{tool} JSON unreadable: {e}"))
        return None


def _str(raw: Any) -> str | None:
    """A JSON string value, cleaned; None for anything else or ``N/A``."""
    if not isinstance(raw, str):
        return None
    v = clean(raw).strip()
    return v if v and v.upper() != "N/A" else None


def parse_rocm_smi_json(text: str) -> AmdResult:
    """Parse ``rocm-smi ... --json`` (one ``cardN`` object per GPU)."""
    result = AmdResult()
    data = _load(text, result, "rocm-smi")
    if not isinstance(data, dict):
        if not result.warnings:
            result.warnings.append("rocm-smi JSON is not an object")
        return result
    for key, card in data.items():
        index = _card_index(key)
        if index is None:
            continue
        if not isinstance(card, dict):
            result.warnings.append(clean(f"rocm-smi {key[:40]} is not an object"))
            continue
        g = GpuSample(index=index, vendor="amd")
        name = card.get("Card Series") or card.get("Card series") or card.get("Device Name")
        # ROCm 4.3 prints the PCI vendor id where the marketing name should be.
        if isinstance(name, str) and not name.startswith("0x"):
            g.name = clean(name)
        g.bus_id = _str(card.get("PCI Bus"))
        g.uuid = _str(card.get("Unique ID"))
        g.utilization_pct = _num(card.get("GPU use (%)"))
        used = _num(card.get("VRAM Total Used Memory (B)"))
        total = _num(card.get("VRAM Total Memory (B)"))
        g.memory_used_mib = used / 2**20 if used is not None else None
        g.memory_total_mib = total / 2**20 if total is not None else None
        g.power_w = _num(card.get("Average Graphics Package Power (W)"))
        g.power_limit_w = _num(card.get("Max Graphics Package Power (W)"))
        g.temperature_c = _num(card.get("Temperature (Sensor edge) (C)"))
        if g.temperature_c is None:
            g.temperature_c = _num(card.get("Temperature (Sensor junction) (C)"))
        g.memory_temperature_c = _num(card.get("Temperature (Sensor memory) (C)"))
        g.sm_clock_mhz = _num(card.get("sclk clock speed:"))
        g.mem_clock_mhz = _num(card.get("mclk clock speed:"))
        g.fan_pct = _num(card.get("Fan speed (%)"))
        pcie = card.get("pcie clock level")
        g.pcie_gen, g.pcie_width = _pcie_level(pcie if isinstance(pcie, str) else None)
        result.gpus.append(g)
    result.gpus.sort(key=lambda x: x.index)
    if not result.gpus:
        result.warnings.append("rocm-smi JSON lists no cardN")
    return result


def _first(section: Any, *keys: str) -> Any:
    if not isinstance(section, dict):
        return None
    for k in keys:
        v = section.get(k)
        if v is not None and _num(v) is not None:
            return v
    return None


def _clock(section: Any, *names: str) -> float | None:
    if not isinstance(section, dict):
        return None
    for n in names:
        c = section.get(n)
        if isinstance(c, dict):
            v = _num(_first(c, "clk", "cur_clk"))
            if v is not None:
                return v
    return None


def parse_amd_smi_metric_json(text: str) -> AmdResult:
    """Parse ``amd-smi metric --json`` (a list of per-GPU objects, or ``{"gpu_data": [...]}``)."""
    result = AmdResult()
    data = _load(text, result, "amd-smi")
    if isinstance(data, dict):
        data = data.get("gpu_data")
    if not isinstance(data, list):
        if data is not None or not result.warnings:
            result.warnings.append("amd-smi JSON holds no GPU list")
        return result
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            result.warnings.add(f"amd-smi entry {position} is not an object")
            continue
        idx = item.get("gpu")
        if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < 2**32:
            idx = position  # a JSON true, a negative or huge number is not a GPU index
        g = GpuSample(index=idx, vendor="amd")
        usage = item.get("usage")
        g.utilization_pct = _num(_first(usage, "gfx_activity", "gfx_usage"))
        power = item.get("power")
        g.power_w = _num(_first(power, "socket_power", "current_power", "average_socket_power"))
        g.power_limit_w = _num(_first(power, "power_limit"))
        temp = item.get("temperature")
        g.temperature_c = _num(_first(temp, "edge", "hotspot"))
        g.memory_temperature_c = _num(_first(temp, "mem"))
        mem = item.get("mem_usage")
        if isinstance(mem, dict):
            g.memory_used_mib = _mib(_first(mem, "used_vram"))
            g.memory_total_mib = _mib(_first(mem, "total_vram"))
        clock = item.get("clock")
        g.sm_clock_mhz = _clock(clock, "gfx_0", "gfx")
        g.mem_clock_mhz = _clock(clock, "mem_0", "mem")
        fan = item.get("fan")
        g.fan_pct = _num(_first(fan, "usage"))
        pcie = item.get("pcie")
        width = _num(_first(pcie, "width"))
        g.pcie_width = int(width) if width is not None and 0 <= width < 2**32 else None
        speed = _first(pcie, "speed")
        if speed is not None and (_unit(speed) or "").upper() == "GT/S":
            g.pcie_gen = _GEN_BY_GTS.get(_num(speed) or 0.0)
        status = power.get("throttle_status") if isinstance(power, dict) else None
        if isinstance(status, str) and status.upper() == "THROTTLED":
            g.throttle_reasons = ("throttled",)
        result.gpus.append(g)
    return result
