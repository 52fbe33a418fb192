"""``fabtop test loss`` (opt-in): one sender of an incast lost on purpose, and how long the
others take to regain the receiver's bandwidth.

Per rail, the first host receives from the next ``k`` (as an incast), and the last of
them is killed mid-run: the launcher on its node sends KILL to the pid of the tool it
started (``kill_ms``, collectors/launch.sh), as a crashed worker dies, with no handler
of its own run. fabtop changes no configuration: no link is downed (a ``--link``
variant is out of scope), nothing of tc or nft is touched on the nodes.

- Recovery comes from the receiver's own per-interval throughput. IP paths: each
  sender's iperf3 server on the receiver reports every :data:`INTERVAL_S`, on the
  receiver's clock. RDMA ports: perftest prints no per-interval figure in a timed run
  (and fabtop invents none), so the receiver's rx counters between its frames (the
  probe's interval) time it, each frame placed when it arrived here. The
  bandwidth to regain is what the receiver got from all senders before the kill (the
  median interval, its first, slow start, left out); it is regained at the end of the first interval
  from which the remaining senders together reach ``test_loss_regained_ratio`` of it for
  :data:`HOLD_INTERVALS` intervals. Everything is placed on one timeline, this
  machine's clock from when the clients were started: each server's intervals from
  when its client started (a client tried again while its server was not listening
  starts later), the kill from when its client started and when its node says it came.
- What the receiver's counters did: the step's window, split at the sample current when
  the sender was killed (before / after; at the probe's interval), and the remaining
  senders' own retransmissions per interval, before and after.
- Whether anything hung: a client that ran past its limit, or a server that did not end
  within :data:`~fabtop.fabtest.measure.SERVER_GRACE_S` of its client (the killed
  sender's server too), is named; fabtop ended it (its channel closed: the launcher ends
  its process group).
- NCCL's stall bound for the fabric (:mod:`fabtop.core.nccl`), with where its figures
  came from.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collectors.engines import Command, EngineArgError, Iperf3Run, PerftestRun, iperf3_argv
from collectors.launch import ToolRun
from collectors.parsers.iperf3 import parse_iperf3
from collectors.parsers.perftest import parse_perftest
from collectors.samples import HostSample
from collectors.vocabulary import Metric
from fabtop.core.nccl import NcclTimeouts
from fabtop.core.thresholds import effective
from fabtop.fabtest.evidence import WindowEvidence
from fabtop.fabtest.judge import Status, Verdict, counters_status, gb
from fabtop.fabtest.measure import (
    SERVER_GRACE_S,
    SERVER_START_S,
    Measured,
    Port,
    StepError,
    _client,
    _peer,
    _perftest_side,
    _run,
    address,
)
from fabtop.fabtest.plans import LOSS, Step

# iperf3's reporting interval in this plan: fine enough to time a recovery of a few
# hundred ms, coarse enough that a token bucket's burst (a few hundred KB) does not make
# an interval of a few hundred Mb/s swing past the regained mark.
INTERVAL_S = 0.25
# Intervals in a row at the regained mark: one could be a burst.
HOLD_INTERVALS = 2
# The kill comes this far into the run: time before it for the bandwidth to regain,
# after it for the recovery and its hold (with the default 5 s: 2 s and 3 s).
KILL_AT = 0.4
MIN_SECONDS = 5  # shorter runs leave too few intervals on either side of the kill
# An interval's end past this (s) is not one of a run fabtop started (at most 600 s):
# a node's bad bytes, left out before they reach the arithmetic.
MAX_INTERVAL_END_S = 3600.0
FRAME_POLL_S = 0.05  # how often the receiver's newest frame is looked for (RDMA ports)


def loss_steps(rail: int, hosts: Sequence[str], k: int) -> list[Step]:
    """One rail's step: the first host receives from the next ``k``; the last is killed."""
    kk = min(k, len(hosts) - 1)
    return [Step(LOSS, rail, tuple(hosts[1 : kk + 1]), hosts[0])]


