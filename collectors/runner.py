"""One task per host: keep the probe streaming, decode frames, report the host's status."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from collectors.frames import Frame, FrameDecoder
from collectors.transport.base import Transport, TransportError, one_line

log = logging.getLogger(__name__)

HostState = Literal["connecting", "up", "stale", "down"]

MAX_WARNINGS = 20


@dataclass(slots=True, frozen=True)
class HostStatus:
    """What the runner knows about one host's connection, as of its last change."""

    state: HostState = "connecting"
    error: str | None = None
    last_frame_monotonic: float | None = None
    rtt_s: float | None = None
    warnings: tuple[str, ...] = ()  # the decoder's latest notes, newest last, bounded
    since_monotonic: float = 0.0  # when ``state`` was entered
    frames: int = 0  # frames delivered since the runner started
    failures: int = 0  # consecutive failed sessions (0 once frames flow)


class HostRunner:
    """Connects, streams the probe, calls ``on_frame`` per frame; reconnects forever until stop."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        script: str,
        args: Sequence[str],
        on_frame: Callable[[str, Frame], None],
        on_status: Callable[[str, HostStatus], None],
        backoff: Sequence[float] = (1, 2, 4, 8, 15, 30),
        *,
        interval: float = 1.0,
        stale_after: float | None = None,
        down_after: float | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        self._script = script
        self._args = list(args)
        self._on_frame = on_frame
        self._on_status = on_status
        self._backoff = tuple(float(b) for b in backoff) or (1.0,)
        self.stale_after = stale_after if stale_after is not None else 2.5 * interval
        # A host silent this long is given up on and reconnected, even if its transport
        # cannot tell (a stopped local process, an SSH session without keepalives).
        self.down_after = down_after if down_after is not None else 4 * self.stale_after
        self._status = HostStatus(since_monotonic=time.monotonic())
        self._stopping = False
        self._stop_event = asyncio.Event()
        self._session: asyncio.Task[str] | None = None
        self._session_started: float | None = None
        self._abort_reason: str | None = None

    @property
    def status(self) -> HostStatus:
        """The current status (rtt and last frame time are refreshed per frame)."""
        return self._status

    def stop(self) -> None:
        """Ask run() to end: the current session is closed and no reconnect follows."""
        self._stopping = True
        self._stop_event.set()
        if self._session is not None:
            self._session.cancel()

    async def run(self) -> None:
        """Stream until stop(); errors become statuses, never exceptions."""
        watchdog = asyncio.create_task(self._watchdog())
        try:
            while not self._stopping:
                reason = await self._one_session()
                if self._stopping:
                    break
                failures = self._status.failures + 1
                self._update(state="down", error=reason, failures=failures)
                base = self._backoff[min(failures - 1, len(self._backoff) - 1)]
                # Jitter, so hosts dropped by one switch reboot do not reconnect in lockstep.
                delay = base * random.uniform(0.5, 1.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop_event.wait(), delay)
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
            with contextlib.suppress(Exception):
                await self.transport.close()

    async def _one_session(self) -> str:
        """Run one connect+stream; return why it ended."""
        self._abort_reason = None
        self._session_started = None
        self._session = asyncio.create_task(self._stream())
        try:
            return await self._session
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # run() itself is being cancelled
            return self._abort_reason or f"{self.transport.describe()}: stopped"
        except TransportError as exc:
            return str(exc)
        except Exception as exc:  # a bug below must not end monitoring of this host
            log.exception("runner for %s", self.name)
            return f"{self.transport.describe()}: internal error: {type(exc).__name__}: {exc}"
        finally:
            self._session = None
            with contextlib.suppress(Exception):
                await self.transport.close()

    async def _stream(self) -> str:
        await self.transport.connect()
        decoder = FrameDecoder()
        self._session_started = time.monotonic()
        async with contextlib.aclosing(self.transport.stream(self._script, self._args)) as chunks:
            async for chunk in chunks:
                frames = decoder.feed(chunk)
                warnings = decoder.take_warnings()
                if frames or warnings:
                    self._delivered(frames, warnings)
        return f"{self.transport.describe()}: probe ended"

    def _delivered(self, frames: list[Frame], warnings: list[str]) -> None:
        now = time.monotonic()
        if warnings:
            merged = (*self._status.warnings, *(one_line(w, 200) for w in warnings))
            self._update(warnings=merged[-MAX_WARNINGS:])
        if not frames:
            return
        self._status = dataclasses.replace(
            self._status,
            last_frame_monotonic=now,
            rtt_s=self.transport.rtt_s,
            frames=self._status.frames + len(frames),
        )
        if self._status.state != "up":
            self._update(state="up", error=None, failures=0)
        for frame in frames:
            try:
                self._on_frame(self.name, frame)
            except Exception:  # the consumer's bug must not take the host down
                log.exception("on_frame for %s", self.name)

    async def _watchdog(self) -> None:
        """Mark silence stale, then abort the session once it passes down_after."""
        tick = max(min(self.stale_after / 4, 0.5), 0.02)
        while True:
            await asyncio.sleep(tick)
            started = self._session_started
            if self._session is None or started is None:
                continue
            now = time.monotonic()
            last = self._status.last_frame_monotonic
            silence = now - max(last or started, started)
            if self._status.state == "up" and last is not None and silence > self.stale_after:
                self._update(state="stale", error=f"no frame for {silence:.1f} s")
            if silence > self.down_after and self._abort_reason is None:
                self._abort_reason = (
                    f"{self.transport.describe()}: no frame for {silence:.1f} s, reconnecting"
                )
                self._session.cancel()

    def _update(self, **changes: object) -> None:
        """Apply changes; tell on_status when state, error, failures or warnings moved."""
        old = self._status
        new = dataclasses.replace(old, **changes)  # type: ignore[arg-type]
        if new.state != old.state:
            new = dataclasses.replace(new, since_monotonic=time.monotonic())
        self._status = new
        if (new.state, new.error, new.failures, new.warnings) != (
            old.state,
            old.error,
            old.failures,
            old.warnings,
        ):
            try:
                self._on_status(self.name, new)
            except Exception:
                log.exception("on_status for %s", self.name)


async def collect_once(
    transport: Transport, script: str, args: Sequence[str], frames: int, timeout: float
) -> list[Frame]:
    """Connect, read ``frames`` frames, close; TransportError when they do not all arrive."""
    decoder = FrameDecoder()
    got: list[Frame] = []
    try:
        async with asyncio.timeout(timeout):
            await transport.connect()
            async with contextlib.aclosing(transport.stream(script, args)) as chunks:
                async for chunk in chunks:
                    got.extend(decoder.feed(chunk))
                    if len(got) >= frames:
                        break
    except TimeoutError:
        raise transport.error(
            f"{len(got)} of {frames} frames after {timeout:g} s (timed out)"
        ) from None
    finally:
        with contextlib.suppress(Exception):
            await transport.close()
    if len(got) < frames:
        raise transport.error(f"probe ended after {len(got)} of {frames} frames")
    return got[:frames]
