"""What every health rule receives: the fabric, the thresholds, the time and a small memory.

Times are each frame's place on the operator's axis (:mod:`fabtop.core.clock`), the
axis the history and the timeline use: a host whose clock is off stays comparable with
the others, and a finding's ``since`` lines up with the charts.

Rules are pure functions of ``(ctx, ctx.memory)``: everything they remember across
ticks (when a condition was first seen, how long it held, how long it has been quiet)
lives in :class:`RuleMemory`, keyed by rule and subject, never in module globals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from collectors.parsers.pfcwd import WatchdogEvent
from collectors.samples import GpuSample, HostSample, LinkSample, RateValue
from collectors.vocabulary import Metric
from fabtop.core.ber import CableTrack
from fabtop.core.findings import QUIET_S, Finding, PortRef, port_ref
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS
from fabtop.core.history import History
from fabtop.core.rates import HostRates, LinkRates
from fabtop.core.rules.pauses import PAUSE_PER_S, PAUSE_RATIO

# Floating-point slack when comparing accumulated intervals against a detection time:
# two 1.0 s intervals measured on a remote clock add up to 1.9999 as often as to 2.0001.
SLACK_S = 0.05


class HostView(Protocol):
    """The parts of a host's state the rules read (``fabtop.core.state.HostState`` has them)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def sample(self) -> HostSample | None: ...
    @property
    def rates(self) -> HostRates | None: ...


class StateView(Protocol):
    """The parts of the fabric state the rules read (``fabtop.core.state.FabricState`` has them)."""

    @property
    def hosts(self) -> Mapping[str, HostView]: ...
    @property
    def history(self) -> History: ...


# Samples a condition may miss while it is being confirmed without its count starting
# over. A ratio is measured over an interval whose ends are the tools' read times, which
# jitter with load: a receiver pausing 99.5 % of the time read under 0.99 on one tick in
# 8 doctor runs of 6 s, and each such dip restarted the hold. One miss in a detection hold
# is noise; a second is a condition that does not hold. A missed sample's time must be
# made up by held time, so a pattern that misses every other sample is never confirmed
# (hit, miss, hit has held 2 of the 3 s it needs at a 2 s detection), and with a one-sample
# dip a long hold is confirmed one sample late instead of a whole detection time late.
NOISE_SAMPLES = 1


@dataclass(slots=True)
class Track:
    """One condition of one subject across ticks."""

    since: float  # unix time the condition started (start of its first interval)
    last_t: float  # time of the frame that last updated this track
    held_s: float = 0.0  # time the condition has held without a break
    quiet_s: float = 0.0  # time since it last held (only while active)
    active: bool = False  # detection time reached; reported until restored
    missed: int = 0  # samples the condition missed before it was confirmed (NOISE_SAMPLES)
    missed_s: float = 0.0  # the time those samples covered: the hold must make it up
    level_sum: float = 0.0  # sum of level * dt while held, for "99.8 % of the last 2 s"
    level_dt: float = 0.0
    last: Finding | None = None  # the finding as last seen while the condition held

    @property
    def level(self) -> float | None:
        """Mean level over the time the condition held (None when no level was given)."""
        return self.level_sum / self.level_dt if self.level_dt > 0 else None


