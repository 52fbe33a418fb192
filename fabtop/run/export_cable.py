"""A cable's own health as Prometheus series (issue 33 item 6; docs/EXPORT.md).

Per link, where the node's tools read them (slow cadence, collectors/optics.py): the
module's diagnostics (temperature, voltage, per lane bias, tx and rx power, the module's
own limits and the flags it raises), the FEC mode, the NIC's devlink health reporters and
the pre-FEC BER the cable rules measure (fabtop.core.rules.link_ber). The FEC's block
counters are normalized counters and go out with every other (``fabtop_link_fec_*_total``).

Numbers are values in base units (amperes, watts, volts); labels are bounded: ``lane`` the
module's lane number (1-8 as the tools print it, at most :data:`MAX_LANES` lanes),
``quantity`` and ``limit`` fabtop's own words, ``reporter`` and ``device`` through
export_info.label. :data:`CABLE_SCALES` is the one table of names and scales, read back by
fabtop/run/promself_info.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from collectors.optics import (
    BIAS_MA,
    RX_POWER_MW,
    SIGNALS,
    TEMPERATURE_C,
    TX_POWER_MW,
    VOLTAGE_V,
)
from collectors.samples import LinkSample
from fabtop.core.ber import FROM_BITS, FROM_BITS_RX, FROM_BLOCKS, FROM_MLXLINK
from fabtop.core.rules import link_ber
from fabtop.core.state import FabricState
from fabtop.run.export_info import add_sample, label

MAX_LANES = 8  # an OSFP/QSFP-DD module has 8; more is no module
MAX_FLAGS = 64  # 5 quantities x 4 limits, per lane for three of them
MAX_REPORTERS = 16  # a ConnectX port's device has 5-6 (tx, rx, fw, fw_fatal, vnic)

# ModuleDiag's quantity -> (its name in series, the scale to base units).
CABLE_SCALES: dict[str, tuple[str, float]] = {
    TEMPERATURE_C: ("temperature_celsius", 1.0),
    VOLTAGE_V: ("voltage_volts", 1.0),
    BIAS_MA: ("bias_amperes", 1e-3),
    TX_POWER_MW: ("tx_power_watts", 1e-3),
    RX_POWER_MW: ("rx_power_watts", 1e-3),
}
LANE_QUANTITIES = (BIAS_MA, TX_POWER_MW, RX_POWER_MW)
LIMITS = ("high_alarm", "high_warning", "low_warning", "low_alarm")
# What a BER was counted from, as a label (fabtop.core.ber's FROM_*: sentences).
# The read-back (fabtop/run/promself_info.py) maps them back.
COUNTED_FROM = {
    FROM_BITS: "corrected_bits",  # over negotiated rate x time up
    FROM_BITS_RX: "corrected_bits_over_rx_bits",  # over the bits the port received
    FROM_BLOCKS: "corrected_blocks",  # x 1 bit over rate x time: a lower bound
    FROM_MLXLINK: "mlxlink_corrected_bits",  # mlxlink's per-lane raw errors over rate x time
}


def _g(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=["host", "link", *labels])


class _Cable:
    def __init__(self) -> None:
        self.module = _g(
            "fabtop_link_module_info",
            "1 per link with module diagnostics: what the module is, and which loss-of-signal/"
            "lock and fault flags it reports at all (signals_read, comma-separated)",
            "identifier", "vendor", "part", "serial", "connector", "rx_power_kind",
            "signals_read",
        )  # fmt: skip
        self.signal = _g(
            "fabtop_link_module_lane_signal_info",
            "1 per loss-of-signal/lock or fault flag a lane raised since the module's "
            "previous read (latched in the module)",
            "lane", "signal",
        )  # fmt: skip
        self.temp = _g("fabtop_link_module_temperature_celsius", "Module temperature")
        self.volt = _g("fabtop_link_module_voltage_volts", "Module supply voltage")
        self.lane = {
            q: _g(f"fabtop_link_module_lane_{CABLE_SCALES[q][0]}", f"Module lane {h}", "lane")
            for q, h in (
                (BIAS_MA, "laser bias"),
                (TX_POWER_MW, "tx power"),
                (RX_POWER_MW, "rx power"),
            )
        }
        self.limit = _g(
            "fabtop_link_module_limit",
            "The module's own alarm and warning limits (quantity names its base unit)",
            "quantity", "limit",
        )  # fmt: skip
        self.flag = _g(
            "fabtop_link_module_flag_info",
            "1 per alarm or warning flag the module raises ('rx_power_mw low alarm lane 2')",
            "flag",
        )  # fmt: skip
        self.fec = _g(
            "fabtop_link_fec_info",
            "1 per link with FEC read: the modes configured, the active one, and whether the "
            "node gives the FEC histogram (yes, no; '' not asked)",
            "configured", "active", "histogram",
        )  # fmt: skip
        hr = ("device", "reporter")
        self.health = _g(
            "fabtop_link_health_reporter_info",
            "1 per devlink health reporter of the link's device: its state",
            *hr, "state", "auto_recover", "last_dump",
        )  # fmt: skip
        self.errors = CounterMetricFamily(
            "fabtop_link_health_reporter_errors",
            "Errors the reporter saw",
            labels=["host", "link", *hr],
        )
        self.recovers = CounterMetricFamily(
            "fabtop_link_health_reporter_recovers",
            "Recoveries the reporter ran",
            labels=["host", "link", *hr],
        )
        self.ber = _g(
            "fabtop_link_pre_fec_ber",
            "Pre-FEC bit error rate over the last ber_window_s, as the cable rules measure it "
            "(counted_from: corrected_bits over rate x time, corrected_bits_over_rx_bits, "
            "mlxlink_corrected_bits over rate x time, "
            "or corrected_blocks x 1 bit, a lower bound)",
            "counted_from",
        )  # fmt: skip
        self.ber_before = _g(
            "fabtop_link_pre_fec_ber_baseline",
            "Pre-FEC BER over the first window kept (the link's baseline)",
            "counted_from",
        )  # fmt: skip
        self.ber_trend = _g(
            "fabtop_link_pre_fec_ber_trend_decades_per_hour",
            "How many decades the pre-FEC BER moved per hour from its baseline",
        )

    def all(self) -> list[Metric]:
        return [v for v in vars(self).values() if isinstance(v, Metric)] + list(self.lane.values())


def _link(f: _Cable, st: FabricState, host: str, lid: str, link: LinkSample) -> None:
    lab = [label(host), label(lid)]
    m = link.module
    if m is not None:
        f.module.add_metric(
            [
                *lab,
                *map(
                    label, (m.identifier, m.vendor, m.part, m.serial, m.connector, m.rx_power_kind)
                ),
                ",".join(x for x in SIGNALS if x in m.signals_read),  # fixed words only
            ],
            1.0,
        )
        add_sample(f.temp, lab, m.temperature_c, priority=False)
        add_sample(f.volt, lab, m.voltage_v, priority=False)
        for ln in {ln.lane: ln for ln in m.lanes[:MAX_LANES]}.values():  # one series a lane
            for q in LANE_QUANTITIES:
                add_sample(
                    f.lane[q], [*lab, str(ln.lane)], getattr(ln, q), CABLE_SCALES[q][1], False
                )
            for sig in SIGNALS:
                if sig in ln.signals:
                    f.signal.add_metric([*lab, str(ln.lane), sig], 1.0)
        for q, lim in m.limits.items():
            if q in CABLE_SCALES:
                name, scale = CABLE_SCALES[q]
                for which in LIMITS:
                    add_sample(f.limit, [*lab, name, which], getattr(lim, which), scale, False)
        for flag in dict.fromkeys(m.flags[:MAX_FLAGS]):
            f.flag.add_metric([*lab, label(flag)], 1.0)
    fec = link.fec
    if fec is not None:
        hist = {True: "yes", False: "no", None: ""}[fec.histogram]
        f.fec.add_metric([*lab, label(",".join(fec.configured)), label(fec.active), hist], 1.0)
    reporters = {(r.device, r.name): r for r in (link.health or ())[:MAX_REPORTERS]}
    for r in reporters.values():
        rl = [*lab, label(r.device), label(r.name)]
        auto = {True: "true", False: "false", None: ""}[r.auto_recover]
        f.health.add_metric([*rl, label(r.state), auto, label(r.last_dump)], 1.0)
        add_sample(f.errors, rl, r.error, priority=False)
        add_sample(f.recovers, rl, r.recover, priority=False)
    ber = link_ber(st, host, lid)
    if ber is not None:
        counted = COUNTED_FROM.get(ber.counted_from, "corrected_bits")
        add_sample(f.ber, [*lab, counted], ber.ber, priority=False)
        add_sample(f.ber_before, [*lab, counted], ber.before, priority=False)
        add_sample(f.ber_trend, lab, ber.decades_per_h, priority=False)


def cable_families(st: FabricState) -> Iterator[Metric]:
    """Every cable family of one scrape (the ones with samples)."""
    f = _Cable()
    for host, hs in st.hosts.items():
        if hs.sample is not None:
            for lid, link in hs.sample.links.items():
                _link(f, st, host, lid, link)
    yield from (fam for fam in f.all() if fam.samples)
