"""The exporter's own text exposition (fabtop/run/exposition.py) reads as prometheus-client's.

Prometheus must see the same series from fabtop's writer as from ``generate_latest``: both
are parsed (prometheus-client's parser) and compared family by family, on the demo
fabric's scrape and on hostile label values and non-finite numbers; ``promtool check
metrics`` accepts both. The served body (export.py's ``_Body``) is collected once for a
burst of scrapes and written out while the loop goes on.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from fabtop.run import export, exposition
from fabtop.run.demo import demo_state
from fabtop.run.export import _Body, registry_for
from tests.conftest import skip_or_fail

HOSTILE = [
    'say "hi"',
    "back\\slash",
    "new\nline",
    "trailing\\",
    '\\"',
    "\\n (the two characters)",
    "ünïcödé 节点 🚀",
    "",
    "%s %d {x} ,=}",
    "tab\there",
]
VALUES = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e20, 12345678.9, 2.0**64, -3, 7]


class _Hostile(Collector):
    def collect(self) -> Iterator[Metric]:
        g = GaugeMetricFamily(
            "fabtop_test_temperature_celsius",
            'help with \\ and "quotes"\nand a newline',
            labels=["host", "x"],
        )
        for i, v in enumerate(HOSTILE):
            g.add_metric([f"h{i}", v], VALUES[i % len(VALUES)])
        c = CounterMetricFamily("fabtop_test_events", "events", labels=["host"])
        for i, v in enumerate(VALUES):
            c.add_metric([f"node{i}"], abs(v))
        c.add_metric(["at"], 3.0, timestamp=1700000000.5)
        info = InfoMetricFamily("fabtop_test_build", "build", labels=["host"])
        info.add_metric(["a"], {"version": HOSTILE[0], "note": HOSTILE[2]})
        yield g
        yield c
        yield info
        yield GaugeMetricFamily("fabtop_test_plain", "no labels", value=float("inf"))
        yield UnknownMetricFamily("fabtop_test_other", "of no type", value=-1.5)


def _parsed(text: bytes) -> list[tuple[str, str, str, list[tuple[object, ...]]]]:
    return [
        (
            f.name,
            f.type,
            f.documentation,
            [(s.name, s.labels, repr(float(s.value)), s.timestamp) for s in f.samples],
        )
        for f in text_string_to_metric_families(text.decode())
    ]


def _ours(reg: Collector) -> bytes:
    return exposition.render(exposition.families_of(reg))


def _promtool_accepts(text: bytes) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
        return
    run = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()


@pytest.fixture(scope="module")
def demo_registry() -> CollectorRegistry:
    state, _, _ = demo_state(until_s=60.0, history_s=20.0)  # findings: the PFC storm at 60 s
    return registry_for(state, "a")


def test_the_demo_scrape_reads_as_generate_latest(demo_registry: CollectorRegistry) -> None:
    ours = _ours(demo_registry)
    theirs = generate_latest(demo_registry)
    assert _parsed(ours) == _parsed(theirs)
    assert ours == theirs  # the same bytes, even: labels sorted, numbers as it writes them
    assert {f.name for f in text_string_to_metric_families(ours.decode())} >= {
        "fabtop_host_up",
        "fabtop_finding",
        "fabtop_link_info",
    }
    _promtool_accepts(ours)


def test_hostile_labels_and_non_finite_values_read_the_same() -> None:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Hostile())
    ours = _ours(reg)
    parsed = _parsed(ours)
    assert parsed == _parsed(generate_latest(reg))
    assert ours == generate_latest(reg)
    gauge = next(f for f in parsed if f[0] == "fabtop_test_temperature_celsius")
    assert [s[1]["x"] for s in gauge[3]] == HOSTILE  # every value back, byte for byte
    assert {s[2] for s in gauge[3]} >= {"nan", "inf", "-inf"}
    _promtool_accepts(ours)


class _Counting(Collector):
    def __init__(self, series: int) -> None:
        self.calls, self.series = 0, series

    def collect(self) -> Iterator[Metric]:
        self.calls += 1
        g = GaugeMetricFamily("fabtop_test_series", "many", labels=["host", "link"])
        for i in range(self.series):
            g.add_metric([f"node{i % 256}", f"mlx5_{i}"], float(i))
        yield g


async def test_a_burst_of_scrapes_shares_one_collection_and_the_loop_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = _Counting(20_000)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(counting)
    body = _Body(reg, max_age_s=60.0)
    ticks = 0
    seen: list[int] = []
    real = exposition.render

    def render(families: list[Metric]) -> bytes:
        out = real(families)
        start, end = ticks, time.monotonic() + 10  # (a bound, not a wait: the loop ticks)
        while ticks == start and time.monotonic() < end:
            time.sleep(0.001)
        seen.append(ticks - start)
        return out

    monkeypatch.setattr(export, "render", render)

    async def loop_work() -> None:  # the session's other work: reading its hosts
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(loop_work())
    gave_up = asyncio.create_task(body.get())  # a scrape whose deadline passes
    await asyncio.sleep(0)
    gave_up.cancel()
    bodies = await asyncio.gather(*(body.get() for _ in range(50)))
    ticker.cancel()
    assert seen and seen[0] > 0  # the loop went on while the body was written
    assert counting.calls == 1
    assert len(set(bodies)) == 1 and bodies[0].count(b"\nfabtop_test_series{") == 20_000
    assert await body.get() is bodies[0]  # fresh: no new collection
    assert counting.calls == 1
