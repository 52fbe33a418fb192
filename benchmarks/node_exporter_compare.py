"""Probe CPU per tick vs prometheus-node-exporter per scrape, same sysfs tree (prints only).

The tree is a simulated node (fabtop.sim.tree: 2 ConnectX RoCE ports, an IB port,
evolved from the real captures). fabtop's probe reads it with its shims; node_exporter
runs with ``--path.sysfs=<tree>`` and only the collectors for the same data (netdev,
ethtool, infiniband). Its netdev and ethtool collectors read the kernel (netlink/ioctl),
not the tree, so they see this machine's netdevs instead: similar work, not identical.
CPU is utime+stime: for node_exporter from /proc/<pid>/stat over N scrapes; for the
probe from getrusage of its children, as (cost(2N ticks) - cost(N ticks)) / N.

    .venv/bin/python benchmarks/node_exporter_compare.py [--scrapes 100]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.probe import ProbeArgs, local_command, probe_script  # noqa: E402
from fabtop.sim import Fabric, tree  # noqa: E402
from fabtop.sim import HostConfig as SimHostConfig  # noqa: E402

EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """utime+stime of a process, seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    f = stat[stat.rfind(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / TICK


def probe_cpu(root: Path, ticks: int) -> float:
    """Children CPU seconds of one local probe run of ``ticks`` ticks at 100 ms."""
    args = ProbeArgs(interval_ms=100, sysfs=str(root / "sys"),
                     path=(str(root / "bin"), "/usr/sbin", "/usr/bin", "/bin"),
                     max_frames=ticks, gpu="off", slow_ticks=100000)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # As the transports run it: its own session, stdin open until it has finished (the
    # probe ends its process group when stdin reaches EOF).
    proc = subprocess.Popen(local_command(args), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(probe_script().encode())
    proc.stdin.flush()
    proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError(f"probe exited {proc.returncode}")
    proc.stdin.close()
    time.sleep(1.2)  # the group's end (TERM, 1 s grace, KILL) is part of its cost
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def exporter_cpu(root: Path, scrapes: int) -> tuple[float, int] | None:
    """CPU seconds per scrape of node_exporter on the tree, and the bytes of one scrape."""
    if EXPORTER is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                          f"--path.sysfs={root / 'sys'}", "--collector.disable-defaults",
                          "--collector.netdev", "--collector.ethtool",
                          "--collector.infiniband"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        body = b""
        for _ in range(100):
            try:
                body = urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        for _ in range(5):  # warm-up
            urllib.request.urlopen(url, timeout=5).read()
        c0 = proc_cpu(p.pid)
        for _ in range(scrapes):
            urllib.request.urlopen(url, timeout=5).read()
        return (proc_cpu(p.pid) - c0) / scrapes, len(body)
    finally:
        p.kill()
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scrapes", type=int, default=100)
    ns = ap.parse_args()
    fab = Fabric([SimHostConfig("n1", ib_port=True, gpus=0), SimHostConfig("n2", gpus=0)])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "n1"
        tree.write(fab.hosts["n1"], root, 5.0)
        n = max(10, ns.scrapes // 2)
        per_tick = (probe_cpu(root, 2 * n) - probe_cpu(root, n)) / n
        ne = exporter_cpu(root, ns.scrapes)
    print(f"probe CPU per tick on the node (2 RoCE ports + IB, ethtool shims): "
          f"{1000 * per_tick:.2f} ms")
    if ne is None:
        print("node_exporter: not installed (apt-get install prometheus-node-exporter); "
              "no ratio")
        return
    cpu, size = ne
    print(f"node_exporter CPU per scrape (netdev+ethtool+infiniband, {size} bytes): "
          f"{1000 * cpu:.2f} ms")
    print(f"  probe_ms_per_tick {1000 * per_tick:.2f}, node_exporter_ms_per_scrape "
          f"{1000 * cpu:.2f}, ratio probe/node_exporter "
          f"{per_tick / cpu if cpu else float('nan'):.2f}")


if __name__ == "__main__":
    main()
