"""The ``fabtop`` command line: its parser, and the commands that need no dashboard.

    fabtop [HOSTS | -c FILE | --demo]            the dashboard
    fabtop snapshot [HOSTS | -c FILE] [-o FILE]  two frames, written atomically
    fabtop doctor [HOSTS | -c FILE] [--window S] findings, exit 0/1/2
    fabtop record [HOSTS | -c FILE | --demo] -o run.fabrec [--max-size MB] [--duration S]
    fabtop replay run.fabrec [--speed X] [--findings]
    fabtop diff A B [--json] [--top N]         A, B: snapshot files or run.fabrec@SECONDS
    fabtop export --listen 127.0.0.1:9877 [HOSTS | -c FILE | --demo | --from-prometheus URL]
    fabtop serve [HOSTS | -c FILE | --demo] [--port N] [--sessions N] [--allow-write]

``fabtop HOSTS...`` with no command word is the dashboard, which argparse subparsers
cannot express next to positional hosts: the first word picks the parser here, and the
help text, the "did you mean" check and shell completion read the one table below.

The console script's entry is :mod:`tui.main`, above both packages: it parses with
:func:`parse`, starts the dashboard itself (no word, ``replay``, ``serve``'s tabs) and
hands every other word to :func:`run_headless`. Nothing here imports ``tui``.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from collectors.numbers import parse_float, parse_int
from collectors.text import clean
from fabtop import __version__
from fabtop.commands.serve import ALLOW_WRITE, READ_ONLY, SERVED, serve_options
from fabtop.config import (
    LOCAL,
    MAX_HOSTS,
    Config,
    ConfigError,
    default_config,
    hosts_from_args,
    load_config,
    refuse_ssh_commands,
    ssh_config_names,
)
from fabtop.run.demo import SCENARIOS, demo_config
from fabtop.run.link_filter import FilterError, LinkFilter
from fabtop.run.link_filter import parse as parse_filter
from fabtop.run.outputs import OutputError
from fabtop.sim.fabric import BIG_MAX_HOSTS, BIG_PREFIX

if TYPE_CHECKING:
    from fabtop.run.replay import Replay

# Each subcommand imports its own module when it runs: importing Textual costs about
# 0.7 s and the session machinery 0.4 s, which ``fabtop diff`` and ``fabtop --help``
# should not pay. Every such import is in run_headless() and the helpers below it.


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its line in ``fabtop --help`` and its own ``--help``."""

    name: str
    summary: str  # the one line in the list of commands (and the first of its own help)
    more: str = ""  # the rest of its own description
    examples: tuple[str, ...] = ()


