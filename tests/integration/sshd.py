"""A real OpenSSH sshd on 127.0.0.1 for integration tests: own keys, own known_hosts."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from collectors.transport.ssh import SshTransport

SSHD = Path(os.environ.get("FABTOP_SSHD", "/usr/sbin/sshd"))
PRIVSEP_DIR = Path("/run/sshd")
START_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port nothing listens on right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the ppid follows the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        kids.setdefault(int(fields[1]), []).append(int(entry.name))
    return kids


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first-level first)."""
    kids = _children()
    out: list[int] = []
    todo = list(kids.get(pid, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cmdline(pid: int) -> list[str]:
    """A process's argv ([] when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def parent(pid: int) -> int | None:
    """A process's parent pid (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[1])


@dataclass
class Sshd:
    """One sshd instance; stop()/start() keep its port, keys and known_hosts."""

    root: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    user: str = field(default_factory=lambda: pwd.getpwuid(os.getuid()).pw_name)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519", comment="fabtop-test")
        self.host_key_path.write_bytes(host_key.export_private_key())
        self.host_key_path.chmod(0o600)
        self.client_key_path.write_bytes(client_key.export_private_key())
        self.client_key_path.chmod(0o600)
        self.host_public_key = host_key.export_public_key().decode().split()[:2]
        (self.root / "authorized_keys").write_bytes(client_key.export_public_key())
        self.known_hosts_path.write_text(
            f"[{self.host}]:{self.port} {' '.join(self.host_public_key)}\n"
        )
        self.config_path.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    f"ListenAddress {self.host}",
                    f"HostKey {self.host_key_path}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "StrictModes no",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "AllowTcpForwarding yes",
                    "MaxStartups 200",
                    "MaxSessions 200",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )

    @property
    def host_key_path(self) -> Path:
        """The server's private host key."""
        return self.root / "ssh_host_ed25519_key"

    @property
    def client_key_path(self) -> Path:
        """The client's private key (its public half is in authorized_keys)."""
        return self.root / "id_ed25519"

    @property
    def known_hosts_path(self) -> Path:
        """A known_hosts file trusting exactly this server."""
        return self.root / "known_hosts"

    @property
    def config_path(self) -> Path:
        """The generated sshd_config."""
        return self.root / "sshd_config"

    @property
    def log_path(self) -> Path:
        """sshd's stderr (``-e``)."""
        return self.root / "sshd.log"

    @property
    def target(self) -> str:
        """``user@127.0.0.1:port``."""
        return f"{self.user}@{self.host}:{self.port}"

    def start(self) -> None:
        """Start sshd on the same port and wait until it answers with its banner."""
        if self.proc is not None and self.proc.poll() is None:
            return
        if os.geteuid() == 0:
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log_path.read_text()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.host, self.port), timeout=1) as s,
            ):
                if s.recv(64).startswith(b"SSH-"):
                    return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"sshd did not answer on port {self.port}")

    def stop(self) -> None:
        """Kill sshd and every session under it, as if the host went away."""
        if self.proc is None:
            return
        for pid in [*reversed(descendants(self.proc.pid)), self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=5)
        self.proc = None

    def session_pid(self, marker: str) -> int | None:
        """The sshd process serving the session whose command line holds ``marker``.

        Stopping it freezes that one connection (the listener and other sessions go on).
        """
        if self.proc is None:
            return None
        for pid in descendants(self.proc.pid):
            if any(marker in a for a in cmdline(pid)):
                p = parent(pid)
                # Walk up past shells to the first sshd process: it forwards the channel.
                while p is not None and p != self.proc.pid:
                    if "sshd" in " ".join(cmdline(p)):
                        return p
                    p = parent(p)
        return None

    def transport(self, name: str = "h", **kwargs: Any) -> SshTransport:
        """An SshTransport to this server that ignores the user's own ssh config and agent."""
        opts: dict[str, Any] = {
            "known_hosts": str(self.known_hosts_path),
            "client_keys": [str(self.client_key_path)],
            "config_paths": [],
            "agent": None,
            "connect_timeout": 5.0,
        }
        opts.update(kwargs)
        return SshTransport(name, self.target, **opts)
