"""Config is data, against a real sshd: a shared fabtop.toml's ssh_config runs no command
unless the operator allows it, and the operator's agent is never forwarded to a node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from collectors.transport.base import TransportError
from tests.conftest import skip_or_fail
from tests.integration.sshd import Sshd
from tests.integration.test_snapshot_cli import fabtop

pytestmark = pytest.mark.sshd

# What a ProxyCommand runs: leave a marker, then carry the SSH stream to host:port.
RELAY = """\
import os, socket, sys, threading
host, port, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
open(marker, "w").close()
s = socket.create_connection((host, port))
def up():
    while (b := os.read(0, 65536)):
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while (b := s.recv(65536)):
    os.write(1, b)
"""


def _shared(tmp: Path, sshd: Sshd, command_line: str) -> Path:
    """A fabtop.toml someone else wrote, naming their ssh_config (with ``command_line``)."""
    (tmp / "relay.py").write_text(RELAY)
    ssh = tmp / "team" / "ssh_config"
    ssh.parent.mkdir()
    ssh.write_text(
        f"Host *\n  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n  {command_line}\n"
    )
    toml = tmp / "team" / "shared.toml"
    toml.write_text(
        f'ssh_config = "{ssh}"\nknown_hosts = "{sshd.known_hosts_path}"\n'
        f'[[host]]\nname = "n1"\nssh = "{sshd.target}"\n'
    )
    return toml


@pytest.mark.parametrize(
    ("line", "option"),
    [
        ("ProxyCommand {py} {relay} %h %p {marker}", "ProxyCommand"),
        ('Match exec "touch {marker}"', "Match exec"),
    ],
)
def test_a_shared_config_runs_no_command_without_the_flag(
    tmp_path: Path, sshd: Sshd, line: str, option: str
) -> None:
    marker = tmp_path / "ran"
    command = line.format(py=sys.executable, relay=tmp_path / "relay.py", marker=marker)
    toml = _shared(tmp_path, sshd, command)
    ssh = tmp_path / "team" / "ssh_config"
    r = fabtop(
        "snapshot",
        "--interval",
        "0.5",
        "--timeout",
        "15",
        "-c",
        str(toml),
        "-o",
        str(tmp_path / "snap.json"),
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        f"fabtop: {toml}: ssh_config {ssh} line 4: {option} runs a local "
        "command; pass --allow-ssh-commands to allow it\n"
    )
    assert not marker.exists()
    assert not (tmp_path / "snap.json").exists()


def test_with_the_flag_the_proxy_command_carries_the_connection(tmp_path: Path, sshd: Sshd) -> None:
    marker = tmp_path / "ran"
    toml = _shared(
        tmp_path, sshd, f"ProxyCommand {sys.executable} {tmp_path / 'relay.py'} %h %p {marker}"
    )
    out = tmp_path / "snap.json"
    r = fabtop(
        "snapshot",
        "--interval",
        "0.5",
        "--timeout",
        "15",
        "-c",
        str(toml),
        "--allow-ssh-commands",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert marker.exists()
    (host,) = json.loads(out.read_text())["hosts"]
    assert host["reachable"] is True and host["error"] is None


@pytest.fixture
def agent(tmp_path: Path, sshd: Sshd) -> Iterator[str]:
    """A real ssh-agent holding the test key; its socket path."""
    sock = str(tmp_path / "agent.sock")
    try:
        out = subprocess.run(
            ["ssh-agent", "-s", "-a", sock], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        skip_or_fail(f"cannot start ssh-agent: {exc}")
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        subprocess.run(
            ["ssh-add", str(sshd.client_key_path)],
            capture_output=True,
            timeout=10,
            check=True,
            env={**os.environ, "SSH_AUTH_SOCK": sock},
        )
        yield sock
    finally:
        os.kill(pid, signal.SIGTERM)


async def _remote_auth_sock(sshd: Sshd, agent: str, ssh_config: Path, **kw: object) -> str:
    t = sshd.transport(agent=agent, client_keys=None, config_paths=[str(ssh_config)], **kw)
    await t.connect()
    try:
        rc, out, _ = await t.run(["sh", "-c", "echo ${SSH_AUTH_SOCK:-none}"], 10)
    finally:
        await t.close()
    assert rc == 0
    return out.decode().strip()


async def test_forward_agent_in_any_ssh_config_is_never_honoured(
    tmp_path: Path, sshd: Sshd, agent: str
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  ForwardAgent yes\n")
    # The same sshd forwards an agent to a client that asks: the check below can fail.
    async with asyncssh.connect(
        sshd.host,
        sshd.port,
        username=sshd.user,
        known_hosts=str(sshd.known_hosts_path),
        agent_path=agent,
        config=[str(cfg)],
    ) as conn:
        asked = await conn.run("echo ${SSH_AUTH_SOCK:-none}", check=True)
    assert str(asked.stdout).strip() != "none"
    # fabtop logs in with that agent, and neither the operator's own config nor a
    # config file's forwards it.
    for commands in (True, False):
        assert await _remote_auth_sock(sshd, agent, cfg, config_commands=commands) == "none"


async def test_an_ssh_config_never_turns_host_key_checks_off(tmp_path: Path, sshd: Sshd) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  UserKnownHostsFile none\n")
    # No known_hosts of fabtop's own: asyncssh would take the config's "none" and log in to
    # whatever answers, whatever its key.
    t = sshd.transport(known_hosts=(), config_paths=[str(cfg)])
    with pytest.raises(TransportError, match=f"ssh_config {cfg} line 2: UserKnownHostsFile none"):
        await t.connect()
    await t.close()
