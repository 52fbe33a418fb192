"""fabtop's info series read back: what a host's sample holds beyond its counters.

The half of fabtop/run/promself_series.py for the series fabtop/run/export_info.py
writes about configuration and identity: a link's PCIe, DSCP map and buffers, a host's
software versions, its Thunderbolt domain and cable ends, its GPUs' slow numbers and the
shard's own coverage gaps (its word wins over a recomputation from the rebuilt sample: the
shard saw what the sample here lacks). Pure: labels and values in, sample fields out; every
label through promself_series' checks (the caller's ``text``), every number checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from collectors.optics import SIGNALS, FecState, HealthReporter, LaneOptics, Limits, ModuleDiag
from collectors.samples import (
    HostSample,
    PcieLink,
    SoftwareVersions,
    ThunderboltInfo,
    ThunderboltPeer,
    VersionRead,
)
from fabtop.core.ber import BY_RATE_TIME, BY_RX_BITS, FROM_BITS, FROM_BITS_RX, BerNow
from fabtop.core.coverage import Gap, gap
from fabtop.run.export_cable import (
    CABLE_SCALES,
    COUNTED_FROM,
    LIMITS,
    MAX_FLAGS,
    MAX_LANES,
    MAX_REPORTERS,
)
from fabtop.run.export_info import GPU_NUMBERS

# Reads one label: its text, or None when absent or unusable (promself_series._label).
Text = Callable[[Mapping[str, object], str], "str | None"]

# fabtop_gpu_<info number> -> GpuSample field (export_info's table, read back).
GPU_INFO_NUMBERS: dict[str, str] = {m: f for f, m, _ in GPU_NUMBERS}
# The link families read here (the rest of fabtop_link_* is promself_series').
LINK_FAMILIES = frozenset(
    {
        "fabtop_link_pcie_transfers_per_second",
        "fabtop_link_pcie_lanes",
        "fabtop_link_dscp_map",
        "fabtop_link_priority_buffer",
        "fabtop_link_buffer_size_bytes",
    }
)
# A cable's series (fabtop/run/export_cable.py): their name in series -> (ModuleDiag
# quantity, the exporter's scale).
QUANTITY: dict[str, tuple[str, float]] = {n: (q, sc) for q, (n, sc) in CABLE_SCALES.items()}
CABLE_FAMILIES = frozenset(
    {
        "fabtop_link_module_info",
        "fabtop_link_module_temperature_celsius",
        "fabtop_link_module_voltage_volts",
        "fabtop_link_module_limit",
        "fabtop_link_module_flag_info",
        "fabtop_link_module_lane_signal_info",
        "fabtop_link_fec_info",
        "fabtop_link_health_reporter_info",
        "fabtop_link_health_reporter_errors_total",
        "fabtop_link_health_reporter_recovers_total",
        "fabtop_link_pre_fec_ber",
        "fabtop_link_pre_fec_ber_baseline",
        "fabtop_link_pre_fec_ber_trend_decades_per_hour",
    }
    | {f"fabtop_link_module_lane_{n}" for n in QUANTITY}
)
MODULE_INFO = ("identifier", "vendor", "part", "serial", "connector", "rx_power_kind")
# A Thunderbolt cable end's series, keyed by its port label.
PEER_FAMILIES = frozenset(
    {
        "fabtop_thunderbolt_peer_info",
        "fabtop_thunderbolt_lane_speed_bytes_per_second",
        "fabtop_thunderbolt_lanes",
        "fabtop_thunderbolt_link_speed_bytes_per_second",
    }
)
# SoftwareVersions' fields, as fabtop_software_version_info's software label names them.
SOFTWARE = ("kernel", "rdma_core", "ofed", "nvidia_driver", "nccl")
MAX_BUFFERS = 16  # as export_info exports them
MAX_UIDS = 8
MAX_PEERS = 64  # cable ends of one host (a Mac Studio has six receptacles)
MAX_GAPS = 32  # coverage gaps of one host (GAP_SOURCES has nine)


@dataclass(slots=True)
class OwnInfo:
    """One host's info series, gathered while its series are read."""

    pcie: dict[str, PcieLink] = field(default_factory=dict)  # link -> its PCIe
    dscp: dict[str, dict[int, int]] = field(default_factory=dict)  # link -> dscp -> priority
    prio_buffer: dict[str, dict[int, int]] = field(default_factory=dict)
    buffer_size: dict[str, dict[int, int]] = field(default_factory=dict)
    versions: dict[str, VersionRead] = field(default_factory=dict)
    probe: str | None = None
    tb: ThunderboltInfo | None = None
    tb_uids: list[str] = field(default_factory=list)
    tb_generation: int | None = None
    tb_peers: dict[str, ThunderboltPeer] = field(default_factory=dict)  # by port label
    gaps: list[Gap] = field(default_factory=list)
    modules: dict[str, OwnModule] = field(default_factory=dict)
    fec: dict[str, FecState] = field(default_factory=dict)
    health: dict[str, dict[tuple[str, str], dict[str, object]]] = field(default_factory=dict)
    ber: dict[str, dict[str, float | str]] = field(default_factory=dict)

    @property
    def qos_links(self) -> set[str]:
        """Links with a QoS fact here (a QosConfig is built for each)."""
        return {*self.dscp, *self.prio_buffer, *self.buffer_size}


