"""What state a host is in: one vocabulary for the runner that reports it and the state
that keeps it (fabtop/core/state.py imports it from here, the layer below).
"""

from __future__ import annotations

from typing import Final, Literal

# What a runner reports of its host's connection (collectors/runner.py, recorded as is).
ConnectionState = Literal["connecting", "up", "stale", "down"]
CONNECTING: Final = "connecting"
UP: Final = "up"
STALE: Final = "stale"
DOWN: Final = "down"
# The state's own: connected and sending frames that fabtop cannot use (a bad value that
# a parser or the rate engine chokes on); no runner reports it.
FAILING: Final = "failing"

# A host is stale after this many probe intervals without a frame: the runner says so
# from its silence, the state from the age of the last frame (a replay, a Prometheus
# source and a hand-fed fabric have no runner).
STALE_AFTER_INTERVALS = 2.5
