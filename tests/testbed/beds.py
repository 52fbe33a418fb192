"""The beds on this machine: prerequisites, the root commands, free subnets, listing, removal.

Every bed keeps its state in ``STATE_ROOT/ID`` and names its namespaces ``fabt-ID-…``, so
whatever a crashed run left behind can be found and removed (``netns down --all``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.integration.sshd import SSHD, cmdline

STATE_ROOT = Path(os.environ.get("FABTOP_TESTBED_DIR", "/tmp/fabtop-testbeds"))
PREFIX = "fabt-"


class TestbedError(RuntimeError):
    """The bed could not be built (not root, no `ip`, a command failed)."""


def missing_prerequisite() -> str | None:
    """Why a bed cannot be built here, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 nftables iperf3)"
    if not os.access(SSHD, os.X_OK):
        return f"OpenSSH sshd not found at {SSHD} (apt-get install openssh-server)"
    probe = f"{PREFIX}check{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def run(*argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run a command; TestbedError with its stderr when it fails and ``check``."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise TestbedError(f"{' '.join(argv)}: {r.stderr.strip() or r.returncode}")
    return r


def _used_subnets() -> set[str]:
    out = run("ip", "-o", "-4", "addr", "show", check=False).stdout
    used = {w.rsplit(".", 1)[0] for w in out.split() if w.startswith("10.77.")}
    for state in STATE_ROOT.glob("*/state.json"):
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads(state.read_text())
            used |= {doc["mgmt_net"], doc["data_net"]}
    return used


def free_subnets() -> tuple[str, str]:
    used = _used_subnets()
    start = int.from_bytes(os.urandom(1), "big") % 127
    for k in range(127):
        x = (start + k) % 127
        m, d = f"10.77.{x}", f"10.77.{x + 128}"
        if m not in used and d not in used:
            return m, d
    raise TestbedError("no free 10.77.x.0/24 pair for a test bed")


def _ns_pids(ns: str) -> list[int]:
    out = run("ip", "netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def teardown(run_id: str, driver_pid: int | None = None) -> None:
    """Remove bed ``run_id``: its processes, namespaces, root veth and state directory."""
    if driver_pid and any(run_id in a for a in cmdline(driver_pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(driver_pid, signal.SIGKILL)
    names = [
        n
        for n in run("ip", "netns", "list", check=False).stdout.split()
        if n.startswith(f"{PREFIX}{run_id}-")
    ]
    for ns in names:
        # Only processes inside a namespace we created: ours by construction.
        for _ in range(3):
            pids = _ns_pids(ns)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        run("ip", "netns", "del", ns, check=False)
    run("ip", "link", "del", f"fb{run_id}r", check=False)
    shutil.rmtree(STATE_ROOT / run_id, ignore_errors=True)


def beds() -> list[str]:
    """Ids of the beds that exist (by state directory or namespace name)."""
    ids = {p.parent.name for p in STATE_ROOT.glob("*/state.json")}
    for n in run("ip", "netns", "list", check=False).stdout.split():
        if n.startswith(PREFIX) and n.count("-") == 2:
            ids.add(n.split("-")[1])
    return sorted(ids)
