"""The evaluator: thresholds from the config, one broken rule, memory semantics."""

from __future__ import annotations

from fabtop.core.findings import Finding
from fabtop.core.rules import DEFAULT_THRESHOLDS, RULES, Evaluator, unknown_thresholds
from fabtop.core.rules.context import RuleContext, RuleMemory, Track
from fabtop.core.thresholds import __doc__ as rules_doc
from tests.unit.rules_support import Fabric, by_rule


def test_every_default_threshold_is_documented_in_the_table() -> None:
    assert rules_doc is not None
    for name in DEFAULT_THRESHOLDS:
        assert f"| ``{name}`` |" in rules_doc


def test_config_thresholds_override_defaults() -> None:
    fab = Fabric(thresholds={"nic_temp_warn_c": 60.0})
    fab.port("node1", temperature_c=65.0)
    assert by_rule(fab.tick(), "nic_temperature")
    fab2 = Fabric()
    fab2.port("node1", temperature_c=65.0)
    assert not by_rule(fab2.tick(), "nic_temperature")


def test_longer_detection_time_from_config() -> None:
    fab = Fabric(thresholds={"detect_s": 4.0})
    p = fab.port("node3").traffic(40)
    fab.run(2)
    p.traffic(40, rdma_share=0.0)
    assert not by_rule(fab.run(3), "rdma_fallback")
    assert by_rule(fab.tick(), "rdma_fallback")


def test_unknown_threshold_names_are_reported() -> None:
    assert unknown_thresholds(["storm_pause_ratio", "storm_pause_ration"]) == ["storm_pause_ration"]


def test_a_broken_rule_does_not_hide_the_others() -> None:
    def broken(ctx: RuleContext) -> list[Finding]:
        raise KeyError("boom")

    fab = Fabric()
    fab.evaluator = Evaluator(rules=(broken, *RULES))
    fab.port("node1", mtu=1500)
    found = fab.tick()
    assert any(f.rule == "fabtop" and "broken" in f.summary for f in found)
    assert by_rule(found, "roce_mtu_low")


def test_findings_are_sorted_worst_first() -> None:
    fab = Fabric()
    fab.port("node1", mtu=1500, temperature_c=110.0)
    sev = [f.severity for f in fab.tick()]
    assert sev == sorted(sev, key=lambda s: ("critical", "warning", "info").index(s))
    assert sev[0] == "critical"


def test_same_frame_evaluated_twice_does_not_advance_time() -> None:
    mem = RuleMemory()
    f = Finding("r", "warning", "s", "x")
    assert mem.debounce(f, ("r", "s"), 10.0, 1.0, 2.0, 4.0) is None
    # The state re-evaluates on every host's frame: the same remote time again.
    assert mem.debounce(f, ("r", "s"), 10.0, 1.0, 2.0, 4.0) is None
    assert mem.debounce(f, ("r", "s"), 11.0, 1.0, 2.0, 4.0) is not None


def test_memory_is_per_fabric() -> None:
    ev = Evaluator()
    a, b = Fabric(), Fabric()
    a.evaluator = b.evaluator = ev
    a.port("node1").traffic(40)
    b.port("node1").traffic(40)
    a.run(2)
    b.run(2)
    a.ports[("node1", "enp65s0f0np0")].traffic(40, rdma_share=0.0)
    a.run(2)
    b.run(2)
    assert by_rule(a.findings, "rdma_fallback") and not by_rule(b.findings, "rdma_fallback")
    assert ev.memory(a) is not ev.memory(b)


def test_one_noisy_sample_does_not_restart_a_hold_but_two_do() -> None:
    # A storm whose pause ratio dips under the threshold for one sample (tool read-time
    # jitter) is still named; a condition that misses twice is not held.
    f = Finding("r", "warning", "s", "x")
    key = ("r", "s")
    mem = RuleMemory()
    assert mem.debounce(f, key, 10.0, 1.0, 3.0, 4.0) is None
    assert mem.debounce(f, key, 11.0, 1.0, 3.0, 4.0) is None
    assert mem.debounce(None, key, 12.0, 1.0, 3.0, 4.0) is None  # one dip
    assert mem.debounce(f, key, 13.0, 1.0, 3.0, 4.0) is None  # 3 s held, 1 s to make up
    reported = mem.debounce(f, key, 14.0, 1.0, 3.0, 4.0)
    assert reported is not None and reported.since == 9.0  # the hold began before the dip
    # (Had the dip restarted the hold, it would be named at 15 s, since 12 s.)
    # Alternating hit and miss never holds: the second miss starts over.
    mem = RuleMemory()
    for i, cand in enumerate([f, None, f, None, f, None, f, None]):
        assert mem.debounce(cand, key, 20.0 + i, 1.0, 3.0, 4.0) is None