COMMANDS: tuple[Command, ...] = (
    Command(
        "snapshot",
        "take two frames from every host and write counters, rates and findings",
        "Written atomically as JSON (fabtop.snapshot/2, see docs/SNAPSHOT.md), CSV or "
        "Prometheus text; exit 1 when a host could not be read, 2 on bad arguments.",
        (
            "fabtop snapshot node[01-04] -o before.json",
            "fabtop snapshot -c fabtop.toml --format prom",
        ),
    ),
    Command(
        "doctor",
        "watch the fabric for a window and print the findings (exit 0, 1 or 2)",
        "A progress line on stderr says how many hosts answered while it watches. Exit 0: "
        "no findings (what was not monitored, such as GPUs on a CPU-only node, is listed "
        "but is no failure); 1: warnings; 2: critical findings or a host not seen. "
        "With [expect] in the config (or --expect FILE) it is a launch gate: an unmet "
        "expectation is critical, one that could not be read a warning.",
        (
            "fabtop doctor node[01-04]",
            "fabtop doctor -c fabtop.toml --window 30 --json",
            "fabtop doctor -c fabtop.toml --write-expect fabric.toml",
            "fabtop doctor --demo-scenario pfc_storm",
        ),
    ),
    Command(
        "test",
        "prove the fabric: run a test plan between the hosts and judge it (exit 0, 1 or 2)",
        "PLAN is pairs, bidir, incast, latency, loaded-latency, sizes, loss (opt-in: one sender "
        "of an incast is killed by its pid and the others' recovery timed; downing an "
        "interface instead is out of scope: fabtop changes no configuration) or serving "
        "(opt-in, with --allow-busy only: an inference server beside loads). It loads the "
        "fabric: a "
        "summary says what will run before it starts, and it refuses while an inference "
        "server on the hosts is generating tokens (--allow-busy) or an [expect] is unmet. "
        "The node's own perftest (RDMA ports) or iperf3 and sockperf (IP paths) run over "
        "the SSH connections; every process ends with its run. Each verdict comes with what "
        "the same window's counters show; see docs/TEST.md.",
        (
            "fabtop test pairs node[01-04]",
            "fabtop test incast -c fabtop.toml -o incast.json",
            "fabtop test --demo latency",
            "fabtop test loss -c fabtop.toml -o loss.json",
        ),
    ),
    Command(
        "record",
        "record the probes' raw frames to a .fabrec file",
        "Stops at --duration, --frames, --max-size, Ctrl-C or SIGTERM, and always leaves a file "
        "`fabtop replay` can read (a torn tail is skipped).",
        (
            "fabtop record node[01-04] -o run.fabrec --duration 600",
            "fabtop record --demo-scenario incast -o incast.fabrec --duration 60",
        ),
    ),
    Command(
        "replay",
        "play a recording back in the dashboard, or print its findings",
        "The replay runs the live code path (rates, rules) over the recorded frames.",
        (
            "fabtop replay run.fabrec --speed 4",
            "fabtop replay run.fabrec --findings",
            "fabtop replay run.fabrec --info",
        ),
    ),
    Command(
        "diff",
        "counter deltas between two snapshots or recording points, or two test reports",
        "A and B are snapshot files or run.fabrec@SECONDS (the replayed state that many "
        "seconds in); B must not be earlier than A. Errors first, then pauses, then bytes. "
        "Two `fabtop test` reports: each step's verdict, figures and counters before and "
        "after, worse first (exit 1 when a verdict got worse or a step of A is not in B).",
        (
            "fabtop diff before.json after.json --top 20",
            "fabtop diff run.fabrec@40 run.fabrec@75",
            "fabtop diff test-monday.json test-today.json",
        ),
    ),
    Command(
        "export",
        "serve the fabric as Prometheus /metrics",
        "Counters, rates, link states and findings on HOST:PORT until Ctrl-C.",
        (
            "fabtop export --listen 127.0.0.1:9877 node[01-04]",
            "fabtop export --from-prometheus http://prometheus:9090",
        ),
    ),
    Command(
        "serve",
        "the dashboard in a browser, behind a token printed in its URL",
        "Each browser tab runs its own dashboard with your SSH access; the URL carries a "
        "random token, WebSockets from other origins are refused, --sessions caps the "
        "tabs and keys that write files are off. Needs textual-serve (the [serve] extra); "
        "see docs/BROWSER.md for what stays exposed.",
        ("fabtop serve node[01-04]", "fabtop serve --demo --port 8001 --sessions 2"),
    ),
)
SUBCOMMANDS: tuple[str, ...] = tuple(c.name for c in COMMANDS)
_BY_NAME = {c.name: c for c in COMMANDS}
HOST_COMMANDS = (
    None,
    "snapshot",
    "doctor",
    "test",
    "record",
    "export",
    "serve",
)  # those that take hosts
PROMETHEUS_COMMANDS = (None, "snapshot", "doctor", "export", "serve")  # take --from-prometheus
PROMETHEUS_INTERVAL_S = 5.0  # its polls: a node's samples change once per scrape, not each second
EX_SOFTWARE = 70  # sysexits.h: a fabtop bug, not the user's input
EX_USAGE = 2  # argparse's own exit status for a bad command line


def _link_filter(text: str) -> LinkFilter:
    """--filter's terms, read as the dashboard's / reads them (a bad one: one line)."""
    try:
        return parse_filter(text)
    except FilterError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("filter: ")) from None


