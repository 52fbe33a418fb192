"""The transport interface: connect, stream a script's stdout, run a command, fetch a URL."""

from __future__ import annotations

import abc
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

from collectors.text import clean

STDERR_TAIL_BYTES = 4096
# A /metrics body over this is refused, never buffered: a real page is far smaller
# (vLLM's is tens of KB), and parsing costs about 0.28 s per MB of CPU wherever it runs.
HTTP_MAX_BODY = 8 * 1024 * 1024
HTTP_MAX_HEAD = 64 * 1024
# The response bound before the body cap; recordings made then may hold bodies this big
# (fabtop/run/record.py sizes its payload bound on it).
MAX_HTTP_RESPONSE_BYTES = 16 * 1024 * 1024

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

        stdin stays open after the script until the stream ends: the probe ends every
        process it started when stdin reaches EOF (so a script must exit by itself).
        An async generator, so a consumer that stops early can ``aclose()`` it and the
        remote or local process is ended at once.
        """

    @abc.abstractmethod
    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        """Run one command; return (exit status, stdout, stderr)."""

    @abc.abstractmethod
    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        """HTTP/1.0 GET ``http://host:port/path`` as seen from the node; return (status, body).

        A body larger than ``max_bytes`` is a TransportError naming the size, never buffered.
        """

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
    """A message as one clean status line: whitespace collapsed, escape sequences and
    invisible characters removed where the text enters (collectors/text.py)."""
    return clean(" ".join(text.split()), limit)


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


async def read_http_response(
    read: Callable[[int], Awaitable[bytes]], max_body: int = HTTP_MAX_BODY
) -> bytes:
    """Read a response to EOF (HTTP/1.0: the server closes), at most ``max_body`` of body.

    Raises ValueError naming the size as soon as the header announces a larger body or
    more arrives: nothing beyond the cap is kept.
    """
    buf = bytearray()
    head_end = -1
    while True:
        chunk = await read(65536)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if head_end < 0:
            head_end = _head_end(buf)
            if head_end < 0:
                if len(buf) > HTTP_MAX_HEAD:
                    raise ValueError(f"HTTP header larger than {HTTP_MAX_HEAD} bytes")
                continue
            announced = _content_length(bytes(buf[:head_end]))
            if announced is not None and announced > max_body:
                raise ValueError(
                    f"HTTP body of {announced} bytes (Content-Length) is over the "
                    f"{max_body}-byte limit"
                )
        if len(buf) - head_end > max_body:
            raise ValueError(f"HTTP body larger than the {max_body}-byte limit")


def _head_end(buf: bytearray) -> int:
    """Offset of the body (after the blank line), or -1 while the header is incomplete."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = buf.find(sep)
        if i >= 0:
            return i + len(sep)
    return -1


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            v = value.strip()
            return int(v) if v.isdigit() and len(v) <= 20 else None
    return None


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
    max_body: int = HTTP_MAX_BODY,
) -> tuple[int, bytes]:
    """Send the GET, read the whole response (body at most ``max_body``) and parse it."""
    write(http_request(host, port, path))
    return parse_http_response(await read_http_response(read, max_body))
