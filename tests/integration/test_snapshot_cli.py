"""`fabtop snapshot` as a user runs it: the real CLI, the real probe, a real sshd on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from collectors.parsers.ethtool import parse_ethtool_stats
from fabtop.sim import Fabric, SimHostConfig, tree
from tests.conftest import REPO, skip_or_fail
from tests.integration.sshd import Sshd

pytestmark = pytest.mark.sshd


def fabtop(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI the way a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def ssh_config(tmp: Path, sshd: Sshd) -> Path:
    """A client config giving the test key, as a user's ~/.ssh/config would."""
    p = tmp / "ssh_config"
    p.write_text(f"Host *\n  IdentityFile {sshd.client_key_path}\n  IdentitiesOnly yes\n")
    return p


def ssh_args(tmp: Path, sshd: Sshd) -> list[str]:
    return ["--known-hosts", str(sshd.known_hosts_path), "--ssh-config", str(ssh_config(tmp, sshd))]


def sysfs_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def link(doc: dict[str, Any], host: str, lid: str) -> dict[str, Any]:
    h = next(h for h in doc["hosts"] if h["name"] == host)
    return next(x for x in h["links"] if x["id"] == lid)


def test_local_snapshot_netdev_bytes_match_sysfs(tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    before = {
        n: sysfs_int(Path(f"/sys/class/net/{n}/statistics/rx_bytes"))
        for n in os.listdir("/sys/class/net")
    }
    r = fabtop("snapshot", "--interval", "0.5", "-o", str(out))
    after = {
        n: sysfs_int(Path(f"/sys/class/net/{n}/statistics/rx_bytes"))
        for n in os.listdir("/sys/class/net")
    }
    assert r.returncode == 0, r.stderr
    assert f"written to {out}" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "fabtop.snapshot/2" and doc["interval_s"] == 0.5
    (host,) = doc["hosts"]
    assert host["reachable"] is True and host["error"] is None
    assert {x["id"] for x in host["links"]} >= set(before) & set(after)
    for name in set(before) & set(after):
        got = link(doc, host["name"], name)["counters"]["netdev"]["rx_bytes"]
        assert before[name] <= got <= after[name], name
    lo = link(doc, host["name"], "lo")
    assert lo["kind"] == "virtual"
    assert lo["metrics"]["rx_bytes"] == lo["counters"]["netdev"]["rx_bytes"]
    assert lo["rates"]["rx_bytes_per_s"] >= 0


def test_snapshot_over_real_sshd_and_an_unreachable_host(tmp_path: Path, sshd: Sshd) -> None:
    out = tmp_path / "snap.json"
    lo_before = sysfs_int(Path("/sys/class/net/lo/statistics/tx_bytes"))
    r = fabtop(
        "snapshot",
        "--interval",
        "0.5",
        "--timeout",
        "15",
        "-o",
        str(out),
        *ssh_args(tmp_path, sshd),
        f"node1={sshd.target}",
        "dead=root@127.0.0.1:1",
    )
    lo_after = sysfs_int(Path("/sys/class/net/lo/statistics/tx_bytes"))
    assert r.returncode == 1, r.stderr  # not every host answered
    doc = json.loads(out.read_text())
    names = {h["name"]: h for h in doc["hosts"]}
    assert names["node1"]["reachable"] is True
    dead = names["dead"]
    assert dead["reachable"] is False and dead["links"] == []
    assert "dead" in dead["error"] and "refused" in dead["error"].lower()
    assert "\n" not in dead["error"]
    assert any(line.startswith("fabtop: dead:") for line in r.stderr.splitlines())
    got = link(doc, "node1", "lo")["counters"]["netdev"]["tx_bytes"]
    assert lo_before <= got <= lo_after


def test_unknown_host_key_is_refused_not_accepted(tmp_path: Path, sshd: Sshd) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    r = fabtop(
        "snapshot",
        "--timeout",
        "10",
        "--known-hosts",
        str(empty),
        "--ssh-config",
        str(ssh_config(tmp_path, sshd)),
        f"node1={sshd.target}",
    )
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    (h,) = doc["hosts"]
    assert h["reachable"] is False and "host key" in h["error"].lower()


def _sim_node(tmp: Path) -> Path:
    fab = Fabric([SimHostConfig("n1", ib_port=True), SimHostConfig("n2")], slow_every_s=0.0)
    fab.at(30.0)  # under traffic, so counters are large and moving
    host = fab.hosts["n1"]
    root = tmp / "n1"
    tree.write(host, root, 30.0)
    return root


def test_replayed_host_tree_every_raw_counter_exact(tmp_path: Path, sshd: Sshd) -> None:
    root = _sim_node(tmp_path)
    cfg = tmp_path / "fabtop.toml"
    cfg.write_text(
        "interval = 0.5\n[[host]]\n"
        f'name = "n1"\nssh = "{sshd.target}"\nsysfs = "{root}/sys"\npath = ["{root}/bin"]\n'
    )
    out = tmp_path / "snap.json"
    r = fabtop("snapshot", "-c", str(cfg), "-o", str(out), *ssh_args(tmp_path, sshd))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    net = root / "sys" / "class" / "net"
    ib = root / "sys" / "class" / "infiniband"
    roce = [
        d.name
        for d in net.iterdir()
        if (d / "device").exists()
        and (root / "state" / "ethtool_S" / d.name).is_file()
        and "np" in d.name
    ]
    assert len(roce) == 2
    for nd in roce:
        entry = link(doc, "n1", nd)
        assert entry["kind"] == "roce" and entry["rdma_device"] is not None
        # Every raw ethtool counter exact, by its exact name.
        want = parse_ethtool_stats((root / "state" / "ethtool_S" / nd).read_text()).counters
        assert entry["counters"]["ethtool"] == want
        # Every netdev statistic exact.
        stats = {f.name: sysfs_int(f) for f in (net / nd / "statistics").iterdir()}
        assert entry["counters"]["netdev"] == stats
        # Normalized: bytes from the phy counters, pause per priority (PFC on prio 3 only).
        m = entry["metrics"]
        assert m["rx_bytes"] == want["rx_bytes_phy"]
        assert m["rx_pause"] == {"3": want["rx_prio3_pause"]}
        assert m["tx_pause_us"] == {"3": want["tx_prio3_pause_duration"]}
        port = ib / entry["rdma_device"] / "ports" / str(entry["port"])
        hw = {f.name: sysfs_int(f) for f in (port / "hw_counters").iterdir()}
        # The ones no rule reads come on slow ticks, under their own source (ib_hw_tick).
        assert {**entry["counters"]["ib_hw"], **entry["counters"].get("ib_hw_slow", {})} == hw
        assert m["ecn_marked"] >= 0 and m["cnp_sent"] == hw["np_cnp_sent"]
        assert entry["qos"]["pfc_enabled"] == [3] and entry["qos"]["trust"] == "dscp"
    ib_link = next(
        x for x in next(h for h in doc["hosts"] if h["name"] == "n1")["links"] if x["kind"] == "ib"
    )
    port = ib / ib_link["rdma_device"] / "ports" / str(ib_link["port"])
    rcv = sysfs_int(port / "counters" / "port_rcv_data")
    assert ib_link["counters"]["ib_port"]["port_rcv_data"] == rcv
    assert ib_link["metrics"]["rx_bytes"] == 4 * rcv  # 4-octet words
    gpus = next(h for h in doc["hosts"] if h["name"] == "n1")["gpus"]
    assert len(gpus) == 2 and all(isinstance(g["utilization_pct"], float) for g in gpus)


def test_read_only_target_gives_a_clear_error_and_no_partial_file(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root to mount a read-only tmpfs")
    ro = tmp_path / "ro"
    ro.mkdir()
    r0 = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
        capture_output=True,
        text=True,
    )
    if r0.returncode != 0:
        skip_or_fail(f"cannot mount tmpfs: {r0.stderr.strip()}")
    try:
        r = fabtop("snapshot", "--interval", "0.3", "-o", str(ro / "snap.json"))
        assert r.returncode == 2
        assert f"{ro / 'snap.json'}: cannot write snapshot: Read-only file system" in r.stderr
        assert list(ro.iterdir()) == []
    finally:
        subprocess.run(["umount", str(ro)], check=False)


def test_snapshot_to_a_device_keeps_the_device(tmp_path: Path) -> None:
    import stat

    if os.geteuid() != 0:
        skip_or_fail("needs root to make a device node (and to replace one, the bug)")
    dev = tmp_path / "null"  # a private /dev/null (1,3): what `-o /dev/null` would replace
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError as e:
        skip_or_fail(f"cannot make a device node: {e}")
    r = fabtop("snapshot", "--interval", "0.3", "-o", str(dev))
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(dev.stat().st_mode) and dev.stat().st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_snapshot_through_a_symlink_and_into_a_fifo(tmp_path: Path) -> None:
    import threading

    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "snap.json"
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    r = fabtop("snapshot", "--interval", "0.3", "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["schema"] == "fabtop.snapshot/2"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    r = fabtop("snapshot", "--interval", "0.3", "--format", "csv", "-o", str(fifo))
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert got and got[0].startswith("host,link,kind,name,priority,value,rate_per_s\n")
    assert fifo.is_fifo()
