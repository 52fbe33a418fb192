"""What every screen reads: the state, the tick, the clock and the display flags.

The app owns one of these and hands it down; screens never reach into the app.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fabtop.core.state import FabricState


@dataclass(slots=True)
class ViewContext:
    """Shared, read-mostly view settings; the app flips the flags on key presses."""

    state: FabricState
    interval: float = 1.0
    clock: Callable[[], float] = field(default=time.monotonic)
    paused: bool = False
    show_virtual: bool = False
    delta_mode: bool = False  # link table shows counts since the 'r' baseline
    baseline_at: float | None = None  # clock() when 'r' was pressed

    def now(self) -> float:
        """The clock the host ages are measured with."""
        return self.clock()
