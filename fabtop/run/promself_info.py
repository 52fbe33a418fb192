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

from collectors.samples import (
    HostSample,
    PcieLink,
    SoftwareVersions,
    ThunderboltInfo,
    ThunderboltPeer,
    VersionRead,
)
from fabtop.core.coverage import Gap, gap
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

    @property
    def qos_links(self) -> set[str]:
        """Links with a QoS fact here (a QosConfig is built for each)."""
        return {*self.dscp, *self.prio_buffer, *self.buffer_size}


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
    """File one of LINK_FAMILIES' values on link ``lid``; why not, when it cannot be."""
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
        sizes = info.buffer_size.setdefault(lid, {})
        if buf is None or len(sizes) >= MAX_BUFFERS:
            return "dropped (no buffer 0-255)"
        sizes[buf] = round(value)
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
