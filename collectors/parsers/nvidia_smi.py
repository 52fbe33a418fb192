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
from typing import TypeVar, cast

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


@dataclass(frozen=True, slots=True)
class _RowPlan:
    """Where each GpuSample field sits in a row of one header: found once per header.

    Numeric fields name their columns in order of preference: the first one that holds
    a value wins (power.draw, then its .average and .instant spellings).
    """

    index: int | None
    texts: tuple[tuple[str, int], ...]  # (attribute, column): cleaned strings
    nums: tuple[tuple[str, tuple[int, ...]], ...]  # (attribute, columns): floats
    ints: tuple[tuple[str, int], ...]  # (attribute, column): small integers
    mask: int | None  # the clock-event bitmask column
    reasons: tuple[tuple[int, str], ...]  # (column, reason): "Active"/"Not Active" columns
    timestamp: int | None


_NUM_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("utilization_pct", ("utilization.gpu",)),
    ("memory_used_mib", ("memory.used",)),
    ("memory_total_mib", ("memory.total",)),
    ("power_w", ("power.draw", "power.draw.average", "power.draw.instant")),
    ("power_limit_w", ("enforced.power.limit", "power.limit")),
    ("temperature_c", ("temperature.gpu",)),
    ("memory_temperature_c", ("temperature.memory",)),
    ("sm_clock_mhz", ("clocks.sm",)),
    ("mem_clock_mhz", ("clocks.mem",)),
    ("fan_pct", ("fan.speed",)),
)
_TEXT_FIELDS = (("name", "name"), ("bus_id", "pci.bus_id"), ("uuid", "uuid"))
_INT_FIELDS = (("pcie_gen", "pcie.link.gen.current"), ("pcie_width", "pcie.link.width.current"))
_PLAN_CACHE: dict[tuple[str, ...], _RowPlan] = {}
_PLAN_CACHE_MAX = 64


def _row_plan(names: list[str]) -> _RowPlan:
    key = tuple(names)
    hit = _PLAN_CACHE.get(key)
    if hit is not None:
        return hit
    # A repeated name keeps its last column, as a dict of the row would.
    col = {n: i for i, n in enumerate(names)}
    plan = _RowPlan(
        index=col.get("index"),
        texts=tuple((a, col[f]) for a, f in _TEXT_FIELDS if f in col),
        nums=tuple((a, cols) for a, fs in _NUM_FIELDS
                   if (cols := tuple(col[f] for f in fs if f in col))),
        ints=tuple((a, col[f]) for a, f in _INT_FIELDS if f in col),
        mask=col.get("reasons.active"),
        reasons=tuple(
            (i, _REASON_ALIASES.get(n[len("reasons."):], n[len("reasons."):]))
            for n, i in col.items()
            if n.startswith("reasons.") and n not in ("reasons.active", "reasons.supported")
        ),
        timestamp=col.get("timestamp"),
    )  # fmt: skip
    if len(key) <= 256:  # a header is a few dozen names; a longer one is not kept
        if len(_PLAN_CACHE) >= _PLAN_CACHE_MAX:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[key] = plan
    return plan


def _sample_from_row(
    cells: list[str], plan: _RowPlan, position: int, warnings: list[str]
) -> GpuSample:
    # The caches are read inline: eight GPUs of ~25 cells each, every tick (issue 13).
    nums, texts = _NUM_CACHE.get, _CLEAN_CACHE.get
    index = _int(cells[plan.index]) if plan.index is not None else None
    fields: dict[str, object] = {}
    for attr, i in plan.texts:
        raw = cells[i]
        t = texts(raw, _MISS)
        fields[attr] = _clean(raw) if t is _MISS else t
    for attr, cols in plan.nums:
        for i in cols:
            raw = cells[i]
            v = nums(raw, _MISS)
            if v is _MISS:
                v = _num(raw)
            if v is not None:
                fields[attr] = v
                break
    for attr, i in plan.ints:
        fields[attr] = _int(cells[i])
    gpu = GpuSample(index=index if index is not None else position, **fields)  # type: ignore[arg-type]
    active: set[str] = set()
    mask = _clean(cells[plan.mask]) if plan.mask is not None else None
    if mask is not None:
        bits = parse_hex(mask if mask[:2] in ("0x", "0X") else "0x" + mask)
        if bits is None:
            warnings.append(f"GPU {gpu.index}: bad clock-event bitmask {mask[:40]!r}")
        elif bits:
            active |= reasons_from_mask(bits)
    for i, reason in plan.reasons:
        raw = cells[i]
        t = texts(raw, _MISS)
        v = _clean(raw) if t is _MISS else cast("str | None", t)
        if v is not None and v.lower() == "active":
            active.add(reason)
    gpu.throttle_reasons = _ordered_throttles(active) if active else ()
    return gpu


def parse_query_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_FIELDS
) -> NvidiaQueryResult:
    """Parse ``--query-gpu`` CSV (with or without header and units); later rows of a GPU win."""
    result = NvidiaQueryResult()
    names = [_canonical(f) for f in fields]
    by_index: dict[int, GpuSample] = {}
    position = 0
    try:
        rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
    except csv.Error as e:
        result.warnings.append(clean(f"nvidia-smi CSV unreadable: {e}"))
        return result
    plan = _row_plan(names)
    for cells in rows:
        if not cells or not "".join(cells).strip():
            continue
        if _looks_like_header(cells):
            names = [_canonical(c) for c in cells]
            plan = _row_plan(names)
            continue
        if len(cells) != len(names):
            line = clean(", ".join(cells))
            result.warnings.append(
                f"nvidia-smi line with {len(cells)} values for {len(names)} fields ignored: "
                f"{line[:120]!r}"
            )
            continue
        gpu = _sample_from_row(cells, plan, position, result.warnings)
        position += 1
        by_index[gpu.index] = gpu
        ts = _clean(cells[plan.timestamp]) if plan.timestamp is not None else None
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
