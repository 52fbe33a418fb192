"""One ``fabtop export`` shard's cost per scrape (issue 31's targets): series and CPU.

    python benchmarks/export_shard.py [N ...]        (default: 128)

For each N, the simulated fabric of ``--demo-hosts N`` (8 RoCE rails and 2 GPUs a host)
is run for a few seconds, then its exposition is rendered as a scrape renders it
(``generate_latest`` of the shard's registry): the series per host, the body's size, the
CPU per scrape (median of 5) and its share of one core at a 5 s scrape interval, and
the info series' part of it. Process CPU time; prints figures and asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest

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


def run(n: int) -> None:
    state, _, _ = demo_state(until_s=4.0, history_s=3.0, fabric=big_fabric(n, "a"))
    reg = registry_for(state, "a")
    body = generate_latest(reg)
    series = body.count(b"\n") - body.count(b"\n#") - body.startswith(b"#")
    scrape = _cpu(lambda: generate_latest(reg))
    info = _cpu(lambda: list(info_families(state)))
    print(
        f"{n} hosts: {series} series ({series / n:.0f} per host), "
        f"{len(body) / 1e6:.1f} MB a scrape, {scrape * 1e3:.0f} ms CPU a scrape "
        f"({scrape / SCRAPE_INTERVAL_S:.0%} of a core at a {SCRAPE_INTERVAL_S:g} s scrape "
        f"interval), of which info series {info * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["128"]:
        run(int(arg))
