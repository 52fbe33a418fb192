"""The ``fabtop`` command: the dashboard by default, plus headless subcommands.

    fabtop [HOSTS | -c FILE | --demo]            the dashboard
    fabtop snapshot [HOSTS | -c FILE] [-o FILE]  two frames, written atomically
    fabtop doctor [HOSTS | -c FILE] [--window S] findings, exit 0/1/2
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from fabtop import __version__
from fabtop.config import Config, ConfigError, hosts_from_args, load_config, local_config

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
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (default ~/.ssh)")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file (default ~/.ssh/config)")


def build_config(ns: argparse.Namespace) -> Config:
    """Hosts from -c FILE, positional hosts, or this machine; raises ConfigError."""
    if ns.interval is not None and not 0.1 <= ns.interval <= 60:
        raise ConfigError("command line: --interval must be in 0.1..60 seconds")
    if getattr(ns, "demo", False):
        from fabtop.demo import demo_config

        cfg = demo_config(ns.interval or 1.0)
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
    if cmd == "snapshot":
        p.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
        p.add_argument("--format", choices=("json", "csv", "prom"), default="json")
        p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                       help="give up on a host after S seconds (30)")
    if cmd == "doctor":
        p.add_argument("--window", type=float, default=10.0, metavar="S",
                       help="watch for S seconds before judging (10)")
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
            from fabtop.commands import snapshot_command

            return asyncio.run(snapshot_command(build_config(ns), ns))
        if cmd == "doctor":
            from fabtop.commands import doctor_command

            return asyncio.run(doctor_command(build_config(ns), ns))
        if cmd is None:
            cfg = build_config(ns)
            from tui.app import run_dashboard

            return run_dashboard(cfg, demo=ns.demo, record=ns.record)
        print(f"fabtop: '{cmd}' is not built yet", file=sys.stderr)
        return 2
    except ConfigError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
