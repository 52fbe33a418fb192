"""``fabtop export``: serve the fabric as Prometheus metrics until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any

from fabtop.run.compose import fabric_state, open_session
from fabtop.run.export import ErrorLog, fd_room, parse_listen, registry_for, serve


async def export_command(config: Any, listen: str, source: Any = None) -> int:
    """Collect and serve until SIGINT/SIGTERM; 0 on a clean stop, 2 when the port is taken."""
    try:
        host, port = parse_listen(listen)
    except ValueError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    state = fabric_state(config)
    if source is None:
        source = open_session(config, state=state)
    else:
        source.state = state
    loop = asyncio.get_running_loop()
    errors = ErrorLog()
    try:
        server = await serve(registry_for(state), host, port, log=errors,
                             max_connections=fd_room())
    except OSError as e:
        print(f"fabtop: cannot listen on {host}:{port}: {e.strerror or e}", file=sys.stderr)
        return 2
    # From here on every asyncio error (accept out of descriptors under a flood, a
    # transport's fatal error) is one rate-limited line, never a traceback per client.
    undo = errors.install(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"fabtop: serving http://{host}:{port}/metrics for {len(config.hosts)} host(s)",
          file=sys.stderr, flush=True)
    task = asyncio.create_task(source.run())
    try:
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        server.close()
        await source.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        undo()
    return 0
