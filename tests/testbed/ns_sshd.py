"""sshd inside a bed's host namespace, trusting the bed's one client key."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from tests.integration.sshd import SSHD, Sshd
from tests.testbed.beds import TestbedError


@dataclass
class NsSshd(Sshd):
    """An Sshd that runs inside a network namespace and trusts the bed's one client key."""

    netns: str = ""
    authorized: bytes = b""

    def __post_init__(self) -> None:
        Sshd.__post_init__(self)
        if self.authorized:
            (self.root / "authorized_keys").write_bytes(self.authorized)

    def start(self) -> None:
        """Start sshd in the namespace, detached from us, and wait for its banner."""
        if self.proc is not None and self.proc.poll() is None:
            return
        # sshd running as root wants its privilege-separation directory; a fresh machine
        # where the openssh-server package was installed but never started has none.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.netns,
                    str(SSHD),
                    "-D",
                    "-e",
                    "-f",
                    str(self.config_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log_tail = self.log_path.read_text()[-500:]
                raise TestbedError(f"sshd in {self.netns} exited: {log_tail}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.host, self.port), timeout=1) as s,
            ):
                if s.recv(64).startswith(b"SSH-"):
                    return
            time.sleep(0.02)
        self.stop()
        raise TestbedError(f"sshd in {self.netns} did not answer on {self.host}:{self.port}")

    def new_host_key(self) -> None:
        """Replace the host key and restart: a reinstalled node, or a man in the middle."""
        key = asyncssh.generate_private_key("ssh-ed25519")
        self.host_key_path.write_bytes(key.export_private_key())
        self.host_key_path.chmod(0o600)
        self.stop()
        self.start()
