"""One whole source not monitored on one host (fabtop.core.coverage judges them).

On its own, below the host state, so ``HostState.said_gaps`` (a shard's word, read back)
is typed at run time: the state cannot import coverage, which reads the state.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Gap:
    """One whole source not monitored on one host: typed (``source``, ``reason``: bounded
    words, the exporter's labels) and as the sentence's parts people read."""

    source: str  # one of GAP_SOURCES
    reason: str  # one of GAP_REASONS
    order: int  # the sentence's place in the coverage line
    pre: str  # the sentence before the host names
    post: str = ""  # after them: the why in the host's own words

    @property
    def detail(self) -> str:
        """The why in the host's own words, without its parentheses ("" when none)."""
        return self.post.strip().removeprefix("(").removesuffix(")")
