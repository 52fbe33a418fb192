"""Traffic rule: a busy RDMA port carrying almost no RDMA (the collective fell back to TCP)."""

from __future__ import annotations

from collectors.vocabulary import Derived, Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, fmt_rate, r3


def rdma_fallback(ctx: RuleContext) -> list[Finding]:
    """Traffic flows on an RDMA-capable port but the RDMA share of its bytes is near zero."""
    out: list[Finding] = []
    for lt in ctx.links:
        if lt.dt is None:
            continue
        key = ("rdma_fallback", lt.subject)
        share = lt.rate(Derived.RDMA_SHARE)
        rx, tx = lt.rate(Metric.RX_BYTES.per_s), lt.rate(Metric.TX_BYTES.per_s)
        found = None
        if share is not None and rx is not None and tx is not None:
            busy = (rx + tx) * 8.0 >= ctx.th("rdma_min_traffic_bps")
            if busy and share <= ctx.th("rdma_share_min"):
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
        f = ctx.memory.debounce(found, key, lt.t, lt.dt, ctx.th("detect_s"), ctx.th("restore_s"))
        if f is not None:
            out.append(f)
    return out
