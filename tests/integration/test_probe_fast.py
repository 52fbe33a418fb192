"""The fast probe (collectors/probe_fast.py) as a node runs it: same samples as the sh
probe from the same tree, chosen per host, gone with its connection, bounded reads."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder
from collectors.normalize import IB_HW_TICK, IB_PORT_TICK
from collectors.probe import ProbeArgs, build_argv, probe_script
from collectors.samples import HostSample
from collectors.structured import COUNTER_KINDS
from fabtop.core.pipeline import Pipeline
from tests.conftest import IN_CI, skip_or_fail
from tests.integration.sshd import Sshd
from tests.integration.test_probe import (  # noqa: F401
    SYSTEM_PATH,
    Probe,
    _args,
    _frame_with,
    _lines,
    _nvidia_shim,
    _start,
    _tree,
    _write_tool,
    node,
    run_probe,
)
from tests.integration.test_probe_lifetime import (
    GONE_WITHIN_S,
    _cmdline,
    _describe,
    _members,
    _probe_sessions,
    _wait_gone,
)

REPO = Path(__file__).resolve().parents[2]


def _fast(node: Path, **kw: object) -> ProbeArgs:
    return replace(_args(node, probe="python"), **kw)  # type: ignore[arg-type]


def _run(args: ProbeArgs, node: Path, started: list[Probe], n: int) -> list[Frame]:
    probe = _start(started, ["sh", "-s", "--", *build_argv(args)], node)
    frames = probe.frames(n, deadline_s=15)
    assert len(frames) == n
    assert probe.decoder.take_warnings() == []
    return frames


def _samples(frames: list[Frame]) -> list[HostSample]:
    pipe = Pipeline()
    return [pipe.apply_frame("n1", f)[0] for f in frames]


def _impl(frame: Frame) -> str | None:
    sec = frame.find("probe")
    assert sec is not None
    for line in sec.text.splitlines():
        if line.startswith("impl "):
            return line[5:]
    return None


def _comparable(s: HostSample) -> dict[str, object]:
    """Everything a sample says, less the times and the probe's own notes."""
    links = {
        lid: (
            ln.netdev,
            ln.rdma_device,
            ln.port,
            ln.link_layer,
            ln.state,
            ln.rate_gbps,
            ln.mtu,
            ln.driver,
            ln.driver_version,
            ln.firmware,
            ln.pcie,
            ln.temperature_c,
            ln.physical,
            ln.kind,
            ln.counters,
            ln.metrics,
            sorted(ln.saturated),
            ln.qos,
            ln.gids,
            ln.gids_truncated,
            ln.port_state,
            ln.phys_state,
            ln.sm_lid,
            ln.node_type,
        )
        for lid, ln in s.links.items()
    }
    sections = sorted(
        (x.kind, x.subject or "", x.status, x.detail or "")
        for x in s.sections
        if x.kind != "probe" and x.kind not in COUNTER_KINDS.values()  # the fast probe's
    )
    return {"links": links, "sections": sections, "cpu": s.cpu_throttle_count, "gpus": s.gpus}


def _sim_node(tmp_path: Path) -> Path:
    """A simulated node tree (2 ConnectX RoCE ports with every counter of the captures,
    an IB port): the fabtop.sim tree and its ethtool/mlnx_qos shims."""
    from fabtop.sim import Fabric, SimHostConfig, tree

    fab = Fabric([SimHostConfig("n1", roce_ports=2, ib_port=True), SimHostConfig("n2")])
    root = tmp_path / "simnode"
    tree.write(fab.hosts["n1"], root, t=30.0)
    return root


