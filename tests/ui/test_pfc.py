"""The PFC screen (key 2): what someone chasing a pause storm presses and then sees."""

from __future__ import annotations

import asyncio
import dataclasses

from collectors.samples import QosConfig
from fabtop.config import Config, HostConfig
from fabtop.core.state import FabricState
from fabtop.run.demo import demo_state
from fabtop.run.session import Session
from fabtop.sim import Fabric, demo_hosts
from fabtop.sim.transport import sim_transports
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.pfc import SEP, _dscp, pfc_findings
from tui.screens.pfc import PfcScreen
from tui.screenshots import make_app
from tui.widgets.pfc_config import ODD, QosTable
from tui.widgets.pfc_matrix import PauseMatrix
from tui.widgets.pfc_panels import FocusPanel, PairsPanel, PfcFindings

STUCK = "node3/enp65s0f0np0"


def text(app: FabtopApp, widget: type) -> str:
    return str(app.screen.query_one(widget).render())


async def test_storm_names_the_stuck_receiver_at_80x24() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert isinstance(app.screen, PfcScreen)
        pairs = text(app, PairsPanel)
        assert pairs.startswith(f"STUCK RECEIVER {STUCK} prio 3")
        assert "node1/enp65s0f0np0" in pairs  # one of the ports it pauses
        matrix = app.screen.query_one(PauseMatrix)
        # the port sending the pauses is the first one listed, its tx row red on prio 3
        assert matrix.row_keys()[:2] == [
            f"node3{SEP}enp65s0f0np0{SEP}rx",
            f"node3{SEP}enp65s0f0np0{SEP}tx",
        ]
        hot = matrix.get_cell(f"node3{SEP}enp65s0f0np0{SEP}tx", "p3")
        assert hot.plain == "99.6" and "red" in str(hot.style)
        assert matrix.get_cell(f"node1{SEP}enp65s0f0np0{SEP}rx", "p3").plain == "97"
        assert "pfc_storm" not in text(app, PfcFindings)  # rule names stay out of the text
        assert f"{STUCK}/prio3" in text(app, PfcFindings)
        assert "next: on node3: ethtool -S enp65s0f0np0" in text(app, PfcFindings)
        # 80x24 has room for the worst one only; the others are counted, never dropped
        found = pfc_findings(app.ctx.state.findings)
        shown = text(app, PfcFindings)
        assert len(found) > 1
        headlines = [ln for ln in shown.splitlines() if not ln.startswith((" " * 6, "…"))]
        assert len(headlines) + int(shown.rsplit("… ", 1)[-1].split()[0]) == len(found)
        # every panel is on screen at 80x24
        for w in (PauseMatrix, PairsPanel, QosTable, PfcFindings):
            region = app.screen.query_one(w).region
            assert region.height > 0 and region.bottom <= 23, w
        # m: frames/s instead of time %, same rows
        keys = matrix.row_keys()
        await pilot.press("m")
        await pilot.pause()
        assert matrix.mode == "frames"
        assert matrix.get_cell(f"node3{SEP}enp65s0f0np0{SEP}tx", "p3").plain == "6.0k"
        assert matrix.row_keys() == keys
        # f: focus needs a live session; a picture of the demo has none, and says so
        await pilot.press("f")
        await pilot.pause()
        assert not app.screen.query_one(FocusPanel).display
        assert any("live session" in str(n.message) for n in app._notifications)


async def test_ticks_update_cells_in_place() -> None:
    state, clock, fab = demo_state(40.0)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        matrix = app.screen.query_one(PauseMatrix)
        before = matrix.rebuilds
        from fabtop.run.demo import feed_until

        feed_until(fab, state, clock, 41.0, 62.0)  # into the storm
        app.refresh_now()
        await pilot.pause()
        assert matrix.rebuilds == before
        assert STUCK in text(app, PairsPanel)


async def test_qos_mismatch_is_marked_on_the_odd_host() -> None:
    hosts = demo_hosts()
    hosts[2] = dataclasses.replace(hosts[2], pfc_prios=(3, 4), mtu=4200)  # node3
    state, clock, _ = demo_state(10.0, fabric=Fabric(hosts))
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        qos = app.screen.query_one(QosTable)
        odd = qos.get_cell(f"node3{SEP}enp65s0f0np0", "pfc")
        assert odd.plain == "3,4" and str(odd.style) == ODD
        assert str(qos.get_cell(f"node3{SEP}enp65s0f0np0", "mtu").style) == ODD
        assert str(qos.get_cell(f"node1{SEP}enp65s0f0np0", "pfc").style) != ODD
        assert qos.row_keys()[0].startswith("node3")  # mismatches on top


