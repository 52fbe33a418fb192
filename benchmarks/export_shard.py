"""One ``fabtop export`` shard's cost per scrape (issue 31's targets): series and CPU.

    python benchmarks/export_shard.py [N ...]        (default: 128)

For each N, the simulated fabric of ``--demo-hosts N`` (8 RoCE rails and 2 GPUs a host)
is run for a few seconds, then its exposition is rendered as a scrape renders it
(fabtop/run/exposition.py: the families collected on the event loop, written out in a
thread): the series per host, the body's size, the CPU per scrape (median of 5) and its
share of one core at a 5 s scrape interval, the part that holds the event loop (the
collection), the info series' part, and prometheus-client's ``generate_latest`` of the
same registry beside it (what a scrape cost before). Process CPU time; prints figures
and asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from fabtop.run import exposition
from fabtop.run.demo import demo_state
from fabtop.run.export import registry_for
from fabtop.run.export_info import info_families
from fabtop.sim.fabric import big_fabric

SCRAPE_INTERVAL_S = 5.0
RUNS = 5


def _cpu(f: object) -> float:
    times = []
    for _ in range(RUNS):
        a = time.process_time()
        f()  # type: ignore[operator]
        times.append(time.process_time() - a)
    return statistics.median(times)


class _Families(Collector):
    """Families already made, read as a registry reads them (with the scrape's GC pause)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def run(n: int) -> None:
    state, _, _ = demo_state(until_s=4.0, history_s=3.0, fabric=big_fabric(n, "a"))
    reg = registry_for(state, "a")
    body = exposition.render(exposition.families_of(reg))
    series = body.count(b"\n") - body.count(b"\n#") - body.startswith(b"#")
    scrape = _cpu(lambda: exposition.render(exposition.families_of(reg)))
    loop = _cpu(lambda: exposition.families_of(reg))
    info = _cpu(lambda: exposition.families_of(_Families(info_families(state))))
    before = _cpu(lambda: generate_latest(reg))
    print(
        f"{n} hosts: {series} series ({series / n:.0f} per host), "
        f"{len(body) / 1e6:.1f} MB a scrape, {scrape * 1e3:.0f} ms CPU a scrape "
        f"({scrape / SCRAPE_INTERVAL_S:.0%} of a core at a {SCRAPE_INTERVAL_S:g} s scrape "
        f"interval), of which {loop * 1e3:.0f} ms hold the event loop (collection) and "
        f"info series {info * 1e3:.0f} ms; generate_latest {before * 1e3:.0f} ms "
        f"({before / scrape:.1f}x)"
    )


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["128"]:
        run(int(arg))
