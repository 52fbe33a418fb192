"""Parse lossless-traffic configuration: ``mlnx_qos -i <dev>`` and ``dcb pfc show dev <dev>``.

Both return a :class:`fabtop.model.QosConfig` (``.config``) plus what only that tool tells
(DCBX mode, PFC request/indication counters) and warnings. Lines saying a feature is
not supported become warnings; the rest of the output is still read.

Each line is cleaned of control characters before it is read, and every number goes
through :func:`collectors.numbers.parse_uint`: a token that is not a 64-bit decimal costs
that one value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import U64_MAX, is_digits, parse_uint
from collectors.samples import QosConfig
from collectors.text import MAX_TEXT, clean
from collectors.warning_lines import WarningLines

MAX_WARNINGS = 50
_TRUST_RE = re.compile(r"^Priority trust (?:state|mode)\s*:\s*(\S+)", re.IGNORECASE)
_DSCP_ROW_RE = re.compile(r"^prio:\s*([0-9]+)\s+dscp:\s*([0-9,\s]*)$")
_TC_RE = re.compile(r"^tc:\s*([0-9]+)\s*(.*)$")
_TC_PRIO_RE = re.compile(r"^priority:\s*([0-9\s,]*)$")


def _lines(text: str) -> list[str]:
    """The text's lines, stripped and cleaned of control characters (remote text)."""
    return [clean(raw).strip() for raw in text.splitlines()]


def _tokens(text: str) -> list[str]:
    """Whitespace-separated tokens, each cleaned (a long bad token costs only itself)."""
    return [c for t in text.split() if (c := clean(t, max(len(t), MAX_TEXT)))]


@dataclass(slots=True)
class MlnxQos:
    """``mlnx_qos -i`` output."""

    config: QosConfig = field(default_factory=lambda: QosConfig(source="mlnx_qos"))
    dcbx_mode: str | None = None
    cable_len: int | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


@dataclass(slots=True)
class DcbPfc:
    """``dcb pfc show dev <dev>`` output."""

    config: QosConfig = field(default_factory=lambda: QosConfig(source="dcb"))
    pfc_cap: int | None = None
    macsec_bypass: bool | None = None
    delay: int | None = None
    requests: dict[int, int] = field(default_factory=dict)  # PFC frames sent, per priority
    indications: dict[int, int] = field(default_factory=dict)  # PFC frames received
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def _ints(text: str) -> list[int] | None:
    nums = [parse_uint(t) for t in re.split(r"[\s,]+", text.strip()) if t]
    return None if None in nums else [n for n in nums if n is not None]


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
    tc_prios: dict[str, list[str]] = {}  # tcN.priorities, line by line
    pfc_prios: list[int] | None = None
    tc: int | None = None
    section = ""
    for line in _lines(text):
        if not line:
            continue
        low = line.lower()
        if "not supported" in low:
            out.warnings.add(line[:120])
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
        if (m := _TC_RE.match(line)) and (tc := parse_uint(m.group(1))) is not None:
            section = "tc"
            for part in m.group(2).split(","):
                key, sep, value = part.partition(":")
                if sep and key.strip():
                    ets[f"tc{tc}.{key.strip()}"] = value.strip()
            continue
        if section == "dscp" and (m := _DSCP_ROW_RE.match(line)):
            prio = parse_uint(m.group(1))
            if prio is None or prio > 7:
                out.warnings.add(f"bad dscp2prio row {line[:60]!r}")
                continue
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
            # joined once at the end (a string grown line by line costs the square); the
            # key takes its place in ets now
            key = f"tc{tc}.priorities"
            if key not in tc_prios:
                tc_prios[key] = [ets[key]] if key in ets else []
                ets[key] = ""
            tc_prios[key].append(",".join(str(p) for p in _ints(m.group(1)) or []))
            continue
    ets.update((key, ",".join(parts)) for key, parts in tc_prios.items())
    cfg.dscp2prio = dscp2prio or None
    cfg.ets = ets or None
    return out


_DCB_SCALARS = ("pfc-cap", "macsec-bypass", "delay")
_DCB_LISTS = ("pg-pfc", "prio-pfc", "requests", "indications")
_PRIO_PAIR_RE = re.compile(r"^([0-9]+):(\S+)$")