@dataclass(slots=True)
class OwnModule:
    """One link's module diagnostics, gathered series by series."""

    texts: dict[str, str | None] = field(default_factory=dict)
    temperature_c: float | None = None
    voltage_v: float | None = None
    lanes: dict[int, dict[str, float]] = field(default_factory=dict)  # lane -> quantity
    signals: dict[int, list[str]] = field(default_factory=dict)  # lane -> flags raised
    signals_read: tuple[str, ...] = ()
    limits: dict[str, dict[str, float]] = field(default_factory=dict)  # quantity -> limit
    flags: list[str] = field(default_factory=list)

    def diag(self) -> ModuleDiag:
        t = self.texts
        return ModuleDiag(
            identifier=t.get("identifier"),
            vendor=t.get("vendor"),
            part=t.get("part"),
            serial=t.get("serial"),
            connector=t.get("connector"),
            temperature_c=self.temperature_c,
            voltage_v=self.voltage_v,
            lanes=tuple(
                LaneOptics(
                    n,
                    self.lanes.get(n, {}).get("bias_ma"),
                    self.lanes.get(n, {}).get("tx_power_mw"),
                    self.lanes.get(n, {}).get("rx_power_mw"),
                    tuple(x for x in SIGNALS if x in self.signals.get(n, ())),
                )
                for n in sorted(self.lanes.keys() | self.signals.keys())
            ),
            signals_read=self.signals_read,
            rx_power_kind=t.get("rx_power_kind"),
            limits={q: Limits(**lim) for q, lim in self.limits.items()},
            flags=tuple(self.flags),
        )


def _unscale(value: float, scale: float) -> float:
    """A value back in its unit: 1.5975 mW out as 0.0015975 W comes back 1.5975, not
    1.5974999999999999 (12 digits: more than any tool prints)."""
    return value if scale == 1.0 else float(f"{value / scale:.12g}")


def _int(v: str | None, most: int) -> int | None:
    return int(v) if v is not None and v.isascii() and v.isdigit() and int(v) <= most else None


def parse_dscp(text: str) -> list[int] | None:
    """``0-7,46`` (export_info.dscp_text) back to DSCP values; None when it is not one."""
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        a, b = _int(lo, 63), _int(hi, 63) if sep else _int(lo, 63)
        if a is None or b is None or b < a:
            return None
        out.extend(range(a, b + 1))
    return out


def place_link(
    info: OwnInfo, lid: str, name: str, labels: Mapping[str, object], value: float, text: Text
) -> str | None:
    """File one of LINK_FAMILIES' or CABLE_FAMILIES' values on link ``lid``; why not, when
    it cannot be."""
    if name in CABLE_FAMILIES:
        return _cable(info, lid, name, labels, value, text)
    if name in ("fabtop_link_pcie_transfers_per_second", "fabtop_link_pcie_lanes"):
        bound = text(labels, "bound")
        if bound not in ("current", "max"):
            return "dropped (no bound current or max)"
        pc = info.pcie.setdefault(lid, PcieLink())
        if name == "fabtop_link_pcie_lanes":
            setattr(pc, "width" if bound == "current" else "max_width", round(value))
        else:  # exported in transfers per second, kept in GT/s
            setattr(pc, "speed_gts" if bound == "current" else "max_speed_gts", value / 1e9)
        return None
    prio = _int(text(labels, "priority"), 7)
    if name == "fabtop_link_buffer_size_bytes":
        buf = _int(text(labels, "buffer"), 255)
        sizes = info.buffer_size.get(lid, {})
        if buf is None or len(sizes) >= MAX_BUFFERS:
            return "dropped (no buffer 0-255)"
        info.buffer_size[lid] = {**sizes, buf: round(value)}
        return None
    if prio is None:
        return "dropped (no priority 0-7)"
    if name == "fabtop_link_priority_buffer":
        info.prio_buffer.setdefault(lid, {})[prio] = round(value)
        return None
    dscps = parse_dscp(text(labels, "dscp") or "")
    if dscps is None:
        return "dropped (no dscp list)"
    info.dscp.setdefault(lid, {}).update(dict.fromkeys(dscps, prio))
    return None


