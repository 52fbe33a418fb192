"""The fabric as fabtop currently knows it: one place the TUI, doctor, snapshot and export read.

Frames come in (from any transport, a recording or the demo), go through
assemble -> rate engine -> history -> rules, and the result is kept here.
Nothing in this module does I/O.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from fabtop.config import HostConfig
from fabtop.history import History
from fabtop.model import Finding, HostSample, InferenceSample
from fabtop.rates import HostRates, RateEngine

# Sections the probe sends only on slow ticks (once a minute): the latest of each is
# carried into the frames between, so driver, firmware and QoS never blink out.
SLOW_KINDS = frozenset({
    "ethtool_i", "mlnx_qos", "dcb_pfc", "dcb_apptrust", "dcb_app", "dcb_ets", "dcb_buffer",
    "gpu_amd", "cputhrottle", "sysnet_slow", "sysib_slow",
})  # fmt: skip

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


class FabricState:
    """All hosts, their history and the current findings."""

    def __init__(
        self,
        hosts: list[HostConfig],
        history: History | None = None,
        rules: RuleHook | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hosts: dict[str, HostState] = {h.name: HostState(h.name, h.target) for h in hosts}
        self.configs: dict[str, HostConfig] = {h.name: h for h in hosts}
        self.history = history if history is not None else History()
        self.engine = RateEngine()
        self.findings: list[Finding] = []
        self.generation = 0  # bumped on every change; views redraw only when it moved
        self.baseline: dict[str, HostSample] = {}  # the 'r' key's diff baseline
        self.evaluate_per_frame = True  # a Session turns this off and evaluates once per tick
        self._slow: dict[str, dict[tuple[str, str | None], Section]] = {}
        self._rules = rules
        self._clock = clock

    def add_host(self, host: HostConfig, target: str | None = None) -> HostState:
        """Start tracking a host found while running (a Prometheus source's new instance)."""
        hs = self.hosts.get(host.name)
        if hs is None:
            hs = self.hosts[host.name] = HostState(host.name, target or host.target)
            self.configs[host.name] = host
            self.generation += 1
        return hs

    def apply_frame(self, host: str, frame: Frame) -> HostSample | None:
        """Run one frame through assemble -> rates -> history -> rules."""
        hs = self.hosts.get(host)
        if hs is None:
            return None
        sample = assemble(host, self._with_slow_sections(host, frame))
        if hs.sample is not None and hs.sample.inference and not sample.inference:
            # /metrics is polled on its own cadence: keep the last reading on frames without it.
            sample.inference = hs.sample.inference
        rates = self.engine.update(sample)
        hs.sample, hs.rates = sample, rates
        hs.frames += 1
        hs.last_frame_mono = self._clock()
        hs.status, hs.error = UP, None
        for w in sample.warnings:
            if w not in hs.warnings:  # the same tool error every tick is one line, not fifty
                hs.warnings.append(w)
        self.history.record(frame.clock_ns / 1e9, sample, rates)
        if self.evaluate_per_frame:
            self.evaluate()
        else:
            self.generation += 1
        return sample

    def _with_slow_sections(self, host: str, frame: Frame) -> Frame:
        kept = self._slow.setdefault(host, {})
        present = set()
        for sec in frame.sections:
            if sec.kind in SLOW_KINDS:
                kept[(sec.kind, sec.subject)] = sec
                present.add((sec.kind, sec.subject))
        missing = [sec for key, sec in kept.items() if key not in present]
        if not missing:
            return frame
        return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s,
                     [*frame.sections, *missing])

    def apply_inference(self, host: str, readings: list[InferenceSample]) -> None:
        """Attach the latest /metrics readings; the next frame's rates use them."""
        hs = self.hosts.get(host)
        if hs is not None and hs.sample is not None:
            hs.sample.inference = readings
            self.generation += 1

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
        self.generation += 1

    def set_baseline(self) -> None:
        """Remember every host's current counters as the diff baseline (never touches hardware)."""
        self.baseline = {n: h.sample for n, h in self.hosts.items() if h.sample is not None}
        self.generation += 1

    def forget(self, host: str) -> None:
        """Drop rate baselines for a host (it reconnected after a reboot, say)."""
        self.engine.forget(host)
