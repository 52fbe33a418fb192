"""Parse ``ip -s -s -j link show`` / ``ip -j stats show`` JSON and ``/proc/net/dev``.

Used by tests and by the local transport's cross-check against pyroute2; counter names
are flattened as ``<direction>_<name>`` (``rx_bytes``, ``tx_carrier_changes``), the
direction being the JSON object (``rx``/``tx``) or the /proc/net/dev column group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from collectors.numbers import json_loads, parse_uint
from collectors.text import clean

MAX_WARNINGS = 50

# Column order of /proc/net/dev (net/core/net-procfs.c, dev_seq_printf_stats).
_PROC_RX = ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast")
_PROC_TX = ("bytes", "packets", "errs", "drop", "fifo", "colls", "carrier", "compressed")
_PROC_NAMES = tuple(f"rx_{k}" for k in _PROC_RX) + tuple(f"tx_{k}" for k in _PROC_TX)
_PROC_LINE_RE = re.compile(r"([A-Za-z0-9_.@-]+):\s*((?:\d+\s+){15}\d+)\s*$")
_NUMBERS_ONLY_RE = re.compile(r"^[\d\s]+$")


@dataclass(slots=True)
class IpLink:
    """One interface from ``ip -j``: identity plus flattened 64-bit statistics."""

    ifname: str
    ifindex: int | None = None
    mtu: int | None = None
    operstate: str | None = None
    flags: tuple[str, ...] = ()
    link_type: str | None = None
    stats: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class IpLinkResult:
    """Interfaces by name."""

    links: dict[str, IpLink] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ProcNetDev:
    """``/proc/net/dev``: per interface ``rx_bytes``, ``tx_drop``, ... counters."""

    interfaces: dict[str, dict[str, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _warn(warnings: list[str], msg: str) -> None:
    if len(warnings) < MAX_WARNINGS:
        warnings.append(msg)


def _opt_int(v: Any) -> int | None:
    # json_loads already made out-of-range numbers None; a bool is not a number here.
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(v: Any) -> str | None:
    return clean(v) if isinstance(v, str) else None


def _flatten_stats(obj: dict[str, Any], out: dict[str, int]) -> None:
    for direction in ("rx", "tx"):
        block = obj.get(direction)
        if not isinstance(block, dict):
            continue
        for key, v in block.items():
            num = _opt_int(v)
            if num is not None and num >= 0:
                out[clean(f"{direction}_{key}")] = num


def parse_ip_link_json(text: str) -> IpLinkResult:
    """Parse the JSON array printed by ``ip -j [-s -s] link show`` or ``ip -j stats show``."""
    out = IpLinkResult()
    try:
        data = json_loads(text)
    except ValueError as exc:
        _warn(out.warnings, clean(f"not JSON: {str(exc)[:80]}"))
        return out
    if not isinstance(data, list):
        _warn(out.warnings, "top level is not a list")
        return out
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str):
            _warn(out.warnings, "entry without ifname skipped")
            continue
        name = clean(item["ifname"])
        link = out.links.get(name) or IpLink(name)
        link.ifindex = _opt_int(item.get("ifindex")) or link.ifindex
        link.mtu = _opt_int(item.get("mtu")) or link.mtu
        link.operstate = _opt_str(item.get("operstate")) or link.operstate
        link.link_type = _opt_str(item.get("link_type")) or link.link_type
        flags = item.get("flags")
        if isinstance(flags, list):
            link.flags = tuple(clean(f) for f in flags if isinstance(f, str))
        for key in ("stats64", "stats"):
            stats = item.get(key)
            if isinstance(stats, dict):
                _flatten_stats(stats, link.stats)
                break
        out.links[name] = link
    return out


def parse_proc_net_dev(text: str) -> ProcNetDev:
    """Parse ``/proc/net/dev``; a repeated interface keeps its last line (and warns)."""
    out = ProcNetDev()
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        # Hard-wrapped captures continue a counter row on lines of bare numbers.
        if lines and line.strip() and _NUMBERS_ONLY_RE.match(line) and ":" in lines[-1]:
            lines[-1] = lines[-1].rstrip() + " " + line.strip()
        else:
            lines.append(line)
    for line in lines:
        if not line.strip() or "|" in line:
            continue
        m = _PROC_LINE_RE.search(line)
        if not m:
            _warn(out.warnings, f"unparsed line: {clean(line.strip()[:80])!r}")
            continue
        name = m.group(1)
        # A value beyond 64 bits (or of Unicode digits, which \d matches) costs that counter.
        nums = [parse_uint(x) for x in m.group(2).split()]
        if name in out.interfaces:
            _warn(out.warnings, f"{name} appears more than once (kept the last)")
        counters = {k: v for k, v in zip(_PROC_NAMES, nums, strict=True) if v is not None}
        if len(counters) < len(_PROC_NAMES):
            bad = len(_PROC_NAMES) - len(counters)
            _warn(out.warnings, f"{name}: {bad} values are not 64-bit counters")
        out.interfaces[name] = counters
    return out
