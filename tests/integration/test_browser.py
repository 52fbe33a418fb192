"""`textual serve`-style browser use: the page is served and the dashboard starts behind it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[2]

SERVER = """
import sys
from textual_serve.server import Server
Server(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]), title="fabtop").serve()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_textual_serve_runs_the_demo_dashboard(tmp_path: Path) -> None:
    try:
        import aiohttp
        import textual_serve  # noqa: F401
    except ImportError:
        skip_or_fail("textual-serve is not installed (pip install -e '.[test]')")
    port = _free_port()
    command = f"{sys.executable} -m fabtop --demo"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # The server's stderr goes to a file so that a failure below can say why.
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", SERVER, command, str(port)], cwd=REPO,
                                env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        async with aiohttp.ClientSession() as http:
            page = ""
            end = time.monotonic() + 10
            while time.monotonic() < end:
                try:
                    async with http.get(f"http://127.0.0.1:{port}/") as resp:
                        page = await resp.text()
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            assert "fabtop" in page
            async with http.ws_connect(f"ws://127.0.0.1:{port}/ws") as ws:
                await ws.send_json(["resize", {"width": 120, "height": 40}])
                seen = b""
                end = time.monotonic() + 15
                while time.monotonic() < end and b"node1" not in seen:
                    try:
                        msg = await ws.receive(timeout=max(0.1, end - time.monotonic()))
                    except TimeoutError:
                        break
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        seen += msg.data
                    elif msg.type == aiohttp.WSMsgType.TEXT:
                        seen += msg.data.encode()
                    else:
                        break
                why = log.read_text(errors="replace")[-2000:]
                assert b"node1" in seen, f"no hosts drawn in the browser; server said:\n{why}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("textual-serve did not stop on SIGTERM")
