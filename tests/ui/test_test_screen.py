"""The test screen (key 7), driven as a person types: a plan chosen, confirmed, watched,
read and written, or cancelled, on the demo fabric through the real runner and launcher.

The demo runs 4 times real time (its tools and frames on the simulation's clock), so a
pairs plan at 1 s per run takes a few seconds; the tests wait for what the screen shows,
with a deadline, and never sleep for the simulation.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from textual.pilot import Pilot

from fabtop.commands.fabtest import Bench
from fabtop.config import Config, HostConfig
from fabtop.core.expect import Expect
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.demo import demo_config, demo_state
from fabtop.run.session import Session
from fabtop.sim.transport import DemoTransport
from tests.stepped import until
from tests.ui.fabric import fabric
from tui.app import FabtopApp
from tui.context import WRITE_OFF, ViewContext
from tui.screens.test import CANCELLED, CHOOSE, CONFIRM, DONE, RUNNING, UNAVAILABLE, TestScreen
from tui.widgets.keyed_table import KeyedTable

SPEED = 4.0


def live_app() -> FabtopApp:
    """The dashboard over the healthy demo's session (no episode decides a verdict; its
    inference servers neither configured nor discovered: no plan is refused for a busy
    server, whenever the plan starts)."""
    cfg = demo_config(scenario="healthy")
    cfg.hosts = [dataclasses.replace(h, inference=()) for h in cfg.hosts]
    state = fabric_state(cfg)
    session = open_session(cfg, state=state, demo_speed=SPEED, discover_inference=False)
    return FabtopApp(ViewContext(state, interval=cfg.interval), session)


def screen(app: FabtopApp) -> TestScreen:
    s = app.screen
    assert isinstance(s, TestScreen)
    return s


def head(app: FabtopApp) -> str:
    return " ".join(str(app.screen.query_one("#test-head").render()).split())


def rows(app: FabtopApp) -> dict[str, list[str]]:
    """The steps table as drawn: step label -> its cells."""
    table = app.screen.query_one("#test-steps", KeyedTable)
    out = {}
    for key in table.row_keys():
        cells = [str(table.get_cell(key, c).plain) for c in table.column_keys]
        out[cells[1]] = cells
    return out


async def ready(app: FabtopApp, pilot: Pilot[int]) -> None:
    """Open the screen and wait until every host was read (the plan may then start)."""
    await pilot.press("7")

    def can_start() -> bool:
        r = screen(app)._prepare()
        return r is not None and r.plan is not None

    await until(can_start, "demo hosts read")
    app.refresh_now()
    await pilot.pause()


def fabric_of(app: FabtopApp) -> object:
    bench = app.ctx.bench
    assert bench is not None
    t = next(iter(bench.session.transports.values()))
    assert isinstance(t, DemoTransport)
    return t.clock.fabric


async def test_pairs_run_from_the_keyboard_fill_the_table_and_write_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = live_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(app, pilot)
        assert "fabtop test pairs: 28 steps in 6 rounds" in head(app)
        await pilot.press("minus", "minus")  # 5 s -> 2 s -> 1 s per run
        assert "1 s per run" in head(app)
        await pilot.press("t")
        assert screen(app).phase == CONFIRM and "This loads the fabric" in head(app)
        await pilot.press("y")
        assert screen(app).phase == RUNNING
        await until(lambda: screen(app).phase != RUNNING, "the plan's verdicts", 120)
        await pilot.pause()
        assert screen(app).phase == DONE
        got = rows(app)
        assert len(got) == 28
        roce = [c for label, c in got.items() if label.endswith(("rail 0", "rail 1"))]
        assert len(roce) == 24
        # Every RoCE pair passes at the port's rate.
        assert all(c[0] == "pass" and c[2] == "perftest" and "of ref" in c[3] for c in roce)
        macs = {label: c for label, c in got.items() if label.startswith("mac")}
        assert set(macs) == {"mac1 -> mac2 rail 3", "mac2 -> mac1 rail 3"}
        assert all(c[0] == "fail" and c[2] == "iperf3" for c in macs.values())
        assert "fabtop test pairs: 28 steps" in head(app)
        # Enter on a Mac's step: why it failed, with the package that provides the tool.
        table = app.screen.query_one("#test-steps", KeyedTable)
        labels = list(got)
        table.move_cursor(row=labels.index("mac1 -> mac2 rail 3"))
        await pilot.press("enter")
        detail = str(app.screen.query_one("#test-detail-text").render())
        assert "FAIL: mac1 -> mac2 rail 3" in detail
        assert "iperf3 not found: install the iperf3 package" in detail
        # The report: refused in a read-only browser view, else the -o document.
        app.ctx.allow_write = False
        await pilot.press("w")
        assert list(tmp_path.iterdir()) == []
        assert app._notifications and list(app._notifications)[-1].message == WRITE_OFF
        app.ctx.allow_write = True
        await pilot.press("w")
        (written,) = tmp_path.glob("fabtop-test-pairs-*.json")
        doc = json.loads(written.read_text())
        assert doc["format"] == "fabtop.test/1" and doc["plan"] == "pairs"
        assert len(doc["steps"]) == 28 and doc["options"]["seconds"] == 1
        assert doc["counters"]["node1/mlx5_0/1"]["after"]


async def test_cancelling_a_running_plan_stops_the_runner_and_every_tool() -> None:
    app = live_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await pilot.press("plus")  # 10 s per run: still running when cancelled
        await pilot.press("t", "y")
        s = screen(app)
        assert s.phase == RUNNING, head(app)
        bench = fabric_of(app).bench  # type: ignore[attr-defined]
        await until(lambda: bool(bench.flows), "the first round's traffic")
        worker = s._worker
        assert worker is not None and s.phase == RUNNING
        await pilot.press("x")
        await until(lambda: s.phase == CANCELLED, "the cancel")
        await pilot.pause()
        assert worker.is_cancelled and worker.is_finished
        assert "cancelled in round 1 of 6" in head(app)
        # Every server stopped listening and every flow ended: nothing runs on the nodes.
        await until(lambda: bench.listeners == {}, "servers stopped")
        clock = next(iter(app.ctx.bench.session.transports.values())).clock  # type: ignore[union-attr]
        assert all(f.end <= clock.now() + 0.5 for f in bench.flows)
        # The runner is gone: no verdict comes in later.
        assert s.current is not None and s.current.report is None


async def test_a_stray_key_never_starts_a_plan() -> None:
    app = live_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await pilot.press("y", "enter", "x")  # nothing to confirm, nothing running
        assert screen(app).phase == CHOOSE and screen(app)._worker is None
        await pilot.press("t", "escape")  # asked, then declined
        assert screen(app).phase == CHOOSE and screen(app)._worker is None
        await pilot.press("n")
        assert "fabtop test bidir:" in head(app)
        # The browser's read-only view never starts one, confirmed or not.
        app.ctx.allow_write = False
        await pilot.press("t", "y")
        assert screen(app).phase == CHOOSE and screen(app)._worker is None


def snapshot_app() -> FabtopApp:
    """The demo at a frozen moment in which node1's server generates tokens, with a
    session that is never started (what a plan would run over)."""
    state, clock, _ = demo_state(60.0, seed=0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    app.ctx.bench = Bench(demo_config(), state, open_session(demo_config(), state=state))
    return app


async def test_a_busy_server_refuses_the_plan_until_explicitly_allowed() -> None:
    app = snapshot_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("7")
        text = head(app)
        assert "refused: node1: its inference server is generating tokens" in text
        assert "b tests anyway" in text
        await pilot.press("t", "y")
        assert screen(app).phase == CHOOSE and screen(app)._worker is None
        await pilot.press("b", "t")
        assert screen(app).phase == CONFIRM and "busy servers allowed" in head(app)


async def test_without_ssh_connections_the_screen_says_tests_need_them() -> None:
    state, clock, _ = demo_state(60.0, seed=0)  # as a replay or --from-prometheus: no session
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("7", "t", "y")
        assert head(app) == " ".join(UNAVAILABLE.split())
        assert screen(app).phase == CHOOSE and screen(app)._worker is None


async def test_cancelling_a_loaded_latency_plan_ends_its_incast_at_once() -> None:
    app = live_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await pilot.press("n", "n", "n", "n")  # pairs -> ... -> loaded-latency
        await pilot.press("plus")  # 10 s per run: its incast loads for 12 s and more
        assert "fabtop test loaded-latency:" in head(app)
        await pilot.press("t", "y")
        s = screen(app)
        assert s.phase == RUNNING, head(app)
        bench = fabric_of(app).bench  # type: ignore[attr-defined]
        clock = next(iter(app.ctx.bench.session.transports.values())).clock  # type: ignore[union-attr]

        def loading() -> bool:  # round 2: the latency pair beside the receiver's incast
            run = s.current
            return (
                run is not None
                and run.round == 2
                and any(f.fixed_bps is None and f.end > clock.now() for f in bench.flows)
            )

        await until(loading, "the loaded round's incast")
        cancelled_at = clock.now()
        await pilot.press("x")
        await until(lambda: s.phase == CANCELLED, "the cancel")
        await until(lambda: bench.listeners == {}, "servers stopped")
        # Every flow, the incast's included, ended with the cancel (not at its 12 s).
        assert max(f.end for f in bench.flows) <= cancelled_at + 1.0


async def test_an_unmet_expectation_refuses_the_plan_and_b_does_not_override_it() -> None:
    state, clock, _ = demo_state(60.0, seed=0)
    cfg = demo_config()
    cfg.hosts = [
        dataclasses.replace(h, expect=Expect(gpus=16)) if h.name == "node2" else h
        for h in cfg.hosts
    ]
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    app.ctx.bench = Bench(cfg, state, open_session(cfg, state=state))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("7")
        text = head(app)
        assert "refused: node2:" in text and "16" in text, text
        assert "b tests anyway" not in text  # only a busy server may be overridden
        await pilot.press("b", "t", "y")
        assert screen(app).phase == CHOOSE and screen(app)._worker is None
        assert "refused: node2:" in head(app)


async def test_a_fabric_without_a_rail_to_test_says_so_and_nothing_starts() -> None:
    state, clock = fabric(hosts=1)  # one host: no pair anywhere
    cfg = Config(hosts=[HostConfig(name="node1")])
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    app.ctx.bench = Bench(cfg, state, Session(cfg, state))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("7")
        assert "pairs: no rail has 2 hosts to test" in head(app)
        await pilot.press("t", "y")
        assert screen(app).phase == CHOOSE and screen(app)._worker is None


async def test_a_size_sweep_shows_its_bend_and_each_size_on_enter() -> None:
    app = live_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(app, pilot)
        while screen(app).plan != "sizes":
            await pilot.press("n")
        await pilot.press("minus", "minus")  # 1 s per run
        # Before anything runs: sizes x seconds, and which pair per rail.
        assert "11 sizes (4 KiB to 4 MiB)" in head(app), head(app)
        await pilot.press("t", "y")
        await until(lambda: screen(app).phase != RUNNING, "the sweep's verdicts", 180)
        await pilot.pause()
        got = rows(app)
        ib = got["node1 -> node2 rail 2"]
        assert ib[0] == "pass" and ib[2] == "perftest" and ib[3].startswith("bend "), ib
        table = app.screen.query_one("#test-steps", KeyedTable)
        table.move_cursor(row=list(got).index("node1 -> node2 rail 2"))
        await pilot.press("enter")
        detail = str(app.screen.query_one("#test-detail-text").render())
        assert "PASS: node1 -> node2 rail 2" in detail
        assert "4 KiB" in detail and "4 MiB" in detail and "prefill/KV" in detail
        assert "bend (half-power size)" in detail and "decode dispatch" in detail


async def test_the_loss_plan_is_chosen_by_name_and_shows_the_kill_and_the_recovery() -> None:
    app = live_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(app, pilot)
        while screen(app).plan != "loss":  # opt-in: last
            await pilot.press("n")
        assert "fabtop test loss: 2 steps in 1 rounds" in head(app)
        await pilot.press("t", "y")
        assert screen(app).phase == RUNNING
        await until(lambda: screen(app).phase != RUNNING, "the loss plan's verdicts", 120)
        await pilot.pause()
        got = rows(app)
        # One step per RoCE rail (the labels, long, are cut in the middle to fit).
        assert [label[-20:] for label in got] == ["rail 0, node4 killed", "rail 1, node4 killed"]
        assert all(c[0] == "pass" and c[3].startswith("recovered in ") for c in got.values())
        table = app.screen.query_one("#test-steps", KeyedTable)
        table.move_cursor(row=0)
        await pilot.press("enter")
        detail = str(app.screen.query_one("#test-detail-text").render())
        assert "PASS: node2,node3,node4 -> node1 rail 0, node4 killed" in detail
        assert "node4: ib_write_bw (pid " in detail and "regained the receiver's" in detail
        assert "counters before the kill:" in detail and "NCCL's stall bound: 4.3 s" in detail