@pytest.mark.parametrize("split", [False, True], ids=["all-per-tick", "ib_tick"])
@pytest.mark.parametrize("tree", ["captures", "sim"])
def test_both_probes_give_the_same_samples_from_the_same_tree(
    tree: str, split: bool, node: Path, tmp_path: Path, run_probe: list[Probe]
) -> None:
    if tree == "sim":
        root = _sim_node(tmp_path)
        base = replace(
            _args(node), sysfs=str(root / "sys"), path=(str(root / "bin"),), max_frames=2
        )
    else:
        base = _args(node, max_frames=2)
    base = replace(
        base,
        slow_ticks=100000,
        ib_hw_tick=IB_HW_TICK if split else None,
        ib_port_tick=IB_PORT_TICK if split else None,
    )
    sh = _run(replace(base, probe="sh"), node, run_probe, 2)
    fast = _run(replace(base, probe="python"), node, run_probe, 2)
    assert _impl(sh[0]) == "sh"
    impl = _impl(fast[0])
    assert impl is not None and impl.startswith("python 3.")
    for a, b in zip(_samples(sh), _samples(fast), strict=True):
        ca, cb = _comparable(a), _comparable(b)
        assert ca["links"] and ca["links"].keys() == cb["links"].keys()  # type: ignore[attr-defined]
        for lid in ca["links"]:  # type: ignore[attr-defined]
            assert ca["links"][lid] == cb["links"][lid], lid  # type: ignore[index]
        assert ca == cb
        assert sum(len(c) for ln in a.links.values() for c in ln.counters.values()) > 20


