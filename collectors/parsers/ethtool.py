"""Parse ``ethtool -S`` (NIC statistics) and ``ethtool -i`` (driver info) text.

Per-queue lines in bnxt_en's ``[N]: name: value`` layout are kept under the name
``name[N]`` (for example ``[0]: rx_ucast_packets`` becomes ``rx_ucast_packets[0]``),
so every queue's counter has a stable key and all queues of one counter sort together.
Every other name is kept exactly as reported, dots and spaces included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import parse_uint
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

_QUEUE_RE = re.compile(r"^\[([0-9]+)\]:\s*(.+)$")
_HEADER = "NIC statistics:"
MAX_WARNINGS = 50  # a garbage capture must not turn into thousands of warning lines


@dataclass(slots=True)
class EthtoolStats:
    """Counters of one ``ethtool -S`` run, raw names as reported (queue lines: ``name[N]``)."""

    counters: dict[str, int] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))


@dataclass(slots=True)
class DriverInfo:
    """``ethtool -i`` of one netdev; empty fields are None, ``fields`` keeps every line."""

    driver: str | None = None
    version: str | None = None
    firmware_version: str | None = None
    bus_info: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))


def parse_ethtool_stats(text: str) -> EthtoolStats:
    """Parse ``ethtool -S <dev>`` output; duplicates keep the first value, bad lines warn.

    A counter is a u64 in decimal: a longer, signed or non-numeric value costs that one
    counter (and a warning). Names are cleaned of control characters where read.
    """
    out = EthtoolStats()
    counters = out.counters
    for raw in text.splitlines():
        # Fast path for the common plain "name: value" line (this runs every tick, up to
        # 100k lines): a printable ASCII name is what clean() would return unchanged.
        name, sep, value = raw.rpartition(":")
        num = parse_uint(value) if sep else None
        if num is not None:
            name = name.strip()
            if (
                name
                and name[0] not in "#["
                and name.isascii()
                and name.isprintable()
                and name not in counters
            ):
                counters[name] = num
                continue
        _other_line(raw, out)
    return out


def _other_line(raw: str, out: EthtoolStats) -> None:
    """Header, comment, blank, per-queue, duplicate or malformed line."""
    line = clean(raw.strip())
    if not line or line.startswith("#") or line == _HEADER:
        return
    name, sep, value = line.rpartition(":")
    name = name.strip()
    value = value.strip()
    if not sep or not name:
        out.warnings.add(f"unparsed line: {line[:80]!r}")
        return
    m = _QUEUE_RE.match(name)
    if m:
        name = f"{m.group(2).strip()}[{m.group(1)}]"
    num = parse_uint(value)
    if num is None:
        out.warnings.add(f"bad value for {name[:64]}: {value[:40]!r}")
    elif name in out.counters:
        out.warnings.add(f"duplicate counter {name[:64]} (kept the first value)")
    else:
        out.counters[name] = num


def parse_ethtool_info(text: str) -> DriverInfo:
    """Parse ``ethtool -i <dev>`` output (``key: value`` lines), control characters removed."""
    out = DriverInfo()
    for raw in text.splitlines():
        line = clean(raw.strip())
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            out.warnings.add(f"unparsed line: {line[:80]!r}")
            continue
        out.fields.setdefault(key.strip(), value.strip())
    f = out.fields
    out.driver = f.get("driver") or None
    out.version = f.get("version") or None
    out.firmware_version = f.get("firmware-version") or None
    out.bus_info = f.get("bus-info") or None
    return out


def stat_names(raw: tuple[str, ...]) -> tuple[str, ...]:
    """The counter key of each name of a structured ``ethtool_S`` schema, by position.

    The same keys :func:`parse_ethtool_stats` gives (queue names as ``name[N]``); ``""``
    for a position that is no counter (a repeat of an earlier name keeps the first).
    """
    out: list[str] = []
    seen: set[str] = set()
    for name in raw:
        key = clean(name.strip())
        m = _QUEUE_RE.match(key)
        if m:
            key = f"{m.group(2).strip()}[{m.group(1)}]"
        if not key or key.startswith("#") or key in seen:
            key = ""
        seen.add(key)
        out.append(key)
    return tuple(out)
