"""Fan-out: 256 fast-probe hosts at 1 Hz over a real sshd on loopback (prints, never asserts).

One OpenSSH sshd on 127.0.0.1 serves every host (its own name, its own small sysfs
tree, the fast probe: python3 is on this machine); a Session collects them all. CI's
tests/integration/test_scale.py runs 64. Prints the sample age a 10 Hz viewer sees (p50/p99),
how long until every host streamed, the collector's CPU share and, on the same machine,
the CPU of the sshd sessions and the probes during the measurement, and how the start
went: hosts the runners called stale or down, starts given up on for a late first frame,
fabtop's own stalls (``--stall 3`` blocks its loop 3 s in the middle of the start).
Needs /usr/sbin/sshd.

    .venv/bin/python benchmarks/fanout.py [--hosts 64] [--seconds 20] [--stall 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.sshd import Sshd  # noqa: E402
from tests.testbed.fleet import fanout, fleet_config  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=256)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument(
        "--stall",
        type=float,
        default=0.0,
        help="block fabtop's loop this long once a quarter of the hosts stream",
    )
    ns = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp) / "sshd")
        try:
            sshd.start()
        except (RuntimeError, OSError) as e:
            print(f"fanout: no sshd ({e}); skipped")
            return
        try:
            cfg = fleet_config(sshd, Path(tmp), ns.hosts)
            cfg.hosts = [replace(h, probe="python") for h in cfg.hosts]
            pid = sshd.proc.pid if sshd.proc is not None else None
            r = asyncio.run(
                fanout(cfg, warmup_s=3.0, measure_s=ns.seconds, node_pid=pid, stall_s=ns.stall)
            )
        finally:
            sshd.stop()
    print(r.summary())
    print(f"  {r.startup_line()}")
    print(f"  fanout_age_p99_s {r.pct(0.99):.3f}, fanout_cpu_share {r.cpu_share:.4f}")


if __name__ == "__main__":
    main()
