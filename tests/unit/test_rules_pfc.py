"""PFC rules on hand-built ports: storms (who pauses whom), stall events, config drift, drops."""

from __future__ import annotations

from collectors.samples import QosConfig
from collectors.vocabulary import Metric
from fabtop.core.findings import PAUSED_PEERS, STUCK_RECEIVER, PortRef
from tests.unit.rules_support import GBPS, Fabric, by_rule, serious

LINE = 100 * GBPS


def storm_fabric() -> Fabric:
    """node3 is a stuck receiver on prio 3; node1 and node2 send to it through the switch."""
    fab = Fabric()
    for h in ("node1", "node2", "node3"):
        fab.port(h).traffic(60)
    return fab


def start_storm(fab: Fabric) -> None:
    # node3 pauses the switch 99.6% of the time and receives nothing; the switch in turn
    # pauses the senders, which stop transmitting on prio 3.
    fab.ports[("node3", "enp65s0f0np0")].traffic(0).set(
        tx_pause_us={3: 996_000.0}, tx_pause={3: 5976.0}
    )
    for h in ("node1", "node2"):
        fab.ports[(h, "enp65s0f0np0")].traffic(0).set(
            rx_pause_us={3: 995_000.0}, rx_pause={3: 5800.0}
        )


def end_storm(fab: Fabric) -> None:
    for h in ("node1", "node2", "node3"):
        fab.ports[(h, "enp65s0f0np0")].traffic(60).set(
            rx_pause_us={3: 0.0}, tx_pause_us={3: 0.0}, rx_pause={3: 0.0}, tx_pause={3: 0.0}
        )


def test_storm_fires_within_two_ticks_and_names_the_stuck_receiver() -> None:
    fab = storm_fabric()
    fab.run(3)
    start_storm(fab)
    assert not by_rule(fab.tick(), "pfc_storm")  # one interval is not yet a storm
    storms = {f.subject: f for f in by_rule(fab.tick(), "pfc_storm")}
    assert set(storms) == {
        "node1/enp65s0f0np0/prio3",
        "node2/enp65s0f0np0/prio3",
        "node3/enp65s0f0np0/prio3",
    }
    root = storms["node3/enp65s0f0np0/prio3"]
    assert root.severity == "critical"
    # what it is about, and who pauses whom, as data
    node = {h: PortRef(h, "enp65s0f0np0", "enp65s0f0np0") for h in ("node1", "node2", "node3")}
    assert (root.port, root.priority) == (node["node3"], 3)
    assert root.ref(STUCK_RECEIVER) == node["node3"]
    assert root.refs(PAUSED_PEERS) == (node["node1"], node["node2"])
    # and as text for people (doctor, snapshot), the same as before it was typed
    shown = root.shown_evidence()
    assert shown[STUCK_RECEIVER] == "node3/enp65s0f0np0"
    assert shown[PAUSED_PEERS] == "node1/enp65s0f0np0, node2/enp65s0f0np0"
    assert "stuck receiver" in root.summary and "99.6%" in root.summary
    victim = storms["node1/enp65s0f0np0/prio3"]
    assert victim.ref(STUCK_RECEIVER) == node["node3"]
    assert victim.refs(PAUSED_PEERS) == (node["node1"],)
    assert "node3/enp65s0f0np0" in victim.summary
    assert "prio3_pause" in victim.next_step
    # since: the start of the first stormy interval, not when it was confirmed
    assert root.since == fab.t - 2.0


def test_storm_restores_after_the_quiet_time() -> None:
    fab = storm_fabric()
    fab.run(2)
    start_storm(fab)
    fab.run(3)
    end_storm(fab)
    fab.run(3)  # 3 s quiet: still shown, saying it is clearing
    still = by_rule(fab.findings, "pfc_storm")
    assert still and all("clears in" in f.summary for f in still)
    fab.tick()  # 4 s quiet: restored
    assert not by_rule(fab.findings, "pfc_storm")


