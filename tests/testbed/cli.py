"""``python -m tests.testbed.netns up|down|list``: beds built by hand and left running.

``up`` with simulated hosts starts a detached driver (``_drive``) that keeps their trees
moving after the command returns; ``down`` stops it with the bed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.testbed.beds import STATE_ROOT, beds, missing_prerequisite, teardown
from tests.testbed.netns import Host, Testbed
from tests.testbed.perftest_shims import install as install_perftest
from tests.testbed.sim_driver import SimDriver


def _up(ns: argparse.Namespace) -> int:
    sims = [int(x) for x in ns.sim.split(",") if x] if ns.sim else []
    bed = Testbed(ns.hosts, sim_hosts=sims, interval=ns.interval).up()
    if sims:
        install_perftest(bed)  # `fabtop test` on their RDMA ports replays captures
        # The trees must keep moving after this command returns: a detached driver.
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.testbed.netns",
                "_drive",
                bed.run_id,
                ",".join(map(str, sims)),
                str(ns.interval),
            ],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=Path(__file__).resolve().parents[2],
        )
        bed.driver_pid = p.pid
        bed._save()
    print(
        f"test bed {bed.run_id}: {ns.hosts} host(s), management {bed.mgmt_net}.0/24, "
        f"data {bed.data_net}.0/24"
    )
    for h in bed.hosts:
        sim = " (simulated mlx5/IB/GPU tree)" if h.sim_root else ""
        print(f"  {h.name}: netns {h.netns}, ssh root@{h.mgmt_ip}, data {h.data_ip}{sim}")
    print(f"watch it:   .venv/bin/fabtop -c {bed.toml_path}")
    print(f"a shell:    ip netns exec {bed.ns(1)} bash")
    print(f"remove it:  python -m tests.testbed.netns down --id {bed.run_id}")
    return 0


def _drive(run_id: str, sims: str, interval: str) -> int:
    bed = Testbed(0, run_id=run_id, interval=float(interval))
    for i in (int(x) for x in sims.split(",")):
        bed.hosts.append(
            Host(
                i,
                f"h{i}",
                bed.ns(i),
                "",
                "",
                None,  # type: ignore[arg-type]
                bed.dir / f"h{i}" / "tree",
            )
        )
    driver = SimDriver(bed)
    driver.t0 -= 0.0
    while (bed.dir / "state.json").exists():
        driver.tick()
        time.sleep(bed.interval / 2)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``up`` / ``down`` / ``list``."""
    p = argparse.ArgumentParser(
        prog="python -m tests.testbed.netns", description="namespace hosts with a real sshd each"
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="build a bed and leave it running")
    u.add_argument("--hosts", type=int, default=2)
    u.add_argument("--sim", default="", help="1-based hosts that serve a simulated tree: 2,3")
    u.add_argument("--interval", type=float, default=1.0)
    d = sub.add_parser("down", help="remove a bed")
    d.add_argument("--id")
    d.add_argument("--all", action="store_true")
    sub.add_parser("list", help="list the beds that exist")
    dr = sub.add_parser("_drive")
    dr.add_argument("id")
    dr.add_argument("sims")
    dr.add_argument("interval")
    ns = p.parse_args(argv)
    if ns.cmd == "_drive":
        return _drive(ns.id, ns.sims, ns.interval)
    if ns.cmd == "list":
        for b in beds():
            print(b)
        return 0
    why = missing_prerequisite()
    if why:
        print(f"testbed: {why}", file=sys.stderr)
        return 2
    if ns.cmd == "up":
        return _up(ns)
    ids = beds() if ns.all else [ns.id] if ns.id else beds()[:1] if len(beds()) == 1 else []
    if not ids:
        print("testbed: give --id ID or --all (see `list`)", file=sys.stderr)
        return 2
    for i in ids:
        state = STATE_ROOT / i / "state.json"
        pid = None
        with contextlib.suppress(OSError, ValueError):
            pid = json.loads(state.read_text()).get("driver_pid")
        teardown(i, pid)
        print(f"test bed {i} removed")
    return 0
