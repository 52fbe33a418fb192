"""PFC rules: pause storms, the NIC's stall watchdog, pauses where PFC is off, config drift, drops.

A PFC storm is detected in the spirit of SONiC's PFC watchdog (pfcwd): a priority
that stays paused for (nearly) the whole interval while its queue does not move,
held for a detection time and cleared after a quiet restoration time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fabtop.core.findings import Finding
from fabtop.core.rules.context import (
    LinkTick,
    RuleContext,
    fmt_rate,
    is_rdma_ethernet,
    iter_links,
    lossless_prios,
    r3,
)

PRIOS = range(8)


@dataclass(slots=True)
class _PauseEnd:
    """One port sending or receiving pauses on one priority right now."""

    label: str
    ratio: float | None
    per_s: float | None

    def strength(self) -> float:
        return self.ratio if self.ratio is not None else min(1.0, (self.per_s or 0.0) / 1e4)


def _pausers(
    ticks: list[LinkTick], side: str, min_ratio: float, min_per_s: float
) -> dict[int, list[_PauseEnd]]:
    """Per priority, the ports pausing hard on ``side`` this tick, strongest first.

    Hard: paused at least ``min_ratio`` of the time, or (without duration counters) at
    least ``min_per_s`` pause frames a second; occasional pauses are not "who pauses whom".
    """
    out: dict[int, list[_PauseEnd]] = {}
    for lt in ticks:
        ratios = lt.prio_rates(f"{side}_pause_time_ratio")
        counts = lt.prio_rates(f"{side}_pause_per_s")
        for p in set(ratios) | set(counts):
            ratio, per_s = ratios.get(p), counts.get(p)
            hard = ratio >= min_ratio if ratio is not None else (per_s or 0.0) >= min_per_s
            if hard:
                out.setdefault(p, []).append(_PauseEnd(lt.label, ratio, per_s))
    for ends in out.values():
        ends.sort(key=lambda e: -e.strength())
    return out


def _flat_bytes(lt: LinkTick, direction: str, prio: int) -> tuple[float | None, str]:
    """Bytes/s moving in ``direction`` on ``prio`` (the whole port when not per priority)."""
    v = lt.prio_rate(f"{direction}_bytes_prio_per_s", prio)
    if v is not None:
        return v, f"{direction}_bytes_prio{prio}_per_s"
    return lt.rate(f"{direction}_bytes_per_s"), f"{direction}_bytes_per_s"


def _is_flat(ctx: RuleContext, lt: LinkTick, moved: float | None) -> bool:
    if moved is None:
        return True  # no byte counters: the pause ratio alone has to decide
    line = lt.line_rate_bytes
    limit = ctx.th("storm_flat_fraction") * line if line else ctx.th("storm_flat_bytes_per_s")
    return moved <= limit


def _names(ends: list[_PauseEnd], skip: str) -> list[str]:
    return [e.label for e in ends if e.label != skip]


def pfc_storm(ctx: RuleContext) -> list[Finding]:
    """A priority paused for nearly the whole interval while its traffic does not move."""
    ticks = list(iter_links(ctx.state))
    lo, lo_per_s = ctx.th("pressure_pause_ratio"), ctx.th("storm_min_pause_per_s")
    senders = _pausers(ticks, "tx", lo, lo_per_s)  # sending pauses: receivers that cannot drain
    receivers = _pausers(ticks, "rx", lo, lo_per_s)  # being paused
    min_ratio = ctx.th("storm_pause_ratio")
    min_per_s = ctx.th("storm_min_pause_per_s")
    out: list[Finding] = []
    for lt in ticks:
        if lt.dt is None or lt.rates is None:
            continue
        for p in PRIOS:
            key = ("pfc_storm", lt.prio_subject(p))
            found: Finding | None = None
            level = 0.0
            # The tx side first: a port that sends the pauses is the stuck receiver.
            for side, moving in (("tx", "rx"), ("rx", "tx")):
                ratio = lt.prio_rate(f"{side}_pause_time_ratio", p)
                per_s = lt.prio_rate(f"{side}_pause_per_s", p)
                if ratio is not None:
                    stormy = ratio >= min_ratio
                else:
                    stormy = per_s is not None and per_s >= min_per_s
                if not stormy:
                    continue
                moved, moved_name = _flat_bytes(lt, moving, p)
                if not _is_flat(ctx, lt, moved):
                    continue
                level = ratio if ratio is not None else 1.0
                held, mean = ctx.memory.preview(key, lt.t, lt.dt, level)
                found = _storm_finding(
                    lt,
                    p,
                    side,
                    ratio,
                    per_s,
                    moved,
                    moved_name,
                    held,
                    mean,
                    senders.get(p, []),
                    receivers.get(p, []),
                )
                break
            f = ctx.memory.debounce(
                found, key, lt.t, lt.dt, ctx.th("detect_s"), ctx.th("restore_s"), level
            )
            if f is not None:
                out.append(f)
    return out


def _storm_finding(
    lt: LinkTick,
    p: int,
    side: str,
    ratio: float | None,
    per_s: float | None,
    moved: float | None,
    moved_name: str,
    held: float,
    mean: float,
    senders: list[_PauseEnd],
    receivers: list[_PauseEnd],
) -> Finding:
    how = (
        f"paused {mean * 100:.1f}% of the last {held:.0f} s"
        if ratio is not None
        else (f"{per_s:.0f} pause frames/s for {held:.0f} s")
    )
    evidence: dict[str, float | int | str | None] = {
        f"{side}_pause_time_ratio": r3(ratio),
        f"{side}_pause_per_s": r3(per_s),
        moved_name: r3(moved),
        "held_s": round(held, 2),
    }
    if side == "tx":
        peers = _names(receivers, lt.label)
        evidence["stuck_receiver"] = lt.label
        evidence["paused_peers"] = ", ".join(peers) if peers else None
        verb = how.replace("paused", "sent pauses", 1) if ratio is not None else how
        summary = (
            f"{lt.label} prio {p}: PFC storm: {verb} while its rx is flat "
            f"(this host is the stuck receiver"
            + (f"; it pauses {', '.join(peers[:3])}" if peers else "")
            + ")"
        )
        next_step = (
            f"on {lt.host}: ethtool -S {lt.name} | grep -E 'prio{p}_(pause|discard|bytes)'; "
            f"mlnx_qos -i {lt.name}; find why it does not drain (hung consumer, PCIe, rx buffer) "
            "and check the switch's PFC watchdog on the port facing it"
        )
    else:
        stuck = _names(senders, lt.label)
        evidence["stuck_receiver"] = stuck[0] if stuck else None
        evidence["paused_peers"] = lt.label
        who = f"stuck receiver: {stuck[0]}" if stuck else "stuck receiver beyond the switch"
        summary = f"{lt.label} prio {p}: PFC storm: {how} while tx is flat ({who})"
        next_step = (
            f"ethtool -S {lt.name} | grep prio{p}_pause; "
            + (f"look at {stuck[0]} (it sends the pauses); " if stuck else "")
            + "check the switch's PFC watchdog / the receiver on the far end"
        )
    return Finding(
        rule="pfc_storm",
        severity="critical",
        subject=lt.prio_subject(p),
        summary=summary,
        evidence=evidence,
        next_step=next_step,
        host=lt.host,
    )


def pfc_pressure(ctx: RuleContext) -> list[Finding]:
    """Heavy but moving PFC pausing (incast): information, not a fault."""
    out: list[Finding] = []
    lo, hi = ctx.th("pressure_pause_ratio"), ctx.th("storm_pause_ratio")
    for lt in iter_links(ctx.state):
        if lt.dt is None or lt.rates is None:
            continue
        for p in PRIOS:
            key = ("pfc_pressure", lt.prio_subject(p))
            found = None
            worst = 0.0
            for side, moving in (("tx", "rx"), ("rx", "tx")):
                ratio = lt.prio_rate(f"{side}_pause_time_ratio", p)
                moved, _ = _flat_bytes(lt, moving, p)
                # Paused and not moving is a (beginning) storm or its victim, not pressure.
                if ratio is not None and moved is not None and not _is_flat(ctx, lt, moved):
                    worst = max(worst, ratio)
            if lo <= worst < hi:
                held, mean = ctx.memory.preview(key, lt.t, lt.dt, worst)
                found = Finding(
                    rule="pfc_pressure",
                    severity="info",
                    subject=lt.prio_subject(p),
                    summary=(
                        f"{lt.label} prio {p}: paused {mean * 100:.0f}% of the last {held:.0f} s "
                        "while traffic still flows (congestion, e.g. incast)"
                    ),
                    evidence={
                        "rx_pause_time_ratio": r3(lt.prio_rate("rx_pause_time_ratio", p)),
                        "tx_pause_time_ratio": r3(lt.prio_rate("tx_pause_time_ratio", p)),
                        "tx_bytes_per_s": r3(lt.rate("tx_bytes_per_s")),
                        "rx_bytes_per_s": r3(lt.rate("rx_bytes_per_s")),
                        "ecn_marked_per_s": r3(lt.rate("ecn_marked_per_s")),
                    },
                    next_step="watch that ECN marks/CNPs rise with it (DCQCN working)",
                    host=lt.host,
                )
            f = ctx.memory.debounce(
                found, key, lt.t, lt.dt, ctx.th("detect_s"), ctx.th("restore_s"), worst
            )
            if f is not None:
                out.append(f)
    return out


def pfc_stall_events(ctx: RuleContext) -> list[Finding]:
    """mlx5's own stall watchdog fired (tx_pause_storm_warning/error_events rising)."""
    out: list[Finding] = []
    for lt in iter_links(ctx.state):
        if lt.dt is None:
            continue
        warn = lt.rate("tx_pause_storm_warning_events_per_s") or 0.0
        err = lt.rate("tx_pause_storm_error_events_per_s") or 0.0
        key = ("pfc_stall", lt.subject)
        found = None
        if warn > 0 or err > 0:
            total = ctx.memory.total(key, lt.t, (warn + err) * lt.dt)
            critical = err > 0
            what = (
                "the NIC's stall watchdog hit its critical mark: it stopped sending pauses "
                "(flow control off on this port)"
                if critical
                else "the NIC's stall watchdog saw it sending pauses past its warning mark "
                "(its receive side is stalled)"
            )
            found = Finding(
                rule="pfc_stall",
                severity="critical" if critical else "warning",
                subject=lt.subject,
                summary=f"{lt.label}: {what} ({total:.0f} event(s))",
                evidence={
                    "tx_pause_storm_warning_events": _metric(lt, "tx_pause_storm_warning_events"),
                    "tx_pause_storm_error_events": _metric(lt, "tx_pause_storm_error_events"),
                    "warning_events_per_s": r3(warn),
                    "error_events_per_s": r3(err),
                },
                next_step=(
                    f"ethtool -S {lt.name} | grep -E 'pause_storm|prio._pause'; "
                    f"ethtool --show-pause {lt.name}; this host is not draining its receive "
                    "queue: look for a hung consumer, PCIe or host memory pressure (pfc_storm "
                    "findings name who it pauses)"
                ),
                host=lt.host,
            )
        f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("event_hold_s"), (warn + err))
        if f is not None:
            out.append(f)
    return out


