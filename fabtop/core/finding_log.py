"""Finding history: every finding from the moment it was raised to the moment it cleared.

The rules say what holds *now*; the timeline, a replay and ``replay --findings`` need
what held *when*. :class:`FindingLog` turns the successive finding lists of a state
into episodes keyed by ``(rule, subject)``: raised at the finding's own ``since`` (when
the condition began) or, without one, at the ``now`` of the evaluation that first saw it;
cleared at the ``now`` of the first evaluation it is absent from. A finding that returns
after clearing is a new episode. Times are on the operator's unix axis, the axis of the
history's points and of ``Finding.since``, so an episode lines up with the charts.

The log lives in the core (``FabricState.finding_log``, updated by every evaluation), so
every screen sees every finding whichever screen was shown when it fired, and a replay
that seeks backwards rebuilds the same log by re-feeding the recording.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fabtop.core.findings import QUIET_S, SEVERITIES, Finding

# Cleared episodes kept: a day of a flapping link at one episode a minute is 1440; the
# oldest cleared ones go first. Active episodes are never dropped (they are bounded by
# the current findings).
MAX_EPISODES = 1000

RAISED, CLEARED = "raised", "cleared"

Key = tuple[str, str]


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else 0


@dataclass(slots=True)
class Episode:
    """One finding from raise to clear."""

    rule: str
    subject: str
    severity: str  # the worst severity seen during the episode
    raised: float  # operator-axis unix time (the axis of History times and Finding.since)
    cleared: float | None  # None while still active
    finding: Finding  # the latest version of the finding
    # The last version while its condition was seen: a finding in its restore hold says
    # "clears in N s", which is no longer true once it cleared.
    held: Finding | None = None

    @property
    def last_seen(self) -> Finding:
        """The finding as it read the last time its condition held."""
        return self.held if self.held is not None else self.finding

    @property
    def shown(self) -> Finding:
        """What to show: the latest version while active, the last one seen once cleared."""
        return self.finding if self.cleared is None else self.last_seen

    @property
    def active(self) -> bool:
        """True until the finding is absent from an evaluation."""
        return self.cleared is None

    @property
    def key(self) -> Key:
        """(rule, subject): what makes two findings the same episode."""
        return self.rule, self.subject


class FindingLog:
    """Episodes of the findings a state reported, bounded (see :data:`MAX_EPISODES`).

    ``on_transition``, when set, is told of each ``("raised"|"cleared", episode)`` as
    :meth:`update` records it (``replay --findings`` listens there).
    """

    __slots__ = ("_active", "_cleared", "on_transition")

    def __init__(self, max_cleared: int = MAX_EPISODES) -> None:
        self._active: dict[Key, Episode] = {}
        self._cleared: deque[Episode] = deque(maxlen=max_cleared)
        self.on_transition: Callable[[str, Episode], None] | None = None

    def update(self, findings: Sequence[Finding], now: float) -> list[tuple[str, Episode]]:
        """Record the findings of one evaluation at ``now``; return the transitions.

        Raised first (in the findings' order), then cleared (oldest raise first).
        """
        out: list[tuple[str, Episode]] = []
        seen: set[Key] = set()
        for f in findings:
            key = (f.rule, f.subject)
            if key in seen:  # one episode per key, whatever a rule emitted twice
                continue
            seen.add(key)
            ep = self._active.get(key)
            if ep is None:
                raised = f.since if f.since is not None else now
                ep = self._active[key] = Episode(
                    f.rule,
                    f.subject,
                    f.severity,
                    raised,
                    None,
                    f,
                    None if QUIET_S in f.evidence else f,
                )
                out.append((RAISED, ep))
                continue
            ep.finding = f
            if QUIET_S not in f.evidence:
                ep.held = f
            if _rank(f.severity) > _rank(ep.severity):
                ep.severity = f.severity
        gone = [ep for key, ep in self._active.items() if key not in seen]
        for ep in sorted(gone, key=lambda e: e.raised):
            # A finding whose own since is after this evaluation's time (a host clock
            # ahead of the data's) still never clears before it was raised.
            ep.cleared = max(now, ep.raised)
            del self._active[ep.key]
            self._cleared.append(ep)
            out.append((CLEARED, ep))
        if self.on_transition is not None:
            for kind, ep in out:
                self.on_transition(kind, ep)
        return out

    def episodes(self) -> list[Episode]:
        """Every episode kept, active and cleared, oldest raise first."""
        return sorted([*self._cleared, *self._active.values()], key=lambda e: e.raised)

    def active(self) -> list[Episode]:
        """The episodes still open, oldest raise first."""
        return sorted(self._active.values(), key=lambda e: e.raised)

    def __len__(self) -> int:
        return len(self._cleared) + len(self._active)
