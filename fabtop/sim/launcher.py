"""The launcher on a simulated node: ``fabtop test``'s tools answer from the simulated fabric.

``DemoTransport.stream`` hands a stream whose script is :func:`collectors.launch.launch_script`
here. Its arguments are the launcher's (``limit_s=N -- TOOL ARGS...``) and its output is
what the launcher prints on a real node: the tool's output, then the trailer line
(``@@fabtop-launch exit <status> <ms>``, ``timeout``, ``missing <tool>``), so
:func:`collectors.launch.run_tool` and the parsers read it unchanged.

- perftest (``ib_*_bw``, ``ib_*_lat``), ``iperf3 -J`` and ``sockperf``, server and client
  sides. A server waits for its client (a :class:`Listener` on the fabric's bench); a
  client whose server is not listening yet gets the tool's own "connection refused".
- Each run takes simulation time: the data phase starts at the next grid point and lasts
  the tool's duration (``-D``, ``-t``) or its iterations; its bytes are a
  :class:`~fabtop.sim.bench.Flow` the counters of both ends carry.
- ``mktemp -d /tmp/fabtop-XXXXXX``, ``cat`` and ``rm -r`` of paths under ``/tmp/fabtop-*``:
  sockperf's ``--full-log`` stays in the simulated host's memory until removed.
- Any other tool, and a tool the node would not have (perftest without an RDMA device,
  anything on a Mac), is the launcher's ``missing`` line. A run past its limit ends with
  the ``timeout`` line; a cancelled stream (Ctrl-C, the runner done) ends the run and cuts
  its load at the current grid cell.

The figures (:mod:`fabtop.sim.bench`) and texts (:mod:`fabtop.sim.tools`) live apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from collectors.engines import PERFTEST_BW, PERFTEST_LAT
from collectors.launch import LaunchError, parse_launch_args
from fabtop.sim import tools
from fabtop.sim.bench import Bench, Endpoint, Flow, endpoint_address
from fabtop.sim.fabric import GRID_S

if TYPE_CHECKING:
    from fabtop.sim.host import SimHost
    from fabtop.sim.transport import DemoTransport

TEMP_PREFIX = "/tmp/fabtop-"
# Seconds a run spends before its data phase at most (the TCP exchange, QP setup): the
# data phase starts at the next grid point.
RETRY_EXCEEDED_S = 1.0  # RC: 7 retries of a ~0.13 s timeout, then "Failed status 12"
WARMUP_S = 0.45  # sockperf's warm-up (400 ms) and start: not in the valid duration
MAX_SAMPLES = 2_000_000  # as the parsers keep
# Latency floors, one way, microseconds: RoCE/IB perftest, kernel TCP per netdev kind.
RDMA_LAT_US = {"roce": 1.6, "ib": 1.05}
TCP_LAT_US = {"roce": 9.0, "tb": 18.0, "mgmt": 25.0, "lo": 6.0, "ib": 9.0}
READ_FACTOR = 1.9  # a read is a round trip on the wire: ib_read_lat reports ~1.9x write
SEND_EXTRA_US = 0.15  # send/receive: the receive queue's completion
TAIL_P = 0.002  # interrupts, cache misses: samples several times the floor
PAUSE_WAIT_US = (20.0, 500.0)  # a sample that meets a PFC pause waits for its refresh
QUEUE_US = {True: 3.0, False: 40.0}  # rdma / tcp: queueing per bandwidth flow into the port


class _TimedOut(Exception):
    """The run's limit passed."""


class _Killed(Exception):
    """The launcher's kill on purpose (``kill_ms``) came."""


@dataclass(slots=True)
class Listener:
    """A server waiting for one client; the client leaves the server's report here."""

    endpoint: Endpoint | None  # the port it serves on (None: any of the host's)
    argv: tuple[str, ...]
    done: asyncio.Event = field(default_factory=asyncio.Event)
    accepted: bool = False
    report: str = ""
    status: int = 0


