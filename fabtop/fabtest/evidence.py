"""Every verdict explained by the same window's counters, on every end of the step.

The monitoring pipeline runs while a test runs; the runner hands over each end's host
sample at the window's start and at its end. From them:

- the health rules judge the window as one interval (their holds set to 0, as a
  snapshot's one-shot judgement sets them): a PFC storm, drops on a lossless priority
  (with the "switch does not run PFC" clause), congestion without ECN, an MTU mismatch,
  a PCIe link below capability, a link flap, a hot NIC or module, GPU thermal slowdown,
  a Thunderbolt cable's errors. Each finding carries its evidence and next step; nothing
  here judges those facts a second way;
- what moved on each end, counter by counter (the normalized vocabulary, per priority
  where the driver counts per priority), grouped in the checks below, each with the next
  step for a group that moved and no rule explained;
- what was ruled out: a check every end reads and in which nothing moved. A check an end
  cannot read is said ("reads no ECN counters"), never taken as clean: blind is not
  healthy.

A pair that passes with drops on the lossless priority is not a pass
(:attr:`WindowEvidence.lossless_loss`): the cluster guide's "under load, without PFC on
the switch, losses begin", found before production traffic finds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from collectors.normalize import SLOW_METRICS
from collectors.samples import HostSample, LinkSample, MetricValue
from collectors.vocabulary import Metric
from fabtop.core.findings import Finding, PortRef, port_ref
from fabtop.core.history import History
from fabtop.core.rates import HostRates, LinkRates, RateEngine
from fabtop.core.rules import (
    Evaluator,
    Rule,
    ecn,
    gpu,
    hardware,
    lossless,
    pfc_config,
    pfc_storm,
    thunderbolt,
)
from fabtop.core.rules import config as config_rules
from fabtop.core.rules.kinds import HOLDS
from fabtop.fabtest.rails import port_name

# The rules that judge a test's window: what the ports under test, their hosts' GPUs and
# their configuration did. Not the fabric-wide bookkeeping (versions, firewall, clocks,
# GIDs), which doctor says, nor the RDMA share (a test chooses its engine).
WINDOW_RULES: tuple[Rule, ...] = (
    pfc_storm.pfc_storm,
    pfc_storm.pfc_pressure,
    pfc_storm.pfc_stall_events,
    pfc_config.pause_on_disabled_prio,
    pfc_config.pfc_config_mismatch,
    ecn.congestion_without_ecn,
    config_rules.mtu_mismatch,
    config_rules.roce_mtu_low,
    hardware.pcie_degraded,
    hardware.nic_temperature,
    hardware.link_flap,
    hardware.module_high_temp,
    lossless.lossless_drops,
    gpu.gpu_thermal_slowdown,
    gpu.gpu_hot,
    thunderbolt.tb_link_degraded,
    thunderbolt.tb_link_errors,
)
# Findings that say packets of a lossless priority were lost: PFC not protecting them.
LOSSLESS_LOSS = frozenset({"lossless_drops", "roce_out_of_sequence"})
# The checks a rule's finding already explains, with its own next step, on its port: their
# generic next steps are not repeated for that port.
EXPLAINS: Mapping[str, tuple[str, ...]] = {
    "lossless_drops": ("discards", "sequence", "resent"),
    "roce_out_of_sequence": ("sequence", "discards", "resent"),
    "link_flap": ("flap", "sequence", "resent"),
    "pfc_storm": ("pauses",),
    "pfc_pressure": ("pauses",),
    "congestion_without_ecn": ("pauses", "ecn"),
    "pfc_stall_events": ("nic_events",),
    "module_high_temp": ("nic_events",),
    "tb_link_errors": ("errors", "discards"),
}


@dataclass(frozen=True, slots=True)
class Check:
    """One thing the evidence looks at: the counters it reads and what to do when they move."""

    name: str
    what: str  # as a sentence names it: "pause time and frames"
    metrics: tuple[Metric, ...]
    next_step: (
        str  # {port}: the netdev (else the RDMA port); {rdma}: the RDMA port (else the netdev)
    )


# Every normalized counter that is not traffic sits in exactly one check (a test holds
# this), so what any driver counts of errors, discards, pauses and congestion is read;
# but for the cable's corrected and FEC counts, which the cable rules judge over their own
# windows (a finding of theirs live in the window is the window's evidence like any other):
# those read on optics rounds (SLOW_METRICS, 30 s or more apart) say nothing in a step
# shorter than a round (a count carried unchanged is not a quiet cable), and corrected
# bits move on every healthy link (only their rate against the bits carried, the BER,
# tells a failing cable).
BY_CABLE_RULES: frozenset[Metric] = SLOW_METRICS | {Metric.PHY_CORRECTED_BITS}

CHECKS: tuple[Check, ...] = (
    Check(
        "pauses",
        "PFC and global pauses",
        (
            Metric.RX_PAUSE,
            Metric.TX_PAUSE,
            Metric.RX_PAUSE_US,
            Metric.TX_PAUSE_US,
            Metric.RX_PAUSE_GLOBAL,
            Metric.TX_PAUSE_GLOBAL,
            Metric.XMIT_WAIT,
        ),
        "ethtool -S {port} | grep -E 'pause'; mlnx_qos -i {port} (which priorities are "
        "lossless, and which one the test traffic used)",
    ),
    Check(
        "ecn",
        "ECN marks and CNPs",
        (Metric.ECN_MARKED, Metric.ECN_MARKED_PRIO, Metric.CNP_SENT, Metric.CNP_HANDLED),
        "rdma statistic show (np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled): "
        "marks mean the switch queue filled; check the switch's ECN thresholds for the class",
    ),
    Check(
        "discards",
        "discards",
        (
            Metric.RX_DISCARDS,
            Metric.RX_DISCARDS_PRIO,
            Metric.RX_OUT_OF_BUFFER,
            Metric.RX_BUF_DISCARD,
            Metric.RX_CONG_DISCARD,
        ),
        "ethtool -S {port} | grep -E 'discard|out_of_buffer|dropped': buffer or congestion "
        "drops; on a lossless priority, PFC is not protecting the flow",
    ),
    Check(
        "sequence",
        "out-of-sequence packets and ACK timeouts",
        (Metric.OUT_OF_SEQUENCE, Metric.PACKET_SEQ_ERR, Metric.LOCAL_ACK_TIMEOUT_ERR),
        "rdma statistic show link {rdma}: packets were lost on the way; check PFC on the "
        "switch ports and that the test traffic carries the lossless priority",
    ),
    Check(
        "resent",
        "retransmissions",
        (Metric.RETRANSMITS,),
        "rdma statistic show link {rdma}: retransmissions follow losses; look at the "
        "discards and errors of both ends and the switch ports between them",
    ),
    Check(
        "errors",
        "CRC, symbol and link-integrity errors",
        (Metric.RX_PHY_ERRORS, Metric.LINK_INTEGRITY_ERRORS),
        "ethtool -m {port} (optical levels); ethtool -S {port} | grep -E 'crc|symbol'; "
        "reseat or replace the cable or transceiver",
    ),
    Check(
        "flap",
        "link flaps",
        (Metric.LINK_DOWN_EVENTS, Metric.LINK_ERROR_RECOVERIES),
        "ip -s link show dev {port}; dmesg | grep -i link; check the cable and the switch "
        "port's log",
    ),
    Check(
        "nic_events",
        "NIC stall-watchdog and module-temperature events",
        (
            Metric.TX_PAUSE_STORM_WARNING_EVENTS,
            Metric.TX_PAUSE_STORM_ERROR_EVENTS,
            Metric.MODULE_HIGH_TEMP_EVENTS,
        ),
        "ethtool -S {port} | grep -E 'pause_storm|module_high_temp'; check airflow over the "
        "NIC and its transceiver, and what held the port paused",
    ),
)
# The checks that are states, not counters: read at the window's end.
PCIE, MTU, THROTTLE = "pcie", "mtu", "throttle"


@dataclass(frozen=True, slots=True)
class End:
    """One port under test: its host's samples at the window's start and end."""

    host: str
    link: str  # the link's id (RailPort.link)
    start: HostSample
    end: HostSample


@dataclass(frozen=True, slots=True)
class Moved:
    """A counter that moved on one end during the window."""

    check: str  # Check.name
    port: PortRef
    metric: str  # the normalized name
    priority: int | None  # for a per-priority counter
    delta: int

    @property
    def text(self) -> str:
        """``node1/eth0 rx_discards_prio[3] +120``."""
        prio = f"[{self.priority}]" if self.priority is not None else ""
        return f"{self.port.label} {self.metric}{prio} +{self.delta}"


@dataclass(slots=True)
class WindowEvidence:
    """What the window's counters say about one step."""

    seconds: float | None  # the window's length on the hosts' clocks (the shortest end)
    findings: list[Finding] = field(default_factory=list)  # the rules' verdicts, worst first
    moved: list[Moved] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)  # Check.what of the clean checks
    not_read: list[str] = field(default_factory=list)  # one line per end and check
    next_steps: list[str] = field(default_factory=list)  # findings' first, then the checks'

    @property
    def lossless_loss(self) -> bool:
        """Packets of a lossless priority were lost in the window: not a pass."""
        return any(f.rule in LOSSLESS_LOSS for f in self.findings)

    @property
    def serious(self) -> list[Finding]:
        """The findings that warn (a pass with them is a pass with warnings)."""
        return [f for f in self.findings if f.severity != "info"]

    @property
    def lines(self) -> list[str]:
        """The evidence as a report prints it, one line each."""
        out = [f"{f.severity}: {f.summary}" for f in self.findings]
        if self.moved:
            out.append("moved: " + "; ".join(m.text for m in self.moved))
        if self.ruled_out:
            out.append("ruled out: " + ", ".join(self.ruled_out))
        # One line per thing not read, naming every port it was not read on.
        ports_of: dict[str, list[str]] = {}
        for line in self.not_read:
            port, _, what = line.partition(": ")
            ports_of.setdefault(what, []).append(port)
        out += [f"not read: {what} ({', '.join(ps)})" for what, ps in ports_of.items()]
        out += [f"next: {s}" for s in self.next_steps]
        return out


