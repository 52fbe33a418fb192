"""The storm-latency simulation (benchmarks/storm_detection.py) itself: its counters are
what mlx5 counts, and the real watchdog it drives meets the issue's bounds."""

from __future__ import annotations

import importlib.util
import random
import sys
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    name = "storm_detection_bench"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "storm_detection.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


sd = _bench()


def _latency(run: object, t0: float) -> float:
    named = getattr(run, "named_at", None)
    return float("inf") if named is None else named - t0


@pytest.fixture(scope="module")
def frames() -> list[bytes]:
    from fabtop.sim import Fabric, SimHostConfig

    fab = Fabric([SimHostConfig(sd.HOST, roce_ports=2), SimHostConfig("n2")])
    return [fab.hosts[sd.HOST].frame(30.0 + i, 1.0).encode() for i in range(3)]


def test_the_simulated_counters_are_exact_monotonic_integers() -> None:
    ln = sd.lane("incast", 2.0, 3.0, random.Random(1))
    got = [ln.at(i / 1000) for i in range(3001)]
    assert all(isinstance(p, int) and isinstance(b, int) for p, b in got)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in pairwise(got))
    # From t0 on: paused 99.5 % of the time (microseconds), the bytes flat.
    (p0, b0), (p1, b1) = ln.at(2.0), ln.at(2.5)
    assert p1 - p0 == pytest.approx(0.995 * 500_000, abs=1) and b1 == b0


@pytest.mark.parametrize("pre", ["quiet", "incast"])
def test_with_instant_reads_every_storm_is_named_within_the_bound(
    pre: str, frames: list[bytes]
) -> None:
    case = sd.storms(1.0, pre, 8, frames, 0.0, random.Random(2))
    lat = [_latency(r, t0) for r, t0 in zip(case.runs, case.starts, strict=True)]
    assert max(lat) <= case.bound_s
    assert sum(r.early for r in case.runs) == 0


def test_healthy_incast_alone_never_names_a_storm(frames: list[bytes]) -> None:
    r = sd.simulate(1.0, "incast", float("inf"), 60.0, "tx", frames, 0.005, random.Random(3))
    assert len(r.reads) > 500  # fast-sampled all along
    assert r.storms == 0 and r.named_critical == 0


def test_a_storm_on_a_fast_sampled_port_is_named_within_250_ms_despite_read_time(
    frames: list[bytes],
) -> None:
    case = sd.storms(1.0, "incast", 30, frames, 0.005, random.Random(4))
    lat = [_latency(r, t0) for r, t0 in zip(case.runs, case.starts, strict=True)]
    assert max(lat) <= sd.BOUND_S
    assert sum(r.clears for r in case.runs) == 0  # and it is not cleared while it holds