async def test_focus_samples_the_selected_port_four_times_a_second() -> None:
    hosts = demo_hosts()
    fab = Fabric.single(hosts, "pfc_storm", start_s=0.0)
    cfg = Config(hosts=[HostConfig(name=h.name) for h in hosts], interval=1.0)
    state = FabricState(cfg.hosts)
    session = Session(cfg, state, transports=dict(sim_transports(fab, speed=2.0)))
    app = FabtopApp(ViewContext(state, interval=1.0), session)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        for _ in range(100):  # first frames
            await asyncio.sleep(0.05)
            if app.screen.query_one(PauseMatrix).row_count:
                break
        matrix = app.screen.query_one(PauseMatrix)
        matrix.move_cursor(row=matrix.row_keys().index(f"node3{SEP}enp65s0f0np0{SEP}tx"))
        await pilot.press("f")
        fs = session.focused
        assert fs is not None and (fs.host, fs.netdev) == ("node3", "enp65s0f0np0")
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(fs.points) >= 3:
                break
        await pilot.pause(0.3)
        shown = text(app, FocusPanel)
        assert shown.startswith("FOCUS node3/enp65s0f0np0 every 250 ms")
        assert "p3 99.6%" in shown or "p3 100%" in shown
        await pilot.press("f")
        await pilot.pause()
        assert session.focused is None
        assert not app.screen.query_one(FocusPanel).display


async def test_a_big_matrix_makes_cells_for_the_rows_on_screen() -> None:
    """At 64 x 8 the matrix has 1024 rows: a tick makes the cells of the rows on screen,
    and a row scrolled to shows its reading of now, not of when it was last on screen."""
    from textual.app import App, ComposeResult

    from fabtop.core.findings import PortRef
    from fabtop.core.thresholds import DEFAULT_THRESHOLDS as DEFAULTS
    from tui.rows.pfc import PauseRow
    from tui.widgets import pfc_matrix

    def rows(pct: float) -> list[PauseRow]:
        out = []
        for i in range(512):
            ref = PortRef(f"node{i // 8}", f"eth{i % 8}", f"eth{i % 8}")
            ratio = {3: pct / 100}
            out += [PauseRow(ref, "rx", {3: pct}, ratio), PauseRow(ref, "tx", {3: pct}, ratio)]
        return out

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield PauseMatrix(id="m")

    made = 0
    real = pfc_matrix.row_cells

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal made
        made += 1
        return real(*args, **kwargs)

    pfc_matrix.row_cells = counting  # type: ignore[assignment]
    try:
        app = One()
        async with app.run_test(size=(80, 24)) as pilot:
            m = app.query_one(PauseMatrix)
            m.show(rows(1.0), DEFAULTS)
            await pilot.pause()
            assert made == 1024  # the first sight of each row
            made = 0
            # every row's reading moves: pause time 1 % -> 2 %
            m.show(rows(2.0), DEFAULTS)
            await pilot.pause()
            assert 0 < made <= 24 + 2 * pfc_matrix.VIEW_MARGIN
            m.scroll_to(y=800, animate=False)
            await pilot.pause()
            assert m.get_cell(SEP.join(("node50", "eth0", "rx")), "p3").plain == "2"
    finally:
        pfc_matrix.row_cells = real  # type: ignore[assignment]


def test_the_dscp_column_names_the_default_map_and_spells_out_any_other() -> None:
    default = {d: d >> 3 for d in range(64)}
    assert _dscp(QosConfig(dscp2prio=default)) == "dscp/8"
    assert _dscp(QosConfig(dscp2prio={d: 3 for d in range(24, 32)})) == "dscp/8"
    assert _dscp(QosConfig(dscp2prio={d: 3 for d in range(24, 31)})) == "3:24-30"  # one short
    moved = default | {26: 5}  # one code on another priority: every priority spelled out
    assert _dscp(QosConfig(dscp2prio=moved)) == (
        "0:0-7;1:8-15;2:16-23;3:24-31;4:32-39;5:26-47;6:48-55;7:56-63"
    )
    assert _dscp(QosConfig(dscp2prio={46: 3})) == "3:46"
    assert _dscp(QosConfig()) == "-"
