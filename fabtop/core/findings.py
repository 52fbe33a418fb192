"""Findings: what a health rule concluded, with its evidence and the next step."""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("info", "warning", "critical")


@dataclass(slots=True)
class Finding:
    """What a health rule concluded: one line for the screen, evidence and a next step."""

    rule: str
    severity: str  # one of SEVERITIES
    subject: str  # "node3/enp65s0f0np0/prio3", "fabric", "node4/gpu1"
    summary: str
    evidence: dict[str, float | int | str | None] = field(default_factory=dict)
    next_step: str = ""
    host: str | None = None
    since: float | None = None  # remote unix time the condition was first seen

    @property
    def rank(self) -> int:
        """Sort key: critical first."""
        return SEVERITIES.index(self.severity) if self.severity in SEVERITIES else 0