@dataclass(slots=True)
class _Run:
    """One launcher run: its clock, its deadline and the tool's exit status."""

    transport: DemoTransport
    t0: float
    limit: int
    status: int = 0
    kill_at: float | None = None  # kill_ms: the tool is killed at this simulation time

    @property
    def bench(self) -> Bench:
        return self.transport.clock.fabric.bench

    @property
    def host(self) -> SimHost:
        return self.transport.host

    def now(self) -> float:
        return self.transport.clock.now()

    def _deadline(self) -> tuple[float, type[Exception]]:
        """What ends the run first: the kill on purpose or the limit."""
        limit = self.t0 + self.limit
        if self.kill_at is not None and self.kill_at < limit:
            return self.kill_at, _Killed
        return limit, _TimedOut

    async def until(self, t: float) -> None:
        """Simulation time ``t``, or the limit or the kill first (then _TimedOut, _Killed)."""
        deadline, ends = self._deadline()
        await self.transport.clock.sleep_until(min(t, deadline))
        if t > deadline + 1e-9:
            raise ends

    async def wait(self, event: asyncio.Event) -> None:
        """Until ``event`` is set, or the limit or the kill (then _TimedOut, _Killed)."""
        deadline, ends = self._deadline()
        sleeper = asyncio.ensure_future(self.transport.clock.sleep_until(deadline))
        waiter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()
        if not event.is_set():
            raise ends

    def data_start(self) -> float:
        """The next grid point the fabric has not reached: where a data phase begins."""
        fab = self.transport.clock.fabric
        return max((math.floor(self.now() / GRID_S + 1e-9) + 1) * GRID_S, fab.grid_t + GRID_S)


def has_tool(host: SimHost, tool: str) -> bool:
    """Which tools a simulated node has: coreutils everywhere, the test tools on Linux,
    perftest only beside an RDMA device (it comes with rdma-core's stack)."""
    if tool in ("cat", "rm", "mktemp"):
        return True
    if host.cfg.macos:
        return False
    if tool in (*PERFTEST_BW, *PERFTEST_LAT):
        return bool(host.cfg.roce_ports or host.cfg.ib_port)
    return tool in ("iperf3", "sockperf")


async def launched(transport: DemoTransport, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
    """The launcher's output for ``args`` (``limit_s=N -- TOOL ARGS...``) on this node."""
    try:
        limit, _path, argv, kill_ms = parse_launch_args(args)
    except LaunchError as e:
        yield f"fabtop-launch: {e}\n".encode()  # as launch.sh (its status 2 is not seen)
        return
    tool = argv[0]
    run = _Run(transport, transport.clock.now(), limit)
    if kill_ms is not None:
        run.kill_at = run.t0 + kill_ms / 1000
    if not transport.host.answers(run.t0):
        await transport.clock.sleep_until(run.t0 + limit)
        raise transport.error("connection lost (simulated host stopped answering)")
    if not has_tool(transport.host, tool):
        yield f"@@fabtop-launch missing {tool}\n".encode()
        return
    try:
        # Closed with this stream, wherever it stands: its servers stop listening and
        # its load is cut at once, not when the garbage collector gets to it.
        async with contextlib.aclosing(_tool(run, argv)) as out:
            async for text in out:
                yield text.encode()
    except _TimedOut:
        ms = round((run.now() - run.t0) * 1000)
        yield f"\n@@fabtop-launch timeout {limit} {ms}\n".encode()
        return
    except _Killed:
        ms = round((run.now() - run.t0) * 1000)
        pid = random.Random(f"{transport.host.name}:{run.t0}").randrange(2000, 60000)
        yield f"\n@@fabtop-launch killed {pid} {ms}\n\n@@fabtop-launch exit 137 {ms}\n".encode()
        return
    ms = round((run.now() - run.t0) * 1000)
    yield f"\n@@fabtop-launch exit {run.status} {ms}\n".encode()


def _tool(run: _Run, argv: tuple[str, ...]) -> AsyncGenerator[str, None]:
    tool = argv[0]
    if "--version" in argv[1:] and tool not in ("cat", "rm", "mktemp"):
        return _once(tools.version_text(tool, run.host.cfg.kernel, run.host.name))
    if tool in ("cat", "rm", "mktemp"):
        return _coreutil(run, argv)
    if tool in (*PERFTEST_BW, *PERFTEST_LAT):
        return _perftest(run, argv)
    if tool == "iperf3":
        return _iperf3(run, argv)
    return _sockperf(run, argv)


async def _once(text: str) -> AsyncGenerator[str, None]:
    yield text


def _options(argv: Sequence[str], valued: set[str]) -> tuple[dict[str, str], list[str], str | None]:
    """``argv``'s options (``-x V``, ``--x=V``, flags), positionals, and an option that
    takes a value but came last without one (None: none did)."""
    opts: dict[str, str] = {}
    pos: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and "=" in w:
            key, _, value = w.partition("=")
            opts[key] = value
        elif w in valued:
            if i + 1 >= len(words):
                return opts, pos, w
            opts[w] = words[i + 1]
            i += 1
        elif w.startswith("-"):
            opts[w] = ""
        else:
            pos.append(w)
        i += 1
    return opts, pos, None


def _int(opts: dict[str, str], key: str, default: int) -> int:
    value = opts.get(key, "")
    return int(value) if value.isdigit() else default


# --- coreutils: the full log's directory ------------------------------------------------------


async def _coreutil(run: _Run, argv: tuple[str, ...]) -> AsyncGenerator[str, None]:
    bench, host = run.bench, run.host.name
    dirs = bench.dirs.setdefault(host, set())
    files = bench.files.setdefault(host, {})
    tool, rest = argv[0], list(argv[1:])
    if tool == "mktemp":
        if rest != ["-d", f"{TEMP_PREFIX}XXXXXX"]:
            run.status = 1
            yield f"mktemp: only -d {TEMP_PREFIX}XXXXXX is simulated\n"
            return
        n = len(dirs) + sum(len(v) for v in bench.dirs.values())
        rng = random.Random(f"{bench.fabric.seed}:{host}:{n}:{run.t0}")
        name = TEMP_PREFIX + "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6)
        )
        dirs.add(name)
        yield name + "\n"
        return
    if tool == "cat":
        for path in rest:
            if path in files:
                yield files[path]
            else:
                run.status = 1
                yield f"cat: {path}: No such file or directory\n"
        return
    paths = [p for p in rest if not p.startswith("-")]
    for path in paths:
        if path in dirs:
            dirs.discard(path)
            for f in [f for f in files if f.startswith(path + "/")]:
                del files[f]
        elif path in files:
            del files[path]
        else:
            run.status = 1
            yield f"rm: cannot remove '{path}': No such file or directory\n"


