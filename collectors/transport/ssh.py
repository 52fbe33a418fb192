"""The SSH transport: one long-lived asyncssh connection per host, verified host keys."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from collectors.transport.base import (
    HTTP_MAX_BODY,
    HostKeyError,
    TailBuffer,
    Transport,
    TransportError,
    drain_into,
    http_exchange,
    one_line,
)
from collectors.transport.ssh_config import (
    SshConfigError,
    check_no_commands,
    host_keys_unchecked,
)

# ``()`` is asyncssh's own "use the default" marker (~/.ssh/config, ~/.ssh/known_hosts, agent).
Default = tuple[()]
DEFAULT: Default = ()

_CLOSE_TIMEOUT_S = 2.0
# The round trip shown per host is measured this often. It is a diagnostic, not the
# liveness check (frames and asyncssh's keepalive are): at the keepalive's 5 s, 256 hosts
# cost 51 requests a second on both ends, 14 % of the collector's event loop.
RTT_INTERVAL_S = 30.0

# user@host:port, user@[v6]:port, or an ssh_config alias; no leading '-' anywhere so a
# target can never be read as an option by anything downstream.
_TARGET_RE = re.compile(
    r"""^(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9_.-]{0,63})@)?
        (?:\[(?P<v6>[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9_.-]{1,32})?)\]
          |(?P<host>[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})))
        (?::(?P<port>[0-9]{1,5}))?$""",
    re.VERBOSE,
)


@dataclass(slots=True, frozen=True)
class Target:
    """A parsed ``[user@]host[:port]``; host may be an ssh_config alias."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


def parse_target(target: str) -> Target:
    """Parse ``[user@]host[:port]`` / ``[user@][v6][:port]``; ValueError on anything else."""
    m = _TARGET_RE.match(target)
    if m is None:
        raise ValueError(f"bad SSH target {target!r} (expected [user@]host[:port] or [v6]:port)")
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"bad SSH port in {target!r}")
    return Target(host=m["v6"] or m["host"], user=m["user"], port=port)


class _Client(asyncssh.SSHClient):
    """Remembers why the connection ended, for the status line."""

    def __init__(self, owner: SshTransport) -> None:
        self._owner = owner

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost = exc


