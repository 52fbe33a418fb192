"""A test's report as people and programs read it: the table and summary ``fabtop test``
prints, and the JSON document ``-o FILE`` writes (``fabtop.test/1``, docs/TEST.md)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from collectors.text import clean
from fabtop.fabtest.evidence import WindowEvidence
from fabtop.fabtest.judge import Status, Verdict, gb
from fabtop.fabtest.loss import LossMeasured
from fabtop.fabtest.plans import INCAST, LATENCY, LOADED, LOSS, SERVING, SIZES
from fabtop.fabtest.runner import Report, StepResult
from fabtop.fabtest.serving import impact, impact_line, serving_figure
from fabtop.fabtest.sizes import row_lines, size_text
from fabtop.run.snapshot import finding_entry

FORMAT = "fabtop.test/1"


def figure(v: Verdict) -> str:
    """The step's headline figure: Gb/s (and the share of its reference), or latency."""
    f = v.figures
    if v.step.kind == LOSS:
        took, bound = f.get("recovery_s"), f.get("bound_s")
        if took is None:
            return "not regained" if f.get("baseline_gbps") is not None else "-"
        return f"recovered in {took:.2f} s (mark {_num(bound, 1)} s)"
    if v.step.kind == SERVING:
        return serving_figure(v)
    if v.step.kind in (LATENCY, LOADED):
        if v.step.kind == LOADED:
            p99, impact = f.get("loaded_p99_us"), f.get("impact_p99")
            return f"p99 {_num(p99)} µs (x{_num(impact, 1)} loaded)" if p99 is not None else "-"
        p50, p99 = f.get("p50_us"), f.get("p99_us")
        return f"p50 {_num(p50)} / p99 {_num(p99)} µs" if p50 is not None else "-"
    gbps = f.get("aggregate_gbps") if v.step.kind == INCAST else f.get("gbps")
    if v.step.kind == SIZES:
        bend = f.get("bend_bytes")
        head = f"bend {size_text(bend)}" if bend is not None else "bend -"
        at = size_text(f.get("largest_bytes") or 0)
        return f"{head}, {gb(gbps)} Gb/s at {at}" if gbps is not None else head
    if gbps is None:
        return "-"
    share = f.get("of_reference")
    text = f"{gb(gbps)} Gb/s"
    if share is not None:
        text += f" ({share:.0%} of ref)"
    if v.step.kind == INCAST and f.get("jain") is not None:
        text += f", fairness {f['jain']:.2f}"
    return text


def _num(x: float | None, digits: int = 2) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.{digits}f}"


def lines(report: Report) -> list[str]:
    """The table (one line per step, worst marked), then each non-pass step's reasons and
    evidence, then the summary: what ``fabtop test`` prints."""
    out: list[str] = []
    width = max((len(r.verdict.step.label) for r in report.results), default=10)
    for r in report.results:
        v = r.verdict
        engine = r.engine or "-"
        again = " (retested)" if r.retested else ""
        out.append(f"{v.status.word:8} {v.step.label:<{width}}  {engine:9} {figure(v)}{again}")
    # A sweep's rows are its result, and a loss step always says what it found (the kill,
    # the recovery, the counters, NCCL's bound): said whatever the verdict.
    bad = [
        r
        for r in report.results
        if r.verdict.status != Status.PASS or r.problems or r.verdict.rows or r.loss is not None
    ]
    for r in bad:
        out.append("")
        out.append(f"{r.verdict.status.word.upper()}: {r.verdict.step.label}")
        out += [f"  {line}" for line in detail(r)]
    out.append("")
    if report.plan == SERVING:
        out.append(impact_line(report.results))
    if report.engines:
        out.append("engines: " + "; ".join(engine_line(h, t) for h, t in report.engines.items()))
    out.append(summary(report))
    return [clean(line, 400) for line in out]


def detail(r: StepResult) -> list[str]:
    """A step's reasons, the tools' problems, notes, then its window's evidence lines."""
    v = r.verdict
    out = [*v.reasons, *r.problems, *v.notes, *row_lines(v)]
    if v.evidence is not None:
        # A finding the verdict already gives as a reason is not said twice.
        said = " ".join(v.reasons)
        out += [
            line
            for line in v.evidence.lines
            if not (line.partition(": ")[2] and line.partition(": ")[2] in said)
        ]
    return [clean(line, 400) for line in out]


