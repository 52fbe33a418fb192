"""``fabtop test PLAN``: the fabric watched while a plan runs over it, a summary before,
progress on stderr, the verdicts on stdout, and the JSON report with ``-o``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.text import clean
from fabtop.config import Config
from fabtop.core import expect
from fabtop.core.state import NOT_REPORTING, FabricState
from fabtop.fabtest import sizes
from fabtop.fabtest.loss import loss_seconds, summary_line
from fabtop.fabtest.plans import SERVING, Plan, PlanError, make_plan
from fabtop.fabtest.rails import Rails, rails
from fabtop.fabtest.report import document, lines
from fabtop.fabtest.runner import Options, Progress, Report, Runner, StepResult, refusals
from fabtop.fabtest.serving import (
    SERVING_REFUSAL,
    servers_found,
    serving_plan,
    serving_summary,
)
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.outputs import STDOUT, OutputError, resolve, write_text
from fabtop.run.session import Session

# Frames every host must have sent before the plan starts: the second gives rates, so a
# busy inference server and a port already in trouble are seen before anything runs.
FRAMES_BEFORE = 2
MAX_SECONDS = 600
SERVER_WAIT_INTERVALS = 5  # serving: how long an inference server is waited for


def _say(text: str) -> None:
    print(clean(text, 400), file=sys.stderr, flush=True)


async def _ready(state: FabricState, session_task: asyncio.Task[None], timeout: float) -> None:
    """Until every host sent FRAMES_BEFORE frames or failed (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not session_task.done():
        if all(
            h.frames >= FRAMES_BEFORE or (h.status in NOT_REPORTING and h.error)
            for h in state.hosts.values()
        ):
            return
        await asyncio.sleep(0.05)


def rail_config(config: Config) -> dict[tuple[str, str], int]:
    """The config's ``rails`` of every host, as the rails module takes them."""
    return {(h.name, iface): rail for h in config.hosts for iface, rail in h.rails.items()}


def plan_summary(
    report_plan: str, fabric: Rails, steps: int, rounds: int, seconds: int, also: str = ""
) -> str:
    """What will run, said before it starts (hosts, ports, duration, load; ``also``: what
    the plan does besides, before the ports)."""
    ports = "; ".join(
        f"rail {rail}: " + ", ".join(f"{p.host}/{p.name}" for p in ps)
        for rail, ps in fabric.ports.items()
    )
    about = rounds * (seconds + 4)
    return (
        f"fabtop test {report_plan}: {steps} steps in {rounds} rounds, each loading its ports "
        f"for about {seconds} s (about {about} s in all); {also + '; ' if also else ''}{ports}"
    )


def port_counters(state: FabricState, fabric: Rails) -> dict[str, Any]:
    """The tested ports' normalized counters now (the report's before or after)."""
    out: dict[str, Any] = {}
    for ps in fabric.ports.values():
        for p in ps:
            h = state.hosts.get(p.host)
            link = h.sample.links.get(p.link) if h is not None and h.sample is not None else None
            if link is None:
                continue
            flat: dict[str, int] = {}
            for name, v in link.metrics.items():
                if isinstance(v, dict):
                    flat.update({f"{name}[{prio}]": x for prio, x in v.items()})
                else:
                    flat[name] = v
            out[f"{p.host}/{p.name}"] = flat
    return out


async def test_command(config: Config, ns: argparse.Namespace) -> int:
    """Run the plan; exit 0 all pass, 1 outliers or warnings, 2 failures or refused."""
    if ns.seconds > MAX_SECONDS:
        _say(f"fabtop test: --seconds must be at most {MAX_SECONDS}")
        return 2
    if ns.output and ns.output != STDOUT:
        # A report that cannot be written is said before the fabric is loaded, not after.
        where, _ = resolve(ns.output, "test report")
        if not where.parent.is_dir():
            raise OutputError(f"{ns.output}: cannot write test report: no such directory")
    state = fabric_state(config)
    session = open_session(config, state=state)
    task = asyncio.create_task(session.run())
    try:
        return await _run(config, ns, state, session, task)
    finally:
        await session.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def _run(
    config: Config,
    ns: argparse.Namespace,
    state: FabricState,
    session: Session,
    task: asyncio.Task[None],
) -> int:
    _say(f"fabtop test: reading {len(config.hosts)} hosts before the plan...")
    await _ready(state, task, ns.timeout)
    if ns.plan == SERVING and ns.allow_busy:
        # A server's /metrics is polled apart from the frames: give it a few readings.
        deadline = time.monotonic() + SERVER_WAIT_INTERVALS * config.interval
        hosts = [h.name for h in config.hosts]
        while not servers_found(state, hosts) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    bench = Bench(config, state, session)
    options = Options(seconds=ns.seconds, iterations=ns.iterations, allow_busy=ns.allow_busy)
    ready = bench.prepare(ns.plan, options, senders=ns.senders, waited_s=ns.timeout)
    for line in ready.lines:
        _say(f"fabtop test: {line}")
    if ready.plan is None or ready.fabric is None:
        return 2
    _say(ready.summary)

    def progress(what: str, i: int, n: int, res: StepResult | None) -> None:
        if what == "round":
            _say(f"fabtop test: round {i} of {n}")
        elif what == "retest":
            _say(f"fabtop test: {i} outlier(s): measured once more")

    runner = bench.runner(ready, progress)
    before = port_counters(state, ready.fabric)
    report = await runner.run(ready.plan)
    after = port_counters(state, ready.fabric)
    print("\n".join(lines(report)))
    if ns.output:
        try:
            write_text(ns.output, report_json(report, before, after), "test report")
        except OutputError as e:
            _say(f"fabtop: {e}")
            return 2
        _say(f"fabtop test: report written to {ns.output}")
    return report.status


@dataclass(slots=True)
class Ready:
    """A plan checked before it may start: what to say first (``lines``), and the plan
    with its rails, or None when it must not start (the lines say why)."""

    options: Options
    lines: list[str] = field(default_factory=list)
    plan: Plan | None = None
    fabric: Rails | None = None
    summary: str = ""
    busy: bool = False  # refused only because an inference server is generating tokens


@dataclass(slots=True)
class Bench:
    """What a plan runs over: the config, the state its session feeds, and the session's
    transports. The headless command and the dashboard's test screen both start here, so
    they refuse, summarize and run a plan the same way."""

    config: Config
    state: FabricState
    session: Session

    def prepare(
        self, plan_name: str, options: Options, senders: int | None = None, waited_s: float = 0
    ) -> Ready:
        """Every host read, no unmet expectation, no busy server (unless allowed), a
        rail to test: the plan and its summary, or the refusals."""
        config, state = self.config, self.state
        ready = Ready(options)
        waited = f"no frame within {int(waited_s)} s" if waited_s else "not read yet"
        down = [
            f"{h.name}: {h.error or waited}"
            for h in state.hosts.values()
            if h.frames < FRAMES_BEFORE
        ]
        if down:
            ready.lines = [
                *down,
                "refused: every host must be read before a test loads the fabric",
            ]
            return ready
        unmet = [
            u
            for u in expect.check_fabric(state, {h.name: h.expect for h in config.hosts})
            if u.status == expect.UNMET
        ]
        refused = refusals(state, [h.name for h in config.hosts], options, unmet)
        if plan_name == SERVING and not options.allow_busy and not unmet:
            # Loading a live server is what the plan is for: never without being told.
            refused = [SERVING_REFUSAL]
        if refused:
            ready.lines = [f"refused: {line}" for line in refused]
            ready.busy = not unmet
            return ready
        samples = {n: h.sample for n, h in state.hosts.items() if h.sample is not None}
        fabric = rails(samples, rail_config(config))
        try:
            if plan_name == SERVING:
                plan = serving_plan(fabric, state, [h.name for h in config.hosts], senders)
            else:
                plan = make_plan(plan_name, fabric, k=senders)
        except PlanError as e:
            ready.lines = [*fabric.problems, str(e)]
            return ready
        ready.lines = list(plan.problems)
        if not plan.steps:
            ready.lines.append("nothing to test")
            return ready
        ready.plan, ready.fabric = plan, fabric
        seconds, also = options.seconds, ""
        if plan.name == "loss":
            seconds, also = loss_seconds(seconds), summary_line(plan.steps, seconds)
        ready.summary = plan_summary(
            plan.name, fabric, len(plan.steps), len(plan.rounds), seconds, also
        )
        if plan.name == "sizes":  # one step of many runs: its own sizes x seconds
            ready.summary = sizes.summary(fabric, plan.steps, options.seconds)
        if plan.name == SERVING:
            ready.summary = serving_summary(plan, fabric, options.seconds, state.interval)
        return ready

    def runner(self, ready: Ready, progress: Progress | None = None) -> Runner:
        """The runner of a ready plan over the session's transports."""
        config = self.config
        assert ready.fabric is not None
        declared = {
            h.name: h.expect.ip_speed_mbps / 1000
            for h in config.hosts
            if h.expect is not None and h.expect.ip_speed_mbps
        }
        return Runner(
            self.state,
            {h.name: self.session.transport(h) for h in config.hosts},
            ready.fabric,
            ready.options,
            declared_gbps=declared,
            addresses={h.name: h.ssh.host for h in config.hosts if h.ssh is not None},
            paths={h.name: h.path for h in config.hosts},
            thresholds=config.thresholds,
            progress=progress,
            nccl=config.nccl,
        )


def report_json(report: Report, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The JSON report (``-o FILE``), with the tested ports' counters before and after."""
    counters: Mapping[str, Any] = {
        port: {"before": before.get(port, {}), "after": after.get(port, {})}
        for port in sorted({*before, *after})
    }
    return json.dumps(document(report, counters), indent=1, allow_nan=False) + "\n"
