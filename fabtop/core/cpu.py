"""CPU time of the calling thread, less what the garbage collector took in it.

A frame's cost (the ``frame_budget_s`` threshold) is measured in CPU seconds so a loaded
machine does not make a host's frames look expensive. Python's cyclic garbage collector
runs inside whatever allocation happens to trigger it: in a long run with a large
history one full collection takes tenths of a second, and it must not be counted against
the host whose frame was being read then (fabtop never blames a host for its own work).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator
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


_pause_lock = threading.Lock()
_pauses = 0  # bodies of gc_paused() running now, in any thread
_was_enabled = False  # whether the collector ran before the first of them


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the body (in every thread, as gc is global).

    For a bounded burst that allocates hundreds of thousands of objects and keeps or frees
    them by reference counting (a scrape's samples, a range answer's points): none is
    garbage, yet their allocation makes the collector run hundreds of times and walk the
    whole heap, often half the burst's CPU. Overlapping pauses (the loop and a thread)
    turn it back on when the last ends, and only where it was on.
    """
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