def test_storm_flicker_does_not_fire() -> None:
    fab = storm_fabric()
    fab.run(2)
    for _ in range(4):  # one stormy interval, one clean one, repeatedly
        start_storm(fab)
        fab.tick()
        end_storm(fab)
        assert not by_rule(fab.tick(), "pfc_storm")


def test_heavy_lossless_traffic_with_short_pauses_is_healthy() -> None:
    fab = Fabric()
    for h in ("node1", "node2", "node3", "node4"):
        fab.port(h).traffic(92).set(
            rx_pause_us={3: 30_000.0},  # paused 3% of the time
            tx_pause_us={3: 12_000.0},
            rx_pause={3: 400.0},
            tx_pause={3: 150.0},
            ecn_marked=20_000.0,
            cnp_sent=8_000.0,
            cnp_handled=8_000.0,
        )
    assert fab.run(10) == []


def test_heavy_pausing_with_traffic_flowing_is_information_only() -> None:
    fab = Fabric()
    fab.port("node1").traffic(80).set(
        rx_pause_us={3: 400_000.0}, rx_pause={3: 3000.0}, ecn_marked=50_000.0, cnp_handled=9e3
    )
    found = fab.run(3)
    assert not serious(found)
    assert [f.subject for f in by_rule(found, "pfc_pressure")] == ["node1/enp65s0f0np0/prio3"]


def test_storm_from_pause_frames_when_no_duration_counter() -> None:
    fab = Fabric()
    # An Intel-style port: per-priority XOFF frame counters for all 8, no durations.
    p = fab.port("node1", driver="ice", rdma_device=None, kind="netdev", pfc=None, trust=None)
    p.set(rx_pause=dict.fromkeys(range(8), 0.0)).traffic(20)
    fab.run(2)
    p.traffic(0).set(rx_pause={4: 2500.0})  # re-paused 2500 times/s and nothing sent
    fab.run(2)
    storms = by_rule(fab.findings, "pfc_storm")
    assert [f.subject for f in storms] == ["node1/enp65s0f0np0/prio4"]
    assert "2.5k pause frames/s" in storms[0].summary


def test_a_storm_keeps_one_wording_for_its_whole_episode() -> None:
    # It said "of the last 500 ms", "of the last 1 s", ... "of the last 15 s" within one
    # storm, beside the table's own "for 18 s": how long it lasts is said once, by `since`.
    fab = Fabric()
    p = fab.port("node3").traffic(20)
    fab.run(2)
    p.traffic(0).set(tx_pause_us={3: 998_000.0}, tx_pause={3: 5000.0})
    worded = set()
    for _ in range(20):
        for f in by_rule(fab.tick(), "pfc_storm"):
            worded.add(f.summary)
            assert "held_s" not in f.evidence
    assert len(worded) == 1, worded
    [summary] = worded
    assert "99.8% of the time" in summary and "last" not in summary


def test_nic_stall_watchdog_events() -> None:
    fab = Fabric()
    p = fab.port("node3").traffic(10)
    fab.run(2)
    p.set(tx_pause_storm_warning_events=1.0)
    found = by_rule(fab.tick(), "pfc_stall")
    assert [(f.subject, f.severity) for f in found] == [("node3/enp65s0f0np0", "warning")]
    p.set(tx_pause_storm_warning_events=0.0, tx_pause_storm_error_events=1.0)
    found = by_rule(fab.tick(), "pfc_stall")
    assert found[0].severity == "critical" and "flow control off" in found[0].summary
    p.set(tx_pause_storm_error_events=0.0)
    fab.run(30)
    assert by_rule(fab.findings, "pfc_stall")  # one-shot events stay visible a while
    fab.run(100)
    assert not by_rule(fab.findings, "pfc_stall")


