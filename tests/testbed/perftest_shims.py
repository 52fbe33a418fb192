"""perftest on the bed's simulated hosts: real captures replayed by shims (issue 29).

This kernel has no RDMA device, so ``fabtop test`` on a simulated host's RDMA ports runs
these shims through the same orchestration as on hardware (the held SSH connection to the
namespace's real sshd, the launcher, its process group): :func:`install` writes
``ib_write_bw``, ``ib_write_lat``, ``ib_read_lat``, ``ib_send_lat``, ``ib_read_bw`` and
``ib_send_bw`` into each simulated host's ``bin`` (first on its config's ``path``), each
running :mod:`tests.testbed.perftest_shim` with the host's ``shim.json``. What they print
is a capture from ``tests/fixtures/perftest/`` (SOURCES.md: where each comes from), chosen
by the argv; RDMA runs are verified on these captures only.

The rendezvous of a server and its client is a directory per host under its simulated
tree (``SIM_ROOT/perftest``); a client finds its server's by the address it was given
(every address of the server's simulated netdevs, and the host's own data and management
addresses: perftest's TCP exchange may go any way).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.testbed.netns import Testbed

CAPTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "perftest"
SHIM = Path(__file__).resolve().with_name("perftest_shim.py")
TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")

# The capture each side replays, by role (``TOOL:role`` first, then the role). Chosen for
# the flags fabtop passes (-q 1, -s 65536 on bandwidth; -s 2 on latency):
# - bandwidth, client: Intel irdma on RoCE, 1 QP, 65536 B, 1103.38 MB/sec (9.26 Gb/s), the
#   only unidirectional client capture of one QP at fabtop's size;
# - bandwidth, server: ConnectX mlx5_0 on InfiniBand, the only server-side capture;
# - bidirectional, both sides: ConnectX mlx5_0 on RoCE, -b -D 5 --report_gbits, 65536 B,
#   98.02 Gb/s (perftest prints the same report on both sides of -b);
# - latency: ConnectX mlx5_0 on InfiniBand, the 2-byte row (t_avg 1.88 us, p99 2.03 us);
#   ib_read_lat: ConnectX-3 mlx4_0, FDR. The server side replays the client's capture.
# ib_read_bw, ib_send_bw and ib_send_lat have no capture of their own here: they replay
# the write captures (whose title says RDMA_Write).
CAPTURES: dict[str, str] = {
    "bw-client": "ib_write_bw_mb_irdma_roce.txt",
    "bw-server": "ib_write_bw_mb_mlx5_ib_server.txt",
    "bidir-client": "ib_write_bw_bidir_gbits_mlx5_roce.txt",
    "bidir-server": "ib_write_bw_bidir_gbits_mlx5_roce.txt",
    "lat-client": "ib_write_lat_all_sizes_mlx5_ib_client.txt",
    "lat-server": "ib_write_lat_all_sizes_mlx5_ib_client.txt",
    "ib_read_lat:lat-client": "ib_read_lat_mlx4_client.txt",
    "ib_read_lat:lat-server": "ib_read_lat_mlx4_client.txt",
}
_INET = re.compile(r"\binet6?\s+([0-9A-Fa-f.:]+)/")


def rendezvous_dir(sim_root: Path) -> Path:
    """Where a host's shim servers wait for their clients (empty when none is running)."""
    return sim_root / "perftest"


def _addresses(bed: Testbed) -> dict[str, str]:
    """Every address a client may be given for a simulated host -> its rendezvous dir."""
    out: dict[str, str] = {}
    for h in bed.hosts:
        if h.sim_root is None:
            continue
        rdv = str(rendezvous_dir(h.sim_root))
        text = (h.sim_root / "state" / "ip_addr").read_text()
        for addr in [*_INET.findall(text), h.data_ip, h.mgmt_ip]:
            if addr not in ("127.0.0.1", "::1"):
                out[addr] = rdv
    return out


def install(bed: Testbed, captures: Mapping[str, str | Path] | None = None) -> None:
    """Write the perftest shims into every simulated host of ``bed``; ``captures``
    overrides :data:`CAPTURES` by role (file names in CAPTURES_DIR, or paths)."""
    chosen = {k: CAPTURES_DIR / v for k, v in {**CAPTURES, **(captures or {})}.items()}
    peers = _addresses(bed)
    for h in bed.hosts:
        if h.sim_root is None:
            continue
        rdv = rendezvous_dir(h.sim_root)
        rdv.mkdir(parents=True, exist_ok=True)
        conf = rdv / "shim.json"
        doc = {
            "host": h.name,
            "rendezvous": str(rdv),
            "peers": peers,
            "captures": {k: str(v) for k, v in chosen.items()},
        }
        conf.write_text(json.dumps(doc, indent=1) + "\n")
        for tool in TOOLS:
            words = [sys.executable, str(SHIM), str(conf), tool]
            path = h.sim_root / "bin" / tool
            path.write_text(f'#!/bin/sh\nexec {shlex.join(words)} "$@"\n')
            path.chmod(0o755)


def waiting(bed: Testbed) -> list[Path]:
    """Rendezvous files left in any simulated host (a server or client not ended)."""
    return [
        p
        for h in bed.hosts
        if h.sim_root is not None
        for p in rendezvous_dir(h.sim_root).glob("*")
        if p.name != "shim.json"
    ]
