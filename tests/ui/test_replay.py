"""Replaying a recording in the dashboard: the bar, pause, seek and speed keys."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fabtop.run.compose import open_session
from fabtop.run.demo import demo_config
from fabtop.run.record import Recorder
from fabtop.run.replay import Replay
from tests.stepped import run_ticks, stepped_demo, until
from tui.app import build_replay_app
from tui.widgets.replay_bar import ReplayBar


@pytest.fixture
async def recording(tmp_path: Path) -> Path:
    path = tmp_path / "demo.fabrec"
    cfg = demo_config(1.0)
    transports, clock = stepped_demo(cfg)
    # 40 simulated seconds, tick by tick, kept as a recording of about 1 s (40x).
    rec = Recorder(path, cfg, clock=lambda: clock.now() / 40).open()
    session = open_session(cfg, transports=transports, events=rec)
    task = asyncio.create_task(session.run())
    try:
        await run_ticks(clock, len(transports), 40)
    finally:
        await session.stop()
        task.cancel()
        rec.close()
    return path


async def test_replay_keys_move_the_cursor_and_the_screen_follows(recording: Path) -> None:
    rp = Replay(recording)
    # Recording time is the recorder's wall clock: this sped-up demo spans about 1 s.
    app = build_replay_app(rp, speed=0.5)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.5)
        bar = app.screen.query_one(ReplayBar)
        assert "REPLAY" in str(bar.render()) and 0 < rp.cursor < rp.duration
        await pilot.press("space")
        paused_at = rp.cursor
        await pilot.pause(0.4)
        assert rp.cursor == paused_at and app.replay_paused
        await pilot.press("full_stop")
        assert rp.cursor == pytest.approx(min(rp.duration, paused_at + 10), abs=0.01)
        assert rp.at_end
        frames_before = sum(h.frames for h in app.ctx.state.hosts.values())
        await pilot.press("comma")
        await pilot.pause()
        # Backwards is a fresh state fed from the start, and the screens read it.
        assert app.ctx.state is rp.state
        assert sum(h.frames for h in rp.state.hosts.values()) < frames_before
        await pilot.press("minus")
        assert app.replay_speed == 0.5  # the slowest
        await pilot.press("plus", "plus")
        assert app.replay_speed == 2.0
        assert "2x" in str(bar.render())


async def test_dashboard_records_with_record_option(tmp_path: Path) -> None:
    from fabtop.run.record import FRAME, RecordingReader
    from tui.app import build_app

    path = tmp_path / "dash.fabrec"
    app = build_app(demo_config(0.2), record=str(path))
    async with app.run_test(size=(120, 40)):
        state = app.ctx.state
        await until(lambda: sum(h.frames for h in state.hosts.values()) >= 4, "4 frames")
    reader = RecordingReader(path)
    frames = [r for r in reader.records() if r.kind == FRAME]
    assert len(frames) >= 4 and reader.clean_end
    demo = {"node1", "node2", "node3", "node4", "mac1", "mac2", "spark1"}
    assert {r.host for r in frames} <= demo
