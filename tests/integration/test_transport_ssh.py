"""SshTransport against a real OpenSSH sshd on loopback."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from collectors.transport.base import HostKeyError, TransportError
from collectors.transport.ssh import SshTransport, Target, parse_target
from tests.integration.httpd import QuietHandler, serve
from tests.integration.sshd import Sshd, free_port

pytestmark = pytest.mark.sshd


class _Metrics(QuietHandler):
    def do_GET(self) -> None:
        if self.path == "/metrics":
            self.reply(b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
        else:
            self.reply(b"not here\n", 404)


@pytest.fixture
def http_port() -> Iterator[int]:
    with serve(_Metrics) as port:
        yield port


async def test_run_quotes_arguments(sshd: Sshd) -> None:
    t = sshd.transport()
    await t.connect()
    try:
        rc, out, err = await t.run(["printf", "%s|", "a b", "it's", "$HOME", ";false"], 5)
        assert (rc, out, err) == (0, b"a b|it's|$HOME|;false|", b"")
        rc, _, _ = await t.run(["sh", "-c", "exit 7"], 5)
        assert rc == 7
    finally:
        await t.close()


async def test_stream_yields_chunks_before_the_script_exits(sshd: Sshd) -> None:
    t = sshd.transport()
    await t.connect()
    # stdin stays open after the script: a script that is done exits itself.
    script = 'for i in 1 2 3; do echo "line $i $1"; sleep 0.3; done; exit\n'
    arrivals: list[tuple[float, bytes]] = []
    try:
        async for chunk in t.stream(script, ["arg with space"]):
            arrivals.append((time.monotonic(), chunk))
    finally:
        await t.close()
    text = b"".join(c for _, c in arrivals).decode()
    assert text == "".join(f"line {i} arg with space\n" for i in (1, 2, 3))
    # The first line must be delivered while the script still sleeps, not at exit.
    assert len(arrivals) >= 2
    assert arrivals[-1][0] - arrivals[0][0] > 0.4


async def test_stream_failure_reports_exit_status_and_stderr(sshd: Sshd) -> None:
    t = sshd.transport(name="gpu3")
    await t.connect()
    try:
        with pytest.raises(TransportError) as err:
            async for _ in t.stream("echo partial; echo 'ethtool: boom' >&2; exit 4\n", []):
                pass
    finally:
        await t.close()
    msg = str(err.value)
    assert msg.startswith("gpu3 (")
    assert "status 4" in msg and "ethtool: boom" in msg and "\n" not in msg


async def test_http_get_goes_through_the_ssh_connection(sshd: Sshd, http_port: int) -> None:
    t = sshd.transport()
    await t.connect()
    try:
        status, body = await t.http_get("127.0.0.1", http_port, "/metrics", 5)
        assert status == 200
        assert b"vllm:num_requests_running 3" in body
        status, _ = await t.http_get("127.0.0.1", http_port, "/nope", 5)
        assert status == 404
        with pytest.raises(TransportError, match="/metrics"):
            await t.http_get("127.0.0.1", free_port(), "/metrics", 5)
        with pytest.raises(TransportError, match="refusing HTTP path"):
            await t.http_get("127.0.0.1", http_port, "/x\r\nEvil: 1", 5)
    finally:
        await t.close()


async def test_unknown_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    t = sshd.transport(name="gpu3", known_hosts=str(empty))
    with pytest.raises(HostKeyError) as err:
        await t.connect()
    msg = str(err.value)
    assert msg.startswith(f"gpu3 ({sshd.target})")
    assert f"[127.0.0.1]:{sshd.port}" in msg and str(empty) in msg
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1" in msg
    assert "CHANGED" not in msg


async def test_changed_host_key_is_refused_and_called_changed(sshd: Sshd, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    t = sshd.transport(name="gpu3", known_hosts=str(kh))
    with pytest.raises(HostKeyError, match="HOST KEY CHANGED") as err:
        await t.connect()
    assert f"[127.0.0.1]:{sshd.port}" in str(err.value)
    assert "ssh-keygen -R" in str(err.value)


async def test_refused_port_fails_fast(sshd: Sshd) -> None:
    t = SshTransport(
        "gpu9", f"root@127.0.0.1:{free_port()}", config_paths=[], agent=None, connect_timeout=5
    )
    start = time.monotonic()
    with pytest.raises(TransportError) as err:
        await t.connect()
    assert time.monotonic() - start < 2
    assert str(err.value).startswith("gpu9 (root@127.0.0.1:")
    assert "refused" in str(err.value)


async def test_connect_timeout_is_honoured() -> None:
    # A listener that never speaks SSH: the kernel completes the TCP handshake from the backlog.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        t = SshTransport(
            "gpu9", f"root@127.0.0.1:{port}", config_paths=[], agent=None, connect_timeout=0.5
        )
        start = time.monotonic()
        with pytest.raises(TransportError, match=r"timed out after 0\.5 s"):
            await t.connect()
        assert time.monotonic() - start < 2


async def test_ssh_config_alias_is_honoured(sshd: Sshd, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host fabtop-alias\n"
        f"    HostName {sshd.host}\n"
        f"    Port {sshd.port}\n"
        f"    User {sshd.user}\n"
        f"    IdentityFile {sshd.client_key_path}\n"
        "    IdentitiesOnly yes\n"
        f"    UserKnownHostsFile {sshd.known_hosts_path}\n"
    )
    # No user, port, key or known_hosts given here: all of them must come from the config.
    t = SshTransport("gpu1", "fabtop-alias", config_paths=[str(cfg)], agent=None)
    await t.connect()
    try:
        rc, out, _ = await t.run(["id", "-un"], 5)
        assert (rc, out.decode().strip()) == (0, sshd.user)
    finally:
        await t.close()


async def test_rtt_is_measured(sshd: Sshd) -> None:
    t = sshd.transport(keepalive_interval=0.5)
    await t.connect()
    try:
        assert t.rtt_s is None or t.rtt_s >= 0
        for _ in range(100):
            if t.rtt_s is not None:
                break
            await asyncio.sleep(0.02)
        assert t.rtt_s is not None and 0 < t.rtt_s < 1
    finally:
        await t.close()


def test_target_syntax() -> None:
    assert parse_target("admin@10.0.0.3:2222") == Target("10.0.0.3", "admin", 2222)
    assert parse_target("gpu3") == Target("gpu3", None, None)
    assert parse_target("admin@[fe80::1%eth0]:22") == Target("fe80::1%eth0", "admin", 22)
    assert str(parse_target("[::1]:2222")) == "[::1]:2222"
    for bad in ("-oProxyCommand=x", "a@-b", "host:0", "host:99999", "a b", "h;rm", "@h", ""):
        with pytest.raises(ValueError):
            parse_target(bad)
    with pytest.raises(TransportError, match=r"^gpu3: bad SSH target"):
        SshTransport("gpu3", "-oProxyCommand=touch /tmp/x")


async def test_wrong_client_key_is_an_auth_error(sshd: Sshd, tmp_path: Path) -> None:
    stranger = tmp_path / "id_stranger"
    stranger.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    t = sshd.transport(name="gpu3", client_keys=[str(stranger)])
    with pytest.raises(TransportError, match=r"^gpu3 \(.*\): authentication failed") as err:
        await t.connect()
    assert not isinstance(err.value, HostKeyError)
