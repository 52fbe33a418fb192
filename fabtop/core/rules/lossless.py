"""Lossless rules: drops on a PFC-enabled priority, RoCE out-of-sequence (PFC not protecting)."""

from __future__ import annotations

from collectors.vocabulary import Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, is_rdma_ethernet, lossless_prios, r3
from fabtop.core.rules.pauses import PRIOS

# Per-priority drop counters; any of them moving on a lossless priority is a loss.
_DROPS = (Metric.RX_DISCARDS_PRIO, Metric.RX_BUF_DISCARD, Metric.RX_CONG_DISCARD)


def lossless_drops(ctx: RuleContext) -> list[Finding]:
    """Drops on a lossless priority, or RoCE out-of-sequence: PFC is not protecting the flow."""
    out: list[Finding] = []
    limit = ctx.th("lossless_drops_per_s")
    flapped = {f.port.key for f in ctx.findings if f.rule == "link_flap" and f.port is not None}
    for lt in ctx.links:
        if lt.dt is None:
            continue
        prios = lossless_prios(lt.link) or ()
        for p in PRIOS:
            key = ("lossless_drops", lt.prio_subject(p))
            found = None
            if p in prios:
                parts = {m.per_s: lt.prio_rate(m.per_s, p) for m in _DROPS}
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
                        port=lt.ref,
                        priority=p,
                    )
            f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("restore_s"))
            if f is not None:
                out.append(f)
        # Out-of-sequence on RoCE means a packet went missing: on a PFC fabric it should not.
        # Right after a flap the link_flap finding already explains the loss.
        key = ("roce_out_of_sequence", lt.subject)
        found = None
        if prios and is_rdma_ethernet(lt.link) and (lt.host, lt.link.id) not in flapped:
            oos = lt.rate(Metric.OUT_OF_SEQUENCE.per_s)
            seq = lt.rate(Metric.PACKET_SEQ_ERR.per_s)
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
                        Metric.OUT_OF_SEQUENCE.per_s: r3(oos),
                        Metric.PACKET_SEQ_ERR.per_s: r3(seq),
                        Metric.RX_BYTES.per_s: r3(lt.rate(Metric.RX_BYTES.per_s)),
                    },
                    next_step=(
                        f"rdma statistic show link {lt.link.rdma_device or lt.name}/"
                        f"{lt.link.port or 1}; check that the traffic is marked with the lossless "
                        "priority (trust mode, DSCP map) and PFC on the switch ports"
                    ),
                    host=lt.host,
                    port=lt.ref,
                )
        f = ctx.memory.debounce(found, key, lt.t, lt.dt, 0.0, ctx.th("restore_s"))
        if f is not None:
            out.append(f)
    return out
