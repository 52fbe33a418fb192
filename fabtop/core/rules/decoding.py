"""A host whose stream can no longer decode some of its counters: partly blind, said at once.

The fast probe sends a structured section's names once (a schema) and then values by
position. A stream whose decoder no longer holds a section's schema (a table past its
bound, a cut ``schema`` line) gets values it cannot place: those counters are not seen,
and a host that reports everything else must not look healthy for it (DESIGN §10).
The runner reconnects such a stream once to start it fresh (collectors/runner.py).
No hold time: the condition is not noise, it is a fact of the frame.
"""

from __future__ import annotations

from collectors.frames import UNKNOWN_SCHEMA
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext
from fabtop.core.rules.kinds import state_rule

RULE = "counters_undecoded"
_NAMED = 4  # sections named in the summary; the evidence counts them all


@state_rule(RULE)
def counters_undecoded(ctx: RuleContext) -> list[Finding]:
    """One finding per host with values sections its stream could not decode."""
    out: list[Finding] = []
    for hs in ctx.state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        lost = [
            f"{sec.kind} {sec.subject or '-'}"
            for sec in s.sections
            if sec.status == "error" and (sec.detail or "").startswith(UNKNOWN_SCHEMA)
        ]
        if not lost:
            continue
        shown = ", ".join(lost[:_NAMED]) + (
            f" and {len(lost) - _NAMED} more" if len(lost) > _NAMED else ""
        )
        out.append(
            Finding(
                rule=RULE,
                severity="warning",
                subject=hs.name,
                summary=(
                    f"{hs.name}: {len(lost)} section(s) of counters arrive but cannot be "
                    f"decoded ({shown}): those counters are not watched"
                ),
                evidence={"sections": len(lost)},
                next_step=(
                    "fabtop reconnects the host once to start its stream fresh; if this "
                    "stays, the host's netdev set is past what one stream holds: watch "
                    "fewer interfaces (interfaces = [...] in the config)"
                ),
                host=hs.name,
            )
        )
    return out
