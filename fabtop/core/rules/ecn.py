"""ECN rule: congestion handled by PFC alone, with no ECN marks or CNPs (DCQCN off).

A port that *sends* pauses is a congestion point: with DCQCN working, the packets
queued toward it carry ECN marks and its NIC answers with CNPs. Ports that only
*receive* pauses are the senders being held back; they are reported on their own only
when no congestion point was found, and otherwise listed as its paused peers.
"""

from __future__ import annotations

from collectors.vocabulary import Metric
from fabtop.core.findings import PAUSED_PEERS, Finding
from fabtop.core.rules.context import LinkTick, RuleContext, is_rdma_ethernet, r3
from fabtop.core.rules.kinds import window_rule
from fabtop.core.rules.pauses import BYTES_PER_S, PAUSE_PER_S, flat_limit
from fabtop.core.units import si

# ECN's signs of life: any of them moving says DCQCN marks (the mixin's alert sums them too).
ECN_SIGNALS = (Metric.ECN_MARKED, Metric.CNP_SENT, Metric.CNP_HANDLED)
_ECN_RATES = tuple(m.per_s for m in ECN_SIGNALS)


def _moving(ctx: RuleContext, lt: LinkTick) -> bool:
    """Traffic flows (a stuck port in a storm has congestion of another kind)."""
    rx, tx = lt.rate(BYTES_PER_S["rx"]), lt.rate(BYTES_PER_S["tx"])
    if rx is None and tx is None:
        return True
    return (rx or 0.0) + (tx or 0.0) > flat_limit(lt, ctx.thresholds)


def _sends(f: Finding, need: float) -> bool:
    v = f.number(PAUSE_PER_S["tx"])
    return v is not None and v >= need


@window_rule("congestion_without_ecn")
def congestion_without_ecn(ctx: RuleContext) -> list[Finding]:
    """Pauses keep coming while ECN marks and CNPs stay at zero."""
    remembered = ctx.remembers("congestion_without_ecn")
    stormy = {f.port.key for f in ctx.findings if f.rule == "pfc_storm" and f.port is not None}
    need = ctx.th("ecn_pause_per_s")
    out: list[Finding] = []
    for lt in ctx.links:
        if lt.dt is None or not is_rdma_ethernet(lt.link):
            continue
        rx = lt.rate(PAUSE_PER_S["rx"]) or 0.0
        tx = lt.rate(PAUSE_PER_S["tx"]) or 0.0
        if max(rx, tx) < need and not remembered:
            continue  # too few pauses to find anything, and nothing tracked to carry on
        key = ("congestion_without_ecn", lt.subject)
        ecn = {n: lt.rate(n) for n in _ECN_RATES}
        found = None
        # Without any ECN/CNP counter we cannot tell "zero" from "not counted".
        if (
            any(v is not None for v in ecn.values())
            and all(not v for v in ecn.values())
            and max(rx, tx) >= need
            and lt.ref.key not in stormy
            and _moving(ctx, lt)
        ):
            qos = lt.link.qos
            role = f"sends {si(tx)} pauses/s" if tx >= need else f"is paused {si(rx)} times/s"
            found = Finding(
                rule="congestion_without_ecn",
                severity="warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: congestion handled by PFC alone: it {role} "
                    "with no ECN marks or CNPs (DCQCN/ECN looks off)"
                ),
                evidence={
                    PAUSE_PER_S["rx"]: r3(rx),
                    PAUSE_PER_S["tx"]: r3(tx),
                    **{k: r3(v) for k, v in ecn.items()},
                    BYTES_PER_S["tx"]: r3(lt.rate(BYTES_PER_S["tx"])),
                    BYTES_PER_S["rx"]: r3(lt.rate(BYTES_PER_S["rx"])),
                    "ecn_np_enabled": qos.ecn_np_enabled if qos else None,
                    "ecn_rp_enabled": qos.ecn_rp_enabled if qos else None,
                },
                next_step=(
                    f"on {lt.host}: grep . /sys/class/net/{lt.name}/ecn/roce_np/enable/* "
                    f"/sys/class/net/{lt.name}/ecn/roce_rp/enable/*; rdma statistic show link "
                    f"{lt.link.rdma_device or lt.name}/{lt.link.port or 1} | grep -E 'ecn|cnp'; "
                    "and ECN marking on the switch queue of the lossless priority"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(out, found, key, lt.t, lt.dt)
    points = [f for f in out if _sends(f, need)]
    victims = [f for f in out if not _sends(f, need)]
    if not points:
        return victims
    peers = tuple(v.port for v in victims if v.port is not None)
    for f in points:
        f.evidence[PAUSED_PEERS] = peers or None
    return points
