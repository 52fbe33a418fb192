"""The bounded list of warning lines every parser fills (one type, not a helper per parser).

A garbage capture must not turn into thousands of warning lines: each list keeps its first
``limit`` lines and, where the parser asks for one, a last line saying the rest were left
out. The bound belongs to the list, so a helper that is handed the list cannot forget it.
It is a ``list[str]``: whoever reads the warnings (assembly, the state, tests) reads a list.

Named ``warning_lines`` and not ``warnings``: a script run from this folder would shadow
the standard library's ``warnings``.
"""

from __future__ import annotations

from collectors.text import clean

SUPPRESSED = "further warnings suppressed"  # the usual last line (ethtool, sysfs)


class WarningLines(list[str]):
    """Warning lines that stop growing at ``limit``; :meth:`add` is how a parser adds one."""

    def __init__(self, limit: int, suppressed: str | None = None, width: int | None = None):
        """``suppressed``: the one line added after ``limit`` (None: the rest are dropped
        unsaid); ``width``: each line cleaned of control characters and cut to that many
        characters (for a line that quotes remote text unescaped)."""
        super().__init__()
        self.limit = limit
        self.suppressed = suppressed
        self.width = width

    def add(self, line: str) -> None:
        """Keep ``line`` while under the limit; at the limit, say once that more were left."""
        if len(self) < self.limit:
            self.append(line if self.width is None else clean(line, self.width))
        elif len(self) == self.limit and self.suppressed is not None:
            self.append(self.suppressed)