# --- shared: pairing a client with its server -------------------------------------------------


@contextlib.contextmanager
def _listening(
    run: _Run, family: str, port: int, ep: Endpoint | None, argv: tuple[str, ...]
) -> Iterator[Listener]:
    """A server listening for as long as the block runs (its stream closed included)."""
    key = (run.host.name, family, port)
    listener = Listener(ep, argv)
    run.bench.listeners[key] = listener
    try:
        yield listener
    finally:
        if run.bench.listeners.get(key) is listener:
            del run.bench.listeners[key]


def _connect(run: _Run, family: str, address: str, port: int) -> tuple[Listener, Endpoint] | None:
    """The server listening at ``address``:``port``, and its host's address there."""
    ep = run.bench.resolve(address, run.host.name)
    if ep is None:
        return None
    listener = run.bench.listeners.get((ep.host, family, port))
    if not isinstance(listener, Listener) or listener.accepted:
        return None
    listener.accepted = True
    return listener, ep


def _release(listener: Listener, report: str, status: int) -> None:
    if not listener.done.is_set():
        listener.report, listener.status = report, status
        listener.done.set()


async def _served(run: _Run, listener: Listener) -> str:
    """A server's wait for its client; the report the client left."""
    await run.wait(listener.done)
    run.status = listener.status
    return listener.report


# --- latency samples ---------------------------------------------------------------------------


