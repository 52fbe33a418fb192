"""Health rules (DESIGN.md section 7): small functions over the fabric state that return findings.

Every rule is ``rule(ctx: RuleContext) -> list[Finding]``: pure given the context and
its :class:`~fabtop.core.rules.context.RuleMemory` (when a condition was first seen, how long
it held, how long it has been quiet). :func:`evaluate` runs them all after every frame,
every one every pass. For each subject a rule works out the condition, builds its finding
(None: it does not hold now) and hands it to the context (``ctx.report`` for a state
condition, ``ctx.report_debounced`` for one that must hold), which asks the memory what
is reported.

Each rule is declared a *state* or a *window* rule where it is defined
(:mod:`fabtop.core.rules.kinds`): :meth:`Evaluator.once` judges the state rules of a
snapshot at once and names the window rules its span was too short for.

Conditions measured on rates are reported once they held for ``detect_s`` and keep being
reported until they have been quiet for ``restore_s`` (``event_hold_s`` for one-shot
counter events), in the spirit of SONiC's PFC watchdog. At 1 Hz every rule fires within
two ticks of its condition appearing. fabtop never changes anything on a host: a
finding's ``next_step`` is text for the operator.

The thresholds and why each has its value: :mod:`fabtop.core.thresholds`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from fabtop.core.ber import BerNow, ber_now
from fabtop.core.findings import Finding
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS
from fabtop.core.rules import (
    cable,
    clock,
    config,
    decoding,
    ecn,
    firewall,
    gpu,
    hardware,
    inference,
    infiniband,
    lossless,
    macos,
    pfc_config,
    pfc_storm,
    roce_gids,
    thunderbolt,
    traffic,
)
from fabtop.core.rules.context import (
    SLACK_S,
    RuleContext,
    RuleMemory,
    StateView,
    host_time,
    iter_links,
)
from fabtop.core.rules.kinds import HOLDS, STATE, WINDOW, kind_of
from fabtop.core.thresholds import DEFAULT_THRESHOLDS, effective, unknown_thresholds

if TYPE_CHECKING:  # the state imports the rules' context: a type only, never at run time
    from fabtop.core.state import FabricState

Rule = Callable[[RuleContext], list[Finding]]

# Order matters only where a rule reads earlier findings (ctx.findings): the ECN rule
# skips ports in a PFC storm, out-of-sequence right after a link flap is left to the
# flap, and the inference rule pairs a token-rate drop with a fabric finding.
RULES: tuple[Rule, ...] = (
    pfc_storm.pfc_storm,
    pfc_storm.pfc_pressure,
    pfc_storm.pfc_stall_events,
    pfc_config.pause_on_disabled_prio,
    pfc_config.pfc_config_mismatch,
    ecn.congestion_without_ecn,
    config.mtu_mismatch,
    config.roce_mtu_low,
    config.firmware_mismatch,
    hardware.pcie_degraded,
    hardware.nic_temperature,
    hardware.link_flap,
    hardware.module_high_temp,
    cable.cable_errors,
    cable.nic_health,
    cable.optics,
    lossless.lossless_drops,
    traffic.rdma_fallback,
    gpu.gpu_thermal_slowdown,
    gpu.gpu_hot,
    inference.token_drop_with_fabric_event,
    clock.clock_skew,
    infiniband.no_subnet_manager,
    roce_gids.roce_no_ip_gid,
    roce_gids.gid_index_mismatch,
    firewall.firewall_blocks_rdma,
    thunderbolt.tb_link_degraded,
    thunderbolt.tb_link_errors,
    macos.tb_bridge_loop,
    macos.rdma_enabled_no_device,
    macos.rdma_needs_tb5,
    macos.rdma_port_no_ipv4,
    decoding.counters_undecoded,
)


@dataclass(frozen=True, slots=True)
class NotJudged:
    """A window rule a one-shot judgement could not judge: its rates covered too little."""

    rule: str  # the rule name its findings carry
    needs_s: float  # seconds of rates it needs (0: one interval)
    span_s: float  # seconds the hosts' rates covered (the shortest over the hosts)


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a one-shot judgement of a state says (:meth:`Evaluator.once`)."""

    findings: list[Finding]  # worst first
    not_judged: list[NotJudged]
    # Seconds the hosts' rates covered (the shortest over the hosts; None: not measured).
    span_s: float | None


# Tracks not updated for this long belong to hosts that went away.
_FORGET_AFTER_S = 3600.0


