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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from collectors.frames import UNKNOWN_SCHEMA, Frame, Section
from collectors.gpu_sections import gpus_from_frame
from collectors.guard import Guard
from collectors.normalize import (
    normalize_ethtool,
    normalize_ib,
    normalize_netdev,
    pfc_priorities_from_names,
    saturated_ib_counters,
)
from collectors.numbers import U64_MAX, parse_uint
from collectors.parsers.ethtool import (
    DriverInfo,
    parse_ethtool_info,
    parse_ethtool_stats,
    stat_names,
)
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
from collectors.samples import (
    SLOW_SOURCE,
    HostSample,
    LinkSample,
    MetricValue,
    QosConfig,
    SectionStatus,
)
from collectors.structured import COUNTER_KINDS, decode_values, section_values
from collectors.text import clean

_TB_DRIVERS = frozenset({"thunderbolt-net", "thunderbolt_net"})

_ARPHRD_INFINIBAND = 32  # include/uapi/linux/if_arp.h: IPoIB netdevs


def assemble(host: str, frame: Frame) -> HostSample:
    """Build the typed sample of one host from one frame; never raises, whatever the frame."""
    sample = HostSample(host=host, seq=frame.seq, clock_ns=frame.clock_ns, uptime_s=frame.uptime_s)
    warn = _Warner(host, sample.warnings)
    # A bug outside the per-section guards costs the rest of this frame, said in one line.
    _guard(warn, "assemble", None, None, _assemble, _cleaned(frame), sample, warn)
    return sample


def _cleaned(frame: Frame) -> Frame:
    """The frame with its section headers (kind, subject, status, detail) cleaned."""
    sections = frame.sections
    for i, s in enumerate(sections):
        kind, status = clean(s.kind), clean(s.status)
        subject = clean(s.subject) if s.subject is not None else None
        detail = clean(s.detail) if s.detail is not None else None
        # clean() hands back the very string when there is nothing to remove: a section
        # is rebuilt only when one of its headers changed (almost never).
        if kind is s.kind and status is s.status and subject is s.subject and detail is s.detail:
            continue
        if sections is frame.sections:
            sections = list(sections)
        # s.schema: its names were cleaned when the stream defined it.
        sections[i] = Section(kind, subject, s.read_ns, status, detail, s.text, s.schema)
    if sections is frame.sections:
        return frame
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, sections)


def _assemble(frame: Frame, sample: HostSample, warn: _Warner) -> None:
    for s in frame.sections:
        detail = s.detail
        if s.schema is not None:  # "schema=7": how the values came, nothing to show
            detail = " ".join(t for t in (detail or "").split() if not t.startswith("schema="))
        sample.sections.append(SectionStatus(s.kind, s.subject, s.status, s.read_ns,
                                             detail or None))

    netdevs = _guard(warn, "sysnet", None, {}, _sysnet, frame, warn)
    devices = _guard(warn, "sysib", None, {}, _sysib, frame, warn)
    slow_hw = _guard(warn, "sysib_slow", None, {}, _slow_hw_names, frame)
    infos = _driver_infos(frame, warn)
    ethtool = _ethtool_stats(frame, warn)

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
            link = _guard(warn, "sysib", where, None, _rdma_link, dev, port, rec, ndev, slow_hw)
            if link is not None:
                sample.links[link.id] = link
    for name, netdev in netdevs.items():
        if name not in claimed:
            net_link = _guard(warn, "sysnet", name, None, _netdev_link, netdev)
            if net_link is not None:
                sample.links[name] = net_link

    for link in sample.links.values():
        _finish(link, frame, infos, ethtool, netdevs, devices, warn)

    sample.cpu_throttle_count = _guard(warn, "cputhrottle", None, None, _cpu_throttle, frame, warn)
    _guard(warn, "probe", None, None, _probe_notes, frame, sample, warn)
    _gpus(frame, sample, warn)


_T = TypeVar("_T")
_D = TypeVar("_D")
_P = ParamSpec("_P")


