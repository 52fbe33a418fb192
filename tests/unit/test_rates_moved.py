"""Rate engine, the usual tick after a common one: only the metrics that moved are looked at.

fabtop.core.rates._moved_rates takes the int counters that are last tick's very objects as
not moved (rate 0) and judges the rest as _plain_rates does. These tests hold it to the
answers of the engine without it, on real captures with faults of every kind thrown in,
with unchanged values kept as the same objects (what the decoder does) and made anew.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from collectors.numbers import U32_MAX, U64_MAX
from collectors.samples import HostSample, LinkSample
from fabtop.core import rates as rates_module
from fabtop.core.rates import RateEngine
from tests.unit.test_rates_plain import faulty_frames, mlx4_ib, mlx5, seen

__all__ = ["mlx4_ib", "mlx5"]  # fixtures


def _fresh(v: Any) -> Any:
    """The same value as another object (as a parser gives it each read)."""
    if isinstance(v, dict):
        return {p: _fresh(x) for p, x in v.items()}
    return int(str(v))


def jiggled(frames: list[HostSample], seed: int, fresh: bool) -> list[HostSample]:
    """The frames with small counts added to some metrics (a running offset per metric
    and priority), now and then a metric read at all-ones or a step down, and, ``fresh``,
    every value made anew."""
    rng = random.Random(seed)
    offsets: dict[tuple[str, str, int], int] = {}

    def moved(lid: str, name: str, prio: int, v: int) -> int:
        key = (lid, name, prio)
        roll = rng.randrange(400)
        if roll < 60:
            offsets[key] = offsets.get(key, 0) + rng.choice([1, 2, 7, 100, 1000])
        elif roll < 63:
            return rng.choice([U32_MAX, U32_MAX, U64_MAX])  # this read only
        elif roll == 63:
            offsets[key] = offsets.get(key, 0) - 50  # a step down (a reset, if below)
        off = offsets.get(key, 0)
        return v if not off else max(0, v + off)

    out = []
    for f in frames:
        links = {}
        for lid, link in f.links.items():
            metrics: dict[str, Any] = {}
            for k, v in link.metrics.items():
                if isinstance(v, dict):
                    v = {p: moved(lid, k, p, x) for p, x in v.items()}
                elif isinstance(v, int):
                    v = moved(lid, k, -1, v)
                metrics[k] = _fresh(v) if fresh else v
            links[lid] = LinkSample(
                id=link.id,
                netdev=link.netdev,
                rdma_device=link.rdma_device,
                port=link.port,
                driver=link.driver,
                rate_gbps=link.rate_gbps,
                physical=link.physical,
                kind=link.kind,
                counters=link.counters,
                metrics=metrics,
                saturated=link.saturated,
            )
        out.append(
            HostSample(
                host=f.host, seq=f.seq, clock_ns=f.clock_ns, uptime_s=f.uptime_s, links=links
            )
        )
    return out


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_the_moved_metrics_give_what_every_metric_gives(
    seed: int,
    fresh: bool,
    mlx5: dict[str, int],
    mlx4_ib: dict[str, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frames = jiggled(faulty_frames(seed, mlx5, mlx4_ib, ticks=80), seed, fresh)
    made = 0
    moved = rates_module._moved_rates

    def counted(*args: Any) -> Any:
        nonlocal made
        got = moved(*args)
        made += got is not None
        return got

    monkeypatch.setattr(rates_module, "_moved_rates", counted)
    eng = RateEngine()
    fast = [seen(eng.update(f)) for f in frames]
    assert made > len(frames) // 4  # the usual tick was common (two ports, one fault in 4 ticks)

    # Without it, a tick after a common one takes _plain_rates' look at every metric.
    monkeypatch.setattr(rates_module, "_moved_rates", lambda *args: None)
    eng = RateEngine()
    every = [seen(eng.update(f)) for f in frames]
    assert fast == every


@pytest.mark.parametrize("seed", range(6))
def test_last_ticks_tables_kept_give_what_tables_made_anew_give(
    seed: int, mlx5: dict[str, int], mlx4_ib: dict[str, int]
) -> None:
    """A link's shape, kept (and taken over) from tick to tick, changes no answer."""
    frames = jiggled(faulty_frames(seed, mlx5, mlx4_ib, ticks=80), seed, False)
    eng = RateEngine()
    kept = [seen(eng.update(f)) for f in frames]
    eng = RateEngine()
    anew = []
    for f in frames:
        for base in eng._base.values():
            base.shapes.clear()  # every tick compares names, types and values from scratch
        anew.append(seen(eng.update(f)))
    assert kept == anew
