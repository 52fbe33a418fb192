"""Simulated faults through the whole pipeline: frame text -> assemble -> state -> rules.

For each episode or misconfiguration the right rule fires on the right subject within
two ticks of the fault showing in the counters, and a healthy fabric under full load
(and an incast) raises nothing a tired operator would have to chase.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from collectors.frames import FrameDecoder
from collectors.parsers.prometheus_text import parse_inference_metrics
from fabtop.config import HostConfig as Target
from fabtop.core.findings import PAUSED_PEERS, STUCK_RECEIVER, Finding
from fabtop.core.rules import Evaluator
from fabtop.core.state import FabricState
from fabtop.sim import Fabric, demo_hosts
from fabtop.sim.episodes import FLAP_DOWN_FOR_S, OPTIC_FLAP_AT_S
from fabtop.sim.host import SimHostConfig

START = 5.0  # episodes start here; the frame at START + 1 is the first to show them


class Run:
    """A simulated fabric watched by the real FabricState, one frame per host per tick."""

    def __init__(self, fabric: Fabric, hosts: list[SimHostConfig]) -> None:
        self.fabric = fabric
        self.hosts = hosts
        self.state = FabricState([Target(h.name) for h in hosts], rules=Evaluator())
        self.decoders = {h.name: FrameDecoder() for h in hosts}
        self.t = 0.0
        self.log: list[tuple[float, list[Finding]]] = []

    def tick(self, dt: float = 1.0) -> list[Finding]:
        self.t += dt
        for h in self.hosts:
            sim = self.fabric.hosts[h.name]
            for frame in self.decoders[h.name].feed(sim.frame(self.t).encode()):
                self.state.apply_frame(h.name, frame)
            if h.inference_url:
                reading = parse_inference_metrics(sim.metrics_text(), h.inference_url)
                self.state.apply_inference(h.name, [reading])
        self.log.append((self.t, list(self.state.findings)))
        return self.state.findings

    def until(self, t: float) -> None:
        while self.t < t - 1e-9:
            self.tick()

    def first(self, rule: str, subject: str) -> float | None:
        """Time of the first tick where ``rule`` reported ``subject``."""
        for t, found in self.log:
            if any(f.rule == rule and f.subject == subject for f in found):
                return t
        return None


def episode(kind: str, duration_s: float = 1e9, **kw: Any) -> Run:
    hosts = demo_hosts()
    fab = Fabric.single(hosts, kind, start_s=START, duration_s=duration_s, **kw)
    return Run(fab, hosts)


def misconfigured(**override: Any) -> Run:
    hosts = demo_hosts()
    hosts[2] = dataclasses.replace(hosts[2], **override)  # node3
    # slow sections (ethtool -i, mlnx_qos) in every frame: config rules need them
    return Run(Fabric(hosts, (), slow_every_s=1.0), hosts)


def serious(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.severity in ("warning", "critical")]


def test_healthy_fabric_at_full_load_raises_nothing() -> None:
    hosts = demo_hosts()
    run = Run(Fabric(hosts, (), healthy_port_gbps=92.0), hosts)
    run.until(20)
    assert all(not serious(found) for _, found in run.log), run.log[-1]


def test_incast_gives_information_at_most() -> None:
    run = episode("incast")
    run.until(25)
    assert all(not serious(found) for _, found in run.log)


def test_pfc_storm_names_the_stuck_receiver_within_two_ticks() -> None:
    run = episode("pfc_storm")
    run.until(START + 6)
    subject = "node3/enp65s0f0np0/prio3"
    first = run.first("pfc_storm", subject)
    assert first is not None and first <= START + 2
    storm = next(f for f in run.state.findings if f.subject == subject)
    assert storm.severity == "critical"
    stuck = storm.ref(STUCK_RECEIVER)
    assert stuck is not None and stuck.label == "node3/enp65s0f0np0"
    peers = {p.label for p in storm.refs(PAUSED_PEERS)}
    assert {"node1/enp65s0f0np0", "node2/enp65s0f0np0", "node4/enp65s0f0np0"} <= peers
    # The paused senders are the storm's victims, not a second "no ECN" problem.
    assert not [f for f in run.state.findings if f.rule == "congestion_without_ecn"]
    # node1's inference server stalls with it and is shown with the storm.
    drop = [f for f in run.state.findings if f.rule == "token_drop"]
    assert drop and drop[0].evidence["fabric_event"] == subject


def test_pfc_storm_restores_after_it_ends() -> None:
    run = episode("pfc_storm", duration_s=8.0)
    run.until(START + 8 + 6)
    assert not [f for f in run.state.findings if f.rule == "pfc_storm"]


def test_switch_without_pfc_is_named_in_the_drop_finding() -> None:
    # Hosts with PFC on prio 3 behind a switch that runs none: the switch drops under
    # incast and nobody is ever paused. One finding, naming the switch as the cause.
    run = episode("switch_no_pfc")
    run.until(START + 4)
    subject = "node1/enp65s0f0np0"
    first = run.first("roce_out_of_sequence", subject)
    assert first is not None and first <= START + 2
    found = [f for f in run.state.findings if f.severity in ("warning", "critical")]
    assert [(f.rule, f.subject) for f in found] == [("roce_out_of_sequence", subject)]
    f = found[0]
    assert "the switch likely does not run PFC on this class" in f.summary
    assert f.number("rx_pause_prio3_total_all_hosts") == 0.0
    assert "PFC is enabled for priority 3" in f.next_step


def test_a_plain_incast_never_blames_the_switch() -> None:
    # Incast on a switch that does run PFC: hosts receive pauses, nothing is dropped.
    run = episode("incast")
    run.until(START + 10)
    assert not any("switch likely" in f.summary for _, found in run.log for f in found)


def test_no_ecn_points_at_the_host_without_dcqcn() -> None:
    run = episode("no_ecn")
    run.until(START + 4)
    first = run.first("congestion_without_ecn", "node2/enp65s0f0np0")
    assert first is not None and first <= START + 2
    found = [f for f in run.state.findings if f.rule == "congestion_without_ecn"]
    assert [f.subject for f in found] == ["node2/enp65s0f0np0"]


def test_link_flap_is_reported_within_two_ticks_of_the_carrier_drop() -> None:
    run = episode("link_flap")
    run.until(START + 20)
    first = run.first("link_flap", "node2/enp65s0f1np1")
    # the episode drops the carrier 8 s in (fabtop.sim.episodes.FLAP_DOWN_AT_S)
    assert first is not None and START + 8 <= first <= START + 8 + 2
    flap = next(f for f in run.state.findings if f.rule == "link_flap")
    assert "up again" in flap.summary


def test_a_degrading_optic_is_named_before_its_link_flaps_and_again_after() -> None:
    run = episode("optic_degrade")
    port = "node1/enp65s0f1np1"
    flap = START + OPTIC_FLAP_AT_S
    while run.t < flap + 20:
        run.tick(2.0)  # 2 s frames: the rules judge windows of a minute
    named = run.first("cable_ber", port)
    assert named is not None and named < flap, (named, flap)
    after = run.first("ber_after_flap", port)
    assert after is not None and flap < after <= flap + FLAP_DOWN_FOR_S + 14
    (f,) = [f for f in run.log[-1][1] if f.rule == "ber_after_flap"]
    assert f.severity == "critical" and f.number("ber_before_flap") is not None
    cable = {"cable_ber", "ber_after_flap", "fec_uncorrectable", "link_integrity"}
    others = {f.subject for _, found in run.log for f in found if f.rule in cable}
    assert others == {port}  # every other port corrects a constant healthy BER: quiet


def test_gpu_thermal_slowdown_is_reported() -> None:
    run = episode("gpu_thermal", duration_s=30.0)
    run.until(START + 26)
    assert run.first("gpu_thermal_slowdown", "node4/gpu1") is not None
    run.until(START + 40)
    assert not [f for f in run.state.findings if f.subject == "node4/gpu1"]


@pytest.mark.parametrize(
    ("override", "rule", "subject"),
    [
        ({"mtu": 1500}, "mtu_mismatch", "fabric"),
        ({"mtu": 1500}, "roce_mtu_low", "node3/enp65s0f0np0"),
        ({"pfc_prios": (3, 4)}, "pfc_mismatch", "fabric"),
        ({"trust": "pcp"}, "trust_mismatch", "fabric"),
        ({"firmware": "22.36.1010"}, "firmware_mismatch", "fabric"),
        ({"rdma_core": "2307mlnx47-1.2307050"}, "firmware_mismatch", "fabric"),  # issue 15
        ({"pcie_width": 8}, "pcie_degraded", "node3/enp65s0f0np0"),
        ({"nic_temp_c": 100.0}, "nic_temperature", "node3/enp65s0f0np0"),
        (dict(rdma_share=0.01), "rdma_fallback", "node3/enp65s0f0np0"),
    ],
)
def test_misconfiguration_is_found(override: dict[str, Any], rule: str, subject: str) -> None:
    run = misconfigured(**override)
    run.until(3)  # rates need two frames: the first tick with rates is t=2
    hit = [f for f in run.state.findings if f.rule == rule and f.subject == subject]
    assert hit, [(f.rule, f.subject) for f in run.state.findings]
    if subject == "fabric":
        assert "node3" in hit[0].summary
