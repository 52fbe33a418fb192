"""The overview's cable column (issue 33 item 6): what the cable rules say of each link, in
the grid's glyph and a word, on a wide terminal; blank where nothing of the optics is read;
not shown at 80 columns. The degrading-optic demo scenario, the live code path."""

from __future__ import annotations

import dataclasses

from collectors.optics import FecState
from fabtop.run.demo import demo_state, scenario_fabric
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.widgets.link_table import LinkTable, link_columns

BAD = "node1\x1fenp65s0f1np1"  # its BER climbed two decades: cable_ber (a warning)
READ = "node2\x1fenp65s0f0np0"  # FEC read, nothing to say
COUNTED = "node2\x1fenp65s0f2np2"  # no module, no FEC: only the corrected bits (a BER)
UNREAD = "node2\x1feno1"  # nothing of its cable read


async def test_cable_column_says_what_the_cable_rules_say_where_the_width_allows() -> None:
    fabric = scenario_fabric("optic_degrade", interval_s=2.5, hosts=2)
    state, clock, _ = demo_state(125.0, fabric=fabric, history_s=125.0, interval=2.5)
    hs = state.hosts["node2"]
    assert hs.sample is not None
    link = hs.sample.links["enp65s0f0np0"]
    hs.sample.links["enp65s0f0np0"] = dataclasses.replace(link, fec=FecState(active="RS"))
    app = FabtopApp(ViewContext(state, interval=2.5, clock=clock))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(LinkTable)
        assert "cable" in t.column_keys
        assert t.get_cell(BAD, "cable").plain == "C BER↑"  # the grid's C, and why
        assert t.get_cell(READ, "cable").plain == "· ok"
        assert t.get_cell(COUNTED, "cable").plain == "· ok"
        assert t.get_cell(UNREAD, "cable").plain == ""
        # as drawn on the screen, the word whole in its column
        row = t.get_row_index(BAD)
        assert t.drawn_cells(row)[t.column_keys.index("cable")].strip() == "C BER↑"
    # 80 and 120 columns keep their room for the essentials
    assert all("cable" not in [c.key for c in link_columns(w, False)] for w in (80, 120))