def test_pauses_on_a_priority_where_pfc_is_off() -> None:
    fab = Fabric()
    # Counted on all 8 priorities (as Intel NICs do), but PFC is only on 3 here.
    p = fab.port("node2").traffic(50).set(rx_pause=dict.fromkeys(range(8), 0.0))
    fab.run(2)
    p.set(rx_pause={5: 300.0})
    found = by_rule(fab.tick(), "pfc_disabled_prio")
    assert [f.subject for f in found] == ["node2/enp65s0f0np0/prio5"]
    assert "PFC on: 3" in found[0].summary
    assert found[0].priority == 5 and found[0].evidence["pfc_enabled"] == (3,)
    assert found[0].shown_evidence()["pfc_enabled"] == "3"
    p.set(rx_pause={5: 0.0})
    fab.run(4)
    assert not by_rule(fab.findings, "pfc_disabled_prio")


def test_pfc_inferred_from_counter_names_is_never_contradicted() -> None:
    fab = Fabric()
    p = fab.port("node2", qos_source="ethtool").traffic(50)
    p.set(rx_pause=dict.fromkeys(range(8), 0.0))
    fab.run(2)
    p.set(rx_pause={5: 300.0})
    assert not by_rule(fab.tick(), "pfc_disabled_prio")


def test_pfc_priorities_and_trust_differing_across_hosts() -> None:
    fab = Fabric()
    for h in ("node1", "node2", "node4"):
        fab.port(h).traffic(40)
    odd = fab.port("node3", pfc=(3, 4), trust="pcp").traffic(40)
    found = fab.tick()
    pfc = by_rule(found, "pfc_mismatch")
    trust = by_rule(found, "trust_mismatch")
    assert [f.subject for f in pfc] == ["fabric"] and [f.subject for f in trust] == ["fabric"]
    assert "node3/enp65s0f0np0 (3,4)" in pfc[0].summary and "prio 3" in pfc[0].summary
    assert "node3/enp65s0f0np0 (pcp)" in trust[0].summary
    assert "mlnx_qos -i enp65s0f0np0" in pfc[0].next_step
    odd.pfc, odd.trust = (3,), "dscp"
    found = fab.tick()
    assert not by_rule(found, "pfc_mismatch") and not by_rule(found, "trust_mismatch")


def test_drops_on_the_lossless_priority() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0, 0: 500.0})  # prio 0 is lossy: its drops are normal
    found = by_rule(fab.tick(), "lossless_drops")
    assert [f.subject for f in found] == ["node1/enp65s0f0np0/prio3"]
    assert found[0].number(Metric.RX_DISCARDS_PRIO.per_s) == 40.0


def test_lossless_drops_are_held_for_the_restore_time_then_clear() -> None:
    # A healthy port beside it, and a priority whose drops stopped: the held finding still
    # counts its quiet time (rules pass by only the subjects with nothing held).
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.port("node2").traffic(70)
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    assert by_rule(fab.tick(), "lossless_drops")
    p.set(rx_discards_prio={3: 0.0})
    fab.run(3)  # 3 s quiet of the 4 s restore time
    held = by_rule(fab.findings, "lossless_drops")
    assert [f.subject for f in held] == ["node1/enp65s0f0np0/prio3"]
    assert "clears in 1 s" in held[0].summary
    fab.tick()
    assert not by_rule(fab.findings, "lossless_drops")


def test_lossless_drops_clear_when_the_priority_is_no_longer_lossless() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    assert by_rule(fab.tick(), "lossless_drops")
    p.pfc = (4,)  # PFC moved to prio 4: prio 3 drops what it likes, its finding restores
    fab.run(3)
    assert "clears in 1 s" in by_rule(fab.findings, "lossless_drops")[0].summary
    fab.tick()
    assert not by_rule(fab.findings, "lossless_drops")


def test_out_of_sequence_on_roce_with_pfc() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.run(2)
    p.set(out_of_sequence=12.0)
    found = by_rule(fab.tick(), "roce_out_of_sequence")
    assert [f.subject for f in found] == ["node1/enp65s0f0np0"]
    p.set(out_of_sequence=0.0)
    fab.run(4)
    assert not by_rule(fab.findings, "roce_out_of_sequence")


