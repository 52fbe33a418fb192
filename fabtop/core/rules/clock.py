"""Clock rule: a host whose clock is off from the operator's by more than ``clock_skew_s``.

fabtop places such a host's frames by the measured offset (:mod:`fabtop.core.clock`),
so its charts still line up with the others; the finding says so, because the node's
own logs, certificates and job timestamps are off by the same amount.
"""

from __future__ import annotations

from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, host_time
from fabtop.core.rules.kinds import state_rule
from fabtop.core.units import duration


@state_rule("clock_skew")
def clock_skew(ctx: RuleContext) -> list[Finding]:
    """A host's clock ahead of or behind the operator's by more than the threshold."""
    out: list[Finding] = []
    limit = ctx.th("clock_skew_s")
    for hs in ctx.state.hosts.values():
        s, r = hs.sample, hs.rates
        if s is None:
            continue
        offset = r.clock_offset_s if r is not None else None
        found = None
        if offset is not None and abs(offset) > limit:
            way = "ahead of" if offset > 0 else "behind"
            found = Finding(
                rule="clock_skew",
                severity="warning",
                subject=hs.name,
                summary=(
                    f"{hs.name}: clock {duration(abs(offset))} {way} this machine's "
                    f"(offset {offset:+.1f} s); its samples are placed by the measured offset"
                ),
                evidence={"offset_s": round(offset, 3), "clock_skew_s": limit},
                next_step=(
                    f"on {hs.name}: chronyc tracking (or timedatectl timesync-status); "
                    "check its NTP/PTP source, then this machine's"
                ),
                host=hs.name,
            )
        ctx.report(out, found, ("clock_skew", hs.name), host_time(s, r))
    return out
