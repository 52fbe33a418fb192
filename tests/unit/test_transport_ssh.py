"""SshTransport without a server: connecting (asyncssh.connect faked)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from collectors.transport import ssh as ssh_mod
from collectors.transport.ssh import SshTransport


class _FakeConn:
    def __init__(self) -> None:
        self.closed = False

    def is_closed(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


async def test_concurrent_connects_share_one_ssh_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The focus stream and the main runner connect on the same transport; when both
    # (re)connect at once only one connection may be opened, or the other one leaks.
    opened: list[_FakeConn] = []

    async def fake_connect(host: str, **kw: Any) -> _FakeConn:
        await asyncio.sleep(0.05)
        conn = _FakeConn()
        opened.append(conn)
        return conn

    monkeypatch.setattr(ssh_mod.asyncssh, "connect", fake_connect)
    t = SshTransport("gpu1", "admin@10.0.0.1", keepalive_interval=60)
    await asyncio.gather(t.connect(), t.connect())
    try:
        assert len(opened) == 1
    finally:
        await t.close()
    assert all(c.closed for c in opened)
