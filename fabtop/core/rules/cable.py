"""Cable rules (issue 33): a cable or optic saying it is failing before the link flaps.

- ``cable_ber``: the pre-FEC BER (fabtop.core.ber) over ``ber_window_s`` up by
  ``ber_rise_factor`` (a decade) on the link's own baseline up to ``ber_trend_s`` ago, or
  over ``ber_warn_ratio``. A constant BER, however many bits it corrects, is no rise.
- ``ber_after_flap``: the link came back from a flap with a BER ``ber_flap_factor`` x its
  BER before the flap (SONiC's pre-FEC BER guard after a link flap).
- ``fec_uncorrectable``: any block the FEC could not correct.
- ``link_integrity``: InfiniBand symbol errors over ``symbol_errors_per_h`` (NVSentinel),
  any local link integrity error or link error recovery.
- ``nic_health``: a devlink health reporter in state error, or its error or recover
  count moving between two reads.
- ``optic_rx_low`` / ``module_temp_high``: a lane's rx power within ``optic_rx_margin_db``
  of the module's own low alarm, the module within ``module_temp_margin_c`` of its own
  high warning. Only where the module gives the limit (None: no judgement, never a false
  alarm); a dark lane is not judged (a lane the port does not use, or a port that is down:
  the flap's finding, not a second one).
  Optics are read at slow cadence: a condition must hold on two reads (never one sample).
- ``optic_los``: a lane that has light now and that the module flags loss of signal or
  lock (or a tx fault) since the previous read, on a link that is up: the lane dropped out
  between two reads. The flags are latched (collectors.optics.SIGNALS): the first read's
  are of unknown age and not judged; a dark lane is not judged (LOS is what a lane the
  port does not use, or a port that is down, says); a lane ``optic_rx_low`` names carries
  its flags as that finding's evidence, not a second finding.

Windows of counter readings are kept per link in :attr:`RuleMemory.cables`.
"""

from __future__ import annotations

from collections.abc import Iterable

from collectors.optics import (
    RX_LOL,
    RX_LOS,
    RX_POWER_MW,
    SIGNAL_TEXT,
    TEMPERATURE_C,
    LaneOptics,
    ModuleDiag,
    dbm,
)
from collectors.samples import LinkSample
from collectors.vocabulary import Metric
from fabtop.core.ber import (
    FROM_BLOCKS,
    POINTS_PER_WINDOW,
    CableTrack,
    add_reads,
    ber_now,
    ber_text,
    rise,
)
from fabtop.core.finding_log import Episode
from fabtop.core.findings import Evidence, Finding
from fabtop.core.rules.context import LinkTick, RuleContext, link_down, r3
from fabtop.core.rules.kinds import window_rule
from fabtop.core.units import duration

BER, AFTER_FLAP, UNCORRECTABLE, INTEGRITY = (
    "cable_ber",
    "ber_after_flap",
    "fec_uncorrectable",
    "link_integrity",
)
HEALTH, RX_LOW, TEMP_HIGH, LOS = "nic_health", "optic_rx_low", "module_temp_high", "optic_los"

_UNCORRECTABLE_PER_S = Metric.FEC_UNCORRECTABLE_BLOCKS.per_s
_INTEGRITY_PER_S = Metric.LINK_INTEGRITY_ERRORS.per_s
_RECOVERIES_PER_S = Metric.LINK_ERROR_RECOVERIES.per_s
# The counters that make a link one the cable rules watch (InfiniBand ports always are:
# their symbol errors).
_CABLE_COUNTERS = (
    Metric.PHY_CORRECTED_BITS,
    Metric.FEC_CORRECTED_BLOCKS,
    Metric.FEC_UNCORRECTABLE_BLOCKS,
    Metric.LINK_INTEGRITY_ERRORS,
    Metric.LINK_ERROR_RECOVERIES,
)

