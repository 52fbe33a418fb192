"""The fabric as fabtop currently knows it: one place the TUI, doctor, snapshot and export read.

Frames come in (from any transport, a recording or the demo), go through the
pipeline (assemble -> rate engine -> history), then the rules, and the result is kept here.
Nothing in this module does I/O.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from collectors.frames import Frame
from collectors.guard import Guard
from collectors.host_states import CONNECTING as CONNECTING
from collectors.host_states import DOWN as DOWN
from collectors.host_states import FAILING as FAILING
from collectors.host_states import STALE as STALE
from collectors.host_states import STALE_AFTER_INTERVALS as STALE_AFTER_INTERVALS
from collectors.host_states import UP as UP
from collectors.parsers.pfcwd import WatchdogEvent, parse_pfcwd
from collectors.samples import HostSample, InferenceSample, SectionStatus
from collectors.text import clean
from fabtop.core.ber import BerNow
from fabtop.core.cpu import cpu_time
from fabtop.core.finding_log import FindingLog
from fabtop.core.findings import Finding
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS
from fabtop.core.gap import Gap
from fabtop.core.history import History
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates
from fabtop.core.rules.context import LINK_UP_STATES as LINK_UP_STATES  # for the views
from fabtop.core.rules.context import host_time
from fabtop.core.rules.context import link_up as link_up  # for the views and the exporter
from fabtop.core.thresholds import effective

# Host states: collectors/host_states.py (imported above for the views too). The order a
# user should worry about them:
STATUSES = (DOWN, FAILING, STALE, CONNECTING, UP)
# Blind is not healthy (DESIGN §10): each of these raises a finding on its host.
NOT_REPORTING = frozenset({DOWN, FAILING, STALE})
# A storm the fast probe's watchdog reported counts this many intervals after its last
# word (the probe repeats a holding storm once per interval, and says when it clears).
WATCHDOG_HOLD_INTERVALS = 2.5
# fabtop's own finding when its event loop fell behind (DESIGN §10: never the hosts').
OWN_LAG_RULE = "fabtop_behind"


class OwnLag(Protocol):
    """fabtop's own event loop's stalls (collectors.lag.LoopLag; a replay's, from its
    recording): what the state reads to tell its own lateness from a host's silence."""

    @property
    def clock(self) -> Callable[[], float]: ...
    def stalled(self, since: float, until: float | None = None) -> float: ...
    def worst_since(self, since: float) -> float: ...


# Section kinds remembered per host as not read (a tool missing, failing): bounded, as
# the kinds are the node's words.
MAX_SECTION_NOTES = 64
# A host over its frame budget has at most 1 frame in this many read (10 min at 1 Hz):
# past it, the frames it still sends say more than waiting longer would.
_MAX_READ_EVERY = 600


