"""fabtop's own series as samples: the pure half of the read-back (fabtop/run/promself.py).

An instant vector of ``fabtop_*`` series (the query API's JSON) becomes hosts with their
links, GPUs and inference servers, and the shards' findings; every name is the one
fabtop/run/export.py exports, mapped back through the exporter's own tables. Every value
goes through collectors/numbers.py (promsource's checks), every label through
collectors/text.py: a bad sample costs that sample, named on its host; a label with
control characters is no label.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.numbers import U64_MAX, parse_float
from collectors.samples import GpuSample, HostSample, InferenceSample, LinkSample, QosConfig
from collectors.text import clean, has_control
from collectors.vocabulary import InferenceRate, Metric
from fabtop.core.cpu import gc_paused
from fabtop.core.findings import SEVERITIES
from fabtop.core.rules.gpu import HW_SLOWDOWN, SW_SLOWDOWN
from fabtop.run.export import COUNTER_UNITS, GPU_GAUGES, LINK_COUNTERS, counter_name
from fabtop.run.promself_info import (
    CABLE_FAMILIES,
    GPU_INFO_NUMBERS,
    LINK_FAMILIES,
    OwnInfo,
    finish,
    place_host,
    place_link,
)
from fabtop.run.promsource import MAX_UNIX_S, _number

# fabtop_link_<name>_total -> (metric, the exporter's scale to base units)
COUNTERS: dict[str, tuple[Metric, float]] = {
    f"{counter_name(m)}_total": (m, COUNTER_UNITS.get(m, (str(m), 1.0))[1]) for m in LINK_COUNTERS
}
# fabtop_gpu_<name> -> (GpuSample field, the exporter's scale)
GPUS: dict[str, tuple[str, float]] = {m: (f, scale) for f, m, _, scale in GPU_GAUGES}
# fabtop_inference_<name> -> InferenceSample field
INFERENCE: dict[str, str] = {
    "fabtop_inference_generated_tokens_total": "generated_tokens_total",
    "fabtop_inference_prompt_tokens_total": "prompt_tokens_total",
    "fabtop_inference_preemptions_total": "preemptions_total",
    "fabtop_inference_requests_running": "requests_running",
    "fabtop_inference_requests_waiting": "requests_waiting",
}
# fabtop_inference_<latency> -> {percentile label: the rate engine's name}: latencies a
# shard read from the server's histograms, which its series do not carry.
LATENCIES: dict[str, dict[str, InferenceRate]] = {
    "fabtop_inference_time_to_first_token_seconds": {
        "50": InferenceRate.TTFT_P50_S,
        "99": InferenceRate.TTFT_P99_S,
    },
    "fabtop_inference_inter_token_latency_seconds": {
        "50": InferenceRate.ITL_P50_S,
        "99": InferenceRate.ITL_P99_S,
    },
}
# Labels of an info series that name a link's configuration (LinkSample's text fields),
# filled where a shard exports them.
LINK_INFO = (
    "netdev",
    "rdma_device",
    "link_layer",
    "kind",
    "node_type",
    "driver",
    "driver_version",
    "firmware",
)
GPU_INFO = ("name", "uuid", "bus_id", "vendor")
# fabtop_link_<gauge> -> (LinkSample field, the exporter's scale)
LINK_NUMBERS: dict[str, tuple[str, float]] = {
    "fabtop_link_speed_bytes_per_second": ("rate_gbps", 1e9 / 8),
    "fabtop_link_temperature_celsius": ("temperature_c", 1.0),
    "fabtop_link_mtu_bytes": ("mtu", 1.0),
    "fabtop_link_lanes": ("width", 1.0),
}
# Evidence fields kept per finding (a finding's evidence is a handful of fields).
MAX_EVIDENCE = 32
_SLOWDOWN = {SW_SLOWDOWN: ("sw_thermal_slowdown",), HW_SLOWDOWN: ("hw_thermal_slowdown",)}
PRIORITIES = {str(p): p for p in range(8)}  # a priority label's text -> the priority


@dataclass(slots=True)
class OwnHost:
    """What one host's shard exported, as a sample is built from it."""

    name: str
    shard: str = ""  # the target (job/instance) that exported it: what ``up`` is about
    t: float = 0.0  # when Prometheus scraped its shard (unix s)
    up: bool = True  # fabtop_host_up: the shard's frames from it arrive
    links: dict[str, LinkSample] = field(default_factory=dict)
    pfc: dict[str, set[int]] = field(default_factory=dict)  # link -> PFC-enabled priorities
    ecn: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # (link, np|rp)
    qos: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # link -> source, trust
    gpus: dict[int, GpuSample] = field(default_factory=dict)
    reasons: dict[int, list[str]] = field(default_factory=dict)  # gpu -> throttle reasons
    inference: dict[str, InferenceSample] = field(default_factory=dict)
    latencies: dict[str, dict[str, float]] = field(default_factory=dict)  # url -> rate -> s
    info: OwnInfo = field(default_factory=OwnInfo)  # configuration, identities, coverage
    stated: set[str] = field(default_factory=set)  # links with fabtop_link_state_info
    dropped: list[str] = field(default_factory=list)
    known_only: bool = False  # from KNOWN_QUERY alone: a host, no sample of it now


