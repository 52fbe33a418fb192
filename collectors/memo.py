"""A bounded memo for readings of remote text that repeats from one tick to the next.

A cell of a GPU row, a header line: the same few texts arrive every tick from every host,
and reading one (cleaning it, checking its number) costs far more than finding it again.
Remote text is untrusted, so a memo keeps at most ``max_entries`` keys of at most
``max_size`` characters each, and starts over when full.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K", str, tuple[str, ...])
V = TypeVar("V")


class Memo(dict[K, V]):
    """``memo[key]`` is ``read(key)``, remembered: a hit is one dict lookup, in C."""

    __slots__ = ("_max_entries", "_max_size", "_read")
    _read: Callable[[K], V]
    _max_entries: int
    _max_size: int

    def __init__(self, read: Callable[[K], V], max_entries: int, max_size: int) -> None:
        super().__init__()
        self._read = read
        self._max_entries = max_entries
        self._max_size = max_size

    def __missing__(self, key: K) -> V:
        v = self._read(key)
        size = len(key) if isinstance(key, str) else sum(map(len, key))  # in characters
        if size <= self._max_size:
            if len(self) >= self._max_entries:
                self.clear()
            self[key] = v
        return v