def _guard(
    warn: _Warner,
    kind: str,
    subject: str | None,
    default: _D,
    step: Callable[_P, _T],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> _T | _D:
    """Run one section's step; a failure costs that section, in one warning line."""
    guard = Guard("error")  # the one guard (collectors/guard.py): traceback logged at debug
    with guard:
        return step(*args, **kwargs)
    warn.add(kind, subject, [guard.error or "error"])
    return default


_MEMO: dict[tuple[Callable[[str], object], str], object] = {}
_MEMO_MAX = 1024
# The memo's keys are remote text: bounded in bytes too, not only in entries (1024 texts
# at a section's 8 MiB cap would be 8 GiB). A text beyond _MEMO_TEXT_MAX is parsed, not kept.
_MEMO_BYTES_MAX = 32 * 1024 * 1024
_MEMO_TEXT_MAX = 1024 * 1024
_memo_bytes = 0


def _memo(parse: Callable[[str], _T], text: str) -> _T:
    """Parse slow-cadence output once: the collector re-sends the same text every tick.

    Callers treat the result as read-only (parsers are pure, so sharing is safe).
    """
    global _memo_bytes
    if len(text) > _MEMO_TEXT_MAX:
        return parse(text)
    key = (parse, text)
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= _MEMO_MAX or _memo_bytes + len(text) > _MEMO_BYTES_MAX:
            _MEMO.clear()
            _memo_bytes = 0
        hit = _MEMO[key] = parse(text)
        _memo_bytes += len(text)
    return hit  # type: ignore[return-value]


MAX_FRAME_WARNINGS = 200  # each parser caps its own; 259 netdevs must not make 13,000 lines


class _Warner:
    """Prefixes every parser warning with host, section kind and subject; cleans and bounds."""

    def __init__(self, host: str, sink: list[str]) -> None:
        self.host = host
        self.sink = sink

    def add(self, kind: str, subject: str | None, messages: list[str]) -> None:
        where = f"{kind} {subject}" if subject else kind
        for m in messages:
            if len(self.sink) < MAX_FRAME_WARNINGS:
                # Parsers clean what they read; this is the backstop for anything quoted
                # into a message (an exception's text, a probe note, a section detail).
                self.sink.append(clean(f"{self.host}: {where}: {m}"))
            elif len(self.sink) == MAX_FRAME_WARNINGS:
                self.sink.append(f"{self.host}: further warnings of this frame suppressed")
                return


def _texts(frame: Frame, kind: str) -> list[Section]:
    # A section that timed out or failed may still carry partial text worth reading.
    return [s for s in frame.all(kind) if s.schema is None and s.text.strip()]


def _sysfs_text(frame: Frame, kind: str) -> tuple[str, str]:
    # Slow-cadence files (PCIe, ECN enables, firmware, RoCE netdev mapping) come in
    # <kind>_slow; the collector carries the latest one into the frames between.
    secs = _texts(frame, kind) + _texts(frame, kind + "_slow")
    return "\n".join(s.text for s in secs), kind


def _sysnet(frame: Frame, warn: _Warner) -> dict[str, NetdevRecord]:
    text, kind = _sysfs_text(frame, "sysnet")
    netdevs: dict[str, NetdevRecord] = {}
    if text:
        # With counters sent by position, the text left (state, MTU, speed) is mostly the
        # same as last tick's: parsed once, copied where this frame adds to it.
        parsed = _memo(parse_sysnet, text)
        warn.add(kind, None, parsed.warnings)
        netdevs = {name: _own_netdev(rec) for name, rec in parsed.netdevs.items()}
    for sec, runs, vals in _counter_sections(frame, "sysnet", warn):
        _guard(warn, sec.kind, None, None, apply_sysnet_counters, netdevs, runs, vals)
    return netdevs


def _sysib(frame: Frame, warn: _Warner) -> dict[str, RdmaDeviceRecord]:
    text, kind = _sysfs_text(frame, "sysib")
    devices: dict[str, RdmaDeviceRecord] = {}
    if text:
        parsed = _memo(parse_sysib, text)
        warn.add(kind, None, parsed.warnings)
        devices = {name: _own_device(dev) for name, dev in parsed.devices.items()}
    for sec, runs, vals in _counter_sections(frame, "sysib", warn):
        _guard(warn, sec.kind, None, None, apply_sysib_counters, devices, runs, vals)
    return devices


_R = TypeVar("_R", NetdevRecord, RdmaDeviceRecord, RdmaPortRecord, QosConfig)


def _shallow(obj: _R) -> _R:
    """``copy.copy`` of a slots dataclass at a third of its cost (ten per frame)."""
    cls = type(obj)
    mine = cls.__new__(cls)
    for name in cls.__slots__:
        setattr(mine, name, getattr(obj, name))
    return mine


def _own_netdev(rec: NetdevRecord) -> NetdevRecord:
    """A frame's own copy of a memoized record: what the frame fills in is its own."""
    mine = _shallow(rec)
    mine.statistics = dict(rec.statistics)
    return mine


def _own_device(dev: RdmaDeviceRecord) -> RdmaDeviceRecord:
    mine = _shallow(dev)
    mine.ports = {}
    for n, port in dev.ports.items():
        p = mine.ports[n] = _shallow(port)
        p.counters, p.counters_ext = dict(port.counters), dict(port.counters_ext)
        p.hw_counters = dict(port.hw_counters)
    return mine


_Placed = tuple[Section, tuple[CounterRun, ...], list[int | None]]


def _counter_sections(frame: Frame, kind: str, warn: _Warner) -> list[_Placed]:
    """The structured counter sections of ``sysnet``/``sysib``, decoded by position."""
    out: list[_Placed] = []
    for sec in frame.all(COUNTER_KINDS[kind]):
        if sec.schema is None:
            if sec.status != "ok":
                detail = f" ({sec.detail})" if sec.detail else ""
                warn.add(sec.kind, None, [f"{sec.status}{detail}"])
            continue
        placed = _guard(warn, sec.kind, None, None, _placed, sec, warn)
        if placed is not None:
            out.append(placed)
    return out


def _placed(sec: Section, warn: _Warner) -> _Placed | None:
    assert sec.schema is not None
    plan: tuple[tuple[CounterRun, ...], list[str]] | None = sec.schema.plans.get("runs")
    if plan is None:
        plan = sec.schema.plans["runs"] = counter_runs(sec.kind, sec.schema.names)
    runs, plan_warnings = plan
    warn.add(sec.kind, None, plan_warnings)
    if sec.status != "ok":
        detail = f" ({sec.detail})" if sec.detail else ""
        warn.add(sec.kind, None, [f"{sec.status}{detail}"])
    vals, warnings = decode_values(sec.text, sec.schema.names)
    warn.add(sec.kind, None, warnings)
    return (sec, runs, vals) if vals is not None else None


def _slow_hw_names(frame: Frame) -> dict[tuple[str, int], frozenset[str]]:
    """hw_counters the probe reads on slow ticks only (ib_hw_tick), by (device, port)."""
    out: dict[tuple[str, int], frozenset[str]] = {}
    for sec in _texts(frame, "sysib_slow"):
        out.update(_memo(_hw_in_text, sec.text))
    return out


def _hw_in_text(text: str) -> dict[tuple[str, int], frozenset[str]]:
    found: dict[tuple[str, int], set[str]] = {}
    for line in text.splitlines():
        parts = line.split(" ", 1)[0].split("/")
        # <dev>/ports/<n>/hw_counters/<name>
        if len(parts) == 5 and parts[1] == "ports" and parts[3] == "hw_counters":
            n = parse_uint(parts[2])
            if n is not None:
                found.setdefault((clean(parts[0]), n), set()).add(clean(parts[4]))
    return {k: frozenset(v) for k, v in found.items()}


def _driver_infos(frame: Frame, warn: _Warner) -> dict[str, DriverInfo]:
    out: dict[str, DriverInfo] = {}
    for s in _texts(frame, "ethtool_i"):
        if s.subject:
            info = _guard(warn, s.kind, s.subject, None, _memo, parse_ethtool_info, s.text)
            if info is not None:
                warn.add(s.kind, s.subject, info.warnings)
                out[s.subject] = info
    return out


def _ethtool_stats(frame: Frame, warn: _Warner) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in frame.all("ethtool_S"):  # an empty timed-out section still needs saying
        if not s.subject:
            continue
        # A timed-out or truncated dump is partial but real (parsed, and said); an error
        # exit printed a message instead of counters (said, not parsed).
        unplaced = (s.detail or "").startswith(UNKNOWN_SCHEMA)
        if s.status == "error" and not unplaced and (
            not s.text.strip() or "no stats available" in s.text
        ):
            continue  # a driver without ethtool stats (thunderbolt-net, veth): nothing to say
        if s.status != "ok":
            _tool_output(frame, s.kind, s.subject, warn)
        if s.schema is not None:
            names: tuple[str, ...] | None = s.schema.plans.get("ethtool")
            if names is None:
                names = s.schema.plans["ethtool"] = stat_names(s.schema.names)
            got = _guard(warn, s.kind, s.subject, None, section_values, s, names)
            if got is not None:
                warn.add(s.kind, s.subject, got[1])
                out[s.subject] = got[0]
        elif s.status in _PARTIAL_BUT_REAL:
            stats = _guard(warn, s.kind, s.subject, None, parse_ethtool_stats, s.text)
            if stats is not None:
                warn.add(s.kind, s.subject, stats.warnings)
                out[s.subject] = stats.counters
    return out


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
    slow_hw: dict[tuple[str, int], frozenset[str]],
) -> LinkSample:
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
    link.rate_gbps = port.rate_gbps
    link.firmware = dev.fw_ver
    link.pcie = dev.pcie
    link.temperature_c = dev.temperature_c
    ib_counters = {**port.counters, **port.counters_ext}
    if ib_counters:
        link.counters["ib_port"] = ib_counters
    if port.hw_counters:
        hw = dict(port.hw_counters)
        slow = {k: hw.pop(k) for k in slow_hw.get((dev.name, port.port), ()) if k in hw}
        if hw:
            link.counters["ib_hw"] = hw
        if slow:
            link.counters[SLOW_SOURCE] = slow
    link.saturated = saturated_ib_counters(port.counters)
    if rec is not None:
        _apply_netdev(link, rec)
    return link


