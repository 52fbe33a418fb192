"""What fabtop can see: which hosts report, and which whole sources are missing on them.

"No findings" means something only over what was seen (DESIGN §10): a host that does not
report, or a node with no GPU tool, is not healthy, it is unseen. :func:`coverage`
says which hosts report (UP, with a sample the rules ran on) and, for those, which whole
sections are missing (no RDMA device, no GPU tool, no ethtool or QoS tool, no inference
server, a server whose token rate cannot be read). A source that is not the probe says why
in its own words (Prometheus: the exporter or collector flag to switch on).
Missing sections are not failures: CPU-only nodes and nodes without an inference server
are normal, so they are plain sentences, never findings. :func:`calm_line` is the line
shown when there are no findings: it says "no problems in what was seen" only when every
configured host reports, names what was not monitored, and otherwise says what is blind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from collectors.gpu_sections import GPU_KINDS
from collectors.parsers.firewall import unknown_reason
from collectors.samples import HostSample
from fabtop.core.expect import is_rdma_port
from fabtop.core.gap import Gap as Gap  # where it was defined first
from fabtop.core.state import (
    CONNECTING,
    DOWN,
    FAILING,
    STALE,
    UP,
    FabricState,
    HostState,
    effective_status,
)

# Hosts named in one sentence before "and N more": a fleet of 256 CPU-only nodes is one
# readable line.
MAX_NAMED = 4

_QOS_TOOLS = ("mlnx_qos", "dcb_pfc")
# Link kinds whose per-priority counters come from ethtool -S (IB and Thunderbolt have none).
ETHERNET_KINDS = ("roce", "netdev", "virtual")

# Why a source is not monitored on a host, in bounded words (the exporter's
# fabtop_coverage_gap labels; the sentences keep the host's own words beside them).
NOT_PRESENT = "not_present"  # the host has none (no RDMA device, no inference server)
TOOL_MISSING = "tool_missing"  # the tool that reads it is not installed
TOOL_FAILED = "tool_failed"  # the tool is there and failed
NOT_SUPPORTED = "not_supported"  # the tool is there and says the device does not support it
NONE_LISTED = "none_listed"  # the tool answered and lists none
NO_ANSWER = "no_answer"  # no tool answered at all
NEEDS_ROOT = "needs_root"
NO_COUNTER = "no_counter"  # the server exposes no counter a passive monitor can read
UNVERIFIED = "unverified"  # read in a format only documented, never captured
GAP_REASONS = (
    NOT_PRESENT, TOOL_MISSING, TOOL_FAILED, NOT_SUPPORTED, NONE_LISTED, NO_ANSWER,
    NEEDS_ROOT, NO_COUNTER, UNVERIFIED,
)  # fmt: skip
GAP_SOURCES = (
    "rdma", "gpu", "pfc_counters", "qos", "inference", "firewall", "token_rate", "macos",
    "thermals", "optics",
)  # fmt: skip
# What the probe says of module EEPROMs it did not ask for (ethtool -m needs CAP_NET_ADMIN):
# the ethtool_m section's note (docs/PROBE.md "Optics").
OPTICS_NEED_ROOT = "missing (needs root)"


@dataclass(frozen=True, slots=True)
class Coverage:
    """Who reports, and what whole sources are missing on the hosts that do."""

    hosts: int  # configured hosts
    reporting: tuple[str, ...]  # hosts UP with a sample on which the rules ran
    not_reporting: tuple[str, ...]  # down, failing, stale, connecting
    gaps: tuple[str, ...]  # plain sentences: "GPUs not monitored on node3 (no nvidia-smi ...)"
    blind: tuple[str, ...] = ()  # what is not seen, as sentences ("node2 down", ...)

    @property
    def all_seen(self) -> bool:
        """Every configured host reports (and there is at least one)."""
        return self.hosts > 0 and len(self.reporting) == self.hosts


def names(hosts: Iterable[str]) -> str:
    """``node1, node2, node3, node4 and 12 more``."""
    hs = list(hosts)
    if len(hs) <= MAX_NAMED + 1:
        return ", ".join(hs)
    return f"{', '.join(hs[:MAX_NAMED])} and {len(hs) - MAX_NAMED} more"


def _has_rdma(s: HostSample) -> bool:
    # Not bool(rdma_ports(s)): sorting every host's ports was half of coverage's time,
    # which the overview pays each tick for every host.
    return any(map(is_rdma_port, s.links.values()))


def _gpu_gap(hs: HostState, s: HostSample) -> tuple[str, str] | None:
    """Why GPUs are not monitored on this host, as (reason code, words); None: they are,
    or it has GPUs listed."""
    if s.gpus:
        return None
    for kind in GPU_KINDS:
        why = hs.unread.get(kind)
        if why is not None:
            # The probe says "missing (no nvidia-smi, amd-smi or rocm-smi)": keep the why.
            if why.startswith("missing"):
                return TOOL_MISSING, why.removeprefix("missing ").strip("()")
            return TOOL_FAILED, f"{kind} {why}"
    read = any(sec.kind in GPU_KINDS and sec.status == "ok" for sec in s.sections)
    return (NONE_LISTED, "the GPU tool lists none") if read else (NO_ANSWER, "no GPU tool answered")


def _missing(note: str | None) -> str | None:
    """Why a section is missing, as its note says: "missing (ethtool)" -> "no ethtool";
    a sentence of the source's ("node_exporter needs --collector.ethtool") is kept."""
    if note is None or not note.startswith("missing"):
        return None
    why = note.removeprefix("missing").strip().removeprefix("(").removesuffix(")")
    return why if " " in why else f"no {why or 'tool'}"


