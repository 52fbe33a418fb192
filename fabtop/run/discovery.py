"""Find inference servers on a node's loopback without configuration.

Each host is asked, through its own transport (direct-tcpip over SSH: no port opened),
for ``/metrics`` on the ports the common servers listen on by default. A port that
answers 200 with text :func:`parse_inference_metrics` recognizes is polled from then on
like a configured URL. Decisions are pure (:class:`Discovery`); :func:`probe_ports` is
the only I/O, and it is bounded by one short timeout for all ports together.

A port that answers but has no Prometheus page may be a server that exposes no counter
at all: exo (its ``/state``, port 52415) or ``mlx_lm.server`` (its ``/v1/models``, port
8080, only when ``/metrics`` was 404: llama.cpp answers 200 or 501 there, see
:mod:`collectors.parsers.mlx_lm`). Those are asked within the same time bound, and the
URL polled from then on is the page that named them.

What discovery parses is bounded too: only the head of a page (a server's own metric
names come early), in a worker thread when a parser pool is given, and a port that
answered as something else (a node_exporter with 100k series, say) is left alone for
``NOT_A_SERVER_S`` instead of being fetched and parsed again every round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import urlsplit

from collectors.parsers.exo_state import PORT as EXO_PORT
from collectors.parsers.exo_state import STATE_PATH, recognize_exo
from collectors.parsers.json_body import MAX_BYTES as JSON_MAX_BYTES
from collectors.parsers.mlx_lm import MODELS_PATH, recognize_mlx_lm
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.runner import OffLoop
from collectors.samples import InferenceSample
from collectors.transport.base import Transport

# Default ports: vLLM 8000 (``vllm serve --port``), SGLang 30000 (``--port``), llama.cpp
# server 8080 (``--port``; /metrics needs ``--metrics``), TGI 3000 (launcher ``--port``;
# 8080 in its container image, same as llama.cpp), and 8001, where a second server on
# the same node usually lands. mlx_lm.server also defaults to 8080 (mlx_lm/server.py
# ``--port``), and exo's API to 52415 (exo src/exo/main.py ``api_port``).
DEFAULT_PORTS: tuple[int, ...] = (8000, 8001, 8080, 3000, 30000, EXO_PORT)
LOOPBACK = "127.0.0.1"
METRICS_PATH = "/metrics"
REDISCOVER_S = 60.0
# A closed port is refused at once (locally or as a direct-tcpip open failure); this
# only bounds a port that accepts and never answers.
PROBE_TIMEOUT_S = 2.0
# Recognizing a server needs its metric names, not every series of the page.
RECOGNIZE_BYTES = 256 * 1024
# A port that answered as no inference server is asked again only after this long (or
# once the host reconnects: a rebooted node may run something else there).
NOT_A_SERVER_S = 600.0

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"})


def loopback_url(port: int) -> str:
    """The discovery URL of ``port`` on the node's loopback."""
    return f"http://{LOOPBACK}:{port}{METRICS_PATH}"


def _loopback_port(url: str) -> int | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or 80
    except ValueError:
        return None
    return port if host in _LOOPBACK_NAMES else None


def candidate_urls(configured: Iterable[str], ports: Iterable[int] = DEFAULT_PORTS) -> list[str]:
    """Loopback URLs to try: every default port that no configured loopback URL already covers."""
    taken = {p for p in (_loopback_port(u) for u in configured) if p is not None}
    seen: set[int] = set()
    out: list[str] = []
    for port in ports:
        if port not in taken and port not in seen:
            seen.add(port)
            out.append(loopback_url(port))
    return out


def recognize(url: str, status: int, body: bytes) -> InferenceSample | None:
    """The reading when ``url`` answered like an inference server, else None.

    Only the head of the page is read (``RECOGNIZE_BYTES``, cut at a line end): the
    reading only names the server; the polls that follow parse whole pages.
    """
    if status != 200:
        return None
    if len(body) > RECOGNIZE_BYTES:
        head = body[:RECOGNIZE_BYTES]
        body = head[: head.rfind(b"\n") + 1] or head
    sample = parse_inference_metrics(body.decode("utf-8", errors="replace"), url)
    return sample if sample.server is not None else None


