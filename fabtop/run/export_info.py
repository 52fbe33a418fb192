"""What the dashboard shows beyond counters, as Prometheus series (docs/EXPORT.md).

Configuration, identities and states are *info* series (value 1, the facts in labels);
every number is a value, never a label. Label values are bounded: each one from remote
text goes through :func:`label` (collectors/text.py's cleaning, cut to
:data:`MAX_LABEL` characters), and the label *sets* are bounded by the fabric (a link's
firmware, a host's kernel), by fabtop's own vocabularies (coverage reasons, finding
evidence fields, Thunderbolt cable states) or by fixed ranges (priorities 0-7).

A shard (``fabtop export --shard NAME``) says who it is in ``fabtop_shard_info`` and puts
its name on each of its hosts' ``fabtop_host_up``, so a reader can name the hosts a shard
that stopped answering leaves blind. No series carries a ``job`` or ``instance`` label:
those are Prometheus's, for the scrape target, whatever ``honor_labels`` says.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

import fabtop
from collectors.numbers import finite
from collectors.samples import HostSample, LinkSample, VersionRead
from collectors.text import clean
from collectors.vocabulary import InferenceRate
from fabtop.core.coverage import gaps_of
from fabtop.core.findings import PortRef, evidence_value
from fabtop.core.state import STATUSES, UP, FabricState, HostState, effective_status
from fabtop.core.thunderbolt import pair_cables

# One label value: a firmware version, a model name, a URL. Longer is cut (with "…"):
# a label is a key, and a 4 KiB remote string is nobody's key.
MAX_LABEL = 128
# Finding evidence that is text (a firmware version, a trust mode, the ports a storm
# pauses) is one label value; cut shorter, as it is a fact to read, not a key.
MAX_EVIDENCE_TEXT = 128


# GpuSample field -> (info metric, help): a GPU's slow numbers (limits, clocks, PCIe).
GPU_NUMBERS: tuple[tuple[str, str, str], ...] = (
    ("power_limit_w", "fabtop_gpu_power_limit_watts", "GPU power limit"),
    ("mem_clock_mhz", "fabtop_gpu_memory_clock_hertz", "GPU memory clock"),
    ("fan_pct", "fabtop_gpu_fan_percent", "GPU fan speed"),
    ("pcie_gen", "fabtop_gpu_pcie_generation", "GPU PCIe generation"),
    ("pcie_width", "fabtop_gpu_pcie_lanes", "GPU PCIe width"),
)
# A coverage gap's why in the host's own words (tool names, a status): a sentence to read,
# cut like a finding's text evidence.
MAX_GAP_DETAIL = MAX_EVIDENCE_TEXT


def label(v: object) -> str:
    """One label value: remote text cleaned (collectors/text.py) and bounded; None is ""."""
    return "" if v is None else clean(str(v), MAX_LABEL)


def add_sample(
    fam: Any, labels: list[str], v: Any, scale: float = 1.0, priority: bool = True
) -> None:
    """Every numeric sample goes through here: only a finite value (after scaling) becomes
    one.

    A per-priority value (a dict) gets one series per priority (in the order of the
    priorities' text); a plain one has priority="" (``priority=False``: the family has no
    priority label).
    """
    if isinstance(v, dict):
        by_text = {str(p): x for p, x in v.items()}
        for p in sorted(by_text):
            x = scaled(by_text[p], scale)
            if x is not None:
                fam.add_metric([*labels, p], x)
        return
    x = scaled(v, scale)
    if x is not None:
        fam.add_metric([*labels, ""] if priority else labels, x)


def scaled(v: object, scale: float = 1.0) -> float | None:
    """``v * scale`` as a float when ``v`` is a number and both it and the product are
    finite; else None (missing or not a number: absent, never NaN in a time series)."""
    x = finite(v) if isinstance(v, int | float) else None  # finite() refuses bools
    if x is None or scale == 1.0:
        return x
    x *= scale
    return x if math.isfinite(x) else None


def dscp_text(dscps: list[int]) -> str:
    """DSCP values as ranges: ``0-7,46``. At most 64 values in 0-63, so at most ~190
    characters (a pathological map), 3-5 on a real one: a bounded label."""
    out: list[str] = []
    run: list[int] = []
    for d in sorted(set(dscps)):
        if run and d == run[-1] + 1:
            run.append(d)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [d]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def _g(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


class _Families:
    """The info families of one scrape, filled host by host."""

    def __init__(self) -> None:
        hl = ("host", "link")
        self.link_info = _g(
            "fabtop_link_info",
            "1 per link: what it is (identity, driver, firmware)",
            *hl, "netdev", "rdma_device", "port", "kind", "link_layer", "node_type",
            "driver", "driver_version", "firmware",
        )  # fmt: skip
        self.link_state = _g(
            "fabtop_link_state_info",
            "1 per link: its states (netdev/port state, RDMA port and physical states)",
            *hl, "state", "port_state", "phys_state",
        )  # fmt: skip
        self.mtu = _g("fabtop_link_mtu_bytes", "Link MTU", *hl)
        self.lanes = _g("fabtop_link_lanes", "RDMA port lanes (sysfs rate: 4X)", *hl)
        self.pcie_speed = _g(
            "fabtop_link_pcie_transfers_per_second",
            "NIC PCIe link speed per lane (bound: current or max)",
            *hl, "bound",
        )  # fmt: skip
        self.pcie_width = _g(
            "fabtop_link_pcie_lanes", "NIC PCIe link width (bound: current or max)", *hl, "bound"
        )
        self.qos = _g(
            "fabtop_link_qos_info",
            "1 per link with a QoS config: the tool it came from and the trust mode",
            *hl, "source", "trust",
        )  # fmt: skip
        self.ecn = _g(
            "fabtop_link_ecn_enabled",
            "1 when ECN is enabled on the priority (point np: notification, rp: reaction)",
            *hl, "priority", "point",
        )  # fmt: skip
        self.dscp = _g(
            "fabtop_link_dscp_map",
            "DSCP values mapped to the priority (trust dscp): how many; dscp lists them",
            *hl, "priority", "dscp",
        )  # fmt: skip
        self.prio_buffer = _g(
            "fabtop_link_priority_buffer", "Receive buffer of the priority", *hl, "priority"
        )
        self.buffer_size = _g(
            "fabtop_link_buffer_size_bytes", "Size of the receive buffer", *hl, "buffer"
        )
        hg = ("host", "gpu")
        self.gpu_info = _g(
            "fabtop_gpu_info", "1 per GPU: what it is", *hg, "name", "uuid", "bus_id", "vendor"
        )
        self.gpu_reason = _g(
            "fabtop_gpu_throttle_reason",
            "1 per clock event reason active on the GPU (nvidia-smi clocks_event_reasons)",
            *hg, "reason",
        )  # fmt: skip
        self.gpu_num = {f: _g(n, h, *hg) for f, n, h in GPU_NUMBERS}
        self.gpu_pcie_io = _g(
            "fabtop_gpu_pcie_bytes_per_second",
            "GPU PCIe throughput (direction rx, tx)",
            *hg, "direction",
        )  # fmt: skip
        hu = ("host", "url")
        self.inf_info = _g(
            "fabtop_inference_info", "1 per inference server: its kind and model", *hu,
            "server", "model",
        )  # fmt: skip
        self.inf_up = _g("fabtop_inference_up", "1 when the server's /metrics was read", *hu)
        self.inf_prompt_total = CounterMetricFamily(
            "fabtop_inference_prompt_tokens", "Prompt tokens", labels=list(hu)
        )
        self.inf_preempt = CounterMetricFamily(
            "fabtop_inference_preemptions", "Preemptions (vLLM)", labels=list(hu)
        )
        self.inf_prompt = _g(
            "fabtop_inference_prompt_tokens_per_second", "Prompt tokens per second", *hu
        )
        self.inf_ttft = _g(
            "fabtop_inference_time_to_first_token_seconds",
            "Time to first token (percentile 50, 99: a gauge, not a summary)",
            *hu, "percentile",
        )  # fmt: skip
        self.inf_itl = _g(
            "fabtop_inference_inter_token_latency_seconds",
            "Inter-token latency (percentile 50, 99: a gauge, not a summary)",
            *hu, "percentile",
        )  # fmt: skip
        self.tb_domain = _g(
            "fabtop_thunderbolt_domain_info",
            "1 per host with a Thunderbolt domain: its source and identity",
            "host", "source", "self_uid",
        )  # fmt: skip
        self.tb_generation = _g(
            "fabtop_thunderbolt_generation", "Thunderbolt controller generation", "host"
        )
        self.tb_uid = _g(
            "fabtop_thunderbolt_domain_uid_info",
            "1 per identity of a host with more than one Thunderbolt domain",
            "host", "uid",
        )  # fmt: skip
        hp = ("host", "port")
        self.tb_peer = _g(
            "fabtop_thunderbolt_peer_info",
            "1 per Thunderbolt cable end: the local port and netdev, this end's identity "
            "where it is per port (macOS), the far end's identity",
            *hp, "netdev", "self_uid", "peer_uid", "peer_name",
        )  # fmt: skip
        self.tb_lane_speed = _g(
            "fabtop_thunderbolt_lane_speed_bytes_per_second",
            "Thunderbolt lane speed (direction rx, tx, or max: what the port can do)",
            *hp, "direction",
        )  # fmt: skip
        self.tb_lanes = _g(
            "fabtop_thunderbolt_lanes",
            "Thunderbolt lanes (direction rx, tx, or max)",
            *hp, "direction",
        )  # fmt: skip
        self.tb_link_speed = _g(
            "fabtop_thunderbolt_link_speed_bytes_per_second",
            "Thunderbolt link speed as the tool totals it (bound current, max; macOS)",
            *hp, "bound",
        )  # fmt: skip
        self.tb_cable = _g(
            "fabtop_thunderbolt_cable_info",
            "1 per cable end: the far end as this shard paired it (status paired, one_end, "
            "mismatch, by_address)",
            *hp, "netdev", "peer_host", "peer_port", "status",
        )  # fmt: skip
        self.version = _g(
            "fabtop_software_version_info",
            "1 per software of a host: its version (\"\" when unknown; note says why)",
            "host", "software", "version", "source", "note",
        )  # fmt: skip
        self.host_state = _g(
            "fabtop_host_state",
            "1 for the host's connection state (up, connecting, stale, failing, down)",
            "host", "state",
        )  # fmt: skip
        self.gap = _g(
            "fabtop_coverage_gap",
            "1 per whole source not monitored on a reporting host, and why (bounded words; "
            "detail: the why in the host's own words)",
            "host", "source", "reason", "detail",
        )  # fmt: skip

        # For this scrape only, keyed by value: a driver's version or a DSCP map is the same
        # text on every link of the fabric, cleaned and written once.
        self._labels: dict[str, str] = {}
        self._dscp: dict[tuple[tuple[int, int], ...], list[tuple[str, str, float]]] = {}

    def label(self, v: object) -> str:
        """:func:`label` of ``v``, once a scrape for each text."""
        if not isinstance(v, str):
            return label(v)
        e = self._labels.get(v)
        if e is None:
            e = self._labels[v] = label(v)
        return e

    def dscp_rows(self, dscp2prio: dict[int, int]) -> list[tuple[str, str, float]]:
        """(priority, its DSCP values as ranges, how many) of a map, once a scrape for each
        map. One series per priority with its DSCP set as ranges: at most 8 per link, where
        one per DSCP value would be 64."""
        key = tuple(dscp2prio.items())
        rows = self._dscp.get(key)
        if rows is None:
            by_prio: dict[int, list[int]] = {}
            for d, p in key:
                by_prio.setdefault(p, []).append(d)
            rows = self._dscp[key] = [
                (str(p), dscp_text(ds), float(len(set(ds))))
                for p, ds in sorted(by_prio.items())
                if 0 <= p <= 7
            ]
        return rows

    def all(self) -> list[Metric]:
        return [v for v in vars(self).values() if isinstance(v, Metric)] + [
            f
            for v in vars(self).values()
            if isinstance(v, dict)
            for f in v.values()
            if isinstance(f, Metric)
        ]


def _link(f: _Families, host: str, link: LinkSample) -> None:
    lab = [host, f.label(link.id)]
    f.link_info.add_metric(
        [
            *lab,
            *map(f.label, (link.netdev, link.rdma_device, link.port, link.kind, link.link_layer)),
            *map(f.label, (link.node_type, link.driver, link.driver_version, link.firmware)),
        ],
        1.0,
    )
    f.link_state.add_metric(
        [*lab, f.label(link.state), f.label(link.port_state), f.label(link.phys_state)], 1.0
    )
    add_sample(f.mtu, lab, link.mtu, priority=False)
    add_sample(f.lanes, lab, link.width, priority=False)
    if link.pcie is not None:
        pc = link.pcie
        for bound, gts, width in (
            ("current", pc.speed_gts, pc.width),
            ("max", pc.max_speed_gts, pc.max_width),
        ):
            add_sample(f.pcie_speed, [*lab, bound], gts, 1e9, priority=False)
            add_sample(f.pcie_width, [*lab, bound], width, priority=False)
    q = link.qos
    if q is None:
        return
    f.qos.add_metric([*lab, f.label(q.source), f.label(q.trust)], 1.0)
    for point, prios in (("np", q.ecn_np_enabled), ("rp", q.ecn_rp_enabled)):
        if prios is not None:
            for p in range(8):
                f.ecn.add_metric([*lab, str(p), point], 1.0 if p in prios else 0.0)
    if q.dscp2prio:
        for prio, ranges, count in f.dscp_rows(q.dscp2prio):
            f.dscp.add_metric([*lab, prio, ranges], count)
    for p, buf in sorted((q.prio_buffer or {}).items()):
        if 0 <= p <= 7:
            add_sample(f.prio_buffer, [*lab, str(p)], buf, priority=False)
    for b, size in sorted((q.buffer_size or {}).items())[:16]:
        add_sample(f.buffer_size, [*lab, f.label(b)], size, priority=False)


def _gpus(f: _Families, host: str, s: HostSample) -> None:
    for g in s.gpus:
        lab = [host, str(g.index)]
        f.gpu_info.add_metric([*lab, *map(f.label, (g.name, g.uuid, g.bus_id, g.vendor))], 1.0)
        for r in dict.fromkeys(g.throttle_reasons):  # once each, in the tool's order
            f.gpu_reason.add_metric([*lab, f.label(r)], 1.0)
        for fld, fam in f.gpu_num.items():
            add_sample(fam, lab, getattr(g, fld), priority=False)
        # nvidia-smi's PCIe throughput is in KB/s.
        add_sample(f.gpu_pcie_io, [*lab, "rx"], g.pcie_rx_kbps, 1e3, priority=False)
        add_sample(f.gpu_pcie_io, [*lab, "tx"], g.pcie_tx_kbps, 1e3, priority=False)


def _inference(f: _Families, host: str, hs: HostState, s: HostSample) -> None:
    rates = hs.rates.inference if hs.rates is not None else {}
    for inf in s.inference:
        lab = [host, f.label(inf.url)]
        f.inf_info.add_metric([*lab, f.label(inf.server), f.label(inf.model)], 1.0)
        f.inf_up.add_metric(lab, 0.0 if inf.error else 1.0)
        add_sample(f.inf_prompt_total, lab, inf.prompt_tokens_total, priority=False)
        add_sample(f.inf_preempt, lab, inf.preemptions_total, priority=False)
        r = rates.get(inf.url) or {}
        add_sample(f.inf_prompt, lab, r.get(InferenceRate.PROMPT_TOKENS_PER_S), priority=False)
        for fam, q, key in (
            (f.inf_ttft, "50", InferenceRate.TTFT_P50_S),
            (f.inf_ttft, "99", InferenceRate.TTFT_P99_S),
            (f.inf_itl, "50", InferenceRate.ITL_P50_S),
            (f.inf_itl, "99", InferenceRate.ITL_P99_S),
        ):
            add_sample(fam, [*lab, q], r.get(key), priority=False)


def _thunderbolt(f: _Families, host: str, s: HostSample) -> None:
    tb = s.thunderbolt
    if tb is None:
        return
    f.tb_domain.add_metric([host, f.label(tb.source), f.label(tb.self_uid)], 1.0)
    add_sample(f.tb_generation, [host], tb.generation, priority=False)
    for uid in dict.fromkeys(tb.domain_uids[:8]):  # a host has one or two controllers
        f.tb_uid.add_metric([host, f.label(uid)], 1.0)
    for p in tb.peers:
        lab = [host, f.label(p.port or p.netdev)]
        f.tb_peer.add_metric(
            [*lab, *map(f.label, (p.netdev, p.self_uid, p.peer_uid, p.peer_name))], 1.0
        )
        for d, speed, lanes in (
            ("rx", p.rx_gbps_per_lane, p.rx_lanes),
            ("tx", p.tx_gbps_per_lane, p.tx_lanes),
            ("max", p.max_gbps_per_lane, p.max_lanes),
        ):
            add_sample(f.tb_lane_speed, [*lab, d], speed, 1e9 / 8, priority=False)
            add_sample(f.tb_lanes, [*lab, d], lanes, priority=False)
        for bound, gbps in (("current", p.link_gbps), ("max", p.max_link_gbps)):
            add_sample(f.tb_link_speed, [*lab, bound], gbps, 1e9 / 8, priority=False)


def _cables(f: _Families, st: FabricState) -> None:
    """Each cable end of this shard's hosts, paired as the dashboard pairs them."""
    samples = {n: hs.sample for n, hs in st.hosts.items()}
    if not any(s is not None and s.thunderbolt is not None for s in samples.values()):
        return
    for c in pair_cables(samples):
        ends = [(c.a, c.b), (c.b, c.a)] if c.b is not None else [(c.a, None)]
        for near, far in ends:
            if near is None or near.host not in st.hosts:
                continue
            far_host = far.host if far is not None else c.far_name
            f.tb_cable.add_metric(
                [
                    near.host,
                    label(near.port or near.netdev),
                    label(near.netdev),
                    label(far_host),
                    label(far.port or far.netdev) if far is not None else "",
                    label(c.status),
                ],
                1.0,
            )


