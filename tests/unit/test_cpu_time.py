"""A frame's cost leaves out the garbage collector's (fabtop's own work, no host's)."""

from __future__ import annotations

import gc
import time

from fabtop.core.cpu import cpu_time, gc_paused


def test_a_full_collection_is_not_counted() -> None:
    junk = [[[i] for i in range(200)] for _ in range(3000)]  # many objects to walk
    for x in junk:
        x.append(x)  # cycles: the collector has work
    t0, c0 = time.thread_time(), cpu_time()
    gc.collect()
    took, counted = time.thread_time() - t0, cpu_time() - c0
    assert took > 0.0 and counted < 0.5 * took + 1e-3, (took, counted)
    # ... while work of the thread's own is.
    c0 = cpu_time()
    sum(i * i for i in range(300_000))
    assert cpu_time() - c0 > 0.0


def test_overlapping_gc_pauses_end_with_the_last_and_keep_a_collector_that_was_off() -> None:
    assert gc.isenabled()
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()  # a scrape on the loop while a backfill step reads in a thread
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second still runs
    second.__exit__(None, None, None)
    assert gc.isenabled()
    gc.disable()  # whoever turned it off keeps it off
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
