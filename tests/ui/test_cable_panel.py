"""The link detail's cable panel (issue 33): both ends of a ``[[cable]]`` side by side, the
pre-FEC BER the rules measure with its trend, optics per lane with the margin to the
module's own alarm (the degrading-optic demo scenario, the live code path)."""

from __future__ import annotations

import dataclasses

from textual.widgets import Static

from collectors.optics import RX_LOS, RX_POWER_MW, FecState, LaneOptics, Limits, ModuleDiag
from fabtop.core.ber import FROM_MLXLINK, BerNow
from fabtop.core.cables import Cable, CableEnd
from fabtop.core.findings import Finding
from fabtop.run.demo import demo_state, scenario_fabric
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.rows.cable import cable_panel
from tui.screens.link_detail import LinkDetailScreen

PORT = "enp65s0f1np1"


async def test_both_ends_of_a_degrading_cable_side_by_side() -> None:
    # 125 s into the episode (2.5 s frames): its BER climbed two decades in the last minute
    fabric = scenario_fabric("optic_degrade", interval_s=2.5, hosts=2)  # node1, node2
    state, clock, _ = demo_state(125.0, fabric=fabric, history_s=125.0, interval=2.5)
    hs = state.hosts["node1"]
    assert hs.sample is not None
    module = ModuleDiag(
        identifier="QSFP28",
        vendor="FS",
        temperature_c=41.0,
        lanes=(LaneOptics(1, rx_power_mw=0.9), LaneOptics(2, rx_power_mw=0.11, signals=(RX_LOS,))),
        limits={RX_POWER_MW: Limits(low_alarm=0.1)},  # -10 dBm
    )
    link = hs.sample.links[PORT]
    hs.sample.links[PORT] = dataclasses.replace(link, module=module, fec=FecState(active="RS"))
    # a NIC health reporter recovered an error 40 s ago (the nic_health rule's episode)
    now = state.data_now()
    recovered = Finding(
        "nic_health",
        "warning",
        f"node1/{PORT}",
        f"node1/{PORT}: NIC health reporter tx: +1 errors, +1 recovered",
        {"reporters": "tx: +1 errors, +1 recovered", "device": "pci/0000:08:00.1"},
        since=now - 40.0,
    )
    state.finding_log.update([*state.findings, recovered], now)
    cables = (
        Cable(CableEnd("node1", PORT), CableEnd("node2", PORT)),
        Cable(CableEnd("node2", "enp65s0f2np2"), CableEnd("switch1", None)),
    )
    app = FabtopApp(ViewContext(state, interval=2.5, clock=clock, cables=cables))
    async with app.run_test(size=(160, 40)) as pilot:
        await app.push_screen(LinkDetailScreen(app.ctx, "node1", PORT))
        await pilot.pause()
        panel = app.screen.query_one("#cable", Static)
        text = str(panel.render())
        this, lanes, flags, events, far = text.splitlines()
        assert this.startswith(" this end node1/enp65s0f1np1  QSFP28 FS  41 °C  FEC RS")
        assert "pre-FEC BER " in this and " dec in " in this  # the rise as it happened
        assert "÷ rate x time" in this  # the demo port counts no bits received: rate x time
        assert "1: -0.5 (+9.5 dB)" in lanes and "2: -9.6 (+0.4 dB)" in lanes
        assert flags.split() == ["flags", "2:", "rx", "loss", "of", "signal"]
        assert events.split()[0] == "events" and "ago tx: +1 errors, +1 recovered" in events
        assert far.startswith(" far end  node2/enp65s0f1np1  pre-FEC BER 2.0e-09")
        app.pop_screen()
        await app.push_screen(LinkDetailScreen(app.ctx, "node2", "enp65s0f2np2"))
        await pilot.pause()
        text = str(app.screen.query_one("#cable", Static).render())
        assert "far end  switch1: not a fabtop host" in text
        app.pop_screen()
        await app.push_screen(LinkDetailScreen(app.ctx, "node2", "enp65s0f0np0"))
        await pilot.pause()
        assert "BER" in str(app.screen.query_one("#cable", Static).render())
    # mlxlink's corrected bits (optics_mlxlink, no rx_corrected_bits_phy): the panel says so
    state.hosts["node2"].said_ber["enp65s0f0np0"] = BerNow(2e-8, None, None, FROM_MLXLINK)
    panel = cable_panel(state, "node2", "enp65s0f0np0", ())
    assert panel is not None and "2.0e-08 ÷ rate x time (mlxlink)" in str(panel)
