"""Run the collectors for a config and feed a FabricState: one task per host, never a stall.

Shared by the dashboard and the headless commands; the only place that turns a
HostConfig into a transport and a probe command line. Every task here runs under
:func:`~collectors.runner.supervise` and every step under :class:`~collectors.guard.Guard`:
one host's failure is a line on that host, and every other host keeps streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from collectors.frames import Frame
from collectors.gate import ConnectGate
from collectors.guard import Guard, failure_line
from collectors.lag import LoopLag
from collectors.parsers.inference_page import parse_inference_page
from collectors.probe import probe_args, probe_script
from collectors.runner import HostRunner, HostStatus, OffLoop, supervise
from collectors.samples import InferenceSample
from collectors.text import clean
from collectors.transport.base import Transport
from collectors.transport.local import LocalTransport
from collectors.transport.ssh import SshTransport
from fabtop.config import Config, HostConfig, check_metrics_url
from fabtop.core.state import DOWN, UP, FabricState
from fabtop.run.discovery import DEFAULT_PORTS, PROBE_TIMEOUT_S, Discovery, probe_ports
from fabtop.run.focus import FocusSession

FrameTap = Callable[[str, Frame], None]

# A /metrics parse runs in a worker thread; one that takes longer than this is given up
# on (its host's reading says so) and that URL is not parsed again until it finished.
PARSE_DEADLINE_S = 5.0
# Hosts between "connecting" and their first frame at once. 256 handshakes and probe
# starts at one moment overran a bastion's MaxStartups (OpenSSH: 10:30:100) and, on
# one machine, its CPUs: every slow start was reconnected, a livelock. 32 keep a
# 64-host fabric up in two rounds and 256 in eight.
CONNECTS_AT_ONCE = 32
# ... and while fabtop's own loop is behind (the machine it runs on is busy, as when the
# nodes' starts share its CPUs), this many: each start adds to what it is behind on.
CONNECTS_WHILE_BEHIND = 4


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

    def frame(self, host: str, frame: Frame, arrived_unix: float | None = None) -> None:
        """A frame is about to be applied; it arrived at ``arrived_unix`` (operator's clock)."""

    def stalled(self, late_s: float) -> None:
        """fabtop's own event loop just caught up after ``late_s`` seconds behind."""

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        """A host's connection state is about to be applied."""

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        """One poll of a host's /metrics URLs is about to be applied."""

    def evaluated(self) -> None:
        """The rules were just run over the whole fabric."""


def inference_sample(reading: MetricsReading, where: str) -> InferenceSample:
    """Turn one raw /metrics fetch into an InferenceSample (live and replay share this)."""
    if reading.error is not None or reading.status is None:
        # A transport's error can quote what the server sent (a status line, a reason).
        error = clean(reading.error) if reading.error else f"{clean(where)}: no response"
        sample = InferenceSample(url=clean(reading.url), error=error)
    elif reading.status != 200:
        sample = InferenceSample(
            url=clean(reading.url), error=f"{clean(where)}: HTTP {reading.status}"
        )
    else:
        # By path: /metrics text, exo's /state, mlx_lm's /v1/models.
        sample = parse_inference_page(reading.body or "", reading.url)
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
        # One a config file names runs no local command unless the operator said so.
        kwargs["config_commands"] = config.allow_ssh_commands
    return SshTransport(
        host.name,
        host.ssh.host,
        port=host.ssh.port,
        user=host.ssh.user,
        **kwargs,  # type: ignore[arg-type]
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
        # A host is stale after 2.5 of these intervals without a frame (a finding).
        state.interval = config.interval
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
        self.parser = OffLoop(deadline_s=max(PARSE_DEADLINE_S, 2 * config.interval))
        # fabtop's own event loop: how late it wakes. The runners' watchdogs and the state
        # read the same stalls, so the time fabtop was behind is nobody's silence.
        self.lag = LoopLag()
        if state.attach_lag(self.lag):  # (a state on a test's clock reads no loop lag)
            self.lag.on_stall = self._stalled  # a recording keeps them: replay says the same
        # Hosts with a frame used since the last rules run, and how many it waits for (the
        # hosts up then): the rules run as soon as each has sent its frame of the tick.
        self._fresh: set[str] = set()
        self._expect = len(config.hosts)
        self._all_fresh = asyncio.Event()
        # Failures of the session's own tasks (the rules loop), newest last.
        self.failures: deque[str] = deque(maxlen=20)

    def transport(self, host: HostConfig) -> Transport:
        """The host's transport, created on first use."""
        t = self.transports.get(host.name)
        if t is None:
            t = self.transports[host.name] = make_transport(host, self.config)
        return t

    def _on_frame(self, host: str, frame: Frame) -> None:
        arrived = self.state.wall()  # where this frame sits on the operator's time axis
        guard = Guard(f"{host}: recording the frame failed")
        with guard:
            if self.tap is not None:
                self.tap(host, frame)
            if self.events is not None:
                self.events.frame(host, frame, arrived_unix=arrived)
        if guard.error is not None:
            self.state.warn(host, guard.error)
        # Guarded inside: a frame that cannot be used marks its host failing, nothing raises.
        self.state.apply_frame(host, frame, arrived_unix=arrived)
        if not frame.event:
            self._fresh.add(host)
            if len(self._fresh) >= self._expect:
                self._all_fresh.set()
        self._changed()

    def _on_status(self, host: str, status: HostStatus) -> None:
        with Guard(f"{host}: recording the status failed"):
            if self.events is not None:
                self.events.status(host, status.state, status.error, status.rtt_s)
        self.state.apply_status(host, status.state, status.error, status.rtt_s)
        self._changed()

    def _stalled(self, start: float, end: float) -> None:
        with Guard("recording fabtop's own lag failed"):
            if self.events is not None:
                self.events.stalled(end - start)

    def _changed(self) -> None:
        if self.on_change is not None:
            with Guard("on_change"):
                self.on_change()

    def _spawn(
        self, name: str, work: Callable[[], Awaitable[None]], on_failure: Callable[[str], None]
    ) -> None:
        """A supervised task: one that raises is reported and started again, never gone."""
        self._tasks.append(asyncio.create_task(supervise(name, work, on_failure), name=name))

    def _host_down(self, host: str, line: str) -> None:
        self.state.apply_status(host, DOWN, line)
        self._changed()

    def _host_warning(self, host: str, line: str) -> None:
        self.state.warn(host, line)
        self._changed()

    async def run(self) -> None:
        """Start one runner (and one /metrics poller) per host and wait until stopped."""
        script = probe_script()
        # Rules run once per tick over the whole fabric, not once per host frame (O(n^2)).
        self.state.evaluate_per_frame = False
        self._spawn("loop lag", self.lag.run, self.failures.append)
        self._spawn("rules", self._evaluate_loop, self.failures.append)
        gate = ConnectGate(CONNECTS_AT_ONCE, self.lag, CONNECTS_WHILE_BEHIND)
        for host in self.config.hosts:
            name = host.name
            guard = Guard(f"{name}: probe arguments")
            with guard:  # the config was checked at load; a Config built in code may not be
                args = self.probe_argv(host)
            if guard.error is not None:
                self._host_down(name, guard.error)
                continue
            runner = HostRunner(
                name,
                self.transport(host),
                script,
                args,
                on_frame=self._on_frame,
                on_status=self._on_status,
                interval=self.config.interval,
                gate=gate,
                lag=self.lag,
            )
            self.runners[name] = runner
            self._spawn(f"{name}: collector", runner.run, partial(self._host_down, name))
            if host.inference or self.discover_inference:
                self._spawn(
                    f"{name}: /metrics poller",
                    partial(self._poll_inference, host),
                    partial(self._host_warning, name),
                )
        try:
            # Not gather: no task's end or exception ends the others (they never raise).
            await asyncio.wait(list(self._tasks))
        finally:
            await self.stop()

    def probe_argv(self, host: HostConfig) -> list[str]:
        """The probe's argument words for ``host`` (ProbeArgError when one is refused).

        The fast probe's PFC watchdog is told the storm thresholds the rules judge frames
        by (the state's effective ones, the config's ``[thresholds]`` over the defaults):
        one set of numbers for both verdicts.
        """
        return probe_args(
            interval_ms=int(self.config.interval * 1000),
            sysfs=host.sysfs,
            path=list(host.path),
            interfaces=list(host.interfaces) if host.interfaces else None,
            max_frames=self.max_frames,
            probe=host.probe,
            fw_sudo=host.firewall_sudo,
            optics_sudo=host.optics_sudo,
            mlxlink=host.optics_mlxlink,
            thresholds=self.state.thresholds,
        )

    async def _evaluate_loop(self) -> None:
        # Evaluate as soon as every live host has sent its frame of this tick (the last of
        # them wakes this loop), or half an interval after the first one, so a finding is
        # at most half a tick late.
        step = self.config.interval / 5
        first_new: float | None = None
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_fresh.wait(), step)
            self._all_fresh.clear()
            fresh = self._fresh
            if not fresh:
                continue
            now = time.monotonic()
            first_new = first_new if first_new is not None else now
            live = {n for n, h in self.state.hosts.items() if h.status == UP}
            if live <= fresh or now - first_new >= self.config.interval / 2:
                self._fresh = set()
                self._expect = max(1, len(live))
                first_new = None
                self.state.evaluate()
                with Guard("recording the evaluation failed"):
                    if self.events is not None:
                        self.events.evaluated()
                self._changed()

    async def _poll_inference(self, host: HostConfig) -> None:
        # A poll starts only after the previous one finished, so slow servers never pile up.
        # Port discovery runs beside the polls in its own task: a port that accepts and
        # never answers delays nothing but the next discovery round. Bodies are parsed in
        # worker threads (self.parser): a huge page costs its own host, not the loop.
        transport = self.transport(host)
        disc = self.discovery.get(host.name)
        if disc is None:  # kept across a restart of this task: what was found stays found
            disc = self.discovery[host.name] = Discovery(
                configured=tuple(host.inference),
                ports=self.discovery_ports,
                enabled=self.discover_inference,
            )
        probing: asyncio.Task[dict[str, InferenceSample | bool | None]] | None = None
        was_up = False
        try:
            while not self._stopping:
                started = time.monotonic()
                hs = self.state.hosts.get(host.name)
                up = hs is not None and hs.connected
                if up and not was_up:
                    disc.reconnected()
                was_up = up
                if probing is not None and probing.done():
                    answers: dict[str, InferenceSample | bool | None] = {}
                    exc = None if probing.cancelled() else probing.exception()
                    if exc is not None:
                        self._host_warning(
                            host.name, failure_line(f"{host.name}: discovery failed", exc)
                        )
                    elif not probing.cancelled():
                        answers = probing.result()
                    disc.update(started, answers)
                    probing = None
                if probing is None and disc.due(started, up):
                    disc.last_run = started  # a round in flight is not started twice
                    probing = asyncio.create_task(
                        probe_ports(
                            transport,
                            disc.to_probe(started),
                            PROBE_TIMEOUT_S,
                            parser=self.parser,
                            key=host.name,
                        ),
                        name=f"discover:{host.name}",
                    )
                urls = disc.urls()
                if urls:
                    timed = await asyncio.gather(
                        *(self._fetch_timed(transport, host, url) for url in urls)
                    )
                    raw = [r for r, _ in timed]
                    with Guard(f"{host.name}: recording /metrics failed"):
                        if self.events is not None:
                            self.events.metrics(host.name, raw)
                    readings = [await self._parse(host.name, r) for r in raw]
                    self.state.apply_inference(host.name, readings)
                if hs is not None and hs.sample is not None:  # the readings reached it
                    disc.seen_round = disc.rounds
                delay = self.config.interval - (time.monotonic() - started)
                if probing is not None:  # pick up a discovered server as soon as it answers
                    delay = min(delay, 0.1)
                await asyncio.sleep(max(0.05, delay))
        finally:
            if probing is not None:
                probing.cancel()

    async def _parse(self, host: str, reading: MetricsReading) -> InferenceSample:
        """One fetch as a reading, parsed off the event loop; a failure is that URL's error."""
        where = f"{host}: {reading.url}"
        guard = Guard(where)
        with guard:
            if reading.body is None:  # nothing to parse: no thread needed
                return inference_sample(reading, where)
            return await self.parser.run((host, reading.url), inference_sample, reading, where)
        return InferenceSample(url=reading.url, error=guard.error, read_s=reading.read_s)

    async def _fetch_timed(
        self, transport: Transport, host: HostConfig, url: str
    ) -> tuple[MetricsReading, float]:
        # The server read its counters somewhere between request and response: the
        # midpoint is what rates divide by (see InferenceSample.read_s).
        sent = time.monotonic()
        reading = await self._fetch_raw(transport, host, url)
        read_s = (sent + time.monotonic()) / 2
        return dataclasses.replace(reading, read_s=read_s), read_s

    async def _fetch_raw(self, transport: Transport, host: HostConfig, url: str) -> MetricsReading:
        where = f"{host.name}: {url}"
        slow = self.parser.busy((host.name, url))
        if slow is not None:  # its last page is still being read: do not fetch another
            return MetricsReading(url, error=f"{where}: {slow}")
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
        self.parser.close()

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
            host,
            netdev,
            self.transport(cfg),
            sysfs=cfg.sysfs,
            path=list(cfg.path),
            on_update=on_update,
            probe=cfg.probe,
            on_event=self._on_frame,
            thresholds=self.state.thresholds,
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
