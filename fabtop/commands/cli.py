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
import sys
from collections.abc import Sequence
from pathlib import Path

from fabtop import __version__
from fabtop.config import Config, ConfigError, hosts_from_args, load_config, local_config
from fabtop.run.demo import demo_config

# Each subcommand imports its own module when it runs, and only the dashboard imports
# tui: importing Textual costs about 0.7 s and the session machinery 0.4 s, which
# ``fabtop diff`` and ``fabtop --help`` should not pay. Every such import is in main()
# and the three helpers below it.

SUBCOMMANDS = ("snapshot", "doctor", "record", "replay", "diff", "export")


def _add_hosts(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "hosts", nargs="*", metavar="HOST",
        help="hosts as [NAME=][user@]host[:port]; hostlist expressions like node[01-04]; "
        "'local' is this machine (the default when no host is given)",
    )
    p.add_argument("-c", "--config", metavar="FILE", help="TOML config file (see README)")
    p.add_argument("--interval", type=float, metavar="S", help="seconds between frames (1)")
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
    if getattr(ns, "demo_scenario", None):
        ns.demo = True  # every command that takes --demo runs the scenario's fabric
    if getattr(ns, "demo", False):
        cfg = demo_config(ns.interval or 1.0, getattr(ns, "demo_scenario", None))
    elif ns.config:
        if ns.hosts:
            raise ConfigError("command line: give hosts or -c FILE, not both")
        cfg = load_config(ns.config, ns.interval)
    elif ns.hosts:
        cfg = Config(hosts=hosts_from_args(ns.hosts), interval=ns.interval or 1.0)
    else:
        cfg = local_config(ns.interval or 1.0)
    if ns.known_hosts:
        cfg.known_hosts = ns.known_hosts
    if ns.ssh_config:
        cfg.ssh_config = ns.ssh_config
    return cfg


def _parser(cmd: str | None) -> argparse.ArgumentParser:
    prog = "fabtop" if cmd is None else f"fabtop {cmd}"
    p = argparse.ArgumentParser(
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
                       help="recording file (.fabrec)")
        p.add_argument("--max-size", type=float, metavar="MB", help="stop at MB megabytes")
        p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
        p.add_argument("--demo-speed", type=float, default=1.0, help=argparse.SUPPRESS)
    if cmd == "replay":
        p.add_argument("recording", metavar="FILE", help="a .fabrec recording")
        p.add_argument("--speed", type=float, default=1.0, metavar="X",
                       help="replay speed, 0.5..16 (1)")
        p.add_argument("--findings", action="store_true",
                       help="no dashboard: print every finding with its time and exit")
        p.add_argument("--info", action="store_true",
                       help="no dashboard: print what the recording holds and exit")
    if cmd == "diff":
        p.add_argument("a", metavar="A", help="snapshot file, or run.fabrec@SECONDS")
        p.add_argument("b", metavar="B", help="snapshot file, or run.fabrec@SECONDS")
        p.add_argument("--json", action="store_true", help="JSON instead of a table")
        p.add_argument("--top", type=int, metavar="N", help="only the N most significant rows")
    if cmd == "export":
        p.add_argument("--listen", default="127.0.0.1:9877", metavar="HOST:PORT",
                       help="address to serve /metrics on (127.0.0.1:9877)")
    if cmd == "snapshot":
        p.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
        p.add_argument("--format", choices=("json", "csv", "prom"), default="json")
        p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                       help="give up on a host after S seconds (30)")
    if cmd == "doctor":
        p.add_argument("--window", type=float, default=10.0, metavar="S",
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
    except ConfigError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


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

    if ns.max_size is not None and ns.max_size <= 0:
        raise ConfigError("command line: --max-size must be a positive number of MB")
    if ns.duration is not None and ns.duration <= 0:
        raise ConfigError("command line: --duration must be a positive number of seconds")
    return asyncio.run(record_command(
        build_config(ns), ns.output, demo_speed=ns.demo_speed,
        max_mb=ns.max_size, duration=ns.duration,
    ))


def _replay(ns: argparse.Namespace) -> int:
    from fabtop.run.record import RecordError, summary

    try:
        if ns.info:
            info = summary(Path(ns.recording))
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
