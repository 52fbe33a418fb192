"""Node CPU per tick: fast probe, sh probe (through a real sshd) vs node_exporter per scrape.

Prints only, asserts nothing. Two cases, each measured on the node's side:

* ``ib9``: a 9-port InfiniBand sysfs tree (mlx5_0..mlx5_8, one port each), every file
  copied from the real mlx5_0 capture in ../shared/fixtures/sysfs/prometheus_procfs.
  The probe reads it with ``sysfs=<tree>``; node_exporter with ``--path.sysfs=<tree>
  --collector.disable-defaults --collector.infiniband``.
* ``veth8``: 4 veth pairs in a network namespace, both sides reading the kernel: the
  probe (``sysfs=/sys``) through an sshd inside the namespace, rtnetlink plus
  ETHTOOL_GSTATS; node_exporter inside the namespace with netdev and ethtool only.
  Needs root and ``ip``; skipped with a reason otherwise.

Probe CPU is every process of its SSH session on the sshd side (the per-connection sshd
processes and all below them), between two frames after a warm-up: so python's start-up
is not counted and sshd's encryption is. The client (asyncssh, in this process) is not.

    .venv/bin/python benchmarks/node_exporter_compare.py [--ticks 48] [--interval-ms 250]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.normalize import IB_HW_TICK, IB_PORT_TICK  # noqa: E402
from collectors.probe import ProbeArgs, build_argv, probe_script  # noqa: E402
from collectors.transport.base import TransportError  # noqa: E402
from collectors.transport.ssh import SshTransport  # noqa: E402
from tests.integration.sshd import SSHD, Sshd, descendants  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from collector_cost import whole_path  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures"
IB_CAPTURE = FIXTURES / "sysfs/prometheus_procfs/sys/class/infiniband/mlx5_0"
MLX5_ETHTOOL = FIXTURES / "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
HZ = os.sysconf("SC_CLK_TCK")
WARMUP = 8  # ticks (and scrapes) before the window: start-up and the first scan
SLOW_TICKS = 100000  # no slow tick (tools, rescans) inside the window
IB_PORTS = 9
VETH_PAIRS = 4
REQUIRED, AIM = 0.5, 0.25
# Prometheus asks for OpenMetrics and gzip; the plain text format uncompressed is
# node_exporter's cheapest answer (gzip cost it about 0.5 ms more here), so the ratio
# errs against fabtop.
SCRAPE_HEADERS = {
    "Accept": "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "identity",
}


# ---------------------------------------------------------------- CPU of a process tree


@dataclass(frozen=True, slots=True)
class Proc:
    """One process at one instant."""

    comm: str
    ppid: int
    threads_ns: dict[int, int]  # tid -> run time (schedstat): ns, but live threads only
    stat_s: float  # utime+stime: the whole thread group, 1/HZ steps
    reaped_s: float  # cutime+cstime: children that ended and were waited for

    def own_s(self) -> float:
        """Best estimate of its own CPU (ended threads are only in stat_s)."""
        return max(sum(self.threads_ns.values()) / 1e9, self.stat_s)


def read_proc(pid: int) -> Proc | None:
    """A process's CPU counters, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = {}
        for t in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                threads[int(t.name)] = int((t / "schedstat").read_text().split()[0])
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields follow the last ')'.
    f = stat[stat.rfind(")") + 2 :].split()
    comm = stat[stat.find("(") + 1 : stat.rfind(")")]
    return Proc(
        comm, int(f[1]), threads, (int(f[11]) + int(f[12])) / HZ, (int(f[13]) + int(f[14])) / HZ
    )


def snapshot(pids: Iterable[int]) -> dict[int, Proc]:
    """Every named process that still exists."""
    return {pid: p for pid in pids if (p := read_proc(pid)) is not None}


