"""Numbers as people read them: Gb/s, per-second counts, percentages, durations, degrees.

One place for units, for every view: the dashboard (tui/format.py re-exports these), the
headless commands' text (doctor, snapshot's text) and a finding's evidence
(:func:`evidence_text`). Every formatter takes ``None`` (missing) and shows it as a dash,
never as 0. JSON keeps the raw numbers; only text goes through here.
"""

from __future__ import annotations

import math

DASH = "—"


def missing(v: float | None) -> bool:
    return v is None or v != v or math.isinf(v)


def gbps(bps: float | None) -> str:
    """Bits per second as Gb/s with three significant digits ("12.3", "0.04", "400")."""
    if bps is None or missing(bps):
        return DASH
    g = bps / 1e9
    if g == 0:
        return "0"
    if g < 0.01:
        return "<.01"
    if g < 10:
        return f"{g:.2f}"
    if g < 100:
        return f"{g:.1f}"
    return f"{g:.0f}"


def si(v: float | None) -> str:
    """A count or rate in at most 4 characters: 0, 12, 345, 1.2k, 12k, 3.4M."""
    if v is None or missing(v):
        return DASH
    if v == 0:
        return "0"
    a = abs(v)
    sign = "-" if v < 0 else ""
    if a < 1:
        return sign + (f"{a:.2f}".lstrip("0") if a >= 0.01 else "<.01")
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div * 0.9995:
            x = a / div
            return sign + (f"{x:.1f}{unit}" if x < 9.95 else f"{x:.0f}{unit}")
    return sign + f"{a:.0f}"


def pct(ratio: float | None) -> str:
    """A 0..1 ratio as a percentage without decimals ("37%", "<1%")."""
    if ratio is None or missing(ratio):
        return DASH
    p = ratio * 100
    if p == 0:
        return "0%"
    if p < 1:
        return "<1%"
    return f"{p:.0f}%"


def percent(ratio: float | None) -> str:
    """A 0..1 ratio as a percentage with one decimal ("99.6%"), for a ratio read closely:
    never "100.0%" for one short of 1."""
    if ratio is None or missing(ratio):
        return DASH
    p = ratio * 100
    if p == 0 or p >= 100:
        return f"{p:.0f}%"
    return f"{min(p, 99.9):.1f}%"


def age(seconds: float | None) -> str:
    """Seconds since something, compact: 0.4s, 12s, 3m05s, 2h14m, 3d."""
    if seconds is None or missing(seconds):
        return DASH
    s = max(0.0, seconds)
    if s < 10:
        return f"{s:.1f}s"
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 86400)}d"


def ms(seconds: float | None) -> str:
    """A round trip or latency in milliseconds ("0.8ms", "35ms", "1.2s")."""
    if seconds is None or missing(seconds):
        return DASH
    if seconds >= 1:
        return f"{seconds:.1f}s"
    m = seconds * 1000
    return f"{m:.1f}ms" if m < 10 else f"{m:.0f}ms"


def celsius(c: float | None) -> str:
    """A temperature in whole degrees."""
    if c is None or missing(c):
        return DASH
    return f"{c:.0f}°"


def speed(gbit: float | None) -> str:
    """A link's line rate ("400G", "25G", "2.5G")."""
    if gbit is None or missing(gbit):
        return DASH
    return f"{gbit:.0f}G" if gbit >= 10 or gbit == int(gbit) else f"{gbit:.1f}G"


def duration(seconds: float | None) -> str:
    """A length of time in words people use: ``100 ms``, ``8 s``, ``2.5 min``, ``3.0 h``."""
    if seconds is None or missing(seconds):
        return DASH
    s = abs(seconds)
    if s < 1:
        return f"{seconds * 1000:.0f} ms"
    if s < 90:
        return f"{seconds:.0f} s" if s >= 10 or seconds == int(seconds) else f"{seconds:.1f} s"
    if s < 90 * 60:
        return f"{seconds / 60:.1f} min"
    if s < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def number(v: float | int) -> str:
    """A plain number: large whole ones grouped by thousands, others to three significant digits
    (never ``7537069874.0``)."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return _whole(v)
    if missing(v):
        return DASH
    if v.is_integer() and abs(v) < 1e15:
        return _whole(int(v))
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _whole(n: int) -> str:
    # Counters are grouped (12,345,678); an MTU or a port number is not (4200, 4791).
    return f"{n:,}" if abs(n) >= 100_000 else str(n)


# An evidence value's unit, by how its name ends (the rules name them so: ``*_per_s``,
# ``*_ratio``, ``*_c``...). The first match wins: ``bytes_per_s`` before ``per_s``.
_UNITS: tuple[tuple[str, str], ...] = (
    ("bytes_per_s", "bits"),
    ("_ratio", "ratio"),
    ("_pct", "pct"),
    ("per_s", "rate"),
    ("_gbps_per_lane", "gbit"),
    ("_gbps", "gbit"),
    ("_gts", "gts"),
    ("_mhz", "mhz"),
    ("_w", "watt"),
    ("_c", "degree"),
    ("_s", "seconds"),
)


def evidence_text(name: str, v: float | int | str | None) -> str | None:
    """One evidence value as a person reads it, in the unit its name says (``rx_bytes_per_s``
    7537069874.0 -> ``60.3 Gb/s``; ``tx_pause_time_ratio`` 0.996 -> ``99.6%``; ``held_s`` 0.1
    -> ``100 ms``); None for a value not known, which a view leaves out rather than print
    ``None``."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return number(v)
    if missing(float(v)):
        return None
    unit = next((u for end, u in _UNITS if name.endswith(end)), "")
    if unit == "rate" and "bytes" in name:  # rx_bytes_prio3_per_s
        unit = "bits"
    f = float(v)
    if unit == "bits":
        return f"{gbps(f * 8)} Gb/s"
    if unit == "ratio":
        return percent(f)
    if unit == "pct":
        return f"{f:.0f}%"
    if unit == "rate":
        return f"{si(f)}/s"
    if unit == "gbit":
        return f"{number(v)} Gb/s"
    if unit == "gts":
        return f"{number(v)} GT/s"
    if unit == "mhz":
        return f"{number(v)} MHz"
    if unit == "watt":
        return f"{f:.0f} W"
    if unit == "degree":
        return f"{f:.0f} °C"
    if unit == "seconds":
        return duration(f)
    return number(v)