NEXT_STEP = (
    "ethtool -m {name} (rx power per lane, temperature) and ethtool -I --show-fec {name}, "
    "on both ends of the cable; reseat the module and clean the connector (fibre: inspect "
    "and clean both end faces); if it stays, swap the cable or the optic; then check the "
    "switch port's side (its optics and error counters)"
)


def _track(ctx: RuleContext, lt: LinkTick) -> CableTrack:
    tr = ctx.memory.cables.get(lt.subject)
    if tr is None:
        tr = ctx.memory.cables[lt.subject] = CableTrack(last_t=lt.t)
    return tr


def _observe(ctx: RuleContext, lt: LinkTick, tr: CableTrack) -> None:
    """Add this frame's reads to the link's windows; note a flap and the BER before it."""
    link = lt.link
    win, keep = ctx.th("ber_window_s"), ctx.th("ber_trend_s")
    step = win / POINTS_PER_WINDOW
    down_n = link.metrics.get(Metric.LINK_DOWN_EVENTS)
    down_n = down_n if isinstance(down_n, int) else None
    up = not link_down(link.state)
    flapped = (not up and tr.up) or (
        down_n is not None and tr.down_events is not None and down_n > tr.down_events
    )
    if flapped:
        before = tr.ber.ber(win)
        if before is None and tr.ber.buckets:
            before = tr.ber.ber(tr.ber.span_s())  # a window not yet full: what it covered
        if before is not None:
            tr.ber_before_flap = before
        tr.ber.clear()
        tr.up_since = None
    if up and tr.up_since is None:
        tr.up_since = lt.t
    tr.up, tr.down_events, tr.last_t = up, down_n, lt.t
    add_reads(tr, lt.t, link, lt.rates, up, step, keep)


@window_rule(BER, AFTER_FLAP, UNCORRECTABLE, INTEGRITY, window=("ber_window_s",))
def cable_errors(ctx: RuleContext) -> list[Finding]:
    """The pre-FEC BER's rise, its jump after a flap, uncorrectable blocks, link integrity."""
    out: list[Finding] = []
    cables = ctx.memory.cables
    hold = ctx.th("event_hold_s")
    for lt in ctx.links:
        link = lt.link
        metrics = link.metrics
        # Most links of most fabrics count none of it: passed by in a few lookups.
        if (
            link.link_layer != "InfiniBand"
            and lt.subject not in cables
            and not any(m in metrics for m in _CABLE_COUNTERS)
        ):
            continue
        tr = _track(ctx, lt)
        _observe(ctx, lt, tr)
        if lt.dt is None:
            continue
        ctx.report_debounced(out, _ber_finding(ctx, lt, tr), (BER, lt.subject), lt.t, lt.dt)
        flap = _after_flap(ctx, lt, tr)
        ctx.report_debounced(out, flap, (AFTER_FLAP, lt.subject), lt.t, lt.dt, 0.0, hold)
        unc = lt.rate(_UNCORRECTABLE_PER_S) or 0.0
        found = None
        if unc > ctx.th("fec_uncorrectable_per_s"):
            found = _finding(
                lt,
                UNCORRECTABLE,
                "critical",
                f"the FEC could not correct {unc:.3g} blocks/s: frames are lost to bit errors",
                {
                    Metric.FEC_UNCORRECTABLE_BLOCKS: _int(link, Metric.FEC_UNCORRECTABLE_BLOCKS),
                    "per_s": r3(unc),
                },
            )
        ctx.report_debounced(out, found, (UNCORRECTABLE, lt.subject), lt.t, lt.dt, 0.0, hold)
        found = _integrity(ctx, lt, tr)
        ctx.report_debounced(out, found, (INTEGRITY, lt.subject), lt.t, lt.dt, 0.0, hold)
    return out


