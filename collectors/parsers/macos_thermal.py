"""Parse macOS thermals and GPU without root: ``macmon pipe`` JSON, else ``pmset -g therm``.

``macmon pipe`` prints one JSON object per sample: documented by its README (vladkens/macmon,
copied in exo-explore/exo worker/utils/macmon/bin/readme.md) with an example, the only
public sample found (a MacmonBar test uses the same values, plus ``soc``); never
captured otherwise, so hosts that use it say "unverified". ``temp.cpu_temp_avg`` /
``temp.gpu_temp_avg`` (°C), ``gpu_usage`` = ``[MHz, ratio 0..1]``, ``gpu_power`` (W),
``soc.chip_name``.
``pmset -g therm`` (captures of a nominal and a throttled Mac) prints ``Note: No thermal
warning level has been recorded`` when nothing happened and ``CPU_Speed_Limit = N``
(percent of full speed) lines; anything else is unknown, never nominal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from collectors.numbers import finite, json_loads, parse_uint
from collectors.text import clean

_LIMIT_RE = re.compile(r"CPU_Speed_Limit\s*=\s*([0-9]{1,3})\b")
_NOMINAL = "No thermal warning level has been recorded"


@dataclass(slots=True)
class MacmonSample:
    cpu_temp_c: float | None = None
    gpu_temp_c: float | None = None
    gpu_util_pct: float | None = None
    gpu_mhz: float | None = None
    gpu_power_w: float | None = None
    chip: str | None = None
    warnings: list[str] = field(default_factory=list)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return finite(float(v))


def parse_macmon(text: str) -> MacmonSample:
    """The last JSON line of ``macmon pipe`` output."""
    out = MacmonSample()
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("{")]
    if not lines:
        out.warnings.append("no macmon sample")
        return out
    try:
        data = json_loads(lines[-1])
    except ValueError as exc:
        out.warnings.append(clean(f"not JSON: {str(exc)[:80]}"))
        return out
    if not isinstance(data, dict):
        out.warnings.append("macmon sample is not an object")
        return out
    temp = data.get("temp")
    if isinstance(temp, dict):
        out.cpu_temp_c = _num(temp.get("cpu_temp_avg"))
        out.gpu_temp_c = _num(temp.get("gpu_temp_avg"))
    gu = data.get("gpu_usage")
    if isinstance(gu, list) and len(gu) == 2:
        out.gpu_mhz = _num(gu[0])
        ratio = _num(gu[1])
        out.gpu_util_pct = round(ratio * 100, 2) if ratio is not None and 0 <= ratio <= 1 else None
    out.gpu_power_w = _num(data.get("gpu_power"))
    soc = data.get("soc")
    if isinstance(soc, dict) and isinstance(soc.get("chip_name"), str):
        out.chip = clean(soc["chip_name"], 64)
    return out


def parse_pmset_therm(text: str) -> tuple[str | None, int | None]:
    """(pressure, CPU speed limit %): "nominal", "throttled", or None when not understood."""
    limits = [n for m in _LIMIT_RE.finditer(text) if (n := parse_uint(m.group(1))) is not None]
    limit = min(limits) if limits else None
    if limit is not None and limit < 100:
        return "throttled", limit
    if _NOMINAL in text or (limit == 100):
        return "nominal", limit
    return None, limit