def _pfc_counter_gap(hs: HostState, s: HostSample) -> str | None:
    """Why an Ethernet host's per-priority counters (PFC pauses, ECN marks, discards by
    priority) are not read: its ``ethtool -S`` is missing (None: they are, or it has no
    Ethernet netdev but the loopback)."""
    why = _missing(hs.unread.get("ethtool_S"))
    if why is None:
        return None
    eth = [ln for ln in s.links.values() if ln.kind in ETHERNET_KINDS and ln.netdev != "lo"]
    return why if eth else None


def _qos_gap(hs: HostState, s: HostSample) -> tuple[str, str] | None:
    """Why the lossless (PFC/trust) config is not read on this RoCE host, as (reason
    code, words); None: it is."""
    roce = False
    for ln in s.links.values():
        if ln.kind == "roce":
            if ln.qos is not None and ln.qos.source in ("mlnx_qos", "dcb"):
                return None
            roce = True
    if not roce:
        return None  # IB and plain Ethernet have no PFC config to read
    why, codes = [], []
    for tool in _QOS_TOOLS:
        note = hs.unread.get(tool)
        if note is None:
            continue
        name = tool.removesuffix("_pfc")
        missing = note.startswith("missing")
        why.append(f"no {name}" if missing else f"{name} not supported")
        codes.append(TOOL_MISSING if missing else NOT_SUPPORTED)
    if not why:
        return NO_ANSWER, "no QoS tool answered"
    # Any tool there but refusing says more than the one that is absent.
    return (NOT_SUPPORTED if NOT_SUPPORTED in codes else TOOL_MISSING), ", ".join(why)


# Each gap's sentence: (source, reason) -> (its place in the line, the words before the
# hosts); reason None: the same words whatever the reason. One table, so a gap rebuilt from
# the exporter's labels (fabtop --from-prometheus) reads as the shard's own line.
GAP_WORDS: dict[tuple[str, str | None], tuple[int, str]] = {
    ("rdma", TOOL_MISSING): (0, "InfiniBand ports not read on "),
    ("rdma", None): (0, "no RDMA device on "),
    ("gpu", None): (1, "GPUs not monitored on "),
    ("pfc_counters", None): (2, "PFC/ECN counters not read on "),
    ("qos", None): (2, "PFC/QoS config not read on "),
    ("inference", None): (3, "no inference server on "),
    ("firewall", None): (4, "firewall state unknown on "),
    ("macos", None): (4, "unverified on "),
    ("token_rate", None): (5, "token rate unknown on "),
    ("thermals", None): (5, "thermals not monitored on "),
    ("optics", TOOL_MISSING): (4, "mlxlink not installed on "),  # asked for: optics_mlxlink
    ("optics", None): (4, "module optics need root or sudo -n on "),
}


def gap(source: str, reason: str, detail: str = "") -> Gap | None:
    """The gap of ``source`` for ``reason``, ``detail`` the why in the host's words; None
    for a source fabtop does not know (an exporter newer than this reader)."""
    words = GAP_WORDS.get((source, reason)) or GAP_WORDS.get((source, None))
    if words is None:
        return None
    return Gap(source, reason, words[0], words[1], f" ({detail})" if detail else "")


def _gap(source: str, reason: str, detail: str = "") -> Gap:
    g = gap(source, reason, detail)
    assert g is not None, source  # every source gaps_of names is in GAP_WORDS
    return g


