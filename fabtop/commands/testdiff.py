"""``fabtop diff A B`` of two ``fabtop test`` reports (``fabtop.test/1``): what got worse.

Steps are matched by what they measured (the plan and the fields of
:class:`fabtop.fabtest.plans.Step`: kind, rail, senders, receiver, load), never by
position; the n-th of several steps that measured the same thing in one report pairs with
the n-th in the other. Per matched step: the verdict before and after, every numeric
figure the step has (by name, whatever the plan, so a new plan's figures diff without
code here) with its change as a ratio, and the counters of its window that moved
differently (``evidence.moved``: a counter absent from a window's list moved by 0). Then
the steps only one report has, the engines whose versions changed and the options that
differ.

Exit status, as diff(1): 0 when no verdict got worse and every step of A was measured
again in B, 1 when a verdict got worse or a step of A is missing from B (it was not
proven again), 2 when an input cannot be read (:class:`fabtop.commands.diff.DiffError`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from collectors.numbers import finite
from fabtop.commands.diff import json_kind
from fabtop.fabtest.judge import Status
from fabtop.fabtest.plans import Step

# What a step measured: the Step's own fields as the report writes them (one fact, one
# place: a field a plan adds to Step joins the match without a change here).
IDENTITY: tuple[str, ...] = tuple(f.name for f in fields(Step))
_STATUS: dict[str, Status] = {s.word: s for s in Status}
COUNTERS_SHOWN = 6  # per step in the text; --json has them all

Key = tuple[Any, ...]


class ReportError(ValueError):
    """A report field that is not what ``fabtop test`` writes; the message names it."""


@dataclass(slots=True)
class FigureChange:
    """One figure of a step, before and after."""

    name: str
    a: float | None
    b: float | None

    @property
    def ratio(self) -> float | None:
        """b / a; None when either is missing or a is 0 (and b is not)."""
        if self.a is None or self.b is None:
            return None
        if self.a == 0:
            return 1.0 if self.b == 0 else None
        return finite(self.b / self.a)

    @property
    def size(self) -> float:
        """How far it moved, for the order: |log ratio|; a figure that appeared or went: inf."""
        r = self.ratio
        if r is None:
            return math.inf
        return abs(math.log(r)) if r > 0 else math.inf


@dataclass(slots=True)
class CounterChange:
    """A counter that moved by a different amount in the two windows of one step."""

    port: str
    metric: str
    priority: int | None
    a: float
    b: float

    @property
    def name(self) -> str:
        """``node1/eth0 rx_discards[3]``."""
        prio = "" if self.priority is None else f"[{self.priority}]"
        return f"{self.port} {self.metric}{prio}"


@dataclass(slots=True)
class StepChange:
    """One step as the two reports have it (``a`` or ``b`` None: only in the other)."""

    label: str
    key: Key
    a: Mapping[str, Any] | None
    b: Mapping[str, Any] | None
    figures: list[FigureChange] = field(default_factory=list)
    counters: list[CounterChange] = field(default_factory=list)

    @property
    def before(self) -> Status | None:
        """A's verdict."""
        return None if self.a is None else _STATUS[self.a["status"]]

    @property
    def after(self) -> Status | None:
        """B's verdict."""
        return None if self.b is None else _STATUS[self.b["status"]]

    @property
    def change(self) -> str:
        """worse, better, same, only in A, only in B."""
        if self.before is None:
            return "only in B"
        if self.after is None:
            return "only in A"
        if self.after > self.before:
            return "worse"
        return "better" if self.after < self.before else "same"

    @property
    def moved(self) -> bool:
        """A figure or a counter is not what it was."""
        return bool(self.figures or self.counters)

    def order(self) -> tuple[int, int, int, float, str]:
        """Worse first (the worst verdict now first, then the biggest fall), then lost
        steps, better, figures that moved most, new steps."""
        group = ("worse", "only in A", "better", "same", "only in B").index(self.change)
        after = -(self.after or 0)
        fall = -((self.after or 0) - (self.before or 0))
        biggest = max((f.size for f in self.figures), default=0.0)
        return (group, after, fall, -biggest, self.label)


