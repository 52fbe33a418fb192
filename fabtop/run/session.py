"""Run the collectors for a config and feed a FabricState: one task per host, never a stall.

Shared by the dashboard and the headless commands; the only place that turns a
HostConfig into a transport and a probe command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from collectors.frames import Frame
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.probe import probe_args, probe_script
from collectors.runner import HostRunner, HostStatus
from collectors.samples import InferenceSample
from collectors.transport.base import Transport
from collectors.transport.local import LocalTransport
from collectors.transport.ssh import SshTransport
from fabtop.config import Config, HostConfig, check_metrics_url
from fabtop.core.state import UP, FabricState
from fabtop.run.discovery import DEFAULT_PORTS, PROBE_TIMEOUT_S, Discovery, probe_ports
from fabtop.run.focus import FocusSession

FrameTap = Callable[[str, Frame], None]


@dataclass(slots=True, frozen=True)
class MetricsReading:
    """One raw /metrics fetch as it came back: what a recording keeps and replay re-parses."""

    url: str
    status: int | None = None  # HTTP status; None when the fetch itself failed
    body: str | None = None
    error: str | None = None  # the one-line error when there was no response
    read_s: float | None = None  # local monotonic time the server read its counters (midpoint)


class EventTap(Protocol):
    """Sees everything that moves a FabricState, in order (a recorder)."""

    def frame(self, host: str, frame: Frame) -> None:
        """A frame is about to be applied."""

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        """A host's connection state is about to be applied."""

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        """One poll of a host's /metrics URLs is about to be applied."""

    def evaluated(self) -> None:
        """The rules were just run over the whole fabric."""


def inference_sample(reading: MetricsReading, where: str) -> InferenceSample:
    """Turn one raw /metrics fetch into an InferenceSample (live and replay share this)."""
    if reading.error is not None or reading.status is None:
        sample = InferenceSample(url=reading.url, error=reading.error or f"{where}: no response")
    elif reading.status != 200:
        sample = InferenceSample(url=reading.url, error=f"{where}: HTTP {reading.status}")
    else:
        sample = parse_inference_metrics(reading.body or "", reading.url)
    sample.read_s = reading.read_s
    return sample


def make_transport(host: HostConfig, config: Config) -> Transport:
    """The transport a host's config asks for (local subprocess or SSH)."""
    if host.ssh is None:
        return LocalTransport(name=host.name, env_path_prefix=list(host.path))
    kwargs: dict[str, object] = {}
    if config.known_hosts:
        kwargs["known_hosts"] = config.known_hosts
    if config.ssh_config:
        kwargs["config_paths"] = [config.ssh_config]
    return SshTransport(
        host.name, host.ssh.host, port=host.ssh.port, user=host.ssh.user, **kwargs  # type: ignore[arg-type]
    )


