"""``ethtool -I --show-fec <netdev>``: the FEC mode and its error counters.

Text (captures in tests/fixtures/optics)::

    FEC parameters for eth0:
    Supported/Configured FEC encodings: Auto RS BaseR      ("Configured ..." before 6.x)
    Active FEC encoding: RS
    Statistics:
      corrected_blocks: 256
        Lane 0: 255
        Lane 1: 1
      uncorrectable_blocks: 145
      fec_symbol_err_0: 445 [ per_lane:  125, 120, 100, 100 ]     (Linux 6.18 histogram)
      fec_symbol_err_1_to_3: 12

and the same as JSON (``ethtool -j -I --show-fec``: ``statistics.corrected_blocks.total``,
``.lanes``, ``statistics.hist[].bin_low/bin_high/total/lanes``).

The counters (cumulative) are returned apart, as ``LinkSample.counters["fec"]`` holds
them: ``corrected_blocks``, ``uncorrectable_blocks``, ``<name>_lane<N>`` per lane (lane
numbers as printed, 0-based), and a histogram bin as ``hist_bin_<low>`` (the bin of
``low`` to ``high`` symbol errors per codeword; its lower bound names it, since bins
differ by driver) with ``hist_bin_<low>_lane<N>``. ``None`` as the active mode: the tool
said none (link down, FEC off or not told). Unknown lines are ignored; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from collectors.numbers import json_loads, parse_uint
from collectors.optics import FecState
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_WARNINGS = 50  # a garbage capture must not turn into thousands of warning lines

_MAX_LINES = 512
_MAX_LANES = 16
_MAX_MODES = 8
_MAX_COUNTERS = 256
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
_HIST = re.compile(r"fec_symbol_err_([0-9]{1,4})(?:_to_([0-9]{1,4}))?\Z")
_MODE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,15}\Z")


@dataclass(slots=True)
class FecRead:
    """What one ``--show-fec`` output said: the FEC state, its counters, warnings."""

    state: FecState | None
    counters: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def parse_show_fec(text: str) -> FecRead:
    """The FEC state and counters of one ``ethtool [-j] -I --show-fec`` output."""
    if text.lstrip().startswith("["):
        return _json(text)
    state = FecState()
    counters: dict[str, int] = {}
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    seen = False
    last: str | None = None  # the total that "Lane N:" lines belong to
    first = ""
    for raw in text.splitlines()[:_MAX_LINES]:
        line = clean(raw).strip()
        if not line:
            continue
        first = first or line
        name, sep, value = line.partition(":")
        if not sep:
            continue
        key = name.strip().lower()
        value = value.strip()
        if key.endswith("configured fec encodings"):
            state.configured = _modes(value.split())
            seen = True
        elif key == "active fec encoding":
            active = _modes(value.split())
            state.active = active[0] if active else None
            seen = True
        elif key.startswith("lane ") and last is not None:
            n = parse_uint(key[5:])
            v = parse_uint(value)
            if n is None or n >= _MAX_LANES or v is None:
                warnings.add(f"{last} {key}: bad value {value[:40]!r}")
                continue
            _put(counters, f"{last}_lane{n}", v)
        elif _NAME.fullmatch(key):
            total, _, lanes = value.partition("[")
            v = parse_uint(total)
            if v is None:
                last = None
                if key not in ("statistics",):
                    warnings.add(f"{key}: bad value {value[:40]!r}")
                continue
            hist = _HIST.fullmatch(key)
            last = f"hist_bin_{int(hist.group(1))}" if hist else key
            _put(counters, last, v)
            if hist:
                state.histogram = True
            if lanes:  # "per_lane:  125, 120, 100, 100 ]"
                per = lanes.rstrip("] ").partition(":")[2].split(",")
                for n, tok in enumerate(per[:_MAX_LANES]):
                    lv = parse_uint(tok)
                    if lv is not None:
                        _put(counters, f"{last}_lane{n}", lv)
            seen = True
    if not seen:
        what = f": {first[:80]!r}" if first else ": empty"
        return FecRead(None, {}, [f"no FEC parameters in the output{what}"])
    if state.histogram is None and counters:
        state.histogram = False  # statistics, and no bin among them
    return FecRead(state, counters, warnings)


def _modes(words: list[str]) -> tuple[str, ...]:
    """FEC modes as printed ("Auto", "RS", "BaseR", "Off", "LLRS"); "None": no mode."""
    return tuple(w for w in words[:_MAX_MODES] if _MODE.fullmatch(w) and w != "None")


def _put(counters: dict[str, int], name: str, v: int) -> None:
    if len(counters) < _MAX_COUNTERS:
        counters[name] = v


def _json(text: str) -> FecRead:
    try:
        doc = json_loads(text)
    except ValueError as e:
        return FecRead(None, {}, [f"not JSON: {clean(str(e), 80)}"])
    obj = doc[0] if isinstance(doc, list) and doc else None
    if not isinstance(obj, dict):
        return FecRead(None, {}, ["no FEC object in the JSON"])
    state = FecState()
    counters: dict[str, int] = {}
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    state.configured = _modes([w for w in obj.get("config") or () if isinstance(w, str)])
    active = _modes([w for w in obj.get("active") or () if isinstance(w, str)])
    state.active = active[0] if active else None
    stats = obj.get("statistics")
    if isinstance(stats, dict):
        for key, val in list(stats.items())[:_MAX_COUNTERS]:
            if key == "hist" and isinstance(val, list):
                for b in val[:_MAX_COUNTERS]:
                    low = b.get("bin_low") if isinstance(b, dict) else None
                    if not isinstance(low, int) or low < 0:
                        warnings.add("hist: a bin without bin_low")
                        continue
                    _stat(counters, f"hist_bin_{low}", b, warnings)
                    state.histogram = True
            elif isinstance(key, str) and _NAME.fullmatch(key) and isinstance(val, dict):
                _stat(counters, key, val, warnings)
        if state.histogram is None:
            state.histogram = False
    return FecRead(state, counters, warnings)


def _stat(counters: dict[str, int], name: str, val: dict[str, Any], warnings: WarningLines) -> None:
    total = val.get("total")
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        _put(counters, name, total)
    else:
        warnings.add(f"{name}: no total")
    lanes = val.get("lanes")
    if isinstance(lanes, list):
        for n, lv in enumerate(lanes[:_MAX_LANES]):
            if isinstance(lv, int) and not isinstance(lv, bool) and lv >= 0:
                _put(counters, f"{name}_lane{n}", lv)