def parse_dcb_pfc(text: str) -> DcbPfc:
    """Parse ``dcb pfc show dev <dev>`` (one line or one object per line, -s counters)."""
    out = DcbPfc()
    toks = _tokens(text)
    i = 0
    enabled: dict[int, bool] = {}
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok in _DCB_SCALARS:
            if i >= len(toks):
                out.warnings.add(f"{tok} without a value")
                break
            value = toks[i]
            i += 1
            if tok == "macsec-bypass":
                out.macsec_bypass = {"on": True, "off": False}.get(value)
            elif (num := parse_uint(value)) is not None:
                if tok == "pfc-cap":
                    out.pfc_cap = num
                else:
                    out.delay = num
            else:
                out.warnings.add(f"bad value for {tok}: {value[:40]!r}")
        elif tok in _DCB_LISTS:
            while i < len(toks) and (m := _PRIO_PAIR_RE.match(toks[i])):
                i += 1
                prio, value = parse_uint(m.group(1)), m.group(2)
                if prio is None or prio > 7:
                    continue
                if tok in ("pg-pfc", "prio-pfc"):
                    enabled[prio] = value == "on"
                elif (num := parse_uint(value)) is not None:
                    target = out.requests if tok == "requests" else out.indications
                    target[prio] = num
        else:
            out.warnings.add(f"unexpected token {tok[:40]!r}")
    if enabled:
        out.config.pfc_enabled = tuple(sorted(p for p, on in enabled.items() if on))
    return out


# --- iproute2 dcb: apptrust, app, ets, buffer -------------------------------------------
# No capture from real hardware exists for these four; the formats come from iproute2's
# man pages (dcb-app(8), dcb-ets(8), dcb-buffer(8)) and the commit message that added
# ``dcb apptrust`` ("order: ethtype stream-port pcp"), and the tests say so.


@dataclass(slots=True)
class DcbApptrust:
    """``dcb apptrust show dev <dev>``: the selectors the port trusts, in order."""

    order: tuple[str, ...] | None = None
    trust: str | None = None  # "dscp" or "pcp": whichever of the two comes first
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def parse_dcb_apptrust(text: str) -> DcbApptrust:
    """Parse ``order: dscp pcp`` (older iproute2 printed ``trust-order:``)."""
    out = DcbApptrust()
    for line in _lines(text):
        if not line:
            continue
        head, sep, rest = line.partition(":")
        if sep and head.strip() in ("order", "trust-order"):
            out.order = tuple(rest.split())
            out.trust = next((s for s in out.order if s in ("dscp", "pcp")), None)
        else:
            out.warnings.add(f"unexpected line {line[:60]!r}")
    return out


# Names ``dcb app`` prints for DSCP values (from /etc/iproute2/rt_dsfield) unless -N.
_DSCP_NAME_RE = re.compile(r"^(?:CS([0-7])|AF([1-4])([1-3])|EF)$")


def dscp_value(tok: str) -> int | None:
    """A DSCP number or its rt_dsfield name (CS3 = 24, AF41 = 34, EF = 46); None otherwise."""
    if is_digits(tok):
        v = parse_uint(tok)
        return v if v is not None and v <= 63 else None
    m = _DSCP_NAME_RE.match(tok.upper())
    if m is None:
        return None
    if m.group(1) is not None:
        return int(m.group(1)) * 8
    if m.group(2) is not None:
        return int(m.group(2)) * 8 + int(m.group(3)) * 2
    return 46


@dataclass(slots=True)
class DcbApp:
    """``dcb app show dev <dev>``: the application priority table (DSCP rules kept)."""

    dscp2prio: dict[int, int] = field(default_factory=dict)
    default_prio: tuple[int, ...] | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


_APP_KEYS = (
    "default-prio",
    "ethtype-prio",
    "stream-port-prio",
    "dgram-port-prio",
    "port-prio",
    "dscp-prio",
    "pcp-prio",
)


def parse_dcb_app(text: str) -> DcbApp:
    """Parse ``dscp-prio 0:0 CS3:3 ...`` and friends; one DSCP listed twice keeps the last."""
    out = DcbApp()
    key: str | None = None
    defaults: list[int] = []
    for tok in _tokens(text):
        if tok in _APP_KEYS:
            key = tok
            continue
        if key == "default-prio":
            if (num := parse_uint(tok)) is not None and num <= 7:
                defaults.append(num)
            else:
                out.warnings.add(f"bad default-prio {tok[:40]!r}")
            continue
        if key == "dscp-prio":
            name, sep, prio = tok.rpartition(":")
            d = dscp_value(name) if sep else None
            p = parse_uint(prio)
            if d is None or p is None or p > 7:
                out.warnings.add(f"bad dscp-prio entry {tok[:40]!r}")
                continue
            out.dscp2prio[d] = p
            continue
        if key is None:
            out.warnings.add(f"unexpected token {tok[:40]!r}")
    if defaults:
        out.default_prio = tuple(defaults)
    return out


