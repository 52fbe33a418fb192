"""Health rules (DESIGN.md section 7): small functions over the fabric state that return findings.

Every rule is ``rule(ctx: RuleContext) -> list[Finding]``: pure given the context and
its :class:`~fabtop.rules.context.RuleMemory` (when a condition was first seen, how long
it held, how long it has been quiet). :func:`evaluate` runs them all after every frame.

Conditions measured on rates are reported once they held for ``detect_s`` and keep being
reported until they have been quiet for ``restore_s`` (``event_hold_s`` for one-shot
counter events), in the spirit of SONiC's PFC watchdog. At 1 Hz every rule fires within
two ticks of its condition appearing. fabtop never changes anything on a host: a
finding's ``next_step`` is text for the operator.

Thresholds (override any of them in the config file's ``[thresholds]`` table):

| name | default | why |
|---|---|---|
| ``detect_s`` | 2 | a condition must hold two 1 s intervals: one odd sample never fires, and every rule still fires within 2 ticks |
| ``restore_s`` | 4 | twice the detection time, so a flickering condition stays one finding instead of a string of them |
| ``event_hold_s`` | 120 | link flaps and NIC watchdog events last milliseconds; keep them on screen long enough for someone to see |
| ``storm_pause_ratio`` | 0.99 | pfcwd-style: paused for 99% of an interval means the queue did not drain at all; healthy lossless traffic, even under incast, pauses a few % to a few tens of % |
| ``storm_flat_fraction`` | 0.02 | "flat" traffic: the stormed priority moved under 2% of line rate (a port paused 99% of the time can move at most about 1%) |
| ``storm_flat_bytes_per_s`` | 1e6 | the same "flat" when the link does not report its speed: 1 MB/s is noise on any RDMA link |
| ``storm_min_pause_per_s`` | 500 | for NICs that count pause frames but not their duration: a port held paused is re-paused hundreds (10 Gb/s) to thousands (100 Gb/s) of times a second |
| ``pressure_pause_ratio`` | 0.25 | info only: a priority paused a quarter of the time while traffic flows is congestion (incast) worth seeing, not a fault |
| ``lossless_drops_per_s`` | 0 | any drop on a PFC-enabled priority, or out-of-sequence on RoCE with PFC, means PFC is not protecting the flow |
| ``ecn_pause_per_s`` | 100 | sustained pauses at this rate are congestion DCQCN should be marking; a few isolated pauses without marks are normal |
| ``roce_min_mtu`` | 4200 | RoCE MTU 4096 needs the 4096-byte payload plus RoCE headers inside the netdev MTU; below that RoCE falls to 2048 |
| ``nic_temp_warn_c`` | 95 | about 10 °C below where ConnectX-class NICs report their critical temperature |
| ``nic_temp_crit_c`` | 105 | NICs start protecting themselves (throttle, port shutdown) around here |
| ``rdma_share_min`` | 0.05 | NCCL/RCCL over IB/RoCE puts nearly all bytes on RDMA; under 5% of a busy port means the job runs over TCP sockets |
| ``rdma_min_traffic_bps`` | 1e9 | below 1 Gb/s the port is idle enough that ssh, metrics and storage legitimately dominate |
| ``gpu_temp_warn_c`` | 85 | data-center GPUs (A100/H100) list a maximum operating temperature of about 87-90 °C, where slowdown starts |
| ``gpu_mem_temp_warn_c`` | 95 | HBM's maximum operating temperature as nvidia-smi -q reports it on A100/H100 |
| ``token_drop_fraction`` | 0.5 | token rate at half its recent level or less: far beyond normal request-mix swings |
| ``token_min_per_s`` | 10 | a server producing fewer tokens than this is idle; its "drops" mean nothing |
| ``token_baseline_s`` | 60 | the recent level is the median token rate of the last minute |
"""  # noqa: E501 (a markdown table the README copies)

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from weakref import WeakKeyDictionary

from fabtop.model import Finding
from fabtop.rules import config, ecn, gpu, hardware, inference, pfc, traffic
from fabtop.rules.context import RuleContext, RuleMemory, StateView, host_time