def _netdev_link(rec: NetdevRecord) -> LinkSample:
    link = LinkSample(id=rec.name, netdev=rec.name, physical=rec.physical)
    link.kind = "netdev" if rec.physical else "virtual"
    _apply_netdev(link, rec)
    return link


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
    link: LinkSample,
    frame: Frame,
    infos: dict[str, DriverInfo],
    ethtool: dict[str, dict[str, int]],
    netdevs: dict[str, NetdevRecord],
    devices: dict[str, RdmaDeviceRecord],
    warn: _Warner,
) -> None:
    """Driver facts, normalized metrics and QoS of one link, each behind its own guard."""
    _guard(warn, "link", link.id, None, _finish_metrics, link, infos, ethtool, netdevs, devices)
    link.read_ns = _read_ns(link, frame, ethtool)
    ndev = link.netdev
    rec = netdevs.get(ndev) if ndev else None
    raw_ethtool = ethtool.get(ndev) if ndev else None
    link.qos = _guard(warn, "qos", ndev, None, _qos, frame, ndev, rec, raw_ethtool, warn)


def _read_ns(link: LinkSample, frame: Frame, ethtool: dict[str, dict[str, int]]) -> int | None:
    """When the link's counters were read: its ethtool -S, else its RDMA port, else sysfs."""
    if link.netdev is not None and link.netdev in ethtool:
        sec = frame.find("ethtool_S", link.netdev)
        if sec is not None:
            return sec.read_ns
    sec = frame.find("sysib" if link.rdma_device is not None else "sysnet")
    return sec.read_ns if sec is not None else None


