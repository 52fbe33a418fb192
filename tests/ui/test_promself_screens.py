"""The screens over fabtop's own series read back through Prometheus: nothing breaks,
and the shard's findings are on screen as the shard's."""

from __future__ import annotations

from fabtop.config import Config
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock, demo_state
from fabtop.run.promsource import PrometheusSource
from tests.unit.test_promself import T0, exposition, stamps, up
from tui.app import SCREEN_REGISTRY, FabtopApp
from tui.context import ViewContext


async def test_the_screens_open_over_the_shards_series() -> None:
    demo, _, _ = demo_state(until_s=50.0, history_s=3.0)  # the storm began at 45 s
    results = exposition(demo)
    answers = iter([(stamps(results, T0 + i), results, [up("1")]) for i in range(2)])
    now: tuple[object, ...] = ()

    def fetch(url: str, query: str, timeout: float) -> list[object]:
        nonlocal now
        if query.startswith("last_over_time("):  # the hosts known on start
            return stamps(results, T0)
        if query.startswith("timestamp("):
            now = next(answers)
            return list(now[0])  # type: ignore[call-overload]
        return list(now[1] if query.startswith("{") else now[2])  # type: ignore[call-overload]

    clock = ManualClock()
    src = PrometheusSource("http://prom:9090", interval=1.0, fetch=fetch, clock=clock)
    src.state = state = fabric_state(Config(hosts=[], interval=1.0), clock=clock)
    src.own.backfill_s = None
    for _ in range(2):
        clock.t += 1
        await src.poll_once()
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=(120, 36)) as pilot:
        # the overview, then the screens that read what the reader rebuilds most of (the
        # QoS config, the shards' findings with their ports): one that cannot draw raises
        for key in ("2", "6"):
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen) is SCREEN_REGISTRY[key][1]
    storm = next(f for f in state.findings if f.rule == "pfc_storm")
    assert "[shard fabtop/shard1:9877]" in storm.summary