@dataclass(slots=True)
class RuleMemory:
    """Per-fabric memory of the rules: condition tracks keyed by (rule, subject).

    ``tracks`` is written only by the methods below, which keep the count per rule that
    :meth:`remembers` and ``held`` read.
    """

    tracks: dict[tuple[str, str], Track] = field(default_factory=dict)
    # Tracks per rule name, for reading only. A rule that remembers nothing has nothing to
    # carry on or clear for a subject whose condition does not hold now (RuleContext.report
    # hands nothing to the memory for it): on a healthy fabric that is nearly every subject.
    held: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    # Priorities on which any host received a PFC pause since this memory began
    # (``watch_start``): the lossless-drop rule's evidence about the switch.
    rx_paused: set[int] = field(default_factory=set, init=False, repr=False)
    watch_start: float | None = field(default=None, init=False, repr=False)
    # Per host, the time of the first frame of its unbroken rates: how long a window rule
    # could have watched it (a one-shot judgement says which windows were not covered).
    span_start: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    # Per link (its subject), the cable rules' windows of counter readings (fabtop.core.ber).
    cables: dict[str, CableTrack] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for rule, _ in self.tracks:
            self.held[rule] = self.held.get(rule, 0) + 1

    def remembers(self, rule: str) -> bool:
        """True when ``rule`` has a track for any subject (a condition held or is held)."""
        return rule in self.held

    def _add(self, key: tuple[str, str], tr: Track) -> Track:
        self.tracks[key] = tr
        self.held[key[0]] = self.held.get(key[0], 0) + 1
        return tr

    def _drop(self, key: tuple[str, str]) -> None:
        if self.tracks.pop(key, None) is None:
            return
        left = self.held[key[0]] - 1
        if left:
            self.held[key[0]] = left
        else:
            del self.held[key[0]]

    def debounce(
        self,
        found: Finding | None,
        key: tuple[str, str],
        t: float,
        dt: float,
        detect_s: float,
        restore_s: float,
        level: float | None = None,
    ) -> Finding | None:
        """Report ``found`` once it held ``detect_s``; keep reporting until quiet for ``restore_s``.

        ``found`` is this tick's candidate (None: the condition does not hold now), ``t``
        the time of the host's frame and ``dt`` the interval the rates cover. A
        frame already seen (the state re-evaluates on every host's frame) changes nothing.
        """
        tr = self.tracks.get(key)
        if tr is not None and t <= tr.last_t:
            return self._report(tr, restore_s)
        if found is not None:
            if tr is None:
                tr = self._add(key, Track(since=t - dt, last_t=t))
            tr.last_t = t
            tr.held_s += dt
            tr.quiet_s = 0.0
            if level is not None:
                tr.level_sum += level * dt
                tr.level_dt += dt
            found.since = tr.since
            tr.last = found
            if not tr.active and tr.held_s >= detect_s + tr.missed_s - SLACK_S:
                tr.active = True
            return found if tr.active else None
        if tr is None:
            return None
        if not tr.active:
            tr.missed += 1
            if tr.missed <= NOISE_SAMPLES:
                # One noisy sample does not restart the count (see NOISE_SAMPLES), and
                # the hold must make up its time: it is confirmed one sample later.
                tr.last_t = t
                tr.missed_s += dt
                return None
            # Broken before it was confirmed: the next occurrence starts over.
            self._drop(key)
            return None
        tr.last_t = t
        tr.quiet_s += dt
        if tr.quiet_s >= restore_s - SLACK_S:
            self._drop(key)
            return None
        return self._report(tr, restore_s)

    def mark(self, found: Finding | None, key: tuple[str, str], t: float) -> Finding | None:
        """For state (not rate) conditions: report at once, clear at once, remember ``since``."""
        if found is None:
            self._drop(key)
            return None
        tr = self.tracks.get(key)
        if tr is None:
            tr = self._add(key, Track(since=t, last_t=t, active=True))
        tr.last_t = max(tr.last_t, t)
        tr.last = found
        found.since = tr.since
        return found

    @staticmethod
    def _report(tr: Track, restore_s: float) -> Finding | None:
        if not tr.active or tr.last is None:
            return None
        if tr.quiet_s <= 0:
            return tr.last
        left = max(0.0, restore_s - tr.quiet_s)
        return replace(
            tr.last,
            summary=f"{tr.last.summary} [not seen for {tr.quiet_s:.0f} s; clears in {left:.0f} s]",
            evidence={**tr.last.evidence, QUIET_S: round(tr.quiet_s, 2)},
        )

    def preview(
        self, key: tuple[str, str], t: float, dt: float, level: float
    ) -> tuple[float, float]:
        """(held seconds, mean level) the track would show if the condition holds this tick.

        Lets a rule write "paused 99.8 % of the last 2 s" in the finding it is building.
        """
        tr = self.tracks.get(key)
        if tr is None:
            return dt, level
        if t <= tr.last_t:
            return tr.held_s, tr.level if tr.level is not None else level
        ldt = tr.level_dt + dt
        mean = (tr.level_sum + level * dt) / ldt if ldt > 0 else level
        return tr.held_s + dt, mean

    def total(self, key: tuple[str, str], t: float, amount: float) -> float:
        """Running sum of ``amount`` over the active episode of ``key``, this tick included."""
        tr = self.tracks.get(key)
        if tr is None:
            return amount
        if t <= tr.last_t:
            return tr.level_sum
        return tr.level_sum + amount

    def forget_before(self, t: float) -> None:
        """Drop tracks not updated since ``t`` (their host went away)."""
        for key in [k for k, tr in self.tracks.items() if tr.last_t < t]:
            self._drop(key)
        for subject in [s for s, c in self.cables.items() if c.last_t < t]:
            del self.cables[subject]


