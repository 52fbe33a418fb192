"""Parse macOS ``netstat -ibdn``: per-interface packets, bytes, errors and drops, no root.

Format (captures in tests/fixtures/darwin, SOURCES.md): a header ``Name Mtu Network
Address Ipkts Ierrs Ibytes Opkts Oerrs Obytes Coll Drop``, then per interface one
``<Link#N>`` row (the interface's own counters) and one row per address (the same
counters, errors shown as ``-``). Only the ``<Link#N>`` rows are read. A row of an
interface without a hardware address has one field less (pktap0, utun: no Address
column), so the numbers are read from the end of the row. ``Drop`` is what ``-d`` adds.
An interface that is down is printed with a ``*`` after its name (``gif0*``).

Why ``netstat -ibdn`` and not ``netstat -bdI enX``: one fork per tick for every
interface instead of one per interface; both print the same row. netstat cuts names
longer than its column; such a name repeats with several ``<Link#N>`` rows (gopsutil's
``netstatTruncated`` capture): a name seen twice is kept for neither, with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.normalize import NETDEV_MAP
from collectors.numbers import parse_uint
from collectors.vocabulary import Metric
from collectors.warning_lines import WarningLines

MAX_WARNINGS = 50


# netstat's column -> the Linux netdev statistic it counts (sysfs statistics/<name>):
# the normalized metrics then come from NETDEV_MAP unchanged. Drop on macOS counts packets
# dropped on the interface's send queue (BSD's ifq drops), so it is tx_dropped, never
# rx_dropped.
def _netdev_name(metric: Metric) -> str:
    """The Linux statistic NETDEV_MAP reads for ``metric`` (one fact, one place)."""
    return NETDEV_MAP[metric][0].names[0]


NETDEV_NAMES: dict[str, str] = {
    "Ipkts": _netdev_name(Metric.RX_PACKETS),
    "Ierrs": _netdev_name(Metric.RX_PHY_ERRORS),  # rx_errors
    "Ibytes": _netdev_name(Metric.RX_BYTES),
    "Opkts": _netdev_name(Metric.TX_PACKETS),
    "Oerrs": "tx_errors",
    "Obytes": _netdev_name(Metric.TX_BYTES),
    "Coll": "collisions",
    "Drop": "tx_dropped",
}
_COLUMNS = ("Ipkts", "Ierrs", "Ibytes", "Opkts", "Oerrs", "Obytes", "Coll", "Drop")
_NAME_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")


@dataclass(slots=True)
class NetstatIface:
    """One interface's ``<Link#N>`` row: raw columns as netstat names them."""

    name: str
    mtu: int | None = None
    up: bool = True  # False when netstat marked the name with '*'
    counters: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class NetstatResult:
    interfaces: dict[str, NetstatIface] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, width=200))


def parse_netstat_ibdn(text: str) -> NetstatResult:
    """Parse ``netstat -ibdn`` (or ``-ibn``: without Drop) into one record per interface."""
    out = NetstatResult()
    columns: tuple[str, ...] | None = None
    seen_twice: set[str] = set()
    for raw in text.splitlines():
        parts = raw.split()
        if not parts:
            continue
        if parts[0] == "Name":
            names = tuple(p for p in parts if p in _COLUMNS)
            columns = names if names else None
            continue
        if columns is None or len(parts) < 3 or not parts[2].startswith("<Link#"):
            continue  # an address row, or a line before the header
        name = parts[0].rstrip("*")
        if not _NAME_RE.fullmatch(name):
            out.warnings.add(f"refused interface name {name[:40]!r}")
            continue
        nums = parts[-len(columns) :]
        if len(parts) < 3 + len(columns):
            out.warnings.add(f"{name}: short row")
            continue
        if name in out.interfaces or name in seen_twice:
            seen_twice.add(name)
            out.interfaces.pop(name, None)
            out.warnings.add(f"{name}: more than one link row (name cut by netstat?): not read")
            continue
        rec = NetstatIface(name, mtu=parse_uint(parts[1]), up=not parts[0].endswith("*"))
        for col, v in zip(columns, nums, strict=True):
            num = parse_uint(v)
            if num is not None:
                rec.counters[col] = num
            elif v != "-":
                out.warnings.add(f"{name}: {col} is not a counter: {v[:30]!r}")
        out.interfaces[name] = rec
    if columns is None and text.strip():
        out.warnings.add("no netstat header line")
    return out


def netdev_statistics(counters: dict[str, int]) -> dict[str, int]:
    """The netstat columns under the Linux statistics names NETDEV_MAP reads."""
    return {NETDEV_NAMES[k]: v for k, v in counters.items() if k in NETDEV_NAMES}
