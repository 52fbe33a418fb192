"""Prometheus exporter: ``fabtop export --listen ADDR:PORT`` (metric table in docs/EXPORT.md).

A custom prometheus-client Collector reads the FabricState at scrape time. The
HTTP server runs on the session's own asyncio loop, so a scrape never sees the state
half-updated and needs no lock. Labels are bounded: host, link, priority, gpu, url
(and rule/severity/subject on findings). Raw driver counter names are never labels:
only the normalized vocabulary (DESIGN §3) is exported, each as its own metric.
A value that is not finite (NaN, ±Inf) is absent, never a sample.

The server is bounded (DESIGN §10): at most :data:`MAX_CONNECTIONS` connections at
once, the rest wait in the kernel's listen queue; when every slot is taken, the oldest
connection still sending its request after :data:`PUSH_OUT_AFTER_S` (a slow or stuck
client: a real scrape sends its request at once) is pushed out for the next, so slow
clients can never lock real scrapes out. Every request has
:data:`REQUEST_DEADLINE_S` for reading the request and writing the whole answer. Scrapes
in a burst share one rendering (at most :data:`BODY_MAX_AGE_S` old), and errors reach
stderr through :class:`ErrorLog`, one line per :data:`LOG_EVERY_S` at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.normalize import SLOW_METRICS
from collectors.numbers import parse_uint
from collectors.text import clean
from collectors.vocabulary import BASE_UNITS, MICROSECONDS, Derived, InferenceRate
from collectors.vocabulary import Metric as VocabMetric
from fabtop.core.rules.context import lossless_prios
from fabtop.core.rules.gpu import thermal_slowdown
from fabtop.core.rules.pauses import PRIOS
from fabtop.core.state import UP, FabricState, effective_status, link_up
from fabtop.run.export_cable import cable_families
from fabtop.run.export_info import add_sample as _add
from fabtop.run.export_info import info_families, label, shard_info
from fabtop.run.exposition import families_of, render

# Open at once: above the 3000 concurrent scrapes a large fleet's tooling may send, so a
# burst fits whole; `fabtop export` raises its descriptor limit to hold it (fd_room()).
MAX_CONNECTIONS = 4096
FD_RESERVE = 256  # descriptors kept for the session (SSH, probes, /metrics polls)
REQUEST_DEADLINE_S = 10.0  # read the request and write the whole answer, or the socket goes
MAX_HEADER_LINES = 100
BODY_MAX_AGE_S = 0.25  # scrapes this close together share one rendering of the state
LOG_EVERY_S = 10.0
# Connections past MAX_CONNECTIONS wait here, in the kernel, until a slot frees.
ACCEPT_BACKLOG = 1024
# With every slot taken, a connection still sending its request after this long is pushed
# out for the next one: a real scrape sends its request at once.
PUSH_OUT_AFTER_S = 1.0

# Every normalized link counter, exported as fabtop_link_<name>_total.
LINK_COUNTERS: tuple[VocabMetric, ...] = tuple(VocabMetric)
# A normalized name ends in its unit (rx_pause_us); Prometheus wants the base unit in the
# name instead (rx_pause_seconds) and the value scaled to it.
_UNIT_SUFFIX: dict[str, str] = {MICROSECONDS: "_us"}
COUNTER_UNITS: dict[str, tuple[str, float]] = {
    m: (f"{m.removesuffix(_UNIT_SUFFIX[m.unit])}_{BASE_UNITS[m.unit][0]}", BASE_UNITS[m.unit][1])
    for m in LINK_COUNTERS
    if m.unit in BASE_UNITS
}


# The scale of each counter's value to its exported unit, looked up once a sample.
_COUNTER_SCALE: dict[str, float] = {m: COUNTER_UNITS.get(m, (m, 1.0))[1] for m in LINK_COUNTERS}
_PRIO_TEXT = {p: str(p) for p in PRIOS}  # a priority label's text


def counter_name(m: VocabMetric) -> str:
    """The family a normalized counter is exported as (its samples: ``<name>_total``)."""
    return f"fabtop_link_{COUNTER_UNITS.get(m, (m, 1.0))[0]}"


def _per_second(m: VocabMetric, over: str = "over the last interval") -> tuple[str, str, str]:
    return m.per_s, f"fabtop_link_{m}_per_second", f"{m.help}, per second {over}"


# Per-link gauges of the rate engine: rate name -> (metric, help).
LINK_GAUGES: tuple[tuple[str, str, str], ...] = (
    _per_second(VocabMetric.RX_BYTES),
    _per_second(VocabMetric.TX_BYTES),
    # read on optics rounds: the rate between the last two reads (fabtop/core/rates.py)
    *(_per_second(m, "between the last two reads") for m in sorted(SLOW_METRICS)),
    *(
        (d, f"fabtop_link_{d}", d.help)
        for d in (Derived.RX_PAUSE_TIME_RATIO, Derived.TX_PAUSE_TIME_RATIO, Derived.RDMA_SHARE)
    ),
)

# GpuSample field -> (metric, help, scale to base units).
GPU_GAUGES: tuple[tuple[str, str, str, float], ...] = (
    ("utilization_pct", "fabtop_gpu_utilization_percent", "GPU utilization", 1.0),
    ("memory_used_mib", "fabtop_gpu_memory_used_bytes", "GPU memory used", 1048576.0),
    ("memory_total_mib", "fabtop_gpu_memory_total_bytes", "GPU memory size", 1048576.0),
    ("power_w", "fabtop_gpu_power_watts", "GPU power draw", 1.0),
    ("temperature_c", "fabtop_gpu_temperature_celsius", "GPU core temperature", 1.0),
    (
        "memory_temperature_c",
        "fabtop_gpu_memory_temperature_celsius",
        "GPU memory (HBM) temperature",
        1.0,
    ),
    ("sm_clock_mhz", "fabtop_gpu_sm_clock_hertz", "GPU SM clock", 1e6),
)


class FabricCollector(Collector):
    """Builds every metric family from the FabricState at scrape time."""

    def __init__(self, state: FabricState, shard: str | None = None) -> None:
        self.state = state
        self.shard = shard  # --shard: on each host's fabtop_host_up and in fabtop_shard_info

    def collect(self) -> Iterator[Metric]:
        """One pass over the state."""
        st = self.state
        shard = self.shard or ""
        up = GaugeMetricFamily(
            "fabtop_host_up",
            "1 when the host's frames arrive (shard: the exporter that owns the host)",
            labels=["host", "shard"],
        )
        frames = CounterMetricFamily(
            "fabtop_host_frames", "Frames received from the host", labels=["host"]
        )
        counters: dict[str, CounterMetricFamily] = {
            m: CounterMetricFamily(
                counter_name(m),
                f"{m.help} (normalized {m}, DESIGN §3)",
                labels=["host", "link", "priority"],
            )
            for m in LINK_COUNTERS
        }
        links_up = GaugeMetricFamily(
            "fabtop_link_up",
            "1 when the link is up (netdev up, RDMA port ACTIVE)",
            labels=["host", "link"],
        )
        speed = GaugeMetricFamily(
            "fabtop_link_speed_bytes_per_second", "Link speed", labels=["host", "link"]
        )
        temp = GaugeMetricFamily(
            "fabtop_link_temperature_celsius", "NIC/module temperature", labels=["host", "link"]
        )
        # What the lossless rules read (the QoS tool's PFC map, else mlx5's counter names),
        # so the alerts on pauses without PFC and drops on a lossless priority can be
        # written in PromQL (deploy/prometheus, docs/EXPORT.md).
        pfc = GaugeMetricFamily(
            "fabtop_link_pfc_enabled",
            "1 when PFC is enabled on the priority, 0 when not (absent: not known)",
            labels=["host", "link", "priority"],
        )
        gauges = {
            r: GaugeMetricFamily(m, h, labels=["host", "link", "priority"])
            for r, m, h in LINK_GAUGES
        }
        gpus = {f: GaugeMetricFamily(m, h, labels=["host", "gpu"]) for f, m, h, _ in GPU_GAUGES}
        slowdown = GaugeMetricFamily(
            "fabtop_gpu_thermal_slowdown",
            "Clocks held down for heat: 0 no, 1 software (driver), 2 hardware (board)",
            labels=["host", "gpu"],
        )
        tokens = GaugeMetricFamily(
            "fabtop_inference_generated_tokens_per_second",
            "Generated tokens per second",
            labels=["host", "url"],
        )
        tokens_total = CounterMetricFamily(
            "fabtop_inference_generated_tokens", "Generated tokens", labels=["host", "url"]
        )
        running = GaugeMetricFamily(
            "fabtop_inference_requests_running", "Requests running", labels=["host", "url"]
        )
        waiting = GaugeMetricFamily(
            "fabtop_inference_requests_waiting", "Requests waiting", labels=["host", "url"]
        )
        now = st.now()
        for hname, hs in st.hosts.items():
            name = label(hname)
            # A host gone silent is stale, never up: the same status its finding reads.
            live = effective_status(hs, now, st.interval) == UP
            up.add_metric([name, shard], 1.0 if live and hs.sample is not None else 0.0)
            _add(frames, [name], hs.frames, priority=False)
            s = hs.sample
            if s is None:
                continue
            rates = hs.rates.links if hs.rates is not None else {}
            for link_id, link in s.links.items():
                lab = [name, label(link_id)]  # every family's sample copies it (add_metric)
                links_up.add_metric(lab, 1.0 if link_up(link.state) else 0.0)
                _add(speed, lab, link.rate_gbps, 1e9 / 8, priority=False)
                _add(temp, lab, link.temperature_c, priority=False)
                lossless = lossless_prios(link)
                if lossless is not None:
                    for p in PRIOS:
                        pfc.add_metric([*lab, _PRIO_TEXT[p]], 1.0 if p in lossless else 0.0)
                for n, v in link.metrics.items():
                    cfam = counters.get(n)
                    if cfam is not None:
                        _add(cfam, lab, v, _COUNTER_SCALE[n])
                lr = rates.get(link_id)
                if lr is not None:
                    for r, gfam in gauges.items():
                        rv = lr.rates.get(r)
                        if rv is not None:
                            _add(gfam, lab, rv)
            for g in s.gpus:
                for f, _, _, scale in GPU_GAUGES:
                    _add(gpus[f], [name, str(g.index)], getattr(g, f), scale, priority=False)
                slowdown.add_metric([name, str(g.index)], float(thermal_slowdown(g)))
            inf_rates = hs.rates.inference if hs.rates is not None else {}
            for inf in s.inference:
                lab = [name, label(inf.url)]
                rate = (inf_rates.get(inf.url) or {}).get(InferenceRate.GENERATED_TOKENS_PER_S)
                _add(tokens, lab, rate, priority=False)
                _add(tokens_total, lab, inf.generated_tokens_total, priority=False)
                _add(running, lab, inf.requests_running, priority=False)
                _add(waiting, lab, inf.requests_waiting, priority=False)
        # host, link (the link's id) and priority: what the finding is about as keys, so
        # a reader needs no parsing of the subject (""  where it is about none).
        finding = GaugeMetricFamily(
            "fabtop_finding",
            "1 for each current health finding",
            labels=["rule", "severity", "subject", "host", "link", "priority"],
        )
        seen: set[tuple[str, str, str]] = set()
        for fd in st.findings:
            key = (fd.rule, label(fd.severity), label(fd.subject))
            if key not in seen:  # one series per label set, whatever the rule emitted
                seen.add(key)
                about = (
                    label(fd.host),
                    label(fd.port.link if fd.port is not None else None),
                    "" if fd.priority is None else str(fd.priority),
                )
                finding.add_metric([*key, *about], 1.0)
        # A source the hosts come through (Prometheus): 0 while it does not answer, so an
        # empty fabric is told apart from an unreachable one.
        source_up = GaugeMetricFamily(
            "fabtop_source_up",
            "1 when the source the hosts come through answered",
            labels=["source"],
        )
        for src in st.sources.values():
            source_up.add_metric([label(src.name)], 1.0 if src.up else 0.0)
        yield from shard_info(self.shard, len(st.hosts))
        yield from (up, frames, links_up, speed, temp)
        if pfc.samples:
            yield pfc
        if slowdown.samples:
            yield slowdown
        yield from (fam for fam in counters.values() if fam.samples)
        yield from (fam for fam in gauges.values() if fam.samples)
        yield from (fam for fam in gpus.values() if fam.samples)
        yield from (tokens, tokens_total, running, waiting, finding)
        if source_up.samples:
            yield source_up
        yield from info_families(st)
        yield from cable_families(st)  # issue 33: optics, FEC, health reporters, BER


def registry_for(state: FabricState, shard: str | None = None) -> CollectorRegistry:
    """A registry holding only fabtop's collector (no process/platform noise)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(FabricCollector(state, shard))
    return reg