def _ber_finding(ctx: RuleContext, lt: LinkTick, tr: CableTrack) -> Finding | None:
    win = ctx.th("ber_window_s")
    got = ber_now(tr, win)
    if got is None or got.ber is None:
        return None
    now, before, per_h = got.ber, got.before, got.decades_per_h
    warn = ctx.th("ber_warn_ratio")
    rising = (
        before is not None
        and now >= ctx.th("ber_floor_ratio")
        and now >= before * ctx.th("ber_rise_factor")
    )
    if not (rising or now >= warn):
        return None
    why = f"over {ber_text(warn)}" if now >= warn else ""
    if rising and before is not None:
        moved = rise(got)  # as it happened: "1.5 decades in 66 s"
        over = "" if moved is None or moved[1] is None else f" in {duration(moved[1])}"
        trend = "" if moved is None else f", {moved[0]:+.1f} decades{over}"
        why = f"up from {ber_text(before)}{trend}" + (f"; {why}" if why else "")
    bound = " (at least: from corrected blocks)" if tr.ber.counted_from == FROM_BLOCKS else ""
    return _finding(
        lt,
        BER,
        "critical" if now >= warn * 10 else "warning",
        f"pre-FEC BER {ber_text(now)}{bound} over the last {win:.0f} s, {why}: "
        "the cable or optic is degrading",
        {
            "ber": now,
            "ber_before": before,
            "decades_per_h": None if per_h is None else round(per_h, 2),
            "ber_warn": warn,
            "window_s": win,
            "ber_counted_from": tr.ber.counted_from,
            "rate_gbps": lt.link.rate_gbps,
        },
    )


def _after_flap(ctx: RuleContext, lt: LinkTick, tr: CableTrack) -> Finding | None:
    before = tr.ber_before_flap
    if before is None or not tr.ber.buckets or not tr.up:
        return None
    span = tr.ber.span_s()
    if span < ctx.th("ber_flap_settle_s") - 0.05:
        return None
    after = tr.ber.ber(span)
    factor = ctx.th("ber_flap_factor")
    if after is None or after < ctx.th("ber_floor_ratio") or after < max(before, 1e-15) * factor:
        return None
    times = "" if before <= 0 else f" ({after / before:.0f}x)"
    return _finding(
        lt,
        AFTER_FLAP,
        "critical",
        f"came back from a flap with pre-FEC BER {ber_text(after)}, worse than "
        f"{ber_text(before)} before it{times}: it retrained onto a damaged path",
        {
            "ber": after,
            "ber_before_flap": before,
            "flap_factor": factor,
            "measured_s": round(span, 1),
            "ber_counted_from": tr.ber.counted_from,
        },
    )


def _integrity(ctx: RuleContext, lt: LinkTick, tr: CableTrack) -> Finding | None:
    integ = lt.rate(_INTEGRITY_PER_S) or 0.0
    recov = lt.rate(_RECOVERIES_PER_S) or 0.0
    limit = ctx.th("symbol_errors_per_h")
    # Symbol errors over the readings kept (up to ber_trend_s), once a window is covered:
    # 120 an hour is 2 a minute, so the longer the look the less a pair of errors counts.
    per_h = None
    if tr.symbols.span_s() >= ctx.th("ber_window_s") - 0.05:
        got = tr.symbols.per_s(tr.symbols.span_s())
        per_h = None if got is None else got * 3600.0
    parts = []
    if per_h is not None and per_h > limit:
        parts.append(f"{per_h:.0f} symbol errors/hour (over {limit:.0f})")
    if integ > 0:
        parts.append("local link integrity errors")
    if recov > 0:
        parts.append("link error recoveries")
    if not parts:
        return None
    return _finding(
        lt,
        INTEGRITY,
        "warning",
        "link integrity errors: " + ", ".join(parts),
        {
            "symbol_errors_per_h": None if per_h is None else round(per_h, 1),
            "symbol_errors_limit_per_h": limit,
            Metric.LINK_INTEGRITY_ERRORS.per_s: r3(integ),
            Metric.LINK_ERROR_RECOVERIES.per_s: r3(recov),
        },
    )


