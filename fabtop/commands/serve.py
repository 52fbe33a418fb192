"""``fabtop serve``: the dashboard in a browser (docs/BROWSER.md).

This module is the command line's side only (standard library): its options, the
arguments each browser tab's fabtop runs with, and the one-line error when the
``[serve]`` extra is missing. The web server is :mod:`fabtop.run.browser`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

DEFAULT_PORT = 8000
DEFAULT_SESSIONS = 4  # each tab is a whole fabtop with its own SSH connections to every node
# The dashboard's hidden option that fabtop serve starts each session with.
SERVED = "--served"
READ_ONLY, ALLOW_WRITE = "read-only", "allow-write"
MISSING_EXTRA = (
    "fabtop serve needs textual-serve: pip install 'fabtop[serve]' "
    "(in the checkout: .venv/bin/pip install -e '.[serve]')"
)


def serve_options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """Add the options only ``fabtop serve`` takes; returns them (:func:`session_args`)."""
    from fabtop.commands.cli import positive_int  # cli imports this module: not at the top

    return [
        p.add_argument(
            "--host",
            default="127.0.0.1",
            metavar="ADDR",
            help="address to listen on (127.0.0.1); another than loopback needs --allow-remote",
        ),
        p.add_argument(
            "--port",
            type=positive_int,
            default=DEFAULT_PORT,
            metavar="N",
            help=f"port to listen on ({DEFAULT_PORT})",
        ),
        p.add_argument(
            "--sessions",
            type=positive_int,
            default=DEFAULT_SESSIONS,
            metavar="N",
            help=f"browser tabs open at once, at most ({DEFAULT_SESSIONS}); each "
            "runs its own fabtop with its own SSH connections",
        ),
        p.add_argument(
            "--allow-write",
            action="store_true",
            help="let the browser's keys write files on this machine (s: a "
            "snapshot in the current directory); off by default",
        ),
        p.add_argument(
            "--allow-remote",
            action="store_true",
            help="allow --host to be an address other than loopback (no TLS: "
            "prefer an SSH tunnel; see docs/BROWSER.md)",
        ),
        p.add_argument(
            "--public-url",
            metavar="URL",
            help="the address browsers open when it is not http://ADDR:PORT (an "
            "SSH tunnel to another local port, a TLS proxy): WebSockets from "
            "any other origin are refused",
        ),
    ]


def session_args(args: Sequence[str]) -> list[str]:
    """The arguments of ``fabtop serve`` less its own options: what each tab's fabtop takes.

    The dashboard parses the rest (hosts, ``-c``, ``--demo``, ``--interval``...) as it
    would on a terminal, so nothing is copied option by option. ``fabtop serve``'s
    parser takes no abbreviations, so its own options appear here only as spelled above.
    """
    own = argparse.ArgumentParser(add_help=False)
    takes_value = {name: a.nargs != 0 for a in serve_options(own) for name in a.option_strings}
    out: list[str] = []
    rest = iter(args)
    for a in rest:
        if a == "--":  # hosts only from here on
            out += [a, *rest]
            break
        name, eq, _ = a.partition("=")
        if name in takes_value:
            if takes_value[name] and not eq:
                next(rest, None)
            continue
        out.append(a)
    return out


def session_command(ns: argparse.Namespace, args: Sequence[str], entry: str) -> list[str]:
    """The argv of each tab's fabtop, run without a shell: the same Python, the dashboard.

    ``entry``: the module ``python -m`` runs, the console script's own (it sits above
    fabtop, which does not name it).
    """
    mode = ALLOW_WRITE if ns.allow_write else READ_ONLY
    # -P: python -m would put the current directory first on sys.path, and a tui/ (or
    # fabtop/, collectors/) there, planted in /tmp say, would run as you. The hidden option
    # comes first, so a host named like a command (fabtop serve export) stays a host.
    return [sys.executable, "-P", "-m", entry, SERVED, mode, *session_args(args)]


def serve_command(ns: argparse.Namespace, args: Sequence[str], entry: str) -> int:
    """Serve until SIGINT/SIGTERM; 2 when the extra is missing or the address is refused.

    Each tab runs ``python -m ENTRY`` (:func:`session_command`).
    """
    try:
        from fabtop.run.browser import BindError, ServeOptions, bind_plan, serve
    except ImportError as e:
        print(f"fabtop: {MISSING_EXTRA} ({e})", file=sys.stderr)
        return 2
    try:
        plan = bind_plan(ns.host, ns.port, allow_remote=ns.allow_remote, public_url=ns.public_url)
    except BindError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    opts = ServeOptions(
        argv=session_command(ns, args, entry),
        plan=plan,
        sessions=ns.sessions,
        allow_write=ns.allow_write,
    )
    return asyncio.run(serve(opts))
