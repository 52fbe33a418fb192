"""Inference rule: a token-rate drop that coincides with a fabric event, shown together."""

from __future__ import annotations

from dataclasses import replace
from statistics import median

from collectors.vocabulary import InferenceRate
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, host_time
from fabtop.core.rules.kinds import window_rule

# Findings that describe the fabric (not the GPUs, not the servers themselves).
FABRIC_RULES = frozenset(
    {
        "pfc_storm",
        "pfc_stall",
        "pfc_disabled_prio",
        "pfc_mismatch",
        "trust_mismatch",
        "lossless_drops",
        "roce_out_of_sequence",
        "congestion_without_ecn",
        "mtu_mismatch",
        "roce_mtu_low",
        "pcie_degraded",
        "nic_temperature",
        "link_flap",
        "module_high_temp",
        "rdma_fallback",
    }
)


def _baseline(ctx: RuleContext, host: str, url: str, t: float, dt: float) -> float | None:
    """Median token rate before the detection window (None without enough history)."""
    series = ctx.state.history.get((host, url, InferenceRate.GENERATED_TOKENS_PER_S))
    if series is None:
        return None
    times, values = series.points(ctx.th("token_baseline_s"), now=t)
    # Leave out the ticks the drop may already cover, so the baseline is the level before it.
    cutoff = t - ctx.th("detect_s") - 0.5 * dt
    before = [v for ts, v in zip(times, values, strict=True) if ts <= cutoff and v is not None]
    return median(before) if len(before) >= 2 else None


def _pick_event(events: list[Finding], host: str) -> Finding:
    """The same host's worst fabric finding, else the worst anywhere (a storm stalls all)."""
    return max(events, key=lambda e: (e.host == host, e.rank))


@window_rule("token_drop", window=("token_baseline_s",))
def token_drop_with_fabric_event(ctx: RuleContext) -> list[Finding]:
    """Generated-token rate fell well below its recent level while a fabric finding is open."""
    events = [f for f in ctx.findings if f.rule in FABRIC_RULES and f.severity != "info"]
    drops: list[Finding] = []
    for hs in ctx.state.hosts.values():
        s, r = hs.sample, hs.rates
        if s is None or r is None or r.interval_s is None:
            continue
        t, dt = host_time(s, r), r.interval_s
        # A server with no token counter (exo, mlx_lm) has no rate to drop: never judged.
        unknown = {inf.url for inf in s.inference if inf.rate_unknown is not None}
        for url, values in r.inference.items():
            if url in unknown:
                continue
            key = ("token_drop", f"{hs.name}/{url}")
            rate = values.get(InferenceRate.GENERATED_TOKENS_PER_S)
            found = None
            base = _baseline(ctx, hs.name, url, t, dt) if rate is not None else None
            if (
                rate is not None
                and base is not None
                and base >= ctx.th("token_min_per_s")
                and rate <= (1.0 - ctx.th("token_drop_fraction")) * base
            ):
                drop = 1.0 - rate / base
                found = Finding(
                    rule="token_drop",
                    severity="warning",
                    subject=f"{hs.name}/{url}",
                    summary=(
                        f"{hs.name}: token rate fell {drop * 100:.0f}% "
                        f"({base:.0f} -> {rate:.0f} tok/s)"
                    ),
                    evidence={
                        InferenceRate.GENERATED_TOKENS_PER_S: round(rate, 1),
                        "baseline_tokens_per_s": round(base, 1),
                    },
                    host=hs.name,
                )
            # The drop is tracked on its own, so it is confirmed in time to meet the
            # fabric finding; it is reported only while such a finding is open.
            ctx.report_debounced(drops, found, key, t, dt)
    if not events:
        return []
    out: list[Finding] = []
    for f in drops:
        event = _pick_event(events, f.host or "")
        out.append(
            replace(
                f,
                summary=f"{f.summary} while {event.subject}: {event.rule}",
                evidence={**f.evidence, "fabric_event": event.subject, "fabric_rule": event.rule},
                next_step=f"fix the fabric event first: {event.next_step}",
            )
        )
    return out
