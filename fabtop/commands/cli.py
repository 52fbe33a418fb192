"""The ``fabtop`` command: the dashboard by default, plus headless subcommands.

    fabtop [HOSTS | -c FILE | --demo]            the dashboard
    fabtop snapshot [HOSTS | -c FILE] [-o FILE]  two frames, written atomically
    fabtop doctor [HOSTS | -c FILE] [--window S] findings, exit 0/1/2
    fabtop record [HOSTS | -c FILE | --demo] -o run.fabrec [--max-size MB] [--duration S]
    fabtop replay run.fabrec [--speed X] [--findings]
    fabtop diff A B [--json] [--top N]         A, B: snapshot files or run.fabrec@SECONDS
    fabtop export --listen 127.0.0.1:9877 [HOSTS | -c FILE | --demo | --from-prometheus URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from collectors.numbers import parse_float, parse_int
from collectors.text import clean
from fabtop import __version__
from fabtop.config import (
    MAX_HOSTS,
    Config,
    ConfigError,
    hosts_from_args,
    load_config,
    local_config,
)
from fabtop.run.demo import demo_config
from fabtop.run.outputs import OutputError

# Each subcommand imports its own module when it runs, and only the dashboard imports
# tui: importing Textual costs about 0.7 s and the session machinery 0.4 s, which
# ``fabtop diff`` and ``fabtop --help`` should not pay. Every such import is in main()
# and the three helpers below it.

SUBCOMMANDS = ("snapshot", "doctor", "record", "replay", "diff", "export")
EX_SOFTWARE = 70  # sysexits.h: a fabtop bug, not the user's input


def positive(text: str) -> float:
    """The argparse type of every numeric option: a finite number above zero.

    ``float()`` takes ``nan`` and ``inf``; a NaN window never ends (every comparison with
    it is false) and a negative timeout gives up before starting.
    """
    v = parse_float(text)
    if v is None or v <= 0:
        raise argparse.ArgumentTypeError(f"{clean(text, 40)!r} is not a finite number above 0")
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
        self.exit(2, f"{self.prog}: {clean(message)} (see {self.prog} --help)\n")


def _add_hosts(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "hosts", nargs="*", metavar="HOST",
        help="hosts as [NAME=][user@]host[:port]; hostlist expressions like node[01-04]; "
        "'local' is this machine (the default when no host is given)",
    )
    p.add_argument("-c", "--config", metavar="FILE", help="TOML config file (see README)")
    p.add_argument("--interval", type=positive, metavar="S", help="seconds between frames (1)")
    p.add_argument("--many-hosts", action="store_true",
                   help=f"monitor more than {MAX_HOSTS} hosts (refused without it: a hostlist "
                   "that large is more often a typo than a plan)")
    p.add_argument("--demo", action="store_true", help="watch the built-in simulated fabric")
    p.add_argument("--demo-scenario", metavar="NAME",
                   help="for testing and demos: the simulated fabric with one fault from the "
                   "start (healthy, pfc_storm, incast, no_ecn, link_flap, gpu_thermal, "
                   "pfc_mismatch, trust_mismatch, mtu_mismatch, firmware_mismatch, "
                   "pcie_degraded, no_ecn_config); implies --demo")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (default ~/.ssh)")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file (default ~/.ssh/config)")


def build_config(ns: argparse.Namespace) -> Config:
    """Hosts from -c FILE, positional hosts, or this machine; raises ConfigError."""
    if ns.interval is not None and not 0.1 <= ns.interval <= 60:
        raise ConfigError("command line: --interval must be in 0.1..60 seconds")
    max_hosts = None if getattr(ns, "many_hosts", False) else MAX_HOSTS
    if getattr(ns, "demo_scenario", None):
        ns.demo = True  # every command that takes --demo runs the scenario's fabric
    if getattr(ns, "demo", False):
        cfg = demo_config(ns.interval or 1.0, getattr(ns, "demo_scenario", None))
    elif ns.config:
        if ns.hosts:
            raise ConfigError("command line: give hosts or -c FILE, not both")
        cfg = load_config(ns.config, ns.interval, max_hosts=max_hosts)
    elif ns.hosts:
        cfg = Config(hosts=hosts_from_args(ns.hosts, max_hosts=max_hosts),
                     interval=ns.interval or 1.0)
    else:
        cfg = local_config(ns.interval or 1.0)
    if ns.known_hosts:
        cfg.known_hosts = ns.known_hosts
    if ns.ssh_config:
        cfg.ssh_config = ns.ssh_config
    return cfg


def _parser(cmd: str | None) -> argparse.ArgumentParser:
    prog = "fabtop" if cmd is None else f"fabtop {cmd}"
    p = _Parser(
        prog=prog,
        description="Live dashboard for the RDMA fabric of small GPU inference clusters.",
    )
    p.add_argument("--version", action="version", version=f"fabtop {__version__}")
    if cmd in (None, "snapshot", "doctor", "record", "export"):
        _add_hosts(p)
    if cmd is None:
        p.add_argument("--record", metavar="FILE", help="also record raw frames to FILE")
    if cmd in (None, "export"):
        p.add_argument("--from-prometheus", metavar="URL",
                       help="read node_exporter/dcgm-exporter series from this Prometheus "
                       "server instead of probing hosts over SSH")
    if cmd == "record":
        p.add_argument("-o", "--output", metavar="FILE", required=True,
                       help="recording file (.fabrec); - for stdout")
        p.add_argument("--max-size", type=positive, metavar="MB", help="stop at MB megabytes")
        p.add_argument("--duration", type=positive, metavar="S", help="stop after S seconds")
        p.add_argument("--demo-speed", type=positive, default=1.0, help=argparse.SUPPRESS)
    if cmd == "replay":
        p.add_argument("recording", metavar="FILE", help="a .fabrec recording")
        p.add_argument("--speed", type=positive, default=1.0, metavar="X",
                       help="replay speed, 0.5..16 (1)")
        p.add_argument("--findings", action="store_true",
                       help="no dashboard: print every finding with its time and exit")
        p.add_argument("--info", action="store_true",
                       help="no dashboard: print what the recording holds and exit")
    if cmd == "diff":
        p.add_argument("a", metavar="A", help="snapshot file, or run.fabrec@SECONDS")
        p.add_argument("b", metavar="B", help="snapshot file, or run.fabrec@SECONDS")
        p.add_argument("--json", action="store_true", help="JSON instead of a table")
        p.add_argument("--top", type=positive_int, metavar="N",
                       help="only the N most significant rows")
    if cmd == "export":
        p.add_argument("--listen", default="127.0.0.1:9877", metavar="HOST:PORT",
                       help="address to serve /metrics on (127.0.0.1:9877)")
    if cmd == "snapshot":
        p.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
        p.add_argument("--format", choices=("json", "csv", "prom"), default="json")
        p.add_argument("--timeout", type=positive, default=30.0, metavar="S",
                       help="give up on a host after S seconds (30)")
    if cmd == "doctor":
        p.add_argument("--window", type=positive, default=10.0, metavar="S",
                       help="watch for S seconds before judging (10; never less than the rules' "
                       "detect_s plus two intervals)")
        p.add_argument("--json", action="store_true", help="print findings as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fabtop`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args[0] if args and args[0] in SUBCOMMANDS else None
    if cmd is not None:
        args = args[1:]
    ns = _parser(cmd).parse_args(args)
    try:
        if cmd == "snapshot":
            from fabtop.commands.headless import snapshot_command

            return asyncio.run(snapshot_command(build_config(ns), ns))
        if cmd == "doctor":
            from fabtop.commands.headless import doctor_command

            return asyncio.run(doctor_command(build_config(ns), ns))
        if cmd == "record":
            return _record(ns)
        if cmd == "replay":
            return _replay(ns)
        if cmd == "diff":
            return _diff(ns)
        if cmd == "export":
            from fabtop.commands.export import export_command

            cfg, source = _source(ns)
            return asyncio.run(export_command(cfg, ns.listen, source=source))
        cfg, source = _source(ns)
        from tui.app import run_dashboard

        return run_dashboard(cfg, record=ns.record, source=source)
    except (ConfigError, OutputError) as e:
        print(f"fabtop: {clean(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        # The last line of defence: bad input has its own one-line errors above and in
        # each command; what reaches here is a bug, still said in one line.
        if os.environ.get("FABTOP_DEBUG"):
            raise
        print(f"fabtop: internal error: {type(e).__name__}: {clean(str(e), 300)} "
              "(FABTOP_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EX_SOFTWARE


def _source(ns: argparse.Namespace) -> tuple[Config, object | None]:
    """The config, and a Prometheus source when --from-prometheus replaces the probes."""
    url = getattr(ns, "from_prometheus", None)
    if not url:
        return build_config(ns), None
    if ns.hosts or ns.config or ns.demo:
        raise ConfigError("command line: --from-prometheus takes no hosts, -c or --demo")
    from fabtop.run.promsource import PrometheusSource

    src = PrometheusSource(url, interval=ns.interval or 5.0)
    return src.config, src


def _record(ns: argparse.Namespace) -> int:
    from fabtop.commands.record import record_command

    return asyncio.run(record_command(
        build_config(ns), ns.output, demo_speed=ns.demo_speed,
        max_mb=ns.max_size, duration=ns.duration,
    ))


def _replay(ns: argparse.Namespace) -> int:
    from fabtop.run.record import RecordError, summary

    try:
        if ns.info:
            info = summary(Path(ns.recording))
            if not info["header"]:
                raise RecordError(f"{ns.recording}: recording has no readable header")
            print(f"{info['path']}: {info['bytes']} bytes, {info['duration_s']:.1f} s, "
                  f"hosts {', '.join(f'{h} ({n} frames)' for h, n in info['frames'].items())}")
            print("ends cleanly" if info["clean_end"] else f"{info['torn']}")
            return 0
        if ns.findings:
            from fabtop.run.replay import replay_findings

            for t, f in replay_findings(ns.recording):
                print(f"{t:9.1f}  {f.severity:<8} {f.subject}: {f.summary}")
            return 0
        from fabtop.run.replay import Replay

        rp = Replay(ns.recording)
    except RecordError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    if rp.torn:
        print(f"fabtop: {rp.torn}", file=sys.stderr)
    from tui.app import run_replay

    return run_replay(rp, speed=ns.speed)


def _diff(ns: argparse.Namespace) -> int:
    from fabtop.commands.diff import DiffError, diff_command

    try:
        sys.stdout.write(diff_command(ns.a, ns.b, as_json=ns.json, top=ns.top))
    except DiffError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
