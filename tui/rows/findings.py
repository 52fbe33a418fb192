"""Rows of the findings view: every current finding, then the recently cleared ones.

The current findings are ``state.findings`` (the one list every screen and doctor read);
their raise times and the cleared ones come from the core's finding log, so a finding
seen on any screen, or before a replay seek, is listed here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabtop.core.findings import Finding
from fabtop.core.state import FabricState

MAX_CLEARED = 50  # cleared episodes listed, newest first (the log keeps more)
SEP = "\x1f"


def finding_key(f: Finding) -> str:
    """The row key of a current finding: its rule and subject (one finding per pair)."""
    return f"{f.rule}{SEP}{f.subject}"


@dataclass(slots=True, frozen=True)
class FindingRow:
    """One line of the findings view and what its detail pane shows."""

    key: str
    finding: Finding  # the latest version of the finding
    raised: float | None  # unix time on the operator's axis (None: not known)
    cleared: float | None  # None while active

    @property
    def active(self) -> bool:
        """Still raised."""
        return self.cleared is None


def finding_rows(state: FabricState, max_cleared: int = MAX_CLEARED) -> list[FindingRow]:
    """The current findings (worst first), then the cleared episodes (newest clear first)."""
    episodes = state.finding_log.episodes()
    raised = {f"{e.rule}{SEP}{e.subject}": e.raised for e in episodes if e.active}
    rows = [
        FindingRow(finding_key(f), f, raised.get(finding_key(f), f.since), None)
        for f in state.findings
    ]
    cleared = sorted(
        (e for e in episodes if e.cleared is not None), key=lambda e: -(e.cleared or 0.0)
    )[:max_cleared]
    rows += [
        FindingRow(
            f"{e.rule}{SEP}{e.subject}{SEP}{e.raised!r}{SEP}{e.cleared!r}",
            e.shown,
            e.raised,
            e.cleared,
        )
        for e in cleared
    ]
    return rows
