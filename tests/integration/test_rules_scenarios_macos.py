"""The Mac rules (issue 14) on the demo fabric's Mac Studios, through the whole pipeline:
simulated macOS probe text -> collectors/darwin.py -> state -> rules; and `fabtop doctor
--demo-scenario` for each, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from collectors.frames import FrameDecoder
from fabtop.config import HostConfig as Target
from fabtop.core.findings import Finding
from fabtop.core.rules import Evaluator
from fabtop.core.state import FabricState
from fabtop.run.demo import scenario_fabric
from fabtop.sim import demo_fabric

MAC_RULES = {"tb_bridge_loop", "rdma_enabled_no_device", "rdma_needs_tb5", "rdma_port_no_ipv4"}


def _run(fab_name: str | None, seconds: int) -> tuple[FabricState, list[list[Finding]]]:
    fab = scenario_fabric(fab_name) if fab_name else demo_fabric()
    names = list(fab.hosts)
    state = FabricState([Target(n) for n in names], rules=Evaluator())
    decoders = {n: FrameDecoder() for n in names}
    seen = []
    for t in range(1, seconds + 1):
        for n in names:
            for frame in decoders[n].feed(fab.hosts[n].frame(float(t)).encode()):
                state.apply_frame(n, frame)
        seen.append(list(state.findings))
    return state, seen


EXPECTED = {
    "rdma_no_ipv4": {("rdma_port_no_ipv4", "mac1/en3", "warning")},
    "tb_bridge_loop": {("tb_bridge_loop", f"mac{i}/bridge0", "critical") for i in (1, 2, 3)},
    "rdma_no_device": {("rdma_enabled_no_device", "mac2/rdma", "warning")},
    "rdma_tb4": {
        ("rdma_needs_tb5", "mac1/thunderbolt", "warning"),
        ("rdma_needs_tb5", "mac2/thunderbolt", "warning"),
    },
}


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_each_mac_rule_fires_on_its_scenario_from_the_first_slow_frame(scenario: str) -> None:
    state, seen = _run(scenario, 3)
    got = {(f.rule, f.subject, f.severity) for f in seen[0] if f.rule in MAC_RULES}
    assert got == EXPECTED[scenario]
    assert all(f.next_step for f in state.findings)
    assert not [f for f in state.findings if f.rule not in MAC_RULES]


def test_healthy_demo_with_its_macs_stays_quiet() -> None:
    state, seen = _run(None, 40)  # healthy, then incast: no Mac finding at all
    assert not [f for tick in seen for f in tick if f.rule in MAC_RULES]
    for mac in ("mac1", "mac2"):
        s = state.hosts[mac].sample
        assert s is not None and s.warnings == []
        assert s.macos is not None and s.macos.thermal_source == "macmon"
        assert s.thunderbolt is not None and s.thunderbolt.peers[0].total_gbps == 80
    # A receptacle with no cable is empty, not a link that went down: listed only with
    # the virtual netdevs; the cabled ones are up.
    m1 = state.hosts["mac1"].sample
    assert m1 is not None
    assert {n: lk.state for n, lk in m1.links.items() if lk.kind == "tb"} == {
        "en2": "empty",
        "en3": "up",
        "en4": "up",
        "en5": "empty",
        "en6": "empty",
        "en7": "empty",
    }
    from tui.rows.links import link_rows

    shown = {r.lid for r in link_rows(state, state.data_now(), 1.0) if r.host == "mac1"}
    assert "en3" in shown and "en2" not in shown
    assert "en2" in {r.lid for r in link_rows(state, state.data_now(), 1.0, True)}
    # The two ends of the cable name each other.
    a, b = (state.hosts[m].sample.thunderbolt for m in ("mac1", "mac2"))  # type: ignore[union-attr]
    assert a is not None and b is not None
    pa = next(p for p in a.peers if p.netdev == "en3")  # mac1's cable to mac2
    pb = b.peers[0]
    assert pa.peer_uid == pb.self_uid and pb.peer_uid == pa.self_uid


def test_the_demo_cycle_plays_the_rdma_port_losing_its_ipv4() -> None:
    fab = demo_fabric()
    assert fab.episode_at(170.0) == "rdma_no_ipv4"
    assert fab.episode_at(160.0) == "healthy"


def test_a_two_mac_bridge_is_no_loop() -> None:
    """Two Macs with their bridges holding the cable: no ring, no storm, no finding."""
    import dataclasses

    from fabtop.sim import Fabric
    from fabtop.sim.episodes import Episode

    hosts = [h for h in scenario_fabric("healthy").configs]
    fab = Fabric(hosts, (Episode("tb_bridge_loop", 0.0, 1e9),))
    assert "mac3" not in fab.hosts and dataclasses.is_dataclass(hosts[0])
    names = list(fab.hosts)
    state = FabricState([Target(n) for n in names], rules=Evaluator())
    decoders = {n: FrameDecoder() for n in names}
    for t in (1.0, 2.0):
        for n in names:
            for frame in decoders[n].feed(fab.hosts[n].frame(t).encode()):
                state.apply_frame(n, frame)
    mac = state.hosts["mac1"].sample
    # mac1's bridge holds both its cabled ports (en3 to mac2, en4 to the DGX Spark): a star
    # of three with no ring, which cannot loop
    assert mac is not None and mac.macos is not None
    assert mac.macos.bridges["bridge0"] == ("en3", "en4")
    assert not [f for f in state.findings if f.rule == "tb_bridge_loop"]


@pytest.mark.parametrize("scenario", ["rdma_no_ipv4", "tb_bridge_loop"])
def test_doctor_names_the_mac_rule(scenario: str) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "doctor",
            "--demo-scenario",
            scenario,
            "--window",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    doc = json.loads(p.stdout)
    got = {(f["rule"], f["subject"], f["host"]) for f in doc["findings"]}
    assert {(r, s, s.split("/")[0]) for r, s, _ in EXPECTED[scenario]} <= got
    assert p.returncode != 0
    assert any(g.startswith("unverified on mac1") for g in doc["coverage"]["gaps"])


def _darwin_frame(seq: int, extra: str) -> str:
    ns = 1_700_000_000_000_000_000 + seq * 1_000_000_000
    return (
        f"@@fabtop-frame {seq} {ns} {100 + seq}.0 {ns // 10**9}.000\n"
        f"@@section netstat_i - {ns} ok\n"
        "Name  Mtu   Network       Address            Ipkts Ierrs     Ibytes    Opkts Oerrs"
        "     Obytes  Coll Drop\n"
        "en0   1500  <Link#4>    a8:66:7f:dd:ee:ff  5708989     0 7295722068  3494252     0"
        "  379533492     0 230\n"
        f"{extra.replace('NS', str(ns))}"
        f"@@section probe - {ns} ok\nimpl zsh-darwin 5.9\n@@end {seq}\n"
    )


@pytest.mark.parametrize(
    ("ibv", "severity"),
    [
        ("@@section ibv_devinfo - NS missing ibv_devinfo\n", "info"),  # unknown: said, not calm
        ("@@section ibv_devinfo - NS error rc=255\nNo IB devices found\n", "warning"),
    ],
)
def test_rdma_enabled_without_devices_unknown_is_never_calm(ibv: str, severity: str) -> None:
    state = FabricState([Target("mac9")], rules=Evaluator())
    dec = FrameDecoder()
    for seq in (1, 2):
        text = _darwin_frame(seq, "@@section rdma_ctl - NS ok\nenabled\n" + ibv)
        for frame in dec.feed(text.encode()):
            state.apply_frame("mac9", frame)
    got = [(f.rule, f.severity) for f in state.findings]
    assert got == [("rdma_enabled_no_device", severity)]


@pytest.mark.parametrize(("rdma_ctl", "fires"), [("enabled", True), ("disabled", False)])
def test_tb4_rule_needs_rdma_switched_on_not_just_devices(rdma_ctl: str, fires: bool) -> None:
    """macOS lists rdma_enX on Thunderbolt 4 ports too: devices alone are no RDMA use."""
    from fabtop.sim.mac import TB4, MacState, ibv_devinfo_text, sp_thunderbolt_text

    mac = MacState("mac1")
    mac.conditions = frozenset({TB4})
    extra = (
        f"@@section rdma_ctl - NS ok\n{rdma_ctl}\n"
        f"@@section ibv_devinfo - NS ok\n{ibv_devinfo_text('mac1', mac)}\n"
        f"@@section sp_thunderbolt - NS ok\n{sp_thunderbolt_text('mac1', mac)}\n"
    )
    state = FabricState([Target("mac1")], rules=Evaluator())
    dec = FrameDecoder()
    for seq in (1, 2):
        for frame in dec.feed(_darwin_frame(seq, extra).encode()):
            state.apply_frame("mac1", frame)
    got = [f.rule for f in state.findings if f.rule == "rdma_needs_tb5"]
    assert got == (["rdma_needs_tb5"] if fires else [])
