"""The one path a frame takes into the core: assemble -> rates -> history.

The live fabric state, focus mode and the test fabrics all run frames (or hand-built
samples) through a :class:`Pipeline`, so each of them reads exactly what the others do.
"""

from __future__ import annotations

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.samples import HostSample
from fabtop.core.history import History
from fabtop.core.rates import HostRates, RateEngine

# Sections the probe sends only on slow ticks (once a minute): the latest of each is
# carried into the frames between, so driver, firmware and QoS never blink out.
SLOW_KINDS = frozenset({
    "ethtool_i", "mlnx_qos", "dcb_pfc", "dcb_apptrust", "dcb_app", "dcb_ets", "dcb_buffer",
    "gpu_amd", "cputhrottle", "sysnet_slow", "sysib_slow",
})  # fmt: skip


class Pipeline:
    """Frames of many hosts in, typed samples with their rates out, history kept."""

    def __init__(self, history: History | None = None) -> None:
        self.engine = RateEngine()
        self.history = history if history is not None else History()
        self._slow: dict[str, dict[tuple[str, str | None], Section]] = {}
        self._latest: dict[str, HostSample] = {}

    def apply_frame(self, host: str, frame: Frame) -> tuple[HostSample, HostRates]:
        """Assemble ``frame`` (slow sections carried) and run it through rates and history."""
        sample = assemble(host, self._with_slow_sections(host, frame))
        prev = self._latest.get(host)
        if prev is not None and prev.inference and not sample.inference:
            # /metrics is polled on its own cadence: keep the last reading on frames without it.
            sample.inference = prev.inference
        return sample, self.apply_sample(sample)

    def apply_sample(self, sample: HostSample) -> HostRates:
        """Rates and history for an already assembled sample (test fabrics start here)."""
        self._latest[sample.host] = sample
        rates = self.engine.update(sample)
        self.history.record(sample.clock_ns / 1e9, sample, rates)
        return rates

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