def _samples(
    run: _Run,
    flow: Flow,
    floor_us: float,
    count: int | None,
    until_s: float | None,
    period_s: float | None,
) -> tuple[list[float], float]:
    """One-way latencies in the order measured, from ``flow.start``, and when the last
    one ended: ``count`` samples, or samples until ``until_s`` seconds passed.

    Each sample: the floor, a little jitter, a rare tail; a PFC pause on the path in its
    cell makes it wait; bandwidth flows into the same receiver queue ahead of it.
    """
    bench = run.bench
    rng = random.Random(f"{bench.fabric.seed}:{flow.src}:{flow.dst}:{flow.start}")
    out: list[float] = []
    t = flow.start
    cell = -1.0
    pause = queue = 0.0
    while len(out) < MAX_SAMPLES and (count is None or len(out) < count):
        if until_s is not None and t >= flow.start + until_s:
            break
        if t > run.t0 + run.limit:  # the launcher ends the run there: no sample after it
            break
        g = math.floor(t / GRID_S + 1e-9) * GRID_S
        if g != cell:
            cell = g
            mods = bench.mods(g)
            s = mods.ports.get((flow.src.host, flow.src.index)) if flow.src.kind == "roce" else None
            d = mods.ports.get((flow.dst.host, flow.dst.index)) if flow.dst.kind == "roce" else None
            pause = max(
                s.rx_pause_frac if s else 0.0,
                s.tx_pause_frac if s else 0.0,
                d.rx_pause_frac if d else 0.0,
                d.tx_pause_frac if d else 0.0,
            )
            n_in = sum(1 for f in bench.active(g, GRID_S) if f.dst in (flow.dst, flow.src))
            queue = QUEUE_US[flow.rdma] * n_in
        v = floor_us * (1.0 + rng.expovariate(1 / 0.03))
        if rng.random() < TAIL_P:
            v += floor_us * rng.uniform(2.0, 8.0)
        if pause > 0 and rng.random() < pause:
            v += rng.uniform(*PAUSE_WAIT_US) * (1.0 + 10.0 * pause)
        if queue > 0:
            v += rng.expovariate(1 / queue)
        out.append(v)
        t += period_s if period_s is not None else 2 * v / 1e6
    return out, t


# --- perftest --------------------------------------------------------------------------------

_PERFTEST_VALUED = {"-d", "-i", "-p", "-x", "-s", "-q", "-D", "-n", "-m", "--gid-index"}
_PERFTEST_FLAGS = {"-F", "--report_gbits", "-b", "-U", "-R"}


def _device(run: _Run, name: str) -> Endpoint | None:
    cfg = run.host.cfg
    if not name.startswith("mlx5_") or not name[5:].isdigit():
        return None
    i = int(name[5:])
    if i < cfg.roce_ports:
        return Endpoint(cfg.name, "roce", i)
    if i == cfg.roce_ports and cfg.ib_port:
        return Endpoint(cfg.name, "ib")
    return None


def _side(run: _Run, tool: str, ep: Endpoint, opts: dict[str, str]) -> tools.PerftestSide:
    roce = ep.kind == "roce"
    return tools.PerftestSide(
        tool=tool,
        device=opts.get("-d", ""),
        link_type="Ethernet" if roce else "IB",
        mtu=run.bench.port_mtu(ep),
        gid_index=_int(opts, "-x", 3) if roce else None,
        qps=_int(opts, "-q", 1),
        bidir="-b" in opts,
        duration="-D" in opts,
        gbits="--report_gbits" in opts,
    )


def _gid(run: _Run, ep: Endpoint) -> str:
    return tools.gid_text(endpoint_address(run.bench.fabric.hosts[ep.host], ep))


async def _perftest(run: _Run, argv: tuple[str, ...]) -> AsyncGenerator[str, None]:
    tool = argv[0]
    opts, pos, bad = _options(argv[1:], _PERFTEST_VALUED)
    unknown = [w for w in opts if w not in _PERFTEST_VALUED | _PERFTEST_FLAGS]
    if bad is not None or unknown or len(pos) > 1:
        run.status = 1
        yield f"{tool}: unrecognized option '{(unknown or [bad or pos[-1]])[0]}'\n"
        return
    local = _device(run, opts.get("-d", "mlx5_0"))
    if local is None:
        run.status = 1
        yield tools.perftest_no_device(opts.get("-d", "mlx5_0"))
        return
    if run.bench.down(local, math.floor(run.now() / GRID_S) * GRID_S):
        run.status = 1
        yield tools.perftest_port_state(
            _int(opts, "-i", 1), "Down" if local.kind == "roce" else "Init"
        )
        return
    port = _int(opts, "-p", 18515)
    if not pos:  # the server side
        with _listening(run, "perftest", port, local, argv) as listener:
            yield tools.perftest_waiting()
            yield await _served(run, listener)
        return
    found = _connect(run, "perftest", pos[0], port)
    if found is None:
        await run.until(run.now() + 0.01)
        run.status = 1
        yield tools.perftest_refused(pos[0], port)
        return
    listener, _ = found
    remote = listener.endpoint
    assert remote is not None
    client = _side(run, tool, local, opts)
    server = _side(run, tool, remote, _options(listener.argv[1:], _PERFTEST_VALUED)[0])
    gids = (_gid(run, local), _gid(run, remote))
    finished = False
    flows: list[Flow] = []
    try:
        if tool in PERFTEST_BW:
            gen = _perftest_bw(
                run, tool, opts, local, remote, client, server, gids, listener, flows
            )
        else:
            gen = _perftest_lat(
                run, tool, opts, local, remote, client, server, gids, listener, flows
            )
        async for text in gen:
            yield text
        finished = True
    finally:
        if not finished:
            for f in flows:
                run.bench.cut(f, run.now())
            _release(listener, "", 1)


