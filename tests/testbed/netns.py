"""A multi-host test bed: N network namespaces behind a bridge "switch", a real sshd in each.

Layout of one bed (``ID`` is random per run, so parallel runs never collide)::

    root ns ── fbIDr ──┐                       switch ns fabt-ID-sw
                       └─ up0 ─ swm (mgmt 10.77.M.0/24) ─ mN ── mgmt  ┐ host ns fabt-ID-hN:
                                swd (data 10.77.D.0/24) ─ dN ── eth0  ┘ sshd on 10.77.M.N:22

fabtop reaches each host's sshd from the root namespace over the management bridge, so
the data link (``eth0``) can be cut, rate-limited or made lossy while monitoring goes on.
``ip netns exec`` remounts /sys for the namespace: the probe under each sshd reads that
host's own veth counters. A host may instead serve a simulated tree (mlx5, IB, GPUs;
fabtop.sim.tree) kept evolving by a driver. Everything runs as root.

By hand::

    python -m tests.testbed.netns up --hosts 3 [--sim 2,3]   # prints how to run fabtop
    python -m tests.testbed.netns down [--id ID | --all]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from fabtop.config import DEFAULT_PATH, Config, HostConfig, SshTarget
from tests.integration.sshd import SSHD, Sshd, cmdline

STATE_ROOT = Path(os.environ.get("FABTOP_TESTBED_DIR", "/tmp/fabtop-testbeds"))
PREFIX = "fabt-"
SIM_START_S = 30.0  # simulated time the trees start at: under traffic, counters moving


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
        import socket

        # sshd running as root wants its privilege-separation directory; a fresh machine
        # where the openssh-server package was installed but never started has none.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, str(SSHD), "-D", "-e", "-f",
                 str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log_tail = self.log_path.read_text()[-500:]
                raise TestbedError(f"sshd in {self.netns} exited: {log_tail}")
            with contextlib.suppress(OSError), socket.create_connection(
                (self.host, self.port), timeout=1
            ) as s:
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


@dataclass
class Host:
    """One namespace host of the bed."""

    index: int
    name: str
    netns: str
    mgmt_ip: str
    data_ip: str
    sshd: NsSshd
    sim_root: Path | None = None

    def config(self) -> HostConfig:
        """The fabtop HostConfig that watches this host over its sshd."""
        target = SshTarget(host=self.mgmt_ip, user="root", port=22)
        if self.sim_root is None:
            return HostConfig(name=self.name, ssh=target)
        return HostConfig(
            name=self.name, ssh=target, sysfs=f"{self.sim_root}/sys",
            path=(f"{self.sim_root}/bin", *DEFAULT_PATH),
        )


@dataclass
class Testbed:
    """N namespace hosts behind one bridge; ``up()`` builds it, ``down()`` always removes it."""

    __test__ = False  # not a pytest test class

    n_hosts: int
    sim_hosts: Sequence[int] = ()  # 1-based indices of hosts that serve a simulated tree
    run_id: str = field(default_factory=lambda: os.urandom(3).hex())
    interval: float = 1.0
    data_mtu: int = 9000
    hosts: list[Host] = field(default_factory=list)
    driver_pid: int | None = None
    driver: SimDriver | None = None

    def __post_init__(self) -> None:
        self.dir = STATE_ROOT / self.run_id
        self.switch = f"{PREFIX}{self.run_id}-sw"
        self.mgmt_net, self.data_net = _free_subnets()

    # --- names -----------------------------------------------------------------------------

    def ns(self, i: int) -> str:
        """The namespace of host ``i`` (1-based)."""
        return f"{PREFIX}{self.run_id}-h{i}"

    @property
    def namespaces(self) -> list[str]:
        """Every namespace this bed owns."""
        return [self.switch, *(self.ns(i) for i in range(1, self.n_hosts + 1))]

    @property
    def key_path(self) -> Path:
        """The client key every host trusts."""
        return self.dir / "id_ed25519"

    @property
    def known_hosts_path(self) -> Path:
        """known_hosts trusting exactly the bed's sshds."""
        return self.dir / "known_hosts"

    @property
    def ssh_config_path(self) -> Path:
        """A client ssh config giving the bed's key for its addresses."""
        return self.dir / "ssh_config"

    @property
    def toml_path(self) -> Path:
        """A fabtop config file naming every host (``fabtop -c``)."""
        return self.dir / "fabtop.toml"

    def host(self, name: str) -> Host:
        """A host by name (``h1``...)."""
        return next(h for h in self.hosts if h.name == name)

    # --- life cycle ------------------------------------------------------------------------

    def up(self) -> Testbed:
        """Build every namespace, link and sshd; on any failure remove what was built."""
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        return self

    def _build(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._save()  # first, so `down --all` finds a half-built bed too
        key = asyncssh.generate_private_key("ssh-ed25519", comment="fabtop-testbed")
        self.key_path.write_bytes(key.export_private_key())
        self.key_path.chmod(0o600)
        authorized = key.export_public_key()
        sw, m, d = self.switch, self.mgmt_net, self.data_net
        run("ip", "netns", "add", sw)
        run("ip", "-n", sw, "link", "set", "lo", "up")
        run("ip", "-n", sw, "link", "add", "swm", "type", "bridge")
        run("ip", "-n", sw, "link", "add", "swd", "type", "bridge")
        run("ip", "-n", sw, "link", "set", "swm", "up")
        run("ip", "-n", sw, "link", "set", "swd", "up")
        root_if = f"fb{self.run_id}r"
        run("ip", "link", "add", root_if, "type", "veth", "peer", "name", "up0", "netns", sw)
        run("ip", "-n", sw, "link", "set", "up0", "master", "swm", "up")
        run("ip", "addr", "add", f"{m}.254/24", "dev", root_if)
        run("ip", "link", "set", root_if, "up")
        for i in range(1, self.n_hosts + 1):
            ns = self.ns(i)
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            for dev, peer, br, net, mtu in (("mgmt", f"m{i}", "swm", m, 1500),
                                            ("eth0", f"d{i}", "swd", d, self.data_mtu)):
                run("ip", "link", "add", "name", dev, "netns", ns, "mtu", str(mtu), "type",
                    "veth", "peer", "name", peer, "netns", sw, "mtu", str(mtu))
                run("ip", "-n", sw, "link", "set", peer, "master", br, "up")
                run("ip", "-n", ns, "addr", "add", f"{net}.{i}/24", "dev", dev)
                run("ip", "-n", ns, "link", "set", dev, "up")
            sim_root = self.dir / f"h{i}" / "tree" if i in self.sim_hosts else None
            sshd = NsSshd(self.dir / f"h{i}" / "sshd", port=22, host=f"{m}.{i}", user="root",
                          netns=ns, authorized=authorized)
            self.hosts.append(Host(i, f"h{i}", ns, f"{m}.{i}", f"{d}.{i}", sshd, sim_root))
        if self.sim_hosts:
            self.driver = SimDriver(self)
            self.driver.write()
        for h in self.hosts:
            h.sshd.start()
        self.known_hosts_path.write_text(
            "".join(f"{h.mgmt_ip} {' '.join(h.sshd.host_public_key)}\n" for h in self.hosts)
        )
        self.ssh_config_path.write_text(
            f"Host {m}.*\n  User root\n  IdentityFile {self.key_path}\n  IdentitiesOnly yes\n"
        )
        self.toml_path.write_text(self.toml())
        self._save()

    def start_driver(self) -> None:
        """Keep the simulated trees evolving in a thread of this process."""
        if self.driver is not None:
            self.driver.start()

    def down(self) -> None:
        """Kill everything in our namespaces, delete them, and forget the bed."""
        if self.driver is not None:
            self.driver.stop()
        teardown(self.run_id, self.driver_pid)

    def _save(self) -> None:
        doc = {"id": self.run_id, "hosts": self.n_hosts, "namespaces": self.namespaces,
               "mgmt_net": self.mgmt_net, "data_net": self.data_net,
               "driver_pid": self.driver_pid}
        (self.dir / "state.json").write_text(json.dumps(doc, indent=1) + "\n")

    def __enter__(self) -> Testbed:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    # --- fabtop's view ---------------------------------------------------------------------

    def config(self, interval: float | None = None) -> Config:
        """A fabtop Config watching every host over SSH with the bed's keys."""
        return Config(
            hosts=[h.config() for h in self.hosts],
            interval=interval or self.interval,
            known_hosts=str(self.known_hosts_path),
            ssh_config=str(self.ssh_config_path),
        )

    def toml(self) -> str:
        """The same config as a TOML file's text."""
        lines = [f"interval = {self.interval}", f'known_hosts = "{self.known_hosts_path}"',
                 f'ssh_config = "{self.ssh_config_path}"']
        for h in self.hosts:
            c = h.config()
            lines += ["", "[[host]]", f'name = "{c.name}"', f'ssh = "{c.ssh}"']
            if h.sim_root is not None:
                lines += [f'sysfs = "{c.sysfs}"', f"path = {json.dumps(list(c.path))}"]
        return "\n".join(lines) + "\n"

    # --- acting on hosts -------------------------------------------------------------------

    def exec(self, host: str, *argv: str, check: bool = True,
             timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a command inside a host's namespace."""
        return run("ip", "netns", "exec", self.host(host).netns, *argv, check=check,
                   timeout=timeout)

    def popen(self, host: str, *argv: str) -> subprocess.Popen[str]:
        """Start a command inside a host's namespace (stdout/stderr piped)."""
        return subprocess.Popen(["ip", "netns", "exec", self.host(host).netns, *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def set_link(self, host: str, dev: str, up: bool) -> None:
        """``ip link set DEV up|down`` inside a host (``eth0`` data, ``mgmt`` management)."""
        self.exec(host, "ip", "link", "set", dev, "up" if up else "down")

    def switch_drop(self, to_host: str, percent: int) -> None:
        """Drop ``percent`` % of the frames the switch forwards to a host (random, nftables)."""
        port = f"d{self.host(to_host).index}"
        rules = (f"table bridge fabt {{\n chain drops {{\n"
                 f"  type filter hook forward priority 0;\n"
                 f'  oifname "{port}" numgen random mod 100 < {int(percent)} counter drop\n'
                 f" }}\n}}\n")
        p = subprocess.run(["ip", "netns", "exec", self.switch, "nft", "-f", "-"],
                           input=rules, capture_output=True, text=True, timeout=10)
        if p.returncode != 0:
            raise TestbedError(f"nft in {self.switch}: {p.stderr.strip()}")

    def switch_clear(self) -> None:
        """Remove every drop rule from the switch."""
        run("ip", "netns", "exec", self.switch, "nft", "delete", "table", "bridge", "fabt",
            check=False)

    def rate_limit(self, host: str, mbit: int, dev: str = "eth0") -> None:
        """Shape a host's egress on ``dev`` with a token bucket (tc tbf)."""
        self.exec(host, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate",
                  f"{mbit}mbit", "burst", "256kb", "latency", "100ms")

    @contextlib.contextmanager
    def iperf3_server(self, host: str) -> Iterator[str]:
        """An iperf3 server on a host's data address (yields the address)."""
        addr = self.host(host).data_ip
        p = self.popen(host, "iperf3", "-s", "-B", addr)
        try:
            deadline = time.monotonic() + 10
            while ":5201" not in self.exec(host, "ss", "-ltn").stdout:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise TestbedError(f"iperf3 server on {host} did not start")
                time.sleep(0.05)
            yield addr
        finally:
            p.kill()
            p.wait(timeout=5)

    def iperf3(self, client: str, server_addr: str, *args: str, seconds: float) -> dict[str, Any]:
        """Run an iperf3 client in a host for ``seconds``; its -J report."""
        r = self.exec(client, "iperf3", "-c", server_addr, "-t", f"{seconds:g}", "-J", *args,
                      check=False, timeout=seconds + 30)
        doc: dict[str, Any] = json.loads(r.stdout)
        if "error" in doc:
            raise TestbedError(f"iperf3 in {client}: {doc['error']}")
        return doc


def _used_subnets() -> set[str]:
    out = run("ip", "-o", "-4", "addr", "show", check=False).stdout
    used = {w.rsplit(".", 1)[0] for w in out.split() if w.startswith("10.77.")}
    for state in STATE_ROOT.glob("*/state.json"):
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads(state.read_text())
            used |= {doc["mgmt_net"], doc["data_net"]}
    return used


def _free_subnets() -> tuple[str, str]:
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
    names = [n for n in run("ip", "netns", "list", check=False).stdout.split()
             if n.startswith(f"{PREFIX}{run_id}-")]
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


@contextlib.contextmanager
def bed_for_test(n_hosts: int, **kw: Any) -> Iterator[Testbed]:
    """A bed for one test (module): skipped on a laptop without root, a failure in CI."""
    from tests.conftest import skip_or_fail

    why = missing_prerequisite()
    if why:
        skip_or_fail(f"namespace test bed: {why}")
    bed = Testbed(n_hosts, **kw)
    try:
        bed.up()
        bed.start_driver()
        yield bed
    finally:
        bed.down()


def beds() -> list[str]:
    """Ids of the beds that exist (by state directory or namespace name)."""
    ids = {p.parent.name for p in STATE_ROOT.glob("*/state.json")}
    for n in run("ip", "netns", "list", check=False).stdout.split():
        if n.startswith(PREFIX) and n.count("-") == 2:
            ids.add(n.split("-")[1])
    return sorted(ids)


class SimDriver:
    """Writes the simulated hosts' trees, then rewrites them once per interval."""

    def __init__(self, bed: Testbed) -> None:
        from fabtop.sim import Fabric
        from fabtop.sim import HostConfig as SimHostConfig

        self.bed = bed
        sims = [h for h in bed.hosts if h.sim_root is not None]
        self.fabric = Fabric([SimHostConfig(h.name, ib_port=True) for h in sims],
                             slow_every_s=0.0)
        self.roots = {h.name: h.sim_root for h in sims if h.sim_root is not None}
        self.hold: set[str] = set()  # hosts whose trees a test edits by hand for now
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = time.monotonic()

    def write(self) -> None:
        """Create every tree at the start time."""
        from fabtop.sim import tree

        self.fabric.at(SIM_START_S)
        for name, root in self.roots.items():
            tree.write(self.fabric.hosts[name], root, SIM_START_S)

    def tick(self) -> None:
        """Bring every tree to now."""
        from fabtop.sim import tree

        t = SIM_START_S + time.monotonic() - self.t0
        with self.lock:
            for name, root in self.roots.items():
                if name not in self.hold:
                    tree.update(self.fabric.hosts[name], root, t)

    def reload_driver(self, name: str) -> None:
        """A NIC driver reload on a simulated host: its counters restart from 0."""
        with self.lock:
            self.fabric.hosts[name].reload_driver()

    def loop(self) -> None:
        """Tick until stopped."""
        while not self._stop.wait(min(self.bed.interval, 1.0) / 2):
            self.tick()

    def start(self) -> None:
        """Tick in a daemon thread."""
        self._thread = threading.Thread(target=self.loop, daemon=True, name="sim-driver")
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _up(ns: argparse.Namespace) -> int:
    sims = [int(x) for x in ns.sim.split(",") if x] if ns.sim else []
    bed = Testbed(ns.hosts, sim_hosts=sims, interval=ns.interval).up()
    if sims:
        # The trees must keep moving after this command returns: a detached driver.
        p = subprocess.Popen([sys.executable, "-m", "tests.testbed.netns", "_drive", bed.run_id,
                              ",".join(map(str, sims)), str(ns.interval)],
                             start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cwd=Path(__file__).resolve().parents[2])
        bed.driver_pid = p.pid
        bed._save()
    print(f"test bed {bed.run_id}: {ns.hosts} host(s), management {bed.mgmt_net}.0/24, "
          f"data {bed.data_net}.0/24")
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
        bed.hosts.append(Host(i, f"h{i}", bed.ns(i), "", "", None,  # type: ignore[arg-type]
                              bed.dir / f"h{i}" / "tree"))
    driver = SimDriver(bed)
    driver.t0 -= 0.0
    while (bed.dir / "state.json").exists():
        driver.tick()
        time.sleep(bed.interval / 2)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``up`` / ``down`` / ``list``."""
    p = argparse.ArgumentParser(prog="python -m tests.testbed.netns",
                                description="namespace hosts with a real sshd each")
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


if __name__ == "__main__":
    sys.exit(main())
