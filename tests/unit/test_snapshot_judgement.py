"""A snapshot carries the findings of the fabric it was taken of (issue 27, class 6): state
rules judged at once on what it read, window rules only over a span that covers their
window, and the ones it could not judge named. Simulated probe text through the whole
pipeline (frames -> state -> rules -> snapshot document), as ``fabtop snapshot`` runs it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.frames import FrameDecoder
from fabtop.config import HostConfig
from fabtop.core.rules import RULES, make_evaluator
from fabtop.core.rules.kinds import STATE, WINDOW, kind_of
from fabtop.core.state import FabricState
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from fabtop.run import snapshot
from fabtop.run.demo import ManualClock, scenario_fabric
from fabtop.sim import Fabric, demo_hosts

Doc = dict[str, Any]


class Fed:
    """A fresh state fed frames a second apart from every host of ``fab``.

    ``skew``: hosts whose clock is that many seconds ahead of the operator's (their frames
    arrive, on the operator's clock, that much before their own stamp).
    """

    def __init__(self, fab: Fabric, skew: Mapping[str, float] | None = None) -> None:
        self.fab, self.skew = fab, skew or {}
        self.clock = ManualClock()
        self.state = FabricState(
            [HostConfig(name=n) for n in fab.hosts], rules=make_evaluator(), clock=self.clock
        )
        self.decoders = {n: FrameDecoder() for n in fab.hosts}
        self.t = 0

    def frames(self, n: int) -> FabricState:
        """``n`` more frames from every host; the state."""
        for _ in range(n):
            self.t += 1
            self.clock.t += 1.0
            for name, host in self.fab.hosts.items():
                for frame in self.decoders[name].feed(host.frame(float(self.t)).encode()):
                    ahead = self.skew.get(name)
                    arrived = None if ahead is None else frame.clock_ns / 1e9 - ahead
                    self.state.apply_frame(name, frame, arrived_unix=arrived)
        return self.state


def _feed(fab: Fabric, seconds: int, skew: Mapping[str, float] | None = None) -> FabricState:
    return Fed(fab, skew).frames(seconds)


def _node3(**changes: Any) -> Callable[[], Fabric]:
    """The demo fabric with node3 changed (a fault no --demo-scenario names)."""

    def make() -> Fabric:
        hosts = demo_hosts()
        hosts[2] = dataclasses.replace(hosts[2], **changes)
        return Fabric(hosts)

    return make


def _scenario(name: str) -> Callable[[], Fabric]:
    return lambda: scenario_fabric(name)


class _LostSchema:
    """A simulated host whose stream sends values for a schema it never defined."""

    def __init__(self, host: Any) -> None:
        self.host = host

    def __getattr__(self, name: str) -> Any:  # the simulation steps it as any host
        return getattr(self.host, name)

    def frame(self, t: float) -> str:
        text: str = self.host.frame(t)
        at = text.rindex("@@end")
        return text[:at] + "@@section ethtool_S eth9 - ok schema=99\n1 2\n" + text[at:]


def _lost_schema() -> Fabric:
    fab = scenario_fabric("healthy")
    fab.hosts["node3"] = _LostSchema(fab.hosts["node3"])  # type: ignore[assignment]
    return fab


# Each state rule's findings, and a fabric that raises them. Every state rule must be here
# (the first test checks it): a new one gets its fabric, and this class test covers it.
TRIGGERS: dict[str, tuple[Callable[[], Fabric], Mapping[str, float]]] = {
    "pfc_mismatch": (_scenario("pfc_mismatch"), {}),
    "trust_mismatch": (_scenario("trust_mismatch"), {}),
    "mtu_mismatch": (_scenario("mtu_mismatch"), {}),
    "roce_mtu_low": (_node3(mtu=4000), {}),
    "firmware_mismatch": (_scenario("version_mismatch"), {}),
    "pcie_degraded": (_scenario("pcie_degraded"), {}),
    "nic_temperature": (_node3(nic_temp_c=99.0), {}),
    "clock_skew": (_scenario("healthy"), {"node3": 600.0}),
    "no_subnet_manager": (_scenario("no_subnet_manager"), {}),
    "roce_no_ip_gid": (_scenario("roce_no_ip_gid"), {}),
    "gid_index_mismatch": (_scenario("gid_index_mismatch"), {}),
    "firewall_blocks_rdma": (_scenario("firewall_blocked"), {}),
    "tb_link_degraded": (_scenario("tb_lane_degraded"), {}),
    "tb_bridge_loop": (_scenario("tb_bridge_loop"), {}),
    "rdma_enabled_no_device": (_scenario("rdma_no_device"), {}),
    "rdma_needs_tb5": (_scenario("rdma_tb4"), {}),
    "rdma_port_no_ipv4": (_scenario("rdma_no_ipv4"), {}),
    "counters_undecoded": (_lost_schema, {}),
}


def test_every_rule_is_declared_state_or_window_where_it_is_defined() -> None:
    names: list[str] = []
    for rule in RULES:
        kind = kind_of(rule)
        assert kind is not None, f"{rule.__name__}: declare it with @state_rule or @window_rule"
        assert kind.kind in (STATE, WINDOW) and kind.names
        assert all(t in DEFAULT_THRESHOLDS for t in kind.window), rule.__name__
        assert kind.kind == WINDOW or not kind.window, rule.__name__
        names += kind.names
    assert len(names) == len(set(names))  # one rule name, one rule
    state = {n for r in RULES if (k := kind_of(r)) and k.kind == STATE for n in k.names}
    assert state == set(TRIGGERS)


@pytest.mark.parametrize("rule", list(TRIGGERS))
def test_a_state_finding_doctor_gives_is_in_a_two_frame_snapshot_of_the_same_fabric(
    rule: str,
) -> None:
    make, skew = TRIGGERS[rule]
    # doctor: a window of detect_s and two intervals more, the live rules' verdict
    watched = _feed(make(), 6, skew)
    watched.evaluate()
    assert rule in {f.rule for f in watched.findings}
    # a snapshot: two frames, what fabtop snapshot takes
    doc = snapshot.build(_feed(make(), 2, skew), 1.0)
    assert doc["span_s"] == 1.0
    assert rule in {f["rule"] for f in doc["findings"]}
    assert rule not in {n["rule"] for n in doc["not_judged"]}


def test_no_subnet_manager_is_in_a_snapshot_before_the_live_rule_has_held_it() -> None:
    fed = Fed(scenario_fabric("no_subnet_manager"))
    state = fed.frames(2)
    doc = snapshot.build(state, 1.0)
    (f,) = [f for f in doc["findings"] if f["rule"] == "no_subnet_manager"]
    assert f["severity"] == "critical" and f["host"] is None
    assert f["evidence"]["hosts"] == "node1, node2"
    # The one-shot judgement kept to itself: the live rule holds its detect_s as before,
    # and names it on the third frame, not earlier.
    assert "no_subnet_manager" not in {f.rule for f in state.findings}
    fed.frames(1)
    assert "no_subnet_manager" in {f.rule for f in state.findings}
    # Named live and by the one-shot judgement: one finding, not two.
    again = snapshot.build(state, 1.0)
    assert [f["rule"] for f in again["findings"]].count("no_subnet_manager") == 1


def _rules_of(doc: Doc) -> set[str]:
    return {f["rule"] for f in doc["findings"]}


def test_a_storm_is_not_judged_over_a_span_too_short_for_it_and_judged_once_covered() -> None:
    short = snapshot.build(_feed(scenario_fabric("pfc_storm"), 2), 1.0)
    assert "pfc_storm" not in _rules_of(short)
    need = DEFAULT_THRESHOLDS["detect_s"]
    assert {"rule": "pfc_storm", "needs_s": need, "span_s": 1.0} in short["not_judged"]
    # every window rule that needs more than a second of rates is named, no state rule
    windows = {
        n
        for r in RULES
        if (k := kind_of(r)) and k.kind == WINDOW and k.needs_s(DEFAULT_THRESHOLDS) > 1.0
        for n in k.names
    }
    assert {n["rule"] for n in short["not_judged"]} == windows
    covered = snapshot.build(_feed(scenario_fabric("pfc_storm"), 3), 1.0)
    assert covered["span_s"] == 2.0
    assert "pfc_storm" in _rules_of(covered)
    assert "pfc_storm" not in {n["rule"] for n in covered["not_judged"]}
    # a rule whose window is one interval of rates is judged in any two-frame snapshot
    assert "link_flap" not in {n["rule"] for n in short["not_judged"]}


def test_csv_and_prometheus_forms_carry_the_same_findings_and_not_judged() -> None:
    doc = json.loads(
        snapshot.render(snapshot.build(_feed(scenario_fabric("no_subnet_manager"), 2), 1.0), "json")
    )
    assert "no_subnet_manager" in _rules_of(doc) and doc["not_judged"]
    fams = {f.name: f for f in text_string_to_metric_families(snapshot.render(doc, "prom"))}
    assert {
        (s.labels["rule"], s.labels["severity"], s.labels["subject"])
        for s in fams["fabtop_finding"].samples
    } == {(f["rule"], f["severity"], f["subject"]) for f in doc["findings"]}
    assert {s.labels["rule"]: s.value for s in fams["fabtop_not_judged_needs_seconds"].samples} == {
        n["rule"]: n["needs_s"] for n in doc["not_judged"]
    }
    assert [s.value for s in fams["fabtop_snapshot_span_seconds"].samples] == [1.0]
    rows = list(csv.DictReader(io.StringIO(snapshot.render(doc, "csv"))))
    found = [(r["name"], r["value"]) for r in rows if r["kind"] == "finding"]
    assert found == [(f["rule"], f["severity"]) for f in doc["findings"]]
    skipped = {r["name"]: float(r["value"]) for r in rows if r["kind"] == "not_judged"}
    assert skipped == {n["rule"]: n["needs_s"] for n in doc["not_judged"]}
    (span,) = [r for r in rows if r["kind"] == "snapshot" and r["name"] == "span_s"]
    assert float(span["value"]) == doc["span_s"]


def test_a_host_gone_silent_is_not_reachable_in_the_snapshot() -> None:
    """Blind is not healthy: a stale host is said so, as its host_stale finding says."""
    from fabtop.run.demo import demo_state, feed_until

    state, clock, fab = demo_state(until_s=4.0)
    feed_until(fab, state, clock, 5.0, 30.0, silent=("node2",))
    doc = snapshot.build(state, 1.0)
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert hosts["node2"]["reachable"] is False and hosts["node2"]["status"] == "stale"
    assert hosts["node1"]["reachable"] is True
    assert any(f["rule"] == "host_stale" and f["subject"] == "node2" for f in doc["findings"])