def _stall_at(run: _Run, flows: list[Flow], start: float, end: float) -> float | None:
    """When the pair stops moving packets: an end down, or the two ends' RDMA MTUs
    differ (the larger side's frames are dropped as too long); None: never."""
    bench = run.bench
    a, b = flows[0].src, flows[0].dst
    if a.kind == "roce" and b.kind == "roce" and bench.port_mtu(a) != bench.port_mtu(b):
        return start
    g = start
    while g < end - 1e-9:
        if bench.down(a, g) or bench.down(b, g):
            return g
        g += GRID_S
    return None


async def _perftest_bw(
    run: _Run,
    tool: str,
    opts: dict[str, str],
    local: Endpoint,
    remote: Endpoint,
    client: tools.PerftestSide,
    server: tools.PerftestSide,
    gids: tuple[str, str],
    listener: Listener,
    flows: list[Flow],
) -> AsyncGenerator[str, None]:
    duration = _int(opts, "-D", 5)
    size = _int(opts, "-s", 65536)
    start = run.data_start()
    end = start + duration
    bench = run.bench
    # ib_read_bw: the server's memory is read, data flows toward the client.
    src, dst = (remote, local) if tool == "ib_read_bw" else (local, remote)
    flows.append(bench.add(Flow(src, dst, start, end, rdma=True)))
    if client.bidir:
        flows.append(bench.add(Flow(dst, src, start, end, rdma=True)))
    stall = _stall_at(run, flows, start, end)
    if stall is not None:
        await run.until(stall + RETRY_EXCEEDED_S)
        for f in flows:
            bench.cut(f, run.now())
        run.status = 1
        _release(listener, tools.perftest_stalled(server, gids[::-1], server=True), 1)
        yield tools.perftest_stalled(client, gids, server=False)
        return
    await run.until(end)
    gbps = sum(bench.moved(f, start, end) for f in flows) * 8 / duration / 1e9
    _release(listener, tools.perftest_bw(server, size, gbps, duration, gids[::-1]), 0)
    yield tools.perftest_bw(client, size, gbps, duration, gids)


def _lat_floor_us(run: _Run, tool: str, ep: Endpoint, size: int) -> float:
    floor = RDMA_LAT_US["ib" if ep.kind == "ib" else "roce"]
    floor += size / run.bench.ceiling(ep, True) * 1e6
    if tool == "ib_read_lat":
        floor *= READ_FACTOR
    elif tool == "ib_send_lat":
        floor += SEND_EXTRA_US
    return floor


async def _perftest_lat(
    run: _Run,
    tool: str,
    opts: dict[str, str],
    local: Endpoint,
    remote: Endpoint,
    client: tools.PerftestSide,
    server: tools.PerftestSide,
    gids: tuple[str, str],
    listener: Listener,
    flows: list[Flow],
) -> AsyncGenerator[str, None]:
    size = _int(opts, "-s", 2)
    count = max(_int(opts, "-n", 1000), 1)
    start = run.data_start()
    probe = Flow(local, remote, start, start, rdma=True, fixed_bps=0.0)
    flows.append(probe)
    if _stall_at(run, flows, start, start + GRID_S) is not None:
        await run.until(start + RETRY_EXCEEDED_S)
        run.status = 1
        _release(listener, tools.perftest_stalled(server, gids[::-1], server=True), 1)
        yield tools.perftest_stalled(client, gids, server=False)
        return
    samples, end = _samples(run, probe, _lat_floor_us(run, tool, local, size), count, None, None)
    # Each message crosses once each way: a small load on both ends for the run.
    bps = size * len(samples) / max(end - start, 1e-6)
    flows.clear()
    flows.append(run.bench.add(Flow(local, remote, start, end, rdma=True, fixed_bps=bps)))
    flows.append(run.bench.add(Flow(remote, local, start, end, rdma=True, fixed_bps=bps)))
    await run.until(end)
    _release(listener, tools.perftest_lat(server, size, samples, gids[::-1], raw=False), 0)
    yield tools.perftest_lat(client, size, samples, gids, raw="-U" in opts)


