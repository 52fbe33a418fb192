"""``devlink health show``: the NIC's health reporters, their state and counts.

Text (iproute2; captures in tests/fixtures/optics)::

    pci/0000:00:0a.0:
      reporter fw
        state healthy error 0 recover 0 auto_dump true
    pci/0000:00:0a.0/1:
      reporter tx
        state healthy error 0 recover 0 grace_period 500 auto_recover true auto_dump true

A device line ends with a colon (a port's reporters: ``<device>/<port index>``); each
``reporter <name>`` (``name <name>`` before iproute2 5.4) is followed by ``key value``
words, over one or more lines (``last_dump_date 2024-03-17 last_dump_time 09:29:29``).
Only ``show`` is ever run: a health ``dump`` can deadlock during PCI error recovery.
Unknown words are ignored; never raises.

``devlink -j health show`` is read too: ``{"health": {"<device>": [{"reporter": "tx",
"state": "healthy", "error": 0, "recover": 0, ...}]}}``, the same keys as the text's
words (iproute2 devlink/devlink.c ``pr_out_health``, ``pr_out_handle_start_arr``). No
public capture of the JSON form was found: the probe sends the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collectors.numbers import json_loads, parse_uint
from collectors.optics import HealthReporter
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_WARNINGS = 50  # a garbage capture must not turn into thousands of warning lines

_MAX_LINES = 4096
_MAX_REPORTERS = 512
# The bus address is a name, never read as a number: any word character stands in it (a
# Unicode digit too, as a letter would), while spaces and control characters never do.
_DEVICE = re.compile(r"[a-z]{2,16}/[\w.:-]{1,64}(?:/[0-9]{1,10})?\Z")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_STATES = frozenset({"healthy", "error"})


@dataclass(slots=True)
class HealthRead:
    """The reporters one ``devlink health show`` listed (in its order), and warnings."""

    reporters: tuple[HealthReporter, ...] | None
    warnings: list[str] = field(default_factory=list)


def parse_devlink_health(text: str) -> HealthRead:
    """The health reporters of one ``devlink [-j] health show`` output."""
    if text.lstrip().startswith("{"):
        return _json(text)
    found: list[tuple[str, str, list[str]]] = []  # device, reporter, its words
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    device: str | None = None
    first = ""
    for raw in text.splitlines()[:_MAX_LINES]:
        line = clean(raw).strip()
        if not line:
            continue
        first = first or line
        words = line.split()
        if len(words) == 1 and line.endswith(":"):
            dev = line[:-1]
            device = dev if _DEVICE.fullmatch(dev) else None
            if device is None:
                warnings.add(f"not a devlink device: {dev[:80]!r}")
            continue
        if words[0] in ("reporter", "name") and len(words) >= 2 and device is not None:
            if not _NAME.fullmatch(words[1]):
                warnings.add(f"{device}: not a reporter name: {words[1][:40]!r}")
                continue
            if len(found) < _MAX_REPORTERS:
                found.append((device, words[1], words[2:]))
            continue
        if found and device is not None and found[-1][0] == device:
            found[-1][2].extend(words)
    if not found:
        if first and not (len(first.split()) == 1 and first.endswith(":")):
            return HealthRead(None, [f"no devlink health reporters in the output: {first[:80]!r}"])
        return HealthRead((), warnings)  # a node with devlink devices without reporters
    return HealthRead(tuple(_reporter(d, n, w, warnings) for d, n, w in found), warnings)


def _reporter(device: str, name: str, words: list[str], warnings: WarningLines) -> HealthReporter:
    kv = dict(zip(words[0::2], words[1::2], strict=False))
    state = kv.get("state")
    if state is not None and state not in _STATES:
        warnings.add(f"{device} {name}: unknown state {state[:20]!r}")
        state = clean(state, 20)
    counts: dict[str, int | None] = {}
    for key in ("error", "recover"):
        raw = kv.get(key)
        counts[key] = parse_uint(raw) if raw is not None else None
        if raw is not None and counts[key] is None:
            warnings.add(f"{device} {name}: bad {key} count {raw[:20]!r}")
    date, time_ = kv.get("last_dump_date"), kv.get("last_dump_time")
    last = " ".join(clean(x, 20) for x in (date, time_) if x) or None
    auto = kv.get("auto_recover")
    return HealthReporter(
        device,
        name,
        state,
        counts["error"],
        counts["recover"],
        last,
        None if auto not in ("true", "false") else auto == "true",
    )


def _json(text: str) -> HealthRead:
    try:
        doc = json_loads(text)
    except ValueError as e:
        return HealthRead(None, [f"not JSON: {clean(str(e), 80)}"])
    health = doc.get("health") if isinstance(doc, dict) else None
    if not isinstance(health, dict):
        return HealthRead(None, ["no health object in the JSON"])
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    out: list[HealthReporter] = []
    for dev, reps in list(health.items())[:_MAX_REPORTERS]:
        if not (isinstance(dev, str) and _DEVICE.fullmatch(dev)) or not isinstance(reps, list):
            warnings.add(f"not a devlink device: {clean(str(dev), 80)!r}")
            continue
        for r in reps[: _MAX_REPORTERS - len(out)]:
            name = r.get("reporter") if isinstance(r, dict) else None
            if not (isinstance(name, str) and _NAME.fullmatch(name)):
                warnings.add(f"{dev}: a reporter without a name")
                continue
            # As the text's words: the same keys, the values as text says them.
            words = [w for k, v in r.items() if k != "reporter" for w in (str(k), _word(v))]
            out.append(_reporter(dev, name, words, warnings))
    return HealthRead(tuple(out), warnings)


def _word(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return clean(str(v), 40).replace(" ", "_") if v is not None else "-"
