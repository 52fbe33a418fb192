"""SVG snapshots of every screen: the demo at a fixed seed, inside the PFC storm.

The state is fed by hand from the simulation (fabtop.run.demo) on a frozen clock, so the
pictures hold no wall-clock time. Regenerate after a deliberate change with
``pytest tests/ui/test_snapshots.py --snapshot-update`` and look at the result.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from tui.screenshots import SHOTS, Shot

TESTED = [s for s in SHOTS if s.tested]


@pytest.mark.parametrize("shot", TESTED, ids=[s.name for s in TESTED])
def test_screen_snapshot(snap_compare: Any, shot: Shot) -> None:
    app = shot.make()

    async def before(pilot: Pilot[int]) -> None:
        await pilot.pause()
        if shot.before is not None:
            await shot.before(app, pilot)

    assert snap_compare(app, press=shot.keys, terminal_size=shot.size, run_before=before)
