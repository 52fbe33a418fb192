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

By hand (the commands: :mod:`tests.testbed.cli`)::

    python -m tests.testbed.netns up --hosts 3 [--sim 2,3]   # prints how to run fabtop
    python -m tests.testbed.netns down [--id ID | --all]
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from fabtop.config import DEFAULT_PATH, Config, HostConfig, SshTarget
from tests.testbed.beds import (
    PREFIX,
    STATE_ROOT,
    TestbedError,
    free_subnets,
    missing_prerequisite,
    run,
    teardown,
)
from tests.testbed.ns_sshd import NsSshd
from tests.testbed.sim_driver import SimDriver

SPARED_UDP_LENGTH = 64  # switch_drop never drops UDP datagrams shorter than this (header incl.)


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
            name=self.name,
            ssh=target,
            sysfs=f"{self.sim_root}/sys",
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
        self.mgmt_net, self.data_net = free_subnets()

    # --- names -----------------------------------------------------------------------------

    def ns(self, i: int) -> str:
        """The namespace of host ``i`` (1-based)."""
        return f"{PREFIX}{self.run_id}-h{i}"

    @property
    def namespaces(self) -> list[str]:
        """Every namespace this bed owns."""
        return [self.switch, *(self.ns(i) for i in range(1, self.n_hosts + 1))]

    def processes(self) -> list[tuple[str, list[str]]]:
        """(namespace, argv) of every live process in the bed's namespaces: what a test
        checks is gone after a plan or a Ctrl-C."""
        out = []
        for ns in self.namespaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in pids.stdout.split():
                try:
                    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                argv = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
                if argv:
                    out.append((ns, argv))
        return out

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
            for dev, peer, br, net, mtu in (
                ("mgmt", f"m{i}", "swm", m, 1500),
                ("eth0", f"d{i}", "swd", d, self.data_mtu),
            ):
                run(
                    "ip",
                    "link",
                    "add",
                    "name",
                    dev,
                    "netns",
                    ns,
                    "mtu",
                    str(mtu),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    peer,
                    "netns",
                    sw,
                    "mtu",
                    str(mtu),
                )
                run("ip", "-n", sw, "link", "set", peer, "master", br, "up")
                run("ip", "-n", ns, "addr", "add", f"{net}.{i}/24", "dev", dev)
                run("ip", "-n", ns, "link", "set", dev, "up")
            sim_root = self.dir / f"h{i}" / "tree" if i in self.sim_hosts else None
            sshd = NsSshd(
                self.dir / f"h{i}" / "sshd",
                port=22,
                host=f"{m}.{i}",
                user="root",
                netns=ns,
                authorized=authorized,
            )
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
        doc = {
            "id": self.run_id,
            "hosts": self.n_hosts,
            "namespaces": self.namespaces,
            "mgmt_net": self.mgmt_net,
            "data_net": self.data_net,
            "driver_pid": self.driver_pid,
        }
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
        lines = [
            f"interval = {self.interval}",
            f'known_hosts = "{self.known_hosts_path}"',
            f'ssh_config = "{self.ssh_config_path}"',
        ]
        for h in self.hosts:
            c = h.config()
            lines += ["", "[[host]]", f'name = "{c.name}"', f'ssh = "{c.ssh}"']
            if h.sim_root is not None:
                lines += [f'sysfs = "{c.sysfs}"', f"path = {json.dumps(list(c.path))}"]
        return "\n".join(lines) + "\n"

    # --- acting on hosts -------------------------------------------------------------------

    def exec(
        self, host: str, *argv: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside a host's namespace."""
        return run(
            "ip", "netns", "exec", self.host(host).netns, *argv, check=check, timeout=timeout
        )

    def popen(self, host: str, *argv: str) -> subprocess.Popen[str]:
        """Start a command inside a host's namespace (stdout/stderr piped)."""
        return subprocess.Popen(
            ["ip", "netns", "exec", self.host(host).netns, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def set_link(self, host: str, dev: str, up: bool) -> None:
        """``ip link set DEV up|down`` inside a host (``eth0`` data, ``mgmt`` management)."""
        self.exec(host, "ip", "link", "set", dev, "up" if up else "down")

    def switch_drop(self, to_host: str, percent: int) -> None:
        """Drop ``percent`` % of the frames the switch forwards to a host (random, nftables).

        Tiny UDP datagrams are spared: iperf3 sets up a UDP stream with one 4-byte cookie
        it never resends, so losing that one fails the whole run ("unable to read from
        stream socket", esnet/iperf#862) instead of measuring loss.
        """
        port = f"d{self.host(to_host).index}"
        rules = (
            f"table bridge fabt {{\n chain drops {{\n"
            f"  type filter hook forward priority 0;\n"
            f'  oifname "{port}" udp length < {SPARED_UDP_LENGTH} accept\n'
            f'  oifname "{port}" numgen random mod 100 < {int(percent)} counter drop\n'
            f" }}\n}}\n"
        )
        p = subprocess.run(
            ["ip", "netns", "exec", self.switch, "nft", "-f", "-"],
            input=rules,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if p.returncode != 0:
            raise TestbedError(f"nft in {self.switch}: {p.stderr.strip()}")

    def switch_cut(self, from_host: str, to_host: str) -> None:
        """Drop every frame the switch forwards from one host to another (nftables): a
        peer gone silent, its last words (a FIN, a RST) never arriving."""
        src, dst = (f"d{self.host(h).index}" for h in (from_host, to_host))
        rules = (
            f"table bridge fabt {{\n chain drops {{\n"
            f"  type filter hook forward priority 0;\n"
            f'  iifname "{src}" oifname "{dst}" counter drop\n'
            f" }}\n}}\n"
        )
        p = subprocess.run(
            ["ip", "netns", "exec", self.switch, "nft", "-f", "-"],
            input=rules,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if p.returncode != 0:
            raise TestbedError(f"nft in {self.switch}: {p.stderr.strip()}")

    def switch_dropped(self) -> int:
        """Frames the switch's drop rule has dropped so far (its nftables counter)."""
        out = run(
            "ip", "netns", "exec", self.switch, "nft", "-j", "list", "table", "bridge", "fabt"
        ).stdout
        return sum(
            e["counter"]["packets"]
            for item in json.loads(out)["nftables"]
            if "rule" in item
            for e in item["rule"]["expr"]
            if "counter" in e
        )

    def udp_rcvbuf_errors(self, host: str) -> int:
        """UDP datagrams a host's sockets dropped for a full receive buffer (/proc/net/snmp)."""
        rows = [
            ln.split()
            for ln in self.exec(host, "cat", "/proc/net/snmp").stdout.splitlines()
            if ln.startswith("Udp:")
        ]
        return int(dict(zip(rows[0], rows[1], strict=True))["RcvbufErrors"])

    def switch_clear(self) -> None:
        """Remove every drop rule from the switch."""
        run(
            "ip",
            "netns",
            "exec",
            self.switch,
            "nft",
            "delete",
            "table",
            "bridge",
            "fabt",
            check=False,
        )

    def rate_limit(self, host: str, mbit: int, dev: str = "eth0") -> None:
        """Shape a host's egress on ``dev`` with a token bucket (tc tbf)."""
        self.exec(
            host,
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            f"{mbit}mbit",
            "burst",
            "256kb",
            "latency",
            "100ms",
        )

    def switch_rate_limit(self, to_host: str, mbit: int) -> None:
        """Shape what the switch forwards to a host (tc tbf on its switch port's egress):
        the port an incast into that host congests, as a switch's port to a receiver."""
        port = f"d{self.host(to_host).index}"
        run(
            "ip", "netns", "exec", self.switch, "tc", "qdisc", "replace", "dev", port, "root",
            "tbf", "rate", f"{mbit}mbit", "burst", "256kb", "latency", "100ms",
        )  # fmt: skip

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
        r = self.exec(
            client,
            "iperf3",
            "-c",
            server_addr,
            "-t",
            f"{seconds:g}",
            "-J",
            *args,
            check=False,
            timeout=seconds + 30,
        )
        doc: dict[str, Any] = json.loads(r.stdout)
        if "error" in doc:
            raise TestbedError(f"iperf3 in {client}: {doc['error']}")
        return doc


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


if __name__ == "__main__":
    from tests.testbed.cli import main

    sys.exit(main())
