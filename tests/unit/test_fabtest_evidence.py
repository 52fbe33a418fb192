"""A test step's evidence: the same window's counters on every end, judged by the rules."""

from __future__ import annotations

from collections import Counter

from collectors.assemble import assemble
from collectors.frames import FrameDecoder
from collectors.samples import HostSample, LinkSample, PcieLink
from collectors.vocabulary import Metric
from fabtop.core.findings import Finding, PortRef
from fabtop.fabtest.evidence import BY_CABLE_RULES, CHECKS, End, WindowEvidence, window_evidence
from fabtop.fabtest.judge import Bandwidth, Incast, Status, judge_bandwidth, judge_incast
from fabtop.fabtest.plans import INCAST, PAIR, Step
from fabtop.sim import Fabric, demo_hosts
from tests.unit.rules_support import Port

P0 = "enp65s0f0np0"


def sim_sample(fab: Fabric, host: str, t: float) -> HostSample:
    """What the probe's frame of ``host`` at ``t`` assembles to, as live."""
    (frame,) = FrameDecoder().feed(fab.hosts[host].frame(t).encode())
    return assemble(host, frame, {})


def sim_window(kind: str, pair: tuple[str, str], hosts: int = 2) -> WindowEvidence:
    """Evidence of ``pair``'s first RoCE ports over 12 s of an episode on node1's port 0."""
    fab = Fabric.single(demo_hosts()[:hosts], kind, target="node1", port=0)
    start = {h: sim_sample(fab, h, 2.0) for h in pair}
    end = {h: sim_sample(fab, h, 14.0) for h in pair}
    return window_evidence([End(h, P0, start[h], end[h]) for h in pair])


def test_every_error_discard_pause_and_congestion_counter_is_in_one_check() -> None:
    checked = Counter(m for c in CHECKS for m in c.metrics)
    assert set(checked.values()) == {1}
    # the cable's corrected and FEC counts: the cable rules judge them over their windows
    assert set(checked) == {m for m in Metric if m.category != "traffic"} - BY_CABLE_RULES
    assert {
        Metric.FEC_CORRECTED_BLOCKS,
        Metric.FEC_UNCORRECTABLE_BLOCKS,
        Metric.PHY_CORRECTED_BITS,
    } == BY_CABLE_RULES


def test_a_healthy_window_rules_out_everything_it_reads() -> None:
    ev = sim_window("healthy", ("node1", "node2"))
    assert ev.findings == [] and ev.moved == [] and ev.not_read == []
    assert ev.seconds == 12.0
    assert ev.ruled_out == [
        *(c.what for c in CHECKS),
        "PCIe link below capability",
        "MTU mismatch",
        "GPU, CPU and NIC throttling",
    ]
    assert not ev.lossless_loss


def test_drops_without_pfc_on_the_switch_are_named_on_the_right_pair_and_fail_a_pass() -> None:
    bad = sim_window("switch_no_pfc", ("node1", "node2"), hosts=3)
    assert bad.lossless_loss
    lost = [f for f in bad.findings if f.rule == "roce_out_of_sequence"]
    assert [f.port.key for f in lost if f.port] == [("node1", P0)]
    assert "switch likely does not run PFC" in lost[0].summary
    assert any(m.metric == "out_of_sequence" and m.port.host == "node1" for m in bad.moved)
    assert "out-of-sequence packets and ACK timeouts" not in bad.ruled_out
    # The other pair of the same fabric and window lost nothing.
    good = sim_window("switch_no_pfc", ("node2", "node3"), hosts=3)
    assert not good.lossless_loss
    assert "out-of-sequence packets and ACK timeouts" in good.ruled_out
    # 95 Gb/s of a 100 Gb/s port passes on its figure, and is still not a pass.
    step = Step(PAIR, 0, ("node2",), "node1")
    (v,) = judge_bandwidth([Bandwidth(step, 95.0, 100.0, bad)])
    assert v.status == Status.FAIL
    assert "lost on a lossless priority" in v.reasons[0]
    (ok,) = judge_bandwidth([Bandwidth(step, 95.0, 100.0, good)])
    assert ok.status == Status.PASS