# --- iperf3 ------------------------------------------------------------------------------------

_IPERF3_VALUED = {"-p", "-B", "-c", "-t", "-i", "-P", "-b", "-l"}


async def _iperf3(run: _Run, argv: tuple[str, ...]) -> AsyncGenerator[str, None]:
    opts, pos, bad = _options(argv[1:], _IPERF3_VALUED)
    known = _IPERF3_VALUED | {"-J", "-s", "-1", "-R", "--bidir", "-u"}
    unknown = [w for w in opts if w not in known]
    if bad is not None or unknown or pos or "-u" in opts:
        run.status = 1
        word = (unknown or ["-u" if "-u" in opts else bad or pos[0]])[0]
        yield f"iperf3: parameter error - option {word!r} is not simulated\n"
        return
    port = _int(opts, "-p", 5201)
    bind = run.bench.resolve(opts["-B"], run.host.name) if "-B" in opts else None
    if "-s" in opts:
        with _listening(run, "iperf3", port, bind, argv) as listener:
            yield await _served(run, listener)
        return
    cfg = run.host.cfg
    found = _connect(run, "iperf3", opts.get("-c", ""), port)
    if found is None:
        await run.until(run.now() + 0.01)
        run.status = 1
        yield tools.iperf3_refused(run.host.name, cfg.kernel)
        return
    listener, remote = found
    local = bind or run.bench.local_route(run.host, remote)
    duration = _int(opts, "-t", 10)
    reverse, bidir = "-R" in opts, "--bidir" in opts
    start = run.data_start()
    end = start + duration
    bench = run.bench
    fwd = (
        Flow(remote, local, start, end, rdma=False)
        if reverse
        else Flow(local, remote, start, end, rdma=False)
    )
    flows = [bench.add(fwd)]
    if bidir:
        flows.append(bench.add(Flow(fwd.dst, fwd.src, start, end, rdma=False)))
    every = _interval(opts)
    srv_every = _interval(_options(listener.argv[1:], _IPERF3_VALUED)[0])
    n_in = sum(1 for f in bench.active(start, GRID_S) if f.dst == fwd.dst)

    def per(f: Flow, iv: float, upto: float) -> list[float]:
        # Bytes of each whole interval up to ``upto`` (iperf3 prints no partial one).
        n = max(0, math.floor((upto - start) / iv + 1e-9))
        return [bench.moved(f, start + i * iv, start + (i + 1) * iv) for i in range(n)]

    done = False
    try:
        await run.until(end)
        done = True
    finally:
        if not done:
            cut = run.now()
            for f in flows:
                bench.cut(f, cut)
            # The server saw its client go: what it got so far, and iperf3's own words.
            side = _iperf3_side(run, True, remote, local, port, opts, start)
            got = per(fwd, srv_every, cut)
            lost = "the client has unexpectedly closed the connection"
            _release(listener, tools.iperf3_doc(side, got, None, 0, srv_every, lost), 1)
    per_s = [per(f, every, end) for f in flows]
    retrans = round(sum(per_s[0]) / 8948 * bench.incast_drop(fwd, n_in))
    server_doc = tools.iperf3_doc(
        _iperf3_side(run, True, remote, local, port, opts, start),
        per(fwd, srv_every, end),
        per(flows[1], srv_every, end) if bidir else None,
        retrans,
        srv_every,
    )
    _release(listener, server_doc, 0)
    back = per_s[1] if bidir else None
    client_side = _iperf3_side(run, False, remote, local, port, opts, start)
    yield tools.iperf3_doc(client_side, per_s[0], back, retrans, every)


