"""TUI cost: one overview refresh at 512 and 1000 links, the dashboard's CPU share at 1 Hz
with 64 hosts x 8 rails on every screen, and the memory of 24 h of history for 128 links.

    python benchmarks/tui_refresh.py [--base DIR_OR_GIT_REF]

The big demo fabric (``--demo --demo-hosts N``: 8 RoCE rails a host, the demo's episodes)
is fed through the live path for a few simulated seconds; the dashboard is driven headless by
Textual's test harness. A refresh is one tick as live: the state moves one second
(feeding is the collector's cost, left out), then the visible screen syncs and Textual
lays out and paints the change. Its cost is process CPU time (the harness's idle sleeps
and the other users of a shared machine are out); each figure is the median of many
ticks, with p95, the worst tick and the garbage collector's longest pause beside it.

- overview refresh at 64 x 8 (512 links) and 125 x 8 (1000 links), 200x50, healthy links
  folded (the default past 64 links) and unfolded (``z``: every link a row);
- the 1 Hz share at 64 x 8, each screen (keys 1..7) open, at 80x24 and 200x50: the CPU
  of one tick is the share of one core at one tick a second.

Goals (DESIGN §8): a refresh of 1000 links <= 20 ms, the dashboard <= 5 % of a core.
With ``--base``, the same measurements run on another checkout too (a directory, or a git
ref unpacked into a temporary one) and both columns print side by side with the ratio.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The tree measured: this checkout, or the one the parent run names (--base).
ROOT = Path(os.environ.get("FABTOP_BENCH_TREE") or HERE.parent)
sys.path.insert(0, str(ROOT))

WARMUP_S = 6.0  # the sparklines' five seconds, and one more
TICKS = 10  # measured ticks per overview figure (after two unmeasured ones)
SCREEN_TICKS = 5  # per screen and size
SIZES = ((80, 24), (200, 50))
SCREENS = "1234567"


def _fabric_state(hosts: int):  # type: ignore[no-untyped-def]
    from fabtop.run.demo import demo_state
    from fabtop.sim.fabric import big_fabric

    fab = big_fabric(hosts)
    state, clock, _ = demo_state(WARMUP_S, fabric=fab, history_s=WARMUP_S)
    return fab, state, clock


class _GcPauses:
    """The garbage collector's pauses while measuring (gc.callbacks)."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._t = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._t)


async def _painted(app) -> None:  # type: ignore[no-untyped-def]
    """Return once Textual has handled the tick's messages and painted the change.

    As ``pilot.pause()`` does, less its first step: a message through the queue of every
    widget on the screen and back (about 60 on the overview), which cost 2.4 ms a tick on
    this machine with nothing to paint. That is the test harness's cost; the dashboard's
    own tick sends no such messages. (Textual's private helpers, as the Pilot uses them.)"""
    from textual._wait import wait_for_idle

    await wait_for_idle(0)  # until the process is idle: every message handled
    app.screen._on_timer_update()  # the paint, if the screen's timer has not done it


async def _ticks(pilot, app, fab, state, clock, t: float, n: int):  # type: ignore[no-untyped-def]
    """CPU per tick over ``n`` ticks after two unmeasured ones; returns (cpu list, t).

    A tick is the live tick's work: the hosts' liveness, then one refresh. The app's own
    1 s timer is paused: the harness's ticks take about a second of wall time each, so the
    timer's refresh (deferred by the refresh gap) would land inside the next measured tick
    and count two refreshes in every other one (stop 37's figures did)."""
    from fabtop.run.demo import feed_until

    ticker = getattr(app, "ticker", None)
    # A tree from before the ticker was public (--base): its app's own timers, all paused.
    for timer in [ticker] if ticker is not None else list(app._timers):
        timer.pause()
    cpu: list[float] = []
    for i in range(n + 2):
        t += 1.0
        feed_until(fab, state, clock, t, t)
        c = time.process_time()
        state.refresh_liveness(app.ctx.now())
        app.refresh_now()
        await _painted(app)  # Textual's layout and paint of the change
        if i >= 2:
            cpu.append(time.process_time() - c)
    return cpu, t


def _stats(cpu: list[float]) -> dict[str, float]:
    s = sorted(cpu)
    return {
        "median": statistics.median(s) * 1e3,
        "p95": s[max(0, int(len(s) * 0.95) - 1)] * 1e3,
        "max": s[-1] * 1e3,
    }