def loss_seconds(seconds: int) -> int:
    """How long each sender of a loss step runs (at least :data:`MIN_SECONDS`)."""
    return max(seconds, MIN_SECONDS)


def summary_line(steps: Sequence[Step], seconds: int) -> str:
    """What the plan will do on purpose, said before it starts."""
    run = loss_seconds(seconds)
    killed = ", ".join(dict.fromkeys(s.senders[-1] for s in steps))
    return (
        f"each sender runs {run} s; {killed}'s is killed by its pid "
        f"{run * KILL_AT:g} s in (on purpose: a lost worker), the others' recovery timed"
    )


@dataclass(slots=True)
class LossMeasured(Measured):
    """A loss step as measured: the kill, the receiver's intervals, what hung."""

    killed: str = ""  # the host whose sender was killed
    kill_ms: int = 0  # asked: this long after the sender's start
    killed_pid: int | None = None  # the tool's pid the launcher killed (None: not killed)
    killed_tool: str = ""
    killed_at_s: float | None = None  # when, after its start (the node's clock)
    # sender -> (start_s, end_s, bits/s) of each interval its server on the receiver saw;
    # RDMA ports: the receiver's own rx counters between its frames, under its name
    received: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    # the remaining senders' retransmissions: (end_s, count) of each interval
    resent: list[tuple[float, int]] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)  # tools that did not end by themselves
    mid: dict[str, HostSample] = field(default_factory=dict)  # the samples at the kill
    # The kill on the clients' common timeline: from when they were started, on this
    # machine's clock (the receiver's frames and the servers' intervals are placed on it)
    kill_at_s: float | None = None
    before: WindowEvidence | None = None  # the window's counters up to the kill
    after: WindowEvidence | None = None  # and from it
    nccl: NcclTimeouts = field(default_factory=NcclTimeouts)
    rdma: bool = False  # RDMA ports: perftest, timed by the receiver's own counters


async def measure_loss(
    senders: Sequence[Port],
    receiver: Port,
    seconds: int,
    ports: Callable[[str], int],
    samples: Callable[[], dict[str, HostSample]],
) -> LossMeasured:
    """Every sender into ``receiver``, the last one killed ``KILL_AT`` of the way in.
    IP paths: iperf3, its servers on the receiver reporting every :data:`INTERVAL_S`;
    RDMA ports: perftest, and the receiver's rx counters frame by frame. ``samples``: the
    hosts' current samples (at the kill, to split the window; the receiver's frames)."""
    if len(senders) < 2:
        raise StepError(f"{receiver.label}: loss needs 2 senders (one lost, one going on)")
    seconds = loss_seconds(seconds)
    engine = "perftest" if receiver.rdma else "iperf3"
    out = LossMeasured(engine=engine, killed=senders[-1].host, rdma=receiver.rdma)
    out.kill_ms = round(seconds * KILL_AT * 1000)
    jobs = _jobs(senders, receiver, seconds, ports, engine)
    servers = [asyncio.create_task(_run(receiver, srv, out)) for srv, _ in jobs]
    frames: list[tuple[float, int, int]] = []  # (arrived, the receiver's clock ns, rx bytes)
    aside: list[asyncio.Task[Any]] = []
    if receiver.rdma:
        aside.append(asyncio.create_task(_watch(receiver, samples, frames)))
    try:
        await asyncio.sleep(SERVER_START_S)
        began = time.monotonic()

        started: dict[str, float] = {}  # each client's (last) start, from ``began``

        async def client(port: Port, cmd: Command, server: asyncio.Task[Any]) -> ToolRun | None:
            lost = port is senders[-1]
            run = await _client(port, cmd, out, server, out.kill_ms if lost else None)
            back = time.monotonic() - began
            # Where its run began on this machine's clock: a client tried again while its
            # server was not yet listening started later than the others.
            started[port.host] = back - (run.elapsed_s or 0.0) if run is not None else 0.0
            if lost:  # its run comes back as the tool is killed: the window splits here
                out.mid = samples()
                at = run.killed_at_s if run is not None else None
                out.kill_at_s = back if at is None else started[port.host] + at
            return run

        clients = await asyncio.gather(
            *(
                client(s, cli, task)
                for s, (_, cli), task in zip(senders, jobs, servers, strict=True)
            )
        )
        await asyncio.wait(servers, timeout=SERVER_GRACE_S)
        for s, task in zip(senders, servers, strict=True):
            if not task.done():
                out.hung.append(
                    f"{receiver.host}: {jobs[0][0].argv[0]} server for {s.host} did not end "
                    f"within {SERVER_GRACE_S:g} s of its client: fabtop ended it"
                )
        done = [t.result() if t.done() and not t.cancelled() else None for t in servers]
    finally:
        for t in [*servers, *aside]:
            if not t.done():
                t.cancel()
        await asyncio.gather(*servers, *aside, return_exceptions=True)
    _read(out, senders, done, clients, started)
    if receiver.rdma:
        out.received = {receiver.host: _rates(frames, began)}
    return out