def test_lossless_priorities_from_mlx5_counter_names_without_qos_tool() -> None:
    fab = Fabric()
    p = fab.port("node1", trust=None, pfc=(3,)).traffic(70)
    fab.run(1)
    p.pfc = None  # no mlnx_qos: rx_prio3_pause existing says prio 3 is lossless
    p.set(rx_discards_prio={3: 5.0})
    assert [f.subject for f in by_rule(fab.tick(), "lossless_drops")] == [
        "node1/enp65s0f0np0/prio3"
    ]


def test_qos_dataclass_shape_used_by_the_rules() -> None:
    # The rules read these fields; a rename in the model must break here, not silently.
    q = QosConfig(source="mlnx_qos", trust="dscp", pfc_enabled=(3,))
    assert (q.trust, q.pfc_enabled, q.ecn_np_enabled) == ("dscp", (3,), None)


# Issue 15, item 5: drops on a lossless priority while no host ever receives a pause on
# it say the switch does not run PFC on that class, in the drop finding itself.
_NO_SWITCH_PFC = "the switch likely does not run PFC on this class"


def test_drops_with_no_pause_received_anywhere_blame_the_switch() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.port("node2").traffic(70)
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    found = by_rule(fab.tick(), "lossless_drops")
    assert len(found) == 1
    f = found[0]
    assert _NO_SWITCH_PFC in f.summary and "since their counters started" in f.summary
    assert f.number("ports_counting_rx_pause_prio3") == 2.0
    assert f.number("rx_pause_prio3_total_all_hosts") == 0.0
    assert "show pfc counters" in f.next_step and "priority 3" in f.next_step
    assert len(by_rule(fab.findings, "lossless_drops")) == 1  # one cause, one finding


def test_a_pause_received_by_any_host_keeps_the_switch_out_of_it() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.port("node2").traffic(70).set(rx_pause={3: 300.0}, rx_pause_us={3: 20_000.0})
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    f = by_rule(fab.tick(), "lossless_drops")[0]
    assert _NO_SWITCH_PFC not in f.summary
    assert f.number("rx_pause_prio3_total_all_hosts") is None
    assert "check the switch buffer/headroom" in f.next_step


def test_pauses_from_before_fabtop_watched_need_the_watch_time() -> None:
    # Counters that moved before fabtop started prove nothing about now: the switch is
    # named only after switch_pfc_watch_s without one pause received anywhere.
    fab = Fabric({"switch_pfc_watch_s": 10.0})
    p = fab.port("node1").traffic(70)
    q = fab.port("node2").traffic(70)
    rx_pause = q.metrics["rx_pause"]
    assert isinstance(rx_pause, dict)
    rx_pause[3] = 12_345
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    assert _NO_SWITCH_PFC not in by_rule(fab.tick(), "lossless_drops")[0].summary
    fab.run(8)
    f = by_rule(fab.tick(), "lossless_drops")[0]
    assert _NO_SWITCH_PFC in f.summary and "in the 1" in f.summary and "s watched" in f.summary
    assert f.number("rx_pause_prio3_total_all_hosts") == 12_345.0


def test_hosts_that_count_no_received_pauses_say_nothing_about_the_switch() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    for port in (p,):
        del port.rates["rx_pause"], port.metrics["rx_pause"]
    fab.run(2)
    p.set(rx_discards_prio={3: 40.0})
    f = by_rule(fab.tick(), "lossless_drops")[0]
    assert _NO_SWITCH_PFC not in f.summary


def test_out_of_sequence_with_no_pause_anywhere_blames_the_switch() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(70)
    fab.port("node2").traffic(70)
    fab.run(2)
    p.set(out_of_sequence=12.0)
    f = by_rule(fab.tick(), "roce_out_of_sequence")[0]
    assert _NO_SWITCH_PFC in f.summary and "prio 3" in f.summary
    assert "show pfc counters" in f.next_step
