"""The one guard around work done for one host: a failure becomes a line, never an exception.

Every per-frame step (decode, assemble, rates, history, rules, a /metrics parse) and every
per-host task runs inside a :class:`Guard`. An exception raised there is caught, logged at
debug level with its traceback (WARNING and above would reach the operator's terminal
through logging's last-resort handler, under the dashboard), and kept as one clean line
that names the host and the step; the caller shows that line on that host. Only
``Exception`` is caught: cancellation, KeyboardInterrupt and SystemExit still stop fabtop.

Whatever parser bug comes next, it costs the host (or the section) it came from, and
every other host keeps streaming.
"""

from __future__ import annotations

import logging
import re
from types import TracebackType

from collectors.text import clean

log = logging.getLogger(__name__)

MAX_LINE = 300  # one failure as shown on a host: long enough for a path, never a page

# Messages often quote remote text through repr(): ESC shows as the four characters
# "\x1b" and the sequence's payload would be shown as text. Turned back into the control
# characters they stand for, clean() removes each whole sequence.
_REPR_CONTROL = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u00([0-9a-fA-F]{2})|(a))")


def _unrepr_control(m: re.Match[str]) -> str:
    if m.group(3):
        return "\x07"
    code = int(m.group(1) or m.group(2), 16)
    return chr(code) if code < 0x20 or 0x7F <= code <= 0x9F else m.group(0)


def failure_line(where: str, exc: BaseException) -> str:
    """``where: ExcType: message`` on one line, control characters removed, bounded."""
    try:
        detail = str(exc)
    except Exception:  # an exception whose __str__ fails still gets its line
        detail = ""
    name = type(exc).__name__
    text = f"{where}: {name}: {detail}" if detail else f"{where}: {name}"
    return clean(" ".join(_REPR_CONTROL.sub(_unrepr_control, text).split()), MAX_LINE)


class Guard:
    """``with Guard("node3: frame") as g: ...``; afterwards ``g.error`` is the failure or None.

    Reusable: each ``with`` starts with ``error`` cleared.
    """

    __slots__ = ("error", "where")

    def __init__(self, where: str) -> None:
        self.where = where
        self.error: str | None = None

    def __enter__(self) -> Guard:
        self.error = None
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        self.error = failure_line(self.where, exc)
        log.debug("%s", self.error, exc_info=(type(exc), exc, tb))
        return True
