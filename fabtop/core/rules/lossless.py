"""Lossless rules: drops on a PFC-enabled priority, RoCE out-of-sequence (PFC not protecting).

Both findings also say when the switch, not the host, is the likely cause: packets of a
lossless priority are lost while no host receives a PFC pause on it. A switch that runs
PFC on a class pauses its senders before its buffer drops; one that does not just drops,
and the hosts never see a pause on that priority (the guide's "killer number one": PFC
configured on the hosts but not on the switch). One cause, one finding: this is said in
the drop finding itself, with the evidence, never as a second finding.
"""

from __future__ import annotations

import functools

from collectors.vocabulary import Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, is_rdma_ethernet, lossless_prios, r3
from fabtop.core.rules.kinds import window_rule
from fabtop.core.rules.pauses import PAUSE_PER_S, PAUSE_RATIO, PRIOS
from fabtop.core.units import si

# Per-priority drop counters; any of them moving on a lossless priority is a loss.
PRIO_DROPS = (Metric.RX_DISCARDS_PRIO, Metric.RX_BUF_DISCARD, Metric.RX_CONG_DISCARD)
_DROP_RATES = tuple(m.per_s for m in PRIO_DROPS)
# RoCE's signs of a lost packet (out-of-sequence on the lossless fabric).
SEQUENCE_ERRORS = (Metric.OUT_OF_SEQUENCE, Metric.PACKET_SEQ_ERR)
# Looked up once: an enum member costs a class attribute lookup per read, per link.
_OOS_PER_S, _SEQ_ERR_PER_S = (m.per_s for m in SEQUENCE_ERRORS)
# Either measure of received pauses: frames per second or the share of time held.
_RX_PAUSED = (PAUSE_PER_S["rx"], PAUSE_RATIO["rx"])
_SWITCH_CHECK = (
    "on the switch, check that PFC is enabled for priority {p} on every port facing these "
    "hosts and that its pause counters move under load (SONiC: show pfc counters; "
    "Cumulus: nv show qos pfc; Onyx: show dcb priority-flow-control)"
)


def _note_rx_pauses(ctx: RuleContext) -> None:
    """Remember the priorities on which any host received a pause this pass."""
    memory = ctx.memory
    if memory.watch_start is None:
        memory.watch_start = ctx.now
    seen = memory.rx_paused
    for lt in ctx.links:
        if not lt.pausing:
            continue
        for name in _RX_PAUSED:
            for p, x in lt.prio_rates(name).items():
                if x > 0:
                    seen.add(p)


def switch_without_pfc(ctx: RuleContext, prios: tuple[int, ...]) -> tuple[str, dict[str, float]]:
    """What says the switch does not run PFC on ``prios``: a summary clause and evidence.

    A priority counts when no host received a pause on it: every port that has it lossless
    and counts its received pauses reads 0 since its counters started, or none received
    one in the ``switch_pfc_watch_s`` fabtop has watched. ``("", {})`` when no priority
    qualifies or no host counts received pauses per priority (nothing to go on).
    """
    quiet: list[int] = []
    evidence: dict[str, float] = {}
    watched = ctx.now - ctx.memory.watch_start if ctx.memory.watch_start is not None else 0.0
    since_start = True
    for p in prios:
        if p in ctx.memory.rx_paused:
            continue
        ports = total = 0
        for lt in ctx.links:
            lp = lossless_prios(lt.link)
            if not lp or p not in lp:
                continue
            v = lt.link.metrics.get(Metric.RX_PAUSE)
            if isinstance(v, dict) and p in v:
                ports += 1
                total += v[p]
        if not ports:
            continue
        if total and watched < ctx.th("switch_pfc_watch_s"):
            continue
        since_start = since_start and not total
        quiet.append(p)
        evidence[f"ports_counting_rx_pause_prio{p}"] = float(ports)
        evidence[f"rx_pause_prio{p}_total_all_hosts"] = float(total)
    if not quiet:
        return "", {}
    when = "since their counters started" if since_start else f"in the {watched:.0f} s watched"
    clause = (
        f"; no host received a PFC pause on prio {','.join(map(str, quiet))} {when}: "
        "the switch likely does not run PFC on this class"
    )
    return clause, evidence