def cpu_delta(a: dict[int, Proc], b: dict[int, Proc]) -> dict[str, float]:
    """CPU seconds a process tree spent from snapshot ``a`` to ``b``, by command name.

    A process that ended in between is in its parent's reaped time at ``b`` with its
    whole life, so what it had at ``a`` is taken off again. Live threads give ns steps;
    when a thread ended in between, the process falls back to stat's 1/HZ steps.
    """
    out: dict[str, float] = defaultdict(float)
    for pid, p in b.items():
        q = a.get(pid)
        if q is None:
            out[p.comm] += p.own_s()
            out[f"{p.comm}:children"] += p.reaped_s
            continue
        if q.threads_ns.keys() <= p.threads_ns.keys():
            out[p.comm] += (sum(p.threads_ns.values()) - sum(q.threads_ns.values())) / 1e9
        else:
            out[p.comm] += p.stat_s - q.stat_s
        out[f"{p.comm}:children"] += p.reaped_s - q.reaped_s
    for pid, q in a.items():
        if pid not in b:
            parent = b.get(q.ppid) or a.get(q.ppid)
            key = f"{parent.comm}:children" if parent else f"{q.comm}:ended"
            out[key] -= q.own_s() + q.reaped_s
    return out


def summary(by_comm: dict[str, float], n: int, total_s: float) -> str:
    """``sshd 0.21 python3 1.90 ...`` in ms per tick, largest first."""
    parts = sorted(((v, k) for k, v in by_comm.items() if abs(v) * 1e3 / n >= 0.005), reverse=True)
    share = ", ".join(f"{k} {1e3 * v / n:.2f}" for v, k in parts)
    return f"{share} (total {1e3 * total_s / n:.2f} ms/tick)"


# ---------------------------------------------------------------- the probe over sshd


@dataclass
class ProbeRun:
    """What one probe run cost the node over the measured window."""

    ticks: int = 0
    cpu_s: float = 0.0
    by_comm: dict[str, float] = field(default_factory=dict)
    wire_bytes: int = 0
    ioctls: int | None = None
    impl: str = "?"
    values: int = 0  # counter lines in the last frame's sysnet/sysib/ethtool_S sections
    ethtool: dict[str, int] = field(default_factory=dict)  # netdev -> statistics read
    warnings: list[str] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)  # every frame, the first on

    def ms(self) -> float:
        """Node CPU per tick."""
        return 1e3 * self.cpu_s / self.ticks


_IOCTLS_RE = re.compile(rb"^ethtool_ioctls (\d+)$", re.M)
_IMPL_RE = re.compile(rb"^impl (.*)$", re.M)
_WARN_RE = re.compile(rb"^warning (.*)$", re.M)
_SECTION_RE = re.compile(rb"^@@section (\S+) (\S+) ")


def frame_values(frame: bytes) -> tuple[int, dict[str, int]]:
    """Counter lines in a frame's reading sections, and ethtool statistics per netdev."""
    n, kind, subj = 0, b"", ""
    eth: dict[str, int] = {}
    for line in frame.split(b"\n"):
        if line.startswith(b"@@"):
            m = _SECTION_RE.match(line)
            kind = m.group(1) if m else b""
            subj = m.group(2).decode(errors="replace") if m else ""
        elif kind in (b"sysnet", b"sysib"):
            n += 1
        elif kind == b"ethtool_S" and b": " in line:
            n += 1
            eth[subj] = eth.get(subj, 0) + 1
    return n, eth


