"""The test screen's ``serving`` plan: refused until busy servers are allowed (it loads a
live server on purpose), then its four windows filled in from the demo's vLLM server,
which slows beside the loads."""

from __future__ import annotations

import re

from fabtop.fabtest.plans import PLANS
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.demo import demo_config
from tests.stepped import until
from tests.ui.test_test_screen import head, rows, screen, snapshot_app
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.screens.test import DONE, RUNNING

TO_SERVING = ["n"] * PLANS.index("serving")


async def test_serving_is_refused_until_busy_servers_are_allowed() -> None:
    app = snapshot_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("7", *TO_SERVING)
        text = head(app)
        assert "refused: serving loads the fabric beside a live inference server" in text
        assert "b tests anyway" in text
        await pilot.press("t", "y")
        assert screen(app)._worker is None
        await pilot.press("b")
        assert "node1's inference server read over 4 windows of about 5 s" in head(app)


async def test_a_serving_run_shows_the_token_rate_fall_beside_the_loads() -> None:
    # Real time (the windows are read on this machine's clock) on the healthy demo, its
    # vLLM server's /metrics configured.
    cfg = demo_config(scenario="healthy")
    state = fabric_state(cfg)
    session = open_session(cfg, state=state, discover_inference=False)
    app = FabtopApp(ViewContext(state, interval=cfg.interval), session)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("7", *TO_SERVING, "minus", "minus", "minus", "minus")

        def refused_as_busy() -> bool:
            r = screen(app)._prepare()
            return r is not None and r.busy

        def can_start() -> bool:
            r = screen(app)._prepare()
            return r is not None and r.plan is not None

        # b is offered once the hosts were read and the plan refused for the busy server.
        await until(refused_as_busy, "the refusal for node1's busy server", 60)
        app.refresh_now()
        await pilot.pause()
        await pilot.press("b")
        await until(can_start, "the plan", 60)
        await pilot.press("t", "y")
        assert screen(app).phase == RUNNING
        await until(lambda: screen(app).phase != RUNNING, "the windows' verdicts", 120)
        await pilot.pause()
        assert screen(app).phase == DONE
        # The step column is shared with the ports beside it: labels shortened in the
        # middle, the windows in the runner's order.
        status, figures = zip(*((c[0], c[3]) for c in rows(app).values()), strict=True)
        run = screen(app).current
        assert run is not None and run.report is not None
        why = [(r.verdict.reasons, r.verdict.notes) for r in run.report.results]
        assert status == ("pass", "warn", "warn", "pass"), (figures, why)
        ratios = [float(m[1]) for f in figures[1:] if (m := re.search(r"tok/s \(x([0-9.]+)\)", f))]
        assert len(ratios) == 3 and ratios[0] < 0.8 and ratios[1] < 0.8, figures
        assert 0.9 < ratios[2] < 1.1, figures  # back after the loads
        labels = list(rows(app))
        assert labels[0] == "node1 serving, baseline" and labels[3] == "node1 serving, after"