@dataclass(slots=True)
class ShardFinding:
    """One ``fabtop_finding`` series, with what else the shard said of it."""

    rule: str
    severity: str
    subject: str
    shard: str
    host: str | None = None
    link: str | None = None
    priority: int | None = None
    evidence: dict[str, float | int | str | None] = field(default_factory=dict)
    since: float | None = None


@dataclass(slots=True)
class OwnAnswer:
    """One poll's answer: hosts, the shards' findings and the shards seen."""

    hosts: dict[str, OwnHost] = field(default_factory=dict)
    findings: list[ShardFinding] = field(default_factory=list)
    shards: dict[str, tuple[str, str]] = field(default_factory=dict)  # target -> (job, instance)
    names: dict[str, str] = field(default_factory=dict)  # target -> its --shard name
    odd: int = 0  # results of no usable shape
    # The answer holds the shards' info series (fabtop_shard_info came: an instant query
    # of every series, not the backfill's counters): what they do not say is not there.
    infos: bool = False
    # The findings' evidence series (name, labels, value), put on them once all are read.
    evidence: list[tuple[str, Mapping[str, object], float]] = field(default_factory=list)


def _label(labels: Mapping[str, object], key: str, most: int = 128) -> str | None:
    v = labels.get(key)
    if not isinstance(v, str) or len(v) > most:
        return None
    return _usable(v)


@functools.lru_cache(maxsize=65536)  # the same hosts, links and priorities, every series
def _usable(v: str) -> str | None:
    if has_control(v):
        return None  # a label that would rename or redraw something is no label
    return v.strip() or None


def _prio(labels: Mapping[str, object]) -> int | None:
    p = labels.get("priority")
    return PRIORITIES.get(p) if isinstance(p, str) else None


def shard_of(labels: Mapping[str, object]) -> tuple[str, str, str]:
    """(target, job, instance): the scrape target that exported a series, as ``up`` names it."""
    job, instance = labels.get("job"), labels.get("instance")
    return _target(
        job if isinstance(job, str) else "", instance if isinstance(instance, str) else ""
    )


@functools.lru_cache(maxsize=4096)  # a few shards, every series of theirs
def _target(job: str, instance: str) -> tuple[str, str, str]:
    job = (_usable(job) or "") if len(job) <= 128 else ""
    instance = (_usable(instance) or "") if len(instance) <= 128 else ""
    return (f"{job}/{instance}" if job else instance), job, instance


def _counter(value: float, scale: float) -> int | None:
    """A counter's value back in its vocabulary unit (seconds -> microseconds)."""
    raw = value / scale
    if not 0 <= raw <= U64_MAX or not math.isfinite(raw):
        return None
    return round(raw)


# What a series is about, as read_own files it.
_FINDING, _SHARD, _HOST, _NO_HOST = range(4)