def test_a_link_flap_in_the_window_is_named_with_its_next_step() -> None:
    ev = sim_window("link_flap", ("node1", "node2"))
    assert [f.rule for f in ev.findings] == ["link_flap"]
    assert any(m.metric == "link_down_events" and m.delta == 1 for m in ev.moved)
    assert "link flaps" not in ev.ruled_out
    assert ev.next_steps[0].startswith(f"ip -s link show dev {P0}")
    assert not ev.lossless_loss
    (v,) = judge_bandwidth([Bandwidth(Step(PAIR, 0, ("node2",), "node1"), 95.0, 100.0, ev)])
    assert v.status == Status.WARN and "link went down" in v.reasons[0]


def test_a_storm_is_named_on_the_stuck_receiver() -> None:
    ev = sim_window("pfc_storm", ("node1", "node2"))
    storm = [f for f in ev.findings if f.rule == "pfc_storm"]
    assert storm and storm[0].port == PortRef("node1", P0, P0)
    assert "PFC and global pauses" not in ev.ruled_out


def hand(host: str, link: LinkSample, t: float) -> HostSample:
    return HostSample(host, round(t), round(t * 1e9), t, links={link.id: link})


def ends(a: Port, b: Port, dt: float = 5.0, reset: bool = False) -> list[End]:
    """Two hand-built ports (hosts a and b) over ``dt`` seconds at their set rates."""
    a.grow(dt)  # counters that have run a while before the window
    b.grow(dt)
    s0 = {"a": hand("a", a.sample(), 1000.0), "b": hand("b", b.sample(), 1000.0)}
    a.grow(dt)
    b.grow(dt)
    if reset:  # b's driver reloaded: its counters start again below where they were
        b.metrics = {
            k: ({p: 0 for p in v} if isinstance(v, dict) else 0) for k, v in b.metrics.items()
        }
    s1 = {"a": hand("a", a.sample(), 1000.0 + dt), "b": hand("b", b.sample(), 1000.0 + dt)}
    return [End(h, "eth0", s0[h], s1[h]) for h in ("a", "b")]


def test_a_check_an_end_cannot_read_is_said_never_ruled_out() -> None:
    a = Port("eth0", rates={"retransmits": 0.0, "rx_phy_errors": 0.0})
    b = Port("eth0", rates={"retransmits": 0.0})  # no CRC/symbol error counter
    del b.metrics["ecn_marked"], b.metrics["cnp_sent"], b.metrics["cnp_handled"]
    del b.rates["ecn_marked"], b.rates["cnp_sent"], b.rates["cnp_handled"]
    ev = window_evidence(ends(a, b))
    assert "b/eth0: reads no ECN marks and CNPs" in ev.not_read
    assert "b/eth0: reads no CRC, symbol and link-integrity errors" in ev.not_read
    assert "ECN marks and CNPs" not in ev.ruled_out
    assert "CRC, symbol and link-integrity errors" not in ev.ruled_out
    assert "retransmissions" in ev.ruled_out
    # No PCIe width read on either end: not ruled out either.
    assert "PCIe link below capability" not in ev.ruled_out
    assert "a/eth0: no PCIe link width" in ev.not_read


def test_counters_that_restarted_in_the_window_give_no_deltas_and_rule_nothing_out() -> None:
    a, b = (
        Port("eth0").set(rx_discards_prio={3: 50.0}),
        Port("eth0").set(rx_discards_prio={3: 50.0}),
    )
    ev = window_evidence(ends(a, b, reset=True))
    assert "b/eth0: its counters restarted in the window (no deltas)" in ev.not_read
    assert {m.port.host for m in ev.moved} == {"a"}
    assert not [c.what for c in CHECKS if c.what in ev.ruled_out]


