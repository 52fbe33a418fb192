"""Units for the screen: Gb/s, per-second counts, percentages, ages, sparklines.

Every formatter takes ``None`` (missing) and shows it as a dash, never as 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

DASH = "—"
SPARK_CHARS = "▁▂▃▄▅▆▇█"
GAP_CHAR = "╌"  # a counter reset or a missing tick: a hole, never a spike


def _missing(v: float | None) -> bool:
    return v is None or v != v or math.isinf(v)


def gbps(bps: float | None) -> str:
    """Bits per second as Gb/s with three significant digits ("12.3", "0.04", "400")."""
    if bps is None or _missing(bps):
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
    if v is None or _missing(v):
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
    if ratio is None or _missing(ratio):
        return DASH
    p = ratio * 100
    if p == 0:
        return "0%"
    if p < 1:
        return "<1%"
    return f"{p:.0f}%"


def age(seconds: float | None) -> str:
    """Seconds since something, compact: 0.4s, 12s, 3m05s, 2h14m, 3d."""
    if seconds is None or _missing(seconds):
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
    if seconds is None or _missing(seconds):
        return DASH
    if seconds >= 1:
        return f"{seconds:.1f}s"
    m = seconds * 1000
    return f"{m:.1f}ms" if m < 10 else f"{m:.0f}ms"


def celsius(c: float | None) -> str:
    """A temperature in whole degrees."""
    if c is None or _missing(c):
        return DASH
    return f"{c:.0f}°"


def speed(gbit: float | None) -> str:
    """A link's line rate ("400G", "25G", "2.5G")."""
    if gbit is None or _missing(gbit):
        return DASH
    return f"{gbit:.0f}G" if gbit >= 10 or gbit == int(gbit) else f"{gbit:.1f}G"


def sparkline(values: Sequence[float | None], width: int, top: float | None = None) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (or their maximum).

    A missing value (gap) is drawn as a dotted dash so a counter reset shows as a hole.
    Short histories are left-padded with spaces so the newest point is always on the right.
    """
    if width <= 0:
        return ""
    vals = list(values)[-width:]
    finite = [v for v in vals if v is not None and not _missing(v)]
    scale = top if top is not None and top > 0 else (max(finite) if finite else 0.0)
    out = []
    for v in vals:
        if v is None or _missing(v):
            out.append(GAP_CHAR)
        elif scale <= 0 or v <= 0:
            out.append(SPARK_CHARS[0])
        else:
            i = int(min(1.0, v / scale) * (len(SPARK_CHARS) - 1) + 0.5)
            out.append(SPARK_CHARS[max(0, min(len(SPARK_CHARS) - 1, i))])
    return " " * (width - len(out)) + "".join(out)


def middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` in the middle, keeping the end that tells ports apart."""
    if width <= 0 or len(text) <= width:
        return text
    if width < 4:
        return text[:width]
    tail = (width - 1) * 2 // 3
    return text[: width - 1 - tail] + "…" + text[-tail:]
