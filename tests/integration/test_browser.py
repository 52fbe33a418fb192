"""``fabtop serve`` against what a web page and a program can send it (docs/BROWSER.md).

A real server on loopback, run as a user runs it (``python -m tui serve --demo``), and
a real WebSocket client sending what a browser sends: the Origin of the page it runs in.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, skip_or_fail

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
SNAPSHOTS = "fabtop-snapshot-*.json"
# What the terminal stream says once its escape sequences are gone: SGR, cursor moves,
# OSC strings; the toast's left edge (▌) and the line breaks of wrapped text go too.
ESCAPES = re.compile(
    rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    rb"|\x1b\][^\x07\x1b]*(\x07|\x1b\\)"  # OSC: title, hyperlinks
    rb"|\x1b[()][0-9A-B]"  # character sets
)

try:
    import aiohttp
except ImportError:  # pragma: no cover - the [serve] extra is part of [test]
    aiohttp = None


def text_of(stream: bytes) -> str:
    """The words the browser's terminal shows, in the order they were drawn."""
    return " ".join(ESCAPES.sub(b" ", stream).decode(errors="replace").replace("▌", " ").split())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


PROC = Path("/proc/self/stat").exists()


@dataclass
class Served:
    url: str  # http://127.0.0.1:PORT/TOKEN/
    proc: asyncio.subprocess.Process
    log: Path
    work: Path  # the server's current directory: where `s` would write
    port: int  # where it listens (the URL's, unless --public-url)

    @property
    def origin(self) -> str:
        return "/".join(self.url.split("/")[:3])

    @property
    def token(self) -> str:
        return self.url.split("/")[3]

    @property
    def ws(self) -> str:
        return "ws" + self.url.removeprefix("http") + "ws"

    def said(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_said(self, what: Callable[[str], bool], why: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while not what(self.said()):
            if time.monotonic() > end:
                pytest.fail(f"{why}; the server said:\n{self.said()[-2000:]}")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def served(tmp_path: Path, *args: str) -> AsyncIterator[Served]:
    if aiohttp is None:
        skip_or_fail("aiohttp is not installed (pip install -e '.[test]')")
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        skip_or_fail("textual-serve is not installed (pip install -e '.[serve]')")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    log = tmp_path / "serve.log"
    port = free_port()
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",  # as the fabtop command runs: nothing imported from the current directory
            "-m",
            "tui",
            "serve",
            "--demo",
            "--port",
            str(port),
            *args,
            cwd=work,
            env=ENV,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
        )
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        m = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/", first)
        assert m, f"no URL in {first!r}; the server said:\n{log.read_text()}"
        yield Served(m.group(0), proc, log, work, port)
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                pytest.fail("fabtop serve did not stop on SIGTERM")


async def refused(http: Any, url: str, origin: str | None) -> int:
    """The HTTP status a WebSocket handshake got, failing the test if it was accepted."""
    headers = {"Origin": origin} if origin is not None else {}
    try:
        async with http.ws_connect(url, headers=headers):
            pytest.fail(f"WebSocket accepted: {url} with Origin {origin}")
    except aiohttp.WSServerHandshakeError as e:
        return int(e.status)
    raise AssertionError("not reached")


async def read_until(ws: Any, seen: Callable[[str], bool], timeout: float = 30) -> str:
    """What the session drew until ``seen`` is true of it (or the time is up)."""
    stream = b""
    end = time.monotonic() + timeout
    while not seen(text_of(stream)) and time.monotonic() < end:
        try:
            msg = await ws.receive(timeout=max(0.1, end - time.monotonic()))
        except TimeoutError:
            break
        if msg.type == aiohttp.WSMsgType.BINARY:
            stream += msg.data
        elif msg.type != aiohttp.WSMsgType.TEXT:
            break
    return text_of(stream)


async def open_dashboard(http: Any, srv: Served) -> tuple[Any, str]:
    """A session as the page opens it; returns it once the demo's hosts are drawn."""
    ws = await http.ws_connect(srv.ws + "?width=140&height=44", headers={"Origin": srv.origin})
    await ws.send_json(["resize", {"width": 140, "height": 44}])
    drawn = await read_until(ws, lambda t: "node1" in t and "node2" in t)
    assert "node1" in drawn, f"no hosts drawn; the server said:\n{srv.said()[-2000:]}"
    return ws, drawn


def started(srv: Served) -> int:
    return srv.said().count(" started for ")


async def test_the_printed_url_serves_the_page_and_the_dashboard(tmp_path: Path) -> None:
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        async with http.get(srv.url) as resp:
            page = await resp.text()
            assert resp.status == 200
            assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert f'data-session-websocket-url="{srv.ws}"' in page
        async with http.get(f"{srv.url}static/js/textual.js") as resp:
            assert resp.status == 200
        ws, drawn = await open_dashboard(http, srv)
        assert "node2" in drawn
        await ws.close()


async def test_a_websocket_from_another_origin_is_refused_and_starts_nothing(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        port = srv.origin.rsplit(":", 1)[1]
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            "http://127.0.0.1:1",
            f"https://127.0.0.1:{port}",
            f"http://localhost:{port}",
            "null",
            "",
        ):
            assert await refused(http, srv.ws, origin) == 403, origin
        assert "refused a WebSocket from origin 'http://evil.example'" in srv.said()
        assert started(srv) == 0
        assert not children(srv.proc.pid)
        # The same server, the page's own origin: a session (so the refusals were no outage).
        ws, _ = await open_dashboard(http, srv)
        await ws.close()
        assert started(srv) == 1


async def test_no_token_or_a_wrong_one_is_403_everywhere(tmp_path: Path) -> None:
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        t = srv.token
        wrong = ("", "x", t[:-1], t + "x", t[:-1] + ("A" if t[-1] != "A" else "B"), "é")
        for bad in wrong:
            for path in ("", "ws", "static/js/textual.js"):
                async with http.get(f"{srv.origin}/{bad}/{path}") as resp:
                    assert resp.status == 403, (bad, path)
                    assert "node1" not in await resp.text()
            for origin in (srv.origin, None):
                ws = f"ws{srv.origin.removeprefix('http')}/{bad}/ws"
                assert await refused(http, ws, origin) == 403, (bad, origin)
        assert await refused(http, f"ws{srv.origin.removeprefix('http')}/ws", None) == 403
        assert started(srv) == 0
        assert not children(srv.proc.pid)


async def test_a_program_without_origin_but_with_the_token_gets_a_session(
    tmp_path: Path,
) -> None:
    # Browsers always send Origin; a program leaves it out, and could forge any: the
    # token is its credential.
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        ws = await http.ws_connect(srv.ws)
        await ws.send_json(["resize", {"width": 140, "height": 44}])
        assert "node1" in await read_until(ws, lambda t: "node1" in t)
        await ws.close()


async def test_a_fifth_session_is_refused_while_four_are_open(tmp_path: Path) -> None:
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        tabs = [await http.ws_connect(srv.ws, headers={"Origin": srv.origin}) for _ in range(4)]
        await srv.wait_said(lambda s: s.count(" started for ") == 4, "four sessions not started")
        assert await refused(http, srv.ws, srv.origin) == 503
        async with http.get(srv.url) as resp:
            assert resp.status == 503
            assert "4 browser sessions are open" in await resp.text()
        assert started(srv) == 4
        if PROC:
            assert len(children(srv.proc.pid)) == 4
        # A tab closed frees its place, and its fabtop is gone.
        before = children(srv.proc.pid)
        await tabs.pop().close()
        await srv.wait_said(lambda s: "ended (3 of 4 open)" in s, "the closed tab was kept")
        if PROC:
            assert len(children(srv.proc.pid)) == 3
            assert all(not alive(p) for p in before - children(srv.proc.pid))
        tabs.append(await http.ws_connect(srv.ws, headers={"Origin": srv.origin}))
        await srv.wait_said(lambda s: s.count(" started for ") == 5, "the freed place not used")
        for ws in tabs:
            await ws.close()


@pytest.mark.parametrize("allow", [False, True], ids=["read-only", "allow-write"])
async def test_the_snapshot_key_writes_only_with_allow_write(tmp_path: Path, allow: bool) -> None:
    from tui.app import WRITE_OFF

    args = ("--allow-write",) if allow else ()
    async with served(tmp_path, *args) as srv, aiohttp.ClientSession() as http:
        ws, _ = await open_dashboard(http, srv)
        await ws.send_json(["stdin", "s"])
        answer = "snapshot written to" if allow else " ".join(WRITE_OFF.split())
        drawn = await read_until(ws, lambda t: answer in t)
        assert answer in drawn, drawn[-1500:]
        written = list(srv.work.glob(SNAPSHOTS))
        assert len(written) == (1 if allow else 0), written
        assert list(srv.work.iterdir()) == written  # nothing else either
        await ws.close()


async def test_stopping_the_server_stops_every_session(tmp_path: Path) -> None:
    if not PROC:
        skip_or_fail("no /proc to see the sessions' processes")
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        ws, _ = await open_dashboard(http, srv)
        sessions = children(srv.proc.pid)
        assert len(sessions) == 1
        srv.proc.terminate()
        assert await asyncio.wait_for(srv.proc.wait(), 30) == 0
        assert not any(alive(p) for p in sessions)
        await ws.close()


async def test_a_session_whose_fabtop_dies_frees_its_place(tmp_path: Path) -> None:
    if not PROC:
        skip_or_fail("no /proc to find the session's process")
    async with served(tmp_path, "--sessions", "1") as srv, aiohttp.ClientSession() as http:
        ws, _ = await open_dashboard(http, srv)
        [pid] = children(srv.proc.pid)
        os.kill(pid, signal.SIGKILL)
        await srv.wait_said(lambda s: "ended (0 of 1 open)" in s, "a dead session kept its place")
        # What the session drew before it died may still be queued: then the close.
        closed = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        for _ in range(10_000):
            if (await ws.receive(timeout=10)).type in closed:
                break
        else:
            raise AssertionError("the socket of a dead session was never closed")
        ws2, _ = await open_dashboard(http, srv)
        await ws2.close()


async def test_behind_a_tunnel_the_public_url_is_the_only_origin(tmp_path: Path) -> None:
    # ssh -L 9000:127.0.0.1:PORT: the browser opens http://127.0.0.1:9000.
    public = "http://127.0.0.1:9000"
    async with (
        served(tmp_path, "--public-url", public) as srv,
        aiohttp.ClientSession() as http,
    ):
        assert srv.url.startswith(f"{public}/")  # the printed URL is the one to open
        direct = f"ws://127.0.0.1:{srv.port}/{srv.token}/ws"
        async with http.get(f"http://127.0.0.1:{srv.port}/{srv.token}/") as resp:
            assert f'data-session-websocket-url="ws://127.0.0.1:9000/{srv.token}/ws"' in (
                await resp.text()
            )
        assert await refused(http, direct, f"http://127.0.0.1:{srv.port}") == 403
        ws = await http.ws_connect(direct, headers={"Origin": public})
        await srv.wait_said(lambda s: " started for " in s, "the tunnel's origin was refused")
        await ws.close()


async def test_a_fabtop_package_in_the_current_directory_is_not_what_a_tab_runs(
    tmp_path: Path,
) -> None:
    # Serving from /tmp, where another user planted tui/__main__.py (what a tab runs) and
    # the packages it imports.
    for package, module in (
        ("tui", "__main__"),
        ("fabtop", "__init__"),
        ("collectors", "__init__"),
    ):
        planted = tmp_path / "work" / package
        planted.mkdir(parents=True)
        (planted / "__init__.py").write_text("")
        (planted / f"{module}.py").write_text(
            "import pathlib; pathlib.Path('HIJACKED').write_text('ran')\n"
        )
    async with served(tmp_path) as srv, aiohttp.ClientSession() as http:
        ws, _ = await open_dashboard(http, srv)
        await ws.close()
        assert not (srv.work / "HIJACKED").exists()
