"""Turn a macOS probe frame (collectors/probe_darwin.zsh) into a HostSample.

Why not through assemble's per-host shape: every Darwin section is plain text, the
per-tick one (``netstat_i``) changes every tick, and nothing of the Linux link merging
(sysfs, gid_attrs, ethtool) applies. So a Darwin frame is read here, section by section,
each behind its own guard, the slow sections through the ``read`` the assembler gives
(which keeps each carried section's parse: they repeat for a minute) and the netstat
text anew each tick. One path builds every Darwin sample.

Sections (docs: collectors/probe_darwin.zsh): per tick ``netstat_i`` (``netstat -ibdn``),
``macmon`` (one ``macmon pipe`` line, where macmon exists); slow ``ibv_devinfo``,
``rdma_ctl``, ``sp_thunderbolt``, ``hwports``, ``ifconfig``, ``pmset_therm``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

from collectors.frames import Frame, Section, TextRead, read_now
from collectors.normalize import normalize_netdev
from collectors.parsers.macos_ifconfig import IfconfigResult, parse_ifconfig
from collectors.parsers.macos_netstat import netdev_statistics, parse_netstat_ibdn
from collectors.parsers.macos_networksetup import HardwarePorts, parse_hardware_ports
from collectors.parsers.macos_rdma import IbvResult, parse_ibv_devinfo, parse_rdma_ctl
from collectors.parsers.macos_thermal import parse_macmon, parse_pmset_therm
from collectors.parsers.macos_thunderbolt import TbResult, parse_sp_thunderbolt, thunderbolt_info
from collectors.samples import (
    GidEntry,
    GpuSample,
    HostSample,
    LinkSample,
    MacosInfo,
    SectionStatus,
)
from collectors.text import clean

# The section every Darwin frame has: how assemble knows a frame is one.
TICK_KIND = "netstat_i"
DARWIN_SLOW_KINDS = frozenset(
    {"ibv_devinfo", "rdma_ctl", "sp_thunderbolt", "hwports", "ifconfig", "pmset_therm"}
)
# Formats read from documentation only (no public capture): said in doctor and the host
# detail. ibv_devinfo's GID lines on macOS (rdma-core's format, as on Linux).
UNVERIFIED_GIDS = "ibv_devinfo -v GID lines (macOS: documented, never captured)"
# macmon's JSON as its README shows it (the only public sample found is that example).
UNVERIFIED_MACMON = "macmon pipe JSON (from its README's example only)"


class Warn(Protocol):
    def add(self, kind: str, subject: str | None, messages: list[str]) -> None: ...


# LinkSample.state of a Mac's Thunderbolt receptacle with no cable (system_profiler lists
# nothing on it, ifconfig says inactive).
EMPTY = "empty"


def _text(frame: Frame, kind: str) -> Section | None:
    for s in frame.all(kind):
        if s.schema is None and s.text.strip():
            return s
    return None


def _guarded(warn: Warn, kind: str, fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:
        warn.add(kind, None, [f"error: {type(exc).__name__}: {str(exc)[:120]}"])


def assemble_darwin(
    frame: Frame, sample: HostSample, warn: Warn, read: TextRead = read_now
) -> None:
    """Fill ``sample`` from a Darwin frame; never raises.

    ``read``: how a slow section's text is parsed (the assembler keeps each carried one's).
    """
    sample.sections = [
        SectionStatus(s.kind, s.subject, s.status, s.read_ns, s.detail) for s in frame.sections
    ]
    mac = sample.macos = MacosInfo()
    ports = HardwarePorts()
    ifc = IfconfigResult()
    ibv: IbvResult | None = None
    tb: TbResult | None = None

    def read_ports() -> None:
        nonlocal ports
        s = _text(frame, "hwports")
        if s is not None:
            ports = read(parse_hardware_ports, s)
            warn.add(s.kind, None, ports.warnings)
            mac.thunderbolt_ports = tuple(sorted(ports.thunderbolt))

    def read_ifconfig() -> None:
        nonlocal ifc
        s = _text(frame, "ifconfig")
        if s is not None:
            ifc = read(parse_ifconfig, s)
            mac.bridges = {n: tuple(i.members) for n, i in ifc.interfaces.items() if i.members}

    def read_rdma() -> None:
        nonlocal ibv
        s = _text(frame, "rdma_ctl")
        if s is not None:
            mac.rdma_ctl = read(parse_rdma_ctl, s)
        s = next(iter(frame.all("ibv_devinfo")), None)
        if s is not None and s.status in ("ok", "truncated", "error"):
            ibv = read(parse_ibv_devinfo, s)
            warn.add(s.kind, None, ibv.warnings)
            if s.status != "error" or ibv.no_devices or ibv.devices:
                mac.rdma_devices = tuple(sorted(ibv.devices))

    def read_tb() -> None:
        nonlocal tb
        s = _text(frame, "sp_thunderbolt")
        if s is not None:
            tb = read(parse_sp_thunderbolt, s)
            warn.add(s.kind, None, tb.warnings)

    def read_thermal() -> None:
        s = _text(frame, "macmon")
        if s is not None and s.status in ("ok", "truncated"):
            mm = parse_macmon(s.text)
            warn.add(s.kind, None, mm.warnings)
            if mm.cpu_temp_c is not None or mm.gpu_util_pct is not None:
                mac.thermal_source = "macmon"
                mac.cpu_temp_c = mm.cpu_temp_c
                sample.gpus = [
                    GpuSample(
                        index=0,
                        name=mm.chip,
                        vendor="apple",
                        utilization_pct=mm.gpu_util_pct,
                        temperature_c=mm.gpu_temp_c,
                        power_w=mm.gpu_power_w,
                        sm_clock_mhz=mm.gpu_mhz,
                    )
                ]
                sample.gpu_read_ns = s.read_ns
                return
        s = _text(frame, "pmset_therm")
        if s is not None:
            mac.thermal_source = "pmset"
            mac.thermal_pressure, mac.cpu_speed_limit_pct = read(parse_pmset_therm, s)
            if mac.thermal_pressure is None:
                warn.add(s.kind, None, ["thermal state not understood: unknown"])

    for kind, fn in (
        ("hwports", read_ports),
        ("ifconfig", read_ifconfig),
        ("rdma", read_rdma),
        ("sp_thunderbolt", read_tb),
        ("thermal", read_thermal),
    ):
        _guarded(warn, kind, fn)
    _guarded(warn, TICK_KIND, lambda: _links(frame, sample, ports, ifc, ibv, warn))
    if tb is not None:
        tbr = tb

        def fill_tb() -> None:
            by_rec = {}
            for n in range(1, 17):
                d = ports.device_of_receptacle(n)
                if d is not None:
                    by_rec[n] = d
            sample.thunderbolt = thunderbolt_info(tbr, by_rec)
            for p in sample.thunderbolt.peers:
                link = sample.links.get(p.netdev or "")
                if link is not None and p.link_gbps is not None:
                    link.rate_gbps = p.link_gbps
            # A receptacle with nothing plugged in is no link that went down: EMPTY (the
            # views list it with the virtual netdevs). One whose cable was there and is
            # pulled has no peer either: the cable list and the link's history say so.
            cabled = {p.netdev for p in sample.thunderbolt.peers}
            for name in mac.thunderbolt_ports:
                link = sample.links.get(name)
                if link is not None and link.state == "down" and name not in cabled:
                    link.state = EMPTY

        _guarded(warn, "sp_thunderbolt", fill_tb)
    unverified = []
    if any(lk.gids for lk in sample.links.values()):
        unverified.append(UNVERIFIED_GIDS)
    if mac.thermal_source == "macmon":
        unverified.append(UNVERIFIED_MACMON)
    mac.unverified = tuple(unverified)
    _probe_notes(frame, sample, warn)


def _links(
    frame: Frame,
    sample: HostSample,
    ports: HardwarePorts,
    ifc: IfconfigResult,
    ibv: IbvResult | None,
    warn: Warn,
) -> None:
    s = _text(frame, TICK_KIND)
    if s is None:
        return
    ns = parse_netstat_ibdn(s.text)
    warn.add(s.kind, None, ns.warnings)
    tbports = ports.thunderbolt
    for name, rec in ns.interfaces.items():
        stats = netdev_statistics(rec.counters)
        kind = (
            "tb"
            if name in tbports
            else (
                "virtual"
                if name.startswith(
                    ("lo", "bridge", "utun", "gif", "stf", "awdl", "llw", "anpi", "ap", "pktap")
                )
                else "netdev"
            )
        )
        link = LinkSample(
            id=name,
            netdev=name,
            mtu=rec.mtu,
            kind=kind,
            physical=name in ports.ports and kind != "virtual",
        )
        link.counters = {"netstat": dict(rec.counters)}
        link.metrics = dict(normalize_netdev(stats, None))
        link.read_ns = s.read_ns
        ic = ifc.interfaces.get(name)
        if ic is not None:
            link.addresses = tuple(ic.addresses)
            link.state = {"active": "up", "inactive": "down"}.get(ic.status or "")
        elif ifc.interfaces:
            link.addresses = ()
        if not rec.up:
            link.state = "down"
        dev = ibv.devices.get(f"rdma_{name}") if ibv is not None else None
        if dev is not None and dev.ports:
            port = dev.ports[min(dev.ports)]
            link.rdma_device, link.port = dev.name, port.port
            link.link_layer = port.link_layer
            link.state = port.state or link.state
            if port.gids is not None:
                link.gids = _gids_of(port.gids, name)
        sample.links[name] = link
    # An RDMA device whose netdev netstat did not list (filtered out, or netstat failed)
    # is a link still: its state, GIDs and addresses are what the rules read.
    for dev in ibv.devices.values() if ibv is not None else ():
        ndev = dev.name.removeprefix("rdma_")
        if ndev in sample.links or not dev.ports:
            continue
        port = dev.ports[min(dev.ports)]
        ic = ifc.interfaces.get(ndev)
        sample.links[ndev] = LinkSample(
            id=ndev,
            netdev=ndev,
            rdma_device=dev.name,
            port=port.port,
            link_layer=port.link_layer,
            state=port.state,
            kind="tb" if ndev in tbports else "netdev",
            physical=True,
            gids=_gids_of(port.gids, ndev) if port.gids is not None else None,
            addresses=tuple(ic.addresses) if ic is not None else (() if ifc.interfaces else None),
        )


def _gids_of(gids: list[GidEntry], netdev: str) -> tuple[GidEntry, ...]:
    """A port's GIDs with the netdev they belong to (on macOS rdma_enX's is enX)."""
    return tuple(dataclasses.replace(g, netdev=g.netdev or netdev) for g in gids)


def _probe_notes(frame: Frame, sample: HostSample, warn: Warn) -> None:
    for s in frame.all("probe"):
        lines = [clean(ln) for ln in s.text.splitlines()]
        impl = next((ln[5:].strip() for ln in lines if ln.startswith("impl ")), None)
        if impl:
            sample.probe = clean(impl, 120)
        warn.add(
            "probe",
            None,
            [ln[8:].strip() for ln in lines if ln.startswith("warning ") and ln[8:].strip()],
        )