def _versions(f: _Families, host: str, s: HostSample) -> None:
    v = s.versions
    reads: list[tuple[str, VersionRead | None]] = []
    if v is not None:
        reads = [
            ("kernel", v.kernel),
            ("rdma_core", v.rdma_core),
            ("ofed", v.ofed),
            ("nvidia_driver", v.nvidia_driver),
            ("nccl", v.nccl),
        ]
    for name, r in reads:
        if r is not None:
            f.version.add_metric([host, name, label(r.value), label(r.source), label(r.note)], 1.0)
    if s.probe:
        f.version.add_metric([host, "probe", label(s.probe), "frame", ""], 1.0)


def _evidence(st: FabricState) -> Iterator[Metric]:
    """Each finding's typed evidence: numbers as values, facts (text, priorities, ports)
    as one bounded label; keyed by the finding's rule and subject."""
    num = _g(
        "fabtop_finding_evidence",
        "A finding's numeric evidence (field: its name, in the unit the name says)",
        "rule", "subject", "field",
    )  # fmt: skip
    text = _g(
        "fabtop_finding_evidence_info",
        "1 per text evidence of a finding (a version, a trust mode, priorities, ports)",
        "rule", "subject", "field", "value",
    )  # fmt: skip
    since = _g(
        "fabtop_finding_since_timestamp_seconds",
        "When the finding's condition was first seen (unix time)",
        "rule", "severity", "subject",
    )  # fmt: skip
    seen: set[tuple[str, str]] = set()
    for fd in st.findings:
        key = (label(fd.rule), label(fd.subject))
        if key in seen:
            continue  # one series per label set, whatever the rule emitted
        seen.add(key)
        add_sample(since, [key[0], label(fd.severity), key[1]], fd.since, priority=False)
        for k, v in fd.evidence.items():
            lab = [*key, label(k)]
            if isinstance(v, int | float) and not isinstance(v, bool):
                add_sample(num, lab, v, priority=False)
            elif isinstance(v, tuple) and v and isinstance(v[0], PortRef):
                # Ports one series each: the paused peers of a storm on 64 hosts are 64
                # values, never one label cut short.
                for ref in dict.fromkeys(x for x in v if isinstance(x, PortRef)):
                    text.add_metric([*lab, label(ref.label)], 1.0)
            elif v is not None:
                shown = evidence_value(v)
                if shown is not None:
                    text.add_metric([*lab, clean(str(shown), MAX_EVIDENCE_TEXT)], 1.0)
    yield from (num, text, since)