def fd_room(want: int = MAX_CONNECTIONS) -> int:
    """Raise this process's descriptor soft limit toward its hard limit; the connection cap
    that fits (``want``, or less when the hard limit is low; never under 64)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    goal = want + FD_RESERVE if hard == resource.RLIM_INFINITY else min(hard, want + FD_RESERVE)
    if goal > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (goal, hard))
            soft = goal
    return max(64, min(want, soft - FD_RESERVE))


class ErrorLog:
    """Errors on stderr at most one line per ``every_s``, with a count of those held back.

    A flood of bad clients must not become a flood of tracebacks: each line is the
    message alone, cleaned and on one line.
    """

    def __init__(
        self,
        every_s: float = LOG_EVERY_S,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        command: str = "export",
    ) -> None:
        self.every_s = every_s
        self.command = command  # the line's prefix: fabtop: COMMAND: ...
        self.stream = stream
        self.clock = clock
        self.suppressed = 0
        self._last: float | None = None

    def say(self, line: str) -> None:
        """Write ``line`` unless one was written less than ``every_s`` ago."""
        now = self.clock()
        if self._last is not None and now - self._last < self.every_s:
            self.suppressed += 1
            return
        more = (
            f" ({self.suppressed} more in the last {self.every_s:g} s not shown)"
            if self.suppressed
            else ""
        )
        self._last, self.suppressed = now, 0
        out = self.stream or sys.stderr
        out.write(f"fabtop: {self.command}: {clean(line, 300)}{more}\n")
        out.flush()

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """For ``loop.set_exception_handler``: asyncio's errors (accept failing when out of
        descriptors, a transport's fatal error) as rate-limited lines, no traceback."""
        exc = context.get("exception")
        msg = str(context.get("message") or "asyncio error")
        self.say(f"{msg}: {type(exc).__name__}: {exc}" if exc is not None else msg)

    def install(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """Route the loop's and the ``asyncio`` logger's errors here; returns the undo."""
        log = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                log.say(record.getMessage())

        logger = logging.getLogger("asyncio")
        handler, propagate = _Handler(logging.WARNING), logger.propagate
        old = loop.get_exception_handler()
        loop.set_exception_handler(self.exception_handler)
        logger.addHandler(handler)
        logger.propagate = False

        def undo() -> None:
            loop.set_exception_handler(old)
            logger.removeHandler(handler)
            logger.propagate = propagate

        return undo


class _Body:
    """The exposition, rendered at most once per ``max_age_s`` (a burst of scrapes shares it).

    The families are read on the loop, so the state is one instant (the collection is
    the only part that holds the loop: 0.4 s for a 128-host shard); they are written out
    in a thread (their samples are plain strings and numbers), so the session goes on
    reading its hosts while a 12 MB body is formatted.
    """

    def __init__(self, registry: CollectorRegistry, max_age_s: float) -> None:
        self.registry, self.max_age_s = registry, max_age_s
        self._body: bytes | None = None
        self._at = 0.0
        self._pending: asyncio.Task[bytes] | None = None

    async def get(self) -> bytes:
        if self._body is not None and time.monotonic() - self._at <= self.max_age_s:
            return self._body
        if self._pending is None:
            self._pending = asyncio.create_task(self._render())
        # shield: a scrape that gives up (its deadline) never cancels the others' body
        return await asyncio.shield(self._pending)

    async def _render(self) -> bytes:
        try:
            at = time.monotonic()
            families = families_of(self.registry)
            body = await asyncio.to_thread(render, families)
            self._body, self._at = body, at
            return body
        finally:
            self._pending = None


class _Reader(asyncio.StreamReader):
    """A StreamReader that notes, as bytes arrive, when the request's headers are complete.

    Whether a client is slow is about what it sent, not about when fabtop got round to
    reading it: a burst of real scrapes waits on fabtop, a slowloris on itself.
    """

    def __init__(self) -> None:
        super().__init__(limit=2**16)
        self.request_in = False
        self._tail = b""

    def feed_data(self, data: bytes) -> None:  # type: ignore[override]
        if not self.request_in:
            seen = self._tail + data
            self.request_in = b"\r\n\r\n" in seen or b"\n\n" in seen
            self._tail = seen[-3:]
        super().feed_data(data)


class _Conn:
    __slots__ = ("reader", "since", "writer")

    def __init__(self, reader: _Reader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.since = time.monotonic()


class MetricsServer:
    """The exporter's listening socket and its accept loop (``close()`` stops both)."""

    def __init__(
        self,
        sock: socket.socket,
        task: asyncio.Task[None],
        conns: dict[asyncio.StreamWriter, _Conn],
    ) -> None:
        self.sockets = [sock]
        self._task, self._conns = task, conns

    def close(self) -> None:
        """Stop accepting and drop every open connection."""
        self._task.cancel()
        self.sockets[0].close()
        for c in list(self._conns.values()):
            c.writer.transport.abort()
        self._conns.clear()


async def serve(
    registry: CollectorRegistry,
    host: str,
    port: int,
    *,
    max_connections: int = MAX_CONNECTIONS,
    deadline_s: float = REQUEST_DEADLINE_S,
    log: ErrorLog | None = None,
) -> MetricsServer:
    """Serve ``GET /metrics`` (and ``/``) on the running loop, bounded as the module says.

    fabtop accepts a connection only when it has a free slot: the others wait in the
    kernel's listen queue, so a burst of real scrapes is answered in turn, never turned
    away. A full table pushes out its oldest connection still sending its request after
    :data:`PUSH_OUT_AFTER_S` (a slow client), so slow clients cannot keep the others out.
    """
    errors = log or ErrorLog()
    body = _Body(registry, BODY_MAX_AGE_S)
    conns: dict[asyncio.StreamWriter, _Conn] = {}  # insertion order: oldest first
    room = asyncio.Event()
    loop = asyncio.get_running_loop()
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    sock = socket.create_server((host, port), family=family, backlog=ACCEPT_BACKLOG)
    sock.setblocking(False)
    handlers: set[asyncio.Task[None]] = set()
    active = [0]  # connections accepted and not yet closed, set up or not

    def push_out_one() -> bool:
        now = time.monotonic()
        for c in conns.values():  # oldest first
            if not c.reader.request_in and now - c.since >= PUSH_OUT_AFTER_S:
                del conns[c.writer]
                c.writer.transport.abort()  # its reader sees EOF; it never gets an answer
                return True
        return False

    async def accept_loop() -> None:
        while True:
            # Every handler alive holds a descriptor, its connection set up or not yet.
            while active[0] >= max_connections:
                room.clear()
                push_out_one()  # its handler ends at once and sets room
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(room.wait(), 0.1)
            try:
                client, _ = await loop.sock_accept(sock)
            except OSError as e:  # out of descriptors, say: wait, never spin or flood stderr
                errors.say(f"accept failed: {e.strerror or e}")
                await asyncio.sleep(0.1)
                continue
            active[0] += 1
            task = asyncio.create_task(handle(client))
            handlers.add(task)
            task.add_done_callback(handlers.discard)

    async def handle(client: socket.socket) -> None:
        try:
            await serve_one(client)
        finally:
            active[0] -= 1
            room.set()

    async def serve_one(client: socket.socket) -> None:
        reader = _Reader()
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=client)
        except OSError:
            client.close()
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        conns[writer] = _Conn(reader, writer)
        done = False
        try:
            async with asyncio.timeout(deadline_s):
                await answer(reader, writer)
            done = True
        except (TimeoutError, ConnectionError, ValueError):  # ValueError: a 64 KiB+ line
            pass
        except Exception as e:
            errors.say(f"a request failed: {type(e).__name__}: {e}")
        finally:
            conns.pop(writer, None)
            if done:
                writer.close()
            else:
                writer.transport.abort()  # never wait to flush to a client that stopped

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        for _ in range(MAX_HEADER_LINES):
            h = await reader.readline()
            if not h.strip():
                break  # headers: nothing in them changes the answer
        if not line.endswith(b"\n") or writer.transport.is_closing():
            return  # the client left (or was pushed out) before its request was in
        parts = line.decode("latin-1").split()
        path = parts[1] if len(parts) > 1 else "/"
        if path.split("?")[0] in ("/metrics", "/"):
            try:
                data, status = await body.get(), "200 OK"
            except Exception as e:  # a collector bug: a 500 and a line, never a traceback
                errors.say(f"rendering /metrics failed: {type(e).__name__}: {e}")
                data, status = b"internal error\n", "500 Internal Server Error"
            ctype = "text/plain; version=0.0.4; charset=utf-8"
        else:
            data, status, ctype = b"not found\n", "404 Not Found", "text/plain"
        # drain() then returns only once the kernel took every byte: the deadline covers
        # the whole answer, not only the part over the high-water mark.
        writer.transport.set_write_buffer_limits(high=0)
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    return MetricsServer(sock, asyncio.create_task(accept_loop()), conns)


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:9877`` / ``[::1]:9877`` / ``:9877`` -> (host, port); raises ValueError."""
    host, sep, port = text.rpartition(":")
    n = parse_uint(port) if sep else None  # ASCII digits only: "²" is no port
    if n is None or not 0 < n < 65536:
        raise ValueError(f"--listen {text!r}: want HOST:PORT, e.g. 127.0.0.1:9877")
    return host.strip("[]") or "127.0.0.1", n


# A shard name is a label value and a systemd instance name: short, plain words.
_SHARD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def parse_shard(text: str | None) -> str | None:
    """``--shard NAME``: letters, digits, ``_.-``, at most 63; raises ValueError."""
    if text is None:
        return None
    if _SHARD.fullmatch(text) is None:
        raise ValueError(
            f"--shard {clean(text, 80)!r}: want a short name of letters, digits, '_', '.' "
            "or '-' (at most 63), e.g. --shard rack1"
        )
    return text