@dataclass(slots=True)
class Series:
    """One series' labels, read once: what it is about and where each of its values goes.

    An instant answer has one value a series; a range answer (the backfill) has hundreds,
    so everything taken from the labels (host, shard, link, priority, field) is taken
    here, and a value costs only its number's checks (:func:`_file`).
    """

    name: str
    labels: Mapping[str, object]
    target: str  # the scrape target that exported it (job/instance)
    job: str
    instance: str
    about: int  # _FINDING, _SHARD (no host label), _HOST or _NO_HOST (unusable host label)
    host: str = ""
    shard: str | None = None  # the shard label of fabtop_host_up and fabtop_shard_info
    # A link counter's (with a usable link label): its metric, scale, link and priority
    counter: Metric | None = None
    scale: float = 1.0
    link: str = ""
    priority: int | None = None


def series_of(labels: Mapping[str, object]) -> Series | None:
    """The series of a result's ``metric`` labels; None when it has no name."""
    name = labels.get("__name__")
    if not isinstance(name, str):
        return None
    target, job, instance = shard_of(labels)
    s = Series(name, labels, target, job, instance, _HOST)
    if name.startswith("fabtop_finding"):
        s.about = _FINDING
    elif "host" not in labels:
        s.about = _SHARD  # fabtop_source_up, fabtop_shard_info: about the shard, not a host
    elif (host := _label(labels, "host")) is None:
        s.about = _NO_HOST
    else:
        s.host = host
        if name in COUNTERS and (lid := _label(labels, "link")) is not None:
            s.counter, s.scale = COUNTERS[name]
            s.link, s.priority = lid, _prio(labels)
    if (name == "fabtop_host_up" and s.about == _HOST) or (
        name == "fabtop_shard_info" and s.about == _SHARD
    ):
        s.shard = _label(labels, "shard")
    return s


def read_own(
    results: Sequence[object], stamps: Sequence[object] = (), fallback_t: float = 0.0
) -> OwnAnswer:
    """Instant-vector results of SERIES_QUERY (and STAMPS_QUERY's) as hosts and findings.

    A host's time is its shard's scrape time from ``stamps``; without one, the newest
    sample time of its own series (an instant query's evaluation time), else ``fallback_t``.
    """
    with gc_paused():  # a series' few objects, 278 k series for 256 hosts (cpu.py says why)
        return _read_own(results, stamps, fallback_t)


def _read_own(results: Sequence[object], stamps: Sequence[object], fallback_t: float) -> OwnAnswer:
    out = OwnAnswer()
    scraped: dict[str, float] = {}
    for r in stamps:
        if isinstance(r, dict) and isinstance(labels := r.get("metric"), dict):
            host = _label(labels, "host")
            v = r.get("value")
            t = _number(v[1]) if isinstance(v, list) and len(v) == 2 else None
            if host is not None and t is not None and 0 < t < MAX_UNIX_S:
                scraped[host] = t
    for r in results:
        if (
            not isinstance(r, dict)
            or not isinstance(labels := r.get("metric"), dict)
            or (s := series_of(labels)) is None
        ):
            out.odd += 1
            continue
        _file(out, s, r.get("value"), scraped)
    return _finish(out, scraped, fallback_t)


def read_range(matrix: Sequence[object]) -> list[tuple[float, OwnAnswer]]:
    """A range answer as one answer per step, oldest first: each series' labels read once
    (:func:`series_of`), then its values filed by their time (checked). A step's points
    all stand at its time, so that is each host's time in it (what STAMPS_QUERY says live).
    """
    steps: dict[float, OwnAnswer] = {}
    for r in matrix:
        if not isinstance(r, dict) or not isinstance(labels := r.get("metric"), dict):
            continue
        values = r.get("values")
        s = series_of(labels)
        if not isinstance(values, list) or s is None:
            continue
        for v in values:
            t = _number(v[0]) if isinstance(v, list) and len(v) == 2 else None
            if t is not None and 0 < t < MAX_UNIX_S:
                out = steps.get(t)
                if out is None:
                    out = steps[t] = OwnAnswer()
                _file(out, s, v, None)
    return [(t, _finish(steps[t], None, t)) for t in sorted(steps)]


