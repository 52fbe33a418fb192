"""Lossless rules: drops on a PFC-enabled priority, RoCE out-of-sequence (PFC not protecting)."""

from __future__ import annotations

import functools

from collectors.vocabulary import Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, is_rdma_ethernet, lossless_prios, r3
from fabtop.core.rules.pauses import PRIOS

# Per-priority drop counters; any of them moving on a lossless priority is a loss.
_DROP_RATES = tuple(
    m.per_s for m in (Metric.RX_DISCARDS_PRIO, Metric.RX_BUF_DISCARD, Metric.RX_CONG_DISCARD)
)
# Looked up once: an enum member costs a class attribute lookup per read, per link.
_OOS_PER_S = Metric.OUT_OF_SEQUENCE.per_s
_SEQ_ERR_PER_S = Metric.PACKET_SEQ_ERR.per_s


@functools.lru_cache(maxsize=64)
def _in_order(prios: tuple[int, ...]) -> tuple[int, ...]:
    """The lossless priorities as the loop over PRIOS meets them (ports share a few sets)."""
    return tuple(p for p in PRIOS if p in prios)


def lossless_drops(ctx: RuleContext) -> list[Finding]:
    """Drops on a lossless priority, or RoCE out-of-sequence: PFC is not protecting the flow."""
    tracked = ctx.memory.held
    out: list[Finding] = []
    limit = ctx.th("lossless_drops_per_s")
    restore_s = ctx.th("restore_s")
    flapped = {f.port.key for f in ctx.findings if f.rule == "link_flap" and f.port is not None}
    memory = ctx.memory
    for lt in ctx.links:
        if lt.dt is None:
            continue
        prios = lossless_prios(lt.link) or ()
        # A priority that is not lossless finds nothing; with no drops tracked it has
        # nothing to clear either, and is passed by.
        remembered = "lossless_drops" in tracked
        visit = PRIOS if remembered else _in_order(prios)
        for p in visit:
            found = None
            if p in prios:
                drops = lt.prio_rate_of(_DROP_RATES, p)
                total = sum([v for v in drops if v is not None])
                if total > limit:
                    found = Finding(
                        rule="lossless_drops",
                        severity="warning",
                        subject=lt.prio_subject(p),
                        summary=(
                            f"{lt.label} prio {p}: {total:.1f} drops/s on a lossless priority "
                            "(PFC is not protecting it end to end)"
                        ),
                        evidence={k: r3(v) for k, v in zip(_DROP_RATES, drops, strict=True)},
                        next_step=(
                            f"ethtool -S {lt.name} | grep -E 'prio{p}_(discard|buf_discard|"
                            f"cong_discard|pause)'; mlnx_qos -i {lt.name}; check the switch "
                            "buffer/headroom and PFC on this priority"
                        ),
                        host=lt.host,
                        port=lt.ref,
                        priority=p,
                    )
            if found is None and not remembered:
                continue  # nothing found and nothing tracked: debouncing would do nothing
            key = ("lossless_drops", lt.prio_subject(p))
            f = memory.debounce(found, key, lt.t, lt.dt, 0.0, restore_s)
            if f is not None:
                out.append(f)
        # Out-of-sequence on RoCE means a packet went missing: on a PFC fabric it should not.
        # Right after a flap the link_flap finding already explains the loss.
        found = None
        if prios and is_rdma_ethernet(lt.link) and (lt.host, lt.link.id) not in flapped:
            oos = lt.rate(_OOS_PER_S)
            seq = lt.rate(_SEQ_ERR_PER_S)
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
        if found is None and "roce_out_of_sequence" not in tracked:
            continue
        key = ("roce_out_of_sequence", lt.subject)
        f = memory.debounce(found, key, lt.t, lt.dt, 0.0, restore_s)
        if f is not None:
            out.append(f)
    return out