async def stream_probe(
    t: SshTransport, args: ProbeArgs, ticks: int, session: Callable[[], list[int]]
) -> ProbeRun:
    """Stream the probe; node CPU of its session between frame WARMUP and WARMUP+ticks."""
    run = ProbeRun()
    await t.connect()
    gen = t.stream(probe_script(), build_argv(args))
    buf = b""
    seen = 0
    s0: dict[int, Proc] = {}
    ioctl0 = 0
    try:
        async for chunk in gen:
            buf += chunk
            while (i := buf.find(b"\n@@end ")) >= 0 and (j := buf.find(b"\n", i + 1)) >= 0:
                frame, buf = buf[: j + 1], buf[j + 1 :]
                run.frames.append(frame)
                if not frame.lstrip(b"\n").startswith(b"@@fabtop-frame "):
                    continue  # a watchdog event, not a tick
                seen += 1
                m = _IOCTLS_RE.search(frame)
                if seen == WARMUP:
                    s0 = snapshot(session())
                    ioctl0 = int(m.group(1)) if m else 0
                    continue
                if seen < WARMUP:
                    continue
                run.wire_bytes += len(frame)
                run.warnings += [w.decode(errors="replace") for w in _WARN_RE.findall(frame)]
                if seen == WARMUP + ticks:
                    s1 = snapshot(session())
                    run.by_comm = cpu_delta(s0, s1)
                    run.cpu_s = sum(run.by_comm.values())
                    run.ticks = ticks
                    run.ioctls = int(m.group(1)) - ioctl0 if m else None
                    im = _IMPL_RE.search(frame)
                    run.impl = im.group(1).decode(errors="replace") if im else "?"
                    run.values, run.ethtool = frame_values(frame)
                    return run
    finally:
        await gen.aclose()
        await t.close()
    raise RuntimeError(f"probe stream ended after {seen} frames")


def measure_probe(sshd: Sshd, args: ProbeArgs, ticks: int) -> ProbeRun:
    """One probe run through ``sshd``; waits until its session has left the node."""
    assert sshd.proc is not None
    listener = sshd.proc.pid
    run = asyncio.run(stream_probe(sshd.transport(), args, ticks, lambda: descendants(listener)))
    deadline = time.monotonic() + 5
    while descendants(listener) and time.monotonic() < deadline:
        time.sleep(0.05)
    return run


# ---------------------------------------------------------------- node_exporter


@dataclass
class ExporterRun:
    """node_exporter's CPU over the same number of scrapes."""

    scrapes: int
    cpu_s: float
    body_bytes: int
    samples: dict[str, int]  # metric lines per family prefix of the collectors asked for

    def ms(self) -> float:
        """CPU per scrape."""
        return 1e3 * self.cpu_s / self.scrapes


def measure_exporter(
    argv: list[str],
    host: str,
    port: int,
    prefixes: tuple[str, ...],
    scrapes: int,
    interval_s: float,
    log: Path,
) -> ExporterRun:
    """Start node_exporter (argv execs it: same pid), scrape it at the probe's cadence."""
    with log.open("wb") as err:
        p = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        conn = http.client.HTTPConnection(host, port, timeout=5)  # kept alive, as Prometheus

        def scrape() -> bytes:
            conn.request("GET", "/metrics", headers=SCRAPE_HEADERS)
            r = conn.getresponse()
            return r.read()

        deadline = time.monotonic() + 10
        while True:
            try:
                body = scrape()
                break
            except OSError:
                conn.close()
                if time.monotonic() > deadline or p.poll() is not None:
                    tail = log.read_text(errors="replace").strip().splitlines()[-1:]
                    raise RuntimeError(
                        f"node_exporter did not answer on {host}:{port}: {' '.join(tail)}"
                    ) from None
                time.sleep(0.05)
        due = time.monotonic()
        s0: dict[int, Proc] = {}
        for k in range(WARMUP + scrapes):
            if k == WARMUP:
                s0 = snapshot([p.pid])
            due += interval_s
            time.sleep(max(0.0, due - time.monotonic()))
            body = scrape()
        cpu = sum(cpu_delta(s0, snapshot([p.pid])).values())
        lines = body.decode(errors="replace").splitlines()
        samples = {x: sum(1 for ln in lines if ln.startswith(x)) for x in prefixes}
        return ExporterRun(scrapes, cpu, len(body), samples)
    finally:
        p.kill()
        p.wait()


# ---------------------------------------------------------------- the cases


