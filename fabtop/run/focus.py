"""Focus mode: one port's pause counters sampled fast (250 ms) beside the normal stream.

A second probe runs on the same host's transport (another SSH channel, another local
process, another simulated stream) with ``ifaces=<netdev>`` and no GPU reads. Its frames
feed their own Pipeline (rate engine and short history), never the main FabricState:
interleaving 250 ms frames with the 1 s ones would confuse the main rate baselines and charts.

It stays a second stream rather than reusing the fast probe's PFC watchdog: the probe
takes nothing from fabtop after its script and arguments (no command channel to ask a
running probe for a port's series), and the watchdog sends events, not series. The focus
stream's own watchdog events are not lost: they go to the main state (``on_event``),
where a storm is named at once as from the main stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass

from collectors.frames import Frame
from collectors.guard import Guard
from collectors.probe import probe_args, probe_script
from collectors.runner import HostRunner, HostStatus, supervise
from collectors.samples import RateValue
from collectors.transport.base import HTTP_MAX_BODY, Transport
from fabtop.core.history import History
from fabtop.core.pipeline import Pipeline

FOCUS_INTERVAL_MS = 250
# Short tiers: focus is for watching the next minute, not for keeping history.
FOCUS_TIERS: tuple[tuple[float, int], ...] = ((FOCUS_INTERVAL_MS / 1000, 480),)


@dataclass(slots=True)
class FocusPoint:
    """One fast sample of the focused port: remote time and its per-second rates."""

    t: float  # remote unix seconds of the frame
    dt: float | None  # remote seconds since the previous frame
    rates: dict[str, RateValue]


@dataclass(slots=True)
class FocusStatus:
    """What the focus stream is doing, for the screen's title line."""

    state: str = "connecting"
    error: str | None = None
    frames: int = 0


class _Borrowed(Transport):
    """The host's transport, shared: streams run on it, but closing it is not ours to do."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.name = inner.name

    async def connect(self) -> None:
        """Open the shared connection if the main stream has not (a no-op when open)."""
        await self.inner.connect()

    def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        """A stream of its own on the shared connection; aclose() ends only this one."""
        return self.inner.stream(script, args)

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Delegated."""
        return await self.inner.run(argv, timeout)

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        """Delegated."""
        return await self.inner.http_get(host, port, path, timeout, max_bytes=max_bytes)

    async def close(self) -> None:
        """Nothing: the main runner owns the connection."""

    @property
    def rtt_s(self) -> float | None:
        """The shared connection's round trip."""
        return self.inner.rtt_s

    def describe(self) -> str:
        """The host's name with ``focus`` added."""
        return f"{self.inner.describe()} focus"


class FocusSession:
    """A fast probe on one port of one host; ``points`` holds its recent samples."""

    def __init__(
        self,
        host: str,
        netdev: str,
        transport: Transport,
        *,
        interval_ms: int = FOCUS_INTERVAL_MS,
        sysfs: str = "/sys",
        path: Sequence[str] = (),
        on_update: Callable[[], None] | None = None,
        keep: int = 240,
        probe: str = "auto",
        on_event: Callable[[str, Frame], None] | None = None,
        thresholds: Mapping[str, float] | None = None,
    ) -> None:
        self.host = host
        self.netdev = netdev
        self.interval_s = interval_ms / 1000
        self.on_update = on_update
        self.on_event = on_event
        self.points: deque[FocusPoint] = deque(maxlen=keep)
        self.status = FocusStatus()
        self.pipeline = Pipeline(History(tiers=FOCUS_TIERS))
        args = probe_args(
            interval_ms=interval_ms,
            sysfs=sysfs,
            path=list(path),
            interfaces=[netdev],
            gpu="off",
            probe=probe,
            thresholds=thresholds,  # its watchdog judges storms as the main stream's
        )
        self.runner = HostRunner(
            host,
            _Borrowed(transport),
            probe_script(),
            args,
            on_frame=self._on_frame,
            on_status=self._on_status,
            interval=self.interval_s,
        )
        self._task: asyncio.Task[None] | None = None

    @property
    def history(self) -> History:
        """The focus stream's own history (series keyed like the main one)."""
        return self.pipeline.history

    def start(self) -> asyncio.Task[None]:
        """Start streaming in a task of the running loop."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"focus:{self.host}/{self.netdev}")
        return self._task

    async def run(self) -> None:
        """Stream until stop(); reconnects like any runner, and restarts if it ever raised."""
        await supervise(f"{self.host} focus {self.netdev}", self.runner.run, self._failed)

    def _failed(self, line: str) -> None:
        if self.status.state != "stopped":
            self.status = FocusStatus("failing", line, self.status.frames)
        self._updated()

    def _updated(self) -> None:
        if self.on_update is not None:
            with Guard(f"{self.host} focus: on_update"):
                self.on_update()

    def stop(self) -> None:
        """End the focus stream (the host's main stream keeps running)."""
        self.runner.stop()
        self.status = FocusStatus("stopped", None, self.status.frames)

    async def aclose(self) -> None:
        """stop() and wait until the stream is closed."""
        self.stop()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5.0)

    def latest(self) -> FocusPoint | None:
        """The newest sample with rates, or None before the second frame."""
        return self.points[-1] if self.points else None

    def _on_frame(self, host: str, frame: Frame) -> None:
        if frame.event:  # a watchdog event: the main state's, never this series'
            if self.on_event is not None:
                self.on_event(host, frame)
            return
        guard = Guard(f"{host} focus {self.netdev}: frame dropped")
        with guard:  # a frame that cannot be used is said, like on the main stream
            sample, rates = self.pipeline.apply_frame(host, frame)
            t = frame.clock_ns / 1e9
            link = next(
                (
                    lr
                    for lid, lr in rates.links.items()
                    if lid == self.netdev or sample.links[lid].netdev == self.netdev
                ),
                None,
            )
            if link is not None and rates.interval_s is not None and not link.gap:
                self.points.append(FocusPoint(t, rates.interval_s, dict(link.rates)))
            self.status = FocusStatus("up", None, self.status.frames + 1)
        if guard.error is not None and self.status.state != "stopped":
            self.status = FocusStatus("failing", guard.error, self.status.frames)
        self._updated()

    def _on_status(self, host: str, status: HostStatus) -> None:
        del host
        if self.status.state != "stopped" and not (
            status.state == "up" and self.status.state == "failing"
        ):
            self.status = FocusStatus(status.state, status.error, self.status.frames)
        self._updated()
