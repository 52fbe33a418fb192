"""ECN rule: congestion handled by PFC alone, with no ECN marks or CNPs (DCQCN off).

A port that *sends* pauses is a congestion point: with DCQCN working, the packets
queued toward it carry ECN marks and its NIC answers with CNPs. Ports that only
*receive* pauses are the senders being held back; they are reported on their own only
when no congestion point was found, and otherwise listed as its paused peers.
"""

from __future__ import annotations

from fabtop.core.findings import Finding
from fabtop.core.rules.context import (
    LinkTick,
    RuleContext,
    fmt_rate,
    is_rdma_ethernet,
    iter_links,
    r3,
)

_ECN_RATES = ("ecn_marked_per_s", "cnp_sent_per_s", "cnp_handled_per_s")


def _moving(ctx: RuleContext, lt: LinkTick) -> bool:
    """Traffic flows (a stuck port in a storm has congestion of another kind)."""
    rx, tx = lt.rate("rx_bytes_per_s"), lt.rate("tx_bytes_per_s")
    if rx is None and tx is None:
        return True
    line = lt.line_rate_bytes
    limit = ctx.th("storm_flat_fraction") * line if line else ctx.th("storm_flat_bytes_per_s")
    return (rx or 0.0) + (tx or 0.0) > limit


def _prios(v: tuple[int, ...] | None) -> str | None:
    if v is None:
        return None
    return ",".join(map(str, v)) or "none"


def _sends(f: Finding, need: float) -> bool:
    v = f.evidence.get("tx_pause_per_s")
    return isinstance(v, int | float) and v >= need


def congestion_without_ecn(ctx: RuleContext) -> list[Finding]:
    """Pauses keep coming while ECN marks and CNPs stay at zero."""
    stormy = {f.subject.rsplit("/", 1)[0] for f in ctx.findings if f.rule == "pfc_storm"}
    need = ctx.th("ecn_pause_per_s")
    points: list[Finding] = []
    victims: list[Finding] = []
    for lt in iter_links(ctx.state):
        if lt.dt is None or not is_rdma_ethernet(lt.link):
            continue
        key = ("congestion_without_ecn", lt.subject)
        ecn = {n: lt.rate(n) for n in _ECN_RATES}
        rx = lt.rate("rx_pause_per_s") or 0.0
        tx = lt.rate("tx_pause_per_s") or 0.0
        found = None
        # Without any ECN/CNP counter we cannot tell "zero" from "not counted".
        if (
            any(v is not None for v in ecn.values())
            and all(not v for v in ecn.values())
            and max(rx, tx) >= need
            and lt.subject not in stormy
            and _moving(ctx, lt)
        ):
            held, _ = ctx.memory.preview(key, lt.t, lt.dt, rx + tx)
            qos = lt.link.qos
            role = f"sends {tx:.0f} pauses/s" if tx >= need else f"is paused {rx:.0f} times/s"
            found = Finding(
                rule="congestion_without_ecn",
                severity="warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: congestion handled by PFC alone: it {role} for {held:.0f} s "
                    "with no ECN marks or CNPs (DCQCN/ECN looks off)"
                ),
                evidence={
                    "rx_pause_per_s": r3(rx),
                    "tx_pause_per_s": r3(tx),
                    **{k: r3(v) for k, v in ecn.items()},
                    "tx": fmt_rate(lt.rate("tx_bytes_per_s")),
                    "rx": fmt_rate(lt.rate("rx_bytes_per_s")),
                    "ecn_np_enabled": _prios(qos.ecn_np_enabled if qos else None),
                    "ecn_rp_enabled": _prios(qos.ecn_rp_enabled if qos else None),
                },
                next_step=(
                    f"on {lt.host}: grep . /sys/class/net/{lt.name}/ecn/roce_np/enable/* "
                    f"/sys/class/net/{lt.name}/ecn/roce_rp/enable/*; rdma statistic show link "
                    f"{lt.link.rdma_device or lt.name}/{lt.link.port or 1} | grep -E 'ecn|cnp'; "
                    "and ECN marking on the switch queue of the lossless priority"
                ),
                host=lt.host,
            )
        f = ctx.memory.debounce(found, key, lt.t, lt.dt, ctx.th("detect_s"), ctx.th("restore_s"))
        if f is None:
            continue
        (points if _sends(f, need) else victims).append(f)
    if not points:
        return victims
    peers = ", ".join(v.subject for v in victims)
    for f in points:
        f.evidence["paused_peers"] = peers or None
    return points
