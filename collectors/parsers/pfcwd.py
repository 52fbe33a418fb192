"""Parse the ``pfcwd`` section of the fast probe's watchdog events (docs/PROBE.md).

Lines are ``storm <netdev> <prio> <rx|tx> <ratio> <bytes_per_s|-> <window_us>`` and
``clear <netdev> <prio> <rx|tx> <ratio>``. Every field is checked; a bad line costs that
line, said in a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.numbers import parse_float, parse_uint
from collectors.probe import NAME_RE
from collectors.text import clean
from collectors.warning_lines import WarningLines

MAX_LINES = 256  # 8 priorities x 2 sides x 16 ports
MAX_WARNINGS = 20


@dataclass(slots=True, frozen=True)
class WatchdogEvent:
    """One line of the fast probe's PFC watchdog (a ``pfcwd`` section of an event).

    ``storm``: the priority was paused for at least 99 % of the probe's own sampling
    window while the bytes it should move stayed flat (SONiC pfcwd's condition); False
    is the probe saying that it no longer holds.
    """

    netdev: str
    prio: int
    side: str  # "rx": paused by the peer; "tx": this port sends the pauses
    storm: bool
    ratio: float
    moved_bytes_per_s: float | None
    window_s: float
    clock_ns: int  # node wall clock of the reading that decided it


def parse_pfcwd(text: str, clock_ns: int) -> tuple[list[WatchdogEvent], list[str]]:
    """Events of one section, and one warning per line that could not be used."""
    out: list[WatchdogEvent] = []
    warnings = WarningLines(MAX_WARNINGS)
    for n, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        if n >= MAX_LINES:
            warnings.append(f"more than {MAX_LINES} lines; the rest ignored")
            break
        ev = _line(line.split(), clock_ns)
        if ev is None:
            warnings.add(f"bad watchdog line: {clean(line, 120)!r}")
            continue
        out.append(ev)
    return out, warnings


def _line(f: list[str], clock_ns: int) -> WatchdogEvent | None:
    if len(f) < 5 or f[0] not in ("storm", "clear"):
        return None
    netdev, prio, side = f[1], parse_uint(f[2]), f[3]
    ratio = parse_float(f[4])
    if not NAME_RE.fullmatch(netdev) or prio is None or prio > 7 or side not in ("rx", "tx"):
        return None
    if ratio is None or not 0 <= ratio <= 1:
        return None
    if f[0] == "clear":
        return WatchdogEvent(netdev, prio, side, False, ratio, None, 0.0, clock_ns)
    if len(f) != 7:
        return None
    moved = None if f[5] == "-" else parse_float(f[5])
    window_us = parse_uint(f[6])
    if (f[5] != "-" and (moved is None or moved < 0)) or window_us is None:
        return None
    if not 0 < window_us <= 600_000_000:
        return None
    return WatchdogEvent(netdev, prio, side, True, ratio, moved, window_us / 1e6, clock_ns)