class Evaluator:
    """Runs every rule over a state, every pass, with thresholds fixed and one memory per
    state."""

    __slots__ = ("_memory", "firewall_ports", "rules", "thresholds")

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        rules: tuple[Rule, ...] = RULES,
        firewall_ports: tuple[tuple[int, int], ...] = DEFAULT_FIREWALL_PORTS,
    ) -> None:
        self.thresholds: dict[str, float] = effective(thresholds)
        self.rules = rules
        self.firewall_ports = firewall_ports
        self._memory: WeakKeyDictionary[StateView, RuleMemory] = WeakKeyDictionary()

    def memory(self, state: StateView) -> RuleMemory:
        """The rule memory of ``state``, created on first use; it goes when the state goes."""
        mem = self._memory.get(state)
        if mem is None:
            mem = self._memory[state] = RuleMemory()
        return mem

    def __call__(self, state: StateView) -> list[Finding]:
        """All findings for the current state, worst first."""
        memory = self.memory(state)
        # Placed times: one host's clock a day ahead must not age every other host's
        # tracks past _FORGET_AFTER_S.
        times = _note_spans(state, memory.span_start)
        if not times:
            return []
        now = max(times)
        ctx = RuleContext(
            state,
            self.thresholds,
            now,
            memory,
            links=list(iter_links(state)),
            firewall_ports=self.firewall_ports,
        )
        for rule in self.rules:
            _run(rule, ctx)
        memory.forget_before(now - _FORGET_AFTER_S)
        return sorted(ctx.findings, key=_worst_first)

    def once(self, state: StateView, live: Sequence[Finding] = ()) -> Judgement:
        """A one-shot judgement of ``state``, as a snapshot carries it.

        ``live``: the findings of the state's last evaluation (by this evaluator, every
        frame). The state rules run again on what the hosts reported, on a memory of
        their own and without their hold times (``HOLDS``): what they find that ``live``
        lacks is added. The window rules' verdicts are ``live``'s; those whose window the
        hosts' rates did not cover (the shortest span over the hosts that reported) and
        that found nothing are listed as not judged.
        """
        starts = self.memory(state).span_start
        ends = {
            h.name: host_time(h.sample, h.rates)
            for h in state.hosts.values()
            if h.sample is not None
        }
        span = max(0.0, min((t - starts.get(h, t) for h, t in ends.items()), default=0.0))
        found = list(live)
        raised = {(f.rule, f.subject) for f in found}
        if ends:
            thresholds = {**self.thresholds, **dict.fromkeys(HOLDS, 0.0)}
            ctx = RuleContext(
                state,
                thresholds,
                max(ends.values()),
                RuleMemory(),
                links=list(iter_links(state)),
                firewall_ports=self.firewall_ports,
            )
            for rule in self.rules:
                kind = kind_of(rule)
                if kind is not None and kind.kind == STATE:
                    _run(rule, ctx)
            found += [f for f in ctx.findings if (f.rule, f.subject) not in raised]
        said = {f.rule for f in found}
        not_judged: list[NotJudged] = []
        for rule in self.rules:
            kind = kind_of(rule)
            if kind is None or kind.kind != WINDOW:
                continue
            needs = kind.needs_s(self.thresholds)
            if span > 0 and span >= needs - SLACK_S:
                continue  # the rates covered its window: live's verdict is a verdict
            not_judged += [
                NotJudged(name, needs, round(span, 3)) for name in kind.names if name not in said
            ]
        found.sort(key=lambda f: -f.rank)  # live's order within a severity, then the rest
        return Judgement(found, not_judged, round(span, 3))


def _run(rule: Rule, ctx: RuleContext) -> None:
    """One rule's findings, added to the pass's; a rule that fails is a warning finding."""
    try:
        got = rule(ctx)
    except Exception as e:  # one broken rule must not hide the others' findings
        got = []
        ctx.findings.append(
            Finding(
                rule="fabtop",
                severity="warning",
                subject="fabtop",
                summary=f"health rule {rule.__name__} failed: {e!r}",
            )
        )
    ctx.findings.extend(got)


def _worst_first(f: Finding) -> tuple[int, str, str]:
    return (-f.rank, f.subject, f.rule)


def _note_spans(state: StateView, starts: dict[str, float]) -> list[float]:
    """Every reporting host's placed time now; ``starts`` keeps, per host, the time of the
    first frame of its unbroken rates (a frame without rates starts it again)."""
    hosts = state.hosts
    if len(starts) > len(hosts):  # hosts that went away (a Prometheus source's instances)
        for name in [n for n in starts if n not in hosts]:
            del starts[name]
    times = []
    for h in hosts.values():
        s = h.sample
        if s is None:
            continue
        r = h.rates
        t = host_time(s, r)
        times.append(t)
        if r is None or r.interval_s is None or h.name not in starts:
            starts[h.name] = t
    return times


_DEFAULT = Evaluator()


def evaluate(state: StateView) -> list[Finding]:
    """Run every rule with the default thresholds (``Evaluator(config.thresholds)`` for others)."""
    return _DEFAULT(state)


def make_evaluator(
    thresholds: Mapping[str, float] | None = None,
    firewall_ports: tuple[tuple[int, int], ...] = DEFAULT_FIREWALL_PORTS,
) -> Evaluator:
    """An evaluator with the config's ``[thresholds]`` over the defaults (and its
    ``[firewall] ports``)."""
    return Evaluator(thresholds, firewall_ports=firewall_ports)


def link_ber(state: FabricState, host: str, lid: str) -> BerNow | None:
    """A link's pre-FEC BER as the state's cable rules measure it (None: no rules, or the
    link counts no corrections): the one figure the cable panel, snapshot and diff show.
    Read back through Prometheus, its shard's measurement (``HostState.said_ber``): the
    windows are the shard's, over its own reads, which a scrape cannot rebuild."""
    hs = state.hosts.get(host)
    said = hs.said_ber.get(lid) if hs is not None else None
    if said is not None:
        return said
    rules = state.rules
    if not isinstance(rules, Evaluator):
        return None
    track = rules.memory(state).cables.get(f"{host}/{lid}")
    return ber_now(track, rules.thresholds["ber_window_s"])


__all__ = [
    "DEFAULT_THRESHOLDS",
    "RULES",
    "Evaluator",
    "Judgement",
    "NotJudged",
    "Rule",
    "RuleContext",
    "RuleMemory",
    "evaluate",
    "link_ber",
    "make_evaluator",
    "unknown_thresholds",
]
