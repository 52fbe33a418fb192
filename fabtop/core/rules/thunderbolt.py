"""Thunderbolt rules (issue 14): a cable trained below what it can do, errors on its netdev.

What a link "can do" comes from the receptacle where the host's source says it (macOS);
on Linux from the controller generation (:data:`fabtop.core.thunderbolt.GENERATION_FLOOR`:
generation 3 and 4 mean 2 lanes of 20 Gb/s at least; a Thunderbolt 5 router also says
4, so a Thunderbolt 5 pair trained at 20 Gb/s lanes is not named from Linux alone).
Unknown is never healthy: a host without the data gets no finding from these rules, and
the Thunderbolt view says what is unknown.
"""

from __future__ import annotations

from collectors.vocabulary import Metric
from fabtop.core.findings import Finding, port_ref
from fabtop.core.rules.context import RuleContext, host_time, r3
from fabtop.core.rules.kinds import state_rule, window_rule
from fabtop.core.thunderbolt import below_capability, capability, speed_text
from fabtop.core.units import si

_RX_ERRORS_PER_S = Metric.RX_PHY_ERRORS.per_s  # netdev rx_errors (thunderbolt-net sums its
_RX_DROPS_PER_S = Metric.RX_DISCARDS.per_s  # CRC, length, overrun, missed) and rx_dropped


@state_rule("tb_link_degraded")
def tb_link_degraded(ctx: RuleContext) -> list[Finding]:
    """A Thunderbolt cable whose link runs fewer lanes or slower lanes than it can."""
    out: list[Finding] = []
    for name, hv in ctx.state.hosts.items():
        s = hv.sample
        tb = s.thunderbolt if s is not None else None
        if s is None or tb is None:
            continue
        t = host_time(s, hv.rates)
        for p in tb.peers:
            where = p.netdev or p.port or "?"
            subject = f"{name}/{where}"
            link = s.links.get(p.netdev) if p.netdev else None
            ref = port_ref(name, link) if link is not None else None
            why = below_capability(tb, p)
            cap = capability(tb, p)
            found = None
            if why is not None and cap is not None:
                lanes = min(v for v in (p.rx_lanes, p.tx_lanes, cap[1]) if v is not None)
                speed = min(
                    v for v in (p.rx_gbps_per_lane, p.tx_gbps_per_lane, cap[0]) if v is not None
                )
                found = Finding(
                    rule="tb_link_degraded",
                    severity="warning",
                    subject=subject,
                    summary=(
                        f"{subject}: Thunderbolt link to {p.peer_name or p.peer_uid or '?'} "
                        f"runs {speed_text(speed, lanes)}, below what it can do "
                        f"({speed_text(cap[0], cap[1])}, from {cap[2]}): {why}"
                    ),
                    evidence={
                        "port": p.port,
                        "rx_gbps_per_lane": p.rx_gbps_per_lane,
                        "tx_gbps_per_lane": p.tx_gbps_per_lane,
                        "rx_lanes": p.rx_lanes,
                        "tx_lanes": p.tx_lanes,
                        "can_gbps_per_lane": cap[0],
                        "can_lanes": cap[1],
                        "known_from": cap[2],
                        "generation": tb.generation,
                    },
                    next_step=(
                        "reseat the cable at both ends, or replace it with a certified "
                        "Thunderbolt 4/5 (40/80 Gb/s) cable; boltctl list (rx/tx speed); "
                        f"cat /sys/bus/thunderbolt/devices/{p.port or '<xdomain>'}/"
                        "{rx,tx}_{speed,lanes}"
                    ),
                    host=name,
                    port=ref,
                )
            ctx.report(out, found, ("tb_link_degraded", subject), t)
    return out


@window_rule("tb_link_errors")
def tb_link_errors(ctx: RuleContext) -> list[Finding]:
    """Receive errors or drops rising on a thunderbolt-net netdev (over ``detect_s``)."""
    remembered = ctx.remembers("tb_link_errors")
    out: list[Finding] = []
    limit = ctx.th("tb_errors_per_s")
    for lt in ctx.links:
        if lt.link.kind != "tb" or lt.dt is None:
            continue
        errs = lt.rate(_RX_ERRORS_PER_S)
        drops = lt.rate(_RX_DROPS_PER_S)
        per_s = (errs or 0.0) + (drops or 0.0)
        if not per_s > limit and not remembered:
            continue
        found = None
        if per_s > limit:
            found = Finding(
                rule="tb_link_errors",
                severity="warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: {si(per_s)} receive errors/drops per second on the "
                    f"Thunderbolt link (over {limit:g}/s): frames arrive corrupted"
                ),
                evidence={
                    "rx_errors_per_s": r3(errs),
                    "rx_dropped_per_s": r3(drops),
                    Metric.RX_PHY_ERRORS: _int(lt.link.metrics.get(Metric.RX_PHY_ERRORS)),
                    "threshold_per_s": limit,
                },
                next_step=(
                    f"ip -s -s link show dev {lt.name} (crc/length/missed errors); reseat "
                    "or replace the cable with a certified Thunderbolt 4/5 cable; "
                    "boltctl list; dmesg | grep -i thunderbolt"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(out, found, ("tb_link_errors", lt.subject), lt.t, lt.dt, level=per_s)
    return out


def _int(v: object) -> int | None:
    return v if isinstance(v, int) else None