@dataclass(slots=True)
class _Host:
    """What the rules read of one host of the window (the shape of HostState)."""

    name: str
    sample: HostSample
    rates: HostRates | None
    status: str = "up"


@dataclass(slots=True, eq=False, weakref_slot=True)  # the evaluator keys its memory by it
class _Window:
    """The window as the rules see a fabric: the ends' hosts, with the window's rates."""

    hosts: dict[str, _Host]
    history: History


def _only(sample: HostSample, links: set[str]) -> HostSample:
    """``sample`` with the ports under test only (the host's other ports are not tested)."""
    return replace(sample, links={k: v for k, v in sample.links.items() if k in links})


def _deltas(now: MetricValue | None, then: MetricValue | None) -> dict[int | None, int] | None:
    """Change of one counter per priority (None: the scalar); None when not read on both."""
    if now is None or then is None:
        return None
    if isinstance(now, dict) and isinstance(then, dict):
        return {p: now[p] - then[p] for p in sorted(now) if p in then}
    if isinstance(now, int) and isinstance(then, int):
        return {None: now - then}
    return None


def _moved(
    check: Check, ref: PortRef, a: LinkSample, b: LinkSample, lr: LinkRates | None
) -> tuple[list[Moved], bool]:
    """What of ``check`` moved on one end, and whether the end read any of it at all.

    A counter the rate engine set aside this window (reset, glitch) was not read.
    """
    skip = set(lr.norm_reset) | set(lr.glitched) if lr is not None else set()
    out: list[Moved] = []
    read = False
    for m in check.metrics:
        if m in skip:
            continue
        d = _deltas(b.metrics.get(m), a.metrics.get(m))
        if d is None:
            continue
        read = True
        out += [Moved(check.name, ref, m.value, p, v) for p, v in d.items() if v > 0]
    return out, read


