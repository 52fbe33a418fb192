"""Focus mode: a second, 250 ms probe stream on one port beside the normal one."""

from __future__ import annotations

import asyncio

from collectors.transport.local import LocalTransport
from fabtop.config import Config, HostConfig
from fabtop.core.state import FabricState
from fabtop.run.focus import FocusSession
from fabtop.run.session import Session
from fabtop.sim import Fabric, demo_hosts
from fabtop.sim.transport import sim_transports


async def _wait_points(fs: FocusSession, n: int, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while len(fs.points) < n:
            await asyncio.sleep(0.02)


async def test_focus_on_local_lo_samples_every_250_ms_by_remote_clock() -> None:
    fs = FocusSession("local", "lo", LocalTransport("local"))
    fs.start()
    try:
        await _wait_points(fs, 4, 8.0)
    finally:
        await fs.aclose()
    gaps = [p.dt for p in fs.points]
    assert all(g is not None and 0.2 <= g <= 0.35 for g in gaps), gaps
    # lo has no pause counters, but its byte rates come through the focus engine
    assert "rx_bytes_per_s" in fs.points[-1].rates
    assert fs.status.state == "stopped"


async def test_focus_beside_the_main_stream_in_the_demo_shows_the_storm() -> None:
    hosts = demo_hosts()
    fab = Fabric.single(hosts, "pfc_storm", start_s=0.0)
    cfg = Config(hosts=[HostConfig(name=h.name) for h in hosts], interval=1.0)
    state = FabricState(cfg.hosts)
    session = Session(cfg, state, transports=dict(sim_transports(fab, speed=4.0)))
    run = asyncio.create_task(session.run())
    try:
        fs = session.focus("node3", "enp65s0f0np0")
        await _wait_points(fs, 6, 8.0)
        main_frames = state.hosts["node3"].frames
        session.unfocus()
        assert session.focused is None
        await asyncio.sleep(0.3)
        # the main stream kept going at its own pace, on its own baselines
        assert state.hosts["node3"].frames >= main_frames
        assert state.hosts["node3"].status == "up"
    finally:
        await session.stop()
        run.cancel()
    dts = [round(p.dt or 0, 3) for p in fs.points]
    assert set(dts) == {0.25}, dts
    last = fs.points[-1].rates
    tx = last["tx_pause_time_ratio"]
    assert isinstance(tx, dict) and tx[3] > 0.99  # node3 is the stuck receiver on prio 3
    n = len(fs.points)
    await asyncio.sleep(0.3)
    assert len(fs.points) == n  # stopping focus closed the stream
