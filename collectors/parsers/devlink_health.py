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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collectors.numbers import parse_uint
from collectors.optics import HealthReporter
from collectors.text import clean

_MAX_LINES = 4096
_MAX_REPORTERS = 512
_DEVICE = re.compile(r"[a-z]{2,16}/[A-Za-z0-9_.:-]{1,64}(?:/\d{1,10})?\Z")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_STATES = frozenset({"healthy", "error"})


@dataclass(slots=True)
class HealthRead:
    """The reporters one ``devlink health show`` listed (in its order), and warnings."""

    reporters: tuple[HealthReporter, ...] | None
    warnings: list[str] = field(default_factory=list)


def parse_devlink_health(text: str) -> HealthRead:
    """The health reporters of one ``devlink health show`` output."""
    found: list[tuple[str, str, list[str]]] = []  # device, reporter, its words
    warnings: list[str] = []
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
                warnings.append(f"not a devlink device: {dev[:80]!r}")
            continue
        if words[0] in ("reporter", "name") and len(words) >= 2 and device is not None:
            if not _NAME.fullmatch(words[1]):
                warnings.append(f"{device}: not a reporter name: {words[1][:40]!r}")
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


def _reporter(device: str, name: str, words: list[str], warnings: list[str]) -> HealthReporter:
    kv = dict(zip(words[0::2], words[1::2], strict=False))
    state = kv.get("state")
    if state is not None and state not in _STATES:
        warnings.append(f"{device} {name}: unknown state {state[:20]!r}")
        state = clean(state, 20)
    counts: dict[str, int | None] = {}
    for key in ("error", "recover"):
        raw = kv.get(key)
        counts[key] = parse_uint(raw) if raw is not None else None
        if raw is not None and counts[key] is None:
            warnings.append(f"{device} {name}: bad {key} count {raw[:20]!r}")
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
