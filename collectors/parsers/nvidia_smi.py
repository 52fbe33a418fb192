"""Parse ``nvidia-smi --query-gpu`` CSV and ``nvidia-smi -q -x`` XML into GPU samples.

Field names come from the ``--help-query-gpu`` text and the header rows in
``../shared/fixtures/nvidia_smi/captures_utkuozdemir/`` (drivers 590-610), and the
XML element names from the ``nvidia_smi_q_x_*.xml`` captures (schemas v10-v13).
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from collectors.numbers import parse_float, parse_hex
from collectors.samples import GpuSample
from collectors.text import clean

# Driver >= 535 names the clock limiters "clocks_event_reasons"; every driver in the
# captures (590, 595, 610) still accepts "clocks_throttle_reasons.*" as an alias (see
# ``--help-query-gpu``: '"clocks_event_reasons.active" or "clocks_throttle_reasons.active"'),
# but drivers older than 535 reject the new names. QUERY_FIELDS uses the canonical new
# names (as the header rows print them); FALLBACK_FIELDS is what the probe retries with
# when nvidia-smi refuses a field: only names present in pre-535 drivers' help text, with
# the throttle state carried by the one bitmask field.
# Fields both lists share, in the order every driver prints them.
_BASE_FIELDS: tuple[str, ...] = (
    "timestamp",
    "index",
    "name",
    "pci.bus_id",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "power.draw",
)

QUERY_FIELDS: tuple[str, ...] = (
    *_BASE_FIELDS,
    "enforced.power.limit",
    "temperature.gpu",
    "temperature.memory",
    "clocks.sm",
    "clocks.mem",
    "fan.speed",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks_event_reasons.active",
    "clocks_event_reasons.sw_power_cap",
    "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
)

FALLBACK_FIELDS: tuple[str, ...] = (
    *_BASE_FIELDS,
    "power.limit",
    "temperature.gpu",
    "clocks.sm",
    "clocks.mem",
    "fan.speed",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks_throttle_reasons.active",
)

# Bits of nvmlClocksThrottleReasons (renamed nvmlClocksEventReasons in nvml.h for 535+,
# same values): nvidia-ml-py pynvml.py ``nvmlClocksThrottleReason*`` constants.
REASON_BITS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_REASON_ORDER = tuple(REASON_BITS.values())
# The XML spells this one "display_clocks_setting"; NVML spells it DisplayClockSetting.
_REASON_ALIASES = {"display_clocks_setting": "display_clock_setting"}
# An idle GPU dropping its clocks is not a throttle a user should chase.
_NOT_THROTTLE = frozenset({"gpu_idle"})

_MISSING = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "[not supported]",
        "not supported",
        "[requested functionality has been deprecated]",
        "err!",
        "[unknown error]",
        "unknown error",
        "[gpu is lost]",
        "[insufficient permissions]",
    }
)
_NUM_UNIT = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:[A-Za-z%/]+)?\s*$")
_HEADER_CELL = re.compile(r"^[a-z][A-Za-z0-9_.]*$")
_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")

# Alternative spellings nvidia-smi accepts for one field, mapped to the name used here.
_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "gpu.power.requested_limit": "power.limit",
    "gpu.power.current_limit": "enforced.power.limit",
}


@dataclass(slots=True)
class NvidiaQueryResult:
    """GPUs read from one nvidia-smi output, with what could not be read."""

    gpus: list[GpuSample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timestamp: str | None = None  # nvidia-smi's own "YYYY/MM/DD HH:MM:SS.msec", when asked


# Cells repeat from one line to the next (names, totals, limits, clocks, temperatures):
# short ones are read once. Bounded: cleared when full, never holding a long cell.
_CELL_CACHE_MAX = 8192
_CELL_MAX = 64
_CLEAN_CACHE: dict[str, str | None] = {}
_NUM_CACHE: dict[str, float | None] = {}
_CANONICAL: dict[str, str] = {}
_MISS = object()
_V = TypeVar("_V")


def _cached(cache: dict[str, _V], raw: str, read: Callable[[str], _V]) -> _V:
    hit = cache.get(raw, _MISS)
    if hit is not _MISS:
        return hit  # type: ignore[return-value]
    v = read(raw)
    if len(raw) <= _CELL_MAX:
        if len(cache) >= _CELL_CACHE_MAX:
            cache.clear()
        cache[raw] = v
    return v


def _clean(raw: str | None) -> str | None:
    """A cell or element text, cleaned of control characters; None when it says 'no value'."""
    return None if raw is None else _cached(_CLEAN_CACHE, raw, _clean_of)


def _clean_of(raw: str) -> str | None:
    v = clean(raw).strip()
    if v.lower() in _MISSING or v.startswith("[") or v.lower().startswith("n/a"):
        return None
    return v


def _num(raw: str | None) -> float | None:
    return None if raw is None else _cached(_NUM_CACHE, raw, _num_of)


def _num_of(raw: str) -> float | None:
    # Nearly every cell is a plain number: the pattern admits digits, a unit and
    # whitespace only, so what it takes needs no cleaning (and is never a "no value").
    m = _NUM_UNIT.match(raw)
    if m is None:
        v = _clean(raw)
        m = _NUM_UNIT.match(v) if v is not None else None
    return parse_float(m.group(1)) if m else None  # None for nan, inf and 400-digit text


def _int(raw: str | None) -> int | None:
    f = _num(raw)
    # An index, a PCIe generation or width: anything beyond 32 bits is not one.
    return int(f) if f is not None and abs(f) < 2**32 else None


def _canonical(name: str) -> str:
    """``name`` as this parser spells it (cached: a line's header repeats every tick)."""
    return _cached(_CANONICAL, name, _canonical_of)


def _canonical_of(name: str) -> str:
    n = _UNIT_SUFFIX.sub("", name.strip())
    n = _ALIASES.get(n, n)
    for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons."):
        if n.startswith(prefix):
            return "reasons." + n[len(prefix) :]
    return n


def reasons_from_mask(mask: int) -> set[str]:
    """Names of the NVML clock-event bits set in ``mask``."""
    return {name for bit, name in REASON_BITS.items() if mask & bit}


def _ordered_throttles(active: set[str]) -> tuple[str, ...]:
    return tuple(r for r in _REASON_ORDER if r in active and r not in _NOT_THROTTLE)


def _looks_like_header(cells: list[str]) -> bool:
    if not cells or not _HEADER_CELL.match(_UNIT_SUFFIX.sub("", cells[0].strip())):
        return False  # a data row, nearly always: its first cell tells
    names = [_UNIT_SUFFIX.sub("", c.strip()) for c in cells]
    return all(_HEADER_CELL.match(n) for n in names) and any(
        "." in n or "_" in n or n in {"index", "name", "uuid", "timestamp"} for n in names
    )


def _reason_keys(names: list[str]) -> tuple[str, ...]:
    """The per-reason ``Active``/``Not Active`` columns of a header."""
    return tuple(k for k in names if k.startswith("reasons.")
                 and k not in ("reasons.active", "reasons.supported"))  # fmt: skip


def _sample_from_row(
    row: dict[str, str], position: int, warnings: list[str], reason_keys: tuple[str, ...]
) -> GpuSample:
    index = _int(row.get("index"))
    gpu = GpuSample(index=index if index is not None else position)
    gpu.name = _clean(row.get("name"))
    gpu.bus_id = _clean(row.get("pci.bus_id"))
    gpu.uuid = _clean(row.get("uuid"))
    gpu.utilization_pct = _num(row.get("utilization.gpu"))
    gpu.memory_used_mib = _num(row.get("memory.used"))
    gpu.memory_total_mib = _num(row.get("memory.total"))
    for key in ("power.draw", "power.draw.average", "power.draw.instant"):
        gpu.power_w = _num(row.get(key))
        if gpu.power_w is not None:
            break
    gpu.power_limit_w = _num(row.get("enforced.power.limit"))
    if gpu.power_limit_w is None:
        gpu.power_limit_w = _num(row.get("power.limit"))
    gpu.temperature_c = _num(row.get("temperature.gpu"))
    gpu.memory_temperature_c = _num(row.get("temperature.memory"))
    gpu.sm_clock_mhz = _num(row.get("clocks.sm"))
    gpu.mem_clock_mhz = _num(row.get("clocks.mem"))
    gpu.fan_pct = _num(row.get("fan.speed"))
    gpu.pcie_gen = _int(row.get("pcie.link.gen.current"))
    gpu.pcie_width = _int(row.get("pcie.link.width.current"))
    active: set[str] = set()
    mask = _clean(row.get("reasons.active"))
    if mask is not None:
        bits = parse_hex(mask if mask[:2] in ("0x", "0X") else "0x" + mask)
        if bits is None:
            warnings.append(f"GPU {gpu.index}: bad clock-event bitmask {mask[:40]!r}")
        else:
            active |= reasons_from_mask(bits)
    for key in reason_keys:
        if (_clean(row[key]) or "").lower() == "active":
            name = key[len("reasons.") :]
            active.add(_REASON_ALIASES.get(name, name))
    gpu.throttle_reasons = _ordered_throttles(active)
    return gpu


def parse_query_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_FIELDS
) -> NvidiaQueryResult:
    """Parse ``--query-gpu`` CSV (with or without header and units); later rows of a GPU win."""
    result = NvidiaQueryResult()
    names = [_canonical(f) for f in fields]
    by_index: dict[int, GpuSample] = {}
    position = 0
    keys_of: list[str] | None = None  # the header reason_keys was made from
    reason_keys: tuple[str, ...] = ()
    try:
        rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
    except csv.Error as e:
        result.warnings.append(clean(f"nvidia-smi CSV unreadable: {e}"))
        return result
    for cells in rows:
        if not cells or not "".join(cells).strip():
            continue
        if _looks_like_header(cells):
            names = [_canonical(c) for c in cells]
            continue
        if len(cells) != len(names):
            line = clean(", ".join(cells))
            result.warnings.append(
                f"nvidia-smi line with {len(cells)} values for {len(names)} fields ignored: "
                f"{line[:120]!r}"
            )
            continue
        row = dict(zip(names, cells, strict=True))
        if keys_of is not names:
            keys_of, reason_keys = names, _reason_keys(names)
        gpu = _sample_from_row(row, position, result.warnings, reason_keys)
        position += 1
        by_index[gpu.index] = gpu
        ts = _clean(row.get("timestamp"))
        if ts is not None:
            result.timestamp = ts
    result.gpus = [by_index[i] for i in sorted(by_index)]
    return result