def _file(out: OwnAnswer, s: Series, v: object, scraped: Mapping[str, float] | None) -> None:
    """One value of series ``s`` filed on its host in ``out``. Every value goes through
    promsource's checks (_number's, called here without the call: three million of them
    in a fleet's backfill); one that fails is named on its host. ``scraped``: as
    read_own's; None where every host's time is the answer's (a range step)."""
    if not (isinstance(v, list) and len(v) == 2):
        out.odd += 1
        return
    if s.target and s.target not in out.shards:
        out.shards[s.target] = (s.job, s.instance)
    raw = v[1]
    value = parse_float(raw) if isinstance(raw, str) else _number(raw)
    if s.about != _HOST:
        if s.about == _FINDING:
            if s.name == "fabtop_finding":
                f = _finding(s.labels, value, s.target)
                if f is not None:
                    out.findings.append(f)
            elif value is not None:
                out.evidence.append((s.name, s.labels, value))
        elif s.about == _NO_HOST:
            out.odd += 1
        elif s.name == "fabtop_shard_info":
            out.infos = True
            if s.shard:
                out.names[s.target] = s.shard
        return
    h = out.hosts.get(s.host)
    if h is None:
        h = out.hosts[s.host] = OwnHost(s.host, s.target)
    if scraped is not None and s.host not in scraped:  # its series' own (evaluation) time
        ts = _number(v[0])
        if ts is not None and 0 < ts < MAX_UNIX_S:
            h.t = max(h.t, ts)
    if value is None:
        h.dropped.append(f"{clean(s.name, 100)}: {clean(str(raw), 40)} dropped")
        return
    if s.shard:  # fabtop_host_up's
        out.names[s.target] = s.shard
    if s.counter is None:
        why = _place(h, s.name, s.labels, value)
    else:  # most values: what _place_link does with a counter
        link = h.links.get(s.link)
        if link is None:
            link = h.links[s.link] = _new_link(s.link)
        n = _counter(value, s.scale)
        if n is None:
            why = "dropped (not a 64-bit counter)"
        elif not s.counter.per_priority:
            why = None
            link.metrics[s.counter] = n
        elif s.priority is None:
            why = "dropped (no priority 0-7)"
        else:
            why = None
            per = link.metrics.get(s.counter)
            if per is None:
                per = link.metrics[s.counter] = {}
            if isinstance(per, dict):
                per[s.priority] = n
    if why is not None:
        h.dropped.append(f"{clean(s.name, 100)}: {why}")


def _finish(out: OwnAnswer, scraped: Mapping[str, float] | None, fallback_t: float) -> OwnAnswer:
    """Each host's time (``scraped``'s, else its newest point's, else ``fallback_t``) and
    the evidence series onto their findings."""
    for host, h in out.hosts.items():
        h.t = fallback_t if scraped is None else scraped.get(host, h.t or fallback_t)
    _evidence(out.findings, out.evidence)
    out.evidence.clear()
    return out


def _finding(labels: Mapping[str, object], value: float | None, target: str) -> ShardFinding | None:
    rule, sev, subj = (_label(labels, k, 300) for k in ("rule", "severity", "subject"))
    if not (rule and subj and value == 1):
        return None
    return ShardFinding(
        rule,
        sev if sev in SEVERITIES else "warning",
        subj,
        target,
        host=_label(labels, "host"),
        link=_label(labels, "link"),
        priority=_prio(labels),
    )


def _evidence(
    found: list[ShardFinding], about: list[tuple[str, Mapping[str, object], float]]
) -> None:
    """The shards' evidence series onto their findings (keyed by rule and subject)."""
    by = {(f.rule, f.subject): f for f in found}
    for name, labels, value in about:
        f = by.get((_label(labels, "rule", 300) or "", _label(labels, "subject", 300) or ""))
        key = _label(labels, "field")
        if f is None:
            continue
        if name == "fabtop_finding_since_timestamp_seconds":
            f.since = value
        elif key is None or len(f.evidence) >= MAX_EVIDENCE:
            continue
        elif name == "fabtop_finding_evidence":
            f.evidence[key] = value
        elif name == "fabtop_finding_evidence_info":
            text = _label(labels, "value", 300)
            old = f.evidence.get(key)  # ports come one series each
            f.evidence[key] = text if old is None else f"{old}, {text}"