DEFAULT_THRESHOLDS: dict[str, float] = {
    "detect_s": 2.0,
    "restore_s": 4.0,
    "event_hold_s": 120.0,
    "storm_pause_ratio": 0.99,
    "storm_flat_fraction": 0.02,
    "storm_flat_bytes_per_s": 1e6,
    "storm_min_pause_per_s": 500.0,
    "pressure_pause_ratio": 0.25,
    "lossless_drops_per_s": 0.0,
    "ecn_pause_per_s": 100.0,
    "roce_min_mtu": 4200.0,
    "nic_temp_warn_c": 95.0,
    "nic_temp_crit_c": 105.0,
    "rdma_share_min": 0.05,
    "rdma_min_traffic_bps": 1e9,
    "gpu_temp_warn_c": 85.0,
    "gpu_mem_temp_warn_c": 95.0,
    "token_drop_fraction": 0.5,
    "token_min_per_s": 10.0,
    "token_baseline_s": 60.0,
}

Rule = Callable[[RuleContext], list[Finding]]

# Order matters only where a rule reads earlier findings (ctx.findings): the ECN rule
# skips ports in a PFC storm, out-of-sequence right after a link flap is left to the
# flap, and the inference rule pairs a token-rate drop with a fabric finding.
RULES: tuple[Rule, ...] = (
    pfc.pfc_storm,
    pfc.pfc_pressure,
    pfc.pfc_stall_events,
    pfc.pause_on_disabled_prio,
    pfc.pfc_config_mismatch,
    ecn.congestion_without_ecn,
    config.mtu_mismatch,
    config.roce_mtu_low,
    config.firmware_mismatch,
    hardware.pcie_degraded,
    hardware.nic_temperature,
    hardware.link_flap,
    hardware.module_high_temp,
    pfc.lossless_drops,
    traffic.rdma_fallback,
    gpu.gpu_thermal_slowdown,
    gpu.gpu_hot,
    inference.token_drop_with_fabric_event,
)

# Tracks not updated for this long belong to hosts that went away.
_FORGET_AFTER_S = 3600.0


def unknown_thresholds(names: Iterable[str]) -> list[str]:
    """Names in a ``[thresholds]`` table that no rule reads (typos), sorted."""
    return sorted(n for n in names if n not in DEFAULT_THRESHOLDS)


class Evaluator:
    """Runs every rule over a state, with thresholds fixed and one memory per state."""

    __slots__ = ("_memory", "rules", "thresholds")

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        rules: tuple[Rule, ...] = RULES,
    ) -> None:
        self.thresholds: dict[str, float] = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
        self.rules = rules
        self._memory: WeakKeyDictionary[StateView, RuleMemory] = WeakKeyDictionary()

    def memory(self, state: StateView) -> RuleMemory:
        """The rule memory of ``state``, created on first use; it goes when the state goes."""
        mem = self._memory.get(state)
        if mem is None:
            mem = self._memory[state] = RuleMemory()
        return mem

    def __call__(self, state: StateView) -> list[Finding]:
        """All findings for the current state, worst first."""
        times = [host_time(h.sample) for h in state.hosts.values() if h.sample is not None]
        if not times:
            return []
        now = max(times)
        memory = self.memory(state)
        ctx = RuleContext(state, self.thresholds, now, memory)
        for rule in self.rules:
            try:
                ctx.findings.extend(rule(ctx))
            except Exception as e:  # one broken rule must not hide the others' findings
                ctx.findings.append(
                    Finding(
                        rule="fabtop",
                        severity="warning",
                        subject="fabtop",
                        summary=f"health rule {rule.__name__} failed: {e!r}",
                    )
                )
        memory.forget_before(now - _FORGET_AFTER_S)
        return sorted(ctx.findings, key=lambda f: (-f.rank, f.subject, f.rule))


_DEFAULT = Evaluator()


def evaluate(state: StateView) -> list[Finding]:
    """Run every rule with the default thresholds (``Evaluator(config.thresholds)`` for others)."""
    return _DEFAULT(state)


def make_evaluator(thresholds: Mapping[str, float] | None = None) -> Evaluator:
    """An evaluator with the config's ``[thresholds]`` over the defaults."""
    return Evaluator(thresholds)


__all__ = [
    "DEFAULT_THRESHOLDS",
    "RULES",
    "Evaluator",
    "Rule",
    "RuleContext",
    "RuleMemory",
    "evaluate",
    "make_evaluator",
    "unknown_thresholds",
]