@dataclass(slots=True)
class HostState:
    """The latest of one host: its sample, rates, connection state and recent warnings."""

    name: str
    target: str
    status: str = CONNECTING
    error: str | None = None
    last_frame_mono: float | None = None  # local monotonic time the last frame arrived
    rtt_s: float | None = None
    sample: HostSample | None = None
    rates: HostRates | None = None
    frames: int = 0  # frames used (a frame that failed is not counted)
    warnings: deque[str] = field(default_factory=lambda: deque(maxlen=50))
    failure: str | None = None  # why the last frame could not be used; None once one was
    # Sections the probe said it could not read, by kind: "missing (no nvidia-smi, ...)",
    # "error (rc=1)". Slow sections come once a minute, so this remembers them between.
    unread: dict[str, str] = field(default_factory=dict)
    # The carried sections' statuses last noted (HostSample.carried_sections): the same
    # list again says nothing new.
    noted_carried: list[SectionStatus] | None = field(default=None, repr=False)
    # Lines added to ``warnings`` so far, and the sample warnings last added at which
    # count: the same lines again, nothing added since, are all there still.
    added: int = 0
    last_added: tuple[int, list[str]] | None = field(default=None, repr=False)
    # When the status last became UP: a host that reconnects is not stale for the outage
    # before its first new frame (the runner says "up" just before handing that frame).
    up_since: float | None = None
    # fabtop's own stalls, on the state's clock (FabricState.attach_lag): the time fabtop
    # was behind is not this host's silence.
    lag: OwnLag | None = field(default=None, repr=False)
    # A frame that took longer than the frame_budget_s threshold to read: its host's next
    # frames are skipped (their slow sections kept), 1 read in ``read_every`` (1: all).
    read_every: int = 1
    skip: int = 0  # frames still to skip before the next one is read
    # What the host's own exporter said is not monitored on it (fabtop --from-prometheus:
    # the shard's fabtop_coverage_gap): its word wins over a recomputation from the sample
    # rebuilt here, which lacks what the shard saw. None: recompute (coverage.gaps_of).
    said_gaps: tuple[Gap, ...] | None = None
    # Its links' pre-FEC BER as its exporter measured it (read back): the windows are the
    # shard's, over its own reads (fabtop.core.rules.link_ber answers it first).
    said_ber: dict[str, BerNow] = field(default_factory=dict)

    @property
    def connected(self) -> bool:
        """True while frames arrive, usable or not."""
        return self.status in (UP, FAILING)

    def age_s(self, now: float | None = None) -> float | None:
        """Seconds since the last frame arrived (None before the first)."""
        if self.last_frame_mono is None:
            return None
        return (now if now is not None else time.monotonic()) - self.last_frame_mono

    def note_sections(self, sample: HostSample) -> None:
        """Remember which of this frame's sections were read, and why others were not."""
        unread = self.unread
        secs = sample.sections
        carried = sample.carried_sections
        if carried is not None and carried is self.noted_carried:
            secs = secs[: len(secs) - len(carried)]
        self.noted_carried = carried
        for sec in secs:
            if sec.status == "ok":
                if unread:  # nearly always empty: no pop per section per frame
                    unread.pop(sec.kind, None)
            else:
                if sec.kind not in unread and len(unread) >= MAX_SECTION_NOTES:
                    del unread[next(iter(unread))]  # forget the oldest note, never refuse
                detail = f" ({sec.detail})" if sec.detail else ""
                unread[sec.kind] = clean(f"{sec.status}{detail}", 200)


def effective_status(hs: HostState, now: float, interval: float) -> str:
    """The host's status, downgraded to stale when its last frame is too old.

    Too old: STALE_AFTER_INTERVALS, the runner's limit, so a frozen host is stale (and a
    finding) even when no status message comes (a replay, a Prometheus source).

    ``now``: the state's clock (the one ``HostState.last_frame_mono`` is on: monotonic
    live, the recording's time in a replay); ``interval``: the probe's interval.
    """
    a = hs.age_s(now)
    if a is not None and hs.up_since is not None:
        a = min(a, now - hs.up_since)
    limit = STALE_AFTER_INTERVALS * interval
    # A frame fabtop did not read while its own loop was behind is not the host's
    # silence (the state's fabtop_behind finding says so instead).
    if (
        hs.status == UP
        and a is not None
        and a > limit
        and (hs.lag is None or a - hs.lag.stalled(now - a, now) > limit)
    ):
        return STALE
    return hs.status


@dataclass(slots=True)
class SourceState:
    """A source the hosts come through (a Prometheus server): did it answer its last poll?"""

    name: str  # as people read it: "Prometheus at http://prom:9090"
    answered: bool = False  # answered at least once
    error: str | None = None  # why the last poll failed; None when it answered
    check: str = ""  # the command that checks it by hand
    # What the last answer held that could not be used (results of an odd shape, more
    # hosts than a source holds): the answer was used, less that; None when all was.
    warning: str | None = None

    @property
    def up(self) -> bool:
        """The last poll was answered."""
        return self.answered and self.error is None