@dataclass(slots=True)
class ReportDiff:
    """Two reports compared."""

    a: Mapping[str, Any]
    b: Mapping[str, Any]
    steps: list[StepChange]
    engines: list[tuple[str, str, str | None, str | None]]  # host, tool, A's, B's
    options: list[tuple[str, Any, Any]]
    problems: list[tuple[str, str]] = field(default_factory=list)  # ("A" or "B", line)

    @property
    def status(self) -> int:
        """1 when a verdict got worse or a step of A was not measured in B, else 0."""
        return int(any(s.change in ("worse", "only in A") for s in self.steps))


# -- reading ---------------------------------------------------------------------------


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and finite(v) is not None


def _check(ok: bool, where: str, want: str, v: Any) -> None:
    if not ok:
        raise ReportError(f"field '{where}' must be {want}, not {json_kind(v)}")


def _name_or_int(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def _identity_value(v: Any) -> bool:
    if isinstance(v, list):
        return all(_name_or_int(x) for x in v)
    return v is None or _name_or_int(v)


def check_report(doc: Mapping[str, Any]) -> None:
    """Every field the diff reads has the type ``fabtop test`` writes; raises ReportError.

    Strings were cleaned before (``clean_tree``); this checks shapes and numbers.
    """
    _check(isinstance(doc.get("plan"), str), "plan", "a plan name", doc.get("plan"))
    for name in ("engines", "options"):
        _check(isinstance(doc.get(name, {}), dict), name, "an object", doc.get(name))
    for host, tools in doc.get("engines", {}).items():
        _check(isinstance(tools, dict), f"engines.{host}", "an object", tools)
        for tool, version in tools.items():
            ok = version is None or isinstance(version, str)
            _check(ok, f"engines.{host}.{tool}", "a version or null", version)
    for name in ("problems",):
        v = doc.get(name, [])
        _check(isinstance(v, list) and all(isinstance(x, str) for x in v), name, "lines", v)
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise ReportError(f"field 'steps' must be a list, not {json_kind(steps)}")
    for i, s in enumerate(steps):
        w = f"steps[{i}]"
        _check(isinstance(s, dict), w, "an object", s)
        _check(isinstance(s.get("label"), str), f"{w}.label", "a string", s.get("label"))
        st = s.get("status")
        if st not in _STATUS:
            raise ReportError(f"field '{w}.status' must be one of {', '.join(_STATUS)}")
        for name in IDENTITY:
            v = s.get(name)
            _check(_identity_value(v), f"{w}.{name}", "a name, a number or a list of them", v)
        for name in ("reasons", "notes", "problems"):
            v = s.get(name, [])
            ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
            _check(ok, f"{w}.{name}", "a list of lines", v)
        _check_figures(s.get("figures", {}), f"{w}.figures")
        ev = s.get("evidence")
        if ev is None:
            continue
        _check(isinstance(ev, dict), f"{w}.evidence", "an object or null", ev)
        moved = ev.get("moved", [])
        _check(isinstance(moved, list), f"{w}.evidence.moved", "a list", moved)
        for j, m in enumerate(moved):
            mw = f"{w}.evidence.moved[{j}]"
            _check(isinstance(m, dict), mw, "an object", m)
            for name in ("port", "metric"):
                _check(isinstance(m.get(name), str), f"{mw}.{name}", "a string", m.get(name))
            p = m.get("priority")
            ok = p is None or (isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 8)
            _check(ok, f"{mw}.priority", "0..7 or null", p)
            _check(_number(m.get("delta")), f"{mw}.delta", "a number", m.get("delta"))


def _check_figures(v: Any, where: str) -> None:
    """Figures: numbers or null by name; an object of them (a plan's per-size figures)."""
    _check(isinstance(v, dict), where, "an object of numbers", v)
    for name, x in v.items():
        if isinstance(x, dict):
            _check_figures(x, f"{where}.{name}")
        else:
            _check(x is None or _number(x), f"{where}.{name}", "a number or null", x)


def _figures(v: Mapping[str, Any], prefix: str = "") -> dict[str, float | None]:
    """A step's figures by name; nested ones as ``outer.inner``."""
    out: dict[str, float | None] = {}
    for name, x in v.items():
        if isinstance(x, dict):
            out.update(_figures(x, f"{prefix}{name}."))
        else:
            out[prefix + name] = x
    return out


# -- comparing -------------------------------------------------------------------------


def step_key(plan: str, step: Mapping[str, Any]) -> Key:
    """What a step measured: the plan and the Step's fields (lists as tuples)."""
    values = (step.get(name) for name in IDENTITY)
    return (plan, *(tuple(v) if isinstance(v, list) else v for v in values))


def _keyed(doc: Mapping[str, Any]) -> dict[Key, Mapping[str, Any]]:
    """Steps by key; the n-th of several with one key gets n in its key."""
    out: dict[Key, Mapping[str, Any]] = {}
    seen: dict[Key, int] = {}
    for s in doc["steps"]:
        k = step_key(doc["plan"], s)
        n = seen.get(k, 0)
        seen[k] = n + 1
        out[(*k, n)] = s
    return out


def _moved(step: Mapping[str, Any] | None) -> dict[tuple[str, str, int | None], float]:
    ev = (step or {}).get("evidence") or {}
    out: dict[tuple[str, str, int | None], float] = {}
    for m in ev.get("moved", []):
        k = (m["port"], m["metric"], m.get("priority"))
        out[k] = out.get(k, 0) + m["delta"]
    return out


def compare_steps(key: Key, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> StepChange:
    """One step's figures and counters, before and after."""
    either = b if b is not None else a
    assert either is not None
    fa = _figures((a or {}).get("figures", {}))
    fb = _figures((b or {}).get("figures", {}))
    figures = [
        FigureChange(n, fa.get(n), fb.get(n))
        for n in [*fb, *(n for n in fa if n not in fb)]
        if fa.get(n) != fb.get(n)
    ]
    counters: list[CounterChange] = []
    if a is not None and b is not None:
        ma, mb = _moved(a), _moved(b)
        for k in [*mb, *(k for k in ma if k not in mb)]:
            if ma.get(k, 0) != mb.get(k, 0):
                counters.append(CounterChange(*k, ma.get(k, 0), mb.get(k, 0)))
        counters.sort(key=lambda c: -abs(c.b - c.a))
    return StepChange(either["label"], key, a, b, figures, counters)


def _engines(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[tuple[str, str, str | None, str | None]]:
    """(host, tool, A's version, B's): "?" ran without saying, None did not run there."""
    ea, eb = a.get("engines", {}), b.get("engines", {})
    out = []
    for host in sorted({*ea, *eb}):
        ta, tb = ea.get(host, {}), eb.get(host, {})
        for tool in sorted({*ta, *tb}):
            va = (ta[tool] or "?") if tool in ta else None
            vb = (tb[tool] or "?") if tool in tb else None
            if va != vb:
                out.append((host, tool, va, vb))
    return out


def diff_reports(a: Mapping[str, Any], b: Mapping[str, Any]) -> ReportDiff:
    """Report ``a`` against report ``b`` (both checked by :func:`check_report`)."""
    ka, kb = _keyed(a), _keyed(b)
    keys = [*ka, *(k for k in kb if k not in ka)]
    steps = sorted((compare_steps(k, ka.get(k), kb.get(k)) for k in keys), key=StepChange.order)
    oa, ob = a.get("options", {}), b.get("options", {})
    options = [(n, oa.get(n), ob.get(n)) for n in sorted({*oa, *ob}) if oa.get(n) != ob.get(n)]
    # The run's own problems (a host that did not answer, a rail left out) that only one
    # report has: often why its steps are missing from the other.
    pa, pb = a.get("problems", []), b.get("problems", [])
    problems = [("A", p) for p in pa if p not in pb] + [("B", p) for p in pb if p not in pa]
    return ReportDiff(a, b, steps, _engines(a, b), options, problems)


# -- showing ---------------------------------------------------------------------------


def _fig(x: float | None) -> str:
    if x is None:
        return "none"
    if abs(x) >= 1e15 or (abs(x) < 1e4 and not float(x).is_integer()):
        return f"{x:.4g}"
    return f"{x:.0f}"  # a count, or a figure whose decimals say nothing (10000 samples)


def _ratio(r: float | None) -> str:
    return "" if r is None else f" (x{r:.3g})"


def _count(x: float) -> str:
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:g}"


def _when(doc: Mapping[str, Any]) -> str:
    v = doc.get("started_unix")
    t = finite(v) if isinstance(v, int | float) else None
    if t is None or not 0 <= t < 1e11:
        return ""
    return ", " + datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _side(name: str, doc: Mapping[str, Any]) -> str:
    n = len(doc["steps"])
    exit_ = doc.get("status")
    said = f", exit {exit_}" if isinstance(exit_, int) and not isinstance(exit_, bool) else ""
    return f"{name}: {doc['plan']}, {n} step{'s' if n != 1 else ''}{said}{_when(doc)}"


def render_text(d: ReportDiff, name_a: str, name_b: str, top: int | None = None) -> str:
    """Header and counts, then each step that changed, worst first, then engines."""
    counts = {c: 0 for c in ("worse", "better", "same", "only in A", "only in B")}
    for s in d.steps:
        counts[s.change] += 1
    out = [
        "test reports compared",
        f"  A {_side(name_a, d.a)}",
        f"  B {_side(name_b, d.b)}",
        "steps: " + ", ".join(f"{n} {c}" for c, n in counts.items()),
    ]
    if d.a["plan"] != d.b["plan"]:
        out.append("different plans: steps match only within one plan")
    out += [f"options: {n} {va} -> {vb}" for n, va, vb in d.options]
    out += [f"only in {side}: {line}" for side, line in d.problems]
    shown = [s for s in d.steps if s.change != "same" or s.moved]
    for s in shown[:top] if top else shown:
        out.append("")
        out += _step_lines(s)
    if top and len(shown) > top:
        out += ["", f"... {len(shown) - top} more steps (--top)"]
    if counts["same"] and len(shown) < len(d.steps):
        out += ["", f"{len(d.steps) - len(shown)} steps: same verdict, figures and counters"]
    if d.engines:
        out.append("")
        out.append(
            "engines changed: "
            + "; ".join(
                f"{h} {t} {va or 'not run'} -> {vb or 'not run'}" for h, t, va, vb in d.engines
            )
        )
    verdict = "a verdict got worse" if counts["worse"] else "no verdict got worse"
    if counts["only in A"]:
        verdict += f"; {counts['only in A']} steps of A not measured in B"
    out += ["", verdict]
    return "\n".join(out) + "\n"


def _step_lines(s: StepChange) -> list[str]:
    before = s.before.word if s.before is not None else "-"
    after = s.after.word if s.after is not None else "-"
    out = [f"{s.change.upper()}: {s.label}  {before} -> {after}"]
    if s.a is not None and s.b is not None:
        out += [f"  {f.name} {_fig(f.a)} -> {_fig(f.b)}{_ratio(f.ratio)}" for f in s.figures]
    for c in s.counters[:COUNTERS_SHOWN]:
        out.append(f"  moved {c.name} {_count(c.a)} -> {_count(c.b)}")
    if len(s.counters) > COUNTERS_SHOWN:
        out.append(f"  ... {len(s.counters) - COUNTERS_SHOWN} more counters (--json)")
    if s.change == "worse" and s.b is not None:
        out += [f"  now: {line}" for line in [*s.b.get("reasons", []), *s.b.get("problems", [])]]
    return out


def render_json(d: ReportDiff, name_a: str, name_b: str, top: int | None = None) -> str:
    """Every step (``--top``: the first N), every changed figure and counter."""

    def side(name: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {"file": name, "plan": doc["plan"], "status": doc.get("status")}

    steps = d.steps[:top] if top else d.steps
    return (
        json.dumps(
            {
                "schema": "fabtop.test-diff/1",
                "a": side(name_a, d.a),
                "b": side(name_b, d.b),
                "status": d.status,
                "options": [{"name": n, "a": va, "b": vb} for n, va, vb in d.options],
                "problems": [{"in": side, "line": line} for side, line in d.problems],
                "engines": [{"host": h, "tool": t, "a": va, "b": vb} for h, t, va, vb in d.engines],
                "steps": [
                    {
                        "label": s.label,
                        "match": dict(zip(("plan", *IDENTITY, "nth"), s.key, strict=True)),
                        "change": s.change,
                        "a": None if s.before is None else s.before.word,
                        "b": None if s.after is None else s.after.word,
                        "figures": [
                            {"name": f.name, "a": f.a, "b": f.b, "ratio": f.ratio}
                            for f in s.figures
                        ],
                        "counters": [
                            {
                                "port": c.port,
                                "metric": c.metric,
                                "priority": c.priority,
                                "a": c.a,
                                "b": c.b,
                            }
                            for c in s.counters
                        ],
                        "reasons": list((s.b or s.a or {}).get("reasons", [])),
                    }
                    for s in steps
                ],
            },
            indent=1,
        )
        + "\n"
    )