def _cable(
    info: OwnInfo, lid: str, name: str, labels: Mapping[str, object], value: float, text: Text
) -> str | None:
    if name.startswith("fabtop_link_module_"):
        # a module comes to be with its first usable value (never from a dropped one)
        m = info.modules.get(lid) or OwnModule()
        if name == "fabtop_link_module_info":
            m.texts = {k: text(labels, k) for k in MODULE_INFO}
            said = (text(labels, "signals_read") or "").split(",")
            m.signals_read = tuple(x for x in SIGNALS if x in said)  # known words only
        elif name == "fabtop_link_module_temperature_celsius":
            m.temperature_c = value
        elif name == "fabtop_link_module_voltage_volts":
            m.voltage_v = value
        elif name == "fabtop_link_module_flag_info":
            flag = text(labels, "flag")
            if flag is not None and len(m.flags) < MAX_FLAGS:
                m.flags.append(flag)
        elif name == "fabtop_link_module_limit":
            q, which = QUANTITY.get(text(labels, "quantity") or ""), text(labels, "limit")
            if q is None or which not in LIMITS:
                return "dropped (no known quantity and limit)"
            m.limits.setdefault(q[0], {})[which] = _unscale(value, q[1])
        elif name == "fabtop_link_module_lane_signal_info":
            lane, sig = _int(text(labels, "lane"), 16), text(labels, "signal")
            if lane is None or sig not in SIGNALS:
                return "dropped (no lane 0-16 and known signal)"
            if lane in m.signals or len(m.signals) < MAX_LANES:
                m.signals.setdefault(lane, []).append(sig)
        else:  # a lane's bias or power
            q = QUANTITY.get(name.removeprefix("fabtop_link_module_lane_"))
            lane = _int(text(labels, "lane"), 16)
            if q is None or lane is None or (lane not in m.lanes and len(m.lanes) >= MAX_LANES):
                return "dropped (no lane 0-16)"
            m.lanes.setdefault(lane, {})[q[0]] = _unscale(value, q[1])
        info.modules[lid] = m
        return None
    if name == "fabtop_link_fec_info":
        hist = {"yes": True, "no": False}.get(text(labels, "histogram") or "")
        modes = tuple(x for x in (text(labels, "configured") or "").split(",") if x)
        info.fec[lid] = FecState(modes, text(labels, "active"), hist)
        return None
    if name.startswith("fabtop_link_health_reporter_"):
        device, reporter = text(labels, "device"), text(labels, "reporter")
        reporters = info.health.get(lid, {})
        key = (device or "", reporter or "")
        if reporter is None or (key not in reporters and len(reporters) >= MAX_REPORTERS):
            return "dropped (no reporter)"
        info.health[lid] = reporters
        r = reporters.setdefault(key, {"device": key[0], "name": reporter})
        if name.endswith("_info"):
            r["state"], r["last_dump"] = text(labels, "state"), text(labels, "last_dump")
            r["auto_recover"] = {"true": True, "false": False}.get(
                text(labels, "auto_recover") or ""
            )
        elif 0 <= value <= 2**63:
            r["error" if name.endswith("_errors_total") else "recover"] = round(value)
        return None
    ber = info.ber.setdefault(lid, {})  # the pre-FEC BER as the shard measured it
    if name.endswith("_decades_per_hour"):
        ber["decades_per_h"] = value
    else:
        ber["before" if name.endswith("_baseline") else "ber"] = value
        ber["counted_from"] = _FROM_LABEL.get(text(labels, "counted_from") or "", FROM_BITS)
    return None


_FROM_LABEL = {v: k for k, v in COUNTED_FROM.items()}  # the label back to ber's sentence


def bers(info: OwnInfo) -> dict[str, BerNow]:
    """Each link's pre-FEC BER as its shard measured it (fabtop.core.rules.link_ber)."""
    out = {}
    for lid, b in info.ber.items():
        num = {k: v for k, v in b.items() if isinstance(v, float)}
        counted = str(b.get("counted_from", FROM_BITS))
        out[lid] = BerNow(
            num.get("ber"),
            num.get("before"),
            num.get("decades_per_h"),
            counted,
            BY_RX_BITS if counted == FROM_BITS_RX else BY_RATE_TIME,
        )
    return out


