"""PFC storm rules: pause storms (who pauses whom), heavy but moving pausing, the NIC's watchdog.

A PFC storm is detected in the spirit of SONiC's PFC watchdog (pfcwd): a priority
that stays paused for (nearly) the whole interval while its queue does not move,
held for a detection time and cleared after a quiet restoration time.

Hosts on the fast probe watch their own lossless priorities between frames (every
100 ms on a port with pause activity) and send an event the moment the same condition
holds over one such window: that names the storm at once, without waiting for frames
to add up the detection time (the probe's window is the hold). It clears as any storm
does: once the frames have been quiet for the restoration time.
"""

from __future__ import annotations

from collections.abc import Mapping

from collectors.parsers.pfcwd import WatchdogEvent
from collectors.vocabulary import Metric
from fabtop.core.findings import (
    PAUSED_PEERS,
    STUCK_RECEIVER,
    WATCHDOG_WINDOW_S,
    Evidence,
    Finding,
    PortRef,
)
from fabtop.core.rules.context import (
    LinkTick,
    RuleContext,
    placed_time,
    r3,
    watchdog_storms,
)
from fabtop.core.rules.kinds import window_rule
from fabtop.core.rules.pauses import (
    BYTES_PER_S,
    BYTES_PRIO,
    OTHER_SIDE,
    PAUSE_PER_S,
    PAUSE_RATIO,
    PRIOS,
    PauseEnd,
    flat_limit,
    pausers,
)
from fabtop.core.units import percent, si


def _flat_bytes(lt: LinkTick, direction: str, prio: int) -> tuple[float | None, str]:
    """Bytes/s moving in ``direction`` on ``prio`` (the whole port when not per priority)."""
    v = lt.prio_rate(BYTES_PRIO[direction].per_s, prio)
    if v is not None:
        return v, f"{BYTES_PRIO[direction]}{prio}_per_s"
    return lt.rate(BYTES_PER_S[direction]), BYTES_PER_S[direction]


def _is_flat(ctx: RuleContext, lt: LinkTick, moved: float | None) -> bool:
    if moved is None:
        return True  # no byte counters: the pause ratio alone has to decide
    return moved <= flat_limit(lt, ctx.thresholds)


def _others(ends: list[PauseEnd], skip: PortRef) -> list[PortRef]:
    return [e.port for e in ends if e.port != skip]


class _Pausers:
    """Who pauses hard on each side this tick (:func:`pausers`), found when a storm needs it.

    Only a storm finding names them, and on most ticks nothing storms.
    """

    __slots__ = ("_receivers", "_senders", "_thresholds", "_ticks")

    def __init__(self, ticks: list[LinkTick], thresholds: Mapping[str, float]) -> None:
        self._ticks = ticks
        self._thresholds = thresholds
        self._senders: dict[int, list[PauseEnd]] | None = None
        self._receivers: dict[int, list[PauseEnd]] | None = None

    @property
    def senders(self) -> dict[int, list[PauseEnd]]:
        """Sending pauses: receivers that cannot drain."""
        if self._senders is None:
            self._senders = pausers(self._ticks, "tx", self._thresholds)
        return self._senders

    @property
    def receivers(self) -> dict[int, list[PauseEnd]]:
        """Being paused."""
        if self._receivers is None:
            self._receivers = pausers(self._ticks, "rx", self._thresholds)
        return self._receivers


@window_rule("pfc_storm")
def pfc_storm(ctx: RuleContext) -> list[Finding]:
    """A priority paused for nearly the whole interval while its traffic does not move."""
    remembered = ctx.remembers("pfc_storm")
    ticks = list(ctx.links)
    ends = _Pausers(ticks, ctx.thresholds)
    min_ratio = ctx.th("storm_pause_ratio")
    min_per_s = ctx.th("storm_min_pause_per_s")
    watchdog = watchdog_storms(ctx.state)
    out: list[Finding] = []
    tracks = ctx.memory.tracks
    for lt in ticks:
        active = lt.pausing
        if not active and not watchdog and not remembered:
            continue  # every priority would be passed by below: nothing pauses, nothing to forget
        for p in PRIOS:
            key = ("pfc_storm", lt.prio_subject(p))
            if p not in active and key not in tracks and not watchdog:
                continue  # nothing pauses and nothing to forget: the same as a quiet pass
            wd = _watched(watchdog, lt, p)
            if wd is not None:
                # Named at once: the probe's window was the hold.
                seen, since = _from_watchdog(ctx, lt, p, wd, ends.senders, ends.receivers)
                ctx.report(out, seen, key, since)
                continue
            if lt.dt is None or lt.rates is None:
                continue
            found: Finding | None = None
            level = 0.0
            # The tx side first: a port that sends the pauses is the stuck receiver.
            for side in ("tx", "rx"):
                ratio = lt.prio_rate(PAUSE_RATIO[side], p)
                per_s = lt.prio_rate(PAUSE_PER_S[side], p)
                if ratio is not None:
                    stormy = ratio >= min_ratio
                else:
                    stormy = per_s is not None and per_s >= min_per_s
                if not stormy:
                    continue
                moved, moved_name = _flat_bytes(lt, OTHER_SIDE[side], p)
                if not _is_flat(ctx, lt, moved):
                    continue
                level = ratio if ratio is not None else 1.0
                _, mean = ctx.memory.preview(key, lt.t, lt.dt, level)
                found = _storm_finding(
                    lt,
                    p,
                    side,
                    ratio,
                    per_s,
                    moved,
                    moved_name,
                    mean,
                    ends.senders.get(p, []),
                    ends.receivers.get(p, []),
                )
                break
            ctx.report_debounced(out, found, key, lt.t, lt.dt, level=level)
    return out


