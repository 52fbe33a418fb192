"""Congestion without ECN: pauses keep coming while no ECN marks or CNPs are seen."""

from __future__ import annotations

from collectors.vocabulary import Metric
from fabtop.core.findings import PAUSED_PEERS
from tests.unit.rules_support import Fabric, by_rule


def congested(ecn: bool) -> Fabric:
    fab = Fabric()
    # node2 is the congested receiver: it sends pauses; node1 and node3 are held back.
    recv = fab.port("node2").traffic(60)
    senders = [fab.port(h).traffic(45) for h in ("node1", "node3")]
    fab.run(2)
    recv.set(tx_pause={3: 1200.0}, tx_pause_us={3: 200_000.0})
    for s in senders:
        s.set(rx_pause={3: 900.0}, rx_pause_us={3: 150_000.0})
    if ecn:
        recv.set(ecn_marked=150_000.0, cnp_sent=50_000.0)
        for s in senders:
            s.set(cnp_handled=25_000.0)
    return fab


def test_fires_on_the_port_that_sends_pauses_within_two_ticks() -> None:
    fab = congested(ecn=False)
    assert not by_rule(fab.tick(), "congestion_without_ecn")
    found = by_rule(fab.tick(), "congestion_without_ecn")
    assert [f.subject for f in found] == ["node2/enp65s0f0np0"]
    f = found[0]
    assert f.severity == "warning"
    assert "no ECN marks or CNPs" in f.summary and "1.2k pauses/s" in f.summary
    assert [p.key for p in f.refs(PAUSED_PEERS)] == [
        ("node1", "enp65s0f0np0"),
        ("node3", "enp65s0f0np0"),
    ]
    assert f.shown_evidence()[PAUSED_PEERS] == "node1/enp65s0f0np0, node3/enp65s0f0np0"
    assert "ecn/roce_np" in f.next_step


def test_quiet_when_ecn_marks_and_cnps_flow() -> None:
    fab = congested(ecn=True)
    assert not by_rule(fab.run(6), "congestion_without_ecn")


def test_restores_when_pauses_stop() -> None:
    fab = congested(ecn=False)
    fab.run(3)
    for p in fab.ports.values():
        p.set(tx_pause={3: 0.0}, rx_pause={3: 0.0}, tx_pause_us={3: 0.0}, rx_pause_us={3: 0.0})
    fab.run(3)
    assert by_rule(fab.findings, "congestion_without_ecn")
    fab.tick()
    assert not by_rule(fab.findings, "congestion_without_ecn")


def test_senders_alone_are_reported_when_no_receiver_is_watched() -> None:
    fab = Fabric()
    s = fab.port("node1").traffic(45)
    fab.run(2)
    s.set(rx_pause={3: 900.0}, rx_pause_us={3: 150_000.0})
    found = by_rule(fab.run(2), "congestion_without_ecn")
    assert [f.subject for f in found] == ["node1/enp65s0f0np0"]
    assert "is paused 900 times/s" in found[0].summary


def test_unknown_when_the_port_has_no_ecn_counters() -> None:
    fab = Fabric()
    p = fab.port("node1").traffic(45)
    for name in (Metric.ECN_MARKED, Metric.CNP_SENT, Metric.CNP_HANDLED):
        del p.rates[name], p.metrics[name]
    fab.run(2)
    p.set(tx_pause={3: 2000.0}, tx_pause_us={3: 300_000.0})
    assert not by_rule(fab.run(4), "congestion_without_ecn")
