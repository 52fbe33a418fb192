"""Reading fabtop's own series back (``--from-prometheus`` over shards): CPU per refresh.

    python benchmarks/promself_readback.py [N ...]        (default: 64 256)

For each N, the big simulated fabric of ``--demo-hosts N`` (8 RoCE rails a host) is run
into a FabricState for a few ticks, served as ``fabtop export`` serves it, and turned
into the query API's JSON (an instant vector, as Prometheus answers it). Then the
reader's side: the answer's series read back into samples and fed through the rates,
history and the shards' findings (one refresh). Then the dashboard's start as it runs it
(``PrometheusSource.poll_once`` with the HTTP fetches answered from memory): the known
hosts, the hour's backfill (``query_range``'s JSON decoded, cut into steps, read and fed
through the rates and history, fabtop/run/promself.py ``backfill``) and the first live
answer, to the first full screen; the backfill's part of it beside. Process CPU time
(threads included), without HTTP; prints figures and asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.config import Config
from fabtop.run import promself
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock, demo_state
from fabtop.run.export import registry_for
from fabtop.run.promself import (
    BACKFILL_QUERY,
    BACKFILL_S,
    MAX_BACKFILL_HOST_STEPS,
    MAX_BACKFILL_POINTS,
    MIN_BACKFILL_POINTS,
    OwnSeries,
    range_result,
)
from fabtop.run.promself_series import read_own
from fabtop.run.promsource import PrometheusSource, query_result
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


def _json(kind: str, result: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {"status": "success", "data": {"resultType": kind, "result": result}}
    ).encode()


def _grown(name: str, value: float, i: int) -> str:
    """A series' value ``i`` steps into the hour: traffic counters move, the rest stay."""
    if name.endswith("bytes_total"):
        value += i * 1e10
    elif name.endswith("packets_total"):
        value += i * 1e7
    return repr(float(value))


def start(results: list[dict[str, Any]], stamps: list[dict[str, Any]]) -> tuple[float, float]:
    """CPU from the dashboard's first poll to its first full screen, and the backfill's part."""
    end = T0 + BACKFILL_S
    wanted = re.compile(BACKFILL_QUERY.split('"')[1])  # {__name__=~"..."}: anchored
    steps = max(
        MIN_BACKFILL_POINTS, min(MAX_BACKFILL_POINTS, MAX_BACKFILL_HOST_STEPS // len(stamps))
    )
    step = max(1.0, -(-BACKFILL_S // steps))
    times = [T0 + k * step for k in range(int(BACKFILL_S // step) + 1)]
    matrix = _json(
        "matrix",
        [
            {
                "metric": r["metric"],
                "values": [[t, _grown(name, float(r["value"][1]), i)] for i, t in enumerate(times)],
            }
            for r in results
            if wanted.fullmatch(name := r["metric"]["__name__"])
        ],
    )
    now = [
        {**r, "value": [end, _grown(r["metric"]["__name__"], float(r["value"][1]), len(times))]}
        for r in results
    ]
    answers = {
        promself.KNOWN_QUERY: _json("vector", stamps),
        promself.STAMPS_QUERY: _json("vector", [{**s, "value": [end, str(end)]} for s in stamps]),
        promself.SERIES_QUERY: _json("vector", now),
        promself.SHARDS_QUERY: _json(
            "vector", [{"metric": {"__name__": "up", **TARGET}, "value": [end, "1"]}]
        ),
    }

    marks: dict[str, float] = {}  # when the backfill's query went out, and the next one

    def fetch(url: str, query: str, timeout: float, *at: float) -> list[Any]:
        if query == promself.SERIES_QUERY:
            marks["after"] = time.process_time()  # the backfill is done
        return query_result(answers[query], url)  # fetch_query's parse of the body

    def fetch_range(url: str, query: str, *_: float) -> list[Any]:
        marks["range"] = time.process_time()
        return range_result(matrix, url)

    clock = ManualClock()
    src = PrometheusSource("http://prom:9090", interval=5.0, clock=clock, fetch=fetch)
    src.own = OwnSeries(src, fetch_range=fetch_range, wall=lambda: end)
    src.state = fabric_state(Config(hosts=[], interval=5.0), clock=clock)
    c0 = time.process_time()
    asyncio.run(src.poll_once())
    first = time.process_time() - c0
    assert src.own.backfilled is not None and len(src.state.hosts) == len(stamps)
    return first, marks["after"] - marks["range"]


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
    first, backfill = start(results, stamps)
    print(
        f"{n} hosts: {len(results)} series ({len(results) / n:.0f} per host); read "
        f"{read_s * 1000:.0f} ms, a whole refresh (read, rates, history, findings) "
        f"{refresh * 1000:.0f} ms CPU; first full screen {first:.1f} s CPU, of which the "
        f"hour's backfill ({steps} steps of {3600 / steps:.0f} s, JSON included) {backfill:.1f} s"
    )


if __name__ == "__main__":
    for n in [int(a) for a in sys.argv[1:]] or [64, 256]:
        run(n)