@window_rule(HEALTH, window=())
def nic_health(ctx: RuleContext) -> list[Finding]:
    """A devlink health reporter in error, or recovering errors between two reads."""
    out: list[Finding] = []
    hold = ctx.th("event_hold_s")
    remembered = ctx.remembers(HEALTH)
    for lt in ctx.links:
        reporters = lt.link.health
        if not reporters and not remembered:
            continue
        found = None
        if reporters and lt.dt is not None:
            tr = _track(ctx, lt)
            moved: list[str] = []
            for rep in reporters:
                key = (rep.device, rep.name)
                before = tr.reporters.get(key)
                tr.reporters[key] = (rep.error, rep.recover)
                if before is not None:
                    d_err = _delta(rep.error, before[0])
                    d_rec = _delta(rep.recover, before[1])
                    if d_err or d_rec:
                        moved.append(f"{rep.name}: +{d_err} errors, +{d_rec} recovered")
                if rep.state == "error":
                    moved.append(f"{rep.name}: state error")
            if moved:
                found = _finding(
                    lt,
                    HEALTH,
                    "warning",
                    "NIC health reporter " + "; ".join(moved),
                    {"reporters": "; ".join(moved), "device": reporters[0].device},
                    next_step=(
                        f"devlink health show {reporters[0].device}; dmesg | grep -i "
                        "'health\\|syndrome'; a reporter that keeps recovering is a NIC, "
                        "firmware or cable fault: update firmware, reseat, check airflow"
                    ),
                )
        if lt.dt is not None:
            ctx.report_debounced(out, found, (HEALTH, lt.subject), lt.t, lt.dt, 0.0, hold)
    return out


# The events of a cable (a finding whose episode is the event): the link detail's cable
# panel lists a link's last ones, the timeline marks each.
CABLE_EVENTS = (HEALTH, LOS)


# The evidence that says what happened, per event rule (built by the rules below).
_EVENT_WHAT = {HEALTH: "reporters", LOS: "signals"}


def cable_events(episodes: Iterable[Episode], subject: str, n: int = 3) -> list[Episode]:
    """The last ``n`` health-reporter and lost-signal episodes of one link, newest first."""
    got = [e for e in episodes if e.subject == subject and e.rule in CABLE_EVENTS]
    return sorted(got, key=lambda e: e.raised, reverse=True)[:n]


def event_what(ep: Episode) -> str:
    """What an event was, without its link: "tx: +1 errors, +1 recovered"."""
    what = ep.last_seen.evidence.get(_EVENT_WHAT.get(ep.rule, ""))
    return what if isinstance(what, str) else ep.rule


def _delta(now: int | None, before: int | None) -> int:
    return now - before if now is not None and before is not None and now > before else 0


# A window of two reads (never one sample): a window rule, though its window is reads, not
# seconds of rates; a snapshot says what the live rule found.
@window_rule(RX_LOW, TEMP_HIGH, LOS, window=())
def optics(ctx: RuleContext) -> list[Finding]:
    """A lane's rx power near the module's low alarm; the module near its warning
    temperature; a lit lane that lost its signal since the previous read."""
    out: list[Finding] = []
    reads = 2.0  # the condition held on two reads of the module
    hold = ctx.th("event_hold_s")
    remembered = ctx.remembers(RX_LOW) or ctx.remembers(TEMP_HIGH) or ctx.remembers(LOS)
    cables = ctx.memory.cables
    for lt in ctx.links:
        mod = lt.link.module
        if mod is None:  # not read (this frame, or at all): a read judged before stands
            got = cables.get(lt.subject) if remembered else None
            if got is None:
                continue
            tr = got
        else:
            tr = _track(ctx, lt)
        tr.last_t = max(tr.last_t, lt.t)
        rx = hot = los = None
        since = 0.0  # seconds since the previous read (the latched flags' span)
        if mod is not None and (mod.read_ns is None or mod.read_ns != tr.module_read):
            before = tr.module_t
            tr.module_read, tr.module_t = mod.read_ns, lt.t  # a new read: judge it
            rx, hot = _rx_low(ctx, lt, mod), _temp_high(ctx, lt, mod)
            if before is not None:  # the first read's latched flags are of unknown age
                since = lt.t - before
                los = _los(ctx, lt, mod, since)
        elif tr.module_t is None:
            continue
        # A read carried over frames (or none this frame) goes in at its first frame's time:
        # the memory says what stands, and a condition is counted once per read.
        t = tr.module_t if tr.module_t is not None else lt.t
        ctx.report_debounced(out, rx, (RX_LOW, lt.subject), t, 1.0, reads, 1.0)
        ctx.report_debounced(out, hot, (TEMP_HIGH, lt.subject), t, 1.0, reads, 1.0)
        # An event: named on the read that shows it, on screen for event_hold_s after.
        ctx.report_debounced(out, los, (LOS, lt.subject), t, since, 0.0, hold)
    return out