def _jobs(
    senders: Sequence[Port],
    receiver: Port,
    seconds: int,
    ports: Callable[[str], int],
    engine: str,
) -> list[tuple[Command, Command]]:
    """Each sender's server (on the receiver) and client."""
    peer = address(receiver) if engine == "iperf3" else _peer(receiver)
    if peer is None:
        raise StepError(f"{receiver.label}: no address on the rail's netdev to test over")
    jobs: list[tuple[Command, Command]] = []
    try:
        for s in senders:
            if engine == "perftest":
                base = PerftestRun("ib_write_bw", "", ports("perftest"), duration_s=seconds)
                jobs.append((_perftest_side(base, receiver, None), _perftest_side(base, s, peer)))
                continue
            n, iv = ports("iperf3"), INTERVAL_S
            srv = iperf3_argv(Iperf3Run(n, bind=peer, duration_s=seconds, interval_s=iv))
            cli = iperf3_argv(
                Iperf3Run(n, server=peer, bind=address(s), duration_s=seconds, interval_s=iv)
            )
            jobs.append((srv, cli))
    except EngineArgError as e:
        raise StepError(f"{receiver.label}: {e}") from None
    return jobs


async def _watch(
    receiver: Port,
    samples: Callable[[], dict[str, HostSample]],
    into: list[tuple[float, int, int]],
) -> None:
    """The receiver's rx bytes at each frame it sends, with its own clock (rates come from
    it, as everywhere in fabtop) and when it arrived here (the kill is placed on this
    machine's clock too: the nodes' clocks need not agree)."""
    seen: int | None = None
    while True:
        s = samples().get(receiver.host)
        if s is not None and s.clock_ns != seen:
            seen = s.clock_ns
            link = s.links.get(receiver.link.id)
            value = link.metrics.get(Metric.RX_BYTES) if link is not None else None
            if isinstance(value, int):
                into.append((time.monotonic(), s.clock_ns, value))
        await asyncio.sleep(FRAME_POLL_S)


def _rates(
    frames: Sequence[tuple[float, int, int]], began: float
) -> list[tuple[float, float, float]]:
    """(start, end, bits/s) between consecutive frames, placed from the clients' start by
    their arrival here, the rate over the receiver's own clock; a counter that went back
    (a reset) or a clock that did not move gives no interval."""
    out = []
    for (a0, c0, v0), (a1, c1, v1) in itertools.pairwise(frames):
        if c1 > c0 and v1 >= v0 and a1 > a0:
            out.append((a0 - began, a1 - began, (v1 - v0) * 8e9 / (c1 - c0)))
    return out