class SshTransport(Transport):
    """One host over SSH; ~/.ssh/config, the agent and known_hosts are honoured."""

    def __init__(
        self,
        name: str,
        target: str,
        *,
        port: int | None = None,
        user: str | None = None,
        known_hosts: str | Sequence[str] | Default = DEFAULT,
        config_paths: Sequence[str] | Default = DEFAULT,
        connect_timeout: float = 10.0,
        keepalive_interval: float = 5.0,
        keepalive_count_max: int = 3,
        rtt_interval: float = RTT_INTERVAL_S,
        client_keys: Sequence[str] | None = None,
        agent: str | Default | None = DEFAULT,
        config_commands: bool = True,
    ) -> None:
        """``config_commands`` False: ``config_paths`` may not run a local command
        (ProxyCommand, Match exec, ...; :mod:`collectors.transport.ssh_config`): a file the
        operator did not name. Checked at every connect: asyncssh reads the files again
        each time, so a file changed after start is caught too.
        """
        self.name = name
        try:
            parsed = parse_target(target)
        except ValueError as exc:
            raise TransportError(f"{name}: {exc}") from None
        # The target's own user/port win over the keyword arguments, which win over ssh_config.
        self.target = Target(parsed.host, parsed.user or user, parsed.port or port)
        self._known_hosts = known_hosts
        self._config_paths = config_paths
        self._connect_timeout = connect_timeout
        self._keepalive_interval = keepalive_interval
        self._keepalive_count_max = keepalive_count_max
        self._rtt_interval = rtt_interval
        self._client_keys = client_keys
        self._agent = agent
        self._config_commands = config_commands
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lost: Exception | None = None
        self._rtt: float | None = None
        self._pinger: asyncio.Task[None] | None = None
        # The main stream and a focus stream share this transport and may (re)connect at
        # the same moment: one of them opens the connection, the other reuses it.
        self._connecting = asyncio.Lock()
        self._procs: set[asyncssh.SSHClientProcess[bytes]] = set()

    def describe(self) -> str:
        """``name (user@host:port)``."""
        return f"{self.name} ({self.target})"

    @property
    def rtt_s(self) -> float | None:
        """Round trip of the last keepalive-style global request."""
        return self._rtt

    def _connect_kwargs(self) -> dict[str, Any]:
        """asyncssh's options; SshConfigError when a config may not run what it names, or
        would have asyncssh accept any host key."""
        if not self._config_commands and self._config_paths != ():
            for path in self._config_paths:
                check_no_commands(path)
        if self._known_hosts == ():
            # Left to the config, known_hosts may come out as None: any key accepted.
            default = [str(Path("~/.ssh/config").expanduser())]
            for path in self._config_paths if self._config_paths != () else default:
                if where := host_keys_unchecked(path):
                    raise SshConfigError(
                        f"{where}: UserKnownHostsFile none would accept any host key; "
                        "name a known_hosts file instead"
                    )
        kw: dict[str, Any] = {
            "config": self._config_paths if self._config_paths == () else list(self._config_paths),
            # Never from the config (ForwardAgent, GSSAPIDelegateCredentials, which asyncssh
            # honours when these are left unset): the operator's agent and Kerberos
            # credentials would be usable from every node as long as fabtop runs.
            "agent_forwarding": False,
            "gss_delegate_creds": False,
            "connect_timeout": self._connect_timeout,
            "keepalive_interval": self._keepalive_interval,
            "keepalive_count_max": self._keepalive_count_max,
            # Never None: that would make asyncssh accept any host key.
            "known_hosts": self._known_hosts
            if isinstance(self._known_hosts, str | tuple)
            else list(self._known_hosts),
        }
        if self.target.port is not None:
            kw["port"] = self.target.port
        if self.target.user is not None:
            kw["username"] = self.target.user
        if self._client_keys is not None:
            kw["client_keys"] = list(self._client_keys)
        if self._agent != ():
            kw["agent_path"] = self._agent
        return kw

    async def connect(self) -> None:
        """Open the connection; raise HostKeyError / TransportError with a one-line cause."""
        async with self._connecting:
            await self._connect()

    async def _connect(self) -> None:
        if self._conn is not None and not self._conn.is_closed():
            return
        if self._pinger is not None:
            self._pinger.cancel()
            self._pinger = None
        self._lost = None
        try:
            kwargs = self._connect_kwargs()
        except SshConfigError as exc:
            raise self.error(str(exc)) from None
        try:
            self._conn = await asyncssh.connect(
                self.target.host, client_factory=lambda: _Client(self), **kwargs
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise await self._host_key_error(exc) from None
        except asyncssh.PermissionDenied as exc:
            raise self.error(
                f"authentication failed ({exc.reason or 'permission denied'})"
            ) from None
        except asyncssh.DisconnectError as exc:
            raise self.error(f"disconnected during login: {exc.reason or exc}") from None
        except TimeoutError:
            raise self.error(f"connect timed out after {self._connect_timeout:g} s") from None
        except (OSError, asyncssh.Error, ValueError, KeyError) as exc:
            # KeyError/ValueError: asyncssh's reports for unreadable keys or configs.
            raise self.error(f"cannot connect: {_os_cause(exc)}") from None
        self._rtt = None
        self._pinger = asyncio.create_task(self._ping_loop(self._conn))

    async def _host_key_error(self, exc: asyncssh.HostKeyNotVerifiable) -> HostKeyError:
        """Tell an unknown key from a changed one: the latter may be an attack."""
        host, port, files = await asyncio.get_running_loop().run_in_executor(
            None, self._resolve_for_host_keys
        )
        hostport = f"[{host}]:{port}" if port != 22 else host
        where = ", ".join(files) or "known_hosts"
        scan = f"ssh-keyscan -p {port} {shlex.quote(host)}"
        known = _known_key_types(files, host, port)
        if known:
            return HostKeyError(
                f"{self.describe()}: HOST KEY CHANGED for {hostport}: the server's key does not "
                f"match the {'/'.join(known)} key in {where}; refusing to connect (possible "
                f"man-in-the-middle); if the host was reinstalled, remove the old entry with "
                f"ssh-keygen -R '{hostport}' and check the new fingerprint"
            )
        return HostKeyError(
            f"{self.describe()}: host key for {hostport} not in {where} (not trusted); run "
            f"'{scan} >> {files[0] if files else '~/.ssh/known_hosts'}' after checking the "
            f"fingerprint ({one_line(str(exc), 120)})"
        )

    def _resolve_for_host_keys(self) -> tuple[str, int, list[str]]:
        """HostName, Port and known_hosts files as ssh_config resolves them for this target."""
        try:
            kwargs = self._connect_kwargs()  # checks the config again: Match exec runs here too
            opts = asyncssh.SSHClientConnectionOptions(
                host=self.target.host,
                port=self.target.port if self.target.port is not None else (),
                config=kwargs["config"],
                known_hosts=kwargs["known_hosts"],
            )
            host, port, kh = str(opts.host), int(opts.port), opts.known_hosts
        except (OSError, asyncssh.Error, ValueError, KeyError):
            host, port, kh = self.target.host, self.target.port or 22, self._known_hosts
        if isinstance(kh, str):
            files = [kh]
        elif isinstance(kh, list | tuple) and kh and all(isinstance(x, str) for x in kh):
            files = [str(x) for x in kh]
        else:
            files = [str(Path("~/.ssh/known_hosts").expanduser())]
        return host, port, files

    async def _ping_loop(self, conn: asyncssh.SSHClientConnection) -> None:
        """Measure the round trip with the same global request OpenSSH uses for keepalives.

        asyncssh has no public ping; its private ``_make_global_request`` is what its own
        keepalive uses. When it is missing (another asyncssh version) rtt stays None.
        """
        request = getattr(conn, "_make_global_request", None)
        if request is None:
            return
        interval = max(self._rtt_interval, 0.5)
        # An answer later than this: asyncssh's keepalive gives the connection up by then.
        timeout = max(self._keepalive_interval * self._keepalive_count_max, 1.0)
        while not conn.is_closed():
            start = time.monotonic()
            try:
                await asyncio.wait_for(request(b"keepalive@openssh.com"), timeout)
            except (TimeoutError, asyncssh.Error, OSError):
                self._rtt = None
            else:
                self._rtt = time.monotonic() - start
            await asyncio.sleep(interval)

    def _require(self) -> asyncssh.SSHClientConnection:
        if self._conn is None or self._conn.is_closed():
            raise self.error(self._lost_cause() if self._conn else "not connected")
        return self._conn

    def _lost_cause(self) -> str:
        exc = self._lost
        if exc is None:
            return "connection closed"
        if isinstance(exc, asyncssh.DisconnectError):
            return f"connection lost: {exc.reason or exc}"
        return f"connection lost: {_os_cause(exc)}"

    def _map(self, exc: BaseException, what: str) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        if self._conn is not None and self._conn.is_closed():
            return self.error(f"{what}: {self._lost_cause()}")
        if isinstance(exc, asyncssh.ChannelOpenError):
            return self.error(f"{what}: {exc.reason or 'channel refused'}")
        if isinstance(exc, asyncssh.Error):
            return self.error(f"{what}: {exc.reason or exc}")
        return self.error(f"{what}: {_os_cause(exc)}")

    async def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        """Run ``exec sh -s -- args`` remotely with ``script`` on stdin; yield stdout chunks.

        The user's login shell runs the command: one short line every shell reads alike,
        and ``exec`` keeps the session leader sshd made, so the probe leads its process
        group. stdin stays open after the script: when the channel closes (here, or the
        connection drops) the probe sees EOF and ends everything it started.
        """
        conn = self._require()
        command = " ".join(["exec", "sh", "-s", "--", *(shlex.quote(a) for a in args)])
        tail = TailBuffer()
        try:
            proc = await conn.create_process(command, encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise self._map(exc, "cannot start the probe") from None
        self._procs.add(proc)
        err_task = asyncio.create_task(drain_into(proc.stderr.read, tail))
        try:
            try:
                proc.stdin.write(script.encode())
                while chunk := await proc.stdout.read(65536):
                    yield chunk
                await asyncio.wait_for(proc.wait_closed(), _CLOSE_TIMEOUT_S)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(err_task, _CLOSE_TIMEOUT_S)
            except (asyncssh.Error, OSError, TimeoutError) as exc:
                raise self._map(exc, "probe stream") from None
            status, sig = proc.exit_status, proc.exit_signal
            if self._conn is not None and self._conn.is_closed():
                raise self.error(self._lost_cause())
            stderr = tail.text() or "no stderr"
            if sig is not None:
                raise self.error(f"probe killed by signal {sig[0]}: {stderr}")
            if status is None:
                raise self.error(f"probe ended without an exit status: {stderr}")
            if status != 0:
                raise self.error(f"probe exited with status {status}: {stderr}")
        finally:
            err_task.cancel()
            self._procs.discard(proc)
            _end_process(proc)

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Run one command (argv quoted for the remote shell); return (status, stdout, stderr)."""
        if not argv:
            raise self.error("empty command")
        conn = self._require()
        command = " ".join(shlex.quote(a) for a in argv)
        try:
            res = await asyncio.wait_for(
                conn.run(command, check=False, encoding=None, stdin=asyncssh.DEVNULL), timeout
            )
        except TimeoutError:
            raise self.error(f"{argv[0]} timed out after {timeout:g} s") from None
        except (asyncssh.Error, OSError) as exc:
            raise self._map(exc, f"cannot run {argv[0]}") from None
        out = res.stdout if isinstance(res.stdout, bytes) else b""
        err = res.stderr if isinstance(res.stderr, bytes) else b""
        rc = res.exit_status if res.exit_status is not None else -1
        return rc, out, err

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        """HTTP/1.0 GET through a direct-tcpip channel: the node's loopback, no port opened.

        A body over ``max_bytes`` is an error naming the size, never buffered.
        """
        conn = self._require()
        url = f"http://{host}:{port}{path}"
        writer: asyncssh.SSHWriter[bytes] | None = None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await conn.open_connection(host, port, encoding=None)
                return await http_exchange(reader.read, writer.write, host, port, path, max_bytes)
        except TimeoutError:
            raise self.error(f"{url} timed out after {timeout:g} s") from None
        except ValueError as exc:
            raise self.error(f"{url}: {exc}") from None
        except (asyncssh.Error, OSError) as exc:
            raise self._map(exc, url) from None
        finally:
            if writer is not None:
                writer.close()

    async def close(self) -> None:
        """Close the connection (bounded wait: a stopped peer must not hang us)."""
        if self._pinger is not None:
            self._pinger.cancel()
            self._pinger = None
        # EOF on the probes' stdin first: each ends its own process group on the node
        # even if the connection's close is never seen there (a half-open TCP link).
        for proc in list(self._procs):
            _end_process(proc)
        self._procs.clear()
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.close()
        with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(conn.wait_closed(), _CLOSE_TIMEOUT_S)


def _end_process(proc: asyncssh.SSHClientProcess[bytes]) -> None:
    """Send EOF on the probe's stdin (its end of life, see docs/PROBE.md), then close."""
    with contextlib.suppress(asyncssh.Error, OSError, AttributeError):
        proc.stdin.write_eof()
    proc.close()


def _os_cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        # asyncio puts "Connect call failed (addr)" in strerror; errno says why.
        return os.strerror(exc.errno).lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return one_line(str(exc)) or type(exc).__name__


def _known_key_types(files: Sequence[str], host: str, port: int) -> list[str]:
    """Key algorithms known_hosts lists for host:port (empty: the host is unknown)."""
    names: list[str] = []
    for f in files:
        try:
            kh = asyncssh.read_known_hosts(f)
        except (OSError, ValueError, asyncssh.Error):
            continue
        # known_hosts entries for a non-default port are written "[host]:port".
        keys = kh.match(host, host, port if port != 22 else None)[0]
        names.extend(k.get_algorithm() for k in keys)
    return sorted(set(names))