def place_host(
    info: OwnInfo, name: str, labels: Mapping[str, object], value: float, text: Text
) -> str | None:
    """File one host-level info value (versions, Thunderbolt, coverage gaps)."""
    if name == "fabtop_software_version_info":
        software, source = text(labels, "software"), text(labels, "source") or ""
        if software == "probe":
            info.probe = text(labels, "version")
        elif software in SOFTWARE:
            info.versions[software] = VersionRead(
                text(labels, "version"), source, text(labels, "note")
            )
        return None
    if name == "fabtop_coverage_gap":
        got = gap(
            text(labels, "source") or "", text(labels, "reason") or "", text(labels, "detail") or ""
        )
        if got is None:
            return "dropped (a source this fabtop does not know)"
        if len(info.gaps) < MAX_GAPS:
            info.gaps.append(got)
        return None
    return _thunderbolt(info, name, labels, value, text)


def _thunderbolt(
    info: OwnInfo, name: str, labels: Mapping[str, object], value: float, text: Text
) -> str | None:
    if name == "fabtop_thunderbolt_domain_info":
        info.tb = ThunderboltInfo(text(labels, "source") or "", text(labels, "self_uid"))
        return None
    if name == "fabtop_thunderbolt_generation":
        info.tb_generation = round(value)
        return None
    if name == "fabtop_thunderbolt_domain_uid_info":
        uid = text(labels, "uid")
        if uid is not None and len(info.tb_uids) < MAX_UIDS:
            info.tb_uids.append(uid)
        return None
    if name not in PEER_FAMILIES:
        return None  # fabtop_thunderbolt_cable_info: the reader pairs the ends itself
    port = text(labels, "port")
    if port is None:
        return "dropped (no port label)"
    p = info.tb_peers.get(port)
    if p is None:
        if len(info.tb_peers) >= MAX_PEERS:
            return "dropped (too many cable ends)"
        p = info.tb_peers[port] = ThunderboltPeer(port=port)
    direction = text(labels, "direction") or text(labels, "bound")
    if name == "fabtop_thunderbolt_peer_info":
        p.netdev, p.self_uid = text(labels, "netdev"), text(labels, "self_uid")
        p.peer_uid, p.peer_name = text(labels, "peer_uid"), text(labels, "peer_name")
        if p.port == p.netdev:
            p.port = None  # exported by its netdev: the source named no port
    elif name == "fabtop_thunderbolt_lane_speed_bytes_per_second" and direction:
        # exported in bytes per second, kept in Gb/s
        _set(
            p,
            {"rx": "rx_gbps_per_lane", "tx": "tx_gbps_per_lane", "max": "max_gbps_per_lane"},
            direction,
            value * 8 / 1e9,
        )
    elif name == "fabtop_thunderbolt_lanes" and direction:
        _set(p, {"rx": "rx_lanes", "tx": "tx_lanes", "max": "max_lanes"}, direction, round(value))
    elif name == "fabtop_thunderbolt_link_speed_bytes_per_second" and direction:
        _set(p, {"current": "link_gbps", "max": "max_link_gbps"}, direction, value * 8 / 1e9)
    return None


def _set(p: ThunderboltPeer, fields: Mapping[str, str], key: str, value: float) -> None:
    if key in fields:
        setattr(p, fields[key], value)


def finish(info: OwnInfo, s: HostSample) -> None:
    """Put what the info series said into the host's sample (its links already built)."""
    for lid, pc in info.pcie.items():
        if lid in s.links:
            s.links[lid].pcie = pc
    for lid, m in info.modules.items():
        if lid in s.links:
            s.links[lid].module = m.diag()
    for lid, fec in info.fec.items():
        if lid in s.links:
            s.links[lid].fec = fec
    for lid, reporters in info.health.items():
        if lid in s.links:
            s.links[lid].health = tuple(HealthReporter(**r) for r in reporters.values())  # type: ignore[arg-type]
    if info.versions:
        s.versions = SoftwareVersions(**info.versions)
    s.probe = info.probe
    if info.tb is not None:
        tb = info.tb
        tb.generation = info.tb_generation
        tb.domain_uids = tuple(info.tb_uids)
        # the exporter's order is the source's: peers by port label keep it stable
        tb.peers = list(info.tb_peers.values())
        s.thunderbolt = tb
