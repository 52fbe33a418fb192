"""docs/BROWSER.md as written: the page is served and the dashboard starts behind it."""

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

DOC = REPO / "docs" / "BROWSER.md"


def _doc_server(port: int) -> str:
    """The Python of docs/BROWSER.md's first block, as written, on ``port`` instead of 8000."""
    block = DOC.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    code = block.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    assert "port=8000" in code, code
    return code.replace("port=8000", f"port={port}")


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
    if not (REPO / ".venv/bin/fabtop").exists():
        skip_or_fail("no .venv/bin/fabtop in the checkout (make demo)")
    port = _free_port()
    # As a new user runs it from the checkout: no venv activated, fabtop not on PATH.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    # The server's stderr goes to a file so that a failure below can say why.
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _doc_server(port)], cwd=REPO,
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
