"""CPU time of the calling thread, less what the garbage collector took in it.

A frame's cost (the ``frame_budget_s`` threshold) is measured in CPU seconds so a loaded
machine does not make a host's frames look expensive. Python's cyclic garbage collector
runs inside whatever allocation happens to trigger it: in a long run with a large
history one full collection takes tenths of a second, and it must not be counted against
the host whose frame was being read then (fabtop never blames a host for its own work).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

_gc_s: dict[int, float] = {}  # thread -> CPU seconds its collections took
_started: dict[int, float] = {}


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    tid = threading.get_ident()
    if phase == "start":
        _started[tid] = time.thread_time()
    else:
        began = _started.pop(tid, None)
        if began is not None:
            _gc_s[tid] = _gc_s.get(tid, 0.0) + time.thread_time() - began


gc.callbacks.append(_on_gc)


def cpu_time() -> float:
    """This thread's CPU seconds, less its garbage collections (differences are costs)."""
    return time.thread_time() - _gc_s.get(threading.get_ident(), 0.0)