def rx_alarm_dbm(mod: ModuleDiag) -> float | None:
    """The module's own low rx-power alarm in dBm (None: it gives none: all zero)."""
    limits = mod.limits.get(RX_POWER_MW)
    alarm = None if limits is None else dbm(limits.low_alarm)
    return None if alarm is None or alarm == float("-inf") else alarm


def rx_margins(mod: ModuleDiag) -> list[tuple[int, float | None, float | None]]:
    """Per lane: (lane, rx power in dBm, its margin above the low alarm in dB); the
    power -inf for a dark lane, the margin None where either is not known."""
    alarm = rx_alarm_dbm(mod)
    out: list[tuple[int, float | None, float | None]] = []
    for lane in mod.lanes:
        p = dbm(lane.rx_power_mw)
        margin = None if p is None or alarm is None else p - alarm
        out.append((lane.lane, p, margin))
    return out


def _low_lanes(ctx: RuleContext, mod: ModuleDiag) -> list[tuple[int, float]]:
    """The lit lanes within ``optic_rx_margin_db`` of the module's low alarm: (lane, dBm)."""
    margin = ctx.th("optic_rx_margin_db")
    # A dark lane (no light at all) is not one losing light: on a port that is up it is a
    # lane the port does not use (a breakout's other members, an 8-lane module run as 4);
    # on one that is down, the flap's finding.
    return [
        (lane, p)
        for lane, p, above in rx_margins(mod)
        if p is not None and above is not None and above <= margin and p != float("-inf")
    ]


def _signals_text(lane: LaneOptics, which: tuple[str, ...] | None = None) -> str:
    return ", ".join(SIGNAL_TEXT[s] for s in lane.signals if which is None or s in which)


def _rx_low(ctx: RuleContext, lt: LinkTick, mod: ModuleDiag) -> Finding | None:
    alarm = rx_alarm_dbm(mod)
    if alarm is None:
        return None  # the module gives no limit: no judgement
    if link_down(lt.link.state):
        return None  # a port that is down: the flap's finding, not another
    margin = ctx.th("optic_rx_margin_db")
    found = _low_lanes(ctx, mod)
    if not found:
        return None
    low = [f"lane {lane} {_db(p)} dBm" for lane, p in found]
    worst = min(p for _, p in found)
    # The module's own flags on those lanes (loss of signal, of lock) are this finding's
    # evidence: the same light going out, not a second finding (optic_los skips them).
    by_lane = {ln.lane: ln for ln in mod.lanes}
    flagged = [
        f"lane {lane} {_signals_text(by_lane[lane])}" for lane, _ in found if by_lane[lane].signals
    ]
    kind = " (OMA)" if mod.rx_power_kind == "oma" else ""
    evidence: dict[str, Evidence] = {
        "rx_power_dbm": _db(worst),
        "low_alarm_dbm": round(alarm, 2),
        "margin_db": None if worst == float("-inf") else round(worst - alarm, 2),
        "lanes": "; ".join(low),
        "module": " ".join(x for x in (mod.vendor, mod.part, mod.serial) if x) or None,
    }
    if flagged:
        evidence["signals"] = "; ".join(flagged)
    return _finding(
        lt,
        RX_LOW,
        "critical" if worst <= alarm else "warning",
        f"optic rx power{kind} {', '.join(low)}: within {margin:g} dB of the module's low "
        f"alarm at {alarm:.1f} dBm (the fibre or connector is losing light)",
        evidence,
    )