def positive(text: str) -> float:
    """The argparse type of every numeric option: a finite number above zero.

    ``float()`` takes ``nan`` and ``inf``; a NaN window never ends (every comparison with
    it is false) and a negative timeout gives up before starting.
    """
    v = parse_float(text)
    if v is None or v <= 0:
        raise argparse.ArgumentTypeError(f"{clean(text, 40)!r} is not a finite number above 0")
    return v


def instant(text: str) -> float:
    """``--at``: an RFC 3339 time with its zone, or unix seconds; a past instant."""
    v = parse_float(text)
    if v is None:
        try:
            t = datetime.fromisoformat(text.strip())
        except ValueError:
            t = None
        if t is None or t.tzinfo is None:
            raise argparse.ArgumentTypeError(
                f"{clean(text, 40)!r} is not a time: RFC 3339 with its zone "
                "(2026-01-05T14:00:00Z) or unix seconds"
            )
        v = t.timestamp()
    if not 0 < v < time.time() + 60:
        raise argparse.ArgumentTypeError(f"{clean(text, 40)!r} is not a past instant")
    return v


def positive_int(text: str) -> int:
    """A whole number above zero (``--top``)."""
    v = parse_int(text)
    if v is None or v <= 0:
        raise argparse.ArgumentTypeError(f"{clean(text, 40)!r} is not a whole number above 0")
    return v


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the option and why, then a pointer to --help."""

    def error(self, message: str) -> NoReturn:
        self.exit(EX_USAGE, f"{self.prog}: {clean(message)} (see {self.prog} --help)\n")


def hosts_order(cmd: str | None) -> str:
    """Where a command's hosts come from, first that applies (in every --help that takes hosts).

    ``--from-prometheus`` is named only where ``cmd`` accepts it: the others refuse it.
    """
    replace = "--demo, --demo-scenario and --from-prometheus replace all three."
    if cmd not in PROMETHEUS_COMMANDS:
        replace = "--demo and --demo-scenario replace all three."
    return (
        "Which hosts, the first that applies:\n"
        "  1. HOST arguments, or -c FILE\n"
        "  2. $XDG_CONFIG_HOME/fabtop/config.toml (default ~/.config/fabtop/config.toml),\n"
        "     when that file exists\n"
        "  3. local: this machine\n" + replace
    )


def _add_hosts(p: argparse.ArgumentParser, cmd: str | None) -> None:
    hosts = p.add_argument(
        "hosts",
        nargs="*",
        metavar="HOST",
        help="hosts as [NAME=][user@]host[:port]; hostlist expressions like node[01-04]; "
        "'local' is this machine",
    )
    hosts.completer = _complete_hosts  # type: ignore[attr-defined]
    p.add_argument("-c", "--config", metavar="FILE", help="TOML config file (see README)")
    default = (
        f"1; {PROMETHEUS_INTERVAL_S:g} with --from-prometheus"
        if cmd in PROMETHEUS_COMMANDS
        else "1"
    )
    p.add_argument(
        "--interval", type=positive, metavar="S", help=f"seconds between frames ({default})"
    )
    p.add_argument(
        "--many-hosts",
        action="store_true",
        help=f"monitor more than {MAX_HOSTS} hosts (refused without it: a hostlist "
        "that large is more often a typo than a plan)",
    )
    p.add_argument("--demo", action="store_true", help="watch the built-in simulated fabric")
    scenario = p.add_argument(
        "--demo-scenario",
        metavar="NAME",
        help="for testing and demos: the simulated fabric with one fault from the start "
        f"({', '.join(SCENARIOS)}); implies --demo",
    )
    scenario.completer = lambda **_: SCENARIOS  # type: ignore[attr-defined]
    p.add_argument(
        "--demo-hosts",
        type=positive_int,
        metavar="N",
        help=f"a bigger simulated fabric: N hosts (1..{BIG_MAX_HOSTS}) of 8 RoCE rails each "
        "instead of the 7-host demo; implies --demo",
    )
    p.add_argument(
        "--demo-prefix",
        metavar="P",
        help=f"name the --demo-hosts hosts P1..PN (default {BIG_PREFIX}1..{BIG_PREFIX}N); "
        "two prefixes never share a host, so each exporter can own its own",
    )
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (default ~/.ssh)")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file (default ~/.ssh/config)")
    p.add_argument(
        "--allow-ssh-commands",
        action="store_true",
        help="let the ssh_config a config file names run local commands "
        "(ProxyCommand, LocalCommand, Match exec, ...); refused without it",
    )


def check_interval(ns: argparse.Namespace) -> None:
    """``--interval`` in 0.1..60 s, for the probes and a Prometheus source alike."""
    if ns.interval is not None and not 0.1 <= ns.interval <= 60:
        raise ConfigError("command line: --interval must be in 0.1..60 seconds")


def build_config(ns: argparse.Namespace) -> Config:
    """Hosts from -c FILE, positional hosts, the user's config file, or this machine.

    The order is :func:`hosts_order`'s; raises ConfigError.
    """
    check_interval(ns)
    max_hosts = None if getattr(ns, "many_hosts", False) else MAX_HOSTS
    hosts_n, prefix = getattr(ns, "demo_hosts", None), getattr(ns, "demo_prefix", None)
    if prefix is not None and hosts_n is None:
        raise ConfigError("command line: --demo-prefix names the hosts of --demo-hosts N")
    if getattr(ns, "demo_scenario", None) or hosts_n is not None:
        ns.demo = True  # every command that takes --demo runs the scenario's fabric
    if getattr(ns, "demo", False):
        scenario = getattr(ns, "demo_scenario", None)
        cfg = demo_config(
            ns.interval or 1.0, scenario, hosts_n, BIG_PREFIX if prefix is None else prefix
        )
    elif ns.config:
        if ns.hosts:
            raise ConfigError("command line: give hosts or -c FILE, not both")
        cfg = load_config(ns.config, ns.interval, max_hosts=max_hosts)
    elif ns.hosts:
        cfg = Config(
            hosts=hosts_from_args(ns.hosts, max_hosts=max_hosts), interval=ns.interval or 1.0
        )
    else:
        cfg = default_config(ns.interval, max_hosts=max_hosts)
    if ns.known_hosts:
        cfg.known_hosts = ns.known_hosts
    if ns.ssh_config:
        cfg.ssh_config = ns.ssh_config
        cfg.allow_ssh_commands = True  # the operator's own file, read as OpenSSH reads it
    if ns.allow_ssh_commands:
        cfg.allow_ssh_commands = True
    refuse_ssh_commands(cfg)
    return cfg


def _commands_list() -> str:
    width = max(len(n) for n in SUBCOMMANDS)
    return "\n".join(f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS)


def _epilog(cmd: str | None) -> str:
    parts: list[str] = []
    examples: tuple[str, ...]
    if cmd is None:
        examples = (
            "fabtop --demo",
            "fabtop node[01-04]",
            "fabtop admin@gpu[1-2]:2222",
            "fabtop -c fabtop.toml --interval 0.5",
            "fabtop doctor --help",
        )
    else:
        examples = _BY_NAME[cmd].examples
    if cmd in HOST_COMMANDS:
        parts.append(hosts_order(cmd))
    if examples:
        parts.append("examples:\n" + "\n".join(f"  {e}" for e in examples))
    if cmd is None:
        parts.append("A host named like a command: fabtop [OPTIONS] -- doctor, or doctor=doctor.")
    return "\n\n".join(parts)


def _parser(cmd: str | None) -> argparse.ArgumentParser:
    if cmd is None:
        prog = "fabtop"
        usage = (
            "fabtop [HOST ...] [-c FILE] [--demo] [OPTIONS]\n"
            "       fabtop COMMAND [ARGS]  (fabtop COMMAND --help)"
        )
        description = (
            "Live dashboard for the RDMA fabric of small GPU inference clusters."
            f"\n\ncommands:\n{_commands_list()}"
        )
    else:
        prog, usage = f"fabtop {cmd}", None
        c = _BY_NAME[cmd]
        description = textwrap.fill(
            f"{c.summary[:1].upper()}{c.summary[1:]}." + (f" {c.more}" if c.more else ""),
            79,
            break_on_hyphens=False,  # never "--allow-" / "busy": an option stays whole
        )
    # fabtop serve hands its arguments, less its own options, to each tab's fabtop: an
    # abbreviation of its own options would reach the session unrecognised.
    p = _Parser(
        prog=prog,
        usage=usage,
        description=description,
        epilog=_epilog(cmd),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=cmd != "serve",
    )
    p.add_argument("--version", action="version", version=f"fabtop {__version__}")
    if cmd == "test":
        from fabtop.fabtest.plans import PLANS  # (no Textual: fabtest is plain Python)

        p.add_argument("plan", metavar="PLAN", choices=PLANS, help=f"one of {', '.join(PLANS)}")
    if cmd in HOST_COMMANDS:
        _add_hosts(p, cmd)
    if cmd is None:
        p.add_argument("--record", metavar="FILE", help="also record raw frames to FILE")
        p.add_argument(
            "--filter",
            type=_link_filter,
            metavar="TERMS",
            help="show only the links these terms match, as / does: text, host:node[1-4], "
            "rail:N, kind:roce, state:down, rule:NAME, sev:warning; !TERM inverts",
        )
        # Set by fabtop serve for each browser tab's fabtop: read-only unless --allow-write.
        p.add_argument(SERVED, choices=(READ_ONLY, ALLOW_WRITE), help=argparse.SUPPRESS)
    if cmd in PROMETHEUS_COMMANDS:
        p.add_argument(
            "--from-prometheus",
            metavar="URL",
            help="read fabtop's own series (shards running fabtop export), else "
            "node_exporter/dcgm-exporter series, from this Prometheus server instead of "
            "probing hosts over SSH",
        )
    if cmd == "record":
        p.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            required=True,
            help="recording file (.fabrec); - for stdout",
        )
        p.add_argument("--max-size", type=positive, metavar="MB", help="stop at MB megabytes")
        p.add_argument("--duration", type=positive, metavar="S", help="stop after S seconds")
        p.add_argument(
            "--frames",
            type=positive_int,
            metavar="N",
            help="stop after N frames (all hosts together)",
        )
        p.add_argument("--demo-speed", type=positive, default=1.0, help=argparse.SUPPRESS)
    if cmd == "replay":
        p.add_argument("recording", metavar="FILE", help="a .fabrec recording")
        p.add_argument(
            "--speed", type=positive, default=1.0, metavar="X", help="replay speed, 0.5..16 (1)"
        )
        p.add_argument(
            "--findings",
            action="store_true",
            help="no dashboard: print each finding's raise and clear with its time",
        )
        p.add_argument(
            "--info",
            action="store_true",
            help="no dashboard: print what the recording holds and exit",
        )
    if cmd == "diff":
        p.add_argument("a", metavar="A", help="snapshot or test report, or run.fabrec@SECONDS")
        p.add_argument("b", metavar="B", help="snapshot or test report, or run.fabrec@SECONDS")
        p.add_argument("--json", action="store_true", help="JSON instead of a table")
        p.add_argument(
            "--top", type=positive_int, metavar="N", help="only the N most significant rows"
        )
    if cmd == "export":
        p.add_argument(
            "--listen",
            default="127.0.0.1:9877",
            metavar="HOST:PORT",
            help="address to serve /metrics on (127.0.0.1:9877)",
        )
        p.add_argument(
            "--write-rules",
            metavar="DIR",
            help="write the Prometheus rules and Grafana dashboard for the config's "
            "[thresholds] into DIR and exit (docs/EXPORT.md)",
        )
        p.add_argument(
            "--job",
            default="fabtop",
            metavar="NAME",
            help="with --write-rules: the scrape job of the export shards (fabtop)",
        )
        p.add_argument(
            "--shard",
            metavar="NAME",
            help="this exporter's shard name: a shard label on its hosts' fabtop_host_up "
            "and fabtop_shard_info (docs/PROMETHEUS.md)",
        )
    if cmd == "serve":
        serve_options(p)
    if cmd == "snapshot":
        p.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
        p.add_argument("--format", choices=("json", "csv", "prom"), default="json")
        p.add_argument(
            "--at",
            type=instant,
            metavar="TIME",
            help="with --from-prometheus: the fabric at this past instant (RFC 3339, "
            "e.g. 2026-01-05T14:00:00Z, or unix seconds)",
        )
        p.add_argument(
            "--timeout",
            type=positive,
            default=30.0,
            metavar="S",
            help="give up on a host after S seconds (30)",
        )
    if cmd == "test":
        test_options(p)
    if cmd == "doctor":
        p.add_argument(
            "--window",
            type=positive,
            default=10.0,
            metavar="S",
            help="watch for S seconds before judging (10; never less than the rules' "
            "detect_s plus two intervals)",
        )
        p.add_argument("--json", action="store_true", help="print findings as JSON")
        p.add_argument(
            "--expect",
            metavar="FILE",
            help="what the hosts must have: the [expect] of FILE (a fabtop config, or "
            "[expect] alone) instead of the config's; an unmet expectation exits 2",
        )
        p.add_argument(
            "--write-expect",
            metavar="FILE",
            help="write the fabric as it is as a config with [expect] (refused if FILE exists)",
        )
        p.add_argument(
            "--force", action="store_true", help="let --write-expect overwrite an existing FILE"
        )
    return p


def test_options(p: argparse.ArgumentParser) -> None:
    """``fabtop test``'s own options."""
    p.add_argument(
        "--seconds",
        type=positive_int,
        default=5,
        metavar="S",
        help="each bandwidth run, and an IP latency run (5; at most 600)",
    )
    p.add_argument(
        "--iterations",
        type=positive_int,
        metavar="N",
        help="round trips of an RDMA latency run (10000: ten samples beyond p99.9)",
    )
    p.add_argument(
        "--senders", type=positive_int, metavar="K", help="senders per incast (8, at most 16)"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the JSON report to FILE")
    p.add_argument(
        "--allow-busy",
        action="store_true",
        help="test although an inference server on the hosts is generating tokens",
    )
    p.add_argument(
        "--timeout",
        type=positive,
        default=30.0,
        metavar="S",
        help="give up on a host that sends no frame within S seconds (30)",
    )


def man_parser() -> argparse.ArgumentParser:
    """The whole command line as one parser with subcommands, for ``make man`` only.

    :func:`parse` never parses with it (subparsers cannot sit beside positional hosts); the
    man page generator (argparse-manpage) reads it, so the page comes from the same
    parsers and the same table as ``--help``.
    """
    top = _parser(None)
    top.usage = "fabtop [HOST ...] [-c FILE] [--demo] [OPTIONS] | fabtop COMMAND [ARGS]"
    top.description = "Live dashboard for the RDMA fabric of small GPU inference clusters."
    sub = top.add_subparsers(title="commands", metavar="COMMAND")
    for c in COMMANDS:
        own = _parser(c.name)
        sub.add_parser(
            c.name,
            parents=[own],
            add_help=False,
            help=c.summary,
            prog=own.prog,
            description=own.description,
            epilog=own.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    return top


def _option_value(args: Sequence[str], option: str) -> str | None:
    """The value of ``--option VALUE`` or ``--option=VALUE`` before any ``--``."""
    for i, a in enumerate(args):
        if a == "--":
            break
        if a == option and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(option + "="):
            return a[len(option) + 1 :]
    return None


def looks_like_command(word: str, ssh_config: str | None = None) -> str | None:
    """The subcommand ``word`` is probably a typo of, or None when it may be a host.

    Only a bare word can be a typo: a digit, ``@``, ``.``, ``:``, ``[`` or ``=`` makes it a
    host (``doctor1``, ``root@gpu1``), and so does a ``Host`` line of the SSH config that
    names it.
    """
    if not word or word.startswith("-") or word == LOCAL or word in SUBCOMMANDS:
        return None
    if any(c.isdigit() or c in "@.:[=" for c in word):
        return None
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.75)
    if not close or ssh_config_names(word, ssh_config):
        return None
    return close[0]


def parse(argv: Sequence[str]) -> tuple[str | None, argparse.Namespace, list[str]]:
    """The command word (None: the dashboard), its parsed options, and the words after it.

    Exits, as argparse does, on what it answers itself: a shell's completion request,
    ``--help``, ``--version`` and a bad command line (one line on stderr, exit 2).
    """
    args = list(argv)
    if "_ARGCOMPLETE" in os.environ:
        complete()  # the shell asks for completions: answers and exits
    cmd = args[0] if args and args[0] in SUBCOMMANDS else None
    if cmd is not None:
        args = args[1:]
    elif args and (typo := looks_like_command(args[0], _option_value(args, "--ssh-config"))):
        word = clean(args[0], 40)
        print(
            f"fabtop: unknown command {word!r}; did you mean {typo!r}? (a host named so: "
            f"fabtop -- {word}, or {word}={word})",
            file=sys.stderr,
        )
        raise SystemExit(EX_USAGE)
    return cmd, _parser(cmd).parse_args(args), args


def guarded(command: Callable[[], int]) -> int:
    """Run a command: bad input in one line and exit 2, Ctrl-C 130, a bug in one line 70."""
    try:
        return command()
    except (ConfigError, OutputError) as e:
        print(f"fabtop: {clean(str(e))}", file=sys.stderr)
        return EX_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        # The last line of defence: bad input has its own one-line errors above and in
        # each command; what reaches here is a bug, still said in one line.
        if os.environ.get("FABTOP_DEBUG"):
            raise
        print(
            f"fabtop: internal error: {type(e).__name__}: {clean(str(e), 300)} "
            "(FABTOP_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return EX_SOFTWARE


def run_headless(cmd: str, ns: argparse.Namespace) -> int:
    """Snapshot, doctor, record, diff and export: the commands that show no dashboard.

    (``replay`` is :func:`replay`, which the entry hands the dashboard's player.)
    """
    if cmd == "snapshot":
        from fabtop.commands.headless import snapshot_command

        cfg, src = source(ns)
        return asyncio.run(snapshot_command(cfg, ns, source=src))
    if cmd == "doctor":
        from fabtop.commands.headless import doctor_command

        cfg, src = source(ns)
        return asyncio.run(doctor_command(cfg, ns, source=src))
    if cmd == "test":
        from fabtop.commands.fabtest import test_command

        return asyncio.run(test_command(build_config(ns), ns))
    if cmd == "record":
        return _record(ns)
    if cmd == "diff":
        return _diff(ns)
    if cmd == "export" and ns.write_rules:
        from fabtop.core.thresholds import effective
        from fabtop.run.mixin import write_mixin

        for path in write_mixin(ns.write_rules, effective(build_config(ns).thresholds), ns.job):
            print(f"fabtop: wrote {path}", file=sys.stderr)
        return 0
    if cmd == "export":
        from fabtop.commands.export import export_command

        cfg, src = source(ns)
        return asyncio.run(export_command(cfg, ns.listen, source=src, shard=ns.shard))
    raise ValueError(f"fabtop {cmd}: not a headless command")


def _complete_hosts(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """The first word of ``fabtop``: a command, or a host named in the SSH config."""
    from fabtop.config import ssh_config_hosts

    hosts = ssh_config_hosts(getattr(parsed_args, "ssh_config", None))
    first = not getattr(parsed_args, "hosts", None) and not getattr(parsed_args, "config", None)
    return [w for w in (*(SUBCOMMANDS if first else ()), *hosts) if w.startswith(prefix)]


def complete() -> None:
    """Answer a shell's completion request (argcomplete's protocol) and exit.

    The first word picks the parser, as in :func:`parse`: once a command word is typed,
    completion continues with that command's own parser, so ``fabtop doctor --w`` offers
    ``--window``. argcomplete is imported only here, so ``fabtop --help`` does not pay it.
    """
    import argcomplete
    from argcomplete.lexers import split_line

    words = split_line(
        os.environ.get("COMP_LINE", ""), int(os.environ.get("COMP_POINT", "0") or 0)
    )[3]
    start = int(os.environ.get("_ARGCOMPLETE", "1") or 1)  # where the program's name is
    typed = words[start - 1 :]
    cmd = typed[1] if len(typed) > 1 and typed[1] in SUBCOMMANDS else None
    if cmd is not None:
        # argcomplete skips the words before _ARGCOMPLETE: skip the command word too.
        os.environ["_ARGCOMPLETE"] = str(start + 1)
    argcomplete.autocomplete(_parser(cmd))
    sys.exit(0)  # not reached: autocomplete exits (os._exit) once it has answered


def source(ns: argparse.Namespace) -> tuple[Config, Any]:
    """The config, and a Prometheus source when --from-prometheus replaces the probes."""
    url = getattr(ns, "from_prometheus", None)
    if not url:
        if getattr(ns, "at", None) is not None:
            raise ConfigError("command line: --at reads a past instant from --from-prometheus")
        return build_config(ns), None
    demo = ns.demo or getattr(ns, "demo_scenario", None) or getattr(ns, "demo_hosts", None)
    if ns.hosts or ns.config or demo:
        raise ConfigError("command line: --from-prometheus takes no hosts, -c or --demo")
    check_interval(ns)  # build_config's check: a 1 ms interval would poll 1000 times a second
    from fabtop.run.promsource import PrometheusSource

    src = PrometheusSource(url, interval=ns.interval or PROMETHEUS_INTERVAL_S)
    return src.config, src


def _record(ns: argparse.Namespace) -> int:
    from fabtop.commands.record import record_command

    return asyncio.run(
        record_command(
            build_config(ns),
            ns.output,
            demo_speed=ns.demo_speed,
            max_mb=ns.max_size,
            duration=ns.duration,
            frames=ns.frames,
        )
    )


def replay(ns: argparse.Namespace, play: Callable[[Replay, float], int]) -> int:
    """``fabtop replay``: what the recording holds, its findings, or ``play`` (the dashboard).

    ``play`` is the entry's: it gets the opened recording and the speed.
    """
    from fabtop.run.record import RecordError, summary

    try:
        if ns.info:
            info = summary(Path(ns.recording))
            if not info["header"]:
                raise RecordError(f"{ns.recording}: recording has no readable header")
            print(
                f"{info['path']}: {info['bytes']} bytes, {info['duration_s']:.1f} s, "
                f"hosts {', '.join(f'{h} ({n} frames)' for h, n in info['frames'].items())}"
            )
            if info["clean_end"]:
                print("ends cleanly")
                return 0
            # What could be read was; a damaged file still fails, as `gzip -t` does.
            print(f"fabtop: {info['torn']}", file=sys.stderr)
            return 1
        if ns.findings:
            from fabtop.run.replay import finding_transitions

            # One line when a finding is raised and one when it clears, not one per tick:
            # the recording's story, as an operator would retell it.
            torn: list[str] = []
            for t, what, f in finding_transitions(ns.recording, torn):
                print(
                    f"{t:9.1f}  {what:<8} {f.severity:<8} {clean(f.subject, 120)}: "
                    f"{clean(f.headline, 300)}"
                )
            for line in torn:  # the story up to the damage was told; the file still fails
                print(f"fabtop: {line}", file=sys.stderr)
            return 1 if torn else 0
        from fabtop.run.replay import Replay

        rp = Replay(ns.recording)
    except RecordError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    if rp.torn:
        print(f"fabtop: {rp.torn}", file=sys.stderr)
    status = play(rp, ns.speed)
    return status or (1 if rp.torn else 0)  # replayed as far as it goes; still damaged


def _diff(ns: argparse.Namespace) -> int:
    from fabtop.commands.diff import DiffError, compare

    try:
        text, status = compare(ns.a, ns.b, as_json=ns.json, top=ns.top)
    except DiffError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return status
