"""Messages up from the collection side: past-tense events, coalescing where a newer one wins."""

from __future__ import annotations

from textual.message import Message


class StateChanged(Message):
    """FabricState moved; a pending one is replaced, so a burst of frames makes one refresh."""

    def can_replace(self, message: Message) -> bool:
        """Any pending StateChanged is superseded by this one."""
        return isinstance(message, StateChanged)
