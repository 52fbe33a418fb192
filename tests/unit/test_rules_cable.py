"""Cable rules (issue 33) on typed samples through the real rate engine: the pre-FEC BER's
rise and its jump after a flap, uncorrectable blocks, link integrity, NIC health
reporters, optics near the module's own limits; and the links that must stay quiet."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from collectors.frames import Frame, Section
from collectors.optics import (
    RX_LOL,
    RX_LOS,
    RX_POWER_MW,
    TEMPERATURE_C,
    HealthReporter,
    LaneOptics,
    Limits,
    ModuleDiag,
)
from fabtop.core.ber import BY_RX_BITS, FROM_BITS, FROM_BITS_RX, FROM_BLOCKS, BerNow, ber_now
from fabtop.core.findings import Finding
from tests.unit.rules_support import Fabric, Port, by_rule

CABLE_RULES = (
    "cable_ber",
    "ber_after_flap",
    "fec_uncorrectable",
    "link_integrity",
    "nic_health",
    "optic_rx_low",
    "module_temp_high",
    "optic_los",
)
BITS_PER_S = 100e9  # the test port runs at 100 Gb/s
CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optics"
T0_NS = 1_700_000_000 * 10**9


def cable(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule in CABLE_RULES]


def link_ber(fab: Fabric, host: str, lid: str = "enp65s0f0np0") -> BerNow | None:
    """The BER the cable rules measure now (what the cable panel shows)."""
    track = fab.evaluator.memory(fab).cables.get(f"{host}/{lid}")
    return ber_now(track, fab.evaluator.thresholds["ber_window_s"])


def at_ber(p: Port, ber: float, counter: str = "phy_corrected_bits") -> None:
    p.set(**{counter: ber * BITS_PER_S})


def test_ber_up_by_decades_is_named_with_its_trend_and_next_step() -> None:
    fab = Fabric()
    p = fab.port("node1")
    at_ber(p, 1e-9)
    fab.run(15, dt=10.0)  # 150 s at a healthy 1e-9
    assert not cable(fab.findings)
    at_ber(p, 1e-7)
    fab.run(7, dt=10.0)
    found = by_rule(fab.findings, "cable_ber")
    assert [(f.subject, f.severity) for f in found] == [("node1/enp65s0f0np0", "warning")]
    ev = found[0].evidence
    assert abs(float(ev["ber"]) - 1e-7) / 1e-7 < 0.05  # type: ignore[arg-type]
    assert abs(float(ev["ber_before"]) - 1e-9) / 1e-9 < 0.05  # type: ignore[arg-type]
    assert float(ev["decades_per_h"]) > 2  # type: ignore[arg-type]
    assert ev["ber_counted_from"] == FROM_BITS
    assert "1.0e-07" in found[0].summary and "1.0e-09" in found[0].summary
    assert "reseat" in found[0].next_step and "swap the cable" in found[0].next_step


def test_a_constant_corrected_rate_stays_quiet_for_an_hour() -> None:
    fab = Fabric()
    bits = fab.port("node1")
    at_ber(bits, 3e-7)  # a PAM4 link's ordinary raw BER: many bits corrected, no trend
    blocks = fab.port("node1", "enp65s0f1np1")
    at_ber(blocks, 2e-7, "fec_corrected_blocks")
    for _ in range(360):
        assert not cable(fab.tick(10.0))


def rounds(fab: Fabric, p: Port, ber: float, n: int, every: int = 13, dt: float = 5.0) -> None:
    """``n`` optics rounds ``every`` frames apart: the FEC count moves on a round only, and
    is carried between them (docs/PROBE.md "Optics")."""
    for _ in range(n):
        blocks = p.metrics.get("fec_corrected_blocks", 0)
        assert isinstance(blocks, int)
        p.metrics["fec_corrected_blocks"] = blocks + round(ber * BITS_PER_S * every * dt)
        for _ in range(every):
            assert not cable(fab.tick(dt)) or ber > 1e-7


def test_a_constant_ber_read_in_slow_rounds_stays_quiet() -> None:
    fab = Fabric()
    p = fab.port("node1")
    p.metrics["fec_corrected_blocks"] = 0
    rounds(fab, p, 5e-8, 28)  # half an hour of 65 s rounds under 5 s frames: no window
    assert not cable(fab.findings)  # ever held no round or two of them


def test_a_ber_climbing_in_slow_rounds_is_named() -> None:
    fab = Fabric()
    p = fab.port("node1")
    p.metrics["fec_corrected_blocks"] = 0
    rounds(fab, p, 5e-8, 4)
    rounds(fab, p, 2e-6, 3)
    found = by_rule(fab.findings, "cable_ber")
    assert len(found) == 1 and float(found[0].evidence["ber_before"]) < 1e-7  # type: ignore[arg-type]
    # the rise as it happened (decades over minutes), never a minute's climb made per hour
    assert re.search(r"up from \S+, \+1\.\d decades in \d+(\.\d)? (s|min)\b", found[0].summary)
    assert "/hour" not in found[0].summary


def test_a_first_read_just_before_a_round_does_not_hide_a_rise() -> None:
    fab = Fabric()
    p = fab.port("node1")
    p.metrics["fec_corrected_blocks"] = 0
    fab.tick(5.0)  # the first read, 5 s before a round: the round counts 65 s, not 5
    rounds(fab, p, 5e-8, 4)
    rounds(fab, p, 6e-7, 3)  # 12 x: a decade, whatever the phase of the first read
    found = by_rule(fab.findings, "cable_ber")
    assert len(found) == 1 and float(found[0].evidence["ber_before"]) < 1e-7  # type: ignore[arg-type]


@pytest.mark.parametrize("counter", ["phy_corrected_bits", "fec_corrected_blocks"])
def test_a_cable_that_stops_correcting_reads_0_within_a_window(counter: str) -> None:
    # Reseated while up: the corrections stop. The BER is the last minute's reads: 0 once a
    # minute of them counted none (it held the last minute with corrections for two more).
    fab = Fabric()
    p = fab.port("node1")
    at_ber(p, 3e-5, counter)
    fab.run(30, dt=5.0)
    assert by_rule(fab.findings, "cable_ber")
    at_ber(p, 0.0, counter)
    fab.run(13, dt=5.0)  # 65 s
    got = link_ber(fab, "node1")
    assert got is not None and got.ber == 0.0


def test_the_bits_received_are_the_denominator_where_the_driver_counts_them() -> None:
    # rx_bits_phy counts the lanes' bits (the FEC's and line code's overhead included:
    # 106.25 Gb/s on a 100G link); a port whose negotiated rate is unknown still has a BER
    fab = Fabric()
    p = fab.port("node1", rate_gbps=None)
    p.set(phy_corrected_bits=3e-5 * 106.25e9, phy_received_bits=106.25e9)
    q = fab.port("node1", "enp65s0f1np1")
    q.set(phy_corrected_bits=3e-5 * 106.25e9)  # over the negotiated rate: 6 % high
    found = {f.subject: f for f in by_rule(fab.run(8, dt=10.0), "cable_ber")}
    rx_ev = found["node1/enp65s0f0np0"].evidence
    assert rx_ev["ber_counted_from"] == FROM_BITS_RX and "rx_bits_phy" in FROM_BITS_RX
    assert abs(float(rx_ev["ber"]) - 3e-5) / 3e-5 < 0.01  # type: ignore[arg-type]
    shown = link_ber(fab, "node1")  # what the cable panel says beside the BER
    assert shown is not None and shown.denominator == BY_RX_BITS
    rate_ev = found["node1/enp65s0f1np1"].evidence
    assert rate_ev["ber_counted_from"] == FROM_BITS and "rate x time" in FROM_BITS
    assert abs(float(rate_ev["ber"]) - 3.1875e-5) / 3e-5 < 0.01  # type: ignore[arg-type]


def test_ber_over_the_mark_from_blocks_says_it_is_a_lower_bound() -> None:
    fab = Fabric()
    p = fab.port("node2")
    at_ber(p, 3e-5, "fec_corrected_blocks")  # constant, but over ber_warn_ratio
    found = by_rule(fab.run(8, dt=10.0), "cable_ber")
    assert len(found) == 1 and found[0].evidence["ber_counted_from"] == FROM_BLOCKS
    assert "at least" in found[0].summary and "over 1.0e-05" in found[0].summary


def test_ber_worse_after_a_flap_than_before_it() -> None:
    fab = Fabric()
    p = fab.port("node2")
    at_ber(p, 1e-8)
    fab.run(10, dt=10.0)
    p.state = "down"
    p.set(link_down_events=1.0, phy_corrected_bits=0.0)
    fab.tick()
    p.state = "up"
    p.set(link_down_events=0.0)
    at_ber(p, 1e-5)  # 1000 x worse: it retrained onto a damaged path
    fab.run(12)
    found = by_rule(fab.findings, "ber_after_flap")
    assert [f.severity for f in found] == ["critical"]
    assert abs(float(found[0].evidence["ber_before_flap"]) - 1e-8) / 1e-8 < 0.05  # type: ignore[arg-type]
    assert "1000x" in found[0].summary


def test_the_same_ber_after_a_flap_is_no_finding() -> None:
    fab = Fabric()
    p = fab.port("node2")
    at_ber(p, 1e-7)
    fab.run(10, dt=10.0)
    p.state = "down"
    p.set(link_down_events=1.0)
    fab.tick()
    p.state = "up"
    p.set(link_down_events=0.0)
    fab.run(30)
    assert not by_rule(fab.findings, "ber_after_flap")
    assert not by_rule(fab.findings, "cable_ber")


def test_any_uncorrectable_block_is_critical() -> None:
    fab = Fabric()
    p = fab.port("node3")
    p.set(fec_uncorrectable_blocks=0.0)
    assert not cable(fab.run(3))
    p.set(fec_uncorrectable_blocks=1.0)
    found = by_rule(fab.tick(), "fec_uncorrectable")
    assert [f.severity for f in found] == ["critical"]


def ib_port(fab: Fabric, host: str) -> Port:
    return fab.port(host, "mlx5_0/1", fields={"link_layer": "InfiniBand", "netdev": None})


def test_ib_symbol_errors_over_120_an_hour_and_not_under() -> None:
    fab = Fabric()
    ib_port(fab, "node1").set(rx_phy_errors=1 / 20)  # 180 an hour
    ib_port(fab, "node2").set(rx_phy_errors=1 / 60)  # 60 an hour: within NVSentinel's mark
    found = by_rule(fab.run(9, dt=20.0), "link_integrity")
    assert [f.subject for f in found] == ["node1/mlx5_0/1"]
    assert float(found[0].evidence["symbol_errors_per_h"]) > 120  # type: ignore[arg-type]


def test_a_local_link_integrity_error_is_named() -> None:
    fab = Fabric()
    p = fab.port("node1")
    p.set(link_integrity_errors=0.0)
    fab.run(2)
    p.set(link_integrity_errors=1.0)
    found = by_rule(fab.tick(), "link_integrity")
    assert found and "local link integrity" in found[0].summary


def module(
    rx_mw: float,
    *,
    limits: bool = True,
    temp: float = 45.0,
    read: int | None = None,
    signals: tuple[str, ...] = (),
) -> ModuleDiag:
    lim = {
        RX_POWER_MW: Limits(low_alarm=0.1, low_warning=0.2, high_alarm=3.0),  # -10 dBm alarm
        TEMPERATURE_C: Limits(high_alarm=80.0, high_warning=75.0),
    }
    return ModuleDiag(
        identifier="QSFP28",
        temperature_c=temp,
        lanes=(
            LaneOptics(1, rx_power_mw=0.8),
            LaneOptics(2, rx_power_mw=rx_mw, signals=signals),
        ),
        limits=lim if limits else {},
        read_ns=read,
    )


def test_rx_power_near_the_modules_low_alarm_on_two_reads() -> None:
    fab = Fabric()
    p = fab.port("node4", fields={"module": module(0.11, read=1)})  # -9.6 dBm: 0.4 dB above
    assert not by_rule(fab.run(3), "optic_rx_low")  # one read, carried over three frames
    p.fields["module"] = module(0.11, read=2)
    found = by_rule(fab.tick(), "optic_rx_low")
    assert [f.severity for f in found] == ["warning"]
    assert "lane 2" in found[0].summary and found[0].evidence["low_alarm_dbm"] == -10.0
    assert by_rule(fab.tick(), "optic_rx_low")  # the read stands until the next one
    p.fields["module"] = module(0.5, read=3)
    assert not by_rule(fab.tick(), "optic_rx_low")


def test_no_limits_and_a_dark_lane_raise_nothing() -> None:
    fab = Fabric()
    fab.port("node1", fields={"module": module(0.05, limits=False, temp=90.0)})  # limits all 0
    down = fab.port("node1", "enp65s0f1np1", fields={"module": module(0.0)}, state="down")
    fab.run(4)
    assert not by_rule(fab.findings, "optic_rx_low")
    assert not by_rule(fab.findings, "module_temp_high")
    down.state = "up"  # a dark lane on a port that is up: a lane it does not use (breakout)
    assert not by_rule(fab.run(3), "optic_rx_low")
    down.fields["module"] = module(0.08)  # lit, below the alarm: losing light
    found = by_rule(fab.run(2), "optic_rx_low")
    assert [f.severity for f in found] == ["critical"]


def test_module_temperature_near_its_own_warning() -> None:
    fab = Fabric()
    p = fab.port("node2", fields={"module": module(0.8, temp=60.0)})
    assert not by_rule(fab.run(3), "module_temp_high")
    p.fields["module"] = module(0.8, temp=72.0)
    found = by_rule(fab.run(2), "module_temp_high")
    assert [f.severity for f in found] == ["warning"] and "75" in found[0].summary
    assert "airflow" in found[0].next_step


def test_a_health_reporter_recovering_errors() -> None:
    fab = Fabric()
    rep = HealthReporter("pci/0000:08:00.0", "tx", "healthy", error=2, recover=2)
    p = fab.port("node3", fields={"health": (rep,)})
    assert not by_rule(fab.run(3), "nic_health")  # counts that do not move: old history
    p.fields["health"] = (dataclasses.replace(rep, error=3, recover=3),)
    found = by_rule(fab.tick(), "nic_health")
    assert found and "+1 errors, +1 recovered" in found[0].summary
    assert "devlink health show pci/0000:08:00.0" in found[0].next_step


def test_a_lit_lane_that_lost_its_signal_between_two_reads_is_named() -> None:
    fab = Fabric()
    # The first read's flags are latched since who knows when (module power-up): not judged
    p = fab.port("node5", fields={"module": module(0.8, read=1, signals=(RX_LOS, RX_LOL))})
    assert not by_rule(fab.run(3), "optic_los")
    p.fields["module"] = module(0.8, read=2)  # cleared by that read: nothing since
    assert not by_rule(fab.run(30, dt=1.0), "optic_los")
    p.fields["module"] = module(0.8, read=3, signals=(RX_LOS,))  # lost since read 2
    found = by_rule(fab.tick(), "optic_los")
    assert [f.severity for f in found] == ["warning"]
    assert "lane 2 rx loss of signal since the module's previous read (30 s ago)" in (
        found[0].summary
    )
    assert "reseat" in found[0].next_step
    p.fields["module"] = module(0.8, read=4)  # an event: it stays on screen a while
    assert by_rule(fab.run(30), "optic_los")
    for n in range(5, 9):  # quiet reads every 30 s: gone after event_hold_s (120 s)
        p.fields["module"] = module(0.8, read=n)
        found = by_rule(fab.run(30), "optic_los")
    assert not found


def test_loss_of_signal_on_a_dark_lane_or_a_down_port_or_a_low_lane_is_no_second_alarm() -> None:
    fab = Fabric()
    dark = fab.port("node6", fields={"module": module(0.0, read=1, signals=(RX_LOS,))})
    down = fab.port("node6", "enp65s0f1np1", state="down")
    down.fields["module"] = module(0.8, read=1, signals=(RX_LOS, RX_LOL))
    low = fab.port("node6", "enp66s0f0np0", fields={"module": module(0.11, read=1)})
    fab.run(2)
    for n, p in enumerate((dark, down), 2):  # every later read flags the lane again
        p.fields["module"] = module(
            p.fields["module"].lanes[1].rx_power_mw or 0.0, read=n, signals=(RX_LOS, RX_LOL)
        )
    low.fields["module"] = module(0.11, read=2, signals=(RX_LOS,))  # -9.6 dBm, alarm -10
    found = cable(fab.run(3))
    assert {f.rule for f in found} == {"optic_rx_low"}
    assert found[0].evidence["signals"] == "lane 2 rx loss of signal"


def _frame(seq: int, health: str | None) -> Frame:
    """One frame of a host with eth0 on PCI function 0000:04:00.0 (the mlx5 capture's);
    ``health`` the devlink section of an optics round (None: carried, no round)."""
    ns = T0_NS + seq * 10**9
    secs = [
        Section("sysnet", None, ns, "ok", None, "eth0/operstate up\neth0/device -\n"),
        Section("ethtool_i", "eth0", ns, "ok", None, "driver: mlx5_core\nbus-info: 0000:04:00.0\n"),
    ]
    if health is not None:
        secs.append(Section("devlink_health", None, ns, "ok", None, health))
    return Frame(seq, ns, 1000.0 + seq, T0_NS / 1e9 + seq, secs)


def test_one_health_recovery_is_an_episode_on_the_timeline_naming_the_reporter_and_link() -> None:
    from fabtop.config import HostConfig
    from fabtop.core.rules import make_evaluator
    from fabtop.core.rules.cable import cable_events
    from fabtop.core.state import FabricState

    calm = (CAPTURES / "devlink_health_mlx5_tx_netdev.txt").read_text()
    moved = calm.replace("error 0 recover 0", "error 1 recover 1")  # one error, recovered
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    rounds = {1: calm, 31: moved, 61: moved, 91: moved, 121: moved, 151: moved, 181: moved}
    for seq in range(1, 200):
        state.apply_frame("n1", _frame(seq, rounds.get(seq)))
    eps = [e for e in state.finding_log.episodes() if e.rule == "nic_health"]
    assert len(eps) == 1, eps  # one event, one marker: not one per frame or per round
    ep = eps[0]
    assert ep.subject == "n1/eth0" and ep.raised == T0_NS / 1e9 + 30  # since the read before
    assert ep.shown.summary == "n1/eth0: NIC health reporter tx: +1 errors, +1 recovered"
    assert ep.cleared is not None and ep.cleared - ep.raised >= 120  # event_hold_s on screen
    # the link's last cable events, newest first, for its cable panel
    assert cable_events(state.finding_log.episodes(), "n1/eth0") == [ep]
    assert cable_events(state.finding_log.episodes(), "n1/eth1") == []
