"""One task per host: keep the probe streaming, decode frames, report the host's status.

Also the two pieces every per-host task of fabtop runs on: :func:`supervise` (a task that
raises is reported and started again, never silently gone) and :class:`OffLoop` (CPU-heavy
parsing of remote bytes in a bounded pool of threads, with a deadline, so no host's poll
stalls the event loop that every other host streams on).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from collectors.frames import Frame, FrameDecoder
from collectors.gate import ConnectGate
from collectors.guard import Guard
from collectors.host_states import (
    CONNECTING,
    DOWN,
    STALE,
    STALE_AFTER_INTERVALS,
    UP,
    ConnectionState,
)
from collectors.lag import LoopLag
from collectors.transport.base import Transport, TransportError, one_line

_T = TypeVar("_T")

MAX_WARNINGS = 20
BACKOFF_S: tuple[float, ...] = (1, 2, 4, 8, 15, 30)
# A probe's start (a login shell, python3, the first tick's full read) does not scale with
# the display interval: it is given at least this long before its first frame (or twice
# down_after when that is longer). 256 starts at once on a 2-CPU machine took 20 s.
START_AFTER_S = 30.0
# A probe that sent no first frame in time is reconnected with twice the patience, up to
# 2**this times the first wait: a node that always starts it slowly (loaded, a heavy
# login shell) comes up on a later try instead of being restarted forever.
START_PATIENCE_DOUBLINGS = 3
# A stream whose decoder cannot place values for this many frames in a row (it no longer
# holds their schema: collectors/frames.py) is started again, fresh on both ends; once per
# FRESH_STREAM_EVERY_S at most, so a host past every bound does not reconnect forever (it
# stays partly blind instead, which its finding says).
UNDECODED_FRAMES = 3
FRESH_STREAM_EVERY_S = 600.0
# A slow start is not the host's failure (256 starts on one busy machine are all slow):
# the first one given up on leaves the host "connecting", with the reason, and its retry
# starts at once, first in the connect gate. A host whose start is given up on this many
# times in a row (30 s, then 60 s at the defaults) is down: a login shell that waits for
# input, a probe that hangs before its first frame.
SLOW_STARTS_BEFORE_DOWN = 2


@dataclass(slots=True, frozen=True)
class HostStatus:
    """What the runner knows about one host's connection, as of its last change."""

    state: ConnectionState = CONNECTING
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
        backoff: Sequence[float] = BACKOFF_S,
        *,
        interval: float = 1.0,
        stale_after: float | None = None,
        down_after: float | None = None,
        start_after: float | None = None,
        gate: ConnectGate | None = None,
        lag: LoopLag | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        self._script = script
        self._args = list(args)
        self._on_frame = on_frame
        self._on_status = on_status
        self._backoff = tuple(float(b) for b in backoff) or (1.0,)
        self.stale_after = (
            stale_after if stale_after is not None else STALE_AFTER_INTERVALS * interval
        )
        # A host silent this long is given up on and reconnected, even if its transport
        # cannot tell (a stopped local process, an SSH session without keepalives).
        self.down_after = down_after if down_after is not None else 4 * self.stale_after
        # A new session's first frame: the probe is starting (see START_AFTER_S).
        self.start_after = (
            start_after if start_after is not None else max(START_AFTER_S, 2 * self.down_after)
        )
        self._status = HostStatus(since_monotonic=time.monotonic())
        self._stopping = False
        self._stop_event = asyncio.Event()
        self._session: asyncio.Task[str] | None = None
        self._session_started: float | None = None
        self._abort_reason: str | None = None
        # Shared by a session's runners: at most so many hosts between "connecting" and
        # their first frame at once (a bastion's MaxStartups, one machine's CPUs).
        self._gate = gate
        self._gate_held = False
        # Consecutive sessions given up on before their first frame (the next waits longer).
        self._slow_starts = 0
        # Set when a session ends to start the stream fresh (not a failure: no backoff).
        self._fresh: str | None = None
        self._fresh_at: float | None = None
        # fabtop's own event loop, shared by the session: silence while it was behind is
        # not the host's (the watchdog subtracts its stalls).
        self._lag = lag

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
                if self._fresh is not None:  # not the host's failure: reconnect at once
                    self._update(state=CONNECTING, error=self._fresh)
                    self._fresh = None
                    continue
                if self._abort_reason is not None and 0 < self._slow_starts < (
                    SLOW_STARTS_BEFORE_DOWN
                ):
                    # Given up on before its first frame: a slow start, not a failure.
                    self._update(state=CONNECTING, error=reason)
                    continue
                failures = self._status.failures + 1
                self._update(state=DOWN, error=reason, failures=failures)
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
        # A bug below (the decoder, say) ends this session only: the host reconnects.
        guard = Guard(f"{self.transport.describe()}: internal error")
        try:
            with guard:
                try:
                    return await self._session
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # run() itself is being cancelled
                    return self._abort_reason or f"{self.transport.describe()}: stopped"
                except TransportError as exc:
                    return str(exc)
            return guard.error or guard.where
        finally:
            self._session = None
            with contextlib.suppress(Exception):
                await self.transport.close()

    async def _stream(self) -> str:
        if self._gate is not None:
            await self._gate.acquire(retry=self._slow_starts > 0)
            self._gate_held = True
        try:
            await self.transport.connect()
            decoder = FrameDecoder()
            self._session_started = time.monotonic()
            stream = self.transport.stream(self._script, self._args)
            async with contextlib.aclosing(stream) as chunks:
                async for chunk in chunks:
                    frames = decoder.feed(chunk)
                    warnings = decoder.take_warnings()
                    if frames or warnings:
                        self._delivered(frames, warnings)
                    if frames:
                        self._release_gate()  # streaming: the next host may start
                    if decoder.undecoded_frames >= UNDECODED_FRAMES and self._may_refresh():
                        self._fresh = (
                            f"{self.transport.describe()}: {decoder.undecoded} values sections "
                            "could not be decoded (the stream no longer holds their names): "
                            "reconnected to start it fresh"
                        )
                        return self._fresh
        finally:
            self._release_gate()
        return f"{self.transport.describe()}: probe ended"

    def _may_refresh(self) -> bool:
        now = time.monotonic()
        if self._fresh_at is not None and now - self._fresh_at < FRESH_STREAM_EVERY_S:
            return False
        self._fresh_at = now
        return True

    def _release_gate(self) -> None:
        if self._gate_held and self._gate is not None:
            self._gate_held = False
            self._gate.release()

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
        self._slow_starts = 0
        if self._status.state != UP:
            self._update(state=UP, error=None, failures=0)
        guard = Guard(f"{self.name}: frame consumer failed")
        for frame in frames:
            with guard:  # the consumer's bug must not take the host down
                self._on_frame(self.name, frame)
            if guard.error is not None and guard.error not in self._status.warnings:
                self._update(warnings=(*self._status.warnings, guard.error)[-MAX_WARNINGS:])

    async def _watchdog(self) -> None:
        """Mark silence stale, then abort the session once it passes down_after."""
        tick = max(min(self.stale_after / 4, 0.5), 0.02)
        guard = Guard(f"{self.name}: watchdog")
        while True:
            await asyncio.sleep(tick)
            with guard:  # one bad tick must not leave the host without a watchdog
                self._check_silence()

    def _check_silence(self) -> None:
        started = self._session_started
        if self._session is None or started is None:
            return
        now = time.monotonic()
        last = self._status.last_frame_monotonic
        since = max(last or started, started)
        silence = now - since
        if self._lag is not None and silence > min(self.stale_after, self.start_after):
            # The time fabtop itself was behind is not the host's silence: frames it did
            # not read then wait in its buffers, and a start it could not serve was slow.
            silence -= self._lag.stalled(since, now)
        if self._status.state == UP and last is not None and silence > self.stale_after:
            self._update(state=STALE, error=f"no frame for {silence:.1f} s")
        if last is not None and last >= started:
            if silence > self.down_after and self._abort_reason is None:
                self._abort(f"no frame for {silence:.1f} s, reconnecting")
            return
        # No first frame yet: the probe is starting, which a busy node (or 256 handshakes
        # and probe starts at once on one machine) makes slow. A host holds its connect
        # slot for start_after at most (a hung start must not hold back the others); it is
        # given up on then, and each consecutive slow start is given twice as long.
        if silence > self.start_after:
            self._release_gate()
        limit = self.first_frame_limit
        if silence > limit and self._abort_reason is None:
            self._slow_starts += 1
            self._abort(
                f"probe sent no frame in {silence:.1f} s of starting, starting it again "
                f"(that try waits {self.first_frame_limit:g} s)"
            )

    @property
    def first_frame_limit(self) -> float:
        """How long a new session may wait for its first frame before a reconnect."""
        return self.start_after * (1 << min(self._slow_starts, START_PATIENCE_DOUBLINGS))

    def _abort(self, why: str) -> None:
        self._abort_reason = f"{self.transport.describe()}: {why}"
        if self._session is not None:
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
            with Guard(f"{self.name}: status consumer failed"):
                self._on_status(self.name, new)


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