class Session:
    """Collect from every host of a config into ``state`` until stopped."""

    def __init__(
        self,
        config: Config,
        state: FabricState,
        transports: dict[str, Transport] | None = None,
        on_change: Callable[[], None] | None = None,
        tap: FrameTap | None = None,
        max_frames: int = 0,
        events: EventTap | None = None,
        discover_inference: bool = True,
        discovery_ports: tuple[int, ...] = DEFAULT_PORTS,
    ) -> None:
        self.config = config
        self.state = state
        self.transports = transports or {}
        self.on_change = on_change
        self.tap = tap
        self.max_frames = max_frames
        self.events = events
        self.discover_inference = discover_inference
        self.discovery_ports = discovery_ports
        self.discovery: dict[str, Discovery] = {}
        self.runners: dict[str, HostRunner] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self.focused: FocusSession | None = None

    def transport(self, host: HostConfig) -> Transport:
        """The host's transport, created on first use."""
        t = self.transports.get(host.name)
        if t is None:
            t = self.transports[host.name] = make_transport(host, self.config)
        return t

    def _on_frame(self, host: str, frame: Frame) -> None:
        if self.tap is not None:
            self.tap(host, frame)
        if self.events is not None:
            self.events.frame(host, frame)
        self.state.apply_frame(host, frame)
        if self.on_change is not None:
            self.on_change()

    def _on_status(self, host: str, status: HostStatus) -> None:
        if self.events is not None:
            self.events.status(host, status.state, status.error, status.rtt_s)
        self.state.apply_status(host, status.state, status.error, status.rtt_s)
        if self.on_change is not None:
            self.on_change()

    async def run(self) -> None:
        """Start one runner (and one /metrics poller) per host and wait until stopped."""
        script = probe_script()
        # Rules run once per tick over the whole fabric, not once per host frame (O(n^2)).
        self.state.evaluate_per_frame = False
        self._tasks.append(asyncio.create_task(self._evaluate_loop(), name="rules"))
        for host in self.config.hosts:
            args = probe_args(
                interval_ms=int(self.config.interval * 1000),
                sysfs=host.sysfs,
                path=list(host.path),
                interfaces=list(host.interfaces) if host.interfaces else None,
                max_frames=self.max_frames,
            )
            runner = HostRunner(
                host.name, self.transport(host), script, args,
                on_frame=self._on_frame, on_status=self._on_status,
                interval=self.config.interval,
            )
            self.runners[host.name] = runner
            self._tasks.append(asyncio.create_task(runner.run(), name=f"runner:{host.name}"))
            if host.inference or self.discover_inference:
                self._tasks.append(
                    asyncio.create_task(self._poll_inference(host), name=f"metrics:{host.name}")
                )
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self.stop()

    async def _evaluate_loop(self) -> None:
        # Evaluate as soon as every live host has sent its frame of this tick, or half an
        # interval after the first one, so a finding is at most half a tick late.
        step = self.config.interval / 5
        last_frames = {n: h.frames for n, h in self.state.hosts.items()}
        first_new: float | None = None
        while not self._stopping:
            await asyncio.sleep(step)
            hosts = self.state.hosts
            fresh = [n for n, h in hosts.items() if h.frames != last_frames.get(n)]
            if not fresh:
                continue
            now = time.monotonic()
            first_new = first_new if first_new is not None else now
            live = [n for n, h in hosts.items() if h.status == "up"]
            if set(live) <= set(fresh) or now - first_new >= self.config.interval / 2:
                last_frames = {n: h.frames for n, h in hosts.items()}
                first_new = None
                self.state.evaluate()
                if self.events is not None:
                    self.events.evaluated()
                if self.on_change is not None:
                    self.on_change()

    async def _poll_inference(self, host: HostConfig) -> None:
        # A poll starts only after the previous one finished, so slow servers never pile up.
        # Port discovery runs beside the polls in its own task: a port that accepts and
        # never answers delays nothing but the next discovery round.
        transport = self.transport(host)
        disc = self.discovery[host.name] = Discovery(
            configured=tuple(host.inference), ports=self.discovery_ports,
            enabled=self.discover_inference,
        )
        probing: asyncio.Task[dict[str, InferenceSample | bool | None]] | None = None
        was_up = False
        try:
            while not self._stopping:
                started = time.monotonic()
                hs = self.state.hosts.get(host.name)
                up = hs is not None and hs.status == UP
                if up and not was_up:
                    disc.reconnected()
                was_up = up
                if probing is not None and probing.done():
                    failed = probing.cancelled() or probing.exception() is not None
                    disc.update(started, {} if failed else probing.result())
                    probing = None
                if probing is None and disc.due(started, up):
                    disc.last_run = started  # a round in flight is not started twice
                    probing = asyncio.create_task(
                        probe_ports(transport, disc.candidates(), PROBE_TIMEOUT_S),
                        name=f"discover:{host.name}",
                    )
                urls = disc.urls()
                if urls:
                    timed = await asyncio.gather(
                        *(self._fetch_timed(transport, host, url) for url in urls)
                    )
                    raw = [r for r, _ in timed]
                    if self.events is not None:
                        self.events.metrics(host.name, raw)
                    readings = []
                    for r, _ in timed:
                        readings.append(inference_sample(r, f"{host.name}: {r.url}"))
                    self.state.apply_inference(host.name, readings)
                delay = self.config.interval - (time.monotonic() - started)
                if probing is not None:  # pick up a discovered server as soon as it answers
                    delay = min(delay, 0.1)
                await asyncio.sleep(max(0.05, delay))
        finally:
            if probing is not None:
                probing.cancel()

    async def _fetch_timed(
        self, transport: Transport, host: HostConfig, url: str
    ) -> tuple[MetricsReading, float]:
        # The server read its counters somewhere between request and response: the
        # midpoint is what rates divide by (see InferenceSample.read_s).
        sent = time.monotonic()
        reading = await self._fetch_raw(transport, host, url)
        read_s = (sent + time.monotonic()) / 2
        return dataclasses.replace(reading, read_s=read_s), read_s

    async def _fetch_raw(
        self, transport: Transport, host: HostConfig, url: str
    ) -> MetricsReading:
        where = f"{host.name}: {url}"
        try:
            h, port, path = check_metrics_url(url, where)
            status, body = await asyncio.wait_for(
                transport.http_get(h, port, path, timeout=self.config.interval * 2),
                timeout=self.config.interval * 2 + 1,
            )
        except Exception as e:  # a dead server is a status, never a crash
            return MetricsReading(url, error=f"{where}: {e or type(e).__name__}")
        return MetricsReading(url, status, body.decode("utf-8", errors="replace"))

    async def stop(self) -> None:
        """Stop every runner and close every transport."""
        if self._stopping:
            return
        self._stopping = True
        for r in self.runners.values():
            r.stop()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for tr in self.transports.values():
            with contextlib.suppress(Exception):
                await tr.close()

    # focus mode ----------------------------------------------------------------

    def focus(
        self, host: str, netdev: str, on_update: Callable[[], None] | None = None
    ) -> FocusSession:
        """Sample ``host``'s ``netdev`` every 250 ms on a second stream (replaces any focus)."""
        self.unfocus()
        cfg = next((h for h in self.config.hosts if h.name == host), None)
        if cfg is None:
            raise KeyError(f"no host {host!r} in this session")
        fs = FocusSession(
            host, netdev, self.transport(cfg), sysfs=cfg.sysfs, path=list(cfg.path),
            on_update=on_update,
        )
        self.focused = fs
        # In _tasks, so stop() ends the focus stream with everything else.
        self._tasks.append(fs.start())
        return fs

    def unfocus(self) -> None:
        """Stop the focus stream, if any; the normal streams are untouched."""
        fs = self.focused
        if fs is None:
            return
        fs.stop()
        self.focused = None
        if fs._task is not None and fs._task in self._tasks:
            self._tasks.remove(fs._task)