@functools.lru_cache(maxsize=64)
def _in_order(prios: tuple[int, ...]) -> tuple[int, ...]:
    """The lossless priorities as the loop over PRIOS meets them (ports share a few sets)."""
    return tuple(p for p in PRIOS if p in prios)


@window_rule("lossless_drops", "roce_out_of_sequence", window=())
def lossless_drops(ctx: RuleContext) -> list[Finding]:
    """Drops on a lossless priority, or RoCE out-of-sequence: PFC is not protecting the flow."""
    out: list[Finding] = []
    limit = ctx.th("lossless_drops_per_s")
    flapped = {f.port.key for f in ctx.findings if f.rule == "link_flap" and f.port is not None}
    # A priority that is not lossless finds nothing; with no drops remembered it has
    # nothing to clear either, and is passed by.
    visit_all = ctx.remembers("lossless_drops")
    _note_rx_pauses(ctx)
    for lt in ctx.links:
        if lt.dt is None:
            continue
        prios = lossless_prios(lt.link) or ()
        visit = PRIOS if visit_all else _in_order(prios)
        for p in visit:
            found = None
            if p in prios:
                drops = lt.prio_rate_of(_DROP_RATES, p)
                total = sum([v for v in drops if v is not None])
                if total > limit:
                    clause, sw = switch_without_pfc(ctx, (p,))
                    switch = (
                        _SWITCH_CHECK.format(p=p)
                        if clause
                        else ("check the switch buffer/headroom and PFC on this priority")
                    )
                    evidence: dict[str, float | None] = {
                        k: r3(v) for k, v in zip(_DROP_RATES, drops, strict=True)
                    }
                    evidence.update(sw)
                    found = Finding(
                        rule="lossless_drops",
                        severity="warning",
                        subject=lt.prio_subject(p),
                        summary=(
                            f"{lt.label} prio {p}: {si(total)} drops/s on a lossless priority "
                            f"(PFC is not protecting it end to end){clause}"
                        ),
                        evidence=dict(evidence),
                        next_step=(
                            f"ethtool -S {lt.name} | grep -E 'prio{p}_(discard|buf_discard|"
                            f"cong_discard|pause)'; mlnx_qos -i {lt.name}; {switch}"
                        ),
                        host=lt.host,
                        port=lt.ref,
                        priority=p,
                    )
            ctx.report_debounced(
                out, found, ("lossless_drops", lt.prio_subject(p)), lt.t, lt.dt, 0.0
            )
        # Out-of-sequence on RoCE means a packet went missing: on a PFC fabric it should not.
        # Right after a flap the link_flap finding already explains the loss.
        found = None
        if prios and is_rdma_ethernet(lt.link) and (lt.host, lt.link.id) not in flapped:
            oos = lt.rate(_OOS_PER_S)
            seq = lt.rate(_SEQ_ERR_PER_S)
            total = (oos or 0.0) + (seq or 0.0)
            if total > limit:
                clause, sw = switch_without_pfc(ctx, prios)
                oos_evidence: dict[str, float | None] = {
                    Metric.OUT_OF_SEQUENCE.per_s: r3(oos),
                    Metric.PACKET_SEQ_ERR.per_s: r3(seq),
                    Metric.RX_BYTES.per_s: r3(lt.rate(Metric.RX_BYTES.per_s)),
                }
                oos_evidence.update(sw)
                on = ",".join(map(str, prios))
                switch = _SWITCH_CHECK.format(p=on) if clause else "check PFC on the switch ports"
                found = Finding(
                    rule="roce_out_of_sequence",
                    severity="warning",
                    subject=lt.subject,
                    summary=(
                        f"{lt.label}: RoCE saw {si(total)} out-of-sequence packets/s although "
                        f"PFC is on (prio {on}): packets are being dropped{clause}"
                    ),
                    evidence=dict(oos_evidence),
                    next_step=(
                        f"rdma statistic show link {lt.link.rdma_device or lt.name}/"
                        f"{lt.link.port or 1}; check that the traffic is marked with the lossless "
                        f"priority (trust mode, DSCP map); {switch}"
                    ),
                    host=lt.host,
                    port=lt.ref,
                )
        ctx.report_debounced(out, found, ("roce_out_of_sequence", lt.subject), lt.t, lt.dt, 0.0)
    return out
