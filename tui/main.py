# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker for global completion: keep in the first 1 KB)
"""The ``fabtop`` command's entry (the console script, ``python -m tui``), above both
packages: imports point ``tui -> fabtop -> collectors`` and only this module joins the
command line to the dashboard.

:mod:`fabtop.commands.cli` parses; the words that show a dashboard start it here (no
word, ``replay FILE``, and ``serve``, whose browser tabs each run this module), and every
other word goes to :func:`fabtop.commands.cli.run_headless`. Textual is imported only
when a dashboard starts: ``fabtop --help``, ``fabtop diff`` and ``fabtop doctor`` do not
pay its 0.7 s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabtop.commands import cli
from fabtop.commands.serve import READ_ONLY

if TYPE_CHECKING:
    from fabtop.run.replay import Replay

ENTRY = "tui"  # what each tab of fabtop serve runs: python -m tui, this module's main()


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run its command; the exit status."""
    cmd, ns, args = cli.parse(sys.argv[1:] if argv is None else argv)
    return cli.guarded(lambda: _run(cmd, ns, args))


def _run(cmd: str | None, ns: argparse.Namespace, args: list[str]) -> int:
    if cmd is None:
        cfg, source = cli.source(ns)
        from tui.app import run_dashboard

        return run_dashboard(
            cfg,
            record=ns.record,
            source=source,
            allow_write=ns.served != READ_ONLY,
            link_filter=ns.filter,
        )
    if cmd == "replay":
        return cli.replay(ns, play=_play)
    if cmd == "serve":
        from fabtop.commands.serve import serve_command

        cli.source(ns)  # a bad host or config file is said once here, not in every tab
        return serve_command(ns, args, ENTRY)
    return cli.run_headless(cmd, ns)


def _play(rp: Replay, speed: float) -> int:
    from tui.app import run_replay

    return run_replay(rp, speed=speed)
