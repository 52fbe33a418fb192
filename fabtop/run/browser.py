"""The browser view's web server (``fabtop serve``, docs/BROWSER.md).

textual-serve supplies the page, its JavaScript terminal and the protocol spoken with a
Textual app run under its web driver (:class:`AppService`); this module puts the checks
DESIGN §10 asks for in front of them, each before any process is started:

- every route lives under ``/<token>/``: a random token of 192 bits, printed in the URL
  on start and compared in constant time; without it every request is a 403;
- a WebSocket whose ``Origin`` is not the served origin is a 403: a web page in the
  operator's browser cannot drive the dashboard, whatever it knows;
- at most ``sessions`` tabs at once; the next is a 503;
- each session's fabtop is started without a shell, and with its keys that write files
  off unless ``--allow-write``.

textual-serve's own Server is not used: it answers any origin and any path, starts a
process through the shell for every WebSocket, and serves downloads at the origin's
root, where a token in the path cannot guard them (fabtop delivers no files).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import secrets
import shlex
import signal
import sys
from asyncio.subprocess import PIPE, Process
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import jinja2
import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from collectors.numbers import parse_int
from collectors.text import clean
from fabtop.run.export import ErrorLog

TOKEN_BYTES = 24  # secrets.token_urlsafe: 192 random bits, 32 URL-safe characters
STOP_S = 10.0  # a session's fabtop gets this long to quit before it is killed
MAX_MESSAGE = 256 * 1024  # one WebSocket message: keystrokes and pastes, never more
MAX_CELLS = 1000  # a resize to more columns or rows than this is taken as this
PAGES = Path(textual_serve.__file__).parent
# Every answer: the token in the URL must not leave in a Referer (the page loads a web
# font), the page must not be framed by another site, and nothing is cached.
HEADERS = {"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


class BindError(ValueError):
    """An address ``fabtop serve`` will not listen on as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class BindPlan:
    """Where to listen, and the origin browsers will show (None: http://HOST:PORT)."""

    host: str
    port: int
    public_origin: str | None = None
    warning: str | None = None  # said on stderr at start: listening beyond loopback

    @property
    def origin(self) -> str:
        """The served origin: what a browser's Origin header must be."""
        if self.public_origin is not None:
            return self.public_origin
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL with no path; raises BindError."""
    bad = BindError(f"--public-url {clean(url, 100)!r}: want http(s)://HOST[:PORT], no path")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad from None
    host = parts.hostname
    if (
        parts.scheme not in ("http", "https")
        or not host
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        raise bad
    host = f"[{host}]" if ":" in host else host
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def bind_plan(
    host: str, port: int, *, allow_remote: bool = False, public_url: str | None = None
) -> BindPlan:
    """Check ``--host`` against ``--allow-remote`` and ``--public-url``; raises BindError.

    Loopback (127.0.0.0/8, ::1, localhost) needs nothing. Any other address needs
    --allow-remote and is warned about: there is no TLS, so the token crosses the network
    in clear. An address of every interface (0.0.0.0, ::) also needs --public-url: no
    browser opens http://0.0.0.0, and the Origin check needs the address one does open.
    """
    if not 0 < port < 65536:
        raise BindError(f"--port {port}: want a port, 1..65535")
    public = origin_of(public_url) if public_url else None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return BindPlan(host, port, public)
    shown = clean(host, 100)
    if not allow_remote:
        raise BindError(
            f"--host {shown} is not a loopback address: the browser view has no TLS, and "
            "whoever reaches the port and learns the URL watches the fabric; reach it "
            "through an SSH tunnel (docs/BROWSER.md), or add --allow-remote"
        )
    if ip is not None and ip.is_unspecified and public is None:
        raise BindError(
            f"--host {shown} listens on every address: give --public-url, the address "
            "browsers will open (WebSockets from any other origin are refused)"
        )
    return BindPlan(
        host,
        port,
        public,
        warning=(
            f"listening on {shown}, beyond this machine, without TLS: the token in the URL "
            "crosses the network in clear; prefer 127.0.0.1 and an SSH tunnel"
        ),
    )


@dataclass(slots=True)
class ServeOptions:
    """What ``fabtop serve`` was asked for."""

    argv: list[str]  # each session's fabtop, run without a shell
    plan: BindPlan
    sessions: int = 4
    allow_write: bool = False
    title: str = "fabtop"


class Session(AppService):
    """One browser tab's fabtop: textual-serve's protocol, the process started without a
    shell (so that nothing of the command line is shell text, and a kill reaches fabtop)."""

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self.process: Process | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        env = self._build_environment(width=width, height=height)
        self.process = self._process = proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
        )
        assert proc.stdin is not None
        self._stdin = proc.stdin
        return proc


def _cells(value: object, default: int) -> int:
    """A terminal size from the browser: a whole number in 1..MAX_CELLS."""
    n = parse_int(str(value)) if isinstance(value, int | str) else None
    return default if n is None or n < 1 else min(n, MAX_CELLS)


@dataclass
class BrowserView:
    """The aiohttp app: the token, the Origin check and the cap in front of the sessions."""

    opts: ServeOptions
    token: str = field(default_factory=lambda: secrets.token_urlsafe(TOKEN_BYTES))
    origin: str = ""  # the served origin, set once the port is bound
    log: TextIO | None = None  # stderr when None
    live: dict[Session, web.WebSocketResponse] = field(default_factory=dict)
    started: int = 0  # sessions started since the server started
    # One rate-limited line per kind of refusal: a page hammering the port is one line
    # each ten seconds, and never hides that a tab was refused for the cap.
    refusals: dict[str, ErrorLog] = field(default_factory=dict)
    downloads: DownloadManager = field(default_factory=DownloadManager)
    pages: jinja2.Environment = field(
        default_factory=lambda: jinja2.Environment(
            loader=jinja2.FileSystemLoader(PAGES / "templates"), autoescape=True
        )
    )

    @property
    def url(self) -> str:
        """The address to open: the served origin and the token."""
        return f"{self.origin}/{self.token}/"

    def say(self, line: str) -> None:
        """One line on stderr (session starts and ends: bounded by --sessions)."""
        out = self.log or sys.stderr
        out.write(f"fabtop: serve: {line}\n")
        out.flush()

    def refused(self, kind: str, line: str) -> None:
        """Say a refusal, at most one line of each ``kind`` per ErrorLog period."""
        if kind not in self.refusals:
            self.refusals[kind] = ErrorLog(stream=self.log, command="serve")
        self.refusals[kind].say(f"refused {line}")

    def app(self) -> web.Application:
        """Every route under /<token>/; the guard answers 403 to anything else."""
        app = web.Application(middlewares=[self._guard])
        base = f"/{self.token}"
        app.add_routes(
            [
                web.get(base, self._page),
                web.get(f"{base}/", self._page),
                web.get(f"{base}/ws", self._websocket),
                web.static(f"{base}/static", PAGES / "static"),
            ]
        )
        app.on_response_prepare.append(self._headers)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        # Before routing's answer is seen: a request without the token learns nothing,
        # not even whether the path exists. Bytes: compare_digest refuses non-ASCII str.
        # ("OPTIONS *" has a path without any /.)
        first = request.path.split("/", 2)[1:2] or [""]
        if not hmac.compare_digest(first[0].encode(), self.token.encode()):
            self.refused(
                "token", f"a request from {request.remote}: no token, or not this server's"
            )
            return web.Response(
                status=403,
                text="fabtop serve: open the URL it printed when it started (it carries a token)\n",
            )
        response: web.StreamResponse = await handler(request)
        return response

    async def _headers(self, _: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(HEADERS)

    def _full(self) -> str | None:
        """Why one more session is refused, or None while there is room."""
        if len(self.live) < self.opts.sessions:
            return None
        return (
            f"{len(self.live)} browser sessions are open, the most fabtop serve allows "
            "(--sessions): close a tab, or restart it with --sessions N"
        )

    async def _page(self, request: web.Request) -> web.Response:
        if (full := self._full()) is not None:
            return web.Response(status=503, text=f"fabtop serve: {full}\n")
        scheme, rest = self.origin.split(":", 1)
        html = self.pages.get_template("app_index.html").render(
            font_size=_cells(request.query.get("fontsize"), 16),
            app_websocket_url=f"{'wss' if scheme == 'https' else 'ws'}:{rest}/{self.token}/ws",
            config={"static": {"url": f"/{self.token}/static/"}},
            application={"name": self.opts.title},
        )
        return web.Response(text=html, content_type="text/html")

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        # A browser always sends Origin with a WebSocket; only a program leaves it out,
        # and a program on this machine could send any Origin it likes: the token is
        # what it needs, and it has it (the guard let it through).
        origin = request.headers.get("Origin")
        if origin is not None and origin != self.origin:
            self.refused(
                "origin",
                f"a WebSocket from origin {clean(origin, 100)!r}: the "
                f"page is served as {self.origin} (--public-url when browsers open "
                "it at another address)",
            )
            return web.Response(
                status=403, text="fabtop serve: WebSocket from another origin refused\n"
            )
        if (full := self._full()) is not None:
            self.refused("full", f"a session from {request.remote}: {full}")
            return web.Response(status=503, text=f"fabtop serve: {full}\n")
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="fabtop serve: a WebSocket upgrade expected\n")
        session = Session(
            self.opts.argv,
            write_bytes=ws.send_bytes,
            write_str=ws.send_str,
            close=ws.close,
            download_manager=self.downloads,
        )
        # Counted before the first await: a handshake arriving meanwhile sees it.
        self.live[session] = ws
        try:
            await ws.prepare(request)
            await session.start(
                _cells(request.query.get("width"), 80), _cells(request.query.get("height"), 24)
            )
            self.started += 1
            pid = session.process.pid if session.process else "?"
            self.say(
                f"session {self.started} started for {request.remote} (pid {pid}; "
                f"{len(self.live)} of {self.opts.sessions} open)"
            )
            ended = asyncio.create_task(self._close_when_gone(session, ws))
            try:
                await self._relay(ws, session)
            finally:
                ended.cancel()
        finally:
            await self._stop(session)
            del self.live[session]
            self.say(f"a session ended ({len(self.live)} of {self.opts.sessions} open)")
        return ws

    async def _relay(self, ws: web.WebSocketResponse, session: Session) -> None:
        """The browser's messages to the session, as textual-serve's page sends them."""
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await session.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                await session.set_terminal_size(
                    _cells(data.get("width"), 80), _cells(data.get("height"), 24)
                )
            elif kind == "ping":
                await ws.send_json(["pong", data])
            elif kind == "blur":
                await session.blur()
            elif kind == "focus":
                await session.focus()

    async def _close_when_gone(self, session: Session, ws: web.WebSocketResponse) -> None:
        """Close the tab when its fabtop is gone: killed, or crashed without saying "exit"
        (a clean quit closes it through textual-serve), so its place is not held."""
        if session.process is not None:
            await session.process.wait()
            await ws.close(message=b"fabtop ended")

    async def _stop(self, session: Session) -> None:
        """Ask the session's fabtop to quit; kill it when it has not after STOP_S."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.stop(), STOP_S)
        proc = session.process
        if proc is None:
            return
        try:
            await asyncio.wait_for(proc.wait(), STOP_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def close(self) -> None:
        """Close every tab's WebSocket: each session's handler then stops its fabtop."""
        for ws in list(self.live.values()):
            with contextlib.suppress(Exception):
                await ws.close(message=b"fabtop serve stopped")

    def kill(self) -> None:
        """Kill what is left: a session whose handler did not finish stopping it."""
        for session in self.live:
            if session.process is not None and session.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    session.process.kill()


async def serve(opts: ServeOptions, out: TextIO | None = None) -> int:
    """Serve until SIGINT/SIGTERM; 0 on a clean stop, 2 when the address cannot be bound."""
    out = out or sys.stdout
    view = BrowserView(opts)
    runner = web.AppRunner(
        view.app(), handle_signals=False, access_log=None, shutdown_timeout=STOP_S
    )
    await runner.setup()
    plan = opts.plan
    try:
        site = web.TCPSite(runner, plan.host, plan.port)
        await site.start()
    except OSError as e:
        await runner.cleanup()
        print(
            f"fabtop: cannot listen on {clean(plan.host, 100)}:{plan.port}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 2
    view.origin = plan.origin
    if plan.warning:
        view.say(f"warning: {plan.warning}")
    writes = "on (--allow-write)" if opts.allow_write else "off"
    print(
        f"fabtop: serving the dashboard at {view.url}\n"
        f"fabtop: the URL is the key: whoever has it watches the fabric with your SSH "
        f"access; at most {opts.sessions} tabs, writing files {writes}; Ctrl-C stops",
        file=out,
        flush=True,
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await view.close()
        await runner.cleanup()
        view.kill()  # nothing of fabtop serve outlives it
    return 0
