"""Headless commands: ``snapshot`` and ``doctor``, over the composition root's session and state."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from collectors.text import clean
from fabtop.commands.expect_file import load_expect_file, refuse_existing, render
from fabtop.config import LOCAL, Config
from fabtop.core import expect
from fabtop.core.coverage import Coverage, calm_line, coverage
from fabtop.core.findings import Finding
from fabtop.core.rules import NotJudged
from fabtop.core.state import (
    DOWN,
    NOT_REPORTING,
    STATUSES,
    UP,
    FabricState,
    effective_status,
    ssh_command,
)
from fabtop.core.thresholds import effective
from fabtop.core.thunderbolt import Cable
from fabtop.run import snapshot
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.outputs import STDOUT, OutputError, write_text
from fabtop.run.session import Session


def _settled(state: FabricState, frames: int, session: Session) -> bool:
    """Every host gave its frames (or failed), and every host that reports has had its
    inference servers looked for: "no inference server on node1" must not be said of a
    node whose discovery is still running (a busy machine, a slow login)."""
    for name, h in state.hosts.items():
        if not (h.frames >= frames or (h.status in NOT_REPORTING and h.error)):
            return False
        disc = session.discovery.get(name)
        if h.status == UP and disc is not None and not disc.settled:
            return False
    return True


async def watch(
    config: Config,
    state: FabricState,
    seconds: float,
    frames: int,
    timeout: float,
    on_tick: Callable[[float], None] | None = None,
) -> None:
    """Collect until every host gave ``frames`` frames (or failed) and ``seconds`` passed.

    ``on_tick(waited)`` is called about 20 times a second (doctor's progress line).
    """
    session = open_session(config, state=state)
    task = asyncio.create_task(session.run())
    start = time.monotonic()
    try:
        while True:
            waited = time.monotonic() - start
            if waited >= timeout or task.done():
                break
            if waited >= seconds and _settled(state, frames, session):
                break
            if on_tick is not None:
                on_tick(waited)
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


async def snapshot_command(config: Config, ns: argparse.Namespace, source: Any = None) -> int:
    """Two frames ``interval`` apart from every host, written atomically; 1 if a host failed.

    ``source``: a Prometheus source (--from-prometheus) read at two instants instead
    (``ns.at``: a past one)."""
    state = fabric_state(config)
    if source is not None:
        from fabtop.run.promself import read_at

        await read_at(source, state, getattr(ns, "at", None))
    else:
        # A token rate needs two /metrics readings, and readings ride on frames after the
        # first: hosts with an inference server get one more frame.
        frames = 3 if any(h.inference for h in config.hosts) else 2
        await watch(config, state, seconds=0.0, frames=frames, timeout=ns.timeout)
    doc = snapshot.build(state, config.interval, getattr(ns, "at", None))
    text = snapshot.render(doc, ns.format)
    try:
        write_text(ns.output or STDOUT, text, "snapshot")
    except OutputError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    if ns.output and ns.output != STDOUT:
        print(
            f"fabtop: snapshot of {len(doc['hosts'])} host(s) written to {ns.output}",
            file=sys.stderr,
        )
    failed = [h for h in doc["hosts"] if not h["reachable"]]
    for h in failed:
        print(clean(f"fabtop: {h['name']}: {h['error'] or h['status']}"), file=sys.stderr)
    # A source that did not answer is no empty fabric (its finding is in the document).
    blind = [s for s in state.sources.values() if s.error is not None]
    for src in blind:
        print(clean(f"fabtop: {src.name} did not answer: {src.error}"), file=sys.stderr)
    return 1 if failed or blind else 0


class Progress:
    """doctor's line on stderr while it watches: who is up, how far into the window.

    On a terminal one line is rewritten in place (``\\r``) once a second and erased at the
    end; to a file or pipe (a job log) a line goes out at the start and every
    :data:`LOG_EVERY_S` seconds, never a wall of carriage returns. With ``--json`` it
    speaks only on a terminal: a script reading the JSON keeps a quiet stderr.
    """

    LOG_EVERY_S = 10.0

    def __init__(
        self,
        state: FabricState,
        window: float,
        interval: float,
        stream: TextIO | None = None,
        quiet_unless_tty: bool = False,
    ) -> None:
        self.state, self.window, self.interval = state, window, interval
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.tty or not quiet_unless_tty
        self._next = 0.0
        self._shown = False

    def line(self, waited: float) -> str:
        """``fabtop doctor: watching 4 hosts, 6 s of 10 s; 3 up, 1 connecting``."""
        now = time.monotonic()
        counts = Counter(effective_status(h, now, self.interval) for h in self.state.hosts.values())
        who = ", ".join(f"{counts[s]} {s}" for s in reversed(STATUSES) if counts[s])
        n = len(self.state.hosts)
        return (
            f"fabtop doctor: watching {n} host{'s' if n != 1 else ''}, "
            f"{min(waited, self.window):.0f} s of {self.window:.0f} s; {who or 'no hosts'}"
        )

    def __call__(self, waited: float) -> None:
        if not self.enabled or waited < self._next:
            return
        self._next = waited + (1.0 if self.tty else self.LOG_EVERY_S)
        text = clean(self.line(waited), 200)
        if self.tty:
            self.stream.write("\r\x1b[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._shown = True

    def done(self, waited: float) -> None:
        """Erase the line on a terminal (the findings follow on stdout); in a log, the
        last word on who answered."""
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
        elif self.enabled and not self.tty:
            self.stream.write(clean(self.line(waited), 200).replace("watching", "watched") + "\n")
        self.stream.flush()


async def doctor_command(config: Config, ns: argparse.Namespace, source: Any = None) -> int:
    """Watch for --window seconds, print findings; exit 0 healthy, 1 warnings, 2 critical.

    ``source``: a Prometheus source (--from-prometheus): the findings the shards raised
    (or the rules over node_exporter's series) at its latest two scrapes, no window."""
    if ns.expect:
        load_expect_file(ns.expect, config)
    if ns.write_expect:
        refuse_existing(ns.write_expect, ns.force)  # before the window, not after it
    state = fabric_state(config)
    window = max(ns.window, min_window(config))
    progress = Progress(state, window, config.interval, quiet_unless_tty=bool(ns.json))
    started = time.monotonic()
    try:
        if source is not None:
            from fabtop.run.promself import read_at

            await read_at(source, state)
        else:
            await watch(
                config,
                state,
                seconds=window,
                frames=2,
                timeout=max(window + 30.0, window * 2),
                on_tick=progress,
            )
    finally:
        progress.done(time.monotonic() - started)
    # Judged as a snapshot of the same fabric is: state rules on what was read, window
    # rules over what the window's rates covered (slow frames can cover less).
    judged = snapshot.judge(state)
    findings = judged.findings
    said = {f.host for f in findings if f.rule in _HOST_RULES}
    for h in state.hosts.values():
        if (h.status == DOWN or h.frames == 0) and h.name not in said:
            findings.append(
                Finding(
                    "host_unreachable",
                    "critical",
                    h.name,
                    f"{h.name} did not answer: {h.error or h.status}",
                    next_step=ssh_command(h.target, "true"),
                    host=h.name,
                )
            )
    said |= {f.host for f in findings if f.rule == "host_unreachable"}
    hosts = {h.name: h.target for h in config.hosts}  # a source's: those it answered with
    unmet = expect.check_fabric(state, {h.name: h.expect for h in config.hosts})
    # A host already said to be blind needs no second line saying it could not be checked.
    findings += [
        expect.finding(u, None if hosts[u.host] == LOCAL else hosts[u.host])
        for u in unmet
        if not (u.field == "host" and u.host in said)
    ]
    cov = coverage(state, time.monotonic(), config.interval)
    notes = host_notes(state)
    tb_cables = snapshot.cables(state)
    expected = [h.name for h in config.hosts if h.expect is not None]
    if ns.json:
        extra = {"expect": [expect_entry(u) for u in unmet]} if expected else {}
        print(
            json.dumps(
                {
                    **extra,
                    "findings": [snapshot.finding_entry(f) for f in findings],
                    "not_judged": [snapshot.not_judged_entry(n) for n in judged.not_judged],
                    "coverage": {
                        "hosts": cov.hosts,
                        "reporting": list(cov.reporting),
                        "not_reporting": list(cov.not_reporting),
                        "gaps": list(cov.gaps),
                    },
                    "notes": notes,
                    "thunderbolt_cables": [snapshot.cable_entry(c) for c in tb_cables],
                },
                indent=1,
            )
        )
    else:
        _print_findings(findings, cov, notes, judged.not_judged)
        _print_cables(tb_cables)
        if expected and not unmet:
            n = len(expected)
            sys.stdout.write(f"expect: met on {n} host{'s' if n != 1 else ''}\n")
    if ns.write_expect:
        _write_expect(config, state, ns)
    worst = max((f.rank for f in findings), default=0)
    return {0: 0, 1: 1, 2: 2}[worst]


def expect_entry(u: expect.Unmet) -> dict[str, object]:
    """One unmet expectation in doctor's JSON (``expect``)."""
    return {
        "host": u.host,
        "field": u.field,
        "status": u.status,
        "expected": u.expected,
        "found": u.found,
        "why": u.why or None,
        "port": u.port.label if u.port is not None else None,
    }


def _write_expect(config: Config, state: FabricState, ns: argparse.Namespace) -> None:
    """``--write-expect FILE``: the fabric as it is, as a config (refused if it exists)."""
    refuse_existing(ns.write_expect, ns.force)
    text, unread = render(config, state)
    write_text(ns.write_expect, text, "expectations")
    print(
        f"fabtop: expectations of {len(config.hosts)} host(s) written to {ns.write_expect}",
        file=sys.stderr,
    )
    if unread:
        print(
            clean(f"fabtop: not read, so not written as they are: {', '.join(unread)}"),
            file=sys.stderr,
        )


def _print_cables(found: list[Cable]) -> None:
    """One line per Thunderbolt cable, and why a pair is not proven (remote names: cleaned)."""
    if not found:
        return
    sys.stdout.write("thunderbolt cables:\n")
    for c in found:
        sys.stdout.write(clean(f"  {c.text}", 2000) + "\n")


# What doctor prints of each host's warnings: enough to say why a section is missing,
# never a page for a fleet (``fabtop snapshot`` keeps them all).
NOTES_PER_HOST = 6
NOTES_HOSTS = 10


def host_notes(state: FabricState) -> dict[str, list[str]]:
    """Each host's recent warnings (the probe's, the parsers'), cleaned, without its name."""
    out: dict[str, list[str]] = {}
    for h in state.hosts.values():
        lines = []
        for w in h.warnings:
            if w == h.error:
                continue  # already said by the host's finding
            line = clean(w, 300).removeprefix(f"{h.name}: ")
            if line and line not in lines:
                lines.append(line)
        if lines:
            out[h.name] = lines
    return out


# The state's own findings on a blind host.
_HOST_RULES = ("host_unreachable", "host_failing", "host_stale")


def min_window(config: Config) -> float:
    """The shortest useful doctor window: a rule needs ``detect_s`` of rates, plus two frames."""
    detect = effective(config.thresholds)["detect_s"]
    return detect + 2 * config.interval


def _print_findings(
    findings: list[Finding],
    cov: Coverage,
    notes: dict[str, list[str]],
    not_judged: Sequence[NotJudged] = (),
) -> None:
    # Summaries and evidence carry remote names: every line is cleaned on its way out,
    # whatever a parser upstream missed.
    def say(line: str) -> None:
        sys.stdout.write(clean(line, 2000) + "\n")

    if not findings:
        # Only over what was seen: it names what was not monitored, and says what is blind.
        say(f"fabtop doctor: {calm_line(cov)}")
    for sev in ("critical", "warning", "info"):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        say(f"{sev.upper()} ({len(group)})")
        for f in group:
            # the subject already names the port the summary starts with
            say(f"  {f.subject}: {f.headline}")
            if f.evidence:
                ev = ", ".join(f"{k}={v}" for k, v in f.readable_evidence())
                say(f"      evidence: {ev}")
            if f.next_step:
                say(f"      next: {f.next_step}")
    if findings and cov.gaps:
        say("not monitored: " + "; ".join(cov.gaps))
    if not_judged:
        # Rules over rates whose window the frames did not cover: their silence says nothing.
        needs = ", ".join(f"{n.rule} (needs {n.needs_s:g} s)" for n in not_judged)
        say(f"not judged (the rates covered {not_judged[0].span_s:g} s): {needs}")
    if notes:
        say("notes:")
        for name in list(notes)[:NOTES_HOSTS]:
            lines = notes[name]
            for line in lines[:NOTES_PER_HOST]:
                say(f"  {name}: {line}")
            if len(lines) > NOTES_PER_HOST:
                say(
                    f"  {name}: ... and {len(lines) - NOTES_PER_HOST} more "
                    "(fabtop snapshot lists them all)"
                )
        if len(notes) > NOTES_HOSTS:
            say(
                f"  ... notes on {len(notes) - NOTES_HOSTS} more hosts "
                "(fabtop snapshot lists them all)"
            )
