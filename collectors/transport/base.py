"""The transport interface: connect, stream a script's stdout, run a command, fetch a URL."""

from __future__ import annotations

import abc
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

STDERR_TAIL_BYTES = 4096
MAX_HTTP_RESPONSE_BYTES = 16 * 1024 * 1024  # a /metrics page is far smaller; bound it anyway

_HTTP_HOST_RE = re.compile(
    r"^(?:[A-Za-z0-9_.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]|[0-9A-Fa-f:.]{2,45})$"
)
_HTTP_PATH_RE = re.compile(r"^/[\x21-\x7e]{0,2047}$")  # printable, no space, CR or LF


class TransportError(Exception):
    """A host could not be reached or its command failed; the message is one line naming it."""


class HostKeyError(TransportError):
    """The host's key is unknown or changed: never accepted silently."""


class Transport(abc.ABC):
    """One host's connection: moves bytes, knows nothing of counters."""

    name: str

    @abc.abstractmethod
    async def connect(self) -> None:
        """Open the connection (a no-op when already open)."""

    @abc.abstractmethod
    def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        """Run ``sh -s -- args`` with ``script`` on stdin; yield stdout chunks until it exits.

        An async generator, so a consumer that stops early can ``aclose()`` it and the
        remote or local process is ended at once.
        """

    @abc.abstractmethod
    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Run one command; return (exit status, stdout, stderr)."""

    @abc.abstractmethod
    async def http_get(self, host: str, port: int, path: str, timeout: float) -> tuple[int, bytes]:
        """HTTP/1.0 GET ``http://host:port/path`` as seen from the node; return (status, body)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection and anything still running on it."""

    @property
    def rtt_s(self) -> float | None:
        """Last measured round trip to the host, or None when not measured."""
        return None

    def describe(self) -> str:
        """Short form used in messages, e.g. ``gpu3 (admin@10.0.0.3:22)``."""
        return self.name

    def error(self, cause: str) -> TransportError:
        """A TransportError whose one-line message names this host."""
        return TransportError(f"{self.describe()}: {one_line(cause)}")


def one_line(text: str, limit: int = 400) -> str:
    """Collapse whitespace and newlines so a message fits one status line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class TailBuffer:
    """Keeps only the last ``limit`` bytes written (stderr of a long-running probe)."""

    __slots__ = ("_buf", "_limit")

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._buf = bytearray()
        self._limit = limit

    def write(self, data: bytes) -> None:
        """Append, dropping the oldest bytes beyond the limit."""
        self._buf += data
        if len(self._buf) > self._limit:
            del self._buf[: len(self._buf) - self._limit]

    def text(self) -> str:
        """The tail as one line (empty when nothing was written)."""
        return one_line(self._buf.decode("utf-8", errors="replace"))


async def drain_into(read: Callable[[int], Awaitable[bytes]], tail: TailBuffer) -> None:
    """Read a stream to EOF into ``tail``."""
    while True:
        chunk = await read(65536)
        if not chunk:
            return
        tail.write(chunk)


def http_request(host: str, port: int, path: str) -> bytes:
    """Bytes of a minimal HTTP/1.0 GET; raises ValueError on a host or path that could inject."""
    if not _HTTP_HOST_RE.match(host):
        raise ValueError(f"refusing HTTP host {host!r}")
    if not _HTTP_PATH_RE.match(path):
        raise ValueError(f"refusing HTTP path {path!r}")
    if not 0 < port < 65536:
        raise ValueError(f"bad HTTP port {port}")
    hostport = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
    return (
        f"GET {path} HTTP/1.0\r\nHost: {hostport}\r\nUser-Agent: fabtop\r\n"
        "Accept: text/plain, */*\r\nConnection: close\r\n\r\n"
    ).encode("ascii")


async def read_http_response(read: Callable[[int], Awaitable[bytes]]) -> bytes:
    """Read a response to EOF (HTTP/1.0: the server closes), bounded."""
    buf = bytearray()
    while True:
        chunk = await read(65536)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > MAX_HTTP_RESPONSE_BYTES:
            raise ValueError(f"HTTP response larger than {MAX_HTTP_RESPONSE_BYTES} bytes")


def parse_http_response(data: bytes) -> tuple[int, bytes]:
    """Split a raw HTTP/1.x response into (status, body); raises ValueError when malformed."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = data.partition(b"\n\n")
    if not sep:
        raise ValueError("HTTP response without a header end")
    status_line = head.split(b"\n", 1)[0].strip()
    parts = status_line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise ValueError(f"bad HTTP status line {status_line[:80]!r}")
    return int(parts[1]), body


async def http_exchange(
    read: Callable[[int], Awaitable[bytes]],
    write: Callable[[bytes], object],
    host: str,
    port: int,
    path: str,
) -> tuple[int, bytes]:
    """Send the GET, read the whole response and parse it."""
    write(http_request(host, port, path))
    return parse_http_response(await read_http_response(read))
