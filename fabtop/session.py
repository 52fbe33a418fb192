"""Run the collectors for a config and feed a FabricState: one task per host, never a stall.

Shared by the dashboard and the headless commands; the only place that turns a
HostConfig into a transport and a probe command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from collectors.frames import Frame
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.probe import probe_args, probe_script
from collectors.runner import HostRunner, HostStatus
from collectors.transport.base import Transport
from collectors.transport.local import LocalTransport
from fabtop.config import Config, HostConfig, check_metrics_url
from fabtop.model import InferenceSample
from fabtop.state import FabricState

FrameTap = Callable[[str, Frame], None]


def make_transport(host: HostConfig, config: Config) -> Transport:
    """The transport a host's config asks for (local subprocess or SSH)."""
    if host.ssh is None:
        return LocalTransport(name=host.name, env_path_prefix=list(host.path))
    from collectors.transport.ssh import SshTransport

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
    ) -> None:
        self.config = config
        self.state = state
        self.transports = transports or {}
        self.on_change = on_change
        self.tap = tap
        self.max_frames = max_frames
        self.runners: dict[str, HostRunner] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def transport(self, host: HostConfig) -> Transport:
        """The host's transport, created on first use."""
        t = self.transports.get(host.name)
        if t is None:
            t = self.transports[host.name] = make_transport(host, self.config)
        return t

    def _on_frame(self, host: str, frame: Frame) -> None:
        if self.tap is not None:
            self.tap(host, frame)
        self.state.apply_frame(host, frame)
        if self.on_change is not None:
            self.on_change()

    def _on_status(self, host: str, status: HostStatus) -> None:
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
            if host.inference:
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
                if self.on_change is not None:
                    self.on_change()

    async def _poll_inference(self, host: HostConfig) -> None:
        # A poll starts only after the previous one finished, so slow servers never pile up.
        transport = self.transport(host)
        while not self._stopping:
            started = time.monotonic()
            readings = await asyncio.gather(
                *(self._fetch_metrics(transport, host, url) for url in host.inference)
            )
            self.state.apply_inference(host.name, list(readings))
            delay = self.config.interval - (time.monotonic() - started)
            await asyncio.sleep(max(0.05, delay))

    async def _fetch_metrics(
        self, transport: Transport, host: HostConfig, url: str
    ) -> InferenceSample:
        where = f"{host.name}: {url}"
        try:
            h, port, path = check_metrics_url(url, where)
            status, body = await asyncio.wait_for(
                transport.http_get(h, port, path, timeout=self.config.interval * 2),
                timeout=self.config.interval * 2 + 1,
            )
        except Exception as e:  # a dead server is a status, never a crash
            return InferenceSample(url=url, error=f"{where}: {e or type(e).__name__}")
        if status != 200:
            return InferenceSample(url=url, error=f"{where}: HTTP {status}")
        return parse_inference_metrics(body.decode("utf-8", errors="replace"), url)

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