async def measure() -> dict[str, dict[str, float]]:
    """Every figure of this tree, in ms of CPU per tick."""
    from tui.app import FabtopApp
    from tui.context import ViewContext

    try:  # as the dashboard's own runs do (a base tree may not have it)
        from tui.app import refreezing

        refreezing()
    except ImportError:
        pass
    out: dict[str, dict[str, float]] = {}
    gcp = _GcPauses()
    gc.callbacks.append(gcp)
    for hosts in (64, 125):
        fab, state, clock = _fabric_state(hosts)
        app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
        t = WARMUP_S
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause()
            for fold in (True, False):
                # Folded: how 1000 links start (by host, healthy links folded); else 'z',
                # every group open: every link a row.
                app.screen.all_view = None if fold else "open"  # type: ignore[attr-defined]
                app.screen.views.clear()  # type: ignore[attr-defined]
                gcp.pauses.clear()
                cpu, t = await _ticks(pilot, app, fab, state, clock, t, TICKS)
                name = f"overview {hosts}x8 {'folded' if fold else 'every link'}"
                out[name] = _stats(cpu) | {"gc": max(gcp.pauses, default=0.0) * 1e3}
    fab, state, clock = _fabric_state(64)
    t = WARMUP_S
    for size in SIZES:
        app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            for key in SCREENS:
                await pilot.press(key)
                await pilot.pause()
                cpu, t = await _ticks(pilot, app, fab, state, clock, t, SCREEN_TICKS)
                out[f"1 Hz 64x8 screen {key} {size[0]}x{size[1]}"] = _stats(cpu)
            # Between ticks: the app's own timers, nothing new to show.
            c, w = time.process_time(), time.perf_counter()
            await asyncio.sleep(2.0)
            idle = (time.process_time() - c) / (time.perf_counter() - w)
            out[f"idle between ticks {size[0]}x{size[1]}"] = {"median": idle * 1e3}
    gc.callbacks.remove(gcp)
    return out


def _run_tree(tree: Path) -> dict[str, dict[str, float]]:
    env = dict(os.environ, FABTOP_BENCH_TREE=str(tree))
    r = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    return json.loads(r.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _unpack(ref: str, into: Path) -> Path:
    """A git ref of this repository unpacked (git archive) into ``into``."""
    data = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", ref], capture_output=True, check=True
    ).stdout
    tar = into / "tree.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as tf:
        tf.extractall(into, filter="data")
    return into


def _line(name: str, new: dict[str, float], old: dict[str, float] | None) -> str:
    if name.startswith("idle"):
        fig = f"{new['median'] / 10:5.2f} % of a core"
        if old is not None:
            fig += f"   (base {old['median'] / 10:5.2f} %)"
        return f"{name:<38} {fig}"
    fig = f"{new['median']:6.1f} ms (p95 {new['p95']:6.1f}, max {new['max']:6.1f}"
    fig += f", gc {new['gc']:5.1f})" if "gc" in new else ")"
    if name.startswith("1 Hz"):
        fig += f" = {new['median'] / 10:4.1f} %"
    if old is not None:
        fig += f"   base {old['median']:6.1f} ms   x{new['median'] / old['median']:.2f}"
    return f"{name:<38} {fig}"


def report(new: dict[str, dict[str, float]], old: dict[str, dict[str, float]] | None) -> None:
    print(
        f"CPU per tick, median of {TICKS} (1 Hz: {SCREEN_TICKS}) ticks; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for name, fig in new.items():
        print(_line(name, fig, old.get(name) if old else None))
    big = new["overview 125x8 every link"]["median"]
    share = max(v["median"] for k, v in new.items() if k.startswith("1 Hz")) / 10
    print(
        f"goals: refresh of 1000 links {big:.1f} ms (<= 20: {'ok' if big <= 20 else 'OVER'}); "
        f"worst screen at 1 Hz {share:.1f} % (<= 5: {'ok' if share <= 5 else 'OVER'})"
    )


def history_memory(links: int = 128) -> None:
    """Print the bytes and RSS growth of 24 h of RoCE link series (first: a fresh heap)."""
    from history_memory import estimate_24h  # this folder: a script's first path

    nbytes, rss = estimate_24h(links)
    print(
        f"history, 24 h x {links} RoCE links: {nbytes / 1e6:.1f} MB held, "
        f"RSS +{rss / 1e6:.1f} MB "
        f"(goal <= 150 MB: {'ok' if max(nbytes, rss) <= 150e6 else 'OVER'})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="another checkout (a directory or a git ref) beside this one")
    ap.add_argument("--json", action="store_true", help="print this tree's figures as JSON")
    args = ap.parse_args()
    if args.json:
        print(json.dumps(asyncio.run(measure())))
        return
    sys.path.insert(0, str(HERE))
    history_memory()
    if not args.base:
        report(asyncio.run(measure()), None)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.base)
        base = base if base.is_dir() else _unpack(args.base, Path(tmp))
        old = _run_tree(base)
    report(_run_tree(ROOT), old)


if __name__ == "__main__":
    main()