def _text(el: ET.Element | None, path: str) -> str | None:
    if el is None:
        return None
    found = el.find(path)
    return found.text if found is not None else None


def _xml_reasons(gpu_el: ET.Element) -> set[str]:
    active: set[str] = set()
    for section, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        sec = gpu_el.find(section)
        if sec is None:
            continue
        for child in sec:
            if child.tag.startswith(prefix) and (child.text or "").strip().lower() == "active":
                name = child.tag[len(prefix) :]
                active.add(_REASON_ALIASES.get(name, name))
    return active


def _kbps(raw: str | None) -> float | None:
    v = _clean(raw)
    if v is None or not v.upper().endswith("KB/S"):
        return None
    return _num(v[:-4])


def parse_query_xml(text: str) -> NvidiaQueryResult:
    """Parse ``nvidia-smi -q -x``; GPUs are indexed in document order, as nvidia-smi does."""
    result = NvidiaQueryResult()
    # Real output carries '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vN.dtd">' (an
    # external id that ElementTree never fetches), so only an internal subset or an
    # entity declaration, the vehicles for entity-expansion attacks, is refused.
    doctype = re.search(r"<!DOCTYPE[^>\[]*(\[)?", text)
    if "<!ENTITY" in text or (doctype is not None and doctype.group(1)):
        result.warnings.append("nvidia-smi XML refused: it declares a DTD subset or entities")
        return result
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        result.warnings.append(clean(f"nvidia-smi XML unreadable: {e}"))
        return result
    result.timestamp = _clean(_text(root, "timestamp"))
    for position, g in enumerate(root.findall("gpu")):
        gpu = GpuSample(index=position)
        gpu.name = _clean(_text(g, "product_name"))
        gpu.bus_id = _clean(g.get("id")) or _clean(_text(g, "pci/pci_bus_id"))
        gpu.uuid = _clean(_text(g, "uuid"))
        gpu.utilization_pct = _num(_text(g, "utilization/gpu_util"))
        gpu.memory_used_mib = _num(_text(g, "fb_memory_usage/used"))
        gpu.memory_total_mib = _num(_text(g, "fb_memory_usage/total"))
        # v10/v11 schema: <power_readings>; v12+: <gpu_power_readings>, and v13 splits
        # the draw into average/instant (the CSV's power.draw is the average when known).
        for sec in ("gpu_power_readings", "power_readings"):
            readings = g.find(sec)
            if readings is None:
                continue
            for tag in ("power_draw", "average_power_draw", "instant_power_draw"):
                gpu.power_w = _num(_text(readings, tag))
                if gpu.power_w is not None:
                    break
            for tag in ("enforced_power_limit", "current_power_limit", "power_limit"):
                gpu.power_limit_w = _num(_text(readings, tag))
                if gpu.power_limit_w is not None:
                    break
            break
        gpu.temperature_c = _num(_text(g, "temperature/gpu_temp"))
        gpu.memory_temperature_c = _num(_text(g, "temperature/memory_temp"))
        gpu.sm_clock_mhz = _num(_text(g, "clocks/sm_clock"))
        gpu.mem_clock_mhz = _num(_text(g, "clocks/mem_clock"))
        gpu.fan_pct = _num(_text(g, "fan_speed"))
        gpu.pcie_gen = _int(_text(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"))
        gpu.pcie_width = _int(
            (_clean(_text(g, "pci/pci_gpu_link_info/link_widths/current_link_width")) or "")
            .rstrip("x")
        )
        gpu.pcie_rx_kbps = _kbps(_text(g, "pci/rx_util"))
        gpu.pcie_tx_kbps = _kbps(_text(g, "pci/tx_util"))
        gpu.throttle_reasons = _ordered_throttles(_xml_reasons(g))
        result.gpus.append(gpu)
    if not result.gpus:
        result.warnings.append("nvidia-smi XML lists no <gpu>")
    return result