@dataclass(slots=True)
class Discovery:
    """Which URLs of one host to poll: the configured ones plus what the ports answered."""

    configured: tuple[str, ...] = ()
    ports: tuple[int, ...] = DEFAULT_PORTS
    interval_s: float = REDISCOVER_S
    found: dict[str, str] = field(default_factory=dict)  # url -> server kind
    # url -> the page polled for it, where that is not the url (exo's /state, mlx_lm's
    # /v1/models found behind a port's /metrics URL)
    polled: dict[str, str] = field(default_factory=dict)
    last_run: float | None = None
    enabled: bool = True
    not_servers: dict[str, float] = field(default_factory=dict)  # url -> when it said so
    not_server_s: float = NOT_A_SERVER_S
    rounds: int = 0  # discovery rounds whose answers were taken
    # The rounds taken when a poll's readings last reached the host (-1: none yet).
    seen_round: int = -1

    @property
    def settled(self) -> bool:
        """A poll reached the host after a first discovery round (or, with discovery off,
        at all): what it says about its inference servers is known, not still coming."""
        return self.seen_round >= (1 if self.enabled else 0)

    def due(self, now: float, connected: bool) -> bool:
        """Whether to probe the ports now: at connect, then every ``interval_s``."""
        if not self.enabled or not connected:
            return False
        return self.last_run is None or now - self.last_run >= self.interval_s

    def reconnected(self) -> None:
        """The host came back (maybe rebooted): probe again at once, every port."""
        self.last_run = None
        self.not_servers.clear()

    def candidates(self) -> list[str]:
        """URLs discovery covers (configured loopback ports are never probed twice)."""
        return candidate_urls(self.configured, self.ports)

    def to_probe(self, now: float) -> list[str]:
        """This round's URLs: the candidates, less ports that recently answered as no server."""
        return [
            u
            for u in self.candidates()
            if now - self.not_servers.get(u, -self.not_server_s) >= self.not_server_s
        ]

    def update(self, now: float, answers: dict[str, InferenceSample | bool | None]) -> list[str]:
        """Take one round's answers; return URLs newly found.

        ``answers`` maps URL to the recognized reading, ``None`` when the port answered
        but is no inference server, or ``False`` when it did not answer at all. A server
        found once stays (its errors are shown) until its port answers as something else.
        """
        self.last_run = now
        self.rounds += 1
        new: list[str] = []
        for url, answer in answers.items():
            if isinstance(answer, InferenceSample):
                if url not in self.found:
                    new.append(url)
                self.found[url] = answer.server or "?"
                if answer.url != url:
                    self.polled[url] = answer.url
                else:
                    self.polled.pop(url, None)
                self.not_servers.pop(url, None)
            elif answer is None:
                self.found.pop(url, None)
                self.polled.pop(url, None)
                self.not_servers[url] = now
            else:
                self.not_servers.pop(url, None)  # nothing listens: a server may start there
        return new

    def urls(self) -> list[str]:
        """Configured URLs first, then discovered ones, in port order."""
        extra = [self.polled.get(u, u) for u in self.candidates() if u in self.found]
        return [*self.configured, *extra]


async def probe_url(
    transport: Transport,
    url: str,
    timeout: float = PROBE_TIMEOUT_S,
    parser: OffLoop | None = None,
    key: Hashable = "",
) -> InferenceSample | bool | None:
    """One port's answer: the reading, None (answered, not a server) or False (no answer).

    With ``parser``, the page is read in its worker threads (keyed by ``key`` and URL).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or LOOPBACK, parts.port or 80
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        status, body = await asyncio.wait_for(
            transport.http_get(host, port, parts.path or METRICS_PATH, timeout=timeout),
            timeout=timeout + 0.5,
        )
    except Exception:  # refused, timed out, not connected: nothing listens there
        return False
    try:
        if parser is None:
            found = recognize(url, status, body)
        else:
            found = await parser.run(("discover", key, url), recognize, url, status, body)
        if found is None:
            found = await _api_server(transport, host, port, status, deadline, parser, key)
        return found
    except TimeoutError:  # the head of a page takes milliseconds: a busy machine, ask again
        return False
    except Exception:  # a page the parser cannot read is no server we know
        return None


async def _api_server(
    transport: Transport,
    host: str,
    port: int,
    metrics_status: int,
    deadline: float,
    parser: OffLoop | None,
    key: Hashable,
) -> InferenceSample | None:
    """A server with no counters on this port: exo (``/state``), else mlx_lm (``/v1/models``).

    Asked in what is left of the port's time bound, bodies capped like any JSON page.
    """
    checks: list[tuple[str, Callable[[str, str], InferenceSample | None]]] = [
        (STATE_PATH, recognize_exo)
    ]
    if metrics_status == 404:
        checks.append((MODELS_PATH, partial(recognize_mlx_lm, metrics_status)))
    loop = asyncio.get_running_loop()
    for path, check in checks:
        left = deadline - loop.time()
        if left <= 0:
            return None
        try:
            status, body = await asyncio.wait_for(
                transport.http_get(host, port, path, timeout=left, max_bytes=JSON_MAX_BYTES),
                timeout=left + 0.5,
            )
        except Exception:
            continue  # that page did not come: the other may
        if status != 200:
            continue
        url = f"http://{host}:{port}{path}"
        text = body.decode("utf-8", errors="replace")
        found = (
            check(text, url)
            if parser is None
            else await parser.run(("discover", key, url), check, text, url)
        )
        if found is not None:
            return found
    return None


async def probe_ports(
    transport: Transport,
    urls: Iterable[str],
    timeout: float = PROBE_TIMEOUT_S,
    parser: OffLoop | None = None,
    key: Hashable = "",
) -> dict[str, InferenceSample | bool | None]:
    """Probe every URL at once; the whole round takes at most about ``timeout``."""
    todo = list(urls)
    answers = await asyncio.gather(*(probe_url(transport, u, timeout, parser, key) for u in todo))
    return dict(zip(todo, answers, strict=True))
