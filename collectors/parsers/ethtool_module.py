"""``ethtool -m <netdev>``: a pluggable module's diagnostics, as ethtool decodes them.

The probe sends the tool's text unchanged (it decodes nothing of the EEPROM); this reads
the lines of SFF-8472 (SFP), SFF-8636 (QSFP, QSFP28) and CMIS (QSFP-DD, OSFP) dumps into
a :class:`collectors.optics.ModuleDiag`. Every line is ``<name> : <value>`` (ethtool's
``sff-common.c``/``qsfp.c``/``cmis.c`` print them so; captures in tests/fixtures/optics).

What real modules do that must not become an alarm:

- thresholds all zero: the module has not implemented them (an AOC with ``0.000 mA`` ...
  everywhere): that quantity has no limits (None), never a limit of 0;
- a dark lane ``0.0000 mW / -inf dBm``: 0.0 mW, dark, not an error;
- rx power as OMA (``Receiver signal OMA(Channel N)``) instead of average power: said
  (``rx_power_kind = "oma"``), so it is never judged against another module's average;
- a passive cable (DAC) without diagnostics prints temperature ``0.00 degrees C`` and
  voltage ``0.0000 V``: not measured (None), never 0 °C;
- the per-lane signal flags (``Rx loss of signal : [ Yes, No, ... ]``, ``None`` when no
  lane has it) may name more lanes than the module measures (a CMIS module with two
  banks prints 16): a lane flagged and not measured is a lane with its flags only.

Unknown lines are ignored; a line whose number is bad costs that value, said in a warning;
text with no module line at all gives no module and one warning naming what it held.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collectors.numbers import parse_float
from collectors.optics import (
    BIAS_MA,
    QUANTITIES,
    RX_POWER_MW,
    SIGNAL_TEXT,
    TEMPERATURE_C,
    TX_POWER_MW,
    VOLTAGE_V,
    LaneOptics,
    Limits,
    ModuleDiag,
)
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_WARNINGS = 50  # a garbage capture must not turn into thousands of warning lines

_MAX_LINES = 4096  # a CMIS dump with every flag of 16 lanes is ~700 lines
_MAX_LANES = 32  # CMIS: two banks of 8 lanes each at most today (16); room beyond
_MAX_TEXT = 80  # vendor, part, serial, identifier: SFF fields are 16 characters

# "<name> : <value>": the name ends at the first colon followed by a blank (a value may
# hold colons: "00:02:c9", "10G Ethernet: 10G Base-LR").
_LINE = re.compile(r"\s*([^:]+?)\s*:(?:\s+(.*))?\Z")
# "... (Channel 3)", "...(Channel 3)", "... (Chan 3)": the lane, 1-based as printed.
_LANE = re.compile(r"\s*\(\s*chan(?:nel)?\s+([0-9]{1,3})\s*\)\s*")
_LIMIT = re.compile(r"(.+?) (high|low) (alarm|warning) threshold\Z")
_FLAG = re.compile(r"(.+?) (high|low) (alarm|warning)\Z")
_PAREN = re.compile(r"0x[0-9a-fA-F]+\s*\((.*)\)\s*\Z")
# "[ Yes, No, No, No ]": one word per lane, lane 1 first (ethtool's sff_show_lane_status)
_LANE_WORDS = re.compile(r"\[([A-Za-z ,]*)\]\Z")
_SIGNAL = {text: name for name, text in SIGNAL_TEXT.items()}

# The names ethtool gives each quantity, in measurements, limits and flags.
_QUANTITY = {
    "module temperature": TEMPERATURE_C,
    "module voltage": VOLTAGE_V,
    "laser bias current": BIAS_MA,
    "laser tx bias current": BIAS_MA,
    "laser output power": TX_POWER_MW,
    "laser tx power": TX_POWER_MW,
    "transmit avg optical power": TX_POWER_MW,
    "laser rx power": RX_POWER_MW,
    "rcvr signal avg optical power": RX_POWER_MW,
    "receiver signal average optical power": RX_POWER_MW,
    "receiver signal oma": RX_POWER_MW,
}
_LIMIT_FIELDS = {
    ("high", "alarm"): "high_alarm",
    ("high", "warning"): "high_warning",
    ("low", "warning"): "low_warning",
    ("low", "alarm"): "low_alarm",
}


@dataclass(slots=True)
class ModuleRead:
    """What one ``ethtool -m`` text said: the module (None: no module data) and warnings."""

    module: ModuleDiag | None
    warnings: list[str] = field(default_factory=list)


def parse_ethtool_module(text: str) -> ModuleRead:
    """The module diagnostics of one ``ethtool -m`` output; never raises."""
    m = ModuleDiag()
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    lanes: dict[int, dict[str, float | None]] = {}
    limits: dict[str, dict[str, float | None]] = {}
    flags: list[str] = []
    signals: dict[int, list[str]] = {}
    signals_read: list[str] = []
    seen = 0  # lines that were the module's
    no_diag = False
    first = ""
    for raw in text.splitlines()[:_MAX_LINES]:
        line = clean(raw)
        if not line.strip():
            continue
        first = first or line.strip()
        got = _LINE.fullmatch(line)
        if got is None:
            continue
        name, value = " ".join(got.group(1).lower().split()), (got.group(2) or "").strip()
        lane = None
        lm = _LANE.search(name)
        if lm is not None:
            lane = int(lm.group(1))
            name = (name[: lm.start()] + " " + name[lm.end() :]).strip()
        if _field(m, name, value):
            seen += 1
            continue
        if name == "optical diagnostics support":
            no_diag = value.lower() == "no"
            continue
        limit = _LIMIT.fullmatch(name)
        if limit is not None and limit.group(1) in _QUANTITY:
            seen += 1
            q = _QUANTITY[limit.group(1)]
            key = _LIMIT_FIELDS[(limit.group(2), limit.group(3))]
            limits.setdefault(q, {})[key] = _number(q, value, name, warnings)
            continue
        signal = _SIGNAL.get(name)
        if signal is not None:
            seen += 1
            raised = _lane_flags(value)
            if raised is None:
                warnings.add(f"{name}: bad value {value[:40]!r}")
            elif signal not in signals_read:
                signals_read.append(signal)
                for at in raised:
                    signals.setdefault(at, []).append(signal)
            continue
        flag = _FLAG.fullmatch(name)
        if flag is not None and flag.group(1) in _QUANTITY:
            seen += 1
            if value.lower() == "on":
                where = "" if lane is None else f" lane {lane}"
                flags.append(f"{_QUANTITY[flag.group(1)]} {flag.group(2)} {flag.group(3)}{where}")
            continue
        measured = _QUANTITY.get(name)
        if measured is None:
            continue
        q = measured
        seen += 1
        v = _number(q, value, name, warnings)
        if q == TEMPERATURE_C:
            m.temperature_c = v
        elif q == VOLTAGE_V:
            m.voltage_v = v
        else:
            if q == RX_POWER_MW:
                m.rx_power_kind = "oma" if "oma" in name else "average"
            at = 1 if lane is None else lane  # SFP: one lane, printed without a channel
            if 1 <= at <= _MAX_LANES:
                lanes.setdefault(at, {})[q] = v
    if not seen:
        what = f": {first[:80]!r}" if first else ": empty"
        return ModuleRead(None, [f"no module diagnostics in the output{what}"])
    if m.voltage_v == 0.0:  # no powered module reads 0 V: not monitored (a passive DAC)
        m.voltage_v = None
        if m.temperature_c == 0.0:
            m.temperature_c = None
    if no_diag:
        m.temperature_c = m.voltage_v = None
        lanes = {}
    for at in signals:
        lanes.setdefault(at, {})
    m.lanes = tuple(
        LaneOptics(
            n, v.get(BIAS_MA), v.get(TX_POWER_MW), v.get(RX_POWER_MW), tuple(signals.get(n, ()))
        )
        for n, v in sorted(lanes.items())
    )
    m.signals_read = tuple(signals_read)
    m.limits = {q: _limits(q, limits[q]) for q in QUANTITIES if q in limits}
    m.flags = tuple(flags)
    return ModuleRead(m, warnings)


def _field(m: ModuleDiag, name: str, value: str) -> bool:
    """An identity field of the module (identifier, vendor, part, serial, connector)."""
    if name == "identifier":
        inner = _PAREN.fullmatch(value)
        words = (inner.group(1) if inner else value).split()
        m.identifier = clean(words[0], _MAX_TEXT) if words else None
    elif name == "vendor name":
        m.vendor = clean(value, _MAX_TEXT) or None
    elif name == "vendor pn":
        m.part = clean(value, _MAX_TEXT) or None
    elif name == "vendor sn":
        m.serial = clean(value, _MAX_TEXT) or None
    elif name == "connector":
        inner = _PAREN.fullmatch(value)
        m.connector = clean(inner.group(1) if inner else value, _MAX_TEXT) or None
    else:
        return False
    return True


def _lane_flags(value: str) -> list[int] | None:
    """The lanes (1-based) a signal flag line raises: ``None`` -> none, ``[ Yes, No ]`` ->
    [1]; None when the value is neither (a bad line costs that flag, said)."""
    if value.lower() == "none":
        return []
    got = _LANE_WORDS.fullmatch(value)
    if got is None:
        return None
    words = [w.strip().lower() for w in got.group(1).split(",")]
    if not words or len(words) > _MAX_LANES or any(w not in ("yes", "no") for w in words):
        return None
    return [i for i, w in enumerate(words, 1) if w == "yes"]


def _number(q: str, value: str, name: str, warnings: WarningLines) -> float | None:
    """The value in the quantity's unit: the first number ("32.67 degrees C / 90.81
    degrees F", "0.7231 mW / -1.41 dBm", "6.750 mA"); a dark ``-inf dBm`` is 0 mW."""
    words = value.split()
    v = parse_float(words[0]) if words else None
    if v is None and q in (TX_POWER_MW, RX_POWER_MW) and "-inf dbm" in value.lower():
        return 0.0
    if v is None or (v < 0 and q in (TX_POWER_MW, RX_POWER_MW, BIAS_MA, VOLTAGE_V)):
        warnings.add(f"{name}: bad value {value[:40]!r}")
        return None
    return v


def _limits(q: str, got: dict[str, float | None]) -> Limits:
    """A quantity's limits: none when the module left them all zero (not implemented); a
    zero power, bias or voltage limit alone is none too (0 mW is -inf dBm: no limit)."""
    if all(not v for v in got.values()):
        return Limits()
    if q != TEMPERATURE_C:
        got = {k: (v if v else None) for k, v in got.items()}
    return Limits(**got)
