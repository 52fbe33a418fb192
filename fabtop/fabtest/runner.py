"""A plan run on the fabric while it is watched: rounds of steps, each step's window of
counters, the verdicts, an outlier measured once more, and the report.

The monitoring session runs all along (the caller's: the dashboard's or the headless
command's); the runner reads its state. A step's window starts at the host samples
current when its tools start and ends at the first samples each end reads after they
stopped, so the counters of the same window explain its figures
(:mod:`fabtop.fabtest.evidence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from collectors.samples import HostSample
from collectors.transport.base import Transport
from collectors.vocabulary import InferenceRate
from fabtop.core.expect import Unmet
from fabtop.core.nccl import NcclTimeouts
from fabtop.core.state import FabricState
from fabtop.fabtest.evidence import End, WindowEvidence, window_evidence
from fabtop.fabtest.judge import (
    Bandwidth,
    Incast,
    Latency,
    Status,
    Verdict,
    best_bandwidth,
    best_incast,
    best_latency,
    exit_status,
    judge_bandwidth,
    judge_incast,
    judge_latency,
    judge_loaded,
    reference_rate,
    settle,
)
from fabtop.fabtest.loss import LossMeasured, judge_loss, measure_loss
from fabtop.fabtest.measure import (
    BASE_PORT,
    Measured,
    Port,
    StepError,
    bandwidth,
    latency,
    versions,
)
from fabtop.fabtest.plans import (
    BIDIR,
    INCAST,
    LATENCY,
    LATENCY_ITERATIONS,
    LOADED,
    LOSS,
    PAIR,
    SERVING,
    SIZES,
    Plan,
    Step,
)
from fabtop.fabtest.rails import RailPort, Rails
from fabtop.fabtest.sizes import Sweep
from fabtop.fabtest.sizes import judge as judge_sweep
from fabtop.fabtest.sizes import measure as measure_sweep

# A step's window ends with a frame read after its tools stopped: waited for this many
# intervals at most (a host that sends none is said, and its end is the last it sent).
WINDOW_END_INTERVALS = 3.0
# The incast behind a loaded-latency step starts this long before the latency run, so the
# queue is built when the round trips are measured.
LOAD_LEAD_S = 1.0
TCP_HEADERS = 52  # IPv4 (20) and TCP with timestamps (32): an MTU's MSS


@dataclass(frozen=True, slots=True)
class Options:
    """How a plan is run."""

    seconds: int = 5  # each bandwidth run, and an IP latency run
    iterations: int | None = None  # RDMA latency runs (None: the plan's)
    allow_busy: bool = False  # run although an inference server is generating tokens


@dataclass(slots=True)
class StepResult:
    """One step as run: its verdict, and what the tools and the runner said."""

    step: Step
    verdict: Verdict
    engine: str | None
    problems: list[str] = field(default_factory=list)
    retested: bool = False
    ports: list[str] = field(default_factory=list)  # host/port of every end
    loss: LossMeasured | None = None  # a loss step's kill, intervals and split counters


@dataclass(slots=True)
class Report:
    """A plan's outcome: every step's verdict, in the plan's order."""

    plan: str
    hosts: list[str]
    options: Options
    results: list[StepResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the run's own (hosts, rails)
    started_unix: float = 0.0
    ended_unix: float = 0.0
    # host -> tool -> its version (None: it did not say): which engine ran where
    engines: dict[str, dict[str, str | None]] = field(default_factory=dict)

    @property
    def status(self) -> int:
        """doctor's exit status: 2 failures (or problems), 1 outliers or warnings, else 0."""
        worst = exit_status([r.verdict for r in self.results])
        return 2 if self.problems and not self.results else worst


# What the runner tells its caller as it goes (the test screen, the headless lines).
Progress = Callable[[str, int, int, StepResult | None], None]


def busy_hosts(state: FabricState, hosts: Sequence[str]) -> list[str]:
    """Hosts whose inference server is generating tokens right now."""
    out = []
    for name in hosts:
        h = state.hosts.get(name)
        rates = h.rates if h is not None else None
        if rates is None:
            continue
        tokens = [
            t
            for r in rates.inference.values()
            if (t := r.get(InferenceRate.GENERATED_TOKENS_PER_S)) is not None
        ]
        if any(t > 0 for t in tokens):
            out.append(f"{name}: its inference server is generating tokens ({sum(tokens):.0f}/s)")
    return out


def refusals(
    state: FabricState,
    hosts: Sequence[str],
    options: Options,
    unmet: Sequence[Unmet] = (),
) -> list[str]:
    """Why the plan must not start (empty: it may)."""
    out = [u.line for u in unmet]
    if not options.allow_busy:
        out += [f"{line} (--allow-busy to test anyway)" for line in busy_hosts(state, hosts)]
    return out


@dataclass(slots=True)
class _Done:
    """One step as measured: figures, its window's evidence, and a problem of the window."""

    step: Step
    measured: Measured
    evidence: WindowEvidence | None = None
    problem: str | None = None  # an end that sent no frame after the step
    sweep: Sweep | None = None  # a sizes step's rows


class PortNumbers:
    """The TCP ports of a round's runs, each engine's from its own first one: unique in
    the round, not only in a step. A perftest server listens on every address of its
    host, so two rails' steps into one receiver at once on the same port would collide
    ("Couldn't listen to port")."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def __call__(self, engine: str) -> int:
        n = self.used.get(engine, 0)
        self.used[engine] = n + 1
        return BASE_PORT[engine] + n


class Runner:
    """Runs one plan over ``transports`` while ``state`` is fed by the monitoring session."""

    def __init__(
        self,
        state: FabricState,
        transports: Mapping[str, Transport],
        rails: Rails,
        options: Options,
        *,
        declared_gbps: Mapping[str, float] | None = None,
        addresses: Mapping[str, str] | None = None,
        paths: Mapping[str, Sequence[str]] | None = None,
        thresholds: Mapping[str, float] | None = None,
        progress: Progress | None = None,
        nccl: NcclTimeouts | None = None,
    ) -> None:
        self.state = state
        self.transports = transports
        self.rails = rails
        self.options = options
        self.declared = declared_gbps or {}  # host -> an IP path's declared speed
        self.addresses = addresses or {}  # host -> its SSH address (perftest's fallback)
        self.paths = paths or {}  # host -> its config's tool directories (the probe's too)
        self.thresholds = thresholds
        self.progress = progress
        self.nccl = nccl or NcclTimeouts()  # the config's [nccl], for the loss plan's report

    def _port(self, host: str, rail: int) -> Port:
        rp: RailPort = next(p for p in self.rails.ports[rail] if p.host == host)
        h = self.state.hosts[host]
        assert h.sample is not None  # the rails came from these samples
        link = h.sample.links.get(rp.link)
        if link is None:
            raise StepError(f"{host}/{rp.name}: the port went away")
        # perftest's own TCP exchange may go any way: the host's SSH address, else its name.
        path = tuple(self.paths.get(host, ()))
        return Port(host, link, self.transports[host], self.addresses.get(host, host), path)

    async def run(self, plan: Plan) -> Report:
        """Every round in turn, its steps at once; then verdicts, and outliers retested."""
        if plan.name == SERVING:
            # The serving plan's windows are read around loads (fabtop.fabtest.serving,
            # which imports this module: imported here, not at the top).
            from fabtop.fabtest.serving import run_serving

            return await run_serving(self, plan)
        hosts = sorted({h for s in plan.steps for h in s.hosts})
        report = Report(plan.name, hosts, self.options, problems=list(plan.problems))
        report.started_unix = time.time()
        done: list[_Done] = []
        total = len(plan.rounds)
        for r in plan.rounds:
            self._say("round", r.index + 1, total, None)
            ports = PortNumbers()  # one numbering for the round: its steps run at once
            done += await asyncio.gather(*(self._step(s, ports) for s in r.steps))
        verdicts = self._judge(done, None)
        again = [i for i, v in enumerate(verdicts) if v.status == Status.RETEST]
        if again:
            self._say("retest", len(again), total, None)
            redo = [await self._step(done[i].step, PortNumbers()) for i in again]
            for i, v in zip(again, self._judge(redo, done), strict=True):
                verdicts[i] = settle(verdicts[i], v)
        for i, (d, v) in enumerate(zip(done, verdicts, strict=True)):
            problems = [*d.measured.problems, *([d.problem] if d.problem else [])]
            res = StepResult(d.step, v, d.measured.engine, problems, retested=i in again)
            res.ports = [f"{h}/{self._name(h, d.step.rail)}" for h in dict.fromkeys(d.step.hosts)]
            if isinstance(d.measured, LossMeasured):
                res.loss = d.measured
            report.results.append(res)
            self._say("verdict", i + 1, len(done), res)
        reach: dict[str, Port] = {}  # a port of each host: its transport and path
        for d in done:
            for h in d.step.hosts:
                if h not in reach:
                    with contextlib.suppress(StepError):
                        reach[h] = self._port(h, d.step.rail)
        report.engines = await versions([d.measured for d in done], reach)
        report.ended_unix = time.time()
        return report

    def _name(self, host: str, rail: int) -> str:
        return next(p.name for p in self.rails.ports[rail] if p.host == host)

    def _say(self, what: str, i: int, n: int, res: StepResult | None) -> None:
        if self.progress is not None:
            self.progress(what, i, n, res)

    async def _step(self, step: Step, ports: PortNumbers) -> _Done:
        """One step measured within its counters' window."""
        hosts = list(dict.fromkeys(step.hosts))
        start = self._samples(hosts)
        frames = {h: self.state.hosts[h].frames for h in hosts}
        sweep = None
        try:
            if step.kind == SIZES:
                tx, rx = (
                    self._port(step.senders[0], step.rail),
                    self._port(step.receiver, step.rail),
                )
                o = self.options
                m, sweep = await measure_sweep(tx, rx, o.seconds, o.iterations, ports)
            else:
                m = await self._measure(step, ports)
        except StepError as e:
            return _Done(step, Measured(problems=[str(e)]))
        problem = await self._window_end(frames)
        end = self._samples(hosts)

        def window(
            a: Mapping[str, HostSample], b: Mapping[str, HostSample]
        ) -> WindowEvidence | None:
            ends = []
            for h in hosts:
                rp = next(p for p in self.rails.ports[step.rail] if p.host == h)
                if h in a and h in b:
                    ends.append(End(h, rp.link, a[h], b[h]))
            return window_evidence(ends, self.thresholds) if ends else None

        if isinstance(m, LossMeasured) and m.mid:  # the window split at the kill
            m.before, m.after = window(start, m.mid), window(m.mid, end)
        return _Done(step, m, window(start, end), problem, sweep)

    def _samples(self, hosts: Sequence[str]) -> dict[str, HostSample]:
        out = {}
        for h in hosts:
            s = self.state.hosts[h].sample
            if s is not None:
                out[h] = s
        return out

    async def _window_end(self, frames: Mapping[str, int]) -> str | None:
        """Wait for a frame from every end read after the tools stopped."""
        deadline = time.monotonic() + WINDOW_END_INTERVALS * self.state.interval
        late = list(frames)
        while late and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, self.state.interval / 10))
            late = [h for h, n in frames.items() if self.state.hosts[h].frames <= n]
        if late:
            return f"{', '.join(late)}: no frame after the step: its window ends at the last read"
        return None

    async def _measure(self, step: Step, port_no: PortNumbers) -> Measured:
        o = self.options
        rx = self._port(step.receiver, step.rail)
        tx = [self._port(h, step.rail) for h in step.senders]
        if step.kind == LOSS:
            hosts = list(dict.fromkeys(step.hosts))
            m = await measure_loss(tx, rx, o.seconds, port_no, lambda: self._samples(hosts))
            m.nccl = self.nccl
            return m
        if step.kind in (PAIR, BIDIR, INCAST):
            return await bandwidth(tx, rx, o.seconds, port_no, step.kind == BIDIR)
        iterations = o.iterations or LATENCY_ITERATIONS
        if step.kind == LATENCY:
            return await latency(tx[0], rx, iterations, o.seconds, port_no)
        # LOADED: the same pair's latency while an incast fills the receiver's queue (the
        # plan measured it alone in the step before).
        load_tx = [self._port(h, step.rail) for h in step.load]
        load = asyncio.create_task(bandwidth(load_tx, rx, o.seconds + 2, port_no, False))
        try:
            await asyncio.sleep(LOAD_LEAD_S)
            loaded = await latency(tx[0], rx, iterations, o.seconds, port_no)
        except BaseException:
            # A plan cancelled (or a latency run that failed) ends its load at once: its
            # tools end with their channels, not seconds later at the incast's own end.
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)
            raise
        under = await load
        loaded.problems += under.problems
        loaded.runs += under.runs
        return loaded

    def _reference(self, step: Step) -> float | None:
        hosts = list(dict.fromkeys(step.hosts))
        links = [self._port(h, step.rail).link for h in hosts]
        declared = [self.declared[h] for h in hosts if h in self.declared]
        ref, _why = reference_rate(links, min(declared) if len(declared) == len(hosts) else None)
        return ref

    def _loss(self, step: Step, m: Measured) -> float | None:
        """The engine's retransmissions as a share of what it sent: segments of the
        senders' MSS (their MTU less IPv4 and TCP headers with timestamps)."""
        if m.retransmits is None or not m.sent_bytes:
            return None
        mtus = [self._port(h, step.rail).link.mtu for h in step.senders]
        mss = min((mtu for mtu in mtus if mtu), default=1500) - TCP_HEADERS
        return m.retransmits * max(mss, 536) / m.sent_bytes

    def _results(
        self, done: Sequence[_Done], evidence: bool = True
    ) -> tuple[list[Bandwidth], list[Incast], list[Latency]]:
        bw: list[Bandwidth] = []
        inc: list[Incast] = []
        lat: list[Latency] = []
        for d in done:
            s, m = d.step, d.measured
            ev = d.evidence if evidence else None
            loss = self._loss(s, m)
            if s.kind in (PAIR, BIDIR):
                gbps = m.gbps[0] if m.gbps else None
                bw.append(Bandwidth(s, gbps, self._reference(s), ev, m.retransmits, loss))
            elif s.kind == INCAST:
                ref = self._reference(s)
                inc.append(Incast(s, tuple(m.gbps), ref, ev, m.retransmits, loss))
            elif s.kind == LATENCY:
                lat.append(Latency(s, m.samples_us, _op(m), ev))
        return bw, inc, lat

    def _judge(self, done: Sequence[_Done], first: Sequence[_Done] | None) -> list[Verdict]:
        """Verdicts in the order of ``done``; a retest (``first``: the plan's first run)
        is judged against the first run's best."""
        th = self.thresholds
        bw, inc, lat = self._results(done)
        best_bw = best_inc = best_lat = None
        if first is not None:
            fbw, finc, flat = self._results(first, evidence=False)
            best_bw, best_inc, best_lat = best_bandwidth(fbw), best_incast(finc), best_latency(flat)
        got: dict[Step, list[Verdict]] = {}
        for v in [
            *judge_bandwidth(bw, th, best_bw),
            *judge_incast(inc, th, best_inc),
            *judge_latency(lat, th, best_lat),
        ]:
            got.setdefault(v.step, []).append(v)
        alone = {
            (d.step.rail, d.step.senders, d.step.receiver): d
            for d in [*(first or ()), *done]
            if d.step.kind == LATENCY
        }
        out = []
        for d in done:
            if isinstance(d.measured, LossMeasured):
                out.append(judge_loss(d.step, d.measured, d.evidence, th))
            elif d.step.kind == LOSS:  # (not measured: the step's problems say why)
                out.append(Verdict(d.step, Status.FAIL, ("no figure",), {}, evidence=d.evidence))
            elif d.step.kind == LOADED:
                iso = alone.get((d.step.rail, d.step.senders, d.step.receiver))
                samples = iso.measured.samples_us if iso is not None else []
                isolated = Latency(d.step, samples, _op(d.measured))
                loaded = Latency(d.step, d.measured.samples_us, _op(d.measured), d.evidence)
                out.append(judge_loaded(isolated, loaded, th))
            elif d.step.kind == SIZES:
                ref, m = self._reference(d.step), d.measured
                loss = self._loss(d.step, m)
                out.append(judge_sweep(d.step, d.sweep, ref, d.evidence, th, m.retransmits, loss))
            else:
                out.append(got[d.step].pop(0))
        return out


def _op(m: Measured) -> str:
    """The latency operation judged: perftest's write, or an IP round trip."""
    return "write" if m.engine == "perftest" else "ip"
