"""Who pauses whom, and how hard: the one reading of pause counters the PFC rules and the
PFC screen share, so a port the screen calls "pausing hard" is one the rules call so too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from collectors.vocabulary import Derived, Metric
from fabtop.core.findings import PortRef

if TYPE_CHECKING:  # the context reads the pause names below: it is imported after them
    from fabtop.core.rules.context import LinkTick

PRIOS = tuple(range(8))
SIDES = ("rx", "tx")  # rx: being paused by the peer; tx: sending pauses to the peer

# The per-priority names of one side (direction) of a port.
PAUSE_RATIO: dict[str, Derived] = {
    "rx": Derived.RX_PAUSE_TIME_RATIO,
    "tx": Derived.TX_PAUSE_TIME_RATIO,
}
PAUSE_PER_S: dict[str, str] = {"rx": Metric.RX_PAUSE.per_s, "tx": Metric.TX_PAUSE.per_s}
BYTES_PRIO: dict[str, Metric] = {"rx": Metric.RX_BYTES_PRIO, "tx": Metric.TX_BYTES_PRIO}
BYTES_PER_S: dict[str, str] = {"rx": Metric.RX_BYTES.per_s, "tx": Metric.TX_BYTES.per_s}
OTHER_SIDE = {"rx": "tx", "tx": "rx"}

# A port that counts pause frames but not their duration is ordered and drawn by its
# frame rate, full at this many a second; whether it storms is for the rules to say
# (storm_min_pause_per_s, with its traffic flat).
FULL_PAUSE_PER_S = 1e4


def pause_level(ratio: float | None, per_s: float | None) -> float:
    """How hard a priority pauses, 0..1: its pause time ratio, else its frames/s scaled."""
    if ratio is not None:
        return ratio
    return min(1.0, (per_s or 0.0) / FULL_PAUSE_PER_S)


def flat_limit(lt: LinkTick, thresholds: Mapping[str, float]) -> float:
    """Bytes/s a port may still move and count as "flat" (not draining)."""
    line = lt.line_rate_bytes
    if line:
        return thresholds["storm_flat_fraction"] * line
    return thresholds["storm_flat_bytes_per_s"]


def hard_pause(ratio: float | None, per_s: float | None, thresholds: Mapping[str, float]) -> bool:
    """Pausing hard enough to be "who pauses whom", not occasional lossless flow control.

    Paused at least ``pressure_pause_ratio`` of the time, or, without duration counters,
    at least ``storm_min_pause_per_s`` pause frames a second.
    """
    if ratio is not None:
        return ratio >= thresholds["pressure_pause_ratio"]
    return (per_s or 0.0) >= thresholds["storm_min_pause_per_s"]


@dataclass(slots=True)
class PauseEnd:
    """One port sending or receiving pauses on one priority right now."""

    port: PortRef
    ratio: float | None
    per_s: float | None

    @property
    def level(self) -> float:
        """How hard it pauses, 0..1."""
        return pause_level(self.ratio, self.per_s)


def pausers(
    ticks: Iterable[LinkTick], side: str, thresholds: Mapping[str, float]
) -> dict[int, list[PauseEnd]]:
    """Per priority, the ports pausing hard on ``side`` this tick, strongest first."""
    out: dict[int, list[PauseEnd]] = {}
    for lt in ticks:
        ratios = lt.prio_rates(PAUSE_RATIO[side])
        counts = lt.prio_rates(PAUSE_PER_S[side])
        for p in set(ratios) | set(counts):
            ratio, per_s = ratios.get(p), counts.get(p)
            if hard_pause(ratio, per_s, thresholds):
                out.setdefault(p, []).append(PauseEnd(lt.ref, ratio, per_s))
    for ends in out.values():
        ends.sort(key=lambda e: -e.level)
    return out
