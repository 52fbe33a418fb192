"""``mlxlink -d <rdma device> -m -c --json`` (NVIDIA MFT): a port's module and its
physical-layer counters as the adapter firmware reports them (issue 33, opt-in source).

Read-only flags only: ``-m`` (module info) and ``-c`` (show counters); never ``--pc`` or
``--clear_histogram``, which clear what other tools read. A call costs about 0.8 s of
firmware access on a ConnectX-7 (mlxlink_exporter's measurement, tests/fixtures/optics/
SOURCES.md), so it belongs on a slow round, one port at a time.

Everything is under ``result.output.<section>``, every value a string: plain
(``"61 [-10..80]"``: the value, then the module's low..high thresholds), comma-joined per
lane (``"3.583,3.253 [-9.914..6.999]"``), or ``{"values": [...]}`` per lane. ``N/A`` is
missing, never 0. The thresholds in brackets are not taken as limits: the tool does not
say whether they are the alarm or the warning pair.

- ``Module Info`` -> :class:`collectors.optics.ModuleDiag`: identifier, vendor, part,
  serial, temperature, voltage (mV -> V), per-lane bias (mA), tx and rx power (dBm -> mW)
  and the per-lane flags (``Rx LOS``, ``Tx LOS``, ``Rx CDR LOL``, ``Tx CDR LOL``, ``Tx
  Fault``, ``Tx Adaptive EQ Fault``: ``"0"``/``"1"``) as :data:`collectors.optics.SIGNALS`.
- ``Physical Counters and BER Info`` -> cumulative counters since the port's counters were
  last cleared (``effective_physical_errors``, ``raw_physical_errors_lane<N>`` (0-based,
  the corrected bits per lane), ``link_down_counter``, ``link_error_recovery_counter``),
  the BERs the firmware computed over that span, and the span itself.

A bad value costs that value, said in a warning; a response that is not mlxlink's JSON, or
whose ``status.code`` is not 0, gives nothing and one warning with the tool's message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collectors.numbers import json_loads, parse_float, parse_uint
from collectors.optics import (
    RX_LOL,
    RX_LOS,
    TX_EQ_FAULT,
    TX_FAULT,
    TX_LOL,
    TX_LOS,
    LaneOptics,
    ModuleDiag,
)
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_WARNINGS = 50
_MAX_LANES = 16  # an OSFP/QSFP-DD port: 8 lanes; room beyond
_MAX_TEXT = 80


# The per-lane flags, as mlxlink names them (MFT 4.34.1), and the model's names.
_FLAGS = {
    "Rx LOS [per lane]": RX_LOS,
    "Tx LOS [per lane]": TX_LOS,
    "Rx CDR LOL [per lane]": RX_LOL,
    "Tx CDR LOL [per lane]": TX_LOL,
    "Tx Fault [per lane]": TX_FAULT,
    "Tx Adaptive EQ Fault [per lane]": TX_EQ_FAULT,
}
# Physical counters: mlxlink's name -> ours (cumulative since the last clear)
_COUNTERS = {
    "Effective Physical Errors": "effective_physical_errors",
    "Link Down Counter": "link_down_counter",
    "Link Error Recovery Counter": "link_error_recovery_counter",
}


@dataclass(slots=True)
class MlxlinkRead:
    """What one ``mlxlink --json`` said of a port (None / empty where it said nothing)."""

    module: ModuleDiag | None = None
    counters: dict[str, int] = field(default_factory=dict)
    raw_ber: float | None = None  # pre-FEC, over the span since the last clear
    effective_ber: float | None = None  # after FEC
    raw_ber_lanes: tuple[float | None, ...] = ()
    since_clear_s: float | None = None  # the span the counters and BERs cover
    fec: str | None = None  # "Standard_RS-FEC - (544,514)"
    recommendation: str | None = None  # the tool's troubleshooting line
    warnings: list[str] = field(default_factory=list)


def parse_mlxlink_json(text: str) -> MlxlinkRead:
    """One ``mlxlink ... --json`` response; never raises."""
    out = MlxlinkRead()
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    try:
        doc = json_loads(text)
    except ValueError:
        out.warnings = [f"not mlxlink JSON: {clean(text.strip()[:80])!r}"]
        return out
    status = doc.get("status") if isinstance(doc, dict) else None
    code = status.get("code") if isinstance(status, dict) else None
    if code != 0:
        msg = status.get("message") if isinstance(status, dict) else None
        said = clean(msg, _MAX_TEXT) if isinstance(msg, str) else "no status"
        out.warnings = [f"mlxlink status {code!r}: {said}"]
        return out
    result = doc.get("result")
    output = result.get("output") if isinstance(result, dict) else None
    if not isinstance(output, dict):
        out.warnings = ["mlxlink JSON without result.output"]
        return out
    mod = output.get("Module Info")
    if isinstance(mod, dict):
        out.module = _module(mod, warnings)
    phy = output.get("Physical Counters and BER Info")
    if isinstance(phy, dict):
        _physical(phy, out, warnings)
    op = output.get("Operational Info")
    if isinstance(op, dict):
        out.fec = _text(op.get("FEC"))
    trouble = output.get("Troubleshooting Info")
    if isinstance(trouble, dict):
        out.recommendation = _text(trouble.get("Recommendation"))
    out.warnings = list(warnings)
    return out


def _text(v: Any) -> str | None:
    if not isinstance(v, str) or v.strip() in ("", "N/A"):
        return None
    return clean(v, _MAX_TEXT) or None


def _value(v: str) -> str:
    """The value (or the lanes' values) before the thresholds: "61 [-10..80]" -> "61"."""
    s = v.strip()
    if s.endswith("]"):
        s = s[: max(0, s.rfind("["))].strip()  # a string search: linear on any text
    return s


def _number(name: str, v: Any, warnings: WarningLines) -> float | None:
    """A plain value ("61 [-10..80]" -> 61.0); None for N/A, a bad one said."""
    if not isinstance(v, str):
        return None
    s = _value(v)
    if s in ("", "N/A"):
        return None
    got = parse_float(s)
    if got is None:
        warnings.add(f"{name}: bad value {v[:40]!r}")
    return got


def _lanes(name: str, v: Any, warnings: WarningLines) -> list[float | None]:
    """Per-lane values, comma-joined ("1,2 [0..9]") or ``{"values": [...]}``."""
    if isinstance(v, dict):
        items = v.get("values")
        words = [w if isinstance(w, str) else "" for w in items] if isinstance(items, list) else []
    elif isinstance(v, str):
        words = _value(v).split(",")
    else:
        return []
    if len(words) > _MAX_LANES:
        warnings.add(f"{name}: {len(words)} lanes, more than {_MAX_LANES}")
        return []
    return [_number(name, w, warnings) if w.strip() != "N/A" else None for w in words]


def _mw(dbm: float | None) -> float | None:
    """A power in mW from dBm (mlxlink prints dBm only)."""
    return None if dbm is None else 10.0 ** (dbm / 10.0)


def _module(mod: dict[str, Any], warnings: WarningLines) -> ModuleDiag:
    m = ModuleDiag(
        identifier=_text(mod.get("Identifier")),
        vendor=_text(mod.get("Vendor Name")),
        part=_text(mod.get("Vendor Part Number")),
        serial=_text(mod.get("Vendor Serial Number")),
        temperature_c=_number("Temperature [C]", mod.get("Temperature [C]"), warnings),
    )
    mv = _number("Voltage [mV]", mod.get("Voltage [mV]"), warnings)
    m.voltage_v = None if mv is None else mv / 1000.0
    bias = _lanes("Bias Current [mA]", mod.get("Bias Current [mA]"), warnings)
    tx = [
        _mw(p)
        for p in _lanes("Tx Power Current [dBm]", mod.get("Tx Power Current [dBm]"), warnings)
    ]
    rx = [
        _mw(p)
        for p in _lanes("Rx Power Current [dBm]", mod.get("Rx Power Current [dBm]"), warnings)
    ]
    kind = _text(mod.get("Rx Power Type"))
    if rx and kind is not None:
        m.rx_power_kind = "oma" if "oma" in kind.lower() else "average"
    signals: dict[int, list[str]] = {}
    read: list[str] = []
    for key, flag in _FLAGS.items():
        got = mod.get(key)
        if not isinstance(got, dict):
            continue
        values = got.get("values")
        if not isinstance(values, list) or len(values) > _MAX_LANES:
            continue
        if any(v not in ("0", "1") for v in values):
            # All or nothing: a partly read family would give lanes the wrong flags.
            warnings.add(f"{key}: bad values {str(values)[:40]!r}")
            continue
        read.append(flag)
        for i, v in enumerate(values, 1):
            if v == "1":
                signals.setdefault(i, []).append(flag)
    n = max(len(bias), len(tx), len(rx), max(signals, default=0))
    m.lanes = tuple(
        LaneOptics(
            i,
            _at(bias, i),
            _at(tx, i),
            _at(rx, i),
            tuple(signals.get(i, ())),
        )
        for i in range(1, n + 1)
    )
    m.signals_read = tuple(read)
    return m


def _at(values: list[float | None], lane: int) -> float | None:
    return values[lane - 1] if lane <= len(values) else None


def _physical(phy: dict[str, Any], out: MlxlinkRead, warnings: WarningLines) -> None:
    for name, ours in _COUNTERS.items():
        v = phy.get(name)
        if isinstance(v, str) and v.strip() not in ("", "N/A"):
            got = parse_uint(v)
            if got is None:
                warnings.add(f"{name}: bad value {v[:40]!r}")
            else:
                out.counters[ours] = got
    lanes = phy.get("Raw Physical Errors Per Lane")
    values = lanes.get("values") if isinstance(lanes, dict) else None
    if isinstance(values, list) and len(values) <= _MAX_LANES:
        for i, v in enumerate(values):
            got = parse_uint(v) if isinstance(v, str) else None
            if got is not None:
                out.counters[f"raw_physical_errors_lane{i}"] = got
            elif v != "N/A":
                warnings.add(f"Raw Physical Errors Per Lane: bad value {str(v)[:40]!r}")
    out.raw_ber = _number("Raw Physical BER", phy.get("Raw Physical BER"), warnings)
    out.effective_ber = _number(
        "Effective Physical BER", phy.get("Effective Physical BER"), warnings
    )
    per_lane = phy.get("Raw Physical BER Per Lane")
    out.raw_ber_lanes = tuple(_lanes("Raw Physical BER Per Lane", per_lane, warnings))
    minutes = _number(
        "Time Since Last Clear [Min]", phy.get("Time Since Last Clear [Min]"), warnings
    )
    out.since_clear_s = None if minutes is None else minutes * 60.0
