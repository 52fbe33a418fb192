"""``fabtop record``: collect into a recording until --duration, --frames, --max-size or a
signal."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from fabtop.config import Config
from fabtop.run.compose import open_session
from fabtop.run.outputs import STDOUT
from fabtop.run.record import Recorder, RecordError


async def record_command(
    config: Config,
    path: str,
    *,
    demo_speed: float = 1.0,
    max_mb: float | None = None,
    duration: float | None = None,
    log: Callable[[str], None] | None = None,
    frames: int | None = None,
) -> int:
    """Record until --duration, --frames (all hosts together), --max-size, SIGINT/SIGTERM;
    0 on a clean close, 2 if the file could not be written (as ``snapshot``). ``path``
    ``-`` is stdout (messages stay on stderr), a device or FIFO is written as it is, a
    symlink's target is written."""
    say = log or (lambda m: print(m, file=sys.stderr))
    shown = "stdout" if path == STDOUT else path
    stop = asyncio.Event()
    ended: list[str] = []

    def halt(msg: str) -> None:
        ended.append(msg)
        stop.set()

    rec = Recorder(
        Path(path),
        config,
        on_error=halt,
        on_limit=halt,
        max_bytes=int(max_mb * 1e6) if max_mb else None,
        max_seconds=duration,
        max_frames=frames,
    )
    try:
        rec.open()
    except RecordError as e:
        say(f"fabtop: {e}")
        return 2
    session = open_session(config, demo_speed=demo_speed, events=rec)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(session.run())
    say(f"fabtop: recording {len(config.hosts)} host(s) to {shown} (Ctrl-C stops)")
    try:
        waiter = asyncio.create_task(stop.wait())
        timeout = duration + 0.5 if duration else None
        await asyncio.wait({waiter, task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await session.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        rec.close("stopped")
    if rec.error is not None:
        say(f"fabtop: {rec.error}")
        return 2
    why = ended[0].split(": recording stopped: ")[-1] if ended else rec.stopped or "stopped"
    say(
        f"fabtop: {rec.frames} frame(s), {rec.bytes_written / 1e6:.2f} MB written to {shown} "
        f"({why})"
    )
    return 0
