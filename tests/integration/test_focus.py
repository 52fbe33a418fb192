"""Focus mode: a second, 250 ms probe stream on one port beside the normal one.

What a user relies on is the cadence (about four samples a second, no long holes) and
that each rate is per second of the interval actually measured. A loaded machine delays
single ticks, so no gap is expected to be exactly 250 ms.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from collectors.samples import HostSample
from collectors.transport.local import LocalTransport
from fabtop.config import Config, HostConfig
from fabtop.core.rates import HostRates
from fabtop.core.state import FabricState
from fabtop.run.focus import FOCUS_INTERVAL_MS, FocusSession
from fabtop.run.session import Session
from fabtop.sim import Fabric, demo_hosts
from fabtop.sim.transport import sim_transports
from tests.stepped import run_ticks

FOCUS_S = FOCUS_INTERVAL_MS / 1000
# The median gap may drift this far from 250 ms (a 1 Hz or a 2 Hz stream is far outside).
MEDIAN_TOLERANCE_S = 0.05
# Longest single gap accepted: three ticks late on a loaded machine, still not a stall.
MAX_GAP_S = 1.0


async def _wait_points(fs: FocusSession, n: int, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while len(fs.points) < n:
            await asyncio.sleep(0.02)


def assert_focus_cadence(gaps: Sequence[float | None]) -> None:
    """About 4 Hz: median gap near 250 ms, every gap positive and none beyond MAX_GAP_S."""
    assert len(gaps) >= 4, gaps
    assert all(g is not None and 0 < g <= MAX_GAP_S for g in gaps), gaps
    median = statistics.median(g for g in gaps if g is not None)
    assert abs(median - FOCUS_S) <= MEDIAN_TOLERANCE_S, (median, gaps)


@pytest.mark.parametrize(
    "gaps",
    [
        [1.0] * 8,  # the main stream's 1 Hz, not focus
        [0.5] * 8,  # every other tick lost
        [0.25, 0.25, 2.0, 0.25, 0.25, 0.25],  # a 2 s hole
        [0.25, 0.25, None, 0.25, 0.25],  # a sample without an interval
        [0.25, 0.25],  # too few to tell
    ],
)
def test_the_cadence_check_refuses_what_is_not_4_hz(gaps: list[float | None]) -> None:
    with pytest.raises(AssertionError):
        assert_focus_cadence(gaps)


def test_the_cadence_check_accepts_late_ticks() -> None:
    assert_focus_cadence([0.25, 0.31, 0.19, 0.25, 0.5, 0.25, 0.26, 0.24])


@contextmanager
def _udp_on_lo() -> Iterator[None]:
    """Datagrams to 127.0.0.1 until the block ends, so lo's byte counters move."""
    stop = threading.Event()
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send() -> None:
        while not stop.wait(0.005):
            tx.sendto(b"x" * 1000, rx.getsockname())

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(2.0)
        tx.close()
        rx.close()


async def test_focus_on_local_lo_samples_at_4_hz_with_rates_over_the_measured_dt() -> None:
    fs = FocusSession("local", "lo", LocalTransport("local"))
    samples: dict[int, HostSample] = {}
    apply_sample = fs.pipeline.apply_sample

    def keep(sample: HostSample, arrived_unix: float | None = None) -> HostRates:
        samples[sample.clock_ns] = sample
        return apply_sample(sample, arrived_unix)

    fs.pipeline.apply_sample = keep  # type: ignore[method-assign]
    with _udp_on_lo():
        fs.start()
        try:
            await _wait_points(fs, 8, 12.0)
        finally:
            await fs.aclose()
    points = list(fs.points)
    assert_focus_cadence([p.dt for p in points])
    # lo has no pause counters, but its byte rates come through the focus engine,
    # each one the counter's delta over the remote seconds between its two reads (the
    # fast probe stamps each read; the frames' interval is the sh probe's stamp)
    by_t = {ns / 1e9: s for ns, s in samples.items()}
    clocks = sorted(samples)
    moved = 0
    for p in points:
        cur = by_t[p.t]
        prev = samples[clocks[clocks.index(cur.clock_ns) - 1]]
        assert p.dt == pytest.approx((cur.clock_ns - prev.clock_ns) / 1e9, abs=1e-6)
        lid = next(lid for lid, link in cur.links.items() if link.netdev == "lo")
        cur_rx = cur.links[lid].metrics["rx_bytes"]
        p_rx = prev.links[lid].metrics["rx_bytes"]
        assert isinstance(cur_rx, int) and isinstance(p_rx, int)
        read_s = (cur.links[lid].read_ns - prev.links[lid].read_ns) / 1e9  # type: ignore[operator]
        assert read_s == pytest.approx(p.dt, rel=0.5)
        assert p.rates["rx_bytes_per_s"] == pytest.approx((cur_rx - p_rx) / read_s, rel=1e-9)
        moved += cur_rx > p_rx
    assert moved >= len(points) // 2  # the datagrams moved the counter: the check means something
    assert fs.status.state == "stopped"


async def test_focus_beside_the_main_stream_in_the_demo_shows_the_storm() -> None:
    hosts = demo_hosts()
    fab = Fabric.single(hosts, "pfc_storm", start_s=0.0)
    cfg = Config(hosts=[HostConfig(name=h.name) for h in hosts], interval=1.0)
    state = FabricState(cfg.hosts)
    # Simulated time moves one focus tick (250 ms) at a time, each taken by every stream
    # before the next: the same ticks however busy the machine is, never slept for.
    sims = sim_transports(fab, stepped=True)
    clock = next(iter(sims.values())).clock
    session = Session(cfg, state, transports=dict(sims))
    run = asyncio.create_task(session.run())
    try:
        await run_ticks(clock, len(sims), 4, step=FOCUS_S)
        fs = session.focus("node3", "enp65s0f0np0")
        await run_ticks(clock, len(sims) + 1, 12, step=FOCUS_S)  # the focus stream too
        assert len(fs.points) >= 8
        main_frames = state.hosts["node3"].frames
        session.unfocus()
        assert session.focused is None
        n = len(fs.points)
        await run_ticks(clock, len(sims), 8, step=FOCUS_S)  # 2 s without the focus stream
        # the main stream kept going at its own pace, on its own baselines
        assert state.hosts["node3"].frames >= main_frames + 2
        assert state.hosts["node3"].status == "up"
        assert len(fs.points) == n  # stopping focus closed the stream
    finally:
        await session.stop()
        run.cancel()
    # simulated time, stepped: every tick was sampled, each gap is one 250 ms tick
    gaps = [p.dt for p in fs.points]
    assert_focus_cadence(gaps)
    assert all(g is not None and abs(g - FOCUS_S) < 1e-6 for g in gaps), gaps
    last = fs.points[-1].rates
    tx = last["tx_pause_time_ratio"]
    assert isinstance(tx, dict) and tx[3] > 0.99  # node3 is the stuck receiver on prio 3
