"""A perftest tool on a simulated host of the namespace test bed: a real capture replayed.

This kernel has no RDMA device, so ``ib_write_bw``, ``ib_write_lat`` and their siblings
on a simulated host (:mod:`tests.testbed.perftest_shims` puts them on its ``path``) run
this script. It is run by path on the node (standard library only), reads the shim's
config (``shim.json``: the host's rendezvous directory, its peers' by address, the
captures by role) and acts as perftest does, as far as fabtop's orchestration can tell:

- the server side (no peer address) waits for its client, as long as it takes, in a
  rendezvous directory of its own host: a ``PORT.listen`` file holding its pid;
- a client whose server is not listening yet is refused with perftest's own words
  (``Couldn't connect to ADDR:PORT``, tests/fixtures/perftest/
  ib_write_bw_connect_failed_pr228.txt), which fabtop's runner retries on; a connected
  client leaves ``PORT.conn`` for its server, which removes both files;
- the run takes its time (``-D S``; a latency run ``-n`` x the capture's mean), then the
  capture chosen by the argv (bandwidth or latency, ``-b``, server or client side) is
  printed as captured: its header before the run, its table after;
- ``-n N -U`` prints N samples in the layout of perftest's ``print_report_lat`` (``#,
  usec`` then ``%d, %g``: from perftest's source only, no public capture shows it),
  spread over the capture's own figures for the run's size (t_min, t_typical, the 99 and
  99.9 percentiles, t_max), in a shuffled order, then the capture's table row;
- TERM, HUP or INT (the launcher ends its process group) end it at once and take its
  rendezvous files with it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

POLL_S = 0.02  # how often a waiting server looks for its client
_WITH_VALUE = {"-d", "-i", "-p", "-x", "-s", "-q", "-D", "-n"}
_FLAGS = {"-F", "--report_gbits", "-b", "-U"}
_LAT_ROW = re.compile(r"^\s*([0-9]+)\s+([0-9]+)((?:\s+[0-9.]+){7})\s*$")
_RULE = "-" * 87
_mine: list[Path] = []  # rendezvous files this process made: removed however it ends


def _ended(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def _fail(text: str) -> NoReturn:
    sys.stdout.write(text)
    sys.stdout.flush()
    raise SystemExit(1)


def _argv(words: list[str]) -> tuple[dict[str, str], set[str], str | None]:
    opts: dict[str, str] = {"-p": "18515", "-s": "65536"}
    flags: set[str] = set()
    server = None
    it = iter(words)
    for w in it:
        if w in _WITH_VALUE:
            value = next(it, None)
            if value is None:
                _fail(f"perftest shim: {w} needs a value\n")
            opts[w] = value
        elif w in _FLAGS:
            flags.add(w)
        elif w.startswith("-"):
            _fail(f"perftest shim: {w}: not one of the flags fabtop passes\n")
        else:
            server = w
    return opts, flags, server


def _role(tool: str, flags: set[str], server: str | None) -> str:
    kind = "lat" if tool.endswith("_lat") else ("bidir" if "-b" in flags else "bw")
    return f"{kind}-{'client' if server else 'server'}"


def _split(text: str) -> tuple[str, str]:
    """The capture before its table (printed when connected) and the table (after the run)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#bytes"):
            return "".join(lines[: i + 1]), "".join(lines[i + 1 :])
    return "", text


def _row(table: str, size: int) -> tuple[str, list[float]] | None:
    """The latency row for ``size`` (else the first): its text and its seven figures."""
    rows = []
    for line in table.splitlines():
        m = _LAT_ROW.match(line)
        if m:
            rows.append((int(m.group(1)), line, [float(x) for x in m.group(3).split()]))
    for want in (size, None):
        for s, line, figures in rows:
            if want is None or s == want:
                return line, figures
    return None


def _samples(n: int, figures: list[float], seed: int) -> list[float]:
    """``n`` samples whose nearest-rank percentiles are the capture's: t_min at 0,
    t_typical at 0.5, p99 at 0.99, p99.9 at 0.999, t_max at 1 (linear between)."""
    t_min, t_max, typical, _avg, _stdev, p99, p999 = figures
    marks = [(0.0, t_min), (0.5, typical), (0.99, p99), (0.999, p999), (1.0, t_max)]
    out = []
    for i in range(n):
        q = i / (n - 1) if n > 1 else 0.5
        for (q0, v0), (q1, v1) in itertools.pairwise(marks):
            if q <= q1:
                out.append(round(v0 + (v1 - v0) * (q - q0) / (q1 - q0), 3))
                break
    random.Random(seed).shuffle(out)  # "in the order measured"
    return out


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().strip() or "0"), 0)
    except (OSError, ValueError):
        return False
    return True


def _serve(rdv: Path, port: str) -> None:
    """Listen: wait for a client's ``PORT.conn``, as long as it takes."""
    rdv.mkdir(parents=True, exist_ok=True)
    listen, conn = rdv / f"{port}.listen", rdv / f"{port}.conn"
    _mine.extend([listen, conn])
    conn.unlink(missing_ok=True)  # left by a client of a server that was killed
    listen.write_text(f"{os.getpid()}\n")
    while not conn.exists():
        time.sleep(POLL_S)
    listen.unlink(missing_ok=True)
    conn.unlink(missing_ok=True)


def _connect(peer: str | None, server: str, port: str) -> None:
    """Connect to the server listening in ``peer`` (its rendezvous dir), or be refused."""
    listen = Path(peer) / f"{port}.listen" if peer else None
    if listen is None or not _alive(listen):
        _fail(
            f"Couldn't connect to {server}:{port}\n"
            "Unable to open file descriptor for socket connection"
            " Unable to init the socket connection\n"
        )
    listen.with_suffix(".conn").write_text(f"{os.getpid()}\n")


def main(argv: list[str]) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _ended)
    conf = json.loads(Path(argv[1]).read_text())
    tool = argv[2]
    opts, flags, server = _argv(argv[3:])
    role = _role(tool, flags, server)
    capture = conf["captures"].get(f"{tool}:{role}") or conf["captures"][role]
    text = Path(capture).read_text()
    try:
        if server is None:
            _serve(Path(conf["rendezvous"]), opts["-p"])
        else:
            _connect(conf["peers"].get(server), server, opts["-p"])
        head, table = _split(text)
        if role.startswith("lat"):
            row = _row(table, int(opts["-s"]))
            if row is None:
                _fail(f"perftest shim: no latency row in {capture}\n")
            line, figures = row
            n = int(opts.get("-n", "1000"))
            time.sleep(n * figures[3] / 1e6)  # n round trips of the capture's mean
            if "-U" in flags:
                title = head.splitlines(keepends=True)[-1]
                body = "".join(
                    f"{i + 1}, {v:g}\n" for i, v in enumerate(_samples(n, figures, int(opts["-p"])))
                )
                # As print_report_lat does: the samples after the title, then the
                # title again over the summary row.
                _print(head + "#, usec\n" + body + _RULE + "\n")
                _print(title + line + "\n" + _RULE + "\n")
            else:
                _print(head + table)
        else:
            _print(head)
            time.sleep(int(opts.get("-D", "0")))
            _print(table)
    finally:
        for p in _mine:
            p.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
