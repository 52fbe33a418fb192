"""Probe cost on the node: CPU seconds and forks per tick (prints figures, asserts nothing).

Runs the probe locally, the fast one (python3) and the sh one, (a) against this machine's
/sys and (b) against a fixture tree with two mlx5 ports (ethtool -S answered by a shim
printing a real capture: a tree's netdevs take ethtool -S from PATH, a process per tick,
for both probes).
Each case runs twice, with N and 2N ticks, so that the start-up cost cancels out:
per tick = (cost(2N) - cost(N)) / N. CPU is the children's utime+stime (getrusage);
forks are the machine-wide `processes` counter of /proc/stat (other activity adds noise).

    .venv/bin/python benchmarks/probe_cost.py [--ticks 20] [--interval-ms 100] [--shell dash]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.normalize import IB_HW_TICK, IB_PORT_TICK  # noqa: E402
from collectors.probe import ProbeArgs, local_command, probe_script  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures"
NETDEV_STATS = [
    "rx_bytes",
    "tx_bytes",
    "rx_packets",
    "tx_packets",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "multicast",
    "collisions",
    "rx_length_errors",
    "rx_over_errors",
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_fifo_errors",
    "rx_missed_errors",
    "tx_aborted_errors",
    "tx_carrier_errors",
    "tx_fifo_errors",
    "tx_heartbeat_errors",
    "tx_window_errors",
    "rx_compressed",
    "tx_compressed",
    "rx_nohandler",
]


def _forks() -> int:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("processes "):
            return int(line.split()[1])
    return 0


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def build_mlx5_node(root: Path) -> tuple[Path, Path]:
    """A sysfs tree with two mlx5 netdevs and their RDMA ports, and a shim bin dir."""
    sysroot = root / "sys"
    src = FIXTURES / "sysfs/prometheus_procfs/sys/class"
    for i, netdev in enumerate(("eth2", "eth3")):
        dst = sysroot / "class/net" / netdev
        shutil.copytree(src / "net/eth0", dst, symlinks=True)
        (dst / "device").unlink()
        (dst / "device").mkdir()
        for f in ("current_link_speed", "max_link_speed"):
            (dst / "device" / f).write_text("16.0 GT/s PCIe\n")
        for f in ("current_link_width", "max_link_width"):
            (dst / "device" / f).write_text("16\n")
        hw = dst / "device/hwmon/hwmon0"
        hw.mkdir(parents=True)
        (hw / "name").write_text("mlx5\n")
        (hw / "temp1_input").write_text("55000\n")
        (dst / "statistics").mkdir()
        for n, name in enumerate(NETDEV_STATS):
            (dst / "statistics" / name).write_text(f"{n * 1000}\n")
        ib = sysroot / "class/infiniband" / f"mlx5_{i}"
        shutil.copytree(src / "infiniband/mlx5_0", ib, symlinks=True)
        (ib / "device/net").mkdir(parents=True)
        (ib / "device/net" / netdev).mkdir()
    bindir = root / "bin"
    bindir.mkdir()
    cap = FIXTURES / "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
    tool = bindir / "ethtool"
    tool.write_text(f'#!/bin/sh\ncase $1 in -S) cat "{cap}" ;; *) exit 1 ;; esac\n')
    tool.chmod(0o755)
    return sysroot, bindir


def add_optics_shims(bindir: Path) -> None:
    """ethtool -m / -I --show-fec and devlink health show answering with real captures
    (tests/fixtures/optics), for the cost of an optics round (issue 33)."""
    caps = REPO / "tests/fixtures/optics"
    s_cap = FIXTURES / "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
    m_cap = caps / "ethtool_m_qsfp28_aoc_oma_zero_thresholds_sonic.txt"
    f_cap = caps / "show_fec_per_lane_netdev.txt"
    d_cap = caps / "devlink_health_port_reporters_netdev.txt"
    tool = bindir / "ethtool"
    tool.write_text(
        f'#!/bin/sh\ncase $1 in -S) cat "{s_cap}" ;; -m) cat "{m_cap}" ;; '
        f'-I) cat "{f_cap}" ;; *) exit 1 ;; esac\n'
    )
    dl = bindir / "devlink"
    dl.write_text(f'#!/bin/sh\ncat "{d_cap}"\n')
    dl.chmod(0o755)


def run(args: ProbeArgs, shell: str, path_env: str) -> tuple[float, int, float, int]:
    """Run the probe to completion; return (cpu_s, forks, wall_s, output bytes).

    As the transports run it: a new session, and stdin left open after the script (its
    EOF would end the probe at once).
    """
    cpu0, forks0, t0 = _children_cpu(), _forks(), time.monotonic()
    proc = subprocess.Popen(
        local_command(args, shell=shell),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": path_env},
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(probe_script().encode())
    proc.stdin.flush()
    out = proc.stdout.read()
    proc.wait()
    proc.stdin.close()
    time.sleep(1.2)  # the probe's group end (TERM, 1 s grace, KILL) is part of its cost
    return _children_cpu() - cpu0, _forks() - forks0, time.monotonic() - t0, len(out)


def measure(name: str, args: ProbeArgs, shell: str, path_env: str, ticks: int) -> None:
    """Print the per-tick cost of one case."""
    a = run(replace(args, max_frames=ticks), shell, path_env)
    b = run(replace(args, max_frames=2 * ticks), shell, path_env)
    cpu = (b[0] - a[0]) / ticks
    forks = (b[1] - a[1]) / ticks
    print(
        f"{name:<42} cpu/tick {cpu * 1e3:7.2f} ms   forks/tick {forks:5.1f}   "
        f"frame {b[3] / (2 * ticks) / 1024:6.1f} KiB   start-up cpu "
        f"{(a[0] - cpu * ticks) * 1e3:6.1f} ms"
    )


def main() -> None:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--shell", default="dash" if shutil.which("dash") else "sh")
    ns = ap.parse_args()
    path_env = "/usr/bin:/bin"
    print(f"probe cost, shell={ns.shell}, interval={ns.interval_ms} ms, {ns.ticks} ticks")
    for kind in ("python", "sh"):
        # The RDMA port counters a metric reads every tick, the rest on slow ticks, as a
        # session asks (collectors.probe.probe_args).
        real = ProbeArgs(
            interval_ms=ns.interval_ms,
            gpu="off",
            slow_ticks=100000,
            probe=kind,
            ib_hw_tick=IB_HW_TICK,
            ib_port_tick=IB_PORT_TICK,
        )
        measure(
            f"{kind}: real /sys, no tools", replace(real, path=()), ns.shell, path_env, ns.ticks
        )
        measure(f"{kind}: real /sys, ethtool from PATH", real, ns.shell, path_env, ns.ticks)
        with tempfile.TemporaryDirectory() as tmp:
            sysroot, bindir = build_mlx5_node(Path(tmp))
            fx = replace(real, sysfs=str(sysroot), path=(str(bindir),))
            measure(f"{kind}: fixture 2x mlx5, shim ethtool -S", fx, ns.shell, path_env, ns.ticks)
            measure(
                f"{kind}: fixture 2x mlx5, sysfs only",
                replace(fx, path=()),
                ns.shell,
                path_env,
                ns.ticks,
            )
            # Optics (issue 33): every tick slow, with and without an optics round (2
            # ports: ethtool -m and --show-fec each, devlink health show): the difference
            # is what a round costs the node (once per >= 30 s on a real host).
            add_optics_shims(bindir)
            slow = replace(fx, slow_ticks=1)
            measure(
                f"{kind}: 2x mlx5, slow tick, optics round",
                replace(slow, optics_s=0),
                ns.shell,
                path_env,
                ns.ticks,
            )
            measure(
                f"{kind}: 2x mlx5, slow tick, no optics",
                replace(slow, optics_s=86400),
                ns.shell,
                path_env,
                ns.ticks,
            )


if __name__ == "__main__":
    main()
