"""A cable's own health, as the node's tools read it at slow cadence (issue 33).

- :class:`ModuleDiag`: the pluggable module's diagnostics (``ethtool -m <netdev>``):
  temperature, supply voltage, per lane laser bias, tx and rx power, and the module's own
  alarm and warning limits and flags.
  Its per-lane loss-of-signal, loss-of-lock and tx-fault flags are on each lane
  (:attr:`LaneOptics.signals`, latched: see :data:`SIGNALS`).
- :class:`FecState`: the FEC mode (``ethtool --show-fec``). The FEC and physical error
  *counters* are cumulative and go where every counter goes (``LinkSample.counters`` under
  their source, normalized in :class:`collectors.vocabulary.Metric`), so rates, history,
  export and diff take them like any other.
- :class:`HealthReporter`: one of the NIC's devlink health reporters (``devlink -j health
  show``): its state and its error and recovery counts.

Missing is ``None``, never 0. A power is kept in milliwatts: a dark lane is 0.0 mW (the
tools print ``-inf dBm`` for it), which needs no special float; dBm is computed for display.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# The quantities a module reports, and the keys of ModuleDiag.limits.
TEMPERATURE_C, VOLTAGE_V, BIAS_MA, TX_POWER_MW, RX_POWER_MW = (
    "temperature_c",
    "voltage_v",
    "bias_ma",
    "tx_power_mw",
    "rx_power_mw",
)
QUANTITIES: tuple[str, ...] = (TEMPERATURE_C, VOLTAGE_V, BIAS_MA, TX_POWER_MW, RX_POWER_MW)

# The per-lane signal flags a module raises (SFF-8636 bytes 3-5, CMIS page 11h), as ethtool
# prints them ("Rx loss of signal : [ Yes, No, No, No ]", or "None" when no lane has it)
# since its 2023 patches "sff-8636: report LOL / LOS / Tx Fault" and "cmis: report LOL /
# LOS / Tx Fault" (captures in tests/fixtures/optics/SOURCES.md). They are *latched*: set
# when the condition happened since the flags were last read, and cleared by that read, so
# a flag says "since the previous read", and the first read's flags are of unknown age.
RX_LOS, TX_LOS, RX_LOL, TX_LOL, TX_FAULT, TX_EQ_FAULT = (
    "rx_los",
    "tx_los",
    "rx_lol",
    "tx_lol",
    "tx_fault",
    "tx_eq_fault",
)
SIGNALS: tuple[str, ...] = (RX_LOS, TX_LOS, RX_LOL, TX_LOL, TX_FAULT, TX_EQ_FAULT)
SIGNAL_TEXT = {
    RX_LOS: "rx loss of signal",
    TX_LOS: "tx loss of signal",
    RX_LOL: "rx loss of lock",
    TX_LOL: "tx loss of lock",
    TX_FAULT: "tx fault",
    TX_EQ_FAULT: "tx adaptive eq fault",
}


def dbm(mw: float | None) -> float | None:
    """A power in dBm; ``-inf`` for a dark lane (0 mW); None when not known."""
    if mw is None or mw < 0:
        return None
    return -math.inf if mw == 0 else 10.0 * math.log10(mw)


@dataclass(slots=True, frozen=True)
class Limits:
    """The module's own alarm and warning limits for one quantity (in its unit).

    None where the module does not say: a module whose limits are all zero has not
    implemented them, and the parser gives None for each, never a limit of 0.
    """

    high_alarm: float | None = None
    high_warning: float | None = None
    low_warning: float | None = None
    low_alarm: float | None = None


@dataclass(slots=True, frozen=True)
class LaneOptics:
    """One lane (channel) of a module, 1-based as the tools print it."""

    lane: int
    bias_ma: float | None = None
    tx_power_mw: float | None = None
    rx_power_mw: float | None = None
    signals: tuple[str, ...] = ()  # the SIGNALS the module raised on this lane


@dataclass(slots=True)
class ModuleDiag:
    """A pluggable module's diagnostics at one read."""

    identifier: str | None = None  # "QSFP28", "QSFP-DD", "OSFP", "SFP" as the tool says
    vendor: str | None = None
    part: str | None = None
    serial: str | None = None
    connector: str | None = None  # "MPO 1x12", "No separable connector" (a DAC) ...
    temperature_c: float | None = None
    voltage_v: float | None = None
    lanes: tuple[LaneOptics, ...] = ()
    # "average" or "oma": what the module's rx power is (some report optical modulation
    # amplitude, which is not comparable to an average-power limit of another module).
    rx_power_kind: str | None = None
    limits: dict[str, Limits] = field(default_factory=dict)  # QUANTITIES -> its limits
    # Alarm and warning flags the module raises, as "<quantity> <high|low> <alarm|warning>"
    # with " lane N" for a per-lane one, e.g. "rx_power_mw low alarm lane 2".
    flags: tuple[str, ...] = ()
    # The SIGNALS the module reports at all (a "None" line too: no lane raised it); a flag
    # not here is not known, which is not the same as clear.
    signals_read: tuple[str, ...] = ()
    read_ns: int | None = None  # node time of the read


@dataclass(slots=True)
class FecState:
    """The FEC the port runs, as ``ethtool --show-fec`` says."""

    configured: tuple[str, ...] = ()  # "Auto", "RS", "BaseR", "Off", "LLRS"
    active: str | None = None  # None: not said (link down, or the driver does not tell)
    # Whether the node's ethtool and kernel give the FEC error histogram (``ethtool -j -I
    # --show-fec``: Linux 6.18 and a recent ethtool); None when not asked. Its bins are
    # counters (LinkSample.counters["fec"] "hist_bin_<n>").
    histogram: bool | None = None


@dataclass(slots=True, frozen=True)
class HealthReporter:
    """One devlink health reporter of a NIC (``devlink -j health show``)."""

    device: str  # "pci/0000:08:00.0" or "pci/0000:08:00.0/65535" (a port's reporter)
    name: str  # "tx", "rx", "fw", "fw_fatal", "vnic" ...
    state: str | None = None  # "healthy" or "error"
    error: int | None = None  # cumulative
    recover: int | None = None  # cumulative
    last_dump: str | None = None  # as the tool says ("2026-12-04 03:12:09"), None if none
    auto_recover: bool | None = None
