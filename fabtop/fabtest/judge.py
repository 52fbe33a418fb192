"""Verdicts of ``fabtop test``: absolute marks, relative outliers, fairness, congestion impact.

Every mark is a threshold of :mod:`fabtop.core.thresholds` (``test_*``), where its source
and reason are said. A step is judged:

- absolutely: bandwidth at least ``test_bw_ratio`` x the reference rate (x2 when both
  directions run at once); RDMA latency against per-operation marks. The reference rate
  is the RDMA port's negotiated rate (the slower end's), or for an IP path the speed the
  config declares: a veth says 10000 Mb/s that two CPUs cannot fill, so an IP path with
  no declared speed is judged relatively only, and its verdict says so;
- relatively: against the best step of the same kind and reference rate in the plan. An
  outlier is not yet bad: its verdict is :attr:`Status.RETEST`, the runner measures the
  step once more and :func:`settle` calls it bad (:attr:`Status.OUTLIER`) only if it is an
  outlier again;
- by its window's counters (:mod:`fabtop.fabtest.evidence`): a figure that passes with
  packets lost on a lossless priority is a failure; one with warnings is a warning.

The exit status (:func:`exit_status`) is doctor's: 0 pass, 1 outliers or warnings, 2
failures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum

from collectors.samples import LinkSample
from fabtop.core.thresholds import effective
from fabtop.fabtest.evidence import LOSSLESS_LOSS, WindowEvidence
from fabtop.fabtest.plans import BIDIR, LATENCY_ITERATIONS, PERCENTILES, TAIL_SAMPLES, Step
from fabtop.fabtest.stats import LatencySummary, impact_factor, jain_index, rank, summarize


class Status(IntEnum):
    """A verdict, worst last: a step's status is the worst of what it found."""

    PASS = 0
    WARN = 1  # passed, with counters or fairness that say something is wrong
    RETEST = 2  # an outlier the first time: the runner measures it again (settle)
    OUTLIER = 3  # an outlier twice: bad, relative to the fabric's best
    FAIL = 4  # below an absolute mark, no figure, or packets lost on a lossless priority

    @property
    def word(self) -> str:
        """How tables and reports write it."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What fabtop concluded of one step, why, and the counters that explain it."""

    step: Step
    status: Status
    reasons: tuple[str, ...]  # one line per mark missed or problem seen (why the status)
    figures: Mapping[str, float | None]
    notes: tuple[str, ...] = ()  # what the reader must know of the figures (not a fault)
    relative_only: bool = False  # no reference rate: judged against the fabric's best only
    evidence: WindowEvidence | None = None
    # A sweep's rows (``sizes``: size_bytes, gbps, p50_us, p99_us), smallest size first.
    rows: tuple[Mapping[str, float | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """A pair's (or bidir pair's: both directions summed) measured bandwidth."""

    step: Step
    gbps: float | None  # None: the engine gave no figure
    reference_gbps: float | None  # reference_rate(); None: relative only
    evidence: WindowEvidence | None = None
    # Retransmissions the engine itself counted (iperf3's TCP retransmits): what a loss no
    # NIC counter sees (a switch, a shaper, a firewall rule between the ends) leaves.
    retransmits: int | None = None
    # What share of the bytes sent those retransmissions were (iperf3's count times the
    # path's MSS over its bytes sent); None: not known (perftest, no count).
    loss_fraction: float | None = None


@dataclass(frozen=True, slots=True)
class Incast:
    """An incast's per-sender bandwidth, in the order of ``step.senders``."""

    step: Step
    sender_gbps: tuple[float | None, ...]
    reference_gbps: float | None  # the receiver's port
    evidence: WindowEvidence | None = None
    retransmits: int | None = None  # the senders' together, as Bandwidth.retransmits
    loss_fraction: float | None = None  # as Bandwidth.loss_fraction, all senders together


@dataclass(frozen=True, slots=True)
class Latency:
    """A latency step's raw samples (one per iteration, microseconds)."""

    step: Step
    samples_us: Sequence[float]
    op: str  # "write", "send", "read" (RDMA), or "ip"
    evidence: WindowEvidence | None = None
    summary: LatencySummary = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", summarize(self.samples_us))


def reference_rate(
    ends: Sequence[LinkSample], declared_gbps: float | None = None
) -> tuple[float | None, str | None]:
    """The rate a step is judged against (Gb/s), and why there is none when there is none.

    RDMA ports: the negotiated rate of the slower end (sysfs ``rate``, as
    ngc_multinode_perf reads it). IP paths: ``declared_gbps`` (the config's speed); a
    netdev's own speed is not believed (a veth says 10000 Mb/s).
    """
    if ends and all(ln.rdma_device for ln in ends):
        rates = [ln.rate_gbps for ln in ends]
        if any(r is None or r <= 0 for r in rates):
            return None, "an end does not report its negotiated rate: judged relatively only"
        return min(r for r in rates if r is not None), None
    if declared_gbps is not None and declared_gbps > 0:
        return declared_gbps, None
    return None, "IP path with no declared speed: judged relatively only"


def gb(gbps: float) -> str:
    """A bandwidth as tables and reasons write it: one decimal from 10 Gb/s (95.0, 18.6),
    three significant digits below (2.13, 0.261), so a shaped or slow path is not rounded
    to 0.0 or to its neighbour."""
    return f"{gbps:.1f}" if abs(gbps) >= 10 else f"{gbps:.3g}"


def _worst(*statuses: Status) -> Status:
    return max(statuses, default=Status.PASS)


def _counters(
    status: Status,
    reasons: list[str],
    ev: WindowEvidence | None,
    figure: str,
    retransmits: int | None = None,
    lossy: bool = False,
) -> Status:
    """The window's counters on top of the figures' verdict; ``retransmits``: the engine's;
    ``lossy``: they were more than ``test_loss_fraction`` of what it sent (a warning even
    where the figure passed: TCP hides a loss an RDMA queue pair would pay for)."""
    if lossy:
        status = _worst(status, Status.WARN)
    if retransmits and status != Status.PASS:
        line = f"the engine retransmitted {retransmits} times in the window"
        clean = ev is not None and {"discards", "CRC, symbol and link-integrity errors"} <= set(
            ev.ruled_out
        )
        if clean:
            line += (
                ": no NIC counted a discard or an error, so packets were lost between "
                "the ends (a switch, a shaper, a firewall rule)"
            )
        reasons.append(line)
    if ev is None:
        return status
    if ev.lossless_loss:
        lost = next(f for f in ev.findings if f.rule in LOSSLESS_LOSS)
        reasons.append(f"{figure}, but packets were lost on a lossless priority: {lost.summary}")
        return Status.FAIL
    if ev.serious:
        reasons += [f"{f.severity} in the window: {f.summary}" for f in ev.serious]
        return _worst(status, Status.WARN)
    return status


# The window's counters on top of a figure's verdict, for a plan judged in its own module.
counters_status = _counters


def _group(step: Step, ref: float | None) -> tuple[str, float | None]:
    """What a step is compared with: steps of its kind against the same reference rate."""
    return step.kind, ref


def best_bandwidth(results: Sequence[Bandwidth]) -> dict[tuple[str, float | None], float]:
    """The best figure of each group (kind, reference rate): what outliers are measured by."""
    best: dict[tuple[str, float | None], float] = {}
    for r in results:
        if r.gbps is not None:
            key = _group(r.step, r.reference_gbps)
            best[key] = max(best.get(key, 0.0), r.gbps)
    return best


def judge_bandwidth(
    results: Sequence[Bandwidth],
    thresholds: Mapping[str, float] | None = None,
    best: Mapping[tuple[str, float | None], float] | None = None,
) -> list[Verdict]:
    """Verdicts of pair and bidir steps; ``best``: the plan's (a retest is judged against
    the first run's best, :func:`best_bandwidth`), else the best of ``results``."""
    th = effective(thresholds)
    best = best if best is not None else best_bandwidth(results)
    out = []
    for r in results:
        reasons: list[str] = []
        notes: list[str] = []
        ref = r.reference_gbps
        ways = 2 if r.step.kind == BIDIR else 1
        figures: dict[str, float | None] = {"gbps": r.gbps, "reference_gbps": ref}
        if r.gbps is None:
            out.append(
                Verdict(r.step, Status.FAIL, ("no bandwidth figure",), figures, evidence=r.evidence)
            )
            continue
        status = Status.PASS
        if ref is not None:
            need = th["test_bw_ratio"] * ref * ways
            figures["of_reference"] = r.gbps / (ref * ways)
            if r.gbps < need:
                status = Status.FAIL
                reasons.append(
                    f"{gb(r.gbps)} Gb/s is below {th['test_bw_ratio']:g} x {ref:g} Gb/s"
                    + (" x 2 (both ways)" if ways == 2 else "")
                    + f" = {gb(need)} Gb/s"
                )
        else:
            notes.append(
                "no reference rate (an IP path with no declared speed, or a port that does "
                "not report its rate): judged against the fabric's best only"
            )
        top = best.get(_group(r.step, ref))
        if top:
            figures["of_best"] = r.gbps / top
            mark = th["test_bw_outlier_ratio"] * top
            if r.gbps < mark:
                status = _worst(status, Status.RETEST)
                reasons.append(
                    f"{gb(r.gbps)} Gb/s is under {th['test_bw_outlier_ratio']:.0%} of the "
                    f"fabric's best {gb(top)} Gb/s"
                )
        out.append(_bandwidth_verdict(r, status, reasons, figures, notes, f"{gb(r.gbps)} Gb/s", th))
    return out


def _bandwidth_verdict(
    r: Bandwidth | Incast,
    status: Status,
    reasons: list[str],
    figures: dict[str, float | None],
    notes: list[str],
    figure: str,
    th: Mapping[str, float],
) -> Verdict:
    """A pair's or an incast's verdict: its figures' status with the engine's
    retransmissions and the window's counters on top."""
    figures["engine_retransmits"] = r.retransmits
    lossy = r.loss_fraction is not None and r.loss_fraction > th["test_loss_fraction"]
    status = _counters(status, reasons, r.evidence, figure, r.retransmits, lossy)
    relative = r.reference_gbps is None
    return Verdict(r.step, status, tuple(reasons), figures, tuple(notes), relative, r.evidence)


def _aggregate(r: Incast) -> float | None:
    """What every sender of an incast moved together (None: a sender gave no figure)."""
    got = [g for g in r.sender_gbps if g is not None]
    return sum(got) if len(got) == len(r.step.senders) else None


def best_incast(results: Sequence[Incast]) -> dict[tuple[str, float | None], float]:
    """The best receiver's aggregate of each group: what incast outliers are measured by."""
    best: dict[tuple[str, float | None], float] = {}
    for r in results:
        total = _aggregate(r)
        if total is not None:
            key = _group(r.step, r.reference_gbps)
            best[key] = max(best.get(key, 0.0), total)
    return best


def judge_incast(
    results: Sequence[Incast],
    thresholds: Mapping[str, float] | None = None,
    best: Mapping[tuple[str, float | None], float] | None = None,
) -> list[Verdict]:
    """Verdicts of incast steps: the aggregate against the receiver's reference rate and
    the best receiver's (``best``: the first run's, for a retest), and the senders'
    fairness (Jain's index)."""
    th = effective(thresholds)
    best = best if best is not None else best_incast(results)
    out = []
    for r in results:
        figures: dict[str, float | None] = {
            f"share_{h}_gbps": g for h, g in zip(r.step.senders, r.sender_gbps, strict=False)
        }
        total = _aggregate(r)
        if total is None:
            padded = [*r.sender_gbps, *[None] * (len(r.step.senders) - len(r.sender_gbps))]
            missing = [h for h, g in zip(r.step.senders, padded, strict=False) if g is None]
            reason = f"no figure from {', '.join(missing)}"
            out.append(Verdict(r.step, Status.FAIL, (reason,), figures, evidence=r.evidence))
            continue
        ref = r.reference_gbps
        jain = jain_index([g for g in r.sender_gbps if g is not None])
        figures.update({"aggregate_gbps": total, "reference_gbps": ref, "jain": jain})
        reasons: list[str] = []
        notes: list[str] = []
        status = Status.PASS
        if ref is not None:
            figures["of_reference"] = total / ref
            need = th["test_bw_ratio"] * ref
            if total < need:
                status = Status.FAIL
                reasons.append(
                    f"the senders' {gb(total)} Gb/s into {r.step.receiver} is below "
                    f"{th['test_bw_ratio']:g} x {ref:g} Gb/s = {gb(need)} Gb/s"
                )
        else:
            notes.append("no reference rate: the aggregate is judged against the best only")
        top = best.get(_group(r.step, ref))
        if top and total < th["test_bw_outlier_ratio"] * top:
            status = _worst(status, Status.RETEST)
            reasons.append(
                f"{gb(total)} Gb/s into {r.step.receiver} is under "
                f"{th['test_bw_outlier_ratio']:.0%} of the best receiver's {gb(top)} Gb/s"
            )
        if jain is not None and jain < th["test_fairness_ratio"]:
            status = _worst(status, Status.WARN)
            said = ", ".join(
                f"{h} {gb(g)}"
                for h, g in zip(r.step.senders, r.sender_gbps, strict=False)
                if g is not None
            )
            reasons.append(
                f"unfair: Jain's index {jain:.2f} < {th['test_fairness_ratio']:g} (Gb/s: {said})"
            )
        out.append(_bandwidth_verdict(r, status, reasons, figures, notes, f"{gb(total)} Gb/s", th))
    return out


def _latency_figures(s: LatencySummary) -> dict[str, float | None]:
    return {
        "samples": float(s.n),
        "mean_us": s.mean_us,
        "p50_us": s.p50_us,
        "p99_us": s.p99_us,
        "p999_us": s.p999_us,
        "max_us": s.max_us,
    }


def _tail_note(s: LatencySummary) -> list[str]:
    """Say when p99.9 rests on fewer samples beyond it than fabtop asks for."""
    if 0 < s.n < LATENCY_ITERATIONS:
        beyond = s.n - rank(s.n, max(PERCENTILES))
        return [
            f"p99.9 from {s.n} samples ({beyond} beyond it; {LATENCY_ITERATIONS} give "
            f"{TAIL_SAMPLES})"
        ]
    return []


def best_latency(results: Sequence[Latency]) -> dict[str, float]:
    """The best (lowest) median of each operation: what latency outliers are measured by."""
    best: dict[str, float] = {}
    for r in results:
        p50 = r.summary.p50_us
        if p50 is not None:
            best[r.op] = min(best.get(r.op, p50), p50)
    return best


def judge_latency(
    results: Sequence[Latency],
    thresholds: Mapping[str, float] | None = None,
    best: Mapping[str, float] | None = None,
) -> list[Verdict]:
    """Verdicts of latency steps: RDMA against ngc_multinode_perf's mean and imbue's p99
    marks, every path against the fabric's best median (``best``: the first run's, for a
    retest)."""
    th = effective(thresholds)
    best = best if best is not None else best_latency(results)
    out = []
    for r in results:
        s = r.summary
        figures = _latency_figures(s)
        if s.n == 0 or s.mean_us is None or s.p50_us is None or s.p99_us is None:
            out.append(
                Verdict(r.step, Status.FAIL, ("no latency samples",), figures, evidence=r.evidence)
            )
            continue
        reasons: list[str] = []
        notes = _tail_note(s)
        if s.dropped:
            notes.append(f"{s.dropped} samples were not numbers and were left out")
        status = Status.PASS
        rdma = r.op != "ip"
        if rdma:
            name = "test_read_lat_avg_us" if r.op == "read" else "test_lat_avg_us"
            if s.mean_us > th[name]:
                status = Status.FAIL
                reasons.append(f"mean {s.mean_us:.2f} µs is above {th[name]:g} µs ({r.op})")
            if r.op != "read" and s.p99_us > th["test_lat_p99_us"]:
                status = Status.FAIL
                reasons.append(f"p99 {s.p99_us:.2f} µs is above {th['test_lat_p99_us']:g} µs")
        else:
            notes.append("IP path: no absolute latency mark, judged against the fabric's best")
        top = best.get(r.op)
        factor = th["test_lat_outlier_factor"]
        if top and s.p50_us > factor * top:
            status = _worst(status, Status.RETEST)
            reasons.append(
                f"median {s.p50_us:.2f} µs is more than {factor:g} x the fabric's best {top:.2f} µs"
            )
        status = _counters(status, reasons, r.evidence, f"median {s.p50_us:.2f} µs")
        out.append(
            Verdict(
                r.step,
                status,
                tuple(reasons),
                figures,
                tuple(notes),
                relative_only=not rdma,
                evidence=r.evidence,
            )
        )
    return out


def judge_loaded(
    isolated: Latency, loaded: Latency, thresholds: Mapping[str, float] | None = None
) -> Verdict:
    """The verdict of a loaded-latency step: GPCNeT's congestion impact factor (loaded ÷
    isolated) for p50 and p99, the p99 one against ``test_impact_p99_factor``; the
    evidence is the loaded window's (the incast's counters)."""
    th = effective(thresholds)
    a, b = isolated.summary, loaded.summary
    cif50 = impact_factor(b.p50_us, a.p50_us)
    cif99 = impact_factor(b.p99_us, a.p99_us)
    figures: dict[str, float | None] = {
        "isolated_p50_us": a.p50_us,
        "isolated_p99_us": a.p99_us,
        "loaded_p50_us": b.p50_us,
        "loaded_p99_us": b.p99_us,
        "impact_p50": cif50,
        "impact_p99": cif99,
    }
    if cif99 is None or cif50 is None:
        which = "alone" if a.n == 0 else "under load"
        return Verdict(
            loaded.step,
            Status.FAIL,
            (f"no latency samples {which}",),
            figures,
            evidence=loaded.evidence,
        )
    reasons: list[str] = []
    status = Status.PASS
    mark = th["test_impact_p99_factor"]
    if cif99 > mark:
        status = Status.WARN
        reasons.append(
            f"p99 rose {cif99:.1f} x under the incast ({a.p99_us:.2f} -> {b.p99_us:.2f} µs), "
            f"above {mark:g} x: congestion leaks into other traffic"
        )
    status = _counters(status, reasons, loaded.evidence, f"p99 x {cif99:.1f}")
    notes = tuple(_tail_note(b))
    return Verdict(loaded.step, status, tuple(reasons), figures, notes, evidence=loaded.evidence)


def settle(first: Verdict, again: Verdict) -> Verdict:
    """A retested step's final verdict: an outlier twice is bad (:attr:`Status.OUTLIER`);
    once is noise, and the retest's verdict stands, saying it was retested."""
    if first.status != Status.RETEST:
        return first
    if again.status == Status.RETEST:
        return replace(
            again,
            status=Status.OUTLIER,
            reasons=(*again.reasons, "an outlier on its retest too"),
        )
    said = "; ".join(first.reasons)
    return replace(again, notes=(*again.notes, f"an outlier at first ({said}); retested"))


def exit_status(verdicts: Sequence[Verdict]) -> int:
    """doctor's exit status: 2 on a failure, 1 on an outlier or warning, else 0."""
    worst = _worst(*(v.status for v in verdicts))
    if worst == Status.FAIL:
        return 2
    return 1 if worst > Status.PASS else 0