_TARGET = re.compile(
    r"(?P<user>[^@\s]+@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\s]+))(?::(?P<port>\d{1,5}))?"
)


def ssh_command(target: str, command: str) -> str:
    """The ssh line an operator can paste to check ``target`` (``user@host:port``), quoted.

    ssh takes no ``host:port``; the port is ``-p``. A target fabtop cannot split is
    quoted whole.
    """
    m = _TARGET.fullmatch(target)
    if m is None:
        return f"ssh {shlex.quote(target)} {command}"
    dest = (m["user"] or "") + (m["v6"] or m["host"])
    port = f"-p {m['port']} " if m["port"] else ""
    return f"ssh {port}{shlex.quote(dest)} {command}"


def _own_detail(hs: HostState) -> str:
    """The host's error without the host's name it usually starts with (the finding names it)."""
    text = hs.error or hs.status
    for lead in (f"{hs.name} ({hs.target}): ", f"{hs.name}: "):
        if text.startswith(lead):
            return text[len(lead) :]
    return text


RuleHook = Callable[["FabricState"], list[Finding]]


class HostRef(Protocol):
    """What the state needs of a configured host (``fabtop.config.HostConfig`` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def target(self) -> str: ...


class FabricState:
    """All hosts, their history and the current findings."""

    def __init__(
        self,
        hosts: Iterable[HostRef],
        history: History | None = None,
        rules: RuleHook | None = None,
        clock: Callable[[], float] = time.monotonic,
        thresholds: Mapping[str, float] | None = None,
        wall: Callable[[], float] = time.time,
        interval: float = 1.0,
        cost_clock: Callable[[], float] = cpu_time,
    ) -> None:
        self.hosts: dict[str, HostState] = {h.name: HostState(h.name, h.target) for h in hosts}
        # The thresholds the rules fire at are the ones the views colour by (and the rate
        # engine believes deltas by).
        rule_thresholds = getattr(rules, "thresholds", None)
        self.thresholds: Mapping[str, float] = effective(
            {**(rule_thresholds or {}), **(thresholds or {})}
        )
        self.pipeline = Pipeline(history, self.thresholds)
        # The ports the firewall rule asks about are the ones the host detail shows.
        self.firewall_ports: tuple[tuple[int, int], ...] = getattr(
            rules, "firewall_ports", DEFAULT_FIREWALL_PORTS
        )
        self.findings: list[Finding] = []
        self.baseline: dict[str, HostSample] = {}  # the 'r' key's diff baseline
        self.evaluate_per_frame = True  # a Session turns this off and evaluates once per tick
        self._rules = rules
        self._clock = clock
        # The operator's wall clock: what a live source stamps each frame's arrival with.
        self.wall = wall
        # The probe's interval: how old a last frame may get before its host is stale.
        # A Session sets it from its config.
        self.interval = interval
        # What a frame costs to read: this thread's CPU seconds (another process's load
        # on the machine does not make a host's frames look dear).
        self._cost_clock = cost_clock
        self.finding_log = FindingLog()
        self.sources: dict[str, SourceState] = {}
        # Each host's status as the last evaluation saw it (refresh_liveness compares).
        self._liveness: dict[str, str] = {}
        self._evaluated_at = float("-inf")  # the state's clock at the last evaluation
        # The fast probe's PFC watchdog: storms it says hold now, by (host, netdev, prio,
        # side), with the state's clock when the event came (see apply_event).
        self._watchdog: dict[tuple[str, str, int, str], tuple[WatchdogEvent, float]] = {}
        # fabtop's own event loop: its stalls excuse the hosts' silence (attach_lag).
        self.lag: OwnLag | None = None
        self._behind = False  # the last evaluation raised fabtop_behind

    def attach_lag(self, lag: OwnLag) -> bool:
        """Read fabtop's own stalls from ``lag`` (a Session's, a replay's); True when used.

        Only a measurement on this state's own clock is used: a stall measured on the
        loop's clock says nothing about a state that runs on a recording's or a test's.
        """
        if lag.clock != self._clock:
            return False
        self.lag = lag
        for hs in self.hosts.values():
            hs.lag = lag
        return True

    def now(self) -> float:
        """The state's clock: the one host ages are measured with (monotonic live, the
        recording's time in a replay); what ``effective_status`` and ``coverage`` take."""
        return self._clock()

    @property
    def rules(self) -> RuleHook | None:
        """The health rules this state is evaluated with (a snapshot asks them to judge)."""
        return self._rules

    @rules.setter
    def rules(self, rules: RuleHook | None) -> None:
        # A source of findings made elsewhere (the shards' own, read back through
        # Prometheus) replaces the rules; the next evaluation uses it.
        self._rules = rules

    @property
    def history(self) -> History:
        """Every host's history tiers."""
        return self.pipeline.history

    def add_host(self, host: HostRef, target: str | None = None) -> HostState:
        """Start tracking a host found while running (a Prometheus source's new instance)."""
        hs = self.hosts.get(host.name)
        if hs is None:
            hs = self.hosts[host.name] = HostState(host.name, target or host.target)
            hs.lag = self.lag
        return hs

    def remove_host(self, name: str) -> None:
        """Forget one host for good (see :meth:`remove_hosts`, which takes many at once)."""
        self.remove_hosts((name,))

    def remove_hosts(self, names: Collection[str]) -> None:
        """Forget hosts for good (a Prometheus instance gone): their state, findings and
        history go; the next evaluation clears their findings. Unknown names are ignored."""
        gone = {n for n in names if n in self.hosts}
        if not gone:
            return
        for name in gone:
            del self.hosts[name]
            self.baseline.pop(name, None)
            self._liveness.pop(name, None)
        for key in [k for k in self._watchdog if k[0] in gone]:
            del self._watchdog[key]
        self.pipeline.forget(gone)

    def apply_frame(
        self, host: str, frame: Frame, arrived_unix: float | None = None
    ) -> HostSample | None:
        """Run one frame through the pipeline (assemble -> rates -> history), then the rules.

        ``arrived_unix``: the operator's wall clock when the frame arrived (a live session
        passes ``self.wall()``); None (a test fabric fed by hand) gives no clock estimate.
        A frame that cannot be used marks its host FAILING with the error; nothing raises.
        """
        if host not in self.hosts:
            return None
        if frame.event:
            self.apply_event(host, frame)
            return None
        hs = self.hosts[host]
        if hs.skip > 0:
            self._skipped(hs, frame)
            return None
        guard = Guard(f"{host}: frame dropped")
        start = self._cost_clock()
        cost: float | None = None
        with guard:
            sample, rates = self.pipeline.apply_frame(host, frame, arrived_unix=arrived_unix)
            cost = self._cost_clock() - start  # the rules' pass (every host's) not counted
            self._budget(hs, cost)
            self._took(host, sample, rates)
            return sample
        if cost is None:  # a frame that failed cost its time too
            self._budget(hs, self._cost_clock() - start)
        self._failed(host, guard.error or guard.where)
        return None

    def _budget(self, hs: HostState, cost: float) -> None:
        """One host's frame must not hold the loop every host shares (DESIGN §10): one that
        cost more than ``frame_budget_s`` makes its host's frames read 1 in N, N its cost
        over the budget, until one reads within it; said on the host both times."""
        budget = max(self.thresholds["frame_budget_s"], 1e-3)
        if cost > budget:
            hs.read_every = min(_MAX_READ_EVERY, math.ceil(cost / budget))
            hs.skip = hs.read_every - 1
            self.warn(
                hs.name,
                f"{hs.name}: frame took {cost:.2f} s to read, over the "
                f"{budget:g} s budget: 1 frame in {hs.read_every} read until one "
                "reads within it",
            )
        elif hs.read_every > 1:
            hs.read_every = 1
            self.warn(
                hs.name,
                f"{hs.name}: frame read in {cost:.3f} s, within the {budget:g} "
                "s budget: every frame read again",
            )

    def _skipped(self, hs: HostState, frame: Frame) -> None:
        """A frame skipped while its host is over budget: it came (the host is not
        silent), and its slow sections are kept for the next frame read (the newest of
        each), so nothing but its per-tick values is lost."""
        hs.skip -= 1
        hs.last_frame_mono = self._clock()
        guard = Guard(f"{hs.name}: frame skipped")
        with guard:
            self.pipeline.with_slow_sections(hs.name, frame)
        if guard.error is not None:
            self.warn(hs.name, guard.error)

    def apply_event(self, host: str, frame: Frame) -> None:
        """A watchdog event of the fast probe: the storm rule runs now, not on the next pass.

        A storm the probe said holds counts until the probe says it cleared, or until the
        host has been silent about it for WATCHDOG_HOLD_INTERVALS (the probe repeats a
        holding storm once per interval).
        """
        hs = self.hosts.get(host)
        if hs is None:
            return
        guard = Guard(f"{host}: watchdog event dropped")
        with guard:
            now = self._clock()
            for sec in frame.all("pfcwd"):
                events, warnings = parse_pfcwd(sec.text, sec.read_ns or frame.clock_ns)
                for w in warnings:
                    self.warn(host, f"{host}: pfcwd: {w}")
                for ev in events:
                    key = (host, ev.netdev, ev.prio, ev.side)
                    if ev.storm:
                        self._watchdog[key] = (ev, now)
                    else:
                        self._watchdog.pop(key, None)
            self.evaluate()
        if guard.error is not None:
            self.warn(host, guard.error)

    @property
    def watchdog(self) -> dict[tuple[str, str, int, str], WatchdogEvent]:
        """Storms the hosts' probes say hold now (what the storm rule reads)."""
        limit = WATCHDOG_HOLD_INTERVALS * self.interval + 1.0
        now = self._clock()
        for key in [k for k, (_, t) in self._watchdog.items() if now - t > limit]:
            del self._watchdog[key]
        return {k: ev for k, (ev, _) in self._watchdog.items()}

    def apply_sample(
        self, host: str, sample: HostSample, arrived_unix: float | None = None
    ) -> HostRates | None:
        """An already assembled sample through rates, history and rules (test fabrics)."""
        if host not in self.hosts:
            return None
        guard = Guard(f"{host}: sample dropped")
        with guard:
            rates = self.pipeline.apply_sample(sample, arrived_unix=arrived_unix)
            self._took(host, sample, rates)
            return rates
        self._failed(host, guard.error or guard.where)
        return None

    def _took(self, host: str, sample: HostSample, rates: HostRates) -> None:
        hs = self.hosts[host]
        hs.sample, hs.rates = sample, rates
        hs.frames += 1
        hs.last_frame_mono = self._clock()
        hs.note_sections(sample)
        recovered = hs.failure is not None
        hs.status, hs.error, hs.failure = UP, None, None
        ws = sample.warnings
        last = hs.last_added
        if ws and (last is None or last[0] != hs.added or last[1] != ws):
            # (a carried slow section's warning comes every tick: said once)
            for w in ws:
                self.warn(host, w)
            hs.last_added = (hs.added, list(ws))
        if self.evaluate_per_frame or recovered:
            self.evaluate()

    def _failed(self, host: str, line: str) -> None:
        """A frame arrived and could not be used: the host is FAILING until one can."""
        hs = self.hosts[host]
        changed = (hs.status, hs.error) != (FAILING, line)
        hs.status, hs.error, hs.failure = FAILING, line, line
        self.warn(host, line)
        if changed:
            self.evaluate()

    def warn(self, host: str, line: str) -> None:
        """A one-line warning on ``host`` (the same line again is not repeated)."""
        hs = self.hosts.get(host)
        if hs is not None and line not in hs.warnings:
            hs.warnings.append(line)
            hs.added += 1

    def apply_inference(self, host: str, readings: list[InferenceSample]) -> None:
        """Attach the latest /metrics readings; the next frame's rates use them.

        A reading's warnings (a value dropped as non-finite, a body cut at its cap) join
        the host's, where its detail and doctor show them.
        """
        hs = self.hosts.get(host)
        if hs is not None and hs.sample is not None:
            hs.sample.inference = readings
            for r in readings:
                for w in r.warnings:
                    self.warn(host, clean(f"{r.url}: {w}", 300))

    def apply_status(
        self, host: str, status: str, error: str | None = None, rtt_s: float | None = None
    ) -> None:
        """Record a connection state change reported by the host's runner."""
        hs = self.hosts.get(host)
        if hs is None:
            return
        if status == UP and hs.failure is not None:
            # Connected again, but its frames still cannot be used: that stays said.
            status, error = FAILING, hs.failure
        elif status == DOWN:
            hs.failure = None  # a new connection starts from a clean slate
        if status == hs.status and error == hs.error and rtt_s is None:
            return
        if status == UP and hs.status != UP:
            hs.up_since = self._clock()
        hs.status, hs.error = status, error
        if rtt_s is not None:
            hs.rtt_s = rtt_s
        if error:
            hs.warnings.append(error)
            hs.added += 1
        self.evaluate()

    def evaluate(self) -> None:
        """Re-run the health rules over the current state; hosts not reporting come first.

        The finding log records what was raised and cleared, at :meth:`data_now`.
        """
        found: list[Finding] = []
        if self._rules is not None:
            guard = Guard("a health rule failed")
            with guard:
                found = list(self._rules(self))
            if guard.error is not None:  # a broken rule must not take down the dashboard
                found = [Finding("fabtop", "warning", "fabtop", guard.error)]
        now = self._evaluated_at = self._clock()
        own = self.own_findings(now)
        self._behind = bool(own)
        blind = [*own, *self.source_findings(), *self.host_findings(now)]
        self.findings = sorted([*blind, *found], key=lambda f: -f.rank)
        self._liveness = {n: effective_status(h, now, self.interval) for n, h in self.hosts.items()}
        self.finding_log.update(self.findings, self.data_now())

    def refresh_liveness(self, now: float | None = None) -> bool:
        """Re-evaluate when a host went stale since the last evaluation (no frame, no status).

        The dashboard calls this every tick: a frozen host raises its finding on time even
        when nothing else happens. ``now``: the state's clock (default: its own).
        Returns True when it re-evaluated.
        """
        t = self._clock() if now is None else now
        if self.lag is not None and self._behind != bool(self.own_findings(t)):
            self.evaluate()  # fabtop fell behind, or caught up and its hold ran out
            return True
        for name, hs in self.hosts.items():
            status = effective_status(hs, t, self.interval)
            # A stale host's finding says how long it has been silent: keep that true
            # when nothing else evaluates (every host frozen).
            if status != self._liveness.get(name) or (
                status == STALE and t - self._evaluated_at >= self.interval
            ):
                self.evaluate()
                return True
        return False

    def data_now(self) -> float:
        """Now on the operator's unix axis, as the data says: the newest frame's placed time
        plus the state's clock since it arrived (the wall clock before any frame).

        Read from the data, not the wall, so a replay (and a seek, which re-feeds it) gets
        the same times as the live run, and the demo's calendar stays the demo's.
        """
        clock = self._clock()
        best: float | None = None
        for hs in self.hosts.values():
            if hs.sample is None or hs.last_frame_mono is None:
                continue
            t = host_time(hs.sample, hs.rates) + max(0.0, clock - hs.last_frame_mono)
            if best is None or t > best:
                best = t
        return best if best is not None else self.wall()

    def source_status(self, name: str, error: str | None, check: str = "") -> None:
        """A source's poll answered (``error`` None) or failed; a change re-evaluates."""
        src = self.sources.get(name)
        if src is None:
            src = self.sources[name] = SourceState(name, check=check)
        before = (src.answered, src.error)
        if error is None:
            src.answered = True
        src.error = clean(error, 300) if error is not None else None
        if (src.answered, src.error) != before:
            self.evaluate()

    def source_warning(self, name: str, line: str | None) -> None:
        """What a source's last answer held that could not be used (None: nothing)."""
        src = self.sources.get(name)
        if src is None:
            src = self.sources[name] = SourceState(name)
        line = clean(line, 300) if line is not None else None
        if line != src.warning:
            src.warning = line
            self.evaluate()

    def source_findings(self) -> list[Finding]:
        """A critical finding per source whose last poll failed (no answer is not "0 hosts"),
        a warning per source whose last answer was used less what it could not use."""
        out = []
        for src in self.sources.values():
            if src.error is not None:
                out.append(
                    Finding(
                        "source_unreachable",
                        "critical",
                        src.name,
                        f"{src.name} did not answer: {src.error}",
                        next_step=src.check,
                    )
                )
            elif src.warning is not None:
                out.append(
                    Finding(
                        "source_partial",
                        "warning",
                        src.name,
                        f"{src.name}: {src.warning}",
                        next_step=src.check,
                    )
                )
        return out

    def own_findings(self, now: float | None = None) -> list[Finding]:
        """One finding while fabtop itself is behind by ``self_lag_s`` or more, held
        ``restore_s`` after it caught up: its own lag, never the hosts' "no frame".

        Info, as a condition worth seeing that is no fault of the fabric: a busy operator
        machine does not fail ``doctor``'s launch gate.
        """
        if self.lag is None:
            return []
        t = self._clock() if now is None else now
        limit, hold = self.thresholds["self_lag_s"], self.thresholds["restore_s"]
        worst = self.lag.worst_since(t - hold)
        if worst < limit:
            return []
        return [
            Finding(
                OWN_LAG_RULE,
                "info",
                "fabtop",
                f"fabtop fell behind by {worst:.1f} s: the operator's machine is busy",
                evidence={"behind_s": round(worst, 2), "self_lag_s": limit},
                next_step="uptime; top (what else runs on the machine fabtop runs on); hosts "
                "are not called silent for the time fabtop was behind",
            )
        ]

    def host_findings(self, now: float | None = None) -> list[Finding]:
        """A finding per host that is down, failing (critical) or stale (warning).

        Blind is not healthy. ``now``: the state's clock (default: its own).
        """
        t = self._clock() if now is None else now
        out = []
        for hs in self.hosts.values():
            status = effective_status(hs, t, self.interval)
            if status not in NOT_REPORTING:
                continue
            detail = _own_detail(hs)
            since = None
            if status == STALE:
                age = hs.age_s(t)
                rule, severity = "host_stale", "warning"
                quiet = f"no frame for {age:.0f} s" if age is not None else detail
                summary = f"{hs.name}: {quiet}; its numbers are old"
                step = (
                    f"{ssh_command(hs.target, 'uptime')} (a node under load or a hung tool "
                    "delays the probe)"
                    if hs.target != "local"
                    else ""
                )
                if hs.sample is not None:  # stale since its last frame, on the data's axis
                    since = host_time(hs.sample, hs.rates)
            elif status == FAILING:
                rule, severity = "host_failing", "critical"
                summary = f"{hs.name}: its frames arrive but cannot be used: {detail}"
                step = "fabtop keeps trying every frame; the error names what it choked on"
            else:
                rule, severity = "host_unreachable", "critical"
                summary = f"{hs.name} did not answer: {detail}"
                step = ssh_command(hs.target, "true") if hs.target != "local" else ""
            out.append(
                Finding(rule, severity, hs.name, summary, next_step=step, host=hs.name, since=since)
            )
        return out

    def set_baseline(self) -> None:
        """Remember every host's current counters as the diff baseline (never touches hardware)."""
        self.baseline = {n: h.sample for n, h in self.hosts.items() if h.sample is not None}