def engine_line(host: str, tools: dict[str, str | None]) -> str:
    """``node1 ib_write_bw 6.29, iperf3 3.12`` (a version the tool did not say: ``?``)."""
    return host + " " + ", ".join(f"{t} {v or '?'}" for t, v in sorted(tools.items()))


def summary(report: Report) -> str:
    """``fabtop test pairs: 12 steps, 10 pass, 1 warn, 1 fail (4 hosts, 38 s)``."""
    counts = Counter(r.verdict.status for r in report.results)
    said = ", ".join(f"{counts[s]} {s.word}" for s in Status if counts[s])
    took = report.ended_unix - report.started_unix
    n = len(report.results)
    text = (
        f"fabtop test {report.plan}: {n} step{'s' if n != 1 else ''}"
        f"{', ' + said if said else ''} ({len(report.hosts)} hosts, {took:.0f} s)"
    )
    if report.problems:
        text += "; " + "; ".join(report.problems)
    return text


def document(report: Report, counters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report: plan, hosts, options, every step's figures, verdict and evidence,
    and the tested ports' counters before and after the run (``counters``)."""
    o = report.options
    return {
        "format": FORMAT,
        "plan": report.plan,
        "hosts": report.hosts,
        "options": {"seconds": o.seconds, "iterations": o.iterations, "allow_busy": o.allow_busy},
        "started_unix": report.started_unix,
        "ended_unix": report.ended_unix,
        "status": report.status,
        "problems": report.problems,
        "engines": report.engines,
        "steps": [_step(r) for r in report.results],
        "counters": dict(counters or {}),
        **({"serving": impact(report.results)} if report.plan == SERVING else {}),
    }


def _step(r: StepResult) -> dict[str, Any]:
    v, s = r.verdict, r.verdict.step
    ev = v.evidence
    return {
        "label": s.label,
        "kind": s.kind,
        "rail": s.rail,
        "senders": list(s.senders),
        "receiver": s.receiver,
        "load": list(s.load),
        **({"window": s.window} if s.window else {}),
        "ports": r.ports,
        "engine": r.engine,
        "status": v.status.word,
        "reasons": list(v.reasons),
        "notes": list(v.notes),
        "problems": r.problems,
        "retested": r.retested,
        "relative_only": v.relative_only,
        "figures": _finite(v.figures),
        **({"sizes": [_finite(row) for row in v.rows]} if v.rows else {}),
        "evidence": _evidence(ev),
        **({"loss": _loss(r.loss)} if r.loss is not None else {}),
    }


def _evidence(ev: WindowEvidence | None) -> dict[str, Any] | None:
    if ev is None:
        return None
    return {
        "seconds": ev.seconds,
        "findings": [finding_entry(f) for f in ev.findings],
        "moved": [
            {"port": m.port.label, "metric": m.metric, "priority": m.priority, "delta": m.delta}
            for m in ev.moved
        ],
        "ruled_out": ev.ruled_out,
        "not_read": ev.not_read,
        "next_steps": ev.next_steps,
    }


def _loss(m: LossMeasured) -> dict[str, Any]:
    """A loss step's own part: the kill, what hung, the receiver's intervals, the
    counters before and after the kill, and NCCL's stall bound with its source."""
    return {
        "killed": m.killed,
        "killed_pid": m.killed_pid,
        "killed_at_s": m.killed_at_s,
        "hung": m.hung,
        "received_gbps": {
            host: [[start, end, bps / 1e9] for start, end, bps in ivs]
            for host, ivs in m.received.items()
        },
        "engine_retransmits": [[end, n] for end, n in m.resent],
        "evidence_before_kill": _evidence(m.before),
        "evidence_after_kill": _evidence(m.after),
        "nccl": {
            "ib_timeout": m.nccl.ib_timeout,
            "ib_retry_cnt": m.nccl.ib_retry_cnt,
            "per_try_s": m.nccl.per_try_s,
            "qp_error_s": m.nccl.qp_error_s,
            "source": m.nccl.source,
        },
    }


def _finite(figures: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: (x if x is None or math.isfinite(x) else None) for k, x in figures.items()}
