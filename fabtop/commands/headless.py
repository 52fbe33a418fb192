"""Headless commands: ``snapshot`` and ``doctor``, over the composition root's session and state."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time

from collectors.text import clean
from fabtop.config import Config
from fabtop.core.findings import Finding
from fabtop.core.state import DOWN, NOT_REPORTING, FabricState
from fabtop.core.thresholds import effective
from fabtop.run import snapshot
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.outputs import STDOUT, OutputError, write_text


def _settled(state: FabricState, frames: int) -> bool:
    return all(
        h.frames >= frames or (h.status in NOT_REPORTING and h.error)
        for h in state.hosts.values()
    )


async def watch(config: Config, state: FabricState, seconds: float, frames: int,
                timeout: float) -> None:
    """Collect until every host gave ``frames`` frames (or failed) and ``seconds`` passed."""
    session = open_session(config, state=state)
    task = asyncio.create_task(session.run())
    start = time.monotonic()
    try:
        while True:
            waited = time.monotonic() - start
            if waited >= timeout or task.done():
                break
            if waited >= seconds and _settled(state, frames):
                break
            await asyncio.sleep(0.05)
    finally:
        await session.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    for h in state.hosts.values():
        if h.frames < frames and not h.error:
            h.error = f"{h.name} ({h.target}): no answer within {timeout:.0f} s"
            h.status = DOWN


async def snapshot_command(config: Config, ns: argparse.Namespace) -> int:
    """Two frames ``interval`` apart from every host, written atomically; 1 if a host failed."""
    state = fabric_state(config)
    # A token rate needs two /metrics readings, and readings ride on frames after the
    # first: hosts with an inference server get one more frame.
    frames = 3 if any(h.inference for h in config.hosts) else 2
    await watch(config, state, seconds=0.0, frames=frames, timeout=ns.timeout)
    doc = snapshot.build(state, config.interval)
    text = snapshot.render(doc, ns.format)
    try:
        write_text(ns.output or STDOUT, text, "snapshot")
    except OutputError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    if ns.output and ns.output != STDOUT:
        print(f"fabtop: snapshot of {len(doc['hosts'])} host(s) written to {ns.output}",
              file=sys.stderr)
    failed = [h for h in doc["hosts"] if not h["reachable"]]
    for h in failed:
        print(clean(f"fabtop: {h['name']}: {h['error'] or h['status']}"), file=sys.stderr)
    return 1 if failed else 0


async def doctor_command(config: Config, ns: argparse.Namespace) -> int:
    """Watch for --window seconds, print findings; exit 0 healthy, 1 warnings, 2 critical."""
    state = fabric_state(config)
    window = max(ns.window, min_window(config))
    await watch(config, state, seconds=window, frames=2,
                timeout=max(window + 30.0, window * 2))
    state.evaluate()
    findings = state.findings
    said = {f.host for f in findings if f.rule in _HOST_RULES}
    for h in state.hosts.values():
        if (h.status == DOWN or h.frames == 0) and h.name not in said:
            findings.append(Finding("host_unreachable", "critical", h.name,
                                    f"{h.name} did not answer: {h.error or h.status}",
                                    next_step=f"ssh {h.target} true", host=h.name))
    if ns.json:
        print(json.dumps({"findings": [snapshot.finding_entry(f) for f in findings]}, indent=1))
    else:
        _print_findings(findings, state)
    worst = max((f.rank for f in findings), default=0)
    return {0: 0, 1: 1, 2: 2}[worst]


_HOST_RULES = ("host_unreachable", "host_failing")  # the state's own finding on a blind host


def min_window(config: Config) -> float:
    """The shortest useful doctor window: a rule needs ``detect_s`` of rates, plus two frames."""
    detect = effective(config.thresholds)["detect_s"]
    return detect + 2 * config.interval


def _print_findings(findings: list[Finding], state: FabricState) -> None:
    # Summaries and evidence carry remote names: every line is cleaned on its way out,
    # whatever a parser upstream missed.
    def say(line: str) -> None:
        sys.stdout.write(clean(line) + "\n")

    hosts = ", ".join(state.hosts)
    if not findings:
        say(f"fabtop doctor: no findings on {hosts}: the fabric looks healthy")
        return
    for sev in ("critical", "warning", "info"):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        say(f"{sev.upper()} ({len(group)})")
        for f in group:
            # the subject already names the port the summary starts with
            say(f"  {f.subject}: {f.headline}")
            if f.evidence:
                ev = ", ".join(f"{k}={v}" for k, v in f.shown_evidence().items())
                say(f"      evidence: {ev}")
            if f.next_step:
                say(f"      next: {f.next_step}")
