"""Scales that mean something: sparklines on the link's line rate, or one scale shared by the
links whose speed is not known (never each row's own peak); chart axes whose ticks each get a
row."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collectors.samples import HostSample, LinkSample
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from tests.ui.fabric import T0, FakeClock, sample
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.format import SPARK_CHARS
from tui.widgets.link_table import LinkTable


def _speedless(name: str, tick: int, bytes_per_s: int) -> LinkSample:
    # A management port or a Thunderbolt netdev: no speed read, so no line rate to scale to.
    c = tick * bytes_per_s
    return LinkSample(
        id=name,
        netdev=name,
        state="up",
        kind="netdev",
        counters={"netdev": {"rx_bytes": c, "tx_bytes": c}},
        metrics={"rx_bytes": c, "tx_bytes": c},
    )


def _host(tick: int, busy: int = 1_250_000_000) -> HostSample:
    s = sample("node1", tick)
    links = dict(s.links)
    links["eno1"] = _speedless("eno1", tick, 600)  # < .01 Gb/s: ssh and the probe itself
    links["tb0"] = _speedless("tb0", tick, busy)  # 10 Gb/s
    return replace(s, links=links, clock_ns=int((T0 + tick) * 1e9))


@pytest.mark.parametrize("busy", [1_250_000_000, 700])
async def test_an_idle_port_of_unknown_speed_lies_flat(busy: int) -> None:
    # Beside a busy one (10 Gb/s), and when every such port is idle (the demo's Macs' en0).
    clock = FakeClock()
    state = FabricState([HostConfig(name="node1")], rules=make_evaluator(), clock=clock)
    for tick in range(1, 31):
        clock.t += 1.0
        state.apply_sample("node1", _host(tick, busy))
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(LinkTable)
        idle = table.get_cell("node1\x1feno1", "rx").plain
        tb = table.get_cell("node1\x1ftb0", "rx").plain
        # The idle port's bars are the lowest block; the busy one's reach the top of the scale.
        assert set(idle) & set(SPARK_CHARS) <= {SPARK_CHARS[0]}, idle
        if busy == 700:
            assert set(tb) & set(SPARK_CHARS) <= {SPARK_CHARS[0]}, tb
        else:
            assert max(tb.index(c) if c in tb else -1 for c in SPARK_CHARS[-2:]) >= 0, tb


def test_a_short_chart_gets_fewer_y_ticks_each_on_its_own_row() -> None:
    from tui.widgets.charts import y_ticks

    for rows in range(1, 30):
        ticks = y_ticks(2.0, rows)
        assert ticks[0] == 0.0 and ticks[-1] == 2.0
        # plotext puts a tick on the nearest row: at most one per two rows stays legible
        assert len(ticks) - 1 <= max(1, rows // 2), (rows, ticks)


async def test_a_chart_drawn_before_its_layout_gets_the_ticks_of_its_rows() -> None:
    # A slow machine can draw a chart before it is laid out (0 rows): the ticks are picked
    # when it is rendered at its real size, so a tall chart labels 0, 1/4 ... of its top.
    from textual.app import App, ComposeResult

    from fabtop.core.history import History
    from tui.widgets.charts import TimeChart

    chart = TimeChart("bytes")
    history = History()
    key = ("node1", "eth0", "rx_bps")
    for t in range(60):
        history.series(key).append(float(t), 400.0)
    assert chart.draw(history, [("rx", key, 1.0)], 60.0, now=59.0) == 1

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield chart

    async with One().run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        text = str(chart.render())
    labels = [line.split("┤")[0].strip() for line in text.splitlines() if "┤" in line]
    assert len(labels) == 5, text
    assert labels[-1] == "0" and "460" in labels[0], labels
