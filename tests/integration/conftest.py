"""Integration fixtures: a real OpenSSH sshd on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.integration.sshd import SSHD, Sshd


def _new_sshd(root: Path) -> Sshd:
    if not os.access(SSHD, os.X_OK):
        skip_or_fail(f"OpenSSH sshd not found at {SSHD} (apt-get install openssh-server)")
    server = Sshd(root)
    try:
        server.start()
    except RuntimeError as exc:
        skip_or_fail(f"cannot start sshd: {exc}")
    return server


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A shared sshd for tests that do not stop it."""
    server = _new_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def own_sshd(tmp_path: Path) -> Iterator[Sshd]:
    """An sshd of this test alone, free to be killed, stopped and restarted."""
    server = _new_sshd(tmp_path / "sshd")
    yield server
    server.stop()