def info_families(st: FabricState) -> Iterator[Metric]:
    """Every info family of one scrape (the ones with samples)."""
    f = _Families()
    now = st.now()
    for name, hs in st.hosts.items():
        host = f.label(name)
        status = effective_status(hs, now, st.interval)
        f.host_state.add_metric([host, status if status in STATUSES else "unknown"], 1.0)
        s = hs.sample
        if s is None:
            continue
        for link in s.links.values():
            _link(f, host, link)
        _gpus(f, host, s)
        _inference(f, host, hs, s)
        _thunderbolt(f, host, s)
        _versions(f, host, s)
        if status == UP:  # as coverage says it: gaps are of the hosts that report
            for gap in gaps_of(hs):
                f.gap.add_metric(
                    [host, gap.source, gap.reason, clean(gap.detail, MAX_GAP_DETAIL)], 1.0
                )
    _cables(f, st)
    for fam in (*f.all(), *_evidence(st)):
        if fam.samples:
            yield _unique(fam)


def _unique(fam: Metric) -> Metric:
    """``fam`` with one sample per label set: two cable ends a node names alike (no port,
    no netdev) are one series, never a duplicate Prometheus rejects the scrape's sample for.
    """
    seen: set[tuple[str, tuple[str, ...]]] = set()
    keep = []
    for s in fam.samples:
        # The values alone: add_metric puts a family's label names in one order.
        key = (s.name, tuple(s.labels.values()))
        if key not in seen:
            seen.add(key)
            keep.append(s)
    fam.samples = keep
    return fam


def shard_info(shard: str | None, hosts: int) -> Iterator[Metric]:
    """Which shard this exporter is (``--shard``; "" when not named) and how many hosts it
    owns: a shard that owns none is told apart from one whose hosts are all down."""
    info = _g(
        "fabtop_shard_info", "1: the shard this exporter is, and its fabtop version",
        "shard", "version",
    )  # fmt: skip
    info.add_metric([shard or "", fabtop.__version__], 1.0)
    owned = _g("fabtop_shard_hosts", "Hosts the shard owns (configured)", "shard")
    owned.add_metric([shard or ""], float(hosts))
    yield from (info, owned)
