"""Units for the screen: Gb/s, per-second counts, percentages, ages, sparklines.

Every formatter takes ``None`` (missing) and shows it as a dash, never as 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabtop.core.units import DASH, age, celsius, gbps, missing, ms, pct, si, speed

__all__ = ["DASH", "age", "celsius", "gbps", "middle", "ms", "pct", "si", "sparkline", "speed"]

SPARK_CHARS = "▁▂▃▄▅▆▇█"
GAP_CHAR = "╌"  # a counter reset or a missing tick: a hole, never a spike


def sparkline(values: Sequence[float | None], width: int, top: float | None = None) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (or their maximum).

    A missing value (gap) is drawn as a dotted dash so a counter reset shows as a hole.
    Short histories are left-padded with spaces so the newest point is always on the right.
    """
    if width <= 0:
        return ""
    vals = list(values)[-width:]
    finite = [v for v in vals if v is not None and not missing(v)]
    scale = top if top is not None and top > 0 else (max(finite) if finite else 0.0)
    out = []
    for v in vals:
        if v is None or missing(v):
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
