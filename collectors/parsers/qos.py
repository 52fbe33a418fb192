"""Parse lossless-traffic configuration: ``mlnx_qos -i <dev>`` and ``dcb pfc show dev <dev>``.

Both return a :class:`fabtop.model.QosConfig` (``.config``) plus what only that tool tells
(DCBX mode, PFC request/indication counters) and warnings. Lines saying a feature is
not supported become warnings; the rest of the output is still read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabtop.model import QosConfig

MAX_WARNINGS = 50
_TRUST_RE = re.compile(r"^Priority trust (?:state|mode)\s*:\s*(\S+)", re.IGNORECASE)
_DSCP_ROW_RE = re.compile(r"^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$")
_TC_RE = re.compile(r"^tc:\s*(\d+)\s*(.*)$")
_TC_PRIO_RE = re.compile(r"^priority:\s*([\d\s,]*)$")


@dataclass(slots=True)
class MlnxQos:
    """``mlnx_qos -i`` output."""

    config: QosConfig = field(default_factory=lambda: QosConfig(source="mlnx_qos"))
    dcbx_mode: str | None = None
    cable_len: int | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DcbPfc:
    """``dcb pfc show dev <dev>`` output."""

    config: QosConfig = field(default_factory=lambda: QosConfig(source="dcb"))
    pfc_cap: int | None = None
    macsec_bypass: bool | None = None
    delay: int | None = None
    requests: dict[int, int] = field(default_factory=dict)  # PFC frames sent, per priority
    indications: dict[int, int] = field(default_factory=dict)  # PFC frames received
    warnings: list[str] = field(default_factory=list)


def _warn(warnings: list[str], msg: str) -> None:
    if len(warnings) < MAX_WARNINGS:
        warnings.append(msg)


def _ints(text: str) -> list[int] | None:
    toks = [t for t in re.split(r"[\s,]+", text.strip()) if t]
    if not all(t.isascii() and t.isdigit() for t in toks):
        return None
    return [int(t) for t in toks]


def _pfc_row(line: str) -> tuple[str, list[int]] | None:
    head, _, rest = line.partition(" ")
    nums = _ints(rest)
    return (head, nums) if nums is not None else None


def parse_mlnx_qos(text: str) -> MlnxQos:
    """Parse ``mlnx_qos -i <dev>`` (trust, dscp2prio, PFC table, per-TC scheduling)."""
    out = MlnxQos()
    cfg = out.config
    dscp2prio: dict[int, int] = {}
    ets: dict[str, str] = {}
    pfc_prios: list[int] | None = None
    tc: int | None = None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower()
        if "not supported" in low:
            _warn(out.warnings, line[:120])
            continue
        if m := _TRUST_RE.match(line):
            cfg.trust = m.group(1).lower()
            continue
        if low.startswith("dcbx mode:"):
            out.dcbx_mode = line.split(":", 1)[1].strip() or None
            continue
        if low.startswith("cable len:"):
            nums = _ints(line.split(":", 1)[1])
            out.cable_len = nums[0] if nums else None
            continue
        if low.startswith("dscp2prio mapping"):
            section = "dscp"
            continue
        if low.startswith("pfc configuration"):
            section = "pfc"
            continue
        if m := _TC_RE.match(line):
            section, tc = "tc", int(m.group(1))
            for part in m.group(2).split(","):
                key, sep, value = part.partition(":")
                if sep and key.strip():
                    ets[f"tc{tc}.{key.strip()}"] = value.strip()
            continue
        if section == "dscp" and (m := _DSCP_ROW_RE.match(line)):
            prio = int(m.group(1))
            for d in _ints(m.group(2)) or []:
                if 0 <= d <= 63:
                    dscp2prio[d] = prio
            continue
        if section == "pfc" and (row := _pfc_row(line)):
            head, nums = row
            if head == "priority":
                pfc_prios = nums
            elif head == "enabled":
                prios = pfc_prios if pfc_prios and len(pfc_prios) == len(nums) else range(8)
                cfg.pfc_enabled = tuple(p for p, on in zip(prios, nums, strict=False) if on)
            continue
        if section == "tc" and tc is not None and (m := _TC_PRIO_RE.match(line)):
            prios_txt = ",".join(str(p) for p in _ints(m.group(1)) or [])
            key = f"tc{tc}.priorities"
            ets[key] = f"{ets[key]},{prios_txt}" if key in ets else prios_txt
            continue
    cfg.dscp2prio = dscp2prio or None
    cfg.ets = ets or None
    return out


_DCB_SCALARS = ("pfc-cap", "macsec-bypass", "delay")
_DCB_LISTS = ("pg-pfc", "prio-pfc", "requests", "indications")
_PRIO_PAIR_RE = re.compile(r"^(\d+):(\S+)$")


def parse_dcb_pfc(text: str) -> DcbPfc:
    """Parse ``dcb pfc show dev <dev>`` (one line or one object per line, -s counters)."""
    out = DcbPfc()
    toks = text.split()
    i = 0
    enabled: dict[int, bool] = {}
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok in _DCB_SCALARS:
            if i >= len(toks):
                _warn(out.warnings, f"{tok} without a value")
                break
            value = toks[i]
            i += 1
            if tok == "macsec-bypass":
                out.macsec_bypass = {"on": True, "off": False}.get(value)
            elif value.isascii() and value.isdigit():
                if tok == "pfc-cap":
                    out.pfc_cap = int(value)
                else:
                    out.delay = int(value)
            else:
                _warn(out.warnings, f"bad value for {tok}: {value[:40]!r}")
        elif tok in _DCB_LISTS:
            while i < len(toks) and (m := _PRIO_PAIR_RE.match(toks[i])):
                i += 1
                prio, value = int(m.group(1)), m.group(2)
                if not 0 <= prio <= 7:
                    continue
                if tok in ("pg-pfc", "prio-pfc"):
                    enabled[prio] = value == "on"
                elif value.isascii() and value.isdigit():
                    target = out.requests if tok == "requests" else out.indications
                    target[prio] = int(value)
        else:
            _warn(out.warnings, f"unexpected token {tok[:40]!r}")
    if enabled:
        out.config.pfc_enabled = tuple(sorted(p for p, on in enabled.items() if on))
    return out
