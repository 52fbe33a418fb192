"""Turn one decoded probe frame into a :class:`fabtop.model.HostSample`.

One :class:`LinkSample` per netdev and per RDMA port; an RDMA port is merged with the
netdev behind it (``gid_attrs/ndevs/*``, or ``device/net/<name>`` on a one-port device).
Raw counters are kept per source (``netdev``, ``ethtool``, ``ib_port``, ``ib_hw``);
normalized metrics take, per metric, ethtool's port counters first, then the RDMA port's,
then the netdev's.

Assembly is total: each section (and each link) is read behind a guard, so a parser that
still raises costs that section, said in one warning line (``host: section: error: ...``),
never the frame. Section headers are cleaned of control characters here, and every
warning line once more as it is added.

A frame is assembled in two steps. Its *shape* (the host's layout: links, their sources,
the metric plans, everything read from text but the GPUs and the NIC temperatures) is
built by the code below (:func:`_build_shape`) with each structured value standing for
its position, and kept per host by collectors/layout.py for as long as the probe's
declared generation and the frame's headers and schemas say nothing moved; every tick
is read through it: the values decoded and put where the shape says, and what depends
on them made (normalized metrics, saturated IB counters, read times, GPUs). One path
builds every sample, so a kept shape gives exactly what a new one would. The slow
sections a Pipeline carries into the frames between slow ticks are parsed once
(collectors/layout.py ``_Tail``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import is_
from typing import TypeVar, cast

from collectors.frames import UNKNOWN_SCHEMA, Frame, Section, TextRead
from collectors.layout import (
    EMPTY,
    LINK_FIELDS,
    PER_TICK_KINDS,
    QOS_FIELDS,
    Decoded,
    LinkPlan,
    Pos,
    Resolver,
    Shape,
    Shapes,
    ShapeWarner,
    Warner,
    guard,
    memo,
    tick,
)
from collectors.normalize import (
    IB_HW_MAP,
    IB_LEGACY_WIDTH,
    IB_PORT_MAP,
    NETDEV_MAP,
    MetricPlan,
    ethtool_plan,
    metric_plan,
    netdev_counters,
    pfc_priorities_from_names,
    saturated_ib_counters,
    without_unknown,
)
from collectors.numbers import U64_MAX, parse_uint
from collectors.optics_sections import optics_host_warnings, read_optics
from collectors.parsers.ethtool import (
    DriverInfo,
    parse_ethtool_info,
    parse_ethtool_stats,
    stat_names,
)
from collectors.parsers.firewall import firewall_read, firewall_state
from collectors.parsers.ipaddr import parse_ip_addr
from collectors.parsers.qos import (
    parse_dcb_app,
    parse_dcb_apptrust,
    parse_dcb_buffer,
    parse_dcb_ets,
    parse_dcb_pfc,
    parse_mlnx_qos,
)
from collectors.parsers.sysfs import (
    CounterRun,
    NetdevRecord,
    RdmaDeviceRecord,
    RdmaPortRecord,
    apply_sysib_counters,
    apply_sysnet_counters,
    counter_runs,
    parse_kv_dump,
    parse_sysib,
    parse_sysnet,
)
from collectors.parsers.thunderbolt import parse_systb
from collectors.ruleset import FirewallState
from collectors.samples import (
    PORT_SLOW_SOURCE,
    SLOW_SOURCE,
    GidEntry,
    HostSample,
    LinkSample,
    QosConfig,
    ThunderboltInfo,
)
from collectors.structured import COUNTER_KINDS, keyed_values
from collectors.text import clean
from collectors.version_sections import versions_from_frame

_TB_DRIVERS = frozenset({"thunderbolt-net", "thunderbolt_net"})

_ARPHRD_INFINIBAND = 32  # include/uapi/linux/if_arp.h: IPoIB netdevs


def assemble(host: str, frame: Frame, kept: Shapes | None = None) -> HostSample:
    """Build the typed sample of one host from one frame; never raises, whatever the frame.

    ``kept``: what is kept of each host between its frames, one per stream of frames (a
    Pipeline's own: the dashboard's and focus mode's frames of one host have two shapes);
    None: this module's. The layout is built here (_build_shape) when the frame's shape is
    new, and read by collectors/layout.py every tick.
    """
    return tick(host, frame, kept, _build_shape)


def _build_shape(host: str, frame: Frame, decoded: Decoded, read: TextRead) -> Shape:
    """Run the whole assembly once, each structured value standing for its position.

    ``read``: how the readers parse a text section (the tail keeps each carried one's).
    """
    index = {id(s): i for i, s in enumerate(frame.sections)}
    values: dict[int, list[int | None] | None] = {}
    for i, (vals, _) in decoded.items():
        values[i] = (
            None
            if vals is None
            else cast(
                list[int | None], [None if v is None else Pos(i, j) for j, v in enumerate(vals)]
            )
        )
    warn = ShapeWarner(host)
    b = _Build(frame, warn, index, values, read)
    b.thunderbolt = guard(warn, "systb_slow", None, None, _thunderbolt, b)
    statuses = []
    for i, s in enumerate(frame.sections):
        detail = s.detail
        if s.schema is not None:  # "schema=7": how the values came, nothing to show
            detail = " ".join(t for t in (detail or "").split() if not t.startswith("schema="))
        statuses.append((i, s.kind, s.subject, s.status, detail or None))
    links = guard(warn, "assemble", None, [], _links, b)
    probe = HostSample("", 0, 0, 0.0)
    cpu, cpu_at = guard(warn, "cputhrottle", None, (None, None), _cpu_throttle, b)
    guard(warn, "probe", None, None, _probe_notes, frame, probe, warn)
    versions = guard(warn, "versions", None, None, versions_from_frame, frame, read)
    fw = guard(warn, "firewall", None, None, _firewall, b)
    guard(warn, "optics", None, None, optics_host_warnings, frame, b.read, warn)
    # Every link's metrics are made at its place in the warnings: when those places are
    # the links, in their order, _fill may make them all in one try.
    at_once = [item for item in warn.plan if isinstance(item, LinkPlan)]
    return Shape(
        tuple(statuses),
        warn.plan,
        links,
        cpu,
        probe.probe,
        versions,
        fw,
        b.thunderbolt,
        len(at_once) == len(links) and all(map(is_, at_once, links)),
        tuple(i for i, s in enumerate(frame.sections) if s.kind in PER_TICK_KINDS),
        cpu_at,
    )


@dataclass(slots=True)
class _Build:
    """What the steps of a shape's build share."""

    frame: Frame
    warn: ShapeWarner
    index: dict[int, int]  # id(section) -> its index in the frame
    values: dict[int, list[int | None] | None]  # section index -> its values, as positions
    read: TextRead  # parse(section.text), or the tail's reading of a carried section
    thunderbolt: ThunderboltInfo | None = None
    # (kind, subject) and (kind, None) -> the first such section (Frame.find's answer)
    found: dict[tuple[str, str | None], Section] | None = None

    def of(self, sec: Section) -> tuple[int, list[int | None] | None]:
        i = self.index[id(sec)]
        return i, self.values[i]

    def find(self, kind: str, subject: str | None = None) -> Section | None:
        """``frame.find``, from an index made once: each link looks for a few sections of
        its own, and a frame of thousands of netdevs has thousands of sections."""
        found = self.found
        if found is None:
            found = self.found = {}
            for sec in self.frame.sections:
                found.setdefault((sec.kind, sec.subject), sec)
                found.setdefault((sec.kind, None), sec)
        return found.get((kind, subject))


def _links(b: _Build) -> list[LinkPlan]:
    warn = b.warn
    netdevs = guard(warn, "sysnet", None, {}, _sysnet, b)
    devices = guard(warn, "sysib", None, {}, _sysib, b)
    slow_names = guard(warn, "sysib_slow", None, {}, _slow_names, b)
    infos = _driver_infos(b)
    ethtool = _ethtool_stats(b)

    found: dict[str, LinkPlan] = {}
    claimed: set[str] = set()
    for dev in devices.values():
        for port in dev.ports.values():
            ndev = _netdev_of(dev, port)
            if ndev in claimed:  # one netdev over two ports (bond): keep the ports apart
                ndev = None
            if ndev is not None:
                claimed.add(ndev)
            rec = netdevs.get(ndev) if ndev else None
            where = f"{dev.name}/{port.port}"
            lp = guard(
                warn,
                "sysib",
                where,
                None,
                _rdma_link,
                dev,
                port,
                rec,
                ndev,
                slow_names,
                bool(b.values),
            )
            if lp is not None:
                found[lp.link.id] = lp
    for name, netdev in netdevs.items():
        if name not in claimed:
            net_link = guard(warn, "sysnet", name, None, _netdev_link, netdev)
            if net_link is not None:
                found[name] = net_link

    if b.thunderbolt is not None:
        _tb_rates(found, b.thunderbolt)
    addresses = guard(warn, "ip_addr", None, None, _addresses, b)
    for lp in found.values():
        if addresses is not None and lp.link.netdev is not None:
            lp.link.addresses = addresses.get(lp.link.netdev, ())  # read: none on it
        _finish(lp, b, infos, ethtool, netdevs, warn)
    return list(found.values())


def _addresses(b: _Build) -> dict[str, tuple[str, ...]] | None:
    """Each netdev's addresses (``ip -o addr show``, slow): None when not read whole."""
    sec = b.frame.find("ip_addr")
    if sec is None or sec.schema is not None or sec.status != "ok":
        return None  # a cut or failed listing cannot say a netdev has no address
    parsed = b.read(parse_ip_addr, sec)
    b.warn.add("ip_addr", None, parsed.warnings)
    return parsed.addresses


def _thunderbolt(b: _Build) -> ThunderboltInfo | None:
    """The host's Thunderbolt domain (Linux sysfs), from its latest slow section."""
    secs = _texts(b.frame, "systb_slow")
    if not secs:
        return None
    parsed = b.read(parse_systb, secs[-1])
    b.warn.add("systb_slow", None, parsed.warnings)
    return parsed.info


def _tb_rates(found: dict[str, LinkPlan], tb: ThunderboltInfo) -> None:
    """A thunderbolt-net netdev's rate from its XDomain (lane speed x lanes) where the
    kernel gave it no ``speed`` (thunderbolt-net has link settings only since late 2025:
    net: thunderbolt: Allow reading link settings, netdev list)."""
    for peer in tb.peers:
        lp = found.get(peer.netdev) if peer.netdev else None
        if lp is not None and lp.link.rate_gbps is None:
            lp.link.rate_gbps = peer.total_gbps


def _texts(frame: Frame, kind: str) -> list[Section]:
    # A section that timed out or failed may still carry partial text worth reading.
    return [s for s in frame.all(kind) if s.schema is None and s.text.strip()]


def _sysfs_text(frame: Frame, kind: str) -> tuple[str, str]:
    # Slow-cadence files (PCIe, ECN enables, firmware, RoCE netdev mapping) come in
    # <kind>_slow; the collector carries the latest one into the frames between.
    secs = _texts(frame, kind) + _texts(frame, kind + "_slow")
    return "\n".join(s.text for s in secs), kind


def _sysnet(b: _Build) -> dict[str, NetdevRecord]:
    text, kind = _sysfs_text(b.frame, "sysnet")
    netdevs: dict[str, NetdevRecord] = {}
    if text:
        parsed = memo(parse_sysnet, text)
        b.warn.add(kind, None, parsed.warnings)
        netdevs = {name: _own_netdev(rec) for name, rec in parsed.netdevs.items()}
    for sec, runs, vals in _counter_sections(b, "sysnet"):
        guard(b.warn, sec.kind, None, None, apply_sysnet_counters, netdevs, runs, vals)
    return netdevs


def _sysib(b: _Build) -> dict[str, RdmaDeviceRecord]:
    text, kind = _sysfs_text(b.frame, "sysib")
    devices: dict[str, RdmaDeviceRecord] = {}
    if text:
        parsed = memo(parse_sysib, text)
        b.warn.add(kind, None, parsed.warnings)
        devices = {name: _own_device(dev) for name, dev in parsed.devices.items()}
    for sec, runs, vals in _counter_sections(b, "sysib"):
        guard(b.warn, sec.kind, None, None, apply_sysib_counters, devices, runs, vals)
    return devices


_R = TypeVar("_R", NetdevRecord, RdmaDeviceRecord, RdmaPortRecord, QosConfig)


def _shallow(obj: _R) -> _R:
    """``copy.copy`` of a slots dataclass at a third of its cost."""
    cls = type(obj)
    mine = cls.__new__(cls)
    for name in cls.__slots__:
        setattr(mine, name, getattr(obj, name))
    return mine


def _own_netdev(rec: NetdevRecord) -> NetdevRecord:
    """A frame's own copy of a memoized record: what the frame fills in is its own."""
    mine = _shallow(rec)
    mine.statistics, mine.lost = dict(rec.statistics), set(rec.lost)
    return mine


def _own_device(dev: RdmaDeviceRecord) -> RdmaDeviceRecord:
    mine = _shallow(dev)
    mine.ports = {}
    for n, port in dev.ports.items():
        p = mine.ports[n] = _shallow(port)
        p.counters, p.counters_ext = dict(port.counters), dict(port.counters_ext)
        p.hw_counters = dict(port.hw_counters)
        p.lost, p.absent = set(port.lost), set(port.absent)
    return mine


_Placed = tuple[Section, tuple[CounterRun, ...], list[int | None]]


def _counter_sections(b: _Build, kind: str) -> list[_Placed]:
    """The structured counter sections of ``sysnet``/``sysib``, placed by position."""
    out: list[_Placed] = []
    for sec in b.frame.all(COUNTER_KINDS[kind]):
        if sec.schema is None:
            if sec.status != "ok":
                detail = f" ({sec.detail})" if sec.detail else ""
                b.warn.add(sec.kind, None, [f"{sec.status}{detail}"])
            continue
        placed = guard(b.warn, sec.kind, None, None, _placed, b, sec)
        if placed is not None:
            out.append(placed)
    return out


def _placed(b: _Build, sec: Section) -> _Placed | None:
    assert sec.schema is not None
    plan: tuple[tuple[CounterRun, ...], list[str]] | None = sec.schema.plans.get("runs")
    if plan is None:
        plan = sec.schema.plans["runs"] = counter_runs(sec.kind, sec.schema.names)
    runs, plan_warnings = plan
    b.warn.add(sec.kind, None, plan_warnings)
    if sec.status != "ok":
        detail = f" ({sec.detail})" if sec.detail else ""
        b.warn.add(sec.kind, None, [f"{sec.status}{detail}"])
    i, vals = b.of(sec)
    b.warn.values(i, sec.kind, None)
    return (sec, runs, vals) if vals is not None else None


# The counter source of an RDMA port's files, by their directory.
_PORT_DIRS = {"counters": "ib_port", "counters_ext": "ib_port", "hw_counters": "ib_hw"}


def _slow_names(b: _Build) -> dict[tuple[str, int, str], frozenset[str]]:
    """Port counters the probe reads on slow ticks only (ib_port_tick, ib_hw_tick), by
    (device, port, their source: ib_port or ib_hw)."""
    out: dict[tuple[str, int, str], frozenset[str]] = {}
    for sec in _texts(b.frame, "sysib_slow"):
        out.update(b.read(_slow_in_text, sec))
    return out


def _slow_in_text(text: str) -> dict[tuple[str, int, str], frozenset[str]]:
    found: dict[tuple[str, int, str], set[str]] = {}
    for line in text.splitlines():
        parts = line.split(" ", 1)[0].split("/")
        # <dev>/ports/<n>/{counters,counters_ext,hw_counters}/<name>
        if len(parts) == 5 and parts[1] == "ports" and parts[3] in _PORT_DIRS:
            n = parse_uint(parts[2])
            if n is not None:
                key = (clean(parts[0]), n, _PORT_DIRS[parts[3]])
                found.setdefault(key, set()).add(clean(parts[4]))
    return {k: frozenset(v) for k, v in found.items()}


def _driver_infos(b: _Build) -> dict[str, DriverInfo]:
    warn = b.warn
    out: dict[str, DriverInfo] = {}
    for s in _texts(b.frame, "ethtool_i"):
        if s.subject:
            info = guard(warn, s.kind, s.subject, None, b.read, parse_ethtool_info, s)
            if info is not None:
                warn.add(s.kind, s.subject, info.warnings)
                out[s.subject] = info
    return out


def _ethtool_stats(b: _Build) -> dict[str, dict[str, int]]:
    frame, warn = b.frame, b.warn
    out: dict[str, dict[str, int]] = {}
    for s in frame.all("ethtool_S"):  # an empty timed-out section still needs saying
        if not s.subject:
            continue
        # A timed-out or truncated dump is partial but real (parsed, and said); an error
        # exit printed a message instead of counters (said, not parsed).
        unplaced = (s.detail or "").startswith(UNKNOWN_SCHEMA)
        if (
            s.status == "error"
            and not unplaced
            and (not s.text.strip() or "no stats available" in s.text)
        ):
            continue  # a driver without ethtool stats (thunderbolt-net, veth): nothing to say
        if s.status != "ok":
            _tool_output(b, s.kind, s.subject)
        if s.schema is not None:
            names: tuple[str, ...] | None = s.schema.plans.get("ethtool")
            if names is None:
                names = s.schema.plans["ethtool"] = stat_names(s.schema.names)
            got = guard(warn, s.kind, s.subject, None, _keyed_values, b, s, names)
            if got is not None:
                out[s.subject] = got
        elif s.status in _PARTIAL_BUT_REAL:
            stats = guard(warn, s.kind, s.subject, None, parse_ethtool_stats, s.text)
            if stats is not None:
                warn.add(s.kind, s.subject, stats.warnings)
                out[s.subject] = stats.counters
    return out


def _keyed_values(b: _Build, sec: Section, keys: tuple[str, ...]) -> dict[str, int]:
    """A structured section as ``key -> value`` (keyed_values: its values, as positions)."""
    i, vals = b.of(sec)
    b.warn.values(i, sec.kind, sec.subject)
    return {} if vals is None else keyed_values(keys, vals)


def _netdev_of(dev: RdmaDeviceRecord, port: RdmaPortRecord) -> str | None:
    if port.netdevs:
        return port.netdevs[0]
    # device/net/* does not say which port a netdev belongs to: trust it on one-port devices.
    if len(dev.ports) == 1 and len(dev.netdevs) == 1:
        return dev.netdevs[0]
    return None


def _rdma_link(
    dev: RdmaDeviceRecord,
    port: RdmaPortRecord,
    rec: NetdevRecord | None,
    ndev: str | None,
    slow_names: dict[tuple[str, int, str], frozenset[str]],
    placed: bool,
) -> LinkPlan:
    ib = port.link_layer == "InfiniBand" or (rec is not None and rec.type == _ARPHRD_INFINIBAND)
    link = LinkSample(
        id=ndev or f"{dev.name}/{port.port}",
        netdev=ndev,
        rdma_device=dev.name,
        port=port.port,
        link_layer=port.link_layer,
        physical=True,
        kind="ib" if ib else "roce",
    )
    link.state = _ib_state(port)
    link.port_state, link.phys_state, link.sm_lid = port.state, port.phys_state, port.sm_lid
    link.node_type = dev.node_type
    if port.gids is not None:
        link.gids = tuple(
            GidEntry(i, g, port.gid_types.get(i), port.gid_ndevs.get(i))
            for i, g in sorted(port.gids.items())
        )
        link.gids_truncated = port.gids_truncated
    link.rate_gbps = port.rate_gbps
    link.width = port.width
    link.firmware = dev.fw_ver
    link.pcie = dev.pcie
    link.temperature_c = dev.temperature_c
    # Each source's slow files (read on slow ticks, carried between) kept apart.
    ib_counters = {**port.counters, **port.counters_ext}
    ib_slow = _slow_part(ib_counters, slow_names.get((dev.name, port.port, "ib_port")))
    hw = dict(port.hw_counters)
    hw_slow = _slow_part(hw, slow_names.get((dev.name, port.port, "ib_hw")))
    for source, counters in (
        ("ib_port", ib_counters),
        (PORT_SLOW_SOURCE, ib_slow),
        ("ib_hw", hw),
        (SLOW_SOURCE, hw_slow),
    ):
        if counters:
            link.counters[source] = counters
    lp = LinkPlan(link, rdma=True)
    if port.lost:
        gone = frozenset(port.lost)
        lp.lost = (frozenset(rec.lost) if rec is not None else frozenset(), gone, gone, frozenset())
    elif rec is not None and rec.lost:
        lp.lost = (frozenset(rec.lost), *lp.lost[1:])
    legacy = {k: v for k, v in port.counters.items() if k in IB_LEGACY_WIDTH and k not in ib_slow}
    lp.legacy = Resolver(legacy, placed)
    lp.legacy.tops = tuple((1 << IB_LEGACY_WIDTH[n]) - 1 for n in lp.legacy.names)
    # Those read on slow ticks only are the shape's own text: their saturation found once.
    slow_legacy = {k: v for k, v in ib_slow.items() if k in IB_LEGACY_WIDTH}
    lp.slow_saturated = tuple(saturated_ib_counters(slow_legacy))
    lp.temp = (None, None, dev.name, dev.temperature_c)
    if rec is not None:
        _apply_netdev(link, rec)
        lp.temp = (rec.name, rec.temperature_c, dev.name, dev.temperature_c)
    return lp


def _slow_part(counters: dict[str, int], names: frozenset[str] | None) -> dict[str, int]:
    """The counters of ``names`` (read on slow ticks), taken out of ``counters``."""
    if not names:
        return {}
    slow = {k: v for k, v in counters.items() if k in names}
    for k in slow:
        del counters[k]
    return slow


def _netdev_link(rec: NetdevRecord) -> LinkPlan:
    link = LinkSample(id=rec.name, netdev=rec.name, physical=rec.physical)
    link.kind = "netdev" if rec.physical else "virtual"
    _apply_netdev(link, rec)
    lp = LinkPlan(link, temp=(rec.name, rec.temperature_c, None, None))
    if rec.lost:
        lp.lost = (frozenset(rec.lost), *lp.lost[1:])
    return lp


def _apply_netdev(link: LinkSample, rec: NetdevRecord) -> None:
    """Netdev facts win over the RDMA port's where both know (state, speed, PCIe)."""
    if rec.operstate:
        link.state = rec.operstate.lower()
    if rec.speed_mbps is not None:
        link.rate_gbps = rec.speed_mbps / 1000.0
    link.mtu = rec.mtu
    link.pcie = rec.pcie or link.pcie
    if rec.temperature_c is not None:
        link.temperature_c = rec.temperature_c
    if rec.statistics:
        link.counters["netdev"] = dict(rec.statistics)


def _ib_state(port: RdmaPortRecord) -> str | None:
    state = port.state.lower() if port.state else None
    # "DOWN" alone hides why; the physical state says polling (no peer) or disabled.
    if state == "down" and port.phys_state:
        return port.phys_state.lower()
    return state


def _finish(
    lp: LinkPlan,
    b: _Build,
    infos: dict[str, DriverInfo],
    ethtool: dict[str, dict[str, int]],
    netdevs: dict[str, NetdevRecord],
    warn: Warner,
) -> None:
    """Driver facts, where the metrics go, and QoS of one link, each behind its own guard."""
    link = lp.link
    ndev = link.netdev
    rec = netdevs.get(ndev) if ndev else None
    guard(warn, "link", link.id, None, _driver_facts, link, infos, ethtool)
    bus = infos[ndev].bus_info if ndev in infos else None  # the devlink device of the netdev
    guard(warn, "optics", link.id, None, read_optics, b.find, b.read, warn, link, bus)
    if rec is not None:
        lp.carrier = (rec.carrier_changes, rec.carrier_down_count)
    lp.ethtool = "ethtool" in link.counters
    b.warn.metrics(lp)
    lp.read_at = _read_at(link, b, ethtool)
    if link.slow_read_ns is not None and ndev is not None:  # read_optics found its FEC read
        fec = b.find("ethtool_fec", ndev)
        lp.slow_at = b.index[id(fec)] if fec is not None else None
    if link.mlxlink_read_ns is not None and bus is not None:  # mlxlink's corrected bits
        mlx = b.find("mlxlink", bus)
        lp.mlx_at = b.index[id(mlx)] if mlx is not None else None
    raw_ethtool = ethtool.get(ndev) if ndev else None
    link.qos = guard(warn, "qos", ndev, None, _qos, b, ndev, rec, raw_ethtool)
    placed = bool(b.values)
    lp.counters = tuple((source, Resolver(c, placed)) for source, c in link.counters.items())
    guard(warn, "link", link.id, None, _plan_metrics, lp)
    link.counters = {}
    lp.fields = tuple(getattr(link, name) for name in LINK_FIELDS)
    if link.qos is not None:
        lp.qos = tuple(getattr(link.qos, name) for name in QOS_FIELDS)


def _plan_metrics(lp: LinkPlan) -> None:
    """The metric plans of a link of the shape, from the names its dicts will have."""
    c = lp.link.counters
    netdev: MetricPlan = ()
    ib: MetricPlan = ()
    hw: MetricPlan = ()
    ethtool: MetricPlan = ()
    lost = lp.lost
    if lp.carrier is not None:
        netdev = metric_plan(
            NETDEV_MAP,
            _listed(netdev_counters(c.get("netdev", EMPTY), *lp.carrier), lost[0]),
            None,
        )
    if lp.rdma:
        ib = metric_plan(
            IB_PORT_MAP,
            _listed({**c.get("ib_port", EMPTY), **c.get(PORT_SLOW_SOURCE, EMPTY)}, lost[1]),
            None,
        )
        hw = metric_plan(
            IB_HW_MAP,
            _listed({**c.get("ib_hw", EMPTY), **c.get(SLOW_SOURCE, EMPTY)}, lost[2]),
            None,
        )
    if lp.ethtool:
        ethtool = ethtool_plan(_listed(c["ethtool"], lost[3]), lp.link.driver)
    plans = (netdev, ib, hw, ethtool)
    lp.plans = without_unknown(plans, lost) if any(lost) else plans  # type: ignore[assignment]
    lp.runs = tuple(
        i for i, run in enumerate((lp.carrier is not None, lp.rdma, lp.rdma, lp.ethtool)) if run
    )
    lp.makes = frozenset(step[0] for i in lp.runs for step in lp.plans[i])


def _listed(counters: Mapping[str, object], lost: frozenset[str]) -> Mapping[str, object]:
    """The names a source listed: those read and those whose values were not."""
    return {**counters, **dict.fromkeys(sorted(lost))} if lost else counters


def _read_at(link: LinkSample, b: _Build, ethtool: dict[str, dict[str, int]]) -> int | None:
    """Which section's read time the link's counters have: its ethtool -S, else its RDMA
    port, else sysfs."""
    sec = None
    if link.netdev is not None and link.netdev in ethtool:
        sec = b.find("ethtool_S", link.netdev)
    if sec is None:
        sec = b.find("sysib" if link.rdma_device is not None else "sysnet")
    return b.index[id(sec)] if sec is not None else None


def _driver_facts(
    link: LinkSample, infos: dict[str, DriverInfo], ethtool: dict[str, dict[str, int]]
) -> None:
    ndev = link.netdev
    info = infos.get(ndev) if ndev else None
    if info is not None:
        link.driver = info.driver
        link.driver_version = info.version
        link.firmware = info.firmware_version or link.firmware
        if info.driver in _TB_DRIVERS:
            link.kind = "tb"
    raw_ethtool = ethtool.get(ndev) if ndev else None
    if raw_ethtool:
        link.counters["ethtool"] = raw_ethtool


# Statuses whose text is tool output worth parsing: a timeout or the byte cap cut it short.
_PARTIAL_BUT_REAL = ("ok", "timeout", "truncated")


def _tool_output(b: _Build, kind: str, subject: str) -> Section | None:
    # A tool that failed printed its error message, not its table: report it in one
    # line instead of feeding the message to the parser word by word.
    warn = b.warn
    sec = b.find(kind, subject)
    if sec is None or sec.status == "ok":
        return sec
    detail = f" ({sec.detail})" if sec.detail else ""
    if sec.status == "truncated":  # the probe cut it at its byte cap: what is there is real
        warn.add(kind, subject, [f"{sec.status}{detail}"])
        return sec
    first = sec.text.strip().splitlines()[0][:160] if sec.text.strip() else ""
    warn.add(kind, subject, [f"{sec.status}{detail}" + (f": {first}" if first else "")])
    return None


def _qos(
    b: _Build,
    ndev: str | None,
    rec: NetdevRecord | None,
    raw_ethtool: dict[str, int] | None,
) -> QosConfig | None:
    if ndev is None:
        return None
    warn = b.warn
    cfg: QosConfig | None = None
    mq = _tool_output(b, "mlnx_qos", ndev)
    dcb = _tool_output(b, "dcb_pfc", ndev)
    if mq is not None and mq.text.strip():
        parsed = b.read(parse_mlnx_qos, mq)
        warn.add(mq.kind, ndev, parsed.warnings)
        cfg = _shallow(parsed.config)  # the parse is shared (kept); this link's is not
    elif dcb is not None and dcb.text.strip():
        parsed_dcb = b.read(parse_dcb_pfc, dcb)
        warn.add(dcb.kind, ndev, parsed_dcb.warnings)
        cfg = _shallow(parsed_dcb.config)
    cfg = _dcb_extras(b, ndev, cfg)
    if cfg is None or cfg.pfc_enabled is None:
        inferred = pfc_priorities_from_names(raw_ethtool) if raw_ethtool else None
        if inferred is not None:
            if cfg is None:
                cfg = QosConfig(source="ethtool")
            cfg.pfc_enabled = inferred
    ecn_np = rec.ecn_np_enabled if rec else None
    ecn_rp = rec.ecn_rp_enabled if rec else None
    if ecn_np is not None or ecn_rp is not None:
        if cfg is None:
            cfg = QosConfig(source="sysfs")
        cfg.ecn_np_enabled = ecn_np
        cfg.ecn_rp_enabled = ecn_rp
    return cfg


def _dcb_extras(b: _Build, ndev: str, cfg: QosConfig | None) -> QosConfig | None:
    # iproute2 dcb fills what mlnx_qos did not report (hosts without mlnx-tools).
    warn = b.warn
    trust_sec = _tool_output(b, "dcb_apptrust", ndev)
    app_sec = _tool_output(b, "dcb_app", ndev)
    ets_sec = _tool_output(b, "dcb_ets", ndev)
    buf_sec = _tool_output(b, "dcb_buffer", ndev)
    found = [s for s in (trust_sec, app_sec, ets_sec, buf_sec) if s is not None and s.text.strip()]
    if not found:
        return cfg
    if cfg is None:
        cfg = QosConfig(source="dcb")
    if trust_sec is not None and trust_sec.text.strip() and cfg.trust is None:
        parsed_trust = b.read(parse_dcb_apptrust, trust_sec)
        warn.add(trust_sec.kind, ndev, parsed_trust.warnings)
        cfg.trust = parsed_trust.trust
    if app_sec is not None and app_sec.text.strip() and cfg.dscp2prio is None:
        parsed_app = b.read(parse_dcb_app, app_sec)
        warn.add(app_sec.kind, ndev, parsed_app.warnings)
        cfg.dscp2prio = parsed_app.dscp2prio or None
    if ets_sec is not None and ets_sec.text.strip() and cfg.ets is None:
        parsed_ets = b.read(parse_dcb_ets, ets_sec)
        warn.add(ets_sec.kind, ndev, parsed_ets.warnings)
        cfg.ets = parsed_ets.ets or None
    if buf_sec is not None and buf_sec.text.strip() and cfg.prio_buffer is None:
        parsed_buf = b.read(parse_dcb_buffer, buf_sec)
        warn.add(buf_sec.kind, ndev, parsed_buf.warnings)
        cfg.prio_buffer = dict(parsed_buf.prio_buffer) or None
        cfg.buffer_size = dict(parsed_buf.buffer_size) or None
    return cfg


def _cpu_throttle(b: _Build) -> tuple[int | None, int | None]:
    """The host's CPU thermal throttle count, and the section it was read from (its read
    time the count's)."""
    warn = b.warn
    total: int | None = None
    at: int | None = None
    for s in _texts(b.frame, "cputhrottle"):
        at = b.index[id(s)]
        values, warnings = b.read(parse_kv_dump, s)
        warn.add(s.kind, s.subject, warnings)
        for path, value in values.items():
            num = parse_uint(value)
            if num is not None:
                total = (total or 0) + num
            elif value:
                warn.add(s.kind, s.subject, [f"{path}: bad value {value[:40]!r}"])
    if total is not None and total > U64_MAX:
        warn.add("cputhrottle", None, ["sum beyond 64 bits: no value"])
        return None, None
    return total, at if total is not None else None


def _probe_notes(frame: Frame, sample: HostSample, warn: Warner) -> None:
    for s in _texts(frame, "probe"):
        lines = [clean(ln) for ln in s.text.splitlines()]
        impl = next((ln[5:].strip() for ln in lines if ln.startswith("impl ")), None)
        if impl:
            sample.probe = clean(impl, 120)
        notes = [
            ln.split(" ", 1)[1].strip()
            for ln in lines
            if ln.startswith("warning ") and ln[8:].strip()
        ]
        warn.add(s.kind, None, notes)


def _firewall(b: _Build) -> FirewallState | None:
    sec = b.frame.find("firewall")
    if sec is None:
        return None
    # A ruleset's text comes again each slow tick: parsed once while it stays the same.
    fw = (
        b.read(firewall_read, sec)
        if sec.status == "ok"
        else firewall_state(sec.status, sec.detail, sec.text)
    )
    if fw.ruleset is not None:
        b.warn.add("firewall", None, fw.ruleset.warnings[:20])
    return fw
