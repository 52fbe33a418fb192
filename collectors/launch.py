"""One test tool run on a node over its held connection, and ended there, whatever happens.

``fabtop test`` runs the node's own perftest, iperf3 and sockperf. Each run goes through
the launcher (collectors/launch.sh, sent on stdin like the probe): it starts the tool in
its own process group and ends that group when the tool is done, when the run's limit
passes, or when fabtop closes the channel (done reading, Ctrl-C, the connection
dropped). Nothing is installed or left on the node.

The tool's words are never a shell string: each is checked here, then quoted one by one
by the transport (``exec sh -s -- limit_s=N [kill_ms=M] [path=D1:D2] -- TOOL ARGS...``). The tool is
looked up on the node's PATH with the host's configured ``path`` in front, as the
probe's tools are (a non-login SSH session's PATH lacks /usr/local/bin and
/opt/mellanox/bin, where perftest often is).

``kill_ms`` ends the tool on purpose (``fabtop test loss``: a lost worker): the launcher
sends KILL to the tool's pid, the one it started, that many ms after the start, and says
so (``@@fabtop-launch killed <pid> <ms>``, :attr:`ToolRun.killed_pid`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from collectors.probe import ProbeArgError, check_dir
from collectors.transport.base import Transport, TransportError

# A run's limit, seconds: the launcher refuses anything outside (one hour: the longest
# plan step fabtop runs is minutes).
LIMIT_S = (1, 3600)
# What a run's output may hold: a perftest histogram of 1,000,000 latency samples is
# about 20 MB; beyond this the run is ended and said truncated, never buffered on.
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
# A word of the tool's argv: printable ASCII (devices, addresses, sizes, flags; the
# transport quotes each word, so a space or a `$` is the tool's own); the tool's name a
# plain command name looked up on the node's PATH.
_WORD_RE = re.compile(r"[ -~]{1,256}")
_TOOL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_MAX_WORDS = 64
_MAX_DIRS = 32  # directories of the host's ``path`` (checked as the probe's: check_dir)
_TRAILER_RE = re.compile(
    rb"@@fabtop-launch (exit|timeout|missing|killed) ([!-~]{1,64})(?: ([0-9]{1,12}))?"
)


class LaunchError(ValueError):
    """A tool's argv that the launcher will not take (one line naming the word)."""


@dataclass(frozen=True, slots=True)
class ToolRun:
    """How one tool run ended, and what it printed (stdout and stderr, as written)."""

    host: str
    argv: tuple[str, ...]
    output: bytes  # the tool's own output, the launcher's trailer taken off
    status: int | None  # the tool's exit status (None: it did not exit by itself)
    timed_out: bool  # the limit passed and the launcher ended it
    missing: bool  # the tool is not on the node's PATH
    truncated: bool  # the output passed MAX_OUTPUT_BYTES: the run was ended
    elapsed_s: float | None  # as the node measured it (None: not said)
    killed_pid: int | None = None  # kill_ms: the tool's pid, which the launcher killed
    killed_at_s: float | None = None  # kill_ms: when, after the launcher's start

    @property
    def ok(self) -> bool:
        """The tool ran to its end and said success."""
        return self.status == 0 and not (self.timed_out or self.missing or self.truncated)

    def text(self) -> str:
        """The output as text (undecodable bytes replaced: tools print ASCII)."""
        return self.output.decode("utf-8", errors="replace")


@functools.cache
def launch_script() -> str:
    """The launcher's text: collectors/lifetime.sh (what it shares with the probe), then
    collectors/launch.sh."""
    files = importlib.resources.files("collectors")
    return "".join(files.joinpath(n).read_text("utf-8") for n in ("lifetime.sh", "launch.sh"))


def launch_args(
    argv: Sequence[str], limit_s: int, path: Sequence[str] = (), kill_ms: int | None = None
) -> list[str]:
    """The launcher's arguments for running ``argv`` at most ``limit_s`` seconds, with
    the directories of ``path`` in front of the node's PATH; ``kill_ms``: KILL the tool
    that many ms after its start (before its limit)."""
    if isinstance(limit_s, bool) or not isinstance(limit_s, int):
        raise LaunchError(f"limit_s must be whole seconds: {limit_s!r}")
    if not LIMIT_S[0] <= limit_s <= LIMIT_S[1]:
        raise LaunchError(f"limit_s must be within {LIMIT_S[0]}..{LIMIT_S[1]}: {limit_s}")
    if kill_ms is not None and (
        isinstance(kill_ms, bool)
        or not isinstance(kill_ms, int)
        or not 1 <= kill_ms < limit_s * 1000
    ):
        raise LaunchError(f"kill_ms must be whole ms within 1..{limit_s * 1000 - 1}: {kill_ms!r}")
    if not argv or len(argv) > _MAX_WORDS:
        raise LaunchError(f"a tool's argv has 1..{_MAX_WORDS} words: {len(argv)}")
    if not _TOOL_RE.fullmatch(argv[0]):
        raise LaunchError(f"not a tool name: {argv[0][:80]!r}")
    for word in argv[1:]:
        if not isinstance(word, str) or not _WORD_RE.fullmatch(word):
            raise LaunchError(f"{argv[0]}: a word that is not printable ASCII: {str(word)[:80]!r}")
    if len(path) > _MAX_DIRS:
        raise LaunchError(f"path has at most {_MAX_DIRS} directories: {len(path)}")
    for d in path:
        try:
            check_dir(d, "path")
        except (ProbeArgError, TypeError):
            raise LaunchError(
                f"path: not an absolute directory ([A-Za-z0-9_./-]): {d!r:.80}"
            ) from None
    kill = [f"kill_ms={kill_ms}"] if kill_ms is not None else []
    where = [f"path={':'.join(path)}"] if path else []
    return [f"limit_s={limit_s}", *kill, *where, "--", *argv]