def _read(
    out: LossMeasured,
    senders: Sequence[Port],
    servers: Sequence[ToolRun | None],
    clients: Sequence[ToolRun | None],
    started: Mapping[str, float],
) -> None:
    """The kill, the receiver's intervals (iperf3: on the clients' common timeline, each
    server's moved by when its client started), the remaining senders' figures and what
    hung."""
    killed = clients[-1]
    if killed is not None:
        out.killed_pid, out.killed_at_s = killed.killed_pid, killed.killed_at_s
        out.killed_tool = killed.argv[0]
    resent: dict[float, int] = {}
    for s, srv, cli in zip(senders, servers, clients, strict=True):
        for run in (cli, srv):
            if run is not None and run.timed_out:
                role = "client" if run is cli else "server"
                out.hung.append(
                    f"{run.host}: {run.argv[0]} {role} ran past its limit: the launcher ended it"
                )
        if out.engine == "perftest":
            if cli is not None and cli is not killed and not cli.missing:
                r = parse_perftest(cli.text())
                if r.errors:
                    out.problems.append(f"{cli.host}: {cli.argv[0]}: {r.errors[0].line}")
                out.gbps.append(r.bw[-1].average_gbps if r.bw else None)
            else:
                out.gbps.append(None)
            continue
        if srv is not None and not srv.missing:
            r3 = parse_iperf3(srv.text())
            out.versions[(srv.host, "iperf3")] = r3.version
            at = started.get(s.host, 0.0)
            out.received[s.host] = [
                (at + iv.start, at + iv.end, iv.sum.bits_per_second)
                for iv in r3.intervals
                if iv.start is not None
                and iv.end is not None
                and 0 <= iv.start < iv.end <= MAX_INTERVAL_END_S
                and iv.sum.bits_per_second is not None
            ]
            if r3.error and s.host != out.killed:  # (the killed one's server says it lost it)
                out.problems.append(f"{srv.host}: iperf3 server for {s.host}: {r3.error}")
        if cli is None or cli.missing or cli is killed:
            out.gbps.append(None)
            continue
        c = parse_iperf3(cli.text())
        out.versions[(cli.host, "iperf3")] = c.version
        if c.error:
            out.problems.append(f"{cli.host}: iperf3: {c.error}")
        got = c.received.bits_per_second if c.received is not None else None
        out.gbps.append(got / 1e9 if got is not None else None)
        at = started.get(s.host, 0.0)
        for iv in c.intervals:
            if iv.end is not None and iv.sum.retransmits is not None:
                end = round(at + iv.end, 3)
                resent[end] = resent.get(end, 0) + iv.sum.retransmits
    out.resent = sorted(resent.items())
    counts = [n for _, n in out.resent]
    out.retransmits = sum(counts) if counts else None


@dataclass(frozen=True, slots=True)
class Recovery:
    """The receiver's bandwidth before a sender was lost, and how the others took it back."""

    baseline_bps: float | None  # from every sender before the kill (None: no interval)
    survivors_before_bps: float | None  # the remaining senders' part of it
    survivors_after_bps: float | None  # theirs after: from the regained interval on, or all
    recovery_s: float | None  # from the kill to the end of the regained interval (None: not)
    after_s: float  # how long the run went on after the kill (what was watched)
    resolution_s: float = 0.0  # the regained interval's length: it happened within it


Interval = tuple[float, float, float]  # (start s, end s, bits/s) from the clients' start


def series(
    received: Mapping[str, Sequence[Interval]],
    killed: str,
    kill_at_s: float,
    interval_s: float = INTERVAL_S,
) -> tuple[list[Interval], list[Interval]]:
    """What the receiver got from every sender, and from the senders other than
    ``killed``, interval by interval. ``received``: per sender, its server's intervals
    (the grid of ``interval_s``, an interval shorter than half of it, a run's last sliver,
    left out; every sender's only where the killed one's server reported)."""
    if killed not in received:
        return [], []  # the lost sender's part before the kill is not known
    total: dict[int, float] = {}
    rest: dict[int, float] = {}
    for host, ivs in received.items():
        for start, end, bps in ivs:
            if end - start < interval_s / 2:
                continue
            i = round(start / interval_s)
            total[i] = total.get(i, 0.0) + bps
            if host != killed:
                rest[i] = rest.get(i, 0.0) + bps
    # All of them only where the lost sender's server said its part: its last interval
    # before the kill is cut short, and iperf3 does not print it.
    theirs = {round(s / interval_s) for s, e, _ in received[killed] if e - s >= interval_s / 2}
    total = {i: v for i, v in total.items() if i in theirs}

    def grid(d: Mapping[int, float]) -> list[Interval]:
        return [(i * interval_s, (i + 1) * interval_s, d[i]) for i in sorted(d)]

    return grid(total), grid(rest)


