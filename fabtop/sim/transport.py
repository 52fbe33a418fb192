"""The demo transport: a simulated host (fabtop.sim) behind the same interface as ssh/local.

Frames come from the simulation at the fabric's interval, stamped with the simulation
clock, so everything downstream runs the live code path unchanged: structured, as the
fast probe sends them (collectors/structured.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from urllib.parse import urlsplit

from collectors.launch import launch_script
from collectors.numbers import parse_uint
from collectors.structured import StructuredEncoder
from collectors.transport.base import HTTP_MAX_BODY, Transport
from fabtop.sim.fabric import Fabric
from fabtop.sim.host import SimHost
from fabtop.sim.launcher import launched
from fabtop.sim.watchdog import SimWatchdog


class SimClock:
    """Simulation seconds since the fabric started, shared by every host of one fabric.

    It runs ``speed`` times real time, or, ``stepped``, only when told to
    (:meth:`advance_to`): a test drives the simulation tick by tick and gets the same
    frames however busy the machine is.
    """

    def __init__(
        self,
        fabric: Fabric,
        speed: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        stepped: bool = False,
    ) -> None:
        self.fabric = fabric
        self.speed = speed
        self.stepped = stepped
        self._monotonic = monotonic
        self._t0 = monotonic()
        self._t = 0.0  # stepped: the simulation time it was advanced to
        # stepped: who waits for which simulation time (time, order, future)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """Current simulation time."""
        if self.stepped:
            return self._t
        return (self._monotonic() - self._t0) * self.speed

    async def sleep_until(self, t: float) -> None:
        """Return at simulation time ``t``: real time at ``speed``, or once advanced there."""
        if not self.stepped:
            wait = (t - self.now()) / self.speed
            if wait > 0:
                await asyncio.sleep(wait)
            return
        if t <= self._t + 1e-9:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (t, next(self._order), fut))
        await fut

    def advance_to(self, t: float) -> None:
        """Stepped: move the simulation to ``t`` and wake whoever waited for it."""
        self._t = max(self._t, t)
        while self._sleepers and self._sleepers[0][0] <= self._t + 1e-9:
            fut = heapq.heappop(self._sleepers)[2]
            if not fut.done():
                fut.set_result(None)

    @property
    def waiting(self) -> int:
        """Stepped: streams waiting for a later simulation time (done with the present)."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def tick(self) -> float:
        """Latest tick (a multiple of the interval) at or before now.

        Every host renders at ticks chosen this way, never at an earlier one, so the
        shared simulation only moves forward.
        """
        iv = self.fabric.interval_s
        return math.floor(self.now() / iv + 1e-9) * iv


class DemoTransport(Transport):
    """One simulated host; ``stream`` ignores the probe script and yields simulated frames."""

    def __init__(self, host: SimHost, clock: SimClock) -> None:
        self.name = host.name
        self.host = host
        self.clock = clock
        self._connected = False
        self._last_tick = -1.0

    def describe(self) -> str:
        """Short form used in messages."""
        return f"{self.name} (demo)"

    async def connect(self) -> None:
        """Fails once the simulated host has stopped answering."""
        if not self.host.answers(self.clock.now()):
            raise self.error("no route to host (simulated host stopped answering)")
        self._connected = True
        self.host.restart_probe()

    async def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        """One frame per tick, as the probe would print it; or, sent the launcher, what
        the node's test tool would print (fabtop.sim.launcher).

        ``interval_ms=`` and ``ifaces=`` are honoured as the probe would: a second
        stream on the same host (focus mode) runs at its own interval over its own
        netdevs, with its own tick bookkeeping, beside the first.
        """
        if not self._connected:
            raise self.error("not connected")
        if script == launch_script():  # a test tool (fabtop test): fabtop.sim.launcher
            async with contextlib.aclosing(launched(self, args)) as run:
                async for out in run:
                    yield out
            return
        # Otherwise the probe: the simulation stands in for it.
        opts = dict(a.partition("=")[::2] for a in args)
        fab = self.clock.fabric
        iv = fab.interval_s
        only: list[str] | None = None
        ms = parse_uint(opts.get("interval_ms", ""))
        if ms is not None:
            iv = ms / 1000
        if opts.get("ifaces"):
            only = opts["ifaces"].split(",")
        own = iv != fab.interval_s or only is not None
        last = self._last_tick if not own else -1.0
        # The fast probe's PFC watchdog runs on the main stream (a focus stream's would
        # only repeat it).
        wd = SimWatchdog(self.host, iv, args) if not own and self.host.ports else None
        enc = StructuredEncoder()  # counters by position, as the fast probe sends them
        while self._connected:
            tick = math.floor(self.clock.now() / iv + 1e-9) * iv
            nxt = max(last + iv, tick + iv)
            while wd is not None and (r := wd.next_read()) is not None and r < nxt - 1e-9:
                await self.clock.sleep_until(r)
                r = max(r, fab.grid_t)  # never behind the shared simulation
                if self.host.answers(r):
                    for ev in wd.read(r):
                        yield ev
                wd.after_read(r)
            await self.clock.sleep_until(nxt)
            tick = math.floor(self.clock.now() / iv + 1e-9) * iv
            # Never behind the shared simulation: going back would replay it from 0.
            t = max(nxt, tick, fab.grid_t)
            last = t
            if not own:
                self._last_tick = t
            if not self.host.answers(t):
                continue  # silent: the connection stays open and nothing arrives
            if own:
                yield self.host.frame(t, interval=iv, only=only, encoder=enc).encode()
            else:
                yield self.host.frame(t, encoder=enc).encode()
            if wd is not None:
                for ev in wd.read(t):
                    yield ev
                wd.after_read(t)

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Commands are not simulated: exit status 127, as for a missing tool."""
        cmd = argv[0] if argv else ""
        return 127, b"", f"sh: {cmd}: not found (simulated host)\n".encode()

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        """The simulated inference server's ``/metrics``; anything else is refused."""
        if not self.host.answers(self.clock.now()):
            await asyncio.sleep(timeout)
            raise self.error(f"timeout fetching http://{host}:{port}{path}")
        exo = self.host.cfg.exo_url
        if exo:
            u = urlsplit(exo)
            if (u.hostname, u.port or 80, u.path) == (host, port, path):
                return 200, self.host.exo_text(self.clock.tick()).encode()
            if (u.hostname, u.port or 80) == (host, port):
                return 404, b'{"detail":"Not Found"}'
        url = self.host.cfg.inference_url
        if url:
            u = urlsplit(url)
            if (u.hostname, u.port or 80) == (host, port) and (u.path or "/") == path:
                self.clock.fabric.at(max(self.clock.tick(), self.clock.fabric.grid_t))
                return 200, self.host.metrics_text().encode()
            if (u.hostname, u.port or 80) == (host, port):
                return 404, b"Not Found\n"
        raise self.error(f"connection refused: {host}:{port}")

    async def close(self) -> None:
        """Stop streaming."""
        self._connected = False


def sim_transports(
    fabric: Fabric, speed: float = 1.0, *, stepped: bool = False
) -> dict[str, DemoTransport]:
    """A transport per host of ``fabric``, all on one simulation clock (see SimClock)."""
    clock = SimClock(fabric, speed, stepped=stepped)
    return {name: DemoTransport(h, clock) for name, h in fabric.hosts.items()}