def _finish_metrics(
    link: LinkSample,
    infos: dict[str, DriverInfo],
    ethtool: dict[str, dict[str, int]],
    netdevs: dict[str, NetdevRecord],
    devices: dict[str, RdmaDeviceRecord],
) -> None:
    ndev = link.netdev
    info = infos.get(ndev) if ndev else None
    if info is not None:
        link.driver = info.driver
        link.driver_version = info.version
        link.firmware = info.firmware_version or link.firmware
        if info.driver in _TB_DRIVERS:
            link.kind = "tb"
    rec = netdevs.get(ndev) if ndev else None
    raw_ethtool = ethtool.get(ndev) if ndev else None
    if raw_ethtool:
        link.counters["ethtool"] = raw_ethtool

    # Precedence: netdev < RDMA port < ethtool port counters, metric by metric.
    metrics: dict[str, MetricValue] = {}
    if rec is not None:
        metrics.update(
            normalize_netdev(rec.statistics, rec.carrier_changes, rec.carrier_down_count)
        )
    if link.rdma_device is not None and link.port is not None:
        port = devices[link.rdma_device].ports[link.port]
        metrics.update(normalize_ib({**port.counters, **port.counters_ext}, port.hw_counters))
    if raw_ethtool:
        metrics.update(normalize_ethtool(raw_ethtool, link.driver))
    link.metrics = metrics


# Statuses whose text is tool output worth parsing: a timeout or the byte cap cut it short.
_PARTIAL_BUT_REAL = ("ok", "timeout", "truncated")