def frame_series(
    frames: Sequence[Interval], kill_at_s: float
) -> tuple[list[Interval], list[Interval]]:
    """The same from the receiver's own rx counters between its frames (RDMA ports):
    every sender's before the kill; the others' only in the frames wholly after it (the
    frame the kill falls in mixes both)."""
    return list(frames), [iv for iv in frames if iv[0] >= kill_at_s]


def recovery(
    total: Sequence[Interval],
    rest: Sequence[Interval],
    kill_at_s: float,
    ratio: float,
    hold: int = HOLD_INTERVALS,
) -> Recovery:
    """When the other senders (``rest``) together reached ``ratio`` of what the receiver
    got from all of them (``total``) before ``kill_at_s``, for ``hold`` intervals in a
    row. What was had is the median interval before the kill, from the clients' start,
    the first (slow start) left out when others are: one slow interval (a run starting
    late, a frame read early) does not lower the mark."""
    before = [iv for iv in total if iv[0] >= -1e-6 and iv[1] <= kill_at_s + 1e-6]
    if len(before) > 1:
        before = before[1:]
    after = [iv for iv in rest if iv[1] > kill_at_s + 1e-6]
    after_s = max(0.0, after[-1][1] - kill_at_s) if after else 0.0
    if not before:
        return Recovery(None, None, None, None, after_s)
    baseline = statistics.median(iv[2] for iv in before)
    starts = {iv[0] for iv in before}
    had = [iv[2] for iv in rest if iv[0] in starts]
    rest_before = statistics.median(had) if had else None
    mark = ratio * baseline
    for n, iv in enumerate(after):
        run = after[n : n + hold]
        if len(run) == hold and all(x[2] >= mark for x in run):
            regained = statistics.fmean(x[2] for x in after[n:])
            took = max(0.0, iv[1] - kill_at_s)
            return Recovery(baseline, rest_before, regained, took, after_s, iv[1] - iv[0])
    # Not regained: what they reached, the interval of the kill left out.
    later = after[1:] or after
    reached = statistics.fmean(x[2] for x in later) if later else None
    return Recovery(baseline, rest_before, reached, None, after_s)


