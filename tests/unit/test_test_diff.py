"""``fabtop diff`` of two ``fabtop test`` reports: steps matched by what they measured,
any plan's figures by name, and hostile documents refused in one line naming the file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fabtop.commands.diff import DiffError, compare
from fabtop.commands.testdiff import diff_reports
from fabtop.core.findings import PortRef
from fabtop.fabtest.evidence import Moved, WindowEvidence
from fabtop.fabtest.judge import Bandwidth, judge_bandwidth
from fabtop.fabtest.plans import PAIR, Step
from fabtop.fabtest.report import document
from fabtop.fabtest.runner import Options, Report, StepResult

DELETE = object()  # a field the hostile document lacks
AB, BA, AC = Step(PAIR, 0, ("a",), "b"), Step(PAIR, 0, ("b",), "a"), Step(PAIR, 1, ("a",), "c")


def _doc(gbps: dict[Step, float], discards: int = 0, order: list[Step] | None = None) -> Any:
    """A real report (report.document) of pair steps at these rates."""
    steps = order or list(gbps)
    ev = {
        s: WindowEvidence(
            1.0,
            moved=[Moved("discards", PortRef(s.receiver, "l", "eth0"), "rx_discards", 3, discards)]
            if discards
            else [],
        )
        for s in steps
    }
    verdicts = judge_bandwidth([Bandwidth(s, gbps[s], 100.0, ev[s]) for s in steps])
    r = Report("pairs", ["a", "b", "c"], Options(seconds=2), started_unix=1.8e9)
    r.results = [StepResult(s, v, "perftest") for s, v in zip(steps, verdicts, strict=True)]
    r.engines = {"a": {"ib_write_bw": "6.29"}}
    return json.loads(json.dumps(document(r)))


def _files(tmp_path: Path, a: Any, b: Any) -> tuple[str, str]:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(a if isinstance(a, str) else json.dumps(a))
    pb.write_text(b if isinstance(b, str) else json.dumps(b))
    return str(pa), str(pb)


def test_steps_match_by_what_they_measured_not_by_position(tmp_path: Path) -> None:
    a = _doc({AB: 95.0, BA: 96.0, AC: 95.0})
    # B ran the steps in another order, b -> a got slow, and a -> c is not in it.
    b = _doc({BA: 41.0, AB: 95.0}, order=[BA, AB])
    d = diff_reports(a, b)
    by = {s.label: s for s in d.steps}
    assert by["b -> a rail 0"].change == "worse"
    assert by["b -> a rail 0"].before is not None and by["b -> a rail 0"].before.word == "pass"
    (gb,) = [f for f in by["b -> a rail 0"].figures if f.name == "gbps"]
    assert (gb.a, gb.b, round(gb.ratio or 0, 3)) == (96.0, 41.0, 0.427)
    assert by["a -> b rail 0"].change == "same"
    # Its own rate held; its share of the fabric's best moved with the best.
    assert [f.name for f in by["a -> b rail 0"].figures] == ["of_best"]
    assert by["a -> c rail 1"].change == "only in A"
    assert [s.label for s in d.steps][:2] == ["b -> a rail 0", "a -> c rail 1"]  # worse first
    text, status = compare(*_files(tmp_path, a, b))
    assert status == 1
    assert "WORSE: b -> a rail 0  pass -> fail" in text
    assert "  gbps 96 -> 41 (x0.427)" in text
    assert "ONLY IN A: a -> c rail 1  pass -> -" in text
    # Nothing got worse the other way round; the step only B lacks is new there.
    text, status = compare(*_files(tmp_path, b, a))
    assert status == 0 and "BETTER: b -> a rail 0  fail -> pass" in text
    assert "ONLY IN B: a -> c rail 1" in text


def test_a_run_problem_only_one_report_has_and_top(tmp_path: Path) -> None:
    a = _doc({AB: 95.0, BA: 96.0, AC: 95.0})
    b = _doc({AB: 40.0, BA: 41.0})
    b["problems"] = ["c: no frame within 30 s"]
    text, status = compare(*_files(tmp_path, a, b), top=1)
    assert status == 1
    assert "only in B: c: no frame within 30 s" in text.splitlines()
    assert sum(line.startswith(("WORSE", "ONLY IN")) for line in text.splitlines()) == 1
    assert "... 2 more steps (--top)" in text
    doc = json.loads(compare(*_files(tmp_path, a, b), as_json=True)[0])
    assert doc["problems"] == [{"in": "B", "line": "c: no frame within 30 s"}]


def test_the_same_report_twice_is_status_0_and_says_so(tmp_path: Path) -> None:
    a = _doc({AB: 95.0, BA: 96.0})
    text, status = compare(*_files(tmp_path, a, a))
    assert status == 0
    assert "steps: 0 worse, 0 better, 2 same, 0 only in A, 0 only in B" in text
    assert "2 steps: same verdict, figures and counters" in text


def test_counters_that_moved_differently_and_engines_that_changed(tmp_path: Path) -> None:
    a, b = _doc({AB: 95.0}), _doc({AB: 95.0}, discards=120)
    b["engines"] = {"a": {"ib_write_bw": "6.30"}, "b": {"ib_write_bw": None}}
    text, _ = compare(*_files(tmp_path, a, b))
    assert "  moved b/eth0 rx_discards[3] 0 -> 120" in text
    assert "engines changed: a ib_write_bw 6.29 -> 6.30; b ib_write_bw not run -> ?" in text
    doc = json.loads(compare(*_files(tmp_path, a, b), as_json=True)[0])
    assert doc["schema"] == "fabtop.test-diff/1"
    (step,) = doc["steps"]
    assert step["match"] == {
        "plan": "pairs",
        "kind": "pair",
        "rail": 0,
        "senders": ["a"],
        "receiver": "b",
        "load": [],
        "window": None,  # every field of Step takes part (serving's windows too)
        "nth": 0,
    }
    assert step["counters"] == [
        {"port": "b/eth0", "metric": "rx_discards", "priority": 3, "a": 0, "b": 120}
    ]


def test_any_plans_figures_diff_by_name_nested_ones_too() -> None:
    # A plan this module has never heard of: its figures are compared by name.
    a, b = _doc({AB: 95.0}), _doc({AB: 95.0})
    a["plan"] = b["plan"] = "sizes"
    a["steps"][0]["figures"] = {"loss_fraction": 0.001, "gbps_by_size": {"4096": 80.0}}
    b["steps"][0]["figures"] = {"loss_fraction": 0.004, "gbps_by_size": {"4096": 40.0, "64": 2}}
    (s,) = diff_reports(a, b).steps
    got = {f.name: (f.a, f.b, f.ratio) for f in s.figures}
    assert got == {
        "loss_fraction": (0.001, 0.004, 4.0),
        "gbps_by_size.4096": (80.0, 40.0, 0.5),
        "gbps_by_size.64": (None, 2, None),
    }


def test_steps_that_measured_the_same_thing_pair_in_their_order() -> None:
    a, b = _doc({AB: 95.0}), _doc({AB: 95.0})
    a["steps"].append(dict(a["steps"][0], status="fail"))
    b["steps"].append(dict(b["steps"][0], status="pass"))
    d = diff_reports(a, b)
    assert sorted(s.change for s in d.steps) == ["better", "same"]


def test_a_snapshot_against_a_report_is_refused_naming_both(tmp_path: Path) -> None:
    snap = {"schema": "fabtop.snapshot/1", "hosts": []}
    pa, pb = _files(tmp_path, snap, _doc({AB: 95.0}))
    with pytest.raises(DiffError) as e:
        compare(pa, pb)
    assert str(e.value) == f"{pa} is a snapshot and {pb} a test report: diff compares two of a kind"


def _hostile() -> list[tuple[str, Any, str]]:
    good = _doc({AB: 95.0})

    def bent(path: str, value: Any) -> Any:
        doc = copy.deepcopy(good)
        *keys, last = path.split(".")
        node = doc
        for k in keys:
            node = node[int(k)] if k.isdigit() else node[k]
        if value is DELETE:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value
        return doc

    text = json.dumps(good)
    return [
        ("cut short", text[: len(text) // 2], "not JSON (it ends early: cut short?)"),
        ("empty", "", "not JSON (it ends early"),
        ("a later version", bent("format", "fabtop.test/2"), "a fabtop.test/2 file: this "),
        ("no format", bent("format", DELETE), "not a fabtop.snapshot/2 or fabtop.test/1 file"),
        ("NaN", text.replace('"gbps": 95.0', '"gbps": NaN'), "NaN is not a JSON number"),
        ("a string figure", bent("steps.0.figures.gbps", "95"), "'steps[0].figures.gbps'"),
        ("a boolean figure", bent("steps.0.figures.gbps", True), "must be a number or null"),
        ("a huge figure", bent("steps.0.figures.gbps", 10**400), "'steps[0].figures.gbps'"),
        ("a status", bent("steps.0.status", "pwned"), "'steps[0].status' must be one of pass"),
        ("no steps", bent("steps", DELETE), "field 'steps' must be a list, not null"),
        ("a step", bent("steps.0", [1]), "field 'steps[0]' must be an object"),
        ("a rail", bent("steps.0.rail", {"x": 1}), "'steps[0].rail' must be a name, a number"),
        ("a label", bent("steps.0.label", None), "'steps[0].label' must be a string, not null"),
        ("a plan", bent("plan", 3), "field 'plan' must be a plan name, not a number"),
        ("engines", bent("engines.a", "6.29"), "field 'engines.a' must be an object"),
        ("a version", bent("engines.a.ib_write_bw", 6.29), "'engines.a.ib_write_bw' must be"),
        (
            "a priority",
            bent(
                "steps.0.evidence.moved", [{"port": "p", "metric": "m", "priority": 9, "delta": 1}]
            ),
            "'steps[0].evidence.moved[0].priority' must be 0..7 or null",
        ),
        ("deep", bent("steps.0.figures", json.loads("[" * 40 + "]" * 40)), "nested more than"),
        ("very deep", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ]


@pytest.mark.parametrize(("why", "doc", "said"), _hostile(), ids=[h[0] for h in _hostile()])
def test_a_hostile_report_is_one_line_naming_the_file(
    tmp_path: Path, why: str, doc: Any, said: str
) -> None:
    pa, pb = _files(tmp_path, _doc({AB: 95.0}), doc)
    with pytest.raises(DiffError) as e:
        compare(pa, pb)
    line = str(e.value)
    assert line.startswith(f"{pb}: ") and "\n" not in line, line
    assert said in line, line


def test_remote_text_in_a_report_reaches_the_terminal_cleaned(tmp_path: Path) -> None:
    a, b = _doc({AB: 95.0}), _doc({AB: 41.0})
    b["steps"][0]["label"] = "a -> b\x1b]0;pwned\x07 rail 0"
    b["steps"][0]["reasons"] = ["slow\x1b[2J"]
    text, _ = compare(*_files(tmp_path, a, b))
    assert "\x1b" not in text and "\x07" not in text
    assert "now: slow" in text
