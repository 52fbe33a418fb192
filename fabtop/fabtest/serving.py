"""``fabtop test serving`` (opt-in): what neighbour traffic costs an inference server.

The server's own ``/metrics``, as the monitoring session scrapes it, is read over four
windows, one after the other:

1. ``baseline``: nothing of the test runs;
2. ``incast``: the ``incast`` plan's step into the server's host runs beside it, on every
   rail the host has (the k hosts after it send);
3. ``bidir``: the ``bidir`` plan's step between the host and the next one, on every rail;
4. ``after``: the loads ended: has the server recovered?

Each window's figures are the server's token rate (generated tokens per second) and the
p99 of its TTFT, inter-token latency and queue time over the requests of the window
(:func:`fabtop.core.inference_rates.window_p99`, from the histograms' deltas), its
preemptions (vLLM's ``vllm:num_preemptions_total``; the other servers export none), the
loads' bandwidth and the traffic of the server's ports; each figure beside the baseline's
as a ratio. The counters of the same window explain them (:mod:`fabtop.fabtest.evidence`).
The loads are the other plans' steps, measured by the same code (:func:`measure.bandwidth`).

The test raises the server's latency on purpose: it needs ``--allow-busy``, and the
summary before the run says which windows load it and for how long.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.samples import HostSample, InferenceSample
from collectors.vocabulary import Derived, InferenceRate
from fabtop.core import units
from fabtop.core.inference_rates import (
    QUEUE_HISTOGRAMS,
    inference_rates,
    window_p99,
)
from fabtop.core.rates import RateEngine
from fabtop.core.state import FabricState
from fabtop.core.thresholds import effective
from fabtop.fabtest.evidence import End, WindowEvidence, window_evidence
from fabtop.fabtest.judge import Status, Verdict, _counters, _worst, gb
from fabtop.fabtest.measure import Measured, Port, StepError, bandwidth, versions
from fabtop.fabtest.plans import (
    BIDIR,
    INCAST,
    INCAST_DEFAULT_K,
    SERVING,
    Plan,
    PlanError,
    Round,
    Step,
    _k,
)
from fabtop.fabtest.rails import Rails
from fabtop.fabtest.runner import (
    PortNumbers,
    Report,
    Runner,
    StepResult,
)

BASELINE, AFTER = "baseline", "after"
WINDOWS = (BASELINE, INCAST, BIDIR, AFTER)
# A window spans at least this many intervals: the session reads /metrics once an
# interval, and a rate needs two readings inside the window (four leave two or more
# after the loads' start-up and before their end).
WINDOW_MIN_INTERVALS = 4
# Why the plan does not start without --allow-busy: what it does to the server, said.
SERVING_REFUSAL = (
    "serving loads the fabric beside a live inference server on purpose (its token rate "
    "may fall and its latency rise while the loads run): --allow-busy to run it"
)
# Beside a load, the server's readings count from when the loads' tools surely ran: the
# shortest run (a client: servers start before and end after) ended by the time the loads
# returned, so it started at the latest its own elapsed time before that; LOAD_SETTLE_S
# later its flows are up to speed. They end LOAD_TAIL_S before the loads returned (the
# servers' own ends and reports come after the clients'). A run that says no elapsed time
# counts from LOAD_LEAD_S after the loads were started (their tools start over SSH).
LOAD_LEAD_S = 1.5
LOAD_SETTLE_S = 0.5
LOAD_TAIL_S = 1.5
# The after window starts this many intervals after the loads ended: the first frame
# after them may hold counters read while they ran (a host reads its counters up to an
# interval before it sends them), and "after" is the fabric without them.
AFTER_SETTLE_INTERVALS = 1
MAX_READINGS = 10_000  # a window's readings kept (its servers' one per interval each)
# How often the window's readings of the server are picked up from the session's state.
READ_POLL_S = 0.05


def servers_found(state: FabricState, hosts: Sequence[str]) -> dict[str, list[str]]:
    """Host -> the URLs of its inference servers that export a token counter."""
    out: dict[str, list[str]] = {}
    for name in hosts:
        h = state.hosts.get(name)
        if h is None or h.sample is None:
            continue
        urls = [
            i.url
            for i in h.sample.inference
            if i.error is None and i.generated_tokens_total is not None
        ]
        if urls:
            out[name] = urls
    return out


def load_steps(rails: Rails, server: str, k: int | None) -> dict[str, list[Step]]:
    """The loads beside the server: per rail of its host, the incast of the ``k`` hosts
    after it into it, and the bidir pair with the next host (the plans' own rules)."""
    out: dict[str, list[Step]] = {INCAST: [], BIDIR: []}
    for rail, ports in rails.ports.items():
        hosts = list(dict.fromkeys(p.host for p in ports))
        if server not in hosts or len(hosts) < 2:
            continue
        i = hosts.index(server)
        others = [hosts[(i + j) % len(hosts)] for j in range(1, len(hosts))]
        kk = min(k or INCAST_DEFAULT_K, len(others))
        out[INCAST].append(Step(INCAST, rail, tuple(others[:kk]), server))
        out[BIDIR].append(Step(BIDIR, rail, (others[0],), server))
    return out


def serving_plan(
    rails: Rails, state: FabricState, hosts: Sequence[str], k: int | None = None
) -> Plan:
    """The serving plan's four windows for the first host (in ``hosts``' order) with an
    inference server and a rail shared with another host (:class:`PlanError`: none)."""
    found = servers_found(state, hosts)
    if not found:
        raise PlanError(
            "serving: no inference server with a token counter on the hosts (configure its "
            "/metrics URL in the host's inference list, or let fabtop discover it)"
        )
    if k is not None:  # checked as the incast plan checks it, against the largest rail
        _k(k, max(len({p.host for p in ps}) for ps in rails.ports.values()) - 1, SERVING)
    problems: list[str] = []
    for server in found:
        loads = load_steps(rails, server, k)
        if loads[INCAST]:
            break
        problems.append(f"{server}: its server cannot be loaded: no rail shared with a host")
    else:
        raise PlanError(f"serving: {problems[0]}")
    others = [h for h in found if h != server]
    if others:
        problems.append(
            f"{', '.join(others)}: also serving, neither loaded nor read (one server a run: "
            f"{server}'s)"
        )
    first = {w: loads[w][0] for w in (INCAST, BIDIR)}
    steps = [
        Step(SERVING, first[INCAST].rail, (), server, window=BASELINE),
        Step(SERVING, first[INCAST].rail, first[INCAST].senders, server, window=INCAST),
        Step(SERVING, first[BIDIR].rail, first[BIDIR].senders, server, window=BIDIR),
        Step(SERVING, first[INCAST].rail, (), server, window=AFTER),
    ]
    plan = Plan(SERVING, [Round(i, (s,)) for i, s in enumerate(steps)], problems=problems)
    plan.k = k
    return plan


def window_seconds(seconds: int, interval: float) -> int:
    """Each window's length: the runs' ``seconds``, at least WINDOW_MIN_INTERVALS."""
    return max(seconds, math.ceil(WINDOW_MIN_INTERVALS * interval))


def serving_summary(plan: Plan, rails: Rails, seconds: int, interval: float) -> str:
    """What the run will do to the server, said before it starts."""
    server = plan.steps[0].receiver
    loads = load_steps(rails, server, plan.k)
    w = window_seconds(seconds, interval)
    load_s = load_seconds(w)

    def said(steps: list[Step]) -> str:
        by: dict[tuple[str, ...], list[str]] = {}
        for s in steps:
            by.setdefault(s.senders, []).append(str(s.rail))
        return "; ".join(f"{','.join(h)} on rail {', '.join(r)}" for h, r in by.items())

    return (
        f"fabtop test serving: {server}'s inference server read over 4 windows of about "
        f"{w} s: baseline, beside an incast into {server} from {said(loads[INCAST])}, "
        f"beside bidir with {said(loads[BIDIR])}, after. For about {2 * load_s} s its token "
        "rate may fall and its TTFT, inter-token and queue latency rise."
    )


# --- the run ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Readings:
    """The server's first and last /metrics reading (per URL) inside a window."""

    first: dict[str, InferenceSample] = field(default_factory=dict)
    last: dict[str, InferenceSample] = field(default_factory=dict)

    def add(self, r: InferenceSample) -> None:
        if r.error is not None or r.read_s is None:
            return
        self.first.setdefault(r.url, r)
        if r.read_s > self.first[r.url].read_s:  # type: ignore[operator]
            self.last[r.url] = r


@dataclass(slots=True)
class ServingWindow:
    """What one window measured: the server's readings, the loads, the counters."""

    step: Step
    readings: _Readings
    loads: list[Measured] = field(default_factory=list)
    evidence: WindowEvidence | None = None
    port_bps: dict[str, float | None] = field(default_factory=dict)  # rx_bps, tx_bps
    problems: list[str] = field(default_factory=list)
    ports: list[str] = field(default_factory=list)  # host/port of every port read

    def figures(self) -> dict[str, float | None]:
        """Token rate, latency p99s and preemptions over the window (all URLs)."""
        rates: list[dict[str, float | None]] = []
        queue: list[float] = []
        preempted: list[float] = []
        for url, last in self.readings.last.items():
            first = self.readings.first[url]
            dt = (last.read_s or 0.0) - (first.read_s or 0.0)
            rates.append(inference_rates(last, first, dt))
            if (q := window_p99(last, first, QUEUE_HISTOGRAMS)) is not None:
                queue.append(q)
            if last.preemptions_total is not None and first.preemptions_total is not None:
                preempted.append(max(0.0, last.preemptions_total - first.preemptions_total))
        tokens = [t for r in rates if (t := r[InferenceRate.GENERATED_TOKENS_PER_S]) is not None]

        def worst(name: str) -> float | None:
            got = [x for r in rates if (x := r[name]) is not None]
            return max(got) if got else None

        gbps = [g for m in self.loads for g in m.gbps if g is not None]
        return {
            "tokens_per_s": sum(tokens) if tokens else None,
            InferenceRate.TTFT_P99_S: worst(InferenceRate.TTFT_P99_S),
            InferenceRate.ITL_P99_S: worst(InferenceRate.ITL_P99_S),
            "queue_p99_s": max(queue) if queue else None,
            "preemptions": sum(preempted) if preempted else None,
            "load_gbps": sum(gbps) if gbps else None,
            "server_rx_gbps": _gbps(self.port_bps.get(Derived.RX_BPS)),
            "server_tx_gbps": _gbps(self.port_bps.get(Derived.TX_BPS)),
        }


def _gbps(bps: float | None) -> float | None:
    return None if bps is None else bps / 1e9


async def run_serving(runner: Runner, plan: Plan) -> Report:
    """The four windows in turn, then their verdicts (:func:`judge_serving`)."""
    hosts = sorted({h for s in plan.steps for h in s.hosts})
    server = plan.steps[0].receiver
    loads = load_steps(runner.rails, server, plan.k)
    hosts = sorted({*hosts, *(h for ss in loads.values() for s in ss for h in s.hosts)})
    report = Report(plan.name, hosts, runner.options, problems=list(plan.problems))
    report.started_unix = time.time()
    seconds = window_seconds(runner.options.seconds, runner.state.interval)
    windows: list[ServingWindow] = []
    for r in plan.rounds:
        runner._say("round", r.index + 1, len(plan.rounds), None)
        step = r.steps[0]
        windows.append(await _window(runner, step, loads.get(step.window, []), seconds))
    verdicts = judge_serving(windows, runner.thresholds)
    for w, v in zip(windows, verdicts, strict=True):
        engine = next((m.engine for m in w.loads if m.engine), None)
        problems = [*(p for m in w.loads for p in m.problems), *w.problems]
        res = StepResult(w.step, v, engine, problems)
        res.ports = w.ports
        report.results.append(res)
        runner._say("verdict", len(report.results), len(windows), res)
    reach: dict[str, Port] = {}
    for ss in loads.values():
        for s in ss:
            for h in s.hosts:
                with contextlib.suppress(StepError):
                    reach.setdefault(h, runner._port(h, s.rail))
    report.engines = await versions([m for w in windows for m in w.loads], reach)
    report.ended_unix = time.time()
    return report


async def _window(runner: Runner, step: Step, loads: list[Step], seconds: int) -> ServingWindow:
    """One window: the loads run (if any), the server's readings while they surely ran
    (else over ``seconds``), and the counters of every port involved."""
    server = step.receiver
    rails = runner.rails
    if step.window == AFTER:
        await asyncio.sleep(AFTER_SETTLE_INTERVALS * runner.state.interval)
    ends = {(server, p.link) for ps in rails.ports.values() for p in ps if p.host == server}
    for s in loads:
        ends |= {(p.host, p.link) for p in rails.ports[s.rail] if p.host in s.hosts}
    hosts = sorted({h for h, _ in ends})
    start = runner._samples(hosts)
    frames = {h: runner.state.hosts[h].frames for h in hosts}
    w = ServingWindow(step, _Readings())
    w.ports = [
        f"{p.host}/{p.name}" for ps in rails.ports.values() for p in ps if (p.host, p.link) in ends
    ]
    since = time.monotonic()
    until = since + seconds
    seen: dict[tuple[str, float], InferenceSample] = {}
    watch = asyncio.create_task(_watch(runner.state, server, seen))
    try:
        if loads:
            ports = PortNumbers()  # one numbering: the loads into the server run at once
            jobs = (_load(runner, s, load_seconds(seconds), ports) for s in loads)
            w.loads = list(await asyncio.gather(*jobs))
            since, until = _loaded_span(since, time.monotonic(), w.loads)
        else:
            # and a last reading read at the window's very end arrives a little later
            await asyncio.sleep(seconds + READ_POLL_S * 4)
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    for (_url, read_s), r in sorted(seen.items(), key=lambda kv: kv[0][1]):
        if since <= read_s <= until:
            w.readings.add(r)
    problem = await runner._window_end(frames)
    if problem:
        w.problems.append(problem)
    end = runner._samples(hosts)
    window_ends = [
        End(h, link, start[h], end[h]) for h, link in sorted(ends) if h in start and h in end
    ]
    w.evidence = window_evidence(window_ends, runner.thresholds) if window_ends else None
    links = {link for h, link in ends if h == server}
    w.port_bps = _port_bps(runner.thresholds, start.get(server), end.get(server), links)
    if len(w.readings.last) < len(w.readings.first) or not w.readings.first:
        span = max(0.0, until - since)
        w.problems.append(
            f"{server}: fewer than two readings of a /metrics URL in the window's {span:.1f} s "
            f"(one an interval, {runner.state.interval:g} s): a longer --seconds gives more"
        )
    return w


def load_seconds(seconds: int) -> int:
    """How long each load runs for a window of ``seconds``: its readings' span is shorter
    by the flows' start and the servers' end (:func:`_loaded_span`)."""
    return seconds + math.ceil(LOAD_SETTLE_S + LOAD_TAIL_S)


def _loaded_span(started: float, done: float, loads: Sequence[Measured]) -> tuple[float, float]:
    """When the loads surely ran, on this machine's monotonic clock (see LOAD_SETTLE_S);
    a load that ended early (a tool refused or missing) ends the span with it."""
    ran = [r.elapsed_s for m in loads for r in m.runs if r.elapsed_s and not r.missing]
    since = started + LOAD_LEAD_S if not ran else done - min(ran) + LOAD_SETTLE_S
    return max(since, started), done - LOAD_TAIL_S


async def _load(runner: Runner, step: Step, seconds: int, ports: PortNumbers) -> Measured:
    """One load step (incast or bidir) as its own plan measures it."""
    try:
        rx = runner._port(step.receiver, step.rail)
        tx = [runner._port(h, step.rail) for h in step.senders]
        return await bandwidth(tx, rx, seconds, ports, step.kind == BIDIR)
    except StepError as e:
        return Measured(problems=[str(e)])


async def _watch(
    state: FabricState, host: str, seen: dict[tuple[str, float], InferenceSample]
) -> None:
    """Every new reading of ``host``'s servers, by URL and the time it was read (at most
    MAX_READINGS: a window holds one an interval)."""
    while len(seen) < MAX_READINGS:
        h = state.hosts.get(host)
        if h is not None and h.sample is not None:
            for r in h.sample.inference:
                if r.read_s is not None and r.error is None:
                    seen.setdefault((r.url, r.read_s), r)
        await asyncio.sleep(READ_POLL_S)


def _port_bps(
    thresholds: Mapping[str, float] | None,
    start: HostSample | None,
    end: HostSample | None,
    links: set[str],
) -> dict[str, float | None]:
    """The server's ports' receive and send rates over the window (summed), as the rate
    engine makes them from the window's first and last sample."""
    if start is None or end is None or start is end:
        return {}
    engine = RateEngine(effective(thresholds))
    engine.update(start)
    rates = engine.update(end)
    out: dict[str, float | None] = {}
    for key in (Derived.RX_BPS.value, Derived.TX_BPS.value):
        got = [
            float(v)
            for link in links
            if (lr := rates.links.get(link)) is not None and not lr.gap
            if isinstance(v := lr.rates.get(key), float | int)
        ]
        out[key] = sum(got) if got else None
    return out


# --- the verdicts ----------------------------------------------------------------------

# The latency figures compared with the baseline's, and how reasons name them.
_LATENCIES = (
    (InferenceRate.TTFT_P99_S, "TTFT p99"),
    (InferenceRate.ITL_P99_S, "inter-token p99"),
    ("queue_p99_s", "queue time p99"),
)


def _ratio_name(name: str) -> str:
    """``ttft_p99_s`` -> ``ttft_p99_ratio``: the figure over the baseline's."""
    return name.removesuffix("_s") + "_ratio"


def _ratio(now: float | None, base: float | None) -> float | None:
    if now is None or base is None or base <= 0:
        return None
    return now / base


def _traffic(f: Mapping[str, float | None], base: Mapping[str, float | None]) -> str:
    """What the server's ports carried beside the loads, against the baseline: the
    counters behind a token rate that fell."""
    rx, tx = f.get("server_rx_gbps"), f.get("server_tx_gbps")
    brx, btx = base.get("server_rx_gbps"), base.get("server_tx_gbps")
    if rx is None or tx is None or brx is None or btx is None:
        return ""
    text = f"its ports: {gb(rx)} Gb/s in, {gb(tx)} out ({gb(brx)} and {gb(btx)} at baseline)"
    load = f.get("load_gbps")
    return text + (f"; the loads moved {gb(load)} Gb/s" if load is not None else "")


def judge_serving(
    windows: Sequence[ServingWindow], thresholds: Mapping[str, float] | None = None
) -> list[Verdict]:
    """One verdict per window, the loads' and after's against the baseline's figures:
    a token rate below ``test_serving_token_ratio`` of the baseline beside a load, or a
    latency p99 above ``test_serving_p99_factor`` x, is a warning (the test made that load
    on purpose); below ``test_serving_recovered_ratio`` after the loads, a failure (the
    server did not recover). Each with the window's counters on top."""
    th = effective(thresholds)
    base = windows[0].figures() if windows else {}
    out: list[Verdict] = []
    for w in windows:
        f: dict[str, float | None] = w.figures()
        window = w.step.window
        reasons: list[str] = []
        notes: list[str] = []
        status = Status.PASS
        tokens, base_tokens = f["tokens_per_s"], base.get("tokens_per_s")
        if window != BASELINE:
            f["token_ratio"] = _ratio(tokens, base_tokens)
            for name, _what in _LATENCIES:
                f[_ratio_name(name)] = _ratio(f[name], base.get(name))
        ratio = f.get("token_ratio")
        if window in (INCAST, BIDIR) and f["load_gbps"] is None:
            # Without its load the window says nothing of the load's impact.
            status = Status.FAIL
            reasons.append(f"the {window} load moved nothing: no impact can be measured")
        if tokens is None:
            status = Status.FAIL
            why = w.problems or [
                "its counters went backwards or jumped between the window's readings "
                "(the server restarted?)"
            ]
            reasons.append("no token rate in this window: " + "; ".join(why))
        elif window == BASELINE and tokens <= 0:
            status = Status.FAIL
            reasons.append(
                "the server generated no tokens in the baseline: nothing to compare with "
                "(run it while the server has requests to serve)"
            )
        elif window in (INCAST, BIDIR) and ratio is not None:
            mark = th["test_serving_token_ratio"]
            if ratio < mark:
                status = _worst(status, Status.WARN)
                reasons.append(
                    f"token rate fell to {ratio:.0%} of its baseline beside the {window} "
                    f"({base_tokens:.0f} -> {tokens:.0f} tokens/s), below {mark:.0%}: its "
                    "traffic shares a congested queue with the neighbours'"
                )
        elif window == AFTER and ratio is not None:
            mark = th["test_serving_recovered_ratio"]
            if ratio < mark:
                status = Status.FAIL
                reasons.append(
                    f"did not recover: after the loads its token rate is {ratio:.0%} of its "
                    f"baseline ({base_tokens:.0f} -> {tokens:.0f} tokens/s), below {mark:.0%}"
                )
        if window != BASELINE:
            factor = th["test_serving_p99_factor"]
            for name, what in _LATENCIES:
                r = f.get(_ratio_name(name))
                now, then = f.get(name), base.get(name)
                if r is not None and r > factor and now is not None and then is not None:
                    status = _worst(status, Status.WARN)
                    where = "after the loads" if window == AFTER else f"beside the {window}"
                    reasons.append(
                        f"{what} rose {r:.1f} x {where} ({units.ms(then)} -> {units.ms(now)}), "
                        f"above {factor:g} x"
                    )
        if window != BASELINE and (traffic := _traffic(f, base)):
            notes.append(traffic)
        if f.get("preemptions"):
            notes.append(f"the server preempted {f['preemptions']:.0f} request(s) in the window")
        missing = [what for name, what in _LATENCIES if f.get(name) is None]
        if missing:
            notes.append(
                f"not known in this window: {', '.join(missing)} (the server exports no such "
                "histogram, or no request completed that phase)"
            )
        retrans = [m.retransmits for m in w.loads if m.retransmits is not None]
        figure = f"{tokens:.0f} tokens/s" if tokens is not None else "no token rate"
        status = _counters(status, reasons, w.evidence, figure, sum(retrans) if retrans else None)
        out.append(Verdict(w.step, status, tuple(reasons), f, tuple(notes), evidence=w.evidence))
    return out


def serving_figure(v: Verdict) -> str:
    """A window's headline: the token rate, and beside a load or after, its ratio."""
    f = v.figures
    tokens = f.get("tokens_per_s")
    if tokens is None:
        return "-"
    text = f"{tokens:.0f} tok/s"
    if (r := f.get("token_ratio")) is not None:
        text += f" (x{r:.2f})"
    if (itl := f.get(InferenceRate.ITL_P99_S)) is not None:
        text += f", ITL p99 {units.ms(itl)}"
    if (r := f.get("itl_p99_ratio")) is not None:
        text += f" (x{r:.1f})"
    return text


def impact(results: Sequence[StepResult]) -> dict[str, dict[str, float | None]]:
    """Each ratio to the baseline, by window: the run's impact on serving at a glance."""
    out: dict[str, dict[str, float | None]] = {}
    for name in ("token_ratio", *(_ratio_name(n) for n, _ in _LATENCIES)):
        out[name] = {
            r.verdict.step.window: r.verdict.figures.get(name)
            for r in results
            if r.verdict.step.window != BASELINE
        }
    return out


def impact_line(results: Sequence[StepResult]) -> str:
    """``serving on node1: token rate x0.59 beside the incast, x0.60 beside the bidir,
    x0.98 after; inter-token p99 x1.8, x1.8, x1.0``."""
    if not results:
        return ""
    got = impact(results)

    def said(name: str, digits: int) -> str:
        return ", ".join("-" if x is None else f"x{x:.{digits}f}" for x in got[name].values())

    where = ", ".join(f"beside the {w}" if w in (INCAST, BIDIR) else w for w in got["token_ratio"])
    return (
        f"serving on {results[0].verdict.step.receiver}: token rate {said('token_ratio', 2)} "
        f"({where}); inter-token p99 {said('itl_p99_ratio', 1)}; TTFT p99 "
        f"{said('ttft_p99_ratio', 1)}"
    )
