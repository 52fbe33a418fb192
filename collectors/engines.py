"""Command lines of the test engines ``fabtop test`` runs on a node: argv words, never a shell.

One function per engine turns a typed run description into the argv of one side (server
or client): perftest (``ib_write_bw``, ``ib_write_lat``, ``ib_send_lat``, ``ib_read_lat``
and their siblings), ``iperf3 -J`` and ``sockperf``. Every word is checked here: names
(RDMA devices, netdevs) with the probe's :data:`collectors.probe.NAME_RE`, which never
starts with ``-`` (no word is read as an option), addresses as IP literals or host names,
numbers within bounds, paths under a temporary directory. A word that fails is an
:class:`EngineArgError` naming the field, before anything runs. The words travel as one
argv (the transport quotes each one); none is ever joined into a shell string here.

Every run is bounded in time twice: by the tool's own duration flag (``-D``, ``-t``) where
it has one, and by the :class:`Command`'s limit, which the launcher on the node
(collectors/launch.py) enforces: it ends the tool's whole process group at the limit, on
Ctrl-C or when the connection drops (perftest's and sockperf's servers wait for a client
forever; a latency run by iterations has no clock). No ``timeout`` wrapper: coreutils
``timeout`` makes a process group of its own, which a group's end would miss.

The parsers of what they print are in :mod:`collectors.parsers.perftest`,
:mod:`collectors.parsers.iperf3` and :mod:`collectors.parsers.sockperf`.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from collectors.probe import NAME_RE

# The tool each engine runs and the package that provides it (Debian/Ubuntu and
# RHEL/Fedora use the same names), for the "missing tool" line.
PERFTEST_BW = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
PERFTEST_LAT = ("ib_write_lat", "ib_read_lat", "ib_send_lat")
PACKAGE_OF: dict[str, str] = {
    **{tool: "perftest" for tool in (*PERFTEST_BW, *PERFTEST_LAT)},
    "iperf3": "iperf3",
    "sockperf": "sockperf",
}
ENGINE_OF: dict[str, str] = {
    **{tool: "perftest" for tool in (*PERFTEST_BW, *PERFTEST_LAT)},
    "iperf3": "iperf3",
    "sockperf": "sockperf",
}

# Bounds of what a plan may ask. Each is far past what a fabric test needs and short of
# what would hurt a node: sizes above perftest's own -a maximum (8 MiB) only grow the
# buffers (unified-memory machines froze under a 16 GB test), latency iterations above
# 2M only grow the sample output (the parser keeps 2M), a run over 10 minutes is no
# longer a test.
MAX_SIZE = 8 * 1024 * 1024
MAX_ITERATIONS = 2_000_000
MIN_ITERATIONS = 10  # perftest refuses fewer than 5; a percentile needs many more
MAX_DURATION_S = 600
MAX_QPS = 64
MAX_STREAMS = 64
# iperf3's largest TCP block (-l): "block size too large (maximum = 1048576 bytes)".
IPERF3_MAX_LENGTH = 1024 * 1024
# sockperf 3.7's largest TCP message ("'-m' Invalid message size: 1048576 (max: 1048575)")
# and the largest a server takes without its own -m (a bigger one closes the connection;
# 65000 is what fabtop has always sent, under UDP's 65507 too).
SOCKPERF_MAX_TCP_SIZE = 1024 * 1024 - 1
SOCKPERF_MAX_SIZE = 65000
GRACE_S = 10  # past the tool's own duration: connection setup, the report, teardown
_PAGE = 4096
_TEMP_DIR = re.compile(r"/(?:tmp|var/tmp|run/user/[0-9]{1,10})/[A-Za-z0-9_.-]{1,64}")
_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*")


class EngineArgError(ValueError):
    """A run description with a word that must not reach a node; the message names it."""


@dataclass(frozen=True, slots=True)
class Command:
    """One side of a run: its argv, and the seconds after which the launcher ends it."""

    argv: tuple[str, ...]
    limit_s: int


def missing_tool_line(host: str, tool: str) -> str:
    """What a user reads when ``tool`` is not on ``host``: the package that provides it."""
    package = PACKAGE_OF.get(tool, tool)
    return f"{host}: {tool} not found: install the {package} package ({ENGINE_OF.get(tool, tool)})"


def version_argv(tool: str) -> Command:
    """The argv that prints ``tool``'s version (perftest: "Version: 6.29"; iperf3:
    "iperf 3.12 ..."; sockperf: "sockperf, version 3.7-no.git"), bounded to 10 s."""
    if tool not in PACKAGE_OF:
        raise EngineArgError(f"tool must be one of {', '.join(PACKAGE_OF)}: {tool!r}")
    return bounded([tool, "--version"], GRACE_S)


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or NAME_RE.fullmatch(value) is None:
        raise EngineArgError(f"{what} must be a device name ([A-Za-z0-9_.:@-]): {value!r}")
    return value


def _address(value: object, what: str) -> str:
    """An IP literal (IPv6 with a scope: ``fe80::1%thunderbolt0``) or a DNS host name:
    never a word that starts with "-"."""
    if isinstance(value, str) and len(value) <= 253:
        try:
            ip = ipaddress.ip_address(value)
        except ValueError:
            if _HOSTNAME.fullmatch(value) is not None:
                return value
        else:
            # ipaddress takes any text after "%" as the scope ("fe80::1%$(id)"): the scope
            # is an interface name, checked as one.
            scope = ip.scope_id if isinstance(ip, ipaddress.IPv6Address) else None
            if scope is None or NAME_RE.fullmatch(scope) is not None:
                return str(ip)
    raise EngineArgError(f"{what} must be an IP address or a host name: {value!r}")


def _int(value: object, what: str, low: int, high: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise EngineArgError(f"{what} must be an integer within {low}..{high}: {value!r}")
    return str(value)


def _interval(value: object) -> str:
    """iperf3's reporting interval, 0.1..60 s, as a word (``0.25``, ``1``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.1 <= value <= 60
    ):
        raise EngineArgError(f"interval must be 0.1..60 seconds: {value!r}")
    return f"{value:g}"


