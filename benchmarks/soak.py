"""Soak: RSS of a collecting session over an hour must stay flat (prints, never asserts).

Not in CI and not in `make bench` (it runs for --minutes). Collects the built-in demo
fabric (its hosts emit real probe frames through the same Session/FabricState/History/
rules as the dashboard), or real hosts with -c FILE, and prints RSS once a minute plus
the growth over the second half of the run (after the 15-min raw ring has filled).
See docs/SOAK.md.

    .venv/bin/python benchmarks/soak.py [--minutes 60] [-c fabtop.toml] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fabtop.config import load_config  # noqa: E402
from fabtop.run.compose import open_session  # noqa: E402
from fabtop.run.demo import demo_config  # noqa: E402


def rss_mb() -> float:
    """Resident set size of this process (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def soak(minutes: float, config_path: str | None, interval: float) -> None:
    """Collect for ``minutes``, printing RSS every minute."""
    config = load_config(config_path, interval) if config_path else demo_config(interval)
    session = open_session(config)
    state = session.state
    task = asyncio.create_task(session.run())
    start = time.monotonic()
    points: list[tuple[float, float]] = []
    try:
        while (elapsed := time.monotonic() - start) < minutes * 60:
            points.append((elapsed / 60, rss_mb()))
            frames = sum(h.frames for h in state.hosts.values())
            print(
                f"{elapsed / 60:6.1f} min  rss {points[-1][1]:7.1f} MB  frames {frames}  "
                f"history {state.history.nbytes / 1e6:6.1f} MB",
                flush=True,
            )
            await asyncio.sleep(min(60.0, max(1.0, minutes * 60 - elapsed)))
        points.append(((time.monotonic() - start) / 60, rss_mb()))
    finally:
        await session.stop()
        task.cancel()
    half = [p for p in points if p[0] >= points[-1][0] / 2]
    growth = half[-1][1] - half[0][1]
    print(
        f"soak {points[-1][0]:.0f} min: rss {points[0][1]:.1f} -> {points[-1][1]:.1f} MB; "
        f"second half grew {growth:+.1f} MB "
        f"({growth / max(1e-9, half[-1][0] - half[0][0]) * 60:+.2f} MB/h)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("-c", "--config", default=None)
    p.add_argument("--interval", type=float, default=1.0)
    ns = p.parse_args()
    asyncio.run(soak(ns.minutes, ns.config, ns.interval))


if __name__ == "__main__":
    main()
