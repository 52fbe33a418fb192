"""One step measured on the nodes: which engine, which ports and addresses, the servers
first and then the clients, every tool through the launcher, and what they printed read.

The runner (:mod:`fabtop.fabtest.runner`) decides what to measure and when; this module
only runs it. RDMA ports run perftest (the RDMA device, its port and, on RoCE, the GID
index the probe read); IP paths run iperf3 for bandwidth and sockperf for latency, bound
to the rail's own addresses. Every process ends with its run (collectors/launch.py).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from collectors.engines import (
    IPERF3_MAX_LENGTH,
    PACKAGE_OF,
    PERFTEST_BW,
    PERFTEST_LAT,
    Command,
    EngineArgError,
    Iperf3Run,
    PerftestRun,
    SockperfRun,
    iperf3_argv,
    missing_tool_line,
    perftest_argv,
    sockperf_argv,
    version_argv,
)
from collectors.launch import LaunchError, ToolRun, run_tool
from collectors.parsers.iperf3 import Iperf3Result, parse_iperf3
from collectors.parsers.perftest import PerftestResult, parse_perftest
from collectors.parsers.sockperf import parse_sockperf
from collectors.samples import LinkSample
from collectors.text import clean
from collectors.transport.base import Transport, TransportError
from fabtop.fabtest.rails import perftest_port

PERFTEST = frozenset((*PERFTEST_BW, *PERFTEST_LAT))
# Each tool's own first port; a receiver serving several runs at once (an incast) gives
# each the next one.
BASE_PORT = {"perftest": 18515, "iperf3": 5201, "sockperf": 11111}
# A client started before its server listens is refused: tried again this often.
CONNECT_TRIES = 25
CONNECT_WAIT_S = 0.2
# A server that ends with its client (iperf3 -s -1, perftest) is given this long for its
# own report before it is ended.
SERVER_GRACE_S = 5.0
# Servers bind within a few ms of their start: clients start this long after, together.
SERVER_START_S = 0.3
# The temporary directory sockperf's per-sample log goes to on the client (removed after).
_TEMP_DIR_RE = re.compile(r"/tmp/fabtop-[A-Za-z0-9]{6,12}")
# Latency message sizes: perftest's default (2 bytes) and sockperf's smallest but one.
RDMA_LAT_SIZE = 2
IP_LAT_SIZE = 64


@dataclass(frozen=True, slots=True)
class Port:
    """One end of a step: its host, the link under test, and how the tools reach it."""

    host: str
    link: LinkSample
    transport: Transport
    fallback_address: str | None = None  # the host's own (SSH) address, for perftest's TCP
    path: tuple[str, ...] = ()  # the host's configured tool directories (before PATH)

    @property
    def rdma(self) -> bool:
        """An RDMA port perftest runs on; else an IP path (iperf3, sockperf)."""
        return perftest_port(self.link)

    @property
    def label(self) -> str:
        """``host/port`` as tables print it."""
        name = self.link.netdev or f"{self.link.rdma_device}/{self.link.port}"
        return f"{self.host}/{name}"


@dataclass(slots=True)
class Measured:
    """What one run of a step gave: figures, the tools' runs, and the problems met."""

    gbps: list[float | None] = field(default_factory=list)  # per sender (bandwidth)
    retransmits: int | None = None
    sent_bytes: int | None = None  # what the engine says it sent (iperf3), all senders
    # (host, tool) -> the version the tool printed of itself (iperf3 and sockperf do in
    # every run; perftest only with --version: see versions())
    versions: dict[tuple[str, str], str | None] = field(default_factory=dict)
    samples_us: list[float] = field(default_factory=list)  # latency
    runs: list[ToolRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    engine: str | None = None


class StepError(Exception):
    """A step that cannot be run at all (no address, no engine): one line naming it."""


def address(port: Port) -> str | None:
    """The address of the port's own netdev (IPv4 first, global before link-local),
    else None."""
    found = [ipaddress.ip_interface(a).ip for a in port.link.addresses or ()]
    usable = [
        ip for ip in found if not ip.is_loopback and not (ip.version == 6 and ip.is_link_local)
    ]
    # Global before link-local: a Thunderbolt bridge often has only a self-assigned
    # 169.254 address, and it works between its two ends.
    for ip in sorted(usable, key=lambda ip: (ip.version, ip.is_link_local)):
        return str(ip)
    return None


def gid_index(link: LinkSample) -> int | None:
    """RoCE: the RoCE v2 GID that carries the netdev's IPv4 address (the one perftest and
    NCCL use); InfiniBand: None (perftest's default)."""
    if link.link_layer == "InfiniBand":
        return None
    v2 = [g for g in link.gids or () if g.type == "RoCE v2"]
    for g in v2:
        if g.ipv4_mapped and (g.netdev is None or g.netdev == link.netdev):
            return g.index
    return v2[0].index if v2 else None


async def _run(
    port: Port, cmd: Command, out: Measured, kill_ms: int | None = None
) -> ToolRun | None:
    try:
        run = await run_tool(port.transport, cmd.argv, cmd.limit_s, port.path, kill_ms)
    except (TransportError, LaunchError) as e:
        out.problems.append(clean(f"{port.host}: {cmd.argv[0]}: {e}"))
        return None
    out.runs.append(run)
    if run.missing:
        out.problems.append(missing_tool_line(port.host, cmd.argv[0]))
    elif run.timed_out:
        out.problems.append(f"{port.host}: {cmd.argv[0]} ran past its {cmd.limit_s} s: ended")
    elif run.truncated:
        out.problems.append(f"{port.host}: {cmd.argv[0]}: output past its bound: ended")
    return run


_REFUSED = re.compile(r"refused|couldn't connect|unable to connect|can`t connect", re.I)


async def _client(
    port: Port,
    cmd: Command,
    out: Measured,
    server: asyncio.Task[ToolRun | None],
    kill_ms: int | None = None,
) -> ToolRun | None:
    """The client, tried again while its server is not yet listening (and still running);
    ``kill_ms``: killed on purpose that long after its start (``fabtop test loss``)."""
    for _ in range(CONNECT_TRIES):
        scratch = Measured()
        run = await _run(port, cmd, scratch, kill_ms)
        # (By its words, not its status: iperf3 -J exits 0 on a refused connection.)
        refused = run is not None and _REFUSED.search(run.text()[-2000:]) is not None
        if not refused or server.done():
            out.runs += scratch.runs
            out.problems += scratch.problems
            return run
        await asyncio.sleep(CONNECT_WAIT_S)
    out.problems.append(f"{port.host}: {cmd.argv[0]}: its server never listened")
    return None


async def _pairs(
    pairs: Sequence[tuple[tuple[Port, Command], tuple[Port, Command]]],
    out: Measured,
    server_ends: bool = True,
) -> list[tuple[ToolRun | None, ToolRun | None]]:
    """Servers and their clients: every server first, then every client at once (an
    incast's senders start together, not each when its own server happens to be up).
    A server is ended when its client is done (at once where it serves until stopped:
    sockperf), else after a grace for its own report."""
    servers: list[asyncio.Task[ToolRun | None]] = [
        asyncio.create_task(_run(*srv, out)) for srv, _ in pairs
    ]
    try:
        await asyncio.sleep(SERVER_START_S)
        got = await asyncio.gather(
            *(_client(*cli, out, task) for (_, cli), task in zip(pairs, servers, strict=True))
        )
        done: list[ToolRun | None] = [None] * len(servers)
        if server_ends:
            # (A server still waiting then waits for a client that is not coming: ended below.)
            await asyncio.wait(servers, timeout=SERVER_GRACE_S)
            done = [t.result() if t.done() and not t.cancelled() else None for t in servers]
        return list(zip(done, got, strict=True))
    finally:
        for t in servers:
            if not t.done():
                t.cancel()
        await asyncio.gather(*servers, return_exceptions=True)


async def _pair(
    server: tuple[Port, Command],
    client: tuple[Port, Command],
    out: Measured,
    server_ends: bool = True,
) -> tuple[ToolRun | None, ToolRun | None]:
    """One server and its client (:func:`_pairs`)."""
    return (await _pairs([(server, client)], out, server_ends))[0]


def _perftest_gbps(run: ToolRun | None, out: Measured) -> float | None:
    if run is None or run.missing:  # (the missing tool is said already)
        return None
    r = parse_perftest(run.text())
    _said(run, r.errors[0].line if r.errors else None, out)
    return r.bw[-1].average_gbps if r.bw else None


def _said(run: ToolRun, error: str | None, out: Measured) -> None:
    if error:
        out.problems.append(clean(f"{run.host}: {run.argv[0]}: {error}"))


def _iperf3_gbps(run: ToolRun | None, out: Measured) -> tuple[float | None, int | None]:
    """The client's figure (what the receiver got, both ways for --bidir) and its
    retransmissions; what it sent is added to ``out.sent_bytes``."""
    if run is None or run.missing:  # (the missing tool is said already)
        return None, None
    r: Iperf3Result = parse_iperf3(run.text())
    _said(run, r.error, out)
    out.versions[(run.host, run.argv[0])] = r.version
    got = [s.bits_per_second for s in (r.received, r.received_reverse) if s is not None]
    sent = [s for s in (r.sent, r.sent_reverse) if s is not None]
    bps = sum(b for b in got if b is not None) if got and all(b is not None for b in got) else None
    counts = [s.retransmits for s in sent if s.retransmits is not None]
    sent_bytes = [s.bytes for s in sent if s.bytes is not None]
    if sent_bytes:
        out.sent_bytes = (out.sent_bytes or 0) + sum(sent_bytes)
    return (bps / 1e9 if bps is not None else None), (sum(counts) if counts else None)


def _peer(port: Port) -> str:
    """What the sender connects to on ``port``'s host: its rail address, else its own."""
    got = address(port)
    if got is None and port.rdma:
        got = port.fallback_address  # perftest's TCP exchange may go any way
    if got is None:
        raise StepError(f"{port.label}: no address on the rail's netdev to test over")
    return got


async def bandwidth(
    senders: Sequence[Port],
    receiver: Port,
    seconds: int,
    ports: Callable[[str], int],
    bidir: bool,
    size: int | None = None,
    streams: int = 1,
) -> Measured:
    """Every sender into ``receiver`` at once, for ``seconds`` (one sender: a pair);
    ``size``: the message (perftest ``-s``) or write (iperf3 ``-l``, at most its 1 MiB)
    size, else the engine's default; ``streams``: queue pairs (``-q``) or streams
    (``-P``) of each sender."""
    out = Measured()
    peer = _peer(receiver)
    jobs: list[tuple[tuple[Port, Command], tuple[Port, Command]]] = []
    try:
        if receiver.rdma:
            out.engine = "perftest"
            for s in senders:
                base = PerftestRun(
                    "ib_write_bw", "", ports("perftest"), duration_s=seconds, bidir=bidir
                )
                if size is not None or streams != 1:
                    base = replace(base, size=size or base.size, qps=streams)
                srv = _perftest_side(base, receiver, None)
                cli = _perftest_side(base, s, peer)
                jobs.append(((receiver, srv), (s, cli)))
        else:
            out.engine = "iperf3"
            for s in senders:
                n = ports("iperf3")
                srv = iperf3_argv(Iperf3Run(n, bind=peer, duration_s=seconds))
                length = min(size, IPERF3_MAX_LENGTH) if size is not None else None
                cli = iperf3_argv(
                    Iperf3Run(
                        n,
                        server=peer,
                        bind=address(s),
                        duration_s=seconds,
                        streams=streams,
                        bidir=bidir,
                        length=length,
                    )
                )
                jobs.append(((receiver, srv), (s, cli)))
    except EngineArgError as e:
        raise StepError(f"{receiver.label}: {e}") from None
    done = await _pairs(jobs, out)
    retrans: list[int] = []
    for served, client in done:
        if out.engine == "perftest":
            out.gbps.append(_perftest_gbps(client, out))
        else:
            # The server says its version too: a host that only serves (a sizes step's
            # receiver) is named with it.
            if served is not None and not served.missing:
                out.versions[(served.host, served.argv[0])] = parse_iperf3(served.text()).version
            gbps, r = _iperf3_gbps(client, out)
            out.gbps.append(gbps)
            if r is not None:
                retrans.append(r)
    out.retransmits = sum(retrans) if retrans else None
    return out


def _perftest_side(base: PerftestRun, port: Port, server: str | None) -> Command:
    link = port.link
    assert link.rdma_device is not None
    run = PerftestRun(
        base.tool,
        link.rdma_device,
        base.port,
        server=server,
        ib_port=link.port or 1,
        gid_index=gid_index(link),
        size=base.size,
        iterations=base.iterations,
        duration_s=base.duration_s,
        bidir=base.bidir,
        qps=base.qps,
    )
    return perftest_argv(run)


async def latency(
    sender: Port,
    receiver: Port,
    iterations: int,
    seconds: int,
    ports: Callable[[str], int],
    size: int | None = None,
) -> Measured:
    """Round trips from ``sender`` to ``receiver``: every sample kept (RDMA: ``iterations``
    of them; IP: as many as ``seconds`` of ping-pong give), of ``size``-byte messages
    (None: the smallest, :data:`RDMA_LAT_SIZE` or :data:`IP_LAT_SIZE`)."""
    out = Measured()
    peer = _peer(receiver)
    try:
        if receiver.rdma:
            out.engine = "perftest"
            base = PerftestRun(
                "ib_write_lat",
                "",
                ports("perftest"),
                size=size or RDMA_LAT_SIZE,
                iterations=iterations,
            )
            srv, cli = await _pair(
                (receiver, _perftest_side(base, receiver, None)),
                (sender, _perftest_side(base, sender, peer)),
                out,
            )
            for run in (cli, srv):  # the samples are printed on the side that timed them
                if run is not None and not run.missing:
                    r: PerftestResult = parse_perftest(run.text())
                    if r.samples_us:
                        out.samples_us = list(r.samples_us)
                        break
                    _said(run, r.errors[0].line if r.errors else None, out)
            return out
        out.engine = "sockperf"
        n = ports("sockperf")
        return await _sockperf(sender, receiver, peer, seconds, n, out, size or IP_LAT_SIZE)
    except EngineArgError as e:
        raise StepError(f"{receiver.label}: {e}") from None


async def _sockperf(
    sender: Port, receiver: Port, peer: str, seconds: int, n: int, out: Measured, size: int
) -> Measured:
    """sockperf ping-pong with its per-sample log in a temporary directory on the sender,
    read back and removed whatever happened."""
    made = await _run(sender, Command(("mktemp", "-d", "/tmp/fabtop-XXXXXXXX"), 10), out)
    tmp = made.text().strip() if made is not None and made.ok else ""
    if not _TEMP_DIR_RE.fullmatch(tmp):
        out.problems.append(f"{sender.host}: mktemp gave no temporary directory")
        return out
    try:
        srv_cmd = sockperf_argv(SockperfRun(peer, n, duration_s=seconds, size=size))
        run = SockperfRun(
            peer,
            n,
            server=peer,
            client_ip=address(sender),
            duration_s=seconds,
            size=size,
            log_dir=tmp,
        )
        _srv, cli = await _pair(
            (receiver, srv_cmd), (sender, sockperf_argv(run)), out, server_ends=False
        )
        if cli is not None and not cli.missing:
            summary = parse_sockperf(cli.text())
            _said(cli, summary.error, out)
            out.versions[(cli.host, cli.argv[0])] = summary.version
        log = await _run(sender, Command(("cat", f"{tmp}/{run.log_file}"), 30), out)
        if log is not None and log.ok:
            out.samples_us = list(parse_sockperf(log.text()).samples_us)
    finally:
        await _run(sender, Command(("rm", "-rf", "--", tmp), 10), Measured())
    return out


async def versions(
    ran: Sequence[Measured], ports: Mapping[str, Port]
) -> dict[str, dict[str, str | None]]:
    """Which engine ran on which host, and its version: what the runs printed (iperf3,
    sockperf), else the tool's own ``--version`` (perftest prints it only then), asked
    once per host and tool. ``ports``: a port of each host (its transport and path)."""
    got: dict[tuple[str, str], str | None] = {}
    for m in ran:
        for run in m.runs:
            if not run.missing and run.argv[0] in PACKAGE_OF:
                got.setdefault((run.host, run.argv[0]), None)
        got.update((k, v) for k, v in m.versions.items() if v is not None)

    async def ask(host: str, tool: str) -> None:
        port = ports.get(host)
        if port is None:
            return
        scratch = Measured()
        cmd = version_argv(tool)
        run = await _run(port, cmd, scratch)
        if run is not None and run.ok:
            got[(host, tool)] = parse_perftest(run.text()).header.version

    await asyncio.gather(*(ask(h, t) for (h, t), v in got.items() if v is None and t in PERFTEST))
    out: dict[str, dict[str, str | None]] = {}
    for (host, tool), v in sorted(got.items()):
        out.setdefault(host, {})[tool] = v
    return out
