"""Hardware rules: PCIe link below capability, hot NICs and modules, link flaps."""

from __future__ import annotations

from dataclasses import replace

from collectors.vocabulary import Metric
from fabtop.core.findings import Finding
from fabtop.core.rules.context import LinkTick, RuleContext, link_down, r3
from fabtop.core.rules.kinds import state_rule, window_rule

# Looked up once: an enum member costs a class attribute lookup per read, per link.
_LINK_DOWN_PER_S = Metric.LINK_DOWN_EVENTS.per_s
_MODULE_HIGH_TEMP_PER_S = Metric.MODULE_HIGH_TEMP_EVENTS.per_s


@state_rule("pcie_degraded")
def pcie_degraded(ctx: RuleContext) -> list[Finding]:
    """A NIC whose PCIe link trained narrower or slower than it can."""
    out: list[Finding] = []
    for lt in ctx.links:
        pcie = lt.link.pcie
        found = None
        if pcie is not None and pcie.degraded:
            now = f"x{pcie.width or '?'} at {pcie.speed_gts or '?'} GT/s"
            cap = f"x{pcie.max_width or '?'} at {pcie.max_speed_gts or '?'} GT/s"
            found = Finding(
                rule="pcie_degraded",
                severity="warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: PCIe link runs {now} but the card can do {cap}: "
                    "the NIC cannot reach line rate"
                ),
                evidence={
                    "width": pcie.width,
                    "max_width": pcie.max_width,
                    "speed_gts": pcie.speed_gts,
                    "max_speed_gts": pcie.max_speed_gts,
                },
                next_step=(
                    f"lspci -vv -s $(ethtool -i {lt.name} | awk '/bus-info/{{print $2}}') | "
                    "grep -E 'LnkCap|LnkSta'; reseat the card or check the slot/riser and BIOS"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report(out, found, ("pcie_degraded", lt.subject), lt.t)
    return out


@state_rule("nic_temperature")
def nic_temperature(ctx: RuleContext) -> list[Finding]:
    """NIC (hwmon) temperature at or above the warning / critical threshold."""
    out: list[Finding] = []
    warn, crit = ctx.th("nic_temp_warn_c"), ctx.th("nic_temp_crit_c")
    for lt in ctx.links:
        temp = lt.link.temperature_c
        found = None
        if temp is not None and temp >= warn:
            critical = temp >= crit
            found = Finding(
                rule="nic_temperature",
                severity="critical" if critical else "warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: NIC at {temp:.0f} °C (warning at {warn:.0f}, critical at "
                    f"{crit:.0f}): check airflow before it throttles or shuts the port down"
                ),
                evidence={"temperature_c": temp, "warn_c": warn, "crit_c": crit},
                next_step=(
                    f"sensors (the {lt.link.driver or 'NIC'} hwmon entry); check the chassis "
                    "fans and the airflow over the NIC and its transceiver"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(out, found, ("nic_temperature", lt.subject), lt.t, lt.dt or 0.0, 0.0)
    return out


@window_rule("link_flap", window=())
def link_flap(ctx: RuleContext) -> list[Finding]:
    """link_down_events / carrier changes rising: the link went down and (maybe) came back."""
    remembered = ctx.remembers("link_flap")
    got: list[Finding] = []
    hold = ctx.th("event_hold_s")
    ports: dict[str, LinkTick] = {}
    for lt in ctx.links:
        if lt.dt is None:
            continue
        per_s = lt.rate(_LINK_DOWN_PER_S) or 0.0
        if not per_s > 0 and not remembered:
            continue  # no event now and none being shown
        ports[lt.subject] = lt
        found = None
        if per_s > 0:
            found = Finding(
                rule="link_flap",
                severity="warning",
                subject=lt.subject,
                summary="",
                next_step=(
                    f"ip -s link show dev {lt.name}; dmesg | grep -i '{lt.name}.*link'; "
                    "check the cable/transceiver (ethtool -m) and the switch port's log"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(got, found, ("link_flap", lt.subject), lt.t, lt.dt, 0.0, hold, per_s)
    out: list[Finding] = []
    for f in got:
        tr = ctx.memory.tracks.get(("link_flap", f.subject))
        if tr is None:
            continue
        # Written from the current state, not the one at the event: "down now" must not
        # outlive the link coming back.
        lt = ports[f.subject]
        events = tr.level_sum
        down_now = link_down(lt.link.state)  # an IB port down reads "polling"
        now = " and is down now" if down_now else ", up again now"
        ago = f"last one {tr.quiet_s:.0f} s ago" if tr.quiet_s > 0 else "just now"
        out.append(
            replace(
                f,
                severity="critical" if down_now else "warning",
                summary=(
                    f"{lt.label}: link went down {events:.0f} time(s) ({ago}){now}; "
                    f"shown for {hold:.0f} s after the last one"
                ),
                evidence={
                    Metric.LINK_DOWN_EVENTS: _int_metric(
                        lt.link.metrics.get(Metric.LINK_DOWN_EVENTS)
                    ),
                    "down_events_seen": round(events),
                    "state": lt.link.state,
                },
            )
        )
    return out


@window_rule("module_high_temp", window=())
def module_high_temp(ctx: RuleContext) -> list[Finding]:
    """mlx5 ``module_high_temp`` events rising: the transceiver overheated."""
    remembered = ctx.remembers("module_high_temp")
    out: list[Finding] = []
    hold = ctx.th("event_hold_s")
    for lt in ctx.links:
        if lt.dt is None:
            continue
        per_s = lt.rate(_MODULE_HIGH_TEMP_PER_S) or 0.0
        if not per_s > 0 and not remembered:
            continue  # as in link_flap
        key = ("module_high_temp", lt.subject)
        found = None
        if per_s > 0:
            found = Finding(
                rule="module_high_temp",
                severity="warning",
                subject=lt.subject,
                summary=f"{lt.label}: the transceiver reported high temperature events",
                evidence={
                    Metric.MODULE_HIGH_TEMP_EVENTS: _int_metric(
                        lt.link.metrics.get(Metric.MODULE_HIGH_TEMP_EVENTS)
                    ),
                    "per_s": r3(per_s),
                },
                next_step=f"ethtool -m {lt.name} (module temperature and thresholds); airflow",
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(out, found, key, lt.t, lt.dt, 0.0, hold, per_s)
    return out


def _int_metric(v: object) -> int | None:
    return v if isinstance(v, int) else None