def _watched(
    watchdog: Mapping[tuple[str, str, int, str], WatchdogEvent], lt: LinkTick, p: int
) -> WatchdogEvent | None:
    if not watchdog or lt.link.netdev is None:
        return None
    # The tx side first, as below: a port that sends the pauses is the stuck receiver.
    return watchdog.get((lt.host, lt.link.netdev, p, "tx")) or watchdog.get(
        (lt.host, lt.link.netdev, p, "rx")
    )


def _from_watchdog(
    ctx: RuleContext,
    lt: LinkTick,
    p: int,
    wd: WatchdogEvent,
    senders: dict[int, list[PauseEnd]],
    receivers: dict[int, list[PauseEnd]],
) -> tuple[Finding, float]:
    """The storm the probe's watchdog saw, and when its window began."""
    hs = ctx.state.hosts[lt.host]
    t = lt.t
    if hs.sample is not None:
        t = placed_time(wd.clock_ns / 1e9, hs.sample, hs.rates)
    moved_name = f"{BYTES_PRIO[OTHER_SIDE[wd.side]]}{p}_per_s"
    found = _storm_finding(
        lt,
        p,
        wd.side,
        wd.ratio,
        None,
        wd.moved_bytes_per_s,
        moved_name,
        wd.ratio,
        senders.get(p, []),
        receivers.get(p, []),
    )
    found.evidence[WATCHDOG_WINDOW_S] = round(wd.window_s, 3)
    return found, t - wd.window_s


def _storm_finding(
    lt: LinkTick,
    p: int,
    side: str,
    ratio: float | None,
    per_s: float | None,
    moved: float | None,
    moved_name: str,
    mean: float,
    senders: list[PauseEnd],
    receivers: list[PauseEnd],
) -> Finding:
    # One wording for the whole episode, whichever path saw it (the probe's 100 ms
    # watchdog, then the frames): how long it lasts is the finding's own "for N s".
    how = (
        f"paused {percent(mean)} of the time"
        if ratio is not None
        else f"{si(per_s)} pause frames/s"
    )
    me = lt.ref
    evidence: dict[str, Evidence] = {
        PAUSE_RATIO[side]: r3(ratio),
        PAUSE_PER_S[side]: r3(per_s),
        moved_name: r3(moved),
    }
    if side == "tx":
        peers = _others(receivers, me)
        evidence[STUCK_RECEIVER] = me
        evidence[PAUSED_PEERS] = tuple(peers) or None
        verb = how.replace("paused", "sent pauses", 1) if ratio is not None else how
        summary = (
            f"{lt.label} prio {p}: PFC storm: {verb} while its rx is flat "
            f"(this host is the stuck receiver"
            + (f"; it pauses {', '.join(x.label for x in peers[:3])}" if peers else "")
            + ")"
        )
        next_step = (
            f"on {lt.host}: ethtool -S {lt.name} | grep -E 'prio{p}_(pause|discard|bytes)'; "
            f"mlnx_qos -i {lt.name}; find why it does not drain (hung consumer, PCIe, rx buffer) "
            "and check the switch's PFC watchdog on the port facing it"
        )
    else:
        stuck = _others(senders, me)
        evidence[STUCK_RECEIVER] = stuck[0] if stuck else None
        evidence[PAUSED_PEERS] = (me,)
        who = f"stuck receiver: {stuck[0].label}" if stuck else "stuck receiver beyond the switch"
        summary = f"{lt.label} prio {p}: PFC storm: {how} while tx is flat ({who})"
        next_step = (
            f"ethtool -S {lt.name} | grep prio{p}_pause; "
            + (f"look at {stuck[0].label} (it sends the pauses); " if stuck else "")
            + "check the switch's PFC watchdog / the receiver on the far end"
        )
    return Finding(
        rule="pfc_storm",
        severity="critical",
        subject=lt.prio_subject(p),
        summary=summary,
        evidence=evidence,
        next_step=next_step,
        host=lt.host,
        port=me,
        priority=p,
    )


