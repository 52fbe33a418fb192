"""What every screen reads: the state, the tick, the clock and the display flags.

The app owns one of these and hands it down; screens never reach into the app.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabtop.config import FOLD_PAST_LINKS
from fabtop.core.cables import Cable
from fabtop.core.state import FabricState
from fabtop.run.link_filter import LinkFilter

if TYPE_CHECKING:
    from fabtop.commands.fabtest import Bench

# What a key that writes a file says in a browser session of ``fabtop serve`` started
# without --allow-write.
WRITE_OFF = "writing files is off in the browser view; start fabtop serve with --allow-write"


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
    recording: bool = False  # frames are being written to a recording (REC on the top line)
    # (number key, name) of every screen, for the footer; the app fills it from its registry.
    screens: tuple[tuple[str, str], ...] = ()
    # The overview's links narrowed to one host ('l' in host detail); None: every host.
    links_host: str | None = None
    # The finding the findings view selects when it is shown next (Enter on the panel).
    finding_key: str | None = None
    # False in fabtop serve's read-only sessions: every key that writes a file checks it.
    allow_write: bool = True
    # What the test screen runs plans over: set where the session holds real transports
    # (SSH, demo); None in a replay and with --from-prometheus.
    bench: Bench | None = None
    # The overview's filter (`/`, --filter): kept here so it outlives the screen.
    link_filter: LinkFilter = field(default_factory=LinkFilter)
    # Past this many links the overview's groups start folded ([dashboard] fold_past_links).
    fold_past_links: int = FOLD_PAST_LINKS
    # The config's [[cable]] pairs: the link detail's cable panel shows both ends.
    cables: tuple[Cable, ...] = ()

    def now(self) -> float:
        """The clock the host ages are measured with."""
        return self.clock()
