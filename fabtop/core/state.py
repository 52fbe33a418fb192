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
from collectors.samples import HostSample, InferenceSample
from fabtop.core.findings import Finding
from fabtop.core.history import History
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates
from fabtop.core.thresholds import effective

# Host states, in the order a user should worry about them.
UP, STALE, CONNECTING, DOWN = "up", "stale", "connecting", "down"


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
    frames: int = 0
    warnings: deque[str] = field(default_factory=lambda: deque(maxlen=50))

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

    def apply_frame(self, host: str, frame: Frame) -> HostSample | None:
        """Run one frame through the pipeline (assemble -> rates -> history), then the rules."""
        if host not in self.hosts:
            return None
        sample, rates = self.pipeline.apply_frame(host, frame)
        self._took(host, sample, rates)
        return sample

    def apply_sample(self, host: str, sample: HostSample) -> HostRates | None:
        """An already assembled sample through rates, history and rules (test fabrics)."""
        if host not in self.hosts:
            return None
        rates = self.pipeline.apply_sample(sample)
        self._took(host, sample, rates)
        return rates

    def _took(self, host: str, sample: HostSample, rates: HostRates) -> None:
        hs = self.hosts[host]
        hs.sample, hs.rates = sample, rates
        hs.frames += 1
        hs.last_frame_mono = self._clock()
        hs.status, hs.error = UP, None
        for w in sample.warnings:
            if w not in hs.warnings:  # the same tool error every tick is one line, not fifty
                hs.warnings.append(w)
        if self.evaluate_per_frame:
            self.evaluate()

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
        if status == hs.status and error == hs.error and rtt_s is None:
            return
        hs.status, hs.error = status, error
        if rtt_s is not None:
            hs.rtt_s = rtt_s
        if error:
            hs.warnings.append(error)
        self.evaluate()

    def evaluate(self) -> None:
        """Re-run the health rules over the current state."""
        if self._rules is not None:
            try:
                self.findings = sorted(self._rules(self), key=lambda f: -f.rank)
            except Exception as e:  # a broken rule must not take down the dashboard
                self.findings = [
                    Finding("fabtop", "warning", "fabtop", f"a health rule failed: {e!r}")
                ]

    def set_baseline(self) -> None:
        """Remember every host's current counters as the diff baseline (never touches hardware)."""
        self.baseline = {n: h.sample for n, h in self.hosts.items() if h.sample is not None}