@window_rule("pfc_pressure")
def pfc_pressure(ctx: RuleContext) -> list[Finding]:
    """Heavy but moving PFC pausing (incast): information, not a fault."""
    remembered = ctx.remembers("pfc_pressure")
    out: list[Finding] = []
    lo, hi = ctx.th("pressure_pause_ratio"), ctx.th("storm_pause_ratio")
    tracks = ctx.memory.tracks
    for lt in ctx.links:
        if lt.dt is None or lt.rates is None:
            continue
        active = lt.pausing
        if not active and not remembered:
            continue  # as below, for every priority at once
        for p in PRIOS:
            key = ("pfc_pressure", lt.prio_subject(p))
            if p not in active and key not in tracks:
                continue  # as above: a priority that does not pause is never pressure
            found = None
            worst = 0.0
            for side in ("tx", "rx"):
                ratio = lt.prio_rate(PAUSE_RATIO[side], p)
                moved, _ = _flat_bytes(lt, OTHER_SIDE[side], p)
                # Paused and not moving is a (beginning) storm or its victim, not pressure.
                if ratio is not None and moved is not None and not _is_flat(ctx, lt, moved):
                    worst = max(worst, ratio)
            if lo <= worst < hi:
                _, mean = ctx.memory.preview(key, lt.t, lt.dt, worst)
                found = Finding(
                    rule="pfc_pressure",
                    severity="info",
                    subject=lt.prio_subject(p),
                    summary=(
                        f"{lt.label} prio {p}: paused {percent(mean)} of the time "
                        "while traffic still flows (congestion, e.g. incast)"
                    ),
                    evidence={
                        PAUSE_RATIO["rx"]: r3(lt.prio_rate(PAUSE_RATIO["rx"], p)),
                        PAUSE_RATIO["tx"]: r3(lt.prio_rate(PAUSE_RATIO["tx"], p)),
                        BYTES_PER_S["tx"]: r3(lt.rate(BYTES_PER_S["tx"])),
                        BYTES_PER_S["rx"]: r3(lt.rate(BYTES_PER_S["rx"])),
                        Metric.ECN_MARKED.per_s: r3(lt.rate(Metric.ECN_MARKED.per_s)),
                    },
                    next_step="watch that ECN marks/CNPs rise with it (DCQCN working)",
                    host=lt.host,
                    port=lt.ref,
                    priority=p,
                )
            ctx.report_debounced(out, found, key, lt.t, lt.dt, level=worst)
    return out


@window_rule("pfc_stall", window=())
def pfc_stall_events(ctx: RuleContext) -> list[Finding]:
    """mlx5's own stall watchdog fired (tx_pause_storm_warning/error_events rising)."""
    remembered = ctx.remembers("pfc_stall")
    out: list[Finding] = []
    hold = ctx.th("event_hold_s")
    warn_m, err_m = Metric.TX_PAUSE_STORM_WARNING_EVENTS, Metric.TX_PAUSE_STORM_ERROR_EVENTS
    warn_name, err_name = warn_m.per_s, err_m.per_s
    for lt in ctx.links:
        if lt.dt is None:
            continue
        warn = lt.rate(warn_name) or 0.0
        err = lt.rate(err_name) or 0.0
        fired = warn > 0 or err > 0
        if not fired and not remembered:
            continue  # nothing fired and no episode to carry on
        key = ("pfc_stall", lt.subject)
        found = None
        if fired:
            total = ctx.memory.total(key, lt.t, (warn + err) * lt.dt)
            critical = err > 0
            what = (
                "the NIC's stall watchdog hit its critical mark: it stopped sending pauses "
                "(flow control off on this port)"
                if critical
                else "the NIC's stall watchdog saw it sending pauses past its warning mark "
                "(its receive side is stalled)"
            )
            found = Finding(
                rule="pfc_stall",
                severity="critical" if critical else "warning",
                subject=lt.subject,
                summary=f"{lt.label}: {what} ({total:.0f} event(s))",
                evidence={
                    warn_m: _metric(lt, warn_m),
                    err_m: _metric(lt, err_m),
                    "warning_events_per_s": r3(warn),
                    "error_events_per_s": r3(err),
                },
                next_step=(
                    f"ethtool -S {lt.name} | grep -E 'pause_storm|prio._pause'; "
                    f"ethtool --show-pause {lt.name}; this host is not draining its receive "
                    "queue: look for a hung consumer, PCIe or host memory pressure (pfc_storm "
                    "findings name who it pauses)"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report_debounced(out, found, key, lt.t, lt.dt, 0.0, hold, warn + err)
    return out


def _metric(lt: LinkTick, name: Metric) -> int | None:
    v = lt.link.metrics.get(name)
    return v if isinstance(v, int) else None
