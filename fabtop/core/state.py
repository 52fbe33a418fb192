"""The fabric as fabtop currently knows it: one place the TUI, doctor, snapshot and export read.

Frames come in (from any transport, a recording or the demo), go through the
pipeline (assemble -> rate engine -> history), then the rules, and the result is kept here.
Nothing in this module does I/O.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from collectors.frames import Frame
from collectors.guard import Guard
from collectors.samples import HostSample, InferenceSample
from fabtop.core.findings import Finding
from fabtop.core.history import History
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates
from fabtop.core.thresholds import effective

# Host states. FAILING: connected and sending frames that fabtop cannot use (a bad value
# that a parser or the rate engine chokes on); the error says why.
UP, STALE, CONNECTING, DOWN, FAILING = "up", "stale", "connecting", "down", "failing"
# The order a user should worry about them.
STATUSES = (DOWN, FAILING, STALE, CONNECTING, UP)
# Blind is not healthy (DESIGN §10): each of these raises a finding on its host.
NOT_REPORTING = frozenset({DOWN, FAILING})


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

    @property
    def connected(self) -> bool:
        """True while frames arrive, usable or not."""
        return self.status in (UP, FAILING)

    def age_s(self, now: float | None = None) -> float | None:
        """Seconds since the last frame arrived (None before the first)."""
        if self.last_frame_mono is None:
            return None
        return (now if now is not None else time.monotonic()) - self.last_frame_mono


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
    ) -> None:
        self.hosts: dict[str, HostState] = {h.name: HostState(h.name, h.target) for h in hosts}
        self.pipeline = Pipeline(history)
        # The thresholds the rules fire at are the ones the views colour by.
        rule_thresholds = getattr(rules, "thresholds", None)
        self.thresholds: Mapping[str, float] = effective(
            {**(rule_thresholds or {}), **(thresholds or {})}
        )
        self.findings: list[Finding] = []
        self.baseline: dict[str, HostSample] = {}  # the 'r' key's diff baseline
        self.evaluate_per_frame = True  # a Session turns this off and evaluates once per tick
        self._rules = rules
        self._clock = clock
        # The operator's wall clock: what a live source stamps each frame's arrival with.
        self.wall = wall

    @property
    def history(self) -> History:
        """Every host's history tiers."""
        return self.pipeline.history

    def add_host(self, host: HostRef, target: str | None = None) -> HostState:
        """Start tracking a host found while running (a Prometheus source's new instance)."""
        hs = self.hosts.get(host.name)
        if hs is None:
            hs = self.hosts[host.name] = HostState(host.name, target or host.target)
        return hs

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
        guard = Guard(f"{host}: frame dropped")
        with guard:
            sample, rates = self.pipeline.apply_frame(host, frame, arrived_unix=arrived_unix)
            self._took(host, sample, rates)
            return sample
        self._failed(host, guard.error or guard.where)
        return None

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
        recovered = hs.failure is not None
        hs.status, hs.error, hs.failure = UP, None, None
        for w in sample.warnings:
            self.warn(host, w)
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

    def apply_inference(self, host: str, readings: list[InferenceSample]) -> None:
        """Attach the latest /metrics readings; the next frame's rates use them."""
        hs = self.hosts.get(host)
        if hs is not None and hs.sample is not None:
            hs.sample.inference = readings

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
        hs.status, hs.error = status, error
        if rtt_s is not None:
            hs.rtt_s = rtt_s
        if error:
            hs.warnings.append(error)
        self.evaluate()

    def evaluate(self) -> None:
        """Re-run the health rules over the current state; hosts not reporting come first."""
        found: list[Finding] = []
        if self._rules is not None:
            guard = Guard("a health rule failed")
            with guard:
                found = list(self._rules(self))
            if guard.error is not None:  # a broken rule must not take down the dashboard
                found = [Finding("fabtop", "warning", "fabtop", guard.error)]
        self.findings = sorted([*self.host_findings(), *found], key=lambda f: -f.rank)

    def host_findings(self) -> list[Finding]:
        """One critical finding per host that is down or failing: blind is not healthy."""
        out = []
        for hs in self.hosts.values():
            if hs.status not in NOT_REPORTING:
                continue
            detail = (hs.error or hs.status).removeprefix(f"{hs.name}: ")
            if hs.status == FAILING:
                rule = "host_failing"
                summary = f"{hs.name}: its frames arrive but cannot be used: {detail}"
                step = "fabtop keeps trying every frame; the error names what it choked on"
            else:
                rule = "host_unreachable"
                summary = f"{hs.name} did not answer: {detail}"
                step = f"ssh {hs.target} true" if hs.target != "local" else ""
            out.append(Finding(rule, "critical", hs.name, summary, next_step=step,
                               host=hs.name))
        return out

    def set_baseline(self) -> None:
        """Remember every host's current counters as the diff baseline (never touches hardware)."""
        self.baseline = {n: h.sample for n, h in self.hosts.items() if h.sample is not None}