def _place(h: OwnHost, name: str, labels: Mapping[str, object], value: float) -> str | None:
    """File one finite value on its host; why not, when it cannot be."""
    if name == "fabtop_host_up":
        h.up = value == 1
        return None
    if name.startswith("fabtop_link_"):
        lid = _label(labels, "link")
        if lid is None:
            return "dropped (no link label)"
        link = h.links.get(lid)
        if link is None:
            link = h.links[lid] = _new_link(lid)
        return _place_link(h, link, name, labels, value)
    if name.startswith("fabtop_gpu_"):
        gpu = labels.get("gpu")
        if not (isinstance(gpu, str) and gpu.isascii() and gpu.isdigit() and len(gpu) <= 4):
            return "dropped (no usable gpu label)"
        g = h.gpus.get(int(gpu))
        if g is None:
            g = h.gpus[int(gpu)] = GpuSample(index=int(gpu))
        if name == "fabtop_gpu_thermal_slowdown":
            g.throttle_reasons = _SLOWDOWN.get(int(value), ())
        elif name == "fabtop_gpu_throttle_reason":
            if value == 1 and (reason := _label(labels, "reason")):
                h.reasons.setdefault(g.index, []).append(reason)
        elif name == "fabtop_gpu_info":
            for key in GPU_INFO:
                if (text := _label(labels, key)) is not None:
                    setattr(g, key, text)
        elif name in GPUS:
            f, scale = GPUS[name]
            setattr(g, f, value / scale)
        elif name in GPU_INFO_NUMBERS:
            f = GPU_INFO_NUMBERS[name]
            setattr(g, f, round(value) if f in ("pcie_gen", "pcie_width") else value)
        elif name == "fabtop_gpu_pcie_bytes_per_second":
            d = _label(labels, "direction")
            if d in ("rx", "tx"):
                setattr(g, f"pcie_{d}_kbps", value / 1e3)  # exported in bytes/s, kept in KB/s
        return None
    if name.startswith("fabtop_inference_"):
        url = _label(labels, "url", 300)
        if url is None:
            return "dropped (no url label)"
        inf = h.inference.get(url)
        if inf is None:
            inf = h.inference[url] = InferenceSample(url=url)
        if name == "fabtop_inference_info":
            inf.server, inf.model = _label(labels, "server"), _label(labels, "model")
        elif name in INFERENCE:
            setattr(inf, INFERENCE[name], value)
        elif name in LATENCIES:
            rate = LATENCIES[name].get(_label(labels, "percentile") or "")
            if rate is not None:
                h.latencies.setdefault(url, {})[rate] = value
        return None
    if name.startswith(("fabtop_thunderbolt_", "fabtop_software_", "fabtop_coverage_")):
        return place_host(h.info, name, labels, value, _label)
    return None


def _new_link(lid: str) -> LinkSample:
    """A link known by its id alone (until its info series says more): ``mlx5_0/1`` an
    RDMA port, else a netdev."""
    dev, sep, port = lid.partition("/")
    if sep and port.isdigit():
        return LinkSample(id=lid, rdma_device=dev, port=int(port), physical=True, kind="roce")
    return LinkSample(id=lid, netdev=lid, physical=True)