@dataclass(slots=True)
class RuleContext:
    """Everything a rule may read: state, thresholds, the time and the rule memory."""

    state: StateView
    thresholds: Mapping[str, float]
    now: float  # newest unix time among the hosts' frames, on the operator's axis
    memory: RuleMemory
    findings: list[Finding] = field(default_factory=list)  # earlier rules' findings this pass
    # Every link of the pass (iter_links), listed once: some twenty rules walk them.
    links: list[LinkTick] = field(default_factory=list)
    # TCP ports the RDMA path needs open ([firewall] ports; the firewall rule).
    firewall_ports: tuple[tuple[int, int], ...] = DEFAULT_FIREWALL_PORTS
    # Made by the first GPU rule of the pass and read by the next (fabtop.core.rules.gpu).
    gpus: list[tuple[str, GpuSample, float, float]] | None = None

    def th(self, name: str) -> float:
        """One threshold (defaults merged with the config's ``[thresholds]``)."""
        return self.thresholds[name]

    def remembers(self, rule: str) -> bool:
        """True when ``rule`` keeps a track for any subject: a rule that remembers nothing
        may pass by, without building anything, a subject whose condition does not hold."""
        return rule in self.memory.held

    # The end of every rule's look at a subject: the finding it built (None: the condition
    # does not hold now) handed over here, and the memory says what is reported. A subject
    # with nothing found and nothing remembered by its rule costs a membership test.

    def report(
        self, out: list[Finding], found: Finding | None, key: tuple[str, str], t: float
    ) -> None:
        """A state condition (:meth:`RuleMemory.mark`): ``found`` goes into ``out`` at once,
        carrying the time ``key`` was first seen; None clears ``key`` at once."""
        if found is None and key[0] not in self.memory.held:
            return  # nothing to report and nothing to clear
        f = self.memory.mark(found, key, t)
        if f is not None:
            out.append(f)

    def report_debounced(
        self,
        out: list[Finding],
        found: Finding | None,
        key: tuple[str, str],
        t: float,
        dt: float,
        detect_s: float | None = None,
        restore_s: float | None = None,
        level: float | None = None,
    ) -> None:
        """A condition that must hold (:meth:`RuleMemory.debounce`): ``found`` goes into
        ``out`` once it held ``detect_s`` (default: the ``detect_s`` threshold), and the
        last one found goes on until it was quiet ``restore_s`` (default: ``restore_s``)."""
        memory = self.memory
        if found is None and key[0] not in memory.held:
            return  # nothing holds and nothing to carry on: debouncing would do nothing
        f = memory.debounce(
            found,
            key,
            t,
            dt,
            self.thresholds["detect_s"] if detect_s is None else detect_s,
            self.thresholds["restore_s"] if restore_s is None else restore_s,
            level,
        )
        if f is not None:
            out.append(f)


