"""Render every screen from the demo at a fixed seed and moment to SVG (``make screenshots``).

    python tui/screenshots.py [OUTDIR]

The simulation is stepped by hand to a moment inside the PFC storm episode, so the
pictures show findings, pauses and a stuck receiver, and are the same on every run.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.pilot import Pilot

from fabtop.commands.fabtest import Bench, report_json
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.fabtest.judge import Bandwidth, judge_bandwidth, reference_rate
from fabtop.fabtest.runner import Options, Report, StepResult
from fabtop.run.compose import open_session
from fabtop.run.demo import ManualClock, demo_config, demo_state, feed_until
from fabtop.sim.episodes import DEFAULT_TARGET, Episode
from fabtop.sim.fabric import Fabric, big_hosts, big_target
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.test import TestScreen, planned
from tui.widgets.link_table import LinkTable

SEED = 0
MOMENT_S = 60.0  # inside the PFC storm on node3 (demo cycle: storm from 45 s to 70 s)


def make_app(moment_s: float = MOMENT_S, seed: int = SEED) -> FabtopApp:
    """The dashboard over the demo state at ``moment_s`` (no session, frozen clock)."""
    state, clock, _ = demo_state(moment_s, seed=seed)
    return FabtopApp(ViewContext(state, interval=1.0, clock=clock))


BIG_HOSTS = 64  # --demo --demo-hosts 64: 64 hosts x 8 rails and a management port each


@functools.cache
def big_state() -> tuple[FabricState, ManualClock]:
    """The 64 x 8 demo with a PFC storm and a link down at once (the demo's cycle has
    them a minute apart), a few seconds in: the rules once per tick, as a session runs
    them (once per frame is 64 times the work)."""
    hosts = big_hosts(BIG_HOSTS)
    names = [h.name for h in hosts]
    # on the hosts and ports the live demo's cycle puts them (node33's storm, node17's flap)
    faults = [
        Episode(kind, 0.0, 1e9, big_target(DEFAULT_TARGET[kind][0], names), DEFAULT_TARGET[kind][1])
        for kind in ("pfc_storm", "link_flap")  # the flap's port is down from 8 s to 12 s
    ]
    fab = Fabric(hosts, faults, seed=SEED)
    clock = ManualClock()
    state = FabricState(
        [HostConfig(name=n) for n in fab.hosts], rules=make_evaluator(), clock=clock
    )
    state.evaluate_per_frame = False
    for t in (8.0, 9.0, 10.0):
        feed_until(fab, state, clock, t, t)
        state.evaluate()
    return state, clock


def make_big_app() -> FabtopApp:
    """The dashboard over :func:`big_state` (shared: nothing here changes the state)."""
    state, clock = big_state()
    return FabtopApp(ViewContext(state, interval=1.0, clock=clock))


@dataclass(frozen=True)
class Shot:
    """One picture: file name, terminal size and the keys that lead to the screen."""

    name: str
    size: tuple[int, int]
    keys: tuple[str, ...] = ()
    before: Callable[[FabtopApp, Pilot[int]], Awaitable[None]] | None = field(default=None)
    make: Callable[[], FabtopApp] = make_app
    tested: bool = True  # also an SVG snapshot test (each costs CI about 3 s)


async def _to_storm_link(app: FabtopApp, pilot: Pilot[int]) -> None:
    # Put the cursor on the stormed link so the detail screen shows the interesting port.
    table = app.screen.query_one(LinkTable)
    keys = table.row_keys()
    target = "node3\x1fenp65s0f0np0"
    if target in keys:
        table.move_cursor(row=keys.index(target))
    await pilot.pause()


GPU_THERMAL_S = 122.0  # node4 GPU 1 held in thermal slowdown (gpu_thermal runs 100-130 s)


def _at_moment(moment_s: float) -> Callable[[FabtopApp, Pilot[int]], Awaitable[None]]:
    # The app starts at MOMENT_S; these shots need another moment of the demo cycle, with
    # all of it in the history (the timeline shows the storm and the thermal episode).
    async def before(app: FabtopApp, pilot: Pilot[int]) -> None:
        state, clock, _ = demo_state(moment_s, seed=SEED, history_s=moment_s)
        app.ctx.state, app.ctx.clock = state, clock
        await pilot.pause()

    return before


async def _with_bench(app: FabtopApp, pilot: Pilot[int]) -> None:
    # The test screen over the demo's session, never started: a plan is summarized (or
    # refused) from the state, and nothing runs.
    cfg = demo_config()
    app.ctx.bench = Bench(cfg, app.ctx.state, open_session(cfg, state=app.ctx.state))
    await pilot.pause()


async def _test_done(app: FabtopApp, pilot: Pilot[int]) -> None:
    # A pairs plan shown done. Its verdicts come from the judge over figures set here (a
    # real run's figures and timing vary; tests/ui/test_test_screen.py runs real ones):
    # the RoCE and InfiniBand pairs near their rate, one slow pair, the Macs' missing iperf3.
    await _with_bench(app, pilot)
    await pilot.press("7")
    screen, bench = app.screen, app.ctx.bench
    assert isinstance(screen, TestScreen) and bench is not None
    ready = bench.prepare("pairs", Options(seconds=5, allow_busy=True))
    assert ready.fabric is not None
    run = planned(ready)
    measured, ip = [], []
    for i, (_, step) in enumerate(run.steps):
        ports = [ready.fabric.port(h, step.rail) for h in step.hosts]
        ends = []
        for h, port in zip(step.hosts, ports, strict=True):
            sample = app.ctx.state.hosts[h].sample
            if port is not None and sample is not None:
                ends.append(sample.links[port.link])
        # RDMA ports run perftest; IP paths (a Mac's Thunderbolt) iperf3, missing there.
        ip.append(not all(p is not None and p.rdma for p in ports))
        ref, _ = reference_rate(ends)
        slow = step.senders == ("node3",) and step.receiver == "node2" and step.rail == 0
        gbps = None if ip[-1] or ref is None else ref * (0.78 if slow else 0.975 + 0.001 * (i % 5))
        measured.append(Bandwidth(step, gbps, ref))
    hosts = sorted({h for _, step in run.steps for h in step.hosts})
    report = Report("pairs", hosts, ready.options, ended_unix=54.0)
    for (_, step), v, by_ip in zip(run.steps, judge_bandwidth(measured), ip, strict=True):
        missing = [
            f"{h}: iperf3 not found: install the iperf3 package (iperf3)" for h in step.hosts
        ]
        report.results.append(
            StepResult(step, v, "iperf3" if by_ip else "perftest", missing if by_ip else [])
        )
    screen.finished(run, report, report_json(report, {}, {}))
    await pilot.pause()


SHOTS: tuple[Shot, ...] = (
    Shot("overview", (120, 36)),
    Shot("overview_80x24", (80, 24)),
    # the health grid unfolded by 'g', its cursor on the worst cell (the storm)
    Shot("overview_grid_80x24", (80, 24), ("g",)),
    Shot("link_detail", (120, 36), ("enter",), _to_storm_link),
    Shot("help", (120, 36), ("question_mark",)),
    Shot("pfc", (120, 36), ("2",)),
    Shot("pfc_80x24", (80, 24), ("2",)),
    Shot("gpus", (160, 36), ("3",), _at_moment(GPU_THERMAL_S)),
    Shot("gpus_80x24", (80, 24), ("3",), _at_moment(GPU_THERMAL_S)),
    Shot("inference", (140, 36), ("4",)),
    Shot("inference_80x24", (80, 24), ("4",)),
    Shot("timeline", (140, 44), ("5",), _at_moment(GPU_THERMAL_S)),
    Shot("timeline_80x24", (80, 24), ("5",), _at_moment(GPU_THERMAL_S)),
    # the storm selected, read in full (key 6 opens it worst first)
    Shot("findings", (140, 40), ("6",)),
    Shot("findings_80x24", (80, 24), ("6",)),
    # the stormed host: 'i' on its link
    Shot("host_detail", (120, 36), ("i",), _to_storm_link),
    Shot("host_detail_80x24", (80, 24), ("i",), _to_storm_link),
    # node1's server generates tokens: the plan is refused, and the way on is said
    Shot("test", (160, 40), ("7",), _with_bench),
    # allowed anyway (b), then asked to confirm (t): the summary of what will load the fabric
    Shot("test_80x24", (80, 24), ("7", "b", "t"), _with_bench),
    # a plan done: every verdict, the live counters of its ports, the Macs' step read
    Shot("test_done", (200, 50), ("down",) * 5 + ("enter",), _test_done),
    # 64 hosts x 8 rails, a storm and a link down among 512: the grid's counts, each
    # host's group folded to its row and what has something to say; 'g' to the worst cell
    Shot("overview_64x8_80x24", (80, 24), ("g",), make=make_big_app),
    Shot("overview_64x8", (200, 50), make=make_big_app, tested=False),
    # a filter typed: rail 3's ports, grouped by rule
    Shot(
        "overview_64x8_filter",
        (120, 36),
        ("slash", *"rail:3", "enter", "b", "b"),
        make=make_big_app,
    ),
)


async def render(shot: Shot, outdir: Path) -> Path:
    """Write one SVG and return its path."""
    app = shot.make()
    async with app.run_test(size=shot.size) as pilot:
        await pilot.pause()
        if shot.before is not None:
            await shot.before(app, pilot)
        for key in shot.keys:
            await pilot.press(key)
        await pilot.pause()
        path = outdir / f"{shot.name}.svg"
        path.write_text(app.export_screenshot(title=f"fabtop {shot.name}"), encoding="utf-8")
    return path


async def main(outdir: Path) -> None:
    """Render every shot into ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        print(await render(shot, outdir))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots")))