def _temp_path(directory: object, file: object, what: str) -> str:
    """A file in a temporary directory fabtop made (and removes): no "..", no option."""
    if (
        not isinstance(directory, str)
        or _TEMP_DIR.fullmatch(directory) is None
        or ".." in directory
        or not isinstance(file, str)
        or _FILE.fullmatch(file) is None
    ):
        raise EngineArgError(f"{what} must be a file name in a /tmp directory: {directory!r}")
    return f"{directory}/{file}"


def bounded(argv: Sequence[str], limit_s: float) -> Command:
    """``argv`` with its limit: the launcher ends it (its process group) after ``limit_s``."""
    if not (isinstance(limit_s, int | float) and math.isfinite(limit_s)):
        raise EngineArgError(f"time limit must be a number of seconds: {limit_s!r}")
    if not 1 <= limit_s <= MAX_DURATION_S + GRACE_S:
        raise EngineArgError(f"time limit must be within 1..{MAX_DURATION_S + GRACE_S} s")
    return Command(tuple(argv), math.ceil(limit_s))


@dataclass(frozen=True, slots=True)
class PerftestRun:
    """One side of a perftest pair. ``server`` is the peer's address on the client side,
    None on the server side; the other fields must be the same on both sides."""

    tool: str  # one of PERFTEST_BW or PERFTEST_LAT
    device: str  # RDMA device (mlx5_0, rocep1s0f1, ionic_1)
    port: int  # TCP port of perftest's own exchange
    server: str | None = None
    ib_port: int = 1
    gid_index: int | None = None  # RoCE: the GID index the probe found; IB: None
    size: int = 65536
    iterations: int = 100_000  # latency tools
    duration_s: int = 5  # bandwidth tools (-D): a clock, not an iteration count
    bidir: bool = False  # bandwidth tools only
    qps: int = 1

    @property
    def buffer_bytes(self) -> int:
        """The memory perftest registers on each side, for a plan to weigh against the
        node's free memory: ``max(size, cycle buffer) * 2 * qps`` (``ctx_init`` in
        perftest_resources.c; the cycle buffer is a 4 KiB page by default)."""
        return max(self.size, _PAGE) * 2 * self.qps


def perftest_argv(run: PerftestRun) -> Command:
    """The bounded argv of one perftest side.

    Bandwidth runs use ``-D`` and ``--report_gbits`` (Gb/s, as links are rated);
    latency runs use ``-n`` and ``-U``, which prints every sample (fabtop computes the
    percentiles from them, never from perftest's 1000-sample default). ``-F`` keeps a
    node whose CPU governor is not at maximum from aborting the run (perftest prints a
    warning line instead, which the parser skips).
    """
    is_bw = run.tool in PERFTEST_BW
    if not is_bw and run.tool not in PERFTEST_LAT:
        raise EngineArgError(f"tool must be one of {', '.join(PACKAGE_OF)}: {run.tool!r}")
    argv = [
        run.tool,
        "-d",
        _name(run.device, "RDMA device"),
        "-i",
        _int(run.ib_port, "IB port", 1, 255),
    ]
    argv += ["-p", _int(run.port, "port", 1024, 65535)]
    if run.gid_index is not None:
        argv += ["-x", _int(run.gid_index, "GID index", 0, 255)]
    argv += ["-s", _int(run.size, "message size", 1, MAX_SIZE), "-F"]
    if is_bw:
        argv += ["-q", _int(run.qps, "queue pairs", 1, MAX_QPS)]
        argv += ["-D", _int(run.duration_s, "duration", 1, MAX_DURATION_S), "--report_gbits"]
        if run.bidir:
            argv.append("-b")
        limit = run.duration_s + GRACE_S
    else:
        if run.bidir or run.qps != 1:  # perftest: "Multiple QPs only available on bw tests"
            raise EngineArgError(
                f"bidirectional and queue pairs are for bandwidth tools, not {run.tool}"
            )
        argv += ["-n", _int(run.iterations, "iterations", MIN_ITERATIONS, MAX_ITERATIONS), "-U"]
        # A latency round trip over any fabric is under a millisecond; 1 ms each bounds
        # the run (at 1M iterations: 1000 s, past MAX_DURATION_S: capped there).
        limit = min(MAX_DURATION_S, math.ceil(run.iterations / 1000)) + GRACE_S
    if run.server is not None:
        argv.append(_address(run.server, "server address"))
    return bounded(argv, limit)


