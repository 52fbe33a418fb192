"""TUI cost: one overview refresh with 128 links, the UI's CPU share at 1 Hz with 64 hosts,
and the memory of 24 h of history for 128 links.

    python benchmarks/tui_refresh.py

64 simulated hosts with 2 RoCE ports each (128 links, lo/eno1 hidden as in the
dashboard) are fed through the live path; the overview is driven headless by
Textual's test harness. A refresh's cost is the CPU time of building the rows and
painting the change: the harness's wall time also holds its idle-detection sleeps
(about 20 ms a pause, printed). Prints figures (goals: refresh <= 50 ms, history
<= 150 MB); asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from history_memory import estimate_24h  # this folder: a script's first path

from fabtop.run.demo import demo_state, feed_until
from fabtop.sim.episodes import DEMO_CYCLE, DEMO_CYCLE_S
from fabtop.sim.fabric import Fabric
from fabtop.sim.host import SimHostConfig
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.overview import OverviewScreen

HOSTS = 64
WARMUP_S = 20.0


def fabric() -> Fabric:
    """64 hosts, 2 RoCE ports each, the demo's episodes on the first four names."""
    cfgs = [SimHostConfig(f"node{i + 1}", gpus=8) for i in range(HOSTS)]
    return Fabric(cfgs, DEMO_CYCLE, cycle_s=DEMO_CYCLE_S, seed=0)


def history_memory(links: int = 128) -> None:
    """Print the bytes and RSS growth of 24 h of RoCE link series (first: a fresh heap)."""
    nbytes, rss = estimate_24h(links)
    print(
        f"history, 24 h x {links} RoCE links: {nbytes / 1e6:.1f} MB held, "
        f"RSS +{rss / 1e6:.1f} MB "
        f"(goal <= 150 MB: {'ok' if max(nbytes, rss) <= 150e6 else 'OVER'})"
    )


async def run() -> None:
    t0 = time.perf_counter()
    fab = fabric()
    state, clock, _ = demo_state(WARMUP_S, fabric=fab, history_s=WARMUP_S)
    feed_s = time.perf_counter() - t0
    frames = sum(h.frames for h in state.hosts.values())
    links = sum(
        1
        for h in state.hosts.values()
        if h.sample
        for lk in h.sample.links.values()
        if lk.kind != "virtual" and lk.netdev != "lo"
    )
    print(
        f"fed {frames} frames from {HOSTS} hosts in {feed_s:.2f} s "
        f"({feed_s / frames * 1e3:.2f} ms per host-frame, collector side)"
    )

    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        rows = len(screen.query_one("#links").rows)  # type: ignore[attr-defined]
        print(f"overview shows {rows} link rows ({links} non-virtual links)")

        # Textual's harness itself costs a few ms per pause; measure it to subtract by eye.
        idle = []
        for _ in range(5):
            s = time.perf_counter()
            await pilot.pause()
            idle.append(time.perf_counter() - s)
        print(f"harness overhead per pause (no change): {statistics.median(idle) * 1e3:.1f} ms")
        # One refresh = sync every panel from the state after a new tick, as live.
        times, cpu, build = [], [], []
        t = WARMUP_S
        for _ in range(20):
            t += 1.0
            feed_until(fab, state, clock, t, t)
            c = time.process_time()
            s = time.perf_counter()
            app.refresh_now()  # also resets the app's throttle, so its 1 s ticker stays out
            build.append(time.perf_counter() - s)
            await pilot.pause()  # includes Textual's layout and paint of the change
            times.append(time.perf_counter() - s)
            cpu.append(time.process_time() - c)

        def p95(xs: list[float]) -> float:
            return sorted(xs)[int(len(xs) * 0.95) - 1] * 1e3

        med = statistics.median(cpu) * 1e3
        print(
            f"overview refresh, rows built and synced: median "
            f"{statistics.median(build) * 1e3:.1f} ms, p95 {p95(build):.1f} ms"
        )
        print(
            f"overview refresh incl. paint, CPU: median {med:.1f} ms, p95 {p95(cpu):.1f} ms "
            f"(goal <= 50 ms: {'ok' if med <= 50 else 'OVER'})"
        )
        print(
            f"overview refresh incl. paint and the harness's idle wait, wall: median "
            f"{statistics.median(times) * 1e3:.1f} ms, p95 {p95(times):.1f} ms"
        )

        # CPU share of the UI at 1 Hz: refresh once per simulated second for 10 s of
        # wall time, feeding excluded (that is the collector's cost, measured above).
        ui_cpu = 0.0
        wall0 = time.perf_counter()
        for _ in range(10):
            t += 1.0
            feed_until(fab, state, clock, t, t)
            c0 = time.process_time()
            app.refresh_now()
            await pilot.pause()
            ui_cpu += time.process_time() - c0
            await asyncio.sleep(max(0.0, 1.0 - (time.process_time() - c0)))
        wall = time.perf_counter() - wall0
        print(f"UI CPU at 1 Hz with {HOSTS} hosts: {ui_cpu / wall * 100:.1f}% of one core")


if __name__ == "__main__":
    history_memory()
    asyncio.run(run())