async def supervise(
    where: str,
    work: Callable[[], Awaitable[None]],
    on_failure: Callable[[str], None],
    backoff: Sequence[float] = BACKOFF_S,
) -> None:
    """Run ``work()`` until it returns; each time it raises, report the line and start again.

    The delay after each failure follows ``backoff`` (with jitter); a run that lasted
    longer than the last step of it counts as healthy, and the backoff starts over.
    """
    steps = tuple(float(b) for b in backoff) or (1.0,)
    failures = 0
    guard = Guard(where)
    while True:
        started = time.monotonic()
        with guard:
            await work()
            return
        failures = 1 if time.monotonic() - started > steps[-1] else failures + 1
        with Guard(f"{where}: reporting a failure"):
            on_failure(guard.error or where)
        delay = steps[min(failures - 1, len(steps) - 1)]
        await asyncio.sleep(delay * random.uniform(0.5, 1.0))


class OffLoop:
    """Runs CPU-heavy parses in a bounded pool of threads, never on the event loop.

    At most one parse per key (a host's URL) is in flight: a parse still running past its
    deadline is left to finish on its own (a thread cannot be stopped), that key is refused
    until it has, and then for ``cooldown`` times as long as it took, so one huge page
    costs at most a share of one core instead of all of it. The body caps at the
    transport bound what one parse can cost.
    """

    def __init__(self, workers: int = 2, deadline_s: float = 5.0, cooldown: float = 4.0) -> None:
        self.workers = workers
        self.deadline_s = deadline_s
        self.cooldown = cooldown
        self._pool: ThreadPoolExecutor | None = None
        self._busy: dict[Hashable, Future[object]] = {}
        self._cool_until: dict[Hashable, tuple[float, float]] = {}  # key -> (until, took_s)

    def busy(self, key: Hashable) -> str | None:
        """Why ``key`` cannot be parsed now (still running, or cooling down), else None."""
        running = self._busy.get(key)
        if running is not None and not running.done():
            return f"the previous parse is still running after {self.deadline_s:g} s"
        until, took = self._cool_until.get(key, (0.0, 0.0))
        left = until - time.monotonic()
        if left > 0:
            return f"the last parse took {took:.1f} s; next try in {left:.0f} s"
        return None

    async def run(self, key: Hashable, fn: Callable[..., _T], *args: object) -> _T:
        """``fn(*args)`` in a worker thread; TimeoutError past the deadline or while busy."""
        reason = self.busy(key)
        if reason is not None:
            raise TimeoutError(reason)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="fabtop-parse")
        started = time.monotonic()
        future = self._pool.submit(fn, *args)
        self._busy[key] = future  # type: ignore[assignment]
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.deadline_s)
        except TimeoutError:
            future.add_done_callback(lambda _: self._cool(key, started))
            raise TimeoutError(f"parse took more than {self.deadline_s:g} s") from None
        finally:
            if future.done():
                self._busy.pop(key, None)

    def _cool(self, key: Hashable, started: float) -> None:
        # In the worker thread, once the overlong parse ended: one dict store.
        took = time.monotonic() - started
        self._cool_until[key] = (time.monotonic() + self.cooldown * took, took)

    def close(self) -> None:
        """Drop queued parses; a running one finishes in its thread, unwaited."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._busy.clear()