def _metric(lt: LinkTick, name: str) -> int | None:
    v = lt.link.metrics.get(name)
    return v if isinstance(v, int) else None


def pause_on_disabled_prio(ctx: RuleContext) -> list[Finding]:
    """Pauses counted on a priority where this host's PFC configuration has PFC off."""
    out: list[Finding] = []
    for lt in iter_links(ctx.state):
        qos = lt.link.qos
        if lt.dt is None or qos is None or qos.pfc_enabled is None or qos.source == "ethtool":
            continue  # "ethtool" qos is inferred from the counters themselves: always agrees
        for p in PRIOS:
            if p in qos.pfc_enabled:
                continue
            rx = lt.prio_rate("rx_pause_per_s", p)
            tx = lt.prio_rate("tx_pause_per_s", p)
            key = ("pfc_disabled_prio", lt.prio_subject(p))
            found = None
            if (rx or 0.0) > 0 or (tx or 0.0) > 0:
                enabled = ",".join(map(str, qos.pfc_enabled)) or "none"
                found = Finding(
                    rule="pfc_disabled_prio",
                    severity="warning",
                    subject=lt.prio_subject(p),
                    summary=(
                        f"{lt.label} prio {p}: pause frames on a priority where PFC is off "
                        f"here (PFC on: {enabled}): the peer or switch runs a different PFC map"
                    ),
                    evidence={
                        "rx_pause_per_s": r3(rx),
                        "tx_pause_per_s": r3(tx),
                        "pfc_enabled": enabled,
                        "qos_source": qos.source,
                    },
                    next_step=(
                        f"mlnx_qos -i {lt.name} (or dcb pfc show dev {lt.name}) here and on the "
                        "switch port: PFC must be on the same priorities end to end"
                    ),
                    host=lt.host,
                )
            f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("restore_s"))
            if f is not None:
                out.append(f)
    return out