def test_mtu_differing_between_the_ends_is_said() -> None:
    ev = window_evidence(ends(Port("eth0", mtu=9000), Port("eth0", mtu=1500)))
    assert [f.rule for f in ev.findings if f.rule == "mtu_mismatch"] == ["mtu_mismatch"]
    assert "MTU mismatch" not in ev.ruled_out
    # Between two veths (virtual: the fabric rule does not weigh them) it is said all the same.
    va = Port(
        "eth0",
        kind="virtual",
        mtu=9000,
        rdma_device=None,
        driver="veth",
        fields={"physical": False},
    )
    vb = Port(
        "eth0",
        kind="virtual",
        mtu=1500,
        rdma_device=None,
        driver="veth",
        fields={"physical": False},
    )
    ev = window_evidence(ends(va, vb))
    (f,) = [f for f in ev.findings if f.rule == "mtu_mismatch"]
    assert f.summary == "MTU differs between the ends: a/eth0 9000, b/eth0 1500"


def test_live_findings_of_the_window_join_for_these_ports_only() -> None:
    here = Finding(
        "pfc_storm", "critical", "a/eth0/prio3", "storm", port=PortRef("a", "eth0", "eth0")
    )
    there = Finding(
        "pfc_storm", "critical", "c/eth0/prio3", "storm", port=PortRef("c", "eth0", "eth0")
    )
    ev = window_evidence(ends(Port("eth0"), Port("eth0")), live=[here, there])
    assert ev.findings == [here]


def sim_incast(kind: str) -> WindowEvidence:
    """An incast's window (node2..node4 into node1) during episode ``kind`` on node1."""
    hosts = ("node1", "node2", "node3", "node4")
    fab = Fabric.single(demo_hosts()[:4], kind, target="node1", port=0)
    start = {h: sim_sample(fab, h, 2.0) for h in hosts}
    end = {h: sim_sample(fab, h, 14.0) for h in hosts}
    return window_evidence([End(h, P0, start[h], end[h]) for h in hosts])


def test_a_healthy_incast_pauses_and_marks_and_still_passes() -> None:
    ev = sim_incast("incast")
    assert ev.serious == [] and not ev.lossless_loss
    moved = {(m.port.host, m.check) for m in ev.moved}
    assert {("node1", "pauses"), ("node1", "ecn"), ("node2", "pauses")} <= moved
    assert "discards" in ev.ruled_out and "PFC and global pauses" not in ev.ruled_out
    step = Step(INCAST, 0, ("node2", "node3", "node4"), "node1")
    (v,) = judge_incast([Incast(step, (31.0, 30.0, 31.0), 100.0, ev)])
    assert v.status == Status.PASS


def test_congestion_without_ecn_in_the_window_is_a_warning_and_not_ruled_out() -> None:
    ev = sim_incast("no_ecn")
    assert [f.rule for f in ev.serious] == ["congestion_without_ecn"]
    assert "ECN marks and CNPs" not in ev.ruled_out  # the finding rests on their silence
    assert "discards" in ev.ruled_out
    step = Step(INCAST, 0, ("node2", "node3", "node4"), "node1")
    (v,) = judge_incast([Incast(step, (31.0, 30.0, 31.0), 100.0, ev)])
    assert v.status == Status.WARN
    assert "congestion handled by PFC alone" in v.reasons[0]


def test_a_window_of_one_frame_rules_out_no_counter() -> None:
    s = hand("a", Port("eth0").sample(), 1000.0)
    ev = window_evidence([End("a", "eth0", s, s)])
    assert ev.seconds is None and ev.moved == []
    assert ev.not_read[0] == "a/eth0: no rates over the window (no two frames of it)"
    assert not [c.what for c in CHECKS if c.what in ev.ruled_out]


def test_a_pcie_link_below_capability_is_named_and_a_full_one_ruled_out() -> None:
    full, narrow = PcieLink(16.0, 16, 16.0, 16), PcieLink(16.0, 8, 16.0, 16)
    ev = window_evidence(ends(Port("eth0", pcie=full), Port("eth0", pcie=narrow)))
    (f,) = [f for f in ev.findings if f.rule == "pcie_degraded"]
    assert f.port == PortRef("b", "eth0", "eth0")
    assert "PCIe link below capability" not in ev.ruled_out
    ev = window_evidence(ends(Port("eth0", pcie=full), Port("eth0", pcie=full)))
    assert "PCIe link below capability" in ev.ruled_out