def _place_link(
    h: OwnHost, link: LinkSample, name: str, labels: Mapping[str, object], value: float
) -> str | None:
    if name in COUNTERS:
        metric, scale = COUNTERS[name]
        n = _counter(value, scale)
        if n is None:
            return "dropped (not a 64-bit counter)"
        if metric.per_priority:
            prio = _prio(labels)
            if prio is None:
                return "dropped (no priority 0-7)"
            per = link.metrics.setdefault(metric, {})
            if isinstance(per, dict):
                per[prio] = n
        else:
            link.metrics[metric] = n
    elif name == "fabtop_link_up":
        if link.id not in h.stated:  # fabtop_link_state_info says more, "" included
            link.state = "up" if value == 1 else "down"
    elif name in LINK_NUMBERS:
        f, scale = LINK_NUMBERS[name]
        x = value / scale
        setattr(link, f, round(x) if f in ("mtu", "width") else x)
    elif name in ("fabtop_link_pfc_enabled", "fabtop_link_ecn_enabled"):
        prio = _prio(labels)
        if prio is None:
            return "dropped (no priority 0-7)"
        point = "pfc" if name == "fabtop_link_pfc_enabled" else _label(labels, "point")
        if point not in ("pfc", "np", "rp"):
            return "dropped (no point np or rp)"
        on = (
            h.pfc.setdefault(link.id, set())
            if point == "pfc"
            else h.ecn.setdefault((link.id, point), set())
        )
        if value == 1:
            on.add(prio)
    elif name == "fabtop_link_qos_info":
        h.qos[link.id] = (_label(labels, "source") or "prometheus", _label(labels, "trust"))
    elif name == "fabtop_link_info":
        for key in LINK_INFO:
            if (text := _label(labels, key)) is not None:
                setattr(link, key, text)
        port = labels.get("port")
        if isinstance(port, str) and port.isdigit() and len(port) <= 3:
            link.port = int(port)
        link.physical = link.kind != "virtual"
    elif name == "fabtop_link_state_info":
        h.stated.add(link.id)
        for key in ("state", "port_state", "phys_state"):
            setattr(link, key, _label(labels, key))
    elif name in LINK_FAMILIES or name in CABLE_FAMILIES:
        return place_link(h.info, link.id, name, labels, value, _label)
    return None


def sample_of(h: OwnHost, seq: int) -> HostSample:
    """The host's sample, stamped with its shard's scrape time."""
    info = h.info
    for lid in {*h.pfc, *h.qos, *(lid for lid, _ in h.ecn), *info.qos_links}:
        source, trust = h.qos.get(lid, ("prometheus", None))
        pfc, np, rp = h.pfc.get(lid), h.ecn.get((lid, "np")), h.ecn.get((lid, "rp"))
        h.links[lid].qos = QosConfig(
            source=source,
            trust=trust,
            pfc_enabled=None if pfc is None else tuple(sorted(pfc)),
            dscp2prio=info.dscp.get(lid),
            ecn_np_enabled=None if np is None else tuple(sorted(np)),
            ecn_rp_enabled=None if rp is None else tuple(sorted(rp)),
            prio_buffer=info.prio_buffer.get(lid),
            buffer_size=info.buffer_size.get(lid),
        )
    for i, reasons in h.reasons.items():
        h.gpus[i].throttle_reasons = tuple(reasons)
    inference = list(h.inference.values())
    for inf in inference:
        inf.read_s = h.t
    s = HostSample(
        host=h.name,
        seq=seq,
        clock_ns=int(h.t * 1e9),
        uptime_s=h.t,  # scrape times never step back on one Prometheus
        links=dict(sorted(h.links.items())),
        gpus=[h.gpus[i] for i in sorted(h.gpus)],
        gpu_read_ns=int(h.t * 1e9) if h.gpus else None,
        inference=inference,
    )
    finish(info, s)
    return s


def add_known(answer: OwnAnswer, known: Sequence[object]) -> None:
    """The hosts of KNOWN_QUERY's answer that this answer lacks, with their shards."""
    for r in known:
        if not (isinstance(r, dict) and isinstance(labels := r.get("metric"), dict)):
            continue
        host = _label(labels, "host")
        target, job, instance = shard_of(labels)
        if host is None or not target:
            continue
        answer.shards.setdefault(target, (job, instance))
        if (name := _label(labels, "shard")) is not None:
            answer.names.setdefault(target, name)
        if host not in answer.hosts:
            answer.hosts[host] = OwnHost(host, target, known_only=True)


def of_host(r: object) -> bool:
    """A result about a host (what the stamps query answers where shards export)."""
    return isinstance(r, dict) and isinstance(m := r.get("metric"), dict) and "host" in m


def stamp_of(r: object) -> float | None:
    """The value of a ``timestamp(...)`` result: a scrape time in unix seconds, checked."""
    v = r.get("value") if isinstance(r, dict) else None
    t = _number(v[1]) if isinstance(v, list) and len(v) == 2 else None
    return t if t is not None and 0 < t < MAX_UNIX_S else None
