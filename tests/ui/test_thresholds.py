"""A ``[thresholds]`` override moves the finding and every colour that shows it, together.

The state is built through the composition root (``fabtop.run.compose.fabric_state``),
as every command builds it, so the rules and the screens get the config's thresholds
from one place. The fabric: node3 cannot drain priority 3 and pauses its peers 60% of
the time while nothing moves: a storm at ``storm_pause_ratio = 0.5``, not at the
default 0.99.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from rich.text import Text
from textual.widgets import Static

from collectors.samples import HostSample, LinkSample, MetricValue
from collectors.transport.local import LocalTransport
from collectors.vocabulary import Derived, Metric
from fabtop.config import Config, HostConfig
from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.focus import FocusPoint, FocusSession, FocusStatus
from tests.ui.fabric import T0, FakeClock
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.links import link_rows
from tui.rows.pfc import SEP
from tui.screens.pfc import PfcScreen
from tui.widgets.link_table import HOT_PAUSE_STYLE, LinkTable, link_cells
from tui.widgets.pfc_matrix import PRESSURE_STYLE, STORM_STYLE, PauseMatrix
from tui.widgets.pfc_panels import FocusPanel, PairsPanel, PfcFindings

HOSTS = ("node1", "node2", "node3")
STUCK = "node3"
PORT = "enp65s0f0np0"
RATIO = 0.6  # share of every second node3 pauses its peers on priority 3
PAUSES_PER_S = 3000


def _port(host: str, tick: int) -> LinkSample:
    # node3 sends the pauses (tx), the others receive them (rx); no bytes move anywhere.
    side = "tx" if host == STUCK else "rx"
    pause_us = {"rx": Metric.RX_PAUSE_US, "tx": Metric.TX_PAUSE_US}
    pause = {"rx": Metric.RX_PAUSE, "tx": Metric.TX_PAUSE}
    metrics: dict[str, MetricValue] = {
        Metric.RX_BYTES: 10**9,
        Metric.TX_BYTES: 10**9,
        pause[side]: {3: tick * PAUSES_PER_S},
        pause_us[side]: {3: round(tick * RATIO * 1e6)},
    }
    return LinkSample(
        id=PORT,
        netdev=PORT,
        rdma_device="mlx5_0",
        port=1,
        link_layer="Ethernet",
        state="up",
        rate_gbps=100.0,
        mtu=9000,
        driver="mlx5_core",
        firmware="28.39.1002",
        physical=True,
        kind="roce",
        metrics=metrics,
    )


def storm_state(thresholds: Mapping[str, float]) -> tuple[FabricState, FakeClock]:
    """Six seconds of the 60% storm, through the rules at ``thresholds``."""
    clock = FakeClock()
    config = Config(hosts=[HostConfig(name=h) for h in HOSTS], thresholds=dict(thresholds))
    state = fabric_state(config, clock=clock)
    for tick in range(1, 7):
        clock.t += 1.0
        for h in HOSTS:
            state.apply_sample(
                h,
                HostSample(
                    host=h,
                    seq=tick,
                    clock_ns=int((T0 + tick) * 1e9),
                    uptime_s=5000.0 + tick,
                    links={PORT: _port(h, tick)},
                ),
            )
    return state, clock


def style_at(t: Text, needle: str) -> str:
    """The styles that apply where ``needle`` starts in ``t``."""
    i = t.plain.index(needle)
    return " ".join([str(t.style)] + [str(s.style) for s in t.spans if s.start <= i < s.end])


def content(app: FabtopApp, widget: type[Static]) -> Text:
    """What a text panel was last given to show."""
    shown: object = app.screen.query_one(widget).content
    assert isinstance(shown, Text)
    return shown


async def pfc_screen(thresholds: Mapping[str, float]) -> dict[str, str]:
    """What the PFC screen shows of the storm: findings, matrix cell, pairs and focus."""
    state, clock = storm_state(thresholds)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PfcScreen)
        # A focus stream on the stuck port, fed by hand (it never starts on its own).
        fs = FocusSession(STUCK, PORT, LocalTransport())
        fs.points.append(FocusPoint(T0, 0.25, {Derived.TX_PAUSE_TIME_RATIO: {3: RATIO}}))
        fs.status = FocusStatus("up", None, 4)
        screen.focus_session = fs
        screen.refresh_view()
        await pilot.pause()
        cell = screen.query_one(PauseMatrix).get_cell(f"{STUCK}{SEP}{PORT}{SEP}tx", "p3")
        pairs = content(app, PairsPanel)
        focus = content(app, FocusPanel)
        shown = {
            "rules": " ".join(sorted({f.rule for f in state.findings})),
            "cell": f"{cell.plain} {cell.style}",
            "pairs": pairs.plain.split("\n")[0],
            "pairs_style": style_at(pairs, pairs.plain.split()[0]),
            "focus_p3": style_at(focus, "p3"),
            "findings": content(app, PfcFindings).plain,
        }
        screen.focus_session = None  # nothing to stop: it never ran
    return shown


async def overview_pause_cell(thresholds: Mapping[str, float]) -> tuple[str, str]:
    """The links table's pause-rx cell of a paused port: its text and style."""
    state, clock = storm_state(thresholds)
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        cell = app.screen.query_one(LinkTable).get_cell(f"node1\x1f{PORT}", "prx")
        return cell.plain, str(cell.style)


