"""Reading fabtop's own series back (``--from-prometheus`` over shards): CPU per refresh.

    python benchmarks/promself_readback.py [N ...]        (default: 64 256)

For each N, the big simulated fabric of ``--demo-hosts N`` (8 RoCE rails a host) is run
into a FabricState for a few ticks, served as ``fabtop export`` serves it, and turned
into the query API's JSON (an instant vector, as Prometheus answers it). Then the
reader's side: the answer's series read back into samples and fed through the rates,
history and the shards' findings (one refresh); the hour's backfill on the dashboard's
start is that many refreshes, one per step. Process CPU time, without HTTP or JSON decoding (those
are Prometheus's and urllib's); prints figures and asserts nothing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.config import Config
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock, demo_state
from fabtop.run.export import registry_for
from fabtop.run.promself import (
    MAX_BACKFILL_HOST_STEPS,
    MAX_BACKFILL_POINTS,
    MIN_BACKFILL_POINTS,
)
from fabtop.run.promself_series import read_own
from fabtop.run.promsource import PrometheusSource
from fabtop.sim.fabric import big_fabric

T0 = 1_700_000_000.0
TARGET = {"job": "fabtop", "instance": "shard1:9877"}


def answer(n: int) -> list[dict[str, Any]]:
    state, _, _ = demo_state(until_s=5.0, fabric=big_fabric(n), history_s=2.0)
    out = []
    for fam in text_string_to_metric_families(generate_latest(registry_for(state)).decode()):
        for s in fam.samples:
            out.append(
                {"metric": {"__name__": s.name, **s.labels, **TARGET}, "value": [T0, repr(s.value)]}
            )
    return out


def run(n: int) -> None:
    results = answer(n)
    stamps = [
        {
            "metric": {k: v for k, v in r["metric"].items() if k != "__name__"},
            "value": [T0, str(T0)],
        }
        for r in results
        if r["metric"]["__name__"] == "fabtop_host_up"
    ]
    clock = ManualClock()
    src = PrometheusSource("http://prom:9090", interval=5.0, clock=clock)
    src.state = fabric_state(Config(hosts=[], interval=5.0), clock=clock)
    c0 = time.process_time()
    read_own(results, stamps)
    read_s = time.process_time() - c0
    costs = []
    for i in range(5):
        for s in stamps:
            s["value"] = [T0, str(T0 + 5 * i)]
        clock.t += 5
        c0 = time.process_time()
        src.own.apply(read_own(results, stamps), [], T0 + 5 * i)
        costs.append(time.process_time() - c0)
    refresh = sorted(costs)[len(costs) // 2]
    steps = max(MIN_BACKFILL_POINTS, min(MAX_BACKFILL_POINTS, MAX_BACKFILL_HOST_STEPS // n))
    print(
        f"{n} hosts: {len(results)} series ({len(results) / n:.0f} per host); read "
        f"{read_s * 1000:.0f} ms, a whole refresh (read, rates, history, findings) "
        f"{refresh * 1000:.0f} ms CPU; the hour's backfill ({steps} steps of "
        f"{3600 / steps:.0f} s) about {steps * refresh:.1f} s CPU"
    )


if __name__ == "__main__":
    for n in [int(a) for a in sys.argv[1:]] or [64, 256]:
        run(n)
