"""Messages up from the collection side and the widgets: past-tense events.

A message that a newer one supersedes says so in ``can_replace``.
"""

from __future__ import annotations

from textual.message import Message


class StateChanged(Message):
    """FabricState moved; a pending one is replaced, so a burst of frames makes one refresh."""

    def can_replace(self, message: Message) -> bool:
        """Any pending StateChanged is superseded by this one."""
        return isinstance(message, StateChanged)


class FindingChosen(Message):
    """Enter on a finding (the overview's panel): the app opens the findings view on it."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key  # tui.rows.findings.finding_key of the finding


class HostLinksChosen(Message):
    """'l' in a host's detail: the app shows the overview with that host's links only."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