def judge_loss(
    step: Step, m: LossMeasured, ev: WindowEvidence | None, thresholds: Mapping[str, float] | None
) -> Verdict:
    """Regained within ``test_loss_recovery_s``: pass; later: warn; never, anything hung
    or the sender not killed: fail. The window's counters on top, as every step's."""
    th = effective(thresholds)
    bound, ratio = th["test_loss_recovery_s"], th["test_loss_regained_ratio"]
    reasons: list[str] = []
    notes: list[str] = []
    figures: dict[str, float | None] = {
        "recovery_s": None,
        "bound_s": bound,
        "resolution_s": None,
        "kill_at_s": m.killed_at_s,
        "baseline_gbps": None,
        "survivors_before_gbps": None,
        "survivors_after_gbps": None,
        "retransmits_before": None,
        "retransmits_after": None,
        "nccl_try_s": m.nccl.per_try_s,
        "nccl_qp_error_s": m.nccl.qp_error_s,
    }
    status = Status.PASS
    rest = ", ".join(h for h in step.senders if h != m.killed)
    if m.killed_pid is None or m.killed_at_s is None:
        reasons.append(f"{m.killed}: its sender was not killed (it ended before {m.kill_ms} ms)")
        status = Status.FAIL
    else:
        notes.append(
            f"{m.killed}: {m.killed_tool} (pid {m.killed_pid}) killed "
            f"{m.killed_at_s:.2f} s into its run, by fabtop on purpose"
        )
        at = m.kill_at_s if m.kill_at_s is not None else m.killed_at_s
        figures["kill_at_s"] = at
        got = (
            frame_series(m.received.get(step.receiver, []), at)
            if m.rdma
            else series(m.received, m.killed, at)
        )
        r = recovery(*got, at, ratio)
        g = {
            "baseline_gbps": r.baseline_bps,
            "survivors_before_gbps": r.survivors_before_bps,
            "survivors_after_gbps": r.survivors_after_bps,
        }
        figures.update({k: (v / 1e9 if v is not None else None) for k, v in g.items()})
        figures["recovery_s"] = r.recovery_s
        figures["resolution_s"] = r.resolution_s if r.recovery_s is not None else None
        before = [n for t, n in m.resent if t <= at]
        after = [n for t, n in m.resent if t > at]
        figures["retransmits_before"] = float(sum(before)) if before else None
        figures["retransmits_after"] = float(sum(after)) if after else None
        every = "the receiver's frames" if m.rdma else f"{INTERVAL_S:g} s intervals"
        status = _recovery_status(r, ratio, bound, rest, every, reasons, notes)
    for line in m.hung:
        reasons.append(f"hung: {line}")
        status = Status.FAIL
    if figures["retransmits_before"] is not None or figures["retransmits_after"] is not None:
        notes.append(
            f"{rest} retransmitted {figures['retransmits_before'] or 0:.0f} times before the "
            f"kill and {figures['retransmits_after'] or 0:.0f} after (iperf3's own count)"
        )
    for when, part in (("before the kill", m.before), ("after the kill", m.after)):
        notes.append(f"counters {when}: {_counters_line(part)}")
    if m.rdma:
        notes.append(
            "RDMA ports: timed by the receiver's rx counters between its frames (the probe's "
            "interval): perftest prints no per-interval figure in a timed run"
        )
    notes.append(m.nccl.line)
    figure = f"recovery {figures['recovery_s']:.2f} s" if figures["recovery_s"] is not None else ""
    status = counters_status(status, reasons, ev, figure or "the run", m.retransmits)
    return Verdict(step, status, tuple(reasons), figures, tuple(notes), evidence=ev)


def _recovery_status(
    r: Recovery,
    ratio: float,
    bound: float,
    rest: str,
    every: str,
    reasons: list[str],
    notes: list[str],
) -> Status:
    if r.baseline_bps is None:
        reasons.append(
            "no per-interval figure before the kill from every sender: the recovery cannot be timed"
        )
        return Status.FAIL
    had = f"{gb(r.baseline_bps / 1e9)} Gb/s"
    if r.recovery_s is None:
        reached = gb((r.survivors_after_bps or 0.0) / 1e9)
        reasons.append(
            f"{rest} did not regain the receiver's {had} ({ratio:.0%} of it) in the "
            f"{r.after_s:.1f} s after the kill: they reached {reached} Gb/s"
        )
        return Status.FAIL
    after = gb((r.survivors_after_bps or 0.0) / 1e9)
    line = (
        f"{rest} regained the receiver's {had} within {r.recovery_s:.2f} s of the kill "
        f"({every}; {after} Gb/s after)"
    )
    # Slow only when surely so: it happened within the regained interval, not at its end.
    if r.recovery_s - r.resolution_s > bound:
        reasons.append(f"{line}: past the {bound:g} s mark")
        return Status.WARN
    notes.append(line)
    return Status.PASS


def _counters_line(ev: WindowEvidence | None) -> str:
    """What moved on the step's ports in one part of the window, or that nothing did."""
    if ev is None:
        return "no sample on one side of the kill"
    parts = [f"{f.severity}: {f.summary}" for f in ev.findings]
    # One part per counter: its deltas summed over the ends, and the hosts it moved on.
    moved: dict[str, tuple[int, list[str]]] = {}
    for mv in ev.moved:
        name = mv.metric + (f"[{mv.priority}]" if mv.priority is not None else "")
        total, hosts = moved.get(name, (0, []))
        moved[name] = (total + mv.delta, [*hosts, mv.port.host])
    parts += [f"{name} +{n} ({', '.join(dict.fromkeys(hs))})" for name, (n, hs) in moved.items()]
    return "; ".join(parts) or "nothing moved (pauses, drops, ECN, retransmissions)"
