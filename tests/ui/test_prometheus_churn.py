"""A Prometheus source's hosts come and go: the screens follow, and nothing breaks."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from fabtop.config import Config
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock
from fabtop.run.promsource import PrometheusSource, group_series
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.host_detail import HostDetailScreen
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable

T0 = 1_700_000_000.0


def answer(instances: list[str], t: float) -> list[dict[str, Any]]:
    return [
        {
            "metric": {
                "__name__": "node_ethtool_received_bytes_phy",
                "instance": i,
                "job": "node",
                "device": "eth0",
            },
            "value": [t, str(int(t - T0) * 1000)],
        }
        for i in instances
    ]


async def test_hosts_forgotten_leave_the_tables_and_an_open_detail_says_so() -> None:
    clock = ManualClock()
    src = PrometheusSource("http://prom:9090", interval=5.0, clock=clock, forget_after=60.0)
    src.state = state = fabric_state(Config(hosts=[], interval=5.0), clock=clock)
    app = FabtopApp(ViewContext(state, interval=5.0, clock=clock))

    def poll(instances: list[str]) -> None:
        clock.t += 5
        src.apply(group_series(answer(instances, T0 + clock.t - 10_000)))
        app.refresh_now()

    async with app.run_test(size=(120, 36)) as pilot:
        poll(["a:9100", "b:9100", "c:9100"])
        poll(["a:9100", "b:9100", "c:9100"])
        await pilot.pause()
        hosts = app.screen.query_one(HostTable)
        assert sorted(hosts.row_keys()) == ["a", "b", "c"]
        app.push_screen(HostDetailScreen(app.ctx, "b"))
        await pilot.pause()
        for _ in range(14):  # b and c gone: stale, then forgotten; d arrives
            poll(["a:9100", "d:9100"])
            await pilot.pause()
        text = str(app.screen.query_one("#host-text", Static).render())
        assert "b: no longer watched" in text
        await pilot.press("escape")
        await pilot.pause()
        assert sorted(app.screen.query_one(HostTable).row_keys()) == ["a", "d"]
        assert {k.split("\x1f")[0] for k in app.screen.query_one(LinkTable).row_keys()} == {
            "a",
            "d",
        }