def _majority_report(values: dict[str, str]) -> tuple[str, list[str], Counter[str]] | None:
    """(majority value, labels that differ from it, counts) when not all values agree."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return None
    majority = counts.most_common(1)[0][0]
    odd = sorted(label for label, v in values.items() if v != majority)
    return majority, odd, counts


def _grouped(values: dict[str, str]) -> str:
    by: dict[str, list[str]] = {}
    for label, v in sorted(values.items()):
        by.setdefault(v, []).append(label)
    return "; ".join(f"{v}: {', '.join(labels)}" for v, labels in by.items())


def pfc_config_mismatch(ctx: RuleContext) -> list[Finding]:
    """PFC priorities or trust mode differing across the RoCE ports of the fabric."""
    pfc: dict[str, str] = {}
    trust: dict[str, str] = {}
    names: dict[str, str] = {}
    for lt in iter_links(ctx.state):
        if not is_rdma_ethernet(lt.link) or lt.link.qos is None:
            continue
        q = lt.link.qos
        names[lt.label] = lt.name
        if q.pfc_enabled is not None:
            pfc[lt.label] = ",".join(map(str, q.pfc_enabled)) or "none"
        if q.trust is not None:
            trust[lt.label] = q.trust
    out: list[Finding] = []
    for rule, values, what in (
        ("pfc_mismatch", pfc, "PFC is enabled on different priorities"),
        ("trust_mismatch", trust, "QoS trust mode (pcp/dscp) differs"),
    ):
        rep = _majority_report(values)
        found = None
        if rep is not None:
            majority, odd, _ = rep
            odd_text = ", ".join(f"{label} ({values[label]})" for label in odd[:4])
            more = f" and {len(odd) - 4} more" if len(odd) > 4 else ""
            shown = "prio " + majority if rule == "pfc_mismatch" else majority
            found = Finding(
                rule=rule,
                severity="warning",
                subject="fabric",
                summary=f"{what} across hosts: most use {shown}, but {odd_text}{more}",
                evidence={"values": _grouped(values), "majority": majority},
                next_step=(
                    f"on {odd[0].split('/')[0]}: mlnx_qos -i {names[odd[0]]} and compare with the "
                    "others and with the switch (lossless traffic needs the same map end to end)"
                ),
            )
        f = ctx.memory.mark(found, (rule, "fabric"), ctx.now)
        if f is not None:
            out.append(f)
    return out


def lossless_drops(ctx: RuleContext) -> list[Finding]:
    """Drops on a lossless priority, or RoCE out-of-sequence: PFC is not protecting the flow."""
    out: list[Finding] = []
    limit = ctx.th("lossless_drops_per_s")
    flapped = {f.subject for f in ctx.findings if f.rule == "link_flap"}
    for lt in iter_links(ctx.state):
        if lt.dt is None:
            continue
        prios = lossless_prios(lt.link) or ()
        for p in PRIOS:
            key = ("lossless_drops", lt.prio_subject(p))
            found = None
            if p in prios:
                parts = {
                    n: lt.prio_rate(n, p)
                    for n in (
                        "rx_discards_prio_per_s",
                        "rx_buf_discard_per_s",
                        "rx_cong_discard_per_s",
                    )
                }
                total = sum(v for v in parts.values() if v is not None)
                if total > limit:
                    found = Finding(
                        rule="lossless_drops",
                        severity="warning",
                        subject=lt.prio_subject(p),
                        summary=(
                            f"{lt.label} prio {p}: {total:.1f} drops/s on a lossless priority "
                            "(PFC is not protecting it end to end)"
                        ),
                        evidence={k: r3(v) for k, v in parts.items()},
                        next_step=(
                            f"ethtool -S {lt.name} | grep -E 'prio{p}_(discard|buf_discard|"
                            f"cong_discard|pause)'; mlnx_qos -i {lt.name}; check the switch "
                            "buffer/headroom and PFC on this priority"
                        ),
                        host=lt.host,
                    )
            f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("restore_s"))
            if f is not None:
                out.append(f)
        # Out-of-sequence on RoCE means a packet went missing: on a PFC fabric it should not.
        # Right after a flap the link_flap finding already explains the loss.
        key = ("roce_out_of_sequence", lt.subject)
        found = None
        if prios and is_rdma_ethernet(lt.link) and lt.subject not in flapped:
            oos = lt.rate("out_of_sequence_per_s")
            seq = lt.rate("packet_seq_err_per_s")
            total = (oos or 0.0) + (seq or 0.0)
            if total > limit:
                found = Finding(
                    rule="roce_out_of_sequence",
                    severity="warning",
                    subject=lt.subject,
                    summary=(
                        f"{lt.label}: RoCE saw {total:.1f} out-of-sequence packets/s although "
                        f"PFC is on (prio {','.join(map(str, prios))}): packets are being dropped"
                    ),
                    evidence={
                        "out_of_sequence_per_s": r3(oos),
                        "packet_seq_err_per_s": r3(seq),
                        "rx_bytes_per_s": fmt_rate(lt.rate("rx_bytes_per_s")),
                    },
                    next_step=(
                        f"rdma statistic show link {lt.link.rdma_device or lt.name}/"
                        f"{lt.link.port or 1}; check that the traffic is marked with the lossless "
                        "priority (trust mode, DSCP map) and PFC on the switch ports"
                    ),
                    host=lt.host,
                )
        f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("restore_s"))
        if f is not None:
            out.append(f)
    return out