async def test_storm_ratio_override_fires_the_storm_and_every_colour_follows() -> None:
    default = await pfc_screen({})
    lowered = await pfc_screen({"storm_pause_ratio": 0.5})
    # The rule: 60% paused is no storm at 0.99, one at 0.5.
    assert "pfc_storm" not in default["rules"].split()
    assert "pfc_storm" in lowered["rules"].split()
    assert "CRIT" in lowered["findings"] and "PFC storm" in lowered["findings"]
    assert "PFC storm" not in default["findings"]
    # The matrix: the same 60% cell, pressure-yellow by default, storm-red with the rule.
    assert default["cell"] == f"60 {PRESSURE_STYLE}"
    assert lowered["cell"] == f"60 {STORM_STYLE}"
    # Who pauses whom: hard pausing by default, the stuck receiver once the rule says so.
    assert default["pairs"].startswith(f"pausing {STUCK}/{PORT} prio 3")
    assert lowered["pairs"].startswith(f"STUCK RECEIVER {STUCK}/{PORT} prio 3")
    assert "red" not in default["pairs_style"] and "red" in lowered["pairs_style"]
    # Focus mode's live line: storm-red only where the rule calls it a storm.
    assert STORM_STYLE not in default["focus_p3"]
    assert STORM_STYLE in lowered["focus_p3"]


async def test_pressure_ratio_override_moves_hard_pausing_on_the_screen() -> None:
    # "Pausing hard" is the core's (the storm rule counts who pauses whom with it): above
    # 60% nobody pauses hard, and the matrix does not paint pressure either.
    raised = await pfc_screen({"pressure_pause_ratio": 0.7})
    assert raised["pairs"] == "who pauses whom: no port is pausing its peers hard"
    assert raised["cell"] == "60 "


async def test_overview_red_follows_pause_hot_ratio() -> None:
    text, style = await overview_pause_cell({})
    assert text == "3.0k" and style == HOT_PAUSE_STYLE  # 60% paused: a storm in the making
    text, style = await overview_pause_cell({"pause_hot_ratio": 0.7})
    assert text == "3.0k" and style == "yellow"


def test_line_share_and_temperature_colours_follow_their_thresholds() -> None:
    def styles(thresholds: Mapping[str, float]) -> tuple[str, str]:
        state, clock = storm_state(thresholds)
        row = link_rows(state, clock(), 1.0)[0]
        # 85 % of line rate (line_ratio is worked out from the speed and the traffic)
        row = dataclasses.replace(row, rx_bps=0.85 * row.speed_gbps * 1e9, temperature_c=100.0)
        cells = link_cells(row, None, False, state.thresholds)
        return cells["line"].style, cells["temp"].style

    # 100 °C: past the NIC rule's warning (95), short of its critical (105)
    assert styles({}) == ("bold", "yellow")
    assert styles({"line_busy_ratio": 0.9, "nic_temp_warn_c": 101.0}) == ("", "")
    assert styles({"nic_temp_crit_c": 99.0})[1] == "bold red"
