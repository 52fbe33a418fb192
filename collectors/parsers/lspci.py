"""Parse ``lspci -vvv`` for each device's PCIe link capability and status.

Mail clients hard-wrap long lines: a line that starts at column 0 and is not a device
header is taken as the continuation of the line before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collectors.numbers import parse_float, parse_uint
from collectors.text import clean

_HEADER_RE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*)$")
_SPEED_RE = re.compile(r"Speed\s+([0-9.]+)GT/s(\s*\((?:ok|downgraded)\))?")
_WIDTH_RE = re.compile(r"Width\s+x(\d+)(\s*\((?:ok|downgraded)\))?")
MAX_WARNINGS = 50


@dataclass(slots=True)
class PciDevice:
    """One PCI function: its link as trained (LnkSta) against what it can do (LnkCap)."""

    bdf: str
    description: str
    cap_speed_gts: float | None = None
    cap_width: int | None = None
    sta_speed_gts: float | None = None
    sta_width: int | None = None
    speed_downgraded: bool = False  # lspci's own "(downgraded)" mark on LnkSta
    width_downgraded: bool = False


@dataclass(slots=True)
class LspciResult:
    """Every device block found, in order."""

    devices: list[PciDevice] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    for raw in text.splitlines():
        line = clean(raw.rstrip("\r"))  # a tab becomes a space: indentation is kept
        if not line.strip():
            lines.append("")
            continue
        if lines and lines[-1] and not line[0].isspace() and not _HEADER_RE.match(line):
            lines[-1] = lines[-1].rstrip() + " " + line.strip()
        else:
            lines.append(line)
    return lines


def _speed(text: str) -> tuple[float | None, bool]:
    m = _SPEED_RE.search(text)
    if not m:
        return None, False
    return parse_float(m.group(1)), "downgraded" in (m.group(2) or "")


def _width(text: str) -> tuple[int | None, bool]:
    m = _WIDTH_RE.search(text)
    if not m:
        return None, False
    return parse_uint(m.group(1)), "downgraded" in (m.group(2) or "")


def parse_lspci_vvv(text: str) -> LspciResult:
    """Parse ``lspci -vvv`` (or plain ``lspci``) output into per-device link records."""
    out = LspciResult()
    dev: PciDevice | None = None
    for line in _logical_lines(text):
        m = _HEADER_RE.match(line)
        if m:
            dev = PciDevice(m.group(1), clean(m.group(2).strip()))
            out.devices.append(dev)
            continue
        body = line.strip()
        if dev is None or not body:
            continue
        if body.startswith("LnkCap:"):
            dev.cap_speed_gts, _ = _speed(body)
            dev.cap_width, _ = _width(body)
        elif body.startswith("LnkSta:"):
            dev.sta_speed_gts, dev.speed_downgraded = _speed(body)
            dev.sta_width, dev.width_downgraded = _width(body)
    if text.strip() and not out.devices:
        out.warnings.append("no PCI device header found")
    return out
