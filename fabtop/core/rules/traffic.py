"""Traffic rule: a busy RDMA port carrying almost no RDMA (the collective fell back to TCP)."""

from __future__ import annotations

from collectors.vocabulary import Derived, Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, fmt_rate, r3
from fabtop.core.rules.kinds import window_rule

# Looked up once: an enum member costs a class attribute lookup per read, per link.
_SHARE = Derived.RDMA_SHARE
_RX_PER_S, _TX_PER_S = Metric.RX_BYTES.per_s, Metric.TX_BYTES.per_s


@window_rule("rdma_fallback")
def rdma_fallback(ctx: RuleContext) -> list[Finding]:
    """Traffic flows on an RDMA-capable port but the RDMA share of its bytes is near zero."""
    remembered = ctx.remembers("rdma_fallback")
    out: list[Finding] = []
    min_bps, share_min = ctx.th("rdma_min_traffic_bps"), ctx.th("rdma_share_min")
    for lt in ctx.links:
        if lt.dt is None:
            continue
        share = lt.rate(_SHARE)
        if share is None and not remembered:
            continue  # no RDMA share measured (not an RDMA port): nothing to find or carry on
        rx, tx = lt.rate(_RX_PER_S), lt.rate(_TX_PER_S)
        found = None
        if share is not None and rx is not None and tx is not None:
            busy = (rx + tx) * 8.0 >= min_bps
            if busy and share <= share_min:
                found = Finding(
                    rule="rdma_fallback",
                    severity="warning",
                    subject=lt.subject,
                    summary=(
                        f"{lt.label}: carrying {fmt_rate(rx + tx)} but only {share * 100:.1f}% "
                        "is RDMA: the collective library (NCCL/RCCL) likely fell back to TCP"
                    ),
                    evidence={
                        Derived.RDMA_SHARE: r3(share),
                        Metric.RX_BYTES.per_s: r3(rx),
                        Metric.TX_BYTES.per_s: r3(tx),
                        **{
                            m.per_s: r3(lt.rate(m.per_s))
                            for m in (Metric.RDMA_RX_BYTES, Metric.RDMA_TX_BYTES)
                        },
                    },
                    next_step=(
                        "rerun with NCCL_DEBUG=INFO and look for 'NET/Socket' instead of "
                        f"'NET/IB'; check NCCL_IB_HCA / NCCL_SOCKET_IFNAME and ibv_devinfo -d "
                        f"{lt.link.rdma_device or '<dev>'} (port ACTIVE, GID present)"
                    ),
                    host=lt.host,
                    port=lt.ref,
                )
        ctx.report_debounced(out, found, ("rdma_fallback", lt.subject), lt.t, lt.dt)
    return out