@dataclass
class Case:
    """One line of the comparison."""

    name: str
    fast: ProbeRun | None = None
    sh: ProbeRun | None = None
    exporter: ExporterRun | None = None
    notes: list[str] = field(default_factory=list)  # parts that did not run, and why

    def line(self) -> str:
        """The figures line (``n/a`` for a part that did not run)."""

        def f(x: float | None, d: int) -> str:
            return "n/a" if x is None else f"{x:.{d}f}"

        ne = self.exporter.ms() if self.exporter else None
        fast = self.fast.ms() if self.fast else None
        sh = self.sh.ms() if self.sh else None
        return (
            f"{self.name} fast_ms_per_tick {f(fast, 2)} sh_ms_per_tick {f(sh, 1)} "
            f"node_exporter_ms_per_scrape {f(ne, 2)} "
            f"ratio_fast {f(fast / ne if fast is not None and ne else None, 2)} "
            f"ratio_sh {f(sh / ne if sh is not None and ne else None, 1)}"
        )

    def details(self) -> list[str]:
        """Where each side's CPU went, bytes on the wire, what each side read."""
        out = []
        for label, r in (("fast", self.fast), ("sh", self.sh)):
            if r is None:
                continue
            io = "" if r.ioctls is None else f", GSTATS-path ioctls/tick {r.ioctls / r.ticks:.1f}"
            out.append(f"  {self.name} {label}: {summary(r.by_comm, r.ticks, r.cpu_s)}")
            out.append(
                f"  {self.name} {label}: wire {r.wire_bytes / r.ticks / 1024:.1f} "
                f"KiB/tick, {r.values} counter lines/frame{io}; impl {r.impl}"
            )
            if r.warnings:
                out.append(f"  {self.name} {label}: probe warnings: {sorted(set(r.warnings))}")
            # The same frames through the collector (decode, assemble, rates, history, rules),
            # as the dashboard runs them: the benchmark's simulated host aside, real frames.
            med, lo, hi = whole_path(r.frames, warm=WARMUP)
            out.append(
                f"  {self.name} {label}: collector {med:.3f} ms per host-tick on these "
                f"frames (median of 5 passes, {lo:.3f}-{hi:.3f}; after the first "
                f"{WARMUP})"
            )
        if self.exporter:
            e = self.exporter
            got = ", ".join(f"{n} {x}*" for x, n in e.samples.items())
            out.append(
                f"  {self.name} node_exporter: {e.ms():.2f} ms/scrape over {e.scrapes}, "
                f"body {e.body_bytes / 1024:.1f} KiB, samples: {got}"
            )
        return out