@dataclass(slots=True)
class DcbEts:
    """``dcb ets show dev <dev>``: ETS keyed like mlnx_qos's (``tc3.tsa``, ``tc3.priorities``)."""

    ets: dict[str, str] = field(default_factory=dict)
    willing: bool | None = None
    ets_cap: int | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


_ETS_MAPS = ("prio-tc", "tc-tsa", "tc-bw", "pg-bw", "reco-prio-tc", "reco-tc-tsa", "reco-tc-bw")


def parse_dcb_ets(text: str) -> DcbEts:
    """Parse ``prio-tc 0:0 ...``, ``tc-tsa 0:ets ...``, ``tc-bw 0:33 ...`` (+ willing, ets-cap)."""
    out = DcbEts()
    toks = _tokens(text)
    i = 0
    prios_of: dict[int, list[int]] = {}
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok in ("willing", "ets-cap", "cbs"):
            value = toks[i] if i < len(toks) else ""
            i += 1
            if tok == "willing":
                out.willing = {"on": True, "off": False}.get(value)
            elif tok == "ets-cap":
                out.ets_cap = parse_uint(value)
            continue
        if tok not in _ETS_MAPS:
            out.warnings.add(f"unexpected token {tok[:40]!r}")
            continue
        while i < len(toks) and (m := _PRIO_PAIR_RE.match(toks[i])):
            i += 1
            k, v = parse_uint(m.group(1)), m.group(2)
            if k is None:
                continue
            if tok == "prio-tc":
                if (tc := parse_uint(v)) is not None:
                    prios_of.setdefault(tc, []).append(k)
            elif tok == "tc-tsa":
                out.ets[f"tc{k}.tsa"] = v
            elif tok == "tc-bw":
                out.ets[f"tc{k}.bw"] = v
    for tc, prios in sorted(prios_of.items()):
        out.ets[f"tc{tc}.priorities"] = ",".join(map(str, prios))
    return out


_SIZE_RE = re.compile(r"^([0-9]+)([KMG]?)b$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def _size_bytes(text: str) -> int | None:
    # iproute2 prints sizes with print_size(): 10Kb = 10 KiB, 1Mb = 1 MiB (bytes, not bits).
    m = _SIZE_RE.match(text)
    if m is None:
        return parse_uint(text)
    n = parse_uint(m.group(1))
    size = n * _SIZE_MULT[m.group(2).upper()] if n is not None else None
    return size if size is not None and size <= U64_MAX else None


@dataclass(slots=True)
class DcbBuffer:
    """``dcb buffer show dev <dev>``: which buffer each priority uses, and the sizes."""

    prio_buffer: dict[int, int] = field(default_factory=dict)
    buffer_size: dict[int, int] = field(default_factory=dict)  # bytes
    total_size: int | None = None  # bytes
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def parse_dcb_buffer(text: str) -> DcbBuffer:
    """Parse ``prio-buffer 0:0 ...``, ``buffer-size 0:10Kb ...``, ``total-size 1222Kb``."""
    out = DcbBuffer()
    toks = _tokens(text)
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok == "total-size":
            out.total_size = _size_bytes(toks[i]) if i < len(toks) else None
            i += 1
            continue
        if tok not in ("prio-buffer", "buffer-size"):
            out.warnings.add(f"unexpected token {tok[:40]!r}")
            continue
        while i < len(toks) and (m := _PRIO_PAIR_RE.match(toks[i])):
            i += 1
            k = parse_uint(m.group(1))
            if k is None:
                continue
            if tok == "prio-buffer":
                if (buf := parse_uint(m.group(2))) is not None:
                    out.prio_buffer[k] = buf
            else:
                size = _size_bytes(m.group(2))
                if size is None:
                    out.warnings.add(f"bad buffer size {m.group(2)[:40]!r}")
                else:
                    out.buffer_size[k] = size
    return out