@pytest.mark.parametrize("kind", ["python", "sh"])
def test_port_counters_no_metric_reads_come_on_slow_ticks_and_make_no_rate(
    kind: str, tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    # On real hardware each counters/ read is a PMA query and each hw_counters read a
    # firmware command: per tick only what a metric reads (collectors.normalize's
    # IB_PORT_TICK and IB_HW_TICK, as a session sends them), the rest with the slow
    # sources, carried into the frames between and kept apart.
    root = _sim_node(tmp_path)
    # Two legacy 16-bit counters stuck at their maximum: one read per tick, one not.
    counters = root / "sys/class/infiniband/mlx5_2/ports/1/counters"
    for name in ("port_rcv_errors", "VL15_dropped"):
        (counters / name).write_text("65535\n")
    args = replace(
        _args(node),
        sysfs=str(root / "sys"),
        path=(str(root / "bin"),),
        max_frames=3,
        slow_ticks=100000,
        probe=kind,
    )
    split = _run(
        replace(args, ib_hw_tick=IB_HW_TICK, ib_port_tick=IB_PORT_TICK), node, run_probe, 3
    )
    tick, slow = _tree(split[1], "sysib"), _lines(split[0].find("sysib_slow").text)  # type: ignore[union-attr]
    port = "mlx5_2/ports/1/"  # the simulated node's InfiniBand port

    def names(rels: dict[str, str], d: str) -> set[str]:
        return {r.rsplit("/", 1)[1] for r in rels if r.startswith(port + d)}

    for d, want in (("counters/", IB_PORT_TICK), ("hw_counters/", IB_HW_TICK)):
        assert names(tick, d) and names(tick, d) <= set(want), d
        assert names(slow, d) and not names(slow, d) & set(want), d
    assert {"unicast_xmit_packets", "VL15_dropped"} <= names(slow, "counters/")
    every = _run(args, node, run_probe, 3)  # the same tree, every file every tick
    pipe, whole = Pipeline(), Pipeline()
    for f, g in zip(split, every, strict=True):
        sample, rates = pipe.apply_frame("n1", f)
        base, base_rates = whole.apply_frame("n1", g)
    ib = next(ln for ln in sample.links.values() if ln.rdma_device == "mlx5_2")
    # Carried into every frame, kept apart, no rate made of them.
    assert set(ib.counters["ib_port_slow"]) == names(slow, "counters/")
    assert set(ib.counters["ib_hw_slow"]) == names(slow, "hw_counters/")
    raw = rates.links[ib.id].raw_rates
    assert (
        raw.get("ib_port") and raw.get("ib_hw") and not {"ib_port_slow", "ib_hw_slow"} & raw.keys()
    )
    # Nothing a user sees moved: the same metrics, every counter still there, both
    # saturated counters said.
    assert ib.metrics == base.links[ib.id].metrics
    assert ib.saturated == base.links[ib.id].saturated == ["VL15_dropped", "port_rcv_errors"]
    stuck = rates.links[ib.id].saturated
    assert stuck == base_rates.links[ib.id].saturated and "VL15_dropped" in stuck
    merged = {**ib.counters["ib_port"], **ib.counters["ib_port_slow"]}
    assert merged.keys() == base.links[ib.id].counters["ib_port"].keys()


def test_a_tree_file_replaced_by_rename_is_followed_and_a_fifo_is_never_read(
    node: Path, run_probe: list[Probe]
) -> None:
    # A replayed or synced tree swaps whole files (rsync, fabtop.sim.tree): the probe's
    # held descriptor would keep reading the old inode.
    probe = _start(run_probe, ["sh", "-s", "--", *build_argv(_fast(node, max_frames=0))], node)
    assert len(probe.frames(2)) == 2
    stats = node / "sys/class/net/eth0/statistics"
    tmp = stats / ".rx_bytes.tmp"
    tmp.write_text("5000\n")
    os.replace(tmp, stats / "rx_bytes")
    victim = stats / "rx_dropped"
    victim.unlink()
    os.mkfifo(victim)
    warned, seen = _frame_with(probe, "not a regular file, not read: eth0/statistics/rx_dropped", 5)
    after = probe.frames(2)
    for f in [warned, *after]:
        net = _tree(f, "sysnet")
        assert net["eth0/statistics/rx_bytes"] == "5000"
        assert net["eth0/statistics/tx_bytes"] == "1001"
        assert "eth0/statistics/rx_dropped" not in net
    assert len(seen) <= 3  # followed within a tick or two, not at the next slow scan


def test_auto_runs_the_fast_probe_and_sh_or_a_node_without_python3_the_sh_probe(
    node: Path, tmp_path: Path, run_probe: list[Probe]
) -> None:
    auto = _run(replace(_fast(node), probe="auto", max_frames=1), node, run_probe, 1)
    assert (_impl(auto[0]) or "").startswith("python 3.")
    # A node whose only tools are sh's: no python3 anywhere on PATH.
    bare = tmp_path / "bare"
    bare.mkdir()
    for tool in ("sh", "awk", "date", "sleep", "cat", "grep", "timeout", "ps"):
        found = shutil.which(tool)
        assert found is not None
        (bare / tool).symlink_to(found)
    probe = _start(
        run_probe,
        ["sh", "-s", "--", *build_argv(_fast(node, probe="auto"))],
        node,
        env_path=str(bare),
    )
    frames = probe.frames(2)
    assert len(frames) == 2 and _impl(frames[0]) == "sh"
    assert "eth0/statistics/rx_bytes 1000" in frames[0].find("sysnet").text  # type: ignore[union-attr]
    # probe=python where there is none: refused with a line that says why.
    p = subprocess.run(
        ["sh", "-s", "--", *build_argv(_fast(node))],
        input=probe_script().encode(),
        capture_output=True,
        timeout=10,
        env={"PATH": str(bare), "HOME": str(tmp_path)},
    )
    assert p.returncode == 2 and p.stdout == b""
    assert b"probe=python: no python3 of 3.6 or newer on this node" in p.stderr


@pytest.mark.parametrize(
    "word", ["interval_ms=50", "sysfs=/sys/../etc", "ifaces=eth0;reboot", "probe=perl", "x=1"]
)
def test_the_fast_probe_refuses_what_the_sh_probe_refuses(word: str, tmp_path: Path) -> None:
    key = word.split("=")[0]
    argv = [w for w in build_argv(ProbeArgs(probe="python")) if w.split("=")[0] != key]
    p = subprocess.run(
        [sys.executable, str(REPO / "collectors/probe_fast.py"), *argv, word],
        capture_output=True,
        timeout=10,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.startswith(b"fabtop-probe: ")


# Words the probes take and refuse alike (the watchdog's thresholds, the per-tick lists):
# (word, taken). probe.py writes a threshold in at most 6 decimals, no exponent.
TICK_AND_STORM_WORDS = [
    ("storm_pause_ratio=0.9", True),
    ("storm_pause_ratio=1", True),
    ("storm_pause_ratio=1.000000", True),
    ("storm_pause_ratio=0", True),
    ("storm_flat_fraction=0.999999", True),
    ("storm_flat_bytes_per_s=9999999999999999.5", True),
    ("ib_port_tick=-", True),
    ("ib_port_tick=port_xmit_wait,symbol_error", True),
    ("storm_pause_ratio=1.5", False),
    ("storm_pause_ratio=1.000001", False),
    ("storm_pause_ratio=0.9999999", False),
    ("storm_pause_ratio=.5", False),
    ("storm_pause_ratio=1.", False),
    ("storm_pause_ratio=00.5", False),
    ("storm_pause_ratio=-0.1", False),
    ("storm_pause_ratio=", False),
    ("storm_flat_fraction=2", False),
    ("storm_flat_bytes_per_s=1e6", False),
    ("storm_flat_bytes_per_s=10000000000000000", False),
    ("storm_flat_bytes_per_s=1.2.3", False),
    ("ib_port_tick=a;reboot", False),
    ("ib_port_tick=a,,b", False),
]


@pytest.mark.parametrize(("word", "taken"), TICK_AND_STORM_WORDS)
def test_both_probes_take_and_refuse_the_same_threshold_and_tick_words(
    word: str, taken: bool, node: Path, run_probe: list[Probe]
) -> None:
    args = build_argv(_fast(node, max_frames=1, slow_ticks=100000))
    for probe in ("python", "sh"):
        argv = ["sh", "-s", "--", *[a for a in args if not a.startswith("probe=")]]
        p = _start(run_probe, [*argv, f"probe={probe}", word], node)
        frames = p.frames(1, deadline_s=10)
        assert p.proc.wait(timeout=10) == (0 if taken else 2), (probe, word)
        assert len(frames) == (1 if taken else 0), (probe, word)


def _threads(pids: list[int]) -> str:
    """State and wait channel of every thread of ``pids`` (why a process is still there)."""
    out = []
    for p in pids:
        with contextlib.suppress(OSError):
            for t in sorted(os.listdir(f"/proc/{p}/task")):
                st = Path(f"/proc/{p}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[0]
                wchan = Path(f"/proc/{p}/task/{t}/wchan").read_text()
                sig = [
                    ln
                    for ln in Path(f"/proc/{p}/task/{t}/status").read_text().splitlines()
                    if ln.startswith(("SigPnd", "ShdPnd", "SigBlk", "PPid"))
                ]
                start = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[19])
                up = float(Path("/proc/uptime").read_text().split()[0])
                age = up - start / os.sysconf("SC_CLK_TCK")
                out.append(f"{p}/{t} {st} {wchan} {sig} age {age:.2f}s")
    return ", ".join(out)


def _hung_gpu_args(node: Path, fixtures_dir: Path) -> ProbeArgs:
    fields = _nvidia_shim(node, fixtures_dir)
    # nvidia-smi that hangs with a child of its own: only a group kill ends the child.
    _write_tool(node / "bin", "nvidia-smi", "sleep 101\n")
    return _fast(node, max_frames=0, gpu="auto", gpu_fields=tuple(fields.split(",")))


def test_closing_stdin_ends_every_process_of_the_fast_probe(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    probe = _start(
        run_probe, ["sh", "-s", "--", *build_argv(_hung_gpu_args(node, fixtures_dir))], node
    )
    assert len(probe.frames(2)) == 2
    sid = probe.proc.pid
    assert any(_cmdline(p) == ["sleep", "101"] for p in _members(sid))
    assert probe.proc.stdin is not None
    probe.proc.stdin.close()
    left = _wait_gone(sid)
    assert left == [], _describe(left)


def test_max_frames_ends_the_fast_probe_with_status_0_and_nothing_left(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    args = replace(_hung_gpu_args(node, fixtures_dir), max_frames=3)
    probe = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node)
    assert [f.seq for f in probe.frames(3)] == [1, 2, 3]
    assert probe.proc.wait(timeout=3) == 0
    left = _wait_gone(probe.proc.pid)
    assert left == [], _describe(left)


async def test_a_dropped_ssh_connection_leaves_nothing_of_the_fast_probe(
    sshd: Sshd, node: Path, fixtures_dir: Path
) -> None:
    argv = build_argv(_hung_gpu_args(node, fixtures_dir))
    for how in ("close", "kill-sshd-session"):
        t = sshd.transport()
        await t.connect()
        gen = t.stream(probe_script(), argv)
        try:
            dec, got = FrameDecoder(), 0
            async with asyncio.timeout(15):
                async for chunk in gen:
                    got += len(dec.feed(chunk))
                    if got >= 2:
                        break
            sids = _probe_sessions(node, "-c")
            assert len(sids) == 1, sids
            assert any(_cmdline(p) == ["sleep", "101"] for p in _members(sids[0]))
            if how == "close":
                await gen.aclose()
                await t.close()
            else:
                sess = sshd.session_pid(f"sysfs={node}/sys")
                assert sess is not None
                os.kill(sess, signal.SIGKILL)
            end = time.monotonic() + GONE_WITHIN_S
            while _members(sids[0]) and time.monotonic() < end:
                await asyncio.sleep(0.05)
            left = _members(sids[0])
            assert left == [], f"after {how}: {_describe(left)}; {_threads(left)}"
        finally:
            await gen.aclose()
            await t.close()


def test_the_fast_probe_runs_on_the_oldest_python3_ci_installs(
    node: Path, run_probe: list[Probe]
) -> None:
    # Debian's pypy3 is Python 3.9; vermin (tests/unit/test_probe_fast.py) checks 3.6.
    pypy = shutil.which("pypy3")
    if pypy is None:
        skip_or_fail("pypy3 not installed (apt-get install pypy3)")
    assert pypy is not None
    args = _fast(node, max_frames=2, slow_ticks=100000)
    probe = _start(
        run_probe, [pypy, str(REPO / "collectors/probe_fast.py"), *build_argv(args)], node
    )
    old = probe.frames(2, deadline_s=20)
    assert len(old) == 2 and probe.decoder.take_warnings() == []
    assert (_impl(old[0]) or "").startswith("python 3.9")
    new = _run(args, node, run_probe, 2)
    assert _comparable(_samples(old)[1]) == _comparable(_samples(new)[1])


@pytest.mark.root
def test_real_netdevs_give_netlink_statistics_and_ethtool_ioctl_values(
    tmp_path: Path, run_probe: list[Probe]
) -> None:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("ethtool"):
        skip_or_fail("needs root, ip and ethtool (apt-get install iproute2 ethtool)")
    ns = f"fabtop-fast-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        ip = ["ip", "-n", ns]
        subprocess.run([*ip, "link", "add", "va", "type", "veth", "peer", "name", "vb"], check=True)
        subprocess.run([*ip, "link", "set", "va", "up"], check=True)
        subprocess.run([*ip, "link", "set", "vb", "up"], check=True)
        args = ProbeArgs(
            interval_ms=200,
            interfaces=("va", "vb"),
            max_frames=4,
            gpu="off",
            probe="python",
            path=(),
        )
        # /sys of the namespace: `ip netns exec` mounts it for the netns.
        argv = ["ip", "netns", "exec", ns, "sh", "-s", "--", *build_argv(args)]
        probe = _start(run_probe, argv, tmp_path, env_path=SYSTEM_PATH + ":/usr/sbin:/sbin")
        frames = probe.frames(4, deadline_s=15)
        assert len(frames) == 4
        # The probe section counts the ioctls, a line that changes every tick: the
        # collector keeps the host's shape all the same (it was built anew every tick).
        pipe = Pipeline()
        shapes = []
        for f in frames:
            pipe.apply_frame("n1", f)
            shapes.append(pipe._shapes["n1"].shape)
        said = {f.find("probe").text for f in frames}  # type: ignore[union-attr]
        assert len(said) == 4 and all(s is shapes[0] for s in shapes)
        want = subprocess.run(
            ["ip", "netns", "exec", ns, "ethtool", "-S", "va"], capture_output=True, text=True
        ).stdout
        got = frames[1].find("ethtool_S", "va")
        assert got is not None and got.status == "ok"
        names = lambda t: [ln.split(":")[0].strip() for ln in t.splitlines()][1:]  # noqa: E731
        assert got.schema is not None  # the ioctl's values go by position
        assert list(got.schema.names) == names(want) and len(names(want)) > 2
        net = _tree(frames[1], "sysnet")
        sysfs = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                ns,
                "cat",
                "/sys/class/net/va/mtu",
                "/sys/class/net/va/operstate",
            ],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert [net["va/mtu"], net["va/operstate"]] == sysfs
        assert int(net["va/statistics/tx_packets"]) >= 0 and "va/statistics/rx_nohandler" in net
        notes = frames[1].find("probe").text  # type: ignore[union-attr]
        assert "ethtool_ioctls" in notes
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_ci_installs_what_these_tests_need() -> None:
    if not IN_CI:
        pytest.skip("checked in CI only")
    assert shutil.which("pypy3")
    assert shutil.which("vermin") or (Path(sys.executable).parent / "vermin").exists()


def test_a_storm_in_a_tree_reaches_the_collector_as_a_watchdog_event(
    tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    # A simulated stuck receiver written as a sysfs tree with its ethtool shim, read by
    # the real fast probe: a tree's ethtool -S is a process, so the watchdog sees it once
    # a tick (fast reads need the ioctl), and names the storm after a tick of it.
    from fabtop.sim import Fabric, SimHostConfig, tree

    fab = Fabric.single(
        [SimHostConfig(f"n{i}", roce_ports=1) for i in range(1, 4)],
        "pfc_storm",
        target="n1",
        start_s=2.0,
    )
    host = fab.hosts["n1"]
    root = tmp_path / "storm"
    tree.write(host, root, t=0.0)
    args = replace(
        _args(node),
        sysfs=str(root / "sys"),
        path=(str(root / "bin"),),
        max_frames=0,
        slow_ticks=100000,
        probe="python",
    )
    probe = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node)
    t0 = time.monotonic()
    events: list[Frame] = []
    frames = 0
    while time.monotonic() - t0 < 10 and not events:
        tree.update(host, root, time.monotonic() - t0)
        for f in probe.frames(1, deadline_s=0.3):  # events come through it too
            if f.event:
                events.append(f)
            else:
                frames += 1
    assert events, f"no watchdog event in {frames} frames"
    sec = events[0].find("pfcwd")
    assert sec is not None
    line = sec.text.splitlines()[0].split()
    assert line[:2] == ["storm", host.cfg.netdev(0)] and float(line[4]) >= 0.99
    assert time.monotonic() - t0 < 2.0 + 3 * 0.2 + 2.0  # start, a tick or three, slack


def _paused_port_node(root: Path, ratio: float) -> Path:
    """A node tree with one RoCE netdev paused ``ratio`` of the time on priority 3 since
    now while its bytes stay flat; its ethtool shim counts the pause from the clock at
    each read, so every window the probe measures is paused ``ratio`` of its length."""
    net = root / "sys/class/net/eth2"
    (net / "device").mkdir(parents=True)
    for name, value in (("operstate", "up"), ("mtu", "4200"), ("speed", "100000")):
        (net / name).write_text(value + "\n")
    (root / "bin").mkdir()
    _write_tool(
        root / "bin",
        "ethtool",
        "case $1 in -S) ;; *) exit 1 ;; esac\n"
        f"us=$(( ($(date +%s%N) - {time.time_ns()}) * {round(ratio * 1000)} / 1000000 ))\n"
        "printf 'NIC statistics:\\n     rx_prio3_pause: %s\\n' $((us / 500))\n"
        "printf '     rx_prio3_pause_duration: %s\\n' $us\n"
        "printf '     tx_prio3_bytes: 5000000000\\n     rx_prio3_bytes: 7000000000\\n'\n",
    )
    return root


@pytest.mark.parametrize("override", [None, 0.9], ids=["defaults", "storm_pause_ratio=0.9"])
def test_a_thresholds_override_reaches_the_real_probe_and_the_frames_alike(
    override: float | None, tmp_path: Path, node: Path, run_probe: list[Probe]
) -> None:
    # A port paused 95 % of the time with its bytes flat, read by the real fast probe
    # with the arguments a session sends: at storm_pause_ratio 0.9 its watchdog and the
    # rules over its frames both name the storm; at the default 0.99 neither does.
    from fabtop.config import Config, HostConfig
    from fabtop.run.compose import fabric_state
    from fabtop.run.session import Session

    root = _paused_port_node(tmp_path / "paused", 0.95)
    host = HostConfig("n1", sysfs=str(root / "sys"), path=(str(root / "bin"),), probe="python")
    config = Config(
        hosts=[host],
        interval=0.5,
        thresholds={} if override is None else {"storm_pause_ratio": override},
    )
    state = fabric_state(config)
    argv = Session(config, state).probe_argv(host)
    probe = _start(run_probe, ["sh", "-s", "--", *argv], node)
    events: list[str] = []
    frames = 0
    found: set[str] = set()
    while frames < 8 and not (events and found):
        for f in probe.frames(1, deadline_s=2):
            if f.event:  # the watchdog's verdict
                events += (f.find("pfcwd") or f).text.splitlines()  # type: ignore[union-attr]
                continue
            frames += 1
            state.apply_frame("n1", f)  # the frames' own verdict
            found |= {x.subject for x in state.findings if x.rule == "pfc_storm"}
    storms = [ln.split()[:4] for ln in events if ln.startswith("storm ")]
    if override is None:
        assert frames == 8 and storms == [] and found == set()
    else:
        assert storms and storms[0] == ["storm", "eth2", "3", "rx"]
        assert found == {"n1/eth2/prio3"}