# What a link measured on a tick without rates (its first frame, a gap): nothing.
_NOTHING: Mapping[str, RateValue] = MappingProxyType({})
_NO_PRIOS: Mapping[int, float] = MappingProxyType({})
_NO_PAUSES: frozenset[int] = frozenset()
# Pause time and pause frames, both sides: a priority none of them counts did not pause.
_PAUSE_NAMES = (*PAUSE_RATIO.values(), *PAUSE_PER_S.values())


class LinkTick:
    """One link of one host at one frame, with the rates against the previous frame.

    Made once per pass and read by some twenty rules: what they all ask for (the rates
    that count, the port's names, which priorities paused) is worked out once, on first
    use, and kept for the pass. A plain class with slots: one is made per link and pass,
    and a dataclass's generated __init__ with its __post_init__ costs twice as much.
    """

    __slots__ = (
        "_label",
        "_prio_subjects",
        "_ref",
        "dt",
        "host",
        "link",
        "measured",
        "pausing",
        "rates",
        "subject",
        "t",
    )

    host: str
    link: LinkSample
    rates: LinkRates | None
    t: float  # unix time of the frame on the operator's axis
    dt: float | None  # seconds the rates cover; None when there are no rates this tick
    # The rates the rules may read this tick: none across a gap.
    measured: Mapping[str, RateValue]
    # Priorities with any pause time or pause frames this tick (the rest cannot storm).
    # Three rules ask on every link every pass: a plain attribute, not a property.
    pausing: frozenset[int]
    # ``host/link`` as findings name it, and the key of its rules' memory: every rule
    # hands each link it judges to the context under it, every pass.
    subject: str

    def __init__(
        self, host: str, link: LinkSample, rates: LinkRates | None, t: float, dt: float | None
    ) -> None:
        self.host = host
        self.link = link
        self.rates = rates
        self.t = t
        self.dt = dt
        self.subject = f"{host}/{link.id}"
        self._ref: PortRef | None = None
        self._label: str | None = None
        self._prio_subjects: dict[int, str] | None = None
        m = self.measured = _NOTHING if rates is None or rates.gap else rates.rates
        out: list[int] = []
        for name in _PAUSE_NAMES:
            v = m.get(name)
            if isinstance(v, dict):
                for p, x in v.items():
                    if x > 0:
                        out.append(p)
        self.pausing = frozenset(out) if out else _NO_PAUSES

    def __repr__(self) -> str:
        return f"LinkTick(host={self.host!r}, link={self.link.id!r}, t={self.t!r})"

    @property
    def ref(self) -> PortRef:
        """This port as findings name it in their data."""
        ref = self._ref
        if ref is None:
            ref = self._ref = port_ref(self.host, self.link)
        return ref

    @property
    def name(self) -> str:
        """What the operator types in commands: the netdev, else the RDMA device/port."""
        return self.ref.name

    def prio_subject(self, prio: int) -> str:
        """``host/link/prioN``, made when first asked (most links are asked for one or none)."""
        subjects = self._prio_subjects
        if subjects is None:
            subjects = self._prio_subjects = {}
        subject = subjects.get(prio)
        if subject is None:
            subject = subjects[prio] = f"{self.subject}/prio{prio}"
        return subject

    @property
    def label(self) -> str:
        """``host/netdev`` for summaries."""
        label = self._label
        if label is None:
            label = self._label = self.ref.label
        return label

    def rate(self, name: str) -> float | None:
        """A scalar rate (a per-priority one summed), None when not measured this tick."""
        v = self.measured.get(name)
        if isinstance(v, dict):
            return sum(v.values()) if v else None
        return v

    def prio_rates(self, name: str) -> Mapping[int, float]:
        """A per-priority rate as ``{prio: value}`` (empty when absent or not per priority)."""
        v = self.measured.get(name)
        return v if isinstance(v, dict) else _NO_PRIOS

    def prio_rate(self, name: str, prio: int) -> float | None:
        """One priority of a per-priority rate."""
        v = self.measured.get(name)
        return v.get(prio) if isinstance(v, dict) else None

    def prio_rate_of(self, names: tuple[str, ...], prio: int) -> list[float | None]:
        """:meth:`prio_rate` of each of ``names``, in one call."""
        m = self.measured
        out: list[float | None] = []
        for name in names:
            v = m.get(name)
            out.append(v.get(prio) if isinstance(v, dict) else None)
        return out

    @property
    def line_rate_bytes(self) -> float | None:
        """Line rate in bytes per second, when the link reports its speed."""
        g = self.link.rate_gbps
        return g * 1e9 / 8.0 if g else None


