"""PFC configuration rules: pauses where PFC is off here; PFC or trust differing across hosts."""

from __future__ import annotations

from collections import Counter

from fabtop.core.findings import Finding, prio_text
from fabtop.core.rules.context import LinkTick, RuleContext, is_rdma_ethernet, r3
from fabtop.core.rules.kinds import state_rule, window_rule
from fabtop.core.rules.pauses import PAUSE_PER_S, PRIOS


@window_rule("pfc_disabled_prio", window=())
def pause_on_disabled_prio(ctx: RuleContext) -> list[Finding]:
    """Pauses counted on a priority where this host's PFC configuration has PFC off."""
    remembered = ctx.remembers("pfc_disabled_prio")
    out: list[Finding] = []
    for lt in ctx.links:
        qos = lt.link.qos
        if lt.dt is None or qos is None or qos.pfc_enabled is None or qos.source == "ethtool":
            continue  # "ethtool" qos is inferred from the counters themselves: always agrees
        # Only a priority with pause frames finds anything (they are among lt.pausing);
        # with nothing tracked, the quiet ones have nothing to clear either.
        if not lt.pausing and not remembered:
            continue
        for p in PRIOS:
            if p in qos.pfc_enabled:
                continue
            rx = lt.prio_rate(PAUSE_PER_S["rx"], p)
            tx = lt.prio_rate(PAUSE_PER_S["tx"], p)
            key = ("pfc_disabled_prio", lt.prio_subject(p))
            found = None
            if (rx or 0.0) > 0 or (tx or 0.0) > 0:
                found = Finding(
                    rule="pfc_disabled_prio",
                    severity="warning",
                    subject=lt.prio_subject(p),
                    summary=(
                        f"{lt.label} prio {p}: pause frames on a priority where PFC is off "
                        f"here (PFC on: {prio_text(qos.pfc_enabled)}): the peer or switch runs "
                        "a different PFC map"
                    ),
                    evidence={
                        PAUSE_PER_S["rx"]: r3(rx),
                        PAUSE_PER_S["tx"]: r3(tx),
                        "pfc_enabled": qos.pfc_enabled,
                        "qos_source": qos.source,
                    },
                    next_step=(
                        f"mlnx_qos -i {lt.name} (or dcb pfc show dev {lt.name}) here and on the "
                        "switch port: PFC must be on the same priorities end to end"
                    ),
                    host=lt.host,
                    port=lt.ref,
                    priority=p,
                )
            ctx.report_debounced(out, found, key, lt.t, lt.dt, 0.0)
    return out


def _majority_report(values: dict[str, str]) -> tuple[str, list[str], Counter[str]] | None:
    """(majority value, labels that differ from it, counts) when not all values agree."""
    if len(set(values.values())) < 2:
        return None  # all agree (the usual case): no need to count them
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


@state_rule("pfc_mismatch", "trust_mismatch")
def pfc_config_mismatch(ctx: RuleContext) -> list[Finding]:
    """PFC priorities or trust mode differing across the RoCE ports of the fabric."""
    roce = [
        (lt, lt.link.qos)
        for lt in ctx.links
        if lt.link.qos is not None and is_rdma_ethernet(lt.link)
    ]
    if (
        not ctx.remembers("pfc_mismatch")
        and not ctx.remembers("trust_mismatch")
        and len({q.pfc_enabled for _, q in roce if q.pfc_enabled is not None}) < 2
        and len({q.trust for _, q in roce if q.trust is not None}) < 2
    ):
        return []  # every port agrees (the usual case): nothing to find, nothing to clear
    pfc: dict[str, str] = {}
    trust: dict[str, str] = {}
    ports: dict[str, LinkTick] = {}  # label -> the port (its host, what to type)
    for lt, q in roce:
        ports[lt.label] = lt
        if q.pfc_enabled is not None:
            pfc[lt.label] = prio_text(q.pfc_enabled)
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
            host, name = ports[odd[0]].host, ports[odd[0]].name
            found = Finding(
                rule=rule,
                severity="warning",
                subject="fabric",
                summary=f"{what} across hosts: most use {shown}, but {odd_text}{more}",
                evidence={"values": _grouped(values), "majority": majority},
                next_step=(
                    f"on {host}: mlnx_qos -i {name} and compare with the others and with the "
                    "switch (lossless traffic needs the same map end to end)"
                ),
            )
        ctx.report(out, found, (rule, "fabric"), ctx.now)
    return out
