"""``fabtop export``: serve the fabric as Prometheus metrics until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from typing import Any

from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state, open_session
from fabtop.run.export import ErrorLog, fd_room, parse_listen, parse_shard, registry_for, serve


async def export_command(
    config: Any, listen: str, source: Any = None, shard: str | None = None
) -> int:
    """Collect and serve until SIGINT/SIGTERM; 0 on a clean stop, 2 when the port is taken
    or an argument is not usable."""
    try:
        host, port = parse_listen(listen)
        shard = parse_shard(shard)
    except ValueError as e:
        print(f"fabtop: {e}", file=sys.stderr)
        return 2
    if source is not None and (why := await _loop(source)) is not None:
        print(f"fabtop: {why}", file=sys.stderr)
        return 2
    state = fabric_state(config)
    if source is None:
        source = open_session(config, state=state)
        what = f"{len(config.hosts)} host(s)"
    else:
        source.state = state
        what = f"the nodes {getattr(source, 'name', 'the source')} reports"
    loop = asyncio.get_running_loop()
    errors = ErrorLog()
    try:
        server = await serve(
            registry_for(state, shard), host, port, log=errors, max_connections=fd_room()
        )
    except OSError as e:
        print(f"fabtop: cannot listen on {host}:{port}: {e.strerror or e}", file=sys.stderr)
        return 2
    # From here on every asyncio error (accept out of descriptors under a flood, a
    # transport's fatal error) is one rate-limited line, never a traceback per client.
    undo = errors.install(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    as_shard = f" as shard {shard}" if shard else ""
    print(
        f"fabtop: serving http://{host}:{port}/metrics for {what}{as_shard}",
        file=sys.stderr,
        flush=True,
    )
    if getattr(source, "on_change", False) is None:
        source.on_change = _source_lines(state, errors)
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


def _source_lines(state: FabricState, errors: ErrorLog) -> Callable[[], None]:
    """On each change of the source: a stderr line when it stops or starts answering
    (rate-limited), so an export of an unreachable Prometheus does not just sit there."""
    said: dict[str, str | None] = {}

    def tell() -> None:
        for src in state.sources.values():
            before = said.get(src.name)
            if src.error is not None and src.error != before:
                errors.say(f"{src.name} did not answer: {src.error}")
            elif src.error is None and before is not None:
                errors.say(f"{src.name} answers again")
            said[src.name] = src.error

    return tell


async def _loop(source: Any) -> str | None:
    """Why exporting ``source`` would be a loop (it holds fabtop's own series, which the
    export would feed back into the same Prometheus), or None. A source that does not
    answer yet is no loop: it is said as it polls."""
    from fabtop.run.promself import own_shards
    from fabtop.run.promsource import display_url

    try:
        shards = await asyncio.to_thread(own_shards, source)
    except (OSError, ValueError):
        return None
    if not shards:
        return None
    named = ", ".join(shards[:3]) + (f" and {len(shards) - 3} more" if len(shards) > 3 else "")
    return (
        f"export --from-prometheus {display_url(source.url)}: it holds fabtop's own series "
        f"(shards {named}); exporting them again would feed them back into it: read them "
        "with fabtop --from-prometheus, or export from node_exporter/dcgm-exporter data"
    )