_RX_SIGNALS = (RX_LOS, RX_LOL)


def _los(ctx: RuleContext, lt: LinkTick, mod: ModuleDiag, since: float) -> Finding | None:
    """Lanes with light now that the module flags lost (signal, lock, tx fault) since the
    previous read, on a link that is up."""
    if link_down(lt.link.state) or not any(ln.signals for ln in mod.lanes):
        return None  # a port that is down flags every lane: the flap's finding
    low = {lane for lane, _ in _low_lanes(ctx, mod)}  # optic_rx_low's, with its evidence
    parts = []
    for ln in mod.lanes:
        if not ln.signals or ln.lane in low:
            continue
        rx_lit = ln.rx_power_mw is not None and ln.rx_power_mw > 0
        tx_lit = (ln.tx_power_mw or 0.0) > 0 or (ln.bias_ma or 0.0) > 0
        rx = [s for s in ln.signals if s in _RX_SIGNALS] if rx_lit else []
        tx = [s for s in ln.signals if s not in _RX_SIGNALS] if tx_lit else []
        if rx or tx:
            parts.append(f"lane {ln.lane} {_signals_text(ln, (*rx, *tx))}")
    if not parts:
        return None  # dark lanes, or no power read to tell a lane in use from one unused
    return _finding(
        lt,
        LOS,
        "warning",
        f"{'; '.join(parts)} since the module's previous read ({since:.0f} s ago) while the "
        "link is up and the lane has light: the lane dropped out between two reads",
        {"signals": "; ".join(parts), "since_read_s": round(since, 1)},
    )


def _temp_high(ctx: RuleContext, lt: LinkTick, mod: ModuleDiag) -> Finding | None:
    limits = mod.limits.get(TEMPERATURE_C)
    warn = None if limits is None else limits.high_warning
    temp = mod.temperature_c
    if warn is None or temp is None:
        return None  # no limit from the module: no judgement
    margin = ctx.th("module_temp_margin_c")
    if temp < warn - margin:
        return None
    alarm = limits.high_alarm if limits is not None else None
    return _finding(
        lt,
        TEMP_HIGH,
        "critical" if alarm is not None and temp >= alarm else "warning",
        f"module at {temp:.0f} °C, within {margin:g} °C of its own warning at {warn:.0f} °C",
        {"temperature_c": temp, "warning_c": warn, "alarm_c": alarm},
        next_step=(
            f"ethtool -m {lt.name}; check the chassis fans and the airflow over the cage "
            "(a blanked or blocked slot beside it); if its neighbours run cool, swap the optic"
        ),
    )


def _db(p: float) -> float | str:
    return "-inf" if p == float("-inf") else round(p, 2)


def _int(link: LinkSample, metric: Metric) -> int | None:
    v = link.metrics.get(metric)
    return v if isinstance(v, int) else None


def _finding(
    lt: LinkTick,
    rule: str,
    severity: str,
    what: str,
    evidence: dict[str, Evidence],
    next_step: str | None = None,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        subject=lt.subject,
        summary=f"{lt.label}: {what}",
        evidence=evidence,
        next_step=NEXT_STEP.format(name=lt.name) if next_step is None else next_step,
        host=lt.host,
        port=lt.ref,
    )