@dataclass(frozen=True, slots=True)
class Iperf3Run:
    """One side of an iperf3 pair: ``server`` None is the server (``-s -1``: one client,
    then it exits)."""

    port: int
    server: str | None = None
    bind: str | None = None  # the local address of the rail under test (-B)
    duration_s: int = 5
    interval_s: float = 1  # -i: 0.1..60 s (iperf3's own bounds); a server's too when not 1
    streams: int = 1
    reverse: bool = False  # -R: the server sends
    bidir: bool = False  # --bidir (iperf3 3.7+)
    udp_bitrate: int | None = None  # bits/s; None: TCP
    length: int | None = None  # bytes per write (-l); None: iperf3's default (128 KiB TCP)


def iperf3_argv(run: Iperf3Run) -> Command:
    """The bounded argv of one iperf3 side, JSON output (``-J``)."""
    argv = ["iperf3", "-J", "-p", _int(run.port, "port", 1024, 65535)]
    if run.bind is not None:
        argv += ["-B", _address(run.bind, "bind address")]
    limit = run.duration_s + GRACE_S
    _int(run.duration_s, "duration", 1, MAX_DURATION_S)
    interval = _interval(run.interval_s)
    if run.server is None:
        # A server reports its own intervals (what the receiver got): asked only when not
        # iperf3's default of 1 s.
        every = ["-i", interval] if interval != "1" else []
        return bounded([*argv, "-s", "-1", *every], limit)
    argv += ["-c", _address(run.server, "server address")]
    argv += ["-t", str(run.duration_s), "-i", interval]
    argv += ["-P", _int(run.streams, "streams", 1, MAX_STREAMS)]
    if run.reverse and run.bidir:
        raise EngineArgError("reverse and bidir exclude each other")
    if run.reverse:
        argv.append("-R")
    if run.bidir:
        argv.append("--bidir")
    if run.udp_bitrate is not None:
        argv += ["-u", "-b", _int(run.udp_bitrate, "UDP bitrate", 1000, 400 * 10**9)]
    if run.length is not None:
        argv += ["-l", _int(run.length, "block length", 1, IPERF3_MAX_LENGTH)]
    return bounded(argv, limit)


@dataclass(frozen=True, slots=True)
class SockperfRun:
    """One side of a sockperf ping-pong: ``server`` None is the server, listening on
    ``address``; the client sends to ``server`` and writes every sample to ``log_dir``."""

    address: str  # the server's address (server side: the one it listens on)
    port: int
    server: str | None = None  # set on the client side (equal to ``address``)
    client_ip: str | None = None  # the client's local address of the rail under test
    tcp: bool = True
    duration_s: int = 5
    size: int = 64  # message bytes
    mps: int | None = None  # messages per second; None: as fast as it can ("max")
    log_dir: str | None = None  # a temporary directory fabtop made (client only)
    log_file: str = "sockperf.csv"


def sockperf_argv(run: SockperfRun) -> Command:
    """The bounded argv of one sockperf side; the client's ``--full-log`` is in ``log_dir``."""
    address = _address(run.address, "address")
    port = _int(run.port, "port", 1024, 65535)
    duration = _int(run.duration_s, "duration", 1, MAX_DURATION_S)
    proto = ["--tcp"] if run.tcp else []
    limit = run.duration_s + GRACE_S
    top = SOCKPERF_MAX_TCP_SIZE if run.tcp else SOCKPERF_MAX_SIZE  # sockperf's own bounds
    size = _int(run.size, "message size", 14, top)
    if run.server is None:
        argv = ["sockperf", "server", "-i", address, "-p", port, *proto]
        # A server takes messages past 65000 bytes only when told their size.
        return bounded([*argv, "-m", size] if run.size > SOCKPERF_MAX_SIZE else argv, limit)
    if _address(run.server, "server address") != address:
        raise EngineArgError("the client's server address must be the run's address")
    argv = ["sockperf", "ping-pong", "-i", address, "-p", port, *proto, "-t", duration]
    argv += ["-m", size]
    argv += [f"--mps={'max' if run.mps is None else _int(run.mps, 'mps', 1, 10**7)}"]
    if run.client_ip is not None:
        argv += ["--client_ip", _address(run.client_ip, "client address")]
    if run.log_dir is not None:
        argv += ["--full-log", _temp_path(run.log_dir, run.log_file, "full log")]
    return bounded(argv, limit)