def _state_checks(ends: Sequence[tuple[End, LinkSample]], count: int, ev: WindowEvidence) -> None:
    """PCIe, MTU and throttling: states at the window's end (their findings are the rules');
    ``count``: the step's ends (those missing from ``ends`` were not read)."""
    rules = {f.rule for f in ev.findings}
    pcie = [(e, ln) for e, ln in ends if ln.pcie is None or ln.pcie.max_width is None]
    for e, ln in pcie:
        ev.not_read.append(f"{port_ref(e.host, ln).label}: no PCIe link width")
    if len(ends) == count and not pcie and "pcie_degraded" not in rules:
        ev.ruled_out.append("PCIe link below capability")
    mtus = {ln.mtu for _, ln in ends}
    if None in mtus:
        ev.not_read += [f"{port_ref(e.host, ln).label}: no MTU" for e, ln in ends if ln.mtu is None]
    elif len(mtus) == 1 and len(ends) == count and "mtu_mismatch" not in rules:
        ev.ruled_out.append("MTU mismatch")
    elif len(mtus) > 1 and "mtu_mismatch" not in rules:
        # A fact of the step's own ends (the fabric rule weighs physical ports only).
        shown = ", ".join(f"{port_ref(e.host, ln).label} {ln.mtu}" for e, ln in ends)
        ev.findings.append(
            Finding(
                rule="mtu_mismatch",
                severity="warning",
                subject="test",
                summary=f"MTU differs between the ends: {shown}",
                next_step="ip link show on each end; the same MTU on every host and switch port",
            )
        )
    throttled = False
    for host in dict.fromkeys(e.host for e, _ in ends):
        end = next(e.end for e, _ in ends if e.host == host)
        start = next(e.start for e, _ in ends if e.host == host)
        for g in end.gpus:
            # Thermal slowdown is the GPU rule's (gpu_thermal_slowdown); the rest is said here.
            held = [r for r in g.throttle_reasons if "thermal" not in r.lower()]
            if held:
                throttled = True
                ev.findings.append(
                    Finding(
                        rule="test_gpu_throttle",
                        severity="info",
                        subject=f"{host}/gpu{g.index}",
                        summary=f"{host} GPU {g.index}: clocks held by {', '.join(held)}",
                        host=host,
                    )
                )
        a, b = start.cpu_throttle_count, end.cpu_throttle_count
        if a is not None and b is not None and b > a:
            throttled = True
            ev.findings.append(
                Finding(
                    rule="test_cpu_throttle",
                    severity="info",
                    subject=host,
                    summary=f"{host}: CPU thermal throttling {b - a} times in the window",
                    host=host,
                )
            )
    if not throttled and not rules & {
        "gpu_thermal_slowdown",
        "module_high_temp",
        "nic_temperature",
    }:
        ev.ruled_out.append("GPU, CPU and NIC throttling")