def test_memory_knows_which_rules_hold_a_track() -> None:
    # A rule passes by the subjects whose condition does not hold when it holds no track at
    # all (nothing to carry on or clear): the count behind that follows every way a track
    # comes and goes.
    f = Finding("r", "warning", "s", "x")
    mem = RuleMemory()
    assert not mem.remembers("r")
    mem.debounce(f, ("r", "a"), 10.0, 1.0, 0.0, 2.0)  # reported at once, held 2 s after
    mem.debounce(f, ("r", "b"), 10.0, 1.0, 0.0, 2.0)
    mem.mark(f, ("m", "a"), 10.0)
    assert mem.remembers("r") and mem.remembers("m") and not mem.remembers("s")
    mem.debounce(None, ("r", "a"), 11.0, 1.0, 0.0, 2.0)
    mem.debounce(None, ("r", "a"), 12.0, 1.0, 0.0, 2.0)  # quiet for 2 s: restored
    assert ("r", "a") not in mem.tracks and mem.remembers("r")  # b still held
    mem.mark(None, ("m", "a"), 12.0)
    mem.mark(None, ("m", "a"), 13.0)  # clearing what is clear changes nothing
    assert not mem.remembers("m")
    mem.forget_before(11.0)  # b was last updated at 10 s: its host went away
    assert not mem.remembers("r") and mem.tracks == {}
    # Broken before it was confirmed: one miss is noise, the second drops the track.
    mem.debounce(f, ("d", "a"), 20.0, 1.0, 5.0, 2.0)
    mem.debounce(None, ("d", "a"), 21.0, 1.0, 5.0, 2.0)
    assert mem.remembers("d")
    mem.debounce(None, ("d", "a"), 22.0, 1.0, 5.0, 2.0)
    assert not mem.remembers("d")
    # A memory made with tracks counts them.
    assert RuleMemory(tracks={("r", "a"): Track(since=0.0, last_t=0.0)}).remembers("r")


def _ctx(**thresholds: float) -> RuleContext:
    return RuleContext(Fabric(), {**DEFAULT_THRESHOLDS, **thresholds}, 0.0, RuleMemory())


def test_a_state_condition_handed_to_the_context_is_reported_at_once_and_cleared_at_once() -> None:
    ctx, key = _ctx(), ("r", "a")
    out: list[Finding] = []
    ctx.report(out, Finding("r", "warning", "a", "first"), key, 10.0)
    ctx.report(out, Finding("r", "warning", "a", "again"), key, 11.0)
    assert [(f.summary, f.since) for f in out] == [("first", 10.0), ("again", 10.0)]
    out.clear()
    ctx.report(out, None, key, 12.0)
    assert out == [] and not ctx.remembers("r")
    ctx.report(out, Finding("r", "warning", "a", "back"), key, 13.0)
    assert [f.since for f in out] == [13.0]  # a new episode


def test_a_held_condition_handed_to_the_context_waits_detect_s_and_stays_restore_s() -> None:
    # detect_s and restore_s are the context's thresholds unless the rule says otherwise.
    ctx, key = _ctx(detect_s=2.0, restore_s=3.0), ("r", "a")
    seen: list[list[Finding]] = []
    for t, found in [(10.0, True), (11.0, True), (12.0, False), (13.0, False), (14.0, False)]:
        out: list[Finding] = []
        f = Finding("r", "warning", "a", "x") if found else None
        ctx.report_debounced(out, f, key, t, 1.0)
        seen.append(out)
    assert [len(out) for out in seen] == [0, 1, 1, 1, 0]
    assert seen[1][0].since == 9.0  # the start of its first interval
    assert seen[3][0].summary == "x [not seen for 2 s; clears in 1 s]"
    assert seen[3][0].evidence["quiet_s"] == 2.0
    out = []
    ctx.report_debounced(out, Finding("e", "warning", "a", "y"), ("e", "a"), 20.0, 1.0, 0.0, 5.0)
    assert [f.since for f in out] == [19.0]  # no detection time: reported at once


def test_a_subject_with_nothing_found_is_carried_on_only_where_its_rule_remembers() -> None:
    ctx = _ctx(restore_s=3.0)
    out: list[Finding] = []
    ctx.report_debounced(out, Finding("r", "warning", "a", "x"), ("r", "a"), 10.0, 1.0, 0.0)
    ctx.report_debounced(out, None, ("r", "b"), 10.0, 1.0, 0.0)  # nothing held for b
    ctx.report(out, None, ("m", "b"), 10.0)  # a rule that remembers nothing
    assert [f.subject for f in out] == ["a"]
    assert set(ctx.memory.tracks) == {("r", "a")} and not ctx.remembers("m")
    out.clear()
    ctx.report_debounced(out, None, ("r", "a"), 11.0, 1.0, 0.0)  # a's held finding goes on
    assert [f.subject for f in out] == ["a"]
