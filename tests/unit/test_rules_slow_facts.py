"""State rules as the fabric's slow facts change under them, and the names rules raise.

Every rule runs on every pass: a change of configuration (MTU, firmware, software, PFC,
trust, PCIe, GIDs, an InfiniBand port's state) is named on the first tick it shows, a
change back clears it as the rule's memory says, and a fact changed in place (the same
object) counts as much as a new one.
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.frames import FrameDecoder
from collectors.samples import PcieLink, SoftwareVersions, VersionRead
from fabtop.config import HostConfig
from fabtop.core.findings import Finding
from fabtop.core.rules import RULES, Evaluator, Rule, RuleContext
from fabtop.core.rules.kinds import kind_of
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


# (what changes on a quiet fabric, the rule names it must raise on the first tick)
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
]


def _rules(found: list[Finding]) -> set[str]:
    return {f.rule for f in found}


def test_a_slow_fact_changed_is_named_on_the_first_tick_and_cleared_on_the_first_back() -> None:
    for change, want in CHANGES:
        fab, a, b, ib = _fabric()
        assert fab.run(3) == []
        saved = [
            (p, n, getattr(p, n))
            for p in (b, ib)
            for n in ("mtu", "firmware", "pfc", "trust", "pcie", "fields")
        ]
        versions = dict(fab.versions)
        change(fab, a, b, ib)
        assert _rules(fab.tick()) == want
        assert _rules(fab.run(3)) == want
        for p, n, v in saved:
            setattr(p, n, v)
        fab.versions = versions
        assert fab.tick() == [], want  # a state condition clears at once
        assert fab.run(3) == []


def test_a_port_without_a_subnet_manager_is_named_once_held_and_cleared_once_restored() -> None:
    # The one state rule with hold times (detect_s, restore_s): held from the first tick
    # the port sits in INIT, named on the second, and shown until quiet for restore_s.
    fab, _, _, ib = _fabric()
    fab.run(2)
    _fields(ib, port_state="INIT", sm_lid=0, state="init")
    assert fab.tick() == []
    assert "no_subnet_manager" in fab.evaluator.memory(fab).held
    assert _rules(fab.tick()) == {"no_subnet_manager"}
    _fields(ib, port_state="ACTIVE", sm_lid=1, state="active")
    assert [_rules(fab.tick()) for _ in range(4)] == [{"no_subnet_manager"}] * 3 + [set()]


def test_a_pcie_link_changed_in_place_is_seen() -> None:
    fab, _, b, _ = _fabric()
    b.pcie = PcieLink(16.0, 16, 16.0, 16)
    assert fab.run(3) == []
    b.pcie.width = 8  # the same object, read each tick: its values are the facts
    assert _rules(fab.tick()) == {"pcie_degraded"}


def _declared(rule: Rule, raised: dict[str, set[str]]) -> Rule:
    """``rule``, noting the rule names of the findings it returns."""

    def noted(ctx: RuleContext) -> list[Finding]:
        got = rule(ctx)
        raised.setdefault(rule.__name__, set()).update(f.rule for f in got)
        return got

    noted.__name__ = rule.__name__
    return noted


def test_every_rule_raises_only_the_names_it_declares() -> None:
    # A rule's declared names are the names of its tracks, and what a one-shot judgement
    # lists as not judged for it (Evaluator.once): a finding under another name would be
    # missing there. Over the slow-fact changes and the demo's whole cycle (storms, flaps,
    # ECN, GPUs, token rates, Thunderbolt, the Macs).
    raised: dict[str, set[str]] = {}
    rules = tuple(_declared(r, raised) for r in RULES)
    for change, _ in CHANGES:
        fab, a, b, ib = _fabric()
        fab.evaluator = Evaluator(rules=rules)
        fab.run(2)
        change(fab, a, b, ib)
        fab.run(2)
    sim = demo_fabric()
    state = FabricState([HostConfig(n) for n in sim.hosts], rules=Evaluator(rules=rules))
    state.evaluate_per_frame = False
    decoders = {n: FrameDecoder() for n in sim.hosts}
    for i in range(int(DEMO_CYCLE_S) + 5):
        for n, h in sim.hosts.items():
            for f in decoders[n].feed(h.frame(float(i), 1.0).encode()):
                state.apply_frame(n, f)
        state.evaluate()
    names = {r.__name__: set(k.names) for r in RULES if (k := kind_of(r)) is not None}
    assert {rule: got - names[rule] for rule, got in raised.items() if got - names[rule]} == {}
    assert sum(map(len, raised.values())) >= 15  # 15 names, state and rate rules: all judged