def _tool_output(frame: Frame, kind: str, subject: str, warn: _Warner) -> Section | None:
    # A tool that failed printed its error message, not its table: report it in one
    # line instead of feeding the message to the parser word by word.
    sec = frame.find(kind, subject)
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
    frame: Frame,
    ndev: str | None,
    rec: NetdevRecord | None,
    raw_ethtool: dict[str, int] | None,
    warn: _Warner,
) -> QosConfig | None:
    if ndev is None:
        return None
    cfg: QosConfig | None = None
    mq = _tool_output(frame, "mlnx_qos", ndev, warn)
    dcb = _tool_output(frame, "dcb_pfc", ndev, warn)
    if mq is not None and mq.text.strip():
        parsed = _memo(parse_mlnx_qos, mq.text)
        warn.add(mq.kind, ndev, parsed.warnings)
        cfg = _shallow(parsed.config)  # the parse is shared (memoized); this link's is not
    elif dcb is not None and dcb.text.strip():
        parsed_dcb = _memo(parse_dcb_pfc, dcb.text)
        warn.add(dcb.kind, ndev, parsed_dcb.warnings)
        cfg = _shallow(parsed_dcb.config)
    cfg = _dcb_extras(frame, ndev, cfg, warn)
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


def _dcb_extras(
    frame: Frame, ndev: str, cfg: QosConfig | None, warn: _Warner
) -> QosConfig | None:
    # iproute2 dcb fills what mlnx_qos did not report (hosts without mlnx-tools).
    trust_sec = _tool_output(frame, "dcb_apptrust", ndev, warn)
    app_sec = _tool_output(frame, "dcb_app", ndev, warn)
    ets_sec = _tool_output(frame, "dcb_ets", ndev, warn)
    buf_sec = _tool_output(frame, "dcb_buffer", ndev, warn)
    found = [s for s in (trust_sec, app_sec, ets_sec, buf_sec)
             if s is not None and s.text.strip()]
    if not found:
        return cfg
    if cfg is None:
        cfg = QosConfig(source="dcb")
    if trust_sec is not None and trust_sec.text.strip() and cfg.trust is None:
        parsed_trust = parse_dcb_apptrust(trust_sec.text)
        warn.add(trust_sec.kind, ndev, parsed_trust.warnings)
        cfg.trust = parsed_trust.trust
    if app_sec is not None and app_sec.text.strip() and cfg.dscp2prio is None:
        parsed_app = parse_dcb_app(app_sec.text)
        warn.add(app_sec.kind, ndev, parsed_app.warnings)
        cfg.dscp2prio = parsed_app.dscp2prio or None
    if ets_sec is not None and ets_sec.text.strip() and cfg.ets is None:
        parsed_ets = parse_dcb_ets(ets_sec.text)
        warn.add(ets_sec.kind, ndev, parsed_ets.warnings)
        cfg.ets = parsed_ets.ets or None
    if buf_sec is not None and buf_sec.text.strip() and cfg.prio_buffer is None:
        parsed_buf = _memo(parse_dcb_buffer, buf_sec.text)
        warn.add(buf_sec.kind, ndev, parsed_buf.warnings)
        cfg.prio_buffer = dict(parsed_buf.prio_buffer) or None
        cfg.buffer_size = dict(parsed_buf.buffer_size) or None
    return cfg


def _cpu_throttle(frame: Frame, warn: _Warner) -> int | None:
    total: int | None = None
    for s in _texts(frame, "cputhrottle"):
        values, warnings = parse_kv_dump(s.text)
        warn.add(s.kind, s.subject, warnings)
        for path, value in values.items():
            num = parse_uint(value)
            if num is not None:
                total = (total or 0) + num
            elif value:
                warn.add(s.kind, s.subject, [f"{path}: bad value {value[:40]!r}"])
    if total is not None and total > U64_MAX:
        warn.add("cputhrottle", None, ["sum beyond 64 bits: no value"])
        return None
    return total


def _probe_notes(frame: Frame, sample: HostSample, warn: _Warner) -> None:
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


def _gpus(frame: Frame, sample: HostSample, warn: _Warner) -> None:
    # A bug in the GPU parsers must not lose the network sample.
    found = _guard(warn, "gpu", None, None, gpus_from_frame, frame)
    if found is None:
        return
    gpus, read_ns, warnings = found
    sample.gpus = list(gpus)
    sample.gpu_read_ns = read_ns
    warn.add("gpu", None, list(warnings))