def gaps_of(hs: HostState) -> tuple[Gap, ...]:
    """What is not monitored on one host that has a sample (() when it has none)."""
    s = hs.sample
    if s is None:
        return ()
    if hs.said_gaps is not None:
        return hs.said_gaps  # its exporter's word (a read-back): it saw the host itself
    found: list[Gap] = []
    if not _has_rdma(s):
        ib = _missing(hs.unread.get("sysib"))  # a source that could not read them
        found.append(_gap("rdma", TOOL_MISSING, ib) if ib else _gap("rdma", NOT_PRESENT))
    gpu = _gpu_gap(hs, s)
    if gpu is not None:
        found.append(_gap("gpu", *gpu))
    pfc = _pfc_counter_gap(hs, s)
    if pfc is not None:
        found.append(_gap("pfc_counters", TOOL_MISSING, pfc))
    qos = _qos_gap(hs, s)
    if qos is not None:
        found.append(_gap("qos", *qos))
    if not s.inference:
        found.append(_gap("inference", NOT_PRESENT))
    fw = s.firewall
    if fw is not None and not fw.known:
        reason = NEEDS_ROOT if fw.status == "needs root" else TOOL_FAILED
        if fw.status == "missing":
            reason = TOOL_MISSING
        found.append(_gap("firewall", reason, unknown_reason(fw)))
    if OPTICS_NEED_ROOT in (hs.unread.get("ethtool_m"), hs.unread.get("mlxlink")):
        # Said here once for the host, never a warning per port per round.
        found.append(_gap("optics", NEEDS_ROOT))
    if _missing(hs.unread.get("mlxlink")) == "no mlxlink":  # the host asked for it
        found.append(_gap("optics", TOOL_MISSING))
    # A server with no counter a passive monitor can read: its rate is unseen, and why.
    for why in sorted({i.rate_unknown for i in s.inference if i.rate_unknown}):
        found.append(_gap("token_rate", NO_COUNTER, why))
    mac = s.macos
    if mac is not None and mac.unverified:
        # A source read in a format only documented, never captured (issue 14).
        found.append(_gap("macos", UNVERIFIED, "; ".join(mac.unverified)))
    if mac is not None and mac.thermal_source is None:
        found.append(_gap("thermals", TOOL_MISSING, "no macmon, no pmset -g therm"))
    return tuple(found)


def _gaps(hosts: list[HostState]) -> tuple[str, ...]:
    """Each missing source as one sentence, hosts with the same reason grouped."""
    # (order, text before the hosts, text after) -> hosts
    groups: dict[tuple[int, str, str], list[str]] = {}
    for hs in hosts:
        for g in gaps_of(hs):
            groups.setdefault((g.order, g.pre, g.post), []).append(hs.name)
    return tuple(f"{pre}{names(hs)}{post}" for (_, pre, post), hs in sorted(groups.items()))


def host_gaps(hs: HostState) -> tuple[str, ...]:
    """What is not monitored on one reporting host, in the sentences of :func:`coverage`."""
    return _gaps([hs])


def _blind(state: FabricState, statuses: dict[str, str]) -> tuple[str, ...]:
    """What is not seen, worst first: hosts down, failing, stale, waiting; sources."""
    by: dict[str, list[str]] = {}
    for name, st in statuses.items():
        if st != UP or state.hosts[name].sample is None:
            by.setdefault(st, []).append(name)
    out: list[str] = []
    for st, label in ((DOWN, "down"), (FAILING, "failing"), (STALE, "stale")):
        if by.get(st):
            out.append(f"{names(by[st])} {label}")
    waiting = by.get(CONNECTING, []) + by.get(UP, [])  # UP without a sample: a moment
    if waiting:
        n = len(waiting)
        out.append(
            f"waiting for the first frame from {names(waiting)}"
            if n <= MAX_NAMED
            else f"waiting for the first frame from {n} hosts"
        )
    for src in state.sources.values():
        if src.error is not None:
            out.append(f"{src.name} did not answer")
        elif not src.answered:
            out.append(f"waiting for the first answer from {src.name}")
    return tuple(out)


def coverage(state: FabricState, now: float, interval: float) -> Coverage:
    """Who reports and what is missing, at ``now`` on the state's clock (``ctx.now()``)."""
    statuses = {n: effective_status(h, now, interval) for n, h in state.hosts.items()}
    reporting = tuple(
        n for n, st in statuses.items() if st == UP and state.hosts[n].sample is not None
    )
    seen = set(reporting)
    not_reporting = tuple(n for n in statuses if n not in seen)
    gaps = _gaps([state.hosts[n] for n in reporting])
    return Coverage(len(state.hosts), reporting, not_reporting, gaps, _blind(state, statuses))


def calm_line(cov: Coverage, elsewhere: str | None = None) -> str:
    """The line for "no findings": only over what was seen, never "healthy" while blind.

    ``elsewhere``: where the gaps in coverage are listed in full, when this line is one row
    of a small panel (the overview at 80x24); they are then counted, not listed."""
    if cov.all_seen:
        if elsewhere is not None and cov.gaps:
            n = len(cov.gaps)
            return f"no problems in what was seen; {n} gap{'s' * (n > 1)} in coverage ({elsewhere})"
        return "; ".join(("no problems in what was seen", *cov.gaps))
    if cov.hosts == 0:
        return "; ".join(cov.blind) if cov.blind else "no hosts to watch: nothing is seen"
    blind = "; ".join(cov.blind) or f"{names(cov.not_reporting)} not reporting"
    if not cov.reporting:
        return f"nothing seen yet: {blind}"
    return (
        f"not all seen: {blind}; no problems on the {len(cov.reporting)} of "
        f"{cov.hosts} hosts that report"
    )
