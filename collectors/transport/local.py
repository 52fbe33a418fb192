"""The local transport: the probe as a subprocess of fabtop itself, plus netlink statistics."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncGenerator, Sequence

from collectors.transport.base import (
    HTTP_MAX_BODY,
    TailBuffer,
    Transport,
    TransportError,
    drain_into,
    http_exchange,
    one_line,
)

_KILL_GRACE_S = 1.0


class LocalTransport(Transport):
    """Runs commands on this machine; ``env_path_prefix`` dirs go in front of PATH."""

    def __init__(self, name: str = "localhost", env_path_prefix: Sequence[str] = ()) -> None:
        self.name = name
        self._path_prefix = list(env_path_prefix)
        self._procs: set[asyncio.subprocess.Process] = set()

    def describe(self) -> str:
        """Short form used in messages."""
        return f"{self.name} (local)"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self._path_prefix:
            rest = env.get("PATH", os.defpath)
            env["PATH"] = os.pathsep.join([*self._path_prefix, rest])
        # The probe parses tool output; a translated message would not match.
        env["LC_ALL"] = "C"
        return env

    async def connect(self) -> None:
        """Nothing to open locally."""

    async def _spawn(self, argv: Sequence[str], stdin: bool) -> asyncio.subprocess.Process:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env(),
                # Own process group, so the probe's background children die with it.
                start_new_session=True,
            )
        except OSError as exc:
            raise self.error(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        self._procs.add(proc)
        return proc

    async def _kill(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    await asyncio.wait_for(proc.wait(), _KILL_GRACE_S)
                    break
                except TimeoutError:
                    continue
        self._procs.discard(proc)

    async def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        """Run ``sh -s -- args`` with ``script`` on stdin; yield stdout chunks until it exits.

        stdin stays open after the script: the probe ends everything it started when it
        reaches EOF, so closing it (here, or by fabtop going away) is its end of life.
        """
        proc = await self._spawn(["sh", "-s", "--", *args], stdin=True)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        tail = TailBuffer()
        err_task = asyncio.create_task(drain_into(proc.stderr.read, tail))
        try:
            proc.stdin.write(script.encode())
            with contextlib.suppress(ConnectionError):
                await proc.stdin.drain()
            while chunk := await proc.stdout.read(65536):
                yield chunk
            rc = await proc.wait()
            await asyncio.wait_for(err_task, _KILL_GRACE_S)
            if rc != 0:
                why = (
                    f"probe exited with status {rc}" if rc > 0 else f"probe killed by signal {-rc}"
                )
                raise self.error(f"{why}: {tail.text() or 'no stderr'}")
        finally:
            err_task.cancel()
            proc.stdin.close()
            await self._kill(proc)

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Run one command (no shell); return (exit status, stdout, stderr)."""
        if not argv:
            raise self.error("empty command")
        proc = await self._spawn(argv, stdin=False)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            raise self.error(f"{argv[0]} timed out after {timeout:g} s") from None
        finally:
            await self._kill(proc)
        rc = proc.returncode if proc.returncode is not None else -1
        return rc, out, err

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        """HTTP/1.0 GET over a plain TCP connection; a body over ``max_bytes`` is an error."""
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port)
                return await http_exchange(reader.read, writer.write, host, port, path, max_bytes)
        except TimeoutError:
            raise self.error(f"http://{host}:{port}{path} timed out after {timeout:g} s") from None
        except (OSError, ValueError) as exc:
            raise self.error(f"http://{host}:{port}{path}: {exc}") from exc
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def close(self) -> None:
        """Kill anything still running."""
        for proc in list(self._procs):
            await self._kill(proc)


def read_netlink_stats() -> dict[str, dict[str, int]]:
    """Interface statistics from netlink (IFLA_STATS64), keyed by ifname then kernel field name.

    One netlink dump instead of a process or a sysfs read per counter; the field names are
    the kernel's ``struct rtnl_link_stats64`` ones, the same as ``statistics/<name>`` in sysfs.
    """
    from pyroute2 import IPRoute  # imported here: only the local cross-check needs it

    out: dict[str, dict[str, int]] = {}
    try:
        with IPRoute() as ipr:
            links = ipr.get_links()
    except OSError as exc:
        raise TransportError(f"localhost (local): netlink: {one_line(str(exc))}") from exc
    for link in links:
        name = link.get_attr("IFLA_IFNAME")
        stats = link.get_attr("IFLA_STATS64")
        if not isinstance(name, str) or stats is None:
            continue
        out[name] = {str(k): int(v) for k, v in dict(stats).items() if isinstance(v, int)}
    return out