def _interval(opts: dict[str, str]) -> float:
    """iperf3's ``-i`` (seconds, 0.1..60; 1 when not given or not a number)."""
    try:
        value = float(opts.get("-i", "1"))
    except ValueError:
        return 1.0
    return value if 0.1 <= value <= 60 else 1.0


def _iperf3_side(
    run: _Run,
    server: bool,
    remote: Endpoint,
    local: Endpoint,
    port: int,
    opts: dict[str, str],
    start: float,
) -> tools.Iperf3Side:
    """What one side's document says of the run (the client's ``run``, either side;
    ``start``: its data phase's)."""
    bench = run.bench
    local_addr = endpoint_address(run.host, local)
    remote_addr = endpoint_address(bench.fabric.hosts[remote.host], remote)
    server_host = bench.fabric.hosts[remote.host]
    host = server_host if server else run.host
    return tools.Iperf3Side(
        server,
        host.name,
        host.cfg.kernel,
        remote_addr if server else local_addr,
        local_addr if server else remote_addr,
        port,
        _int(opts, "-P", 1),
        _int(opts, "-t", 10),
        "-R" in opts,
        "--bidir" in opts,
        bench.fabric.base_epoch_s + start,
    )


# --- sockperf ----------------------------------------------------------------------------------

_SOCKPERF_VALUED = {"-i", "-p", "-t", "-m", "--client_ip", "--full-log"}


async def _sockperf(run: _Run, argv: tuple[str, ...]) -> AsyncGenerator[str, None]:
    opts, pos, bad = _options(argv[1:], _SOCKPERF_VALUED)
    known = _SOCKPERF_VALUED | {"--tcp", "--mps"}
    unknown = [w for w in opts if w not in known]
    if bad is not None or unknown or pos[:1] not in (["server"], ["ping-pong"]) or len(pos) > 1:
        run.status = 1
        word = (unknown or [bad or (pos[0] if pos else "")])[0]
        yield f"sockperf: ERROR: unknown option or mode {word!r} (not simulated)\n"
        return
    port = _int(opts, "-p", 11111)
    address = opts.get("-i", "")
    if pos == ["server"]:
        ep = run.bench.resolve(address, run.host.name)
        with _listening(run, "sockperf", port, ep, argv):
            yield tools.sockperf_server_banner()
            # A sockperf server serves until it is ended: the launcher's limit or EOF.
            await run.until(math.inf)
        return
    tcp = "--tcp" in opts
    found = _connect(run, "sockperf", address, port)
    if found is None:
        await run.until(run.now() + (0.01 if tcp else 1.0))
        yield tools.sockperf_refused(tcp)
        return
    listener, remote = found
    listener.accepted = False  # a sockperf server takes client after client
    bench = run.bench
    client_ip = opts.get("--client_ip")
    local = (bench.resolve(client_ip, run.host.name) if client_ip else None) or bench.local_route(
        run.host, remote
    )
    duration = _int(opts, "-t", 1)
    size = _int(opts, "-m", 14)
    mps = opts.get("--mps", "max")
    start = run.data_start()
    probe = Flow(local, remote, start + WARMUP_S, start + duration, rdma=False, fixed_bps=0.0)
    floor = TCP_LAT_US.get(local.kind, 20.0) + size / bench.ceiling(local, False) * 1e6
    period = 1.0 / int(mps) if mps.isdigit() and int(mps) > 0 else None
    valid = duration - WARMUP_S
    samples, _ = _samples(run, probe, floor, None, valid, period)
    bps = size * len(samples) / valid
    flows = [
        bench.add(Flow(local, remote, start, start + duration, rdma=False, fixed_bps=bps)),
        bench.add(Flow(remote, local, start, start + duration, rdma=False, fixed_bps=bps)),
    ]
    done = False
    try:
        await run.until(start + duration)
        done = True
    finally:
        if not done:
            for f in flows:
                bench.cut(f, run.now())
    result = tools.SockperfRun(
        address, port, tcp, duration, mps, size, tuple(samples), start + WARMUP_S, period
    )
    log = opts.get("--full-log")
    if log:
        directory = log.rsplit("/", 1)[0]
        if directory in bench.dirs.get(run.host.name, set()):
            bench.files.setdefault(run.host.name, {})[log] = tools.sockperf_full_log(result, valid)
    yield tools.sockperf_client(result, valid)
