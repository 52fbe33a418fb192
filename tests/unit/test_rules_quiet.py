"""The evaluator passes quiet state rules by (QUIET_RULES): never a finding lost or late.

Each test feeds one fabric to two evaluators, one passing quiet state rules by and one
running every rule, and wants the very same findings after every tick while the slow
facts change under them (and each change raises what it should, so the comparison has
something to miss).
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.frames import FrameDecoder
from collectors.samples import PcieLink, SoftwareVersions, VersionRead
from fabtop.config import HostConfig
from fabtop.core.rules import QUIET_RULES, Evaluator
from fabtop.core.state import FabricState
from fabtop.sim import demo_fabric
from fabtop.sim.episodes import DEMO_CYCLE_S
from tests.unit.gid_captures import table
from tests.unit.rules_support import Fabric, Port

NCCL1131 = "show_gids_mlx5_ipv4_at_3_nccl1131.txt"  # IPv4 RoCE v2 at index 3
NSDPERF = "show_gids_cx6_second_linklocal_ipv4_at_5_nsdperf.txt"  # ... at index 5
KERNEL = SoftwareVersions(kernel=VersionRead("6.8.0-45-generic", "uname -r"))

Change = Callable[[Fabric, Port, Port], None]


def _fabric() -> tuple[Fabric, Port, Port, Port]:
    fab = Fabric()
    gids = table(NCCL1131, "mlx5_0")
    a = fab.port("a", fields={"gids": gids, "port_state": "ACTIVE", "node_type": "CA"})
    b = fab.port("b", fields={"gids": gids, "port_state": "ACTIVE", "node_type": "CA"})
    ib = fab.port(
        "b",
        "ibp65s0",
        kind="ib",
        rdma_device="mlx5_2",
        pfc=None,
        trust=None,
        fields={
            "link_layer": "InfiniBand",
            "port_state": "ACTIVE",
            "phys_state": "LinkUp",
            "sm_lid": 1,
            "state": "active",
        },
    )
    for h in ("a", "b"):
        fab.versions[h] = KERNEL
    return fab, a, b, ib


def _set(port: Port, **kw: object) -> None:
    for k, v in kw.items():
        setattr(port, k, v)


def _fields(port: Port, **kw: object) -> None:
    port.fields = {**port.fields, **kw}


# (what changes on a quiet fabric, the rule names it must raise)
CHANGES: list[tuple[Change, set[str]]] = [
    (lambda fab, a, b, ib: _set(b, mtu=1500), {"mtu_mismatch", "roce_mtu_low"}),
    (lambda fab, a, b, ib: _set(b, firmware="22.41.1000"), {"firmware_mismatch"}),
    (
        lambda fab, a, b, ib: fab.versions.__setitem__(
            "b", SoftwareVersions(kernel=VersionRead("6.11.0-1-generic", "uname -r"))
        ),
        {"firmware_mismatch"},
    ),
    (lambda fab, a, b, ib: _set(b, pfc=(4,)), {"pfc_mismatch"}),
    (lambda fab, a, b, ib: _set(b, trust="pcp"), {"trust_mismatch"}),
    (lambda fab, a, b, ib: _set(b, pcie=PcieLink(8.0, 8, 16.0, 16)), {"pcie_degraded"}),
    (lambda fab, a, b, ib: _fields(b, gids=table(NCCL1131, "mlx5_0")[:2]), {"roce_no_ip_gid"}),
    (lambda fab, a, b, ib: _fields(b, gids=table(NSDPERF, "mlx5_0")), {"gid_index_mismatch"}),
    (lambda fab, a, b, ib: _fields(ib, port_state="INIT"), {"no_subnet_manager"}),
]


def _same_ticks(fab: Fabric, slow: Evaluator, n: int) -> set[str]:
    raised: set[str] = set()
    for _ in range(n):
        fast = fab.tick()
        assert fast == slow(fab)
        raised |= {f.rule for f in fast}
    return raised


def test_quiet_rules_find_what_every_rule_run_finds_as_slow_facts_change() -> None:
    for change, want in CHANGES:
        fab, a, b, ib = _fabric()
        slow = Evaluator(quiet_rules={})
        assert _same_ticks(fab, slow, 3) == set()  # quiet: the state rules are passed by
        assert fab.evaluator.memory(fab).quiet
        saved = [
            (p, n, getattr(p, n))
            for p in (b, ib)
            for n in ("mtu", "firmware", "pfc", "trust", "pcie", "fields")
        ]
        versions = dict(fab.versions)
        change(fab, a, b, ib)
        assert want <= _same_ticks(fab, slow, 4), want
        # Back to the first facts: what was raised clears on the same tick in both.
        for p, n, v in saved:
            setattr(p, n, v)
        fab.versions = versions
        _same_ticks(fab, slow, 4)
        assert not fab.findings


def test_a_pcie_link_changed_in_place_is_seen() -> None:
    fab, _, b, _ = _fabric()
    slow = Evaluator(quiet_rules={})
    b.pcie = PcieLink(16.0, 16, 16.0, 16)
    _same_ticks(fab, slow, 3)
    b.pcie.width = 8  # the same object, read each tick: its values are the facts
    assert "pcie_degraded" in _same_ticks(fab, slow, 2)


def test_a_state_rule_with_a_track_always_runs() -> None:
    # The subnet-manager rule holds a port for detect_s before it reports: while it holds
    # (a track, no finding yet) it runs on every pass, and reports on time.
    fab, _, _, ib = _fabric()
    slow = Evaluator(quiet_rules={})
    _same_ticks(fab, slow, 2)
    _fields(ib, port_state="INIT", sm_lid=0, state="init")
    fab.tick()
    assert not fab.findings and slow(fab) == []
    assert "no_subnet_manager" in fab.evaluator.memory(fab).held
    assert "no_subnet_manager" in _same_ticks(fab, slow, 3)


def test_every_quiet_rule_raises_only_the_names_it_declares() -> None:
    # A rule's declared names are how the evaluator knows it remembers something.
    for change, _ in CHANGES:
        fab, a, b, ib = _fabric()
        fab.run(2)
        change(fab, a, b, ib)
        for rule, names in QUIET_RULES.items():
            ev = Evaluator(rules=(rule,), quiet_rules={})
            for _ in range(4):
                fab.tick()
                assert {f.rule for f in ev(fab)} <= set(names), rule.__name__


def test_the_demo_fabric_gets_the_same_findings_either_way() -> None:
    # Every episode of the demo (storms, flaps, drops, Thunderbolt, the Macs) once through,
    # the frames assembled as live: each pass's findings, since and evidence included.
    fab = demo_fabric()
    states = [
        FabricState([HostConfig(n) for n in fab.hosts], rules=Evaluator(quiet_rules=q))
        for q in (QUIET_RULES, {})
    ]
    decoders = {n: FrameDecoder() for n in fab.hosts}
    raised: set[str] = set()
    for i in range(int(DEMO_CYCLE_S) + 5):
        for n, h in fab.hosts.items():
            for f in decoders[n].feed(h.frame(float(i), 1.0).encode()):
                for st in states:
                    st.apply_frame(n, f)
        assert states[0].findings == states[1].findings, i
        raised |= {f.rule for f in states[0].findings}
    assert len(raised) >= 5  # storms, flaps, ECN, GPUs: rate rules beside the quiet ones