def host_time(sample: HostSample, rates: HostRates | None = None) -> float:
    """Unix time of a frame on the operator's axis, where the pipeline placed it.

    ``rates`` are the frame's own (``HostState.rates``); without them (or before the
    pipeline placed the frame) this is the remote clock's time.
    """
    if rates is not None and rates.placed_s is not None:
        return rates.placed_s
    return sample.clock_ns / 1e9


def placed_time(remote_s: float, sample: HostSample, rates: HostRates | None) -> float:
    """Another remote time of the same host (a section's read time) on the operator's axis."""
    return remote_s - (sample.clock_ns / 1e9 - host_time(sample, rates))


def watchdog_storms(state: StateView) -> Mapping[tuple[str, str, int, str], WatchdogEvent]:
    """Storms the hosts' fast probes say hold now, by (host, netdev, prio, side).

    Optional on a state (``FabricState.watchdog``): a hand-fed test fabric or a replay of
    sh-probe frames has no probe watchdog, and then no storm is named this way.
    """
    wd = getattr(state, "watchdog", None)
    return wd if isinstance(wd, Mapping) else {}


def iter_links(state: StateView) -> Iterator[LinkTick]:
    """Every link of every host that has a sample, with its rates."""
    for hs in state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        r = hs.rates
        dt = r.interval_s if r is not None else None
        t = host_time(s, r)
        for lid, link in s.links.items():
            lr = r.links.get(lid) if r is not None else None
            yield LinkTick(hs.name, link, lr, t, dt)


# A link whose state says it carries traffic: a netdev's operstate "up", an RDMA port's
# "ACTIVE" (sysfs "4: ACTIVE", lower-cased by the assembler). One fact for the views,
# the exporter and the rules.
LINK_UP_STATES = frozenset({"up", "active"})


def link_up(state: str | None) -> bool:
    """True when a link's normalized state (``LinkSample.state``) means the link is up."""
    return state is not None and state.lower() in LINK_UP_STATES


def link_down(state: str | None) -> bool:
    """True when the state says the link carries nothing: "down", an IB port's "polling"
    or "disabled", "init"; not when it is unknown (no state, operstate "unknown")."""
    return state is not None and state.lower() != "unknown" and not link_up(state)


def is_rdma_ethernet(link: LinkSample) -> bool:
    """RoCE: an Ethernet port with an RDMA device on it."""
    if link.kind == "roce":
        return True
    return bool(link.rdma_device) and (link.link_layer or "").lower() == "ethernet"


def lossless_prios(link: LinkSample) -> tuple[int, ...] | None:
    """Priorities with PFC enabled on this port (None: unknown).

    From the QoS tool when the host has one; else from mlx5's counter names, which
    exist only for PFC-enabled priorities (en_stats.c, DESIGN.md section 3).
    """
    if link.qos is not None and link.qos.pfc_enabled is not None:
        return link.qos.pfc_enabled
    if link.driver == "mlx5_core":
        pauses = link.metrics.get(Metric.RX_PAUSE)
        if isinstance(pauses, dict):
            return tuple(sorted(pauses))
    return None


def fmt_rate(bytes_per_s: float | None) -> str:
    """Bytes per second as bits per second, for summaries."""
    if bytes_per_s is None:
        return "?"
    bps = bytes_per_s * 8.0
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.1f} {unit}"
    return f"{bps:.0f} b/s"


def r3(v: float | None) -> float | None:
    """Round evidence to something readable."""
    return None if v is None else round(v, 3)