def window_evidence(
    ends: Sequence[End],
    thresholds: Mapping[str, float] | None = None,
    live: Sequence[Finding] = (),
) -> WindowEvidence:
    """What the window's counters say about the step whose ports are ``ends``.

    ``live``: findings the monitoring pipeline raised during the window; those about these
    ports and hosts join the window's own (a storm the probe's watchdog named mid-window
    stays named even when the window's average dilutes it).
    """
    evaluator = Evaluator(
        {**(thresholds or {}), **dict.fromkeys(HOLDS, 0.0), "restore_s": 0.0}, rules=WINDOW_RULES
    )
    engine = RateEngine(evaluator.thresholds)
    tested: dict[str, set[str]] = {}
    for e in ends:
        tested.setdefault(e.host, set()).add(e.link)
    hosts: dict[str, _Host] = {}
    spans: list[float] = []
    for host, links in tested.items():
        first = next(e for e in ends if e.host == host)
        engine.update(_only(first.start, links))
        end = _only(first.end, links)
        rates = engine.update(end)
        hosts[host] = _Host(host, end, rates)
        if rates.interval_s is not None:
            spans.append(rates.interval_s)
    found = evaluator(_Window(hosts, History()))
    ports = {(e.host, e.link) for e in ends}
    seen = {(f.rule, f.subject) for f in found}
    found += [
        f
        for f in live
        if (f.rule, f.subject) not in seen
        and ((f.port is not None and f.port.key in ports) or (f.port is None and f.host in tested))
    ]
    ev = WindowEvidence(min(spans) if spans else None, sorted(found, key=lambda f: -f.rank))
    pairs: list[tuple[End, LinkSample]] = []
    read_by: dict[str, int] = dict.fromkeys((c.name for c in CHECKS), 0)
    rdma_names: dict[tuple[str, str], str] = {}
    for e in ends:
        a, b = e.start.links.get(e.link), e.end.links.get(e.link)
        if b is None or a is None:
            ev.not_read.append(f"{e.host}/{e.link}: the port was not in both samples")
            continue
        pairs.append((e, b))
        rdma_names[(e.host, e.link)] = port_name(b) if b.rdma_device else port_ref(e.host, b).name
        hr = hosts[e.host].rates
        lr = hr.links.get(e.link) if hr is not None and hr.interval_s is not None else None
        ref = port_ref(e.host, b)
        if lr is None:  # the host rebooted, or the two samples are one frame
            ev.not_read.append(f"{ref.label}: no rates over the window (no two frames of it)")
            continue
        if lr.gap:
            ev.not_read.append(f"{ref.label}: its counters restarted in the window (no deltas)")
            continue
        for check in CHECKS:
            moved, read = _moved(check, ref, a, b, lr)
            ev.moved += moved
            read_by[check.name] += read
            if not read:
                ev.not_read.append(f"{ref.label}: reads no {check.what}")
    # A check is ruled out when every end reads it, nothing of it moved and no finding
    # rests on it ("no ECN marks" is the finding's evidence when PFC alone held a queue).
    quiet = {c.name for c in CHECKS if read_by[c.name] == len(ends)}
    quiet -= {m.check for m in ev.moved}
    quiet -= {check for f in ev.findings for check in EXPLAINS.get(f.rule, ())}
    ev.ruled_out = [c.what for c in CHECKS if c.name in quiet]
    _state_checks(pairs, len(ends), ev)
    steps = [f.next_step for f in ev.findings if f.next_step]
    explained = {
        (f.port.key, check)
        for f in ev.findings
        if f.port is not None
        for check in EXPLAINS.get(f.rule, ())
    }
    for check in CHECKS:
        where = next(
            (
                m.port
                for m in ev.moved
                if m.check == check.name and (m.port.key, check.name) not in explained
            ),
            None,
        )
        if where is not None:
            step = check.next_step.format(port=where.name, rdma=rdma_names[where.key])
            steps.append(f"on {where.host}: {step}")
    ev.next_steps = list(dict.fromkeys(steps))
    return ev