def build_ib_tree(sysroot: Path, ports: int) -> None:
    """``ports`` InfiniBand devices, one port each, every file a copy of the real capture."""
    for i in range(ports):
        dst = sysroot / "class/infiniband" / f"mlx5_{i}"
        shutil.copytree(IB_CAPTURE, dst, symlinks=True)
        # Values moved a little per device so no two ports read alike; names untouched.
        for f in (dst / "ports/1/counters").iterdir():
            v = f.read_text().strip()
            if v.isdigit() and int(v) > 0:
                f.write_text(f"{int(v) + 7919 * i}\n")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on (the kernel's pick)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def both_probes(case: Case, sshd: Sshd, args: ProbeArgs, ticks: int) -> None:
    """The fast probe, then the sh probe, over one sshd; a failure is noted, not raised."""
    for kind in ("python", "sh"):
        try:
            r = measure_probe(sshd, replace(args, probe=kind), ticks)
        except (TransportError, RuntimeError, OSError) as e:
            case.notes.append(f"probe={kind}: {e}")
            continue
        if kind == "python":
            case.fast = r
        else:
            case.sh = r


def run_ib(tmp: Path, ticks: int, interval_ms: int) -> Case:
    """The InfiniBand tree: both probes over a loopback sshd, node_exporter on the tree."""
    case = Case(f"ib{IB_PORTS}")
    sysroot = tmp / "ib" / "sys"
    build_ib_tree(sysroot, IB_PORTS)
    sshd = Sshd(tmp / "sshd")
    try:
        sshd.start()
    except (RuntimeError, OSError) as e:
        case.notes.append(f"probes: no sshd ({e})")
    else:
        try:
            # ib_hw_tick, ib_port_tick as a session sends them: the RDMA port counters no
            # metric reads on slow ticks.
            both_probes(
                case,
                sshd,
                ProbeArgs(
                    interval_ms=interval_ms,
                    sysfs=str(sysroot),
                    gpu="off",
                    slow_ticks=SLOW_TICKS,
                    ib_hw_tick=IB_HW_TICK,
                    ib_port_tick=IB_PORT_TICK,
                ),
                ticks,
            )
        finally:
            sshd.stop()
    if EXPORTER:
        port = free_port()
        try:
            case.exporter = measure_exporter(
                [
                    EXPORTER,
                    f"--web.listen-address=127.0.0.1:{port}",
                    f"--path.sysfs={sysroot}",
                    "--collector.disable-defaults",
                    "--collector.infiniband",
                ],
                "127.0.0.1",
                port,
                ("node_infiniband_",),
                ticks,
                interval_ms / 1000,
                tmp / "ne_ib.log",
            )
        except (RuntimeError, OSError) as e:
            case.notes.append(f"node_exporter: {e}")
    return case


def netns_missing() -> str | None:
    """Why the veth case cannot run here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` (apt-get install iproute2)"
    if not os.access(SSHD, os.X_OK):
        return f"no sshd at {SSHD}"
    return None


def run_veth(tmp: Path, ticks: int, interval_ms: int) -> Case:
    """veth pairs in a namespace: probe through an sshd in it, node_exporter in it."""
    from tests.testbed.beds import PREFIX, free_subnets, run, teardown
    from tests.testbed.ns_sshd import NsSshd

    case = Case(f"veth{2 * VETH_PAIRS}")
    why = netns_missing()
    if why:
        case.notes.append(why)
        return case
    # Named as the test bed names its beds, so `python -m tests.testbed.netns down --all`
    # also removes what a killed run left behind.
    run_id = os.urandom(3).hex()
    ns, root_if = f"{PREFIX}{run_id}-h1", f"fb{run_id}r"
    net, _ = free_subnets()
    ifaces = tuple(f"vb{k}{s}" for k in range(VETH_PAIRS) for s in "ab")
    try:
        run("ip", "netns", "add", ns)
        run("ip", "-n", ns, "link", "set", "lo", "up")
        # The management link sshd listens on; not among the interfaces either side reads.
        run("ip", "link", "add", root_if, "type", "veth", "peer", "name", "mgmt", "netns", ns)
        run("ip", "addr", "add", f"{net}.254/24", "dev", root_if)
        run("ip", "link", "set", root_if, "up")
        run("ip", "-n", ns, "addr", "add", f"{net}.1/24", "dev", "mgmt")
        run("ip", "-n", ns, "link", "set", "mgmt", "up")
        for k in range(VETH_PAIRS):
            run("ip", "-n", ns, "link", "add", f"vb{k}a", "type", "veth", "peer", "name", f"vb{k}b")
            for s in "ab":
                run("ip", "-n", ns, "link", "set", f"vb{k}{s}", "up")
        sshd = NsSshd(tmp / "ns_sshd", host=f"{net}.1", user="root", netns=ns)
        sshd.start()
        try:
            both_probes(
                case,
                sshd,
                ProbeArgs(
                    interval_ms=interval_ms,
                    sysfs="/sys",
                    interfaces=ifaces,
                    gpu="off",
                    slow_ticks=SLOW_TICKS,
                    ib_hw_tick=IB_HW_TICK,
                    ib_port_tick=IB_PORT_TICK,
                ),
                ticks,
            )
        finally:
            sshd.stop()
        if EXPORTER:
            port = free_port()
            # Exclude, not include: netdev's default exclude (^lo$) refuses an include.
            skip = "--collector.{}.device-exclude=^(lo|mgmt)$"
            case.exporter = measure_exporter(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    EXPORTER,
                    f"--web.listen-address={net}.1:{port}",
                    "--collector.disable-defaults",
                    "--collector.netdev",
                    "--collector.ethtool",
                    skip.format("netdev"),
                    skip.format("ethtool"),
                ],
                f"{net}.1",
                port,
                ("node_network_", "node_ethtool_"),
                ticks,
                interval_ms / 1000,
                tmp / "ne_veth.log",
            )
    except Exception as e:  # a bed that cannot be built is a skip, not a failed benchmark
        case.notes.append(f"{type(e).__name__}: {e}")
    finally:
        teardown(run_id)
    return case


def ethtool_counts(case: Case) -> str | None:
    """veth's statistics count (from the fast probe's frame) against the mlx5 capture's."""
    if case.fast is None or not case.fast.ethtool:
        return None
    veth = sorted(set(case.fast.ethtool.values()))
    mlx5 = sum(1 for ln in MLX5_ETHTOOL.read_text().splitlines()[1:] if ": " in ln)
    return (
        f"  {case.name}: ETHTOOL_GSTATS values per netdev: veth "
        f"{'/'.join(map(str, veth))}, mlx5 at least {mlx5} (the real capture "
        f"{MLX5_ETHTOOL.name} lists only its non-zero counters; a ConnectX port has "
        f"hundreds): the ratio on real mlx5 netdevs would differ"
    )