class LaunchArgs(NamedTuple):
    """What launch.sh reads of its arguments."""

    limit_s: int
    path: tuple[str, ...]
    argv: tuple[str, ...]
    kill_ms: int | None = None


def parse_launch_args(args: Sequence[str]) -> LaunchArgs:
    """``limit_s``, ``path``, the tool's argv and ``kill_ms`` from the launcher's
    arguments: what launch.sh reads (the simulator answers the launcher with it);
    LaunchError otherwise."""
    if not args or not args[0].startswith("limit_s="):
        raise LaunchError("limit_s= first")
    word = args[0].removeprefix("limit_s=")
    if not (word.isdigit() and len(word) <= 4 and LIMIT_S[0] <= int(word) <= LIMIT_S[1]):
        raise LaunchError("bad limit_s")
    rest = list(args[1:])
    kill_ms: int | None = None
    if rest and rest[0].startswith("kill_ms="):
        ms = rest.pop(0).removeprefix("kill_ms=")
        if not (ms.isdigit() and len(ms) <= 7 and not ms.startswith("0")):
            raise LaunchError("bad kill_ms")
        kill_ms = int(ms)
    path: tuple[str, ...] = ()
    if rest and rest[0].startswith("path="):
        path = tuple(rest.pop(0).removeprefix("path=").split(":"))
    if not rest or rest[0] != "--" or len(rest) < 2:
        raise LaunchError("-- before the tool")
    argv = tuple(rest[1:])
    launch_args(argv, int(word), path, kill_ms)  # the same checks as on the way out
    return LaunchArgs(int(word), path, argv, kill_ms)


async def run_tool(
    transport: Transport,
    argv: Sequence[str],
    limit_s: int,
    path: Sequence[str] = (),
    kill_ms: int | None = None,
) -> ToolRun:
    """Run ``argv`` on ``transport``'s node through the launcher; return how it ended
    (``kill_ms``: killed on purpose that many ms after its start).

    Cancelling the caller (Ctrl-C, a plan stopped) closes the channel: the node's
    launcher sees EOF and ends the tool's process group within about a second. A lost
    connection is a TransportError naming the host, as for the probe.
    """
    args = launch_args(argv, limit_s, path, kill_ms)
    started = time.monotonic()
    out = bytearray()
    truncated = False
    stream = transport.stream(launch_script(), args)
    try:
        async for chunk in stream:
            out += chunk
            if len(out) > MAX_OUTPUT_BYTES:
                truncated = True
                del out[MAX_OUTPUT_BYTES:]
                break
    finally:
        with contextlib.suppress(TransportError):
            await stream.aclose()  # ends the launcher (EOF), and with it the tool
    return _ended(transport.name, tuple(argv), bytes(out), truncated, time.monotonic() - started)


def _ended(
    host: str, argv: tuple[str, ...], out: bytes, truncated: bool, waited_s: float
) -> ToolRun:
    """A run from the launcher's output: its trailer (the last line; before an exit line,
    the limit's line, a race on the node, and the line of a kill on purpose) says how it
    ended. Marker lines the tool printed itself are output: only the launcher's last
    lines count."""
    status: int | None = None
    timed_out = missing = False
    elapsed: float | None = None
    killed_pid: int | None = None
    killed_at: float | None = None
    body = out
    for _ in range(3):
        line, body_before = _last_line(body)
        m = _TRAILER_RE.fullmatch(line)
        if m is None:
            break
        word, value, ms = m.group(1), m.group(2), m.group(3)
        if status is not None and (
            word not in (b"timeout", b"killed")
            or (word == b"timeout" and timed_out)
            or (word == b"killed" and killed_pid is not None)
        ):
            break  # before an exit line only the limit's and the kill's lines are ours
        if word == b"missing":
            missing = True
        elif word == b"timeout":
            timed_out = True
        elif word == b"killed":
            if status is None or not value.isdigit() or len(value) > 10 or ms is None:
                break  # the kill's line comes before the exit line, with its pid and time
            killed_pid, killed_at = int(value), int(ms) / 1000
        elif value.isdigit() and len(value) <= 3:
            status = int(value)
        if ms is not None and elapsed is None:
            elapsed = int(ms) / 1000
        body = body_before
        if word not in (b"exit", b"killed") and status is None:
            break
    if truncated:
        elapsed = waited_s
    return ToolRun(
        host, argv, body, status, timed_out, missing, truncated, elapsed, killed_pid, killed_at
    )


def _last_line(data: bytes) -> tuple[bytes, bytes]:
    """The last line of ``data`` (its newline off) and what comes before it, without the
    newline the launcher puts in front of its trailer."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = data.rfind(b"\n", 0, end) + 1
    before = data[: start - 1] if start > 0 else b""
    return data[start:end], before