# ---------------------------------------------------------------- main


def header(ticks: int, interval_ms: int) -> list[str]:
    """The machine and what the figures do not model."""
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return [
        f"node CPU per tick, {ticks} ticks at {interval_ms} ms after {WARMUP} warm-up ticks; "
        f"{os.cpu_count()} CPUs ({model}), shared and noisy: expect +-30 %",
        "caveats: sshd and the client share these CPUs (loopback); only the sshd side is "
        "counted. The IB tree is regular files: real sysfs show() costs more per read "
        "(counters/ are PMA MADs, hw_counters query firmware) on both sides, and the fast "
        "probe stats the tree's directories each tick (not done on a real /sys). "
        "node_exporter 1.5 reads counters/ but not hw_counters/ (the probe reads both); "
        "it runs with its defaults (its own go_/process_ metrics included) and is scraped "
        "with keep-alive, plain text, no gzip.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=48, help="measured ticks (and scrapes)")
    ap.add_argument("--interval-ms", type=int, default=250)
    ns = ap.parse_args()
    if ns.ticks < 1 or not 100 <= ns.interval_ms <= 60000:
        ap.error("--ticks must be >= 1 and --interval-ms within 100..60000")
    for line in header(ns.ticks, ns.interval_ms):
        print(line, flush=True)
    if EXPORTER is None:
        print("node_exporter: not installed (apt-get install prometheus-node-exporter): no ratios")
    cases = []
    with tempfile.TemporaryDirectory(prefix="node_cpu_") as tmp:
        for fn in (run_ib, run_veth):
            case = fn(Path(tmp), ns.ticks, ns.interval_ms)
            cases.append(case)
            ran = bool(case.fast or case.sh or case.exporter)
            for note in case.notes:
                print(f"{case.name}: {'part skipped' if ran else 'skipped'}: {note}", flush=True)
            if ran:
                print(case.line(), flush=True)
                for d in case.details():
                    print(d, flush=True)
                if (counts := ethtool_counts(case)) is not None:
                    print(counts, flush=True)
    ratios = [
        (c.fast.ms() / c.exporter.ms(), c.name)
        for c in cases
        if c.fast and c.exporter and c.exporter.ms() > 0
    ]
    if not ratios:
        print("node_cpu_ratio_fast_vs_node_exporter n/a (nothing to compare): NOT met")
        return
    worst, name = max(ratios)
    print(f"(the worst case of {', '.join(n for _, n in ratios)}: {name})")
    verdict = "met" if worst <= REQUIRED else "NOT met"
    print(
        f"node_cpu_ratio_fast_vs_node_exporter {worst:.2f} "
        f"(required <= {REQUIRED}, aim {AIM}): {verdict}"
    )


if __name__ == "__main__":
    main()
