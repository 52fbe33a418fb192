"""The real probe script run under sh/dash/busybox against a sysfs tree built from captures."""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder, escape_line
from collectors.probe import (
    ProbeArgError,
    ProbeArgs,
    build_argv,
    local_command,
    probe_args,
    probe_script,
)
from tests.conftest import IN_CI, skip_or_fail

ETHTOOL_S = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
ETHTOOL_I = "ethtool/ethtool_i_i40e_xxv710_25g_iwl.txt"
MLNX_QOS = "qos/mlnx_qos_trust_dscp_pfc3_os_controlled_att-netarbiter.txt"
NV_CSV = "nvidia_smi/nvidia_smi_query_gpu_csv_tesla-p100_netdata.csv"
BAD_NAMES = ("eth0;touch${IFS}pwned", "$(touch pwned2)")
SYSTEM_PATH = "/usr/bin:/bin"

# busybox is the shell of small nodes; CI installs it, a laptop may not have it.
SHELLS = [s for s in ("sh", "dash", "busybox") if shutil.which(s) or s != "busybox" or IN_CI]


def _shell_argv(shell: str, args: ProbeArgs) -> list[str]:
    argv = local_command(args, shell="sh")
    return ["busybox", *argv] if shell == "busybox" else [shell, *argv[1:]]


def _write_tool(bindir: Path, name: str, body: str) -> None:
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


@pytest.fixture()
def node(tmp_path: Path, fixtures_dir: Path) -> Path:
    """A fake node: <tmp>/sys from the captured sysfs trees, <tmp>/bin for shim tools."""
    sysroot = tmp_path / "sys"
    src_a = fixtures_dir / "sysfs/prometheus_procfs/sys/class"
    src_b = fixtures_dir / "sysfs/prometheus_node_exporter/sys/class"
    shutil.copytree(src_a / "net", sysroot / "class/net", symlinks=True)
    shutil.copytree(src_a / "infiniband", sysroot / "class/infiniband", symlinks=True)
    for dev in (src_b / "infiniband").iterdir():
        if not (sysroot / "class/infiniband" / dev.name).exists():
            shutil.copytree(dev, sysroot / "class/infiniband" / dev.name, symlinks=True)
    # The capture has no statistics/ dir; give eth0 a few counters, and a netdev whose
    # `speed` cannot be read (a directory stands in for the EINVAL of a down link).
    stats = sysroot / "class/net/eth0/statistics"
    stats.mkdir()
    for i, name in enumerate(("rx_bytes", "tx_bytes", "rx_dropped")):
        (stats / name).write_text(f"{1000 + i}\n")
    down = sysroot / "class/net/eth9"
    (down / "speed").mkdir(parents=True)
    (down / "operstate").write_text("down\n")
    for bad in BAD_NAMES:
        d = sysroot / "class/net" / bad
        (d / "statistics").mkdir(parents=True)
        (d / "statistics/rx_bytes").write_text("1\n")
        (d / "device").write_text("")
    for cpu, (core, pkg) in enumerate(((3, 1), (4, 1))):
        tt = sysroot / f"devices/system/cpu/cpu{cpu}/thermal_throttle"
        tt.mkdir(parents=True)
        (tt / "core_throttle_count").write_text(f"{core}\n")
        (tt / "package_throttle_count").write_text(f"{pkg}\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    s_cap = fixtures_dir / ETHTOOL_S
    i_cap = fixtures_dir / ETHTOOL_I
    _write_tool(
        bindir,
        "ethtool",
        f'echo "$*" >> {tmp_path}/ethtool.log\n'
        f'case $1 in -S) cat "{s_cap}" ;; -i) cat "{i_cap}" ;; *) exit 1 ;; esac\n',
    )
    _write_tool(bindir, "mlnx_qos", f'cat "{fixtures_dir / MLNX_QOS}"\n')
    return tmp_path


def _awk_shim(node: Path, awk: str) -> str:
    """A PATH whose `awk` is ``awk`` (gawk, mawk, busybox); skips when it is missing."""
    if not shutil.which(awk):
        skip_or_fail(f"{awk} not installed (apt-get install {awk})")
    shim = node / f"awkbin-{awk}"
    shim.mkdir(exist_ok=True)
    target = shutil.which(awk)
    assert target is not None
    _write_tool(shim, "awk", f'exec {target} {"awk " if awk == "busybox" else ""}"$@"\n')
    return f"{shim}:{SYSTEM_PATH}"


def _args(node: Path, **kw: object) -> ProbeArgs:
    base = ProbeArgs(
        interval_ms=200,
        sysfs=str(node / "sys"),
        path=(str(node / "bin"),),
        timeout_s=1,
        max_frames=2,
        gpu="off",
        probe="sh",  # this module tests the sh probe; test_probe_fast.py the other one
    )
    return replace(base, **kw)  # type: ignore[arg-type]


class Probe:
    """A running probe and the frames it printed.

    Started as the transports start it: in a new session (the probe leads its process
    group), the script on stdin, and stdin kept open (its EOF ends the probe).
    """

    def __init__(self, argv: list[str], cwd: Path, env_path: str = SYSTEM_PATH) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env={"PATH": env_path, "HOME": str(cwd)},
            start_new_session=True,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(probe_script().encode())
        self.proc.stdin.flush()
        self.decoder = FrameDecoder()
        self.raw = bytearray()
        self.t0 = time.monotonic()
        self.arrivals: list[float] = []
        # Frames one read brought beyond those asked for: the next call's first (under
        # load two frames come in one read, and the second must not be lost).
        self.early: list[Frame] = []

    def frames(self, n: int, deadline_s: float = 8.0) -> list[Frame]:
        """Read until ``n`` frames (or EOF, or the deadline); at most ``n``."""
        out, self.early = self.early[:n], self.early[n:]
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + deadline_s
        while len(out) < n and time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if not r:
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            self.raw += data
            got = self.decoder.feed(data)
            self.arrivals += [time.monotonic() - self.t0] * len(got)
            out += got
        self.early = out[n:] + self.early
        return out[:n]

    def close(self) -> None:
        """Kill whatever is left (a test that passed leaves nothing)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()


@pytest.fixture()
def run_probe() -> Iterator[list[Probe]]:
    started: list[Probe] = []
    yield started
    for p in started:
        p.close()


def _start(started: list[Probe], argv: list[str], cwd: Path, env_path: str = SYSTEM_PATH) -> Probe:
    p = Probe(argv, cwd, env_path)
    started.append(p)
    return p


# The tools the probe itself needs and nothing else: a node where every optional tool
# (ethtool, ip, dpkg-query, nft, ...) is missing.
PROBE_BASE_TOOLS = ("sh", "awk", "date", "sleep", "cat", "grep", "timeout", "ps", "uname")


def bare_path(where: Path) -> Path:
    """A directory of links to :data:`PROBE_BASE_TOOLS` only, for ``env_path``."""
    where.mkdir()
    for tool in PROBE_BASE_TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (where / tool).symlink_to(found)
    return where


def _lines(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.split("\n"):
        rel, _, value = line.partition(" ")
        out[rel] = value
    return out


def _tree(frame: Frame, kind: str) -> dict[str, str]:
    """``relpath -> value`` of a ``sysnet``/``sysib`` section with the counters the fast
    probe sends by position (``<kind>_counters``) put back: what the probe read (its
    values as the stream's decoder placed them, whole or from a delta)."""
    sec = frame.find(kind)
    assert sec is not None, kind
    out = _lines(sec.text)
    for c in frame.all(kind + "_counters"):
        assert c.schema is not None and c.values is not None and c.values.vals is not None
        vals = c.values.vals
        assert len(vals) == len(c.schema.names)
        out.update({n: str(v) for n, v in zip(c.schema.names, vals, strict=True) if v is not None})
    return out


def _expected_sysfs(root: Path, kind: str) -> dict[str, str]:
    """The files docs/PROBE.md says a first (slow) frame carries, read straight from disk."""
    want: dict[str, str] = {}

    def take(p: Path, base: Path) -> None:
        if p.is_file():
            want[str(p.relative_to(base))] = p.read_text().rstrip("\n")

    if kind == "sysnet":
        base = root / "class/net"
        for d in [base / "eth0", base / "eth9"]:
            for f in (
                "mtu",
                "operstate",
                "speed",
                "carrier_changes",
                "carrier_up_count",
                "carrier_down_count",
            ):
                take(d / f, base)
            for sub in ("statistics", "ecn/roce_np/enable", "ecn/roce_rp/enable"):
                for p in sorted((d / sub).glob("*")):
                    take(p, base)
        return want
    base = root / "class/infiniband"
    for dev in base.iterdir():
        for f in ("fw_ver", "hca_type", "board_id", "node_guid"):
            take(dev / f, base)
        for port in (dev / "ports").iterdir():
            for f in ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid"):
                take(port / f, base)
            for sub in ("counters", "counters_ext", "hw_counters"):
                for p in (port / sub).glob("*"):
                    take(p, base)
    return want


@pytest.mark.parametrize("shell", SHELLS)
def test_frames_carry_every_sysfs_value_and_tool_output(
    shell: str, node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    probe = _start(run_probe, _shell_argv(shell, _args(node, max_frames=3)), node)
    frames = probe.frames(3)
    assert [f.seq for f in frames] == [1, 2, 3]
    assert probe.decoder.take_warnings() == []
    first = frames[0]
    sysnet, sysib = first.find("sysnet"), first.find("sysib")
    net_slow, ib_slow = first.find("sysnet_slow"), first.find("sysib_slow")
    assert sysnet is not None and sysib is not None
    assert net_slow is not None and ib_slow is not None
    got_net = {**_lines(sysnet.text), **_lines(net_slow.text)}
    got_ib = {**_lines(sysib.text), **_lines(ib_slow.text)}
    # Per-tick and slow-cadence files never share a section.
    assert "eth0/ecn/roce_np/enable/3" not in _lines(sysnet.text)
    assert "eth0/statistics/rx_bytes" not in _lines(net_slow.text)
    for rel, value in _expected_sysfs(node / "sys", "sysnet").items():
        if rel != "eth9/speed":
            assert got_net.get(rel) == value, rel
    for rel, value in _expected_sysfs(node / "sys", "sysib").items():
        assert got_ib.get(rel) == value, rel
    assert got_net["eth0/device"] == "-"  # a dangling symlink still says "physical"
    assert "eth9/speed" not in got_net and got_net["eth9/operstate"] == "down"
    assert "eth9/device" not in got_net
    # Slow files only on slow frames; per-tick counters on every frame.
    later = _lines(frames[1].find("sysnet").text)  # type: ignore[union-attr]
    assert later["eth0/statistics/rx_bytes"] == "1000"
    assert "eth0/ecn/roce_np/enable/3" not in later
    assert frames[1].find("sysnet_slow") is None and frames[1].find("sysib_slow") is None

    cap = (fixtures_dir / ETHTOOL_S).read_text()
    for f in frames:
        sec = f.find("ethtool_S", "eth0")
        assert sec is not None and sec.status == "ok"
        assert sec.text + "\n" == cap
    eth_i = first.find("ethtool_i", "eth0")
    assert eth_i is not None and eth_i.text + "\n" == (fixtures_dir / ETHTOOL_I).read_text()
    assert frames[1].find("ethtool_i") is None
    qos = first.find("mlnx_qos", "eth0")
    assert qos is not None and qos.text + "\n" == (fixtures_dir / MLNX_QOS).read_text()
    dcb = first.find("dcb_pfc")
    assert dcb is not None and dcb.status == "missing"  # no dcb on this PATH
    assert frames[1].find("dcb_pfc") is None  # missing is said once per slow period

    thr = first.find("cputhrottle")
    assert thr is not None
    assert _lines(thr.text) == {
        "devices/system/cpu/cpu*/thermal_throttle/core_throttle_count": "7",
        "devices/system/cpu/cpu*/thermal_throttle/package_throttle_count": "2",
    }
    steps = [b.clock_ns - a.clock_ns for a, b in itertools.pairwise(frames)]
    # The probe keeps a grid of 200 ms: a tick that ran long (a slow tick's forks on a
    # loaded machine) is followed by a shorter wait, never by a drift.
    assert all(0 < s < 600e6 for s in steps), steps
    assert 150e6 < sum(steps) / len(steps) < 400e6, steps
    assert all(b.uptime_s >= a.uptime_s for a, b in itertools.pairwise(frames))
    assert abs(first.unix_s - first.clock_ns / 1e9) < 0.002
    probe_sec = first.find("probe")
    assert probe_sec is not None and "interval_ms 200" in probe_sec.text.split("\n")
    assert probe.proc.wait(timeout=3) == 0


def test_hostile_interface_names_are_refused_and_never_run(
    node: Path, run_probe: list[Probe]
) -> None:
    probe = _start(run_probe, _shell_argv("dash", _args(node)), node)
    frames = probe.frames(2)
    assert len(frames) == 2
    warnings = [
        ln
        for ln in frames[0].find("probe").text.split("\n")  # type: ignore[union-attr]
        if ln.startswith("warning refused netdev")
    ]
    assert len(warnings) == 2
    assert not any("refused" in ln for ln in frames[1].find("probe").text.split("\n"))  # type: ignore[union-attr]
    net = frames[0].find("sysnet").text  # type: ignore[union-attr]
    assert "pwned" not in net and "touch" not in net
    assert {s.subject for s in frames[0].all("ethtool_S")} == {"eth0"}
    probe.proc.wait(timeout=3)
    assert not list(node.rglob("pwned*"))
    assert "pwned" not in (node / "ethtool.log").read_text()


def test_tool_output_cannot_break_framing(node: Path, run_probe: list[Probe]) -> None:
    garbage = node / "garbage.bin"
    garbage.write_bytes(
        b"\xff\xfe not utf-8\n@@end 1\n@@fabtop-frame 9 9 9 9\n@@@x\nnul\x00 here\nno newline"
    )
    _write_tool(node / "bin", "ethtool", f'cat "{garbage}"\n')
    probe = _start(run_probe, _shell_argv("dash", _args(node)), node)
    frames = probe.frames(2)
    assert [f.seq for f in frames] == [1, 2]
    assert probe.decoder.take_warnings() == []
    sec = frames[0].find("ethtool_S", "eth0")
    assert sec is not None and sec.status == "ok"
    lines = sec.text.split("\n")
    assert lines[:4] == ["\ufffd\ufffd not utf-8", "@@end 1", "@@fabtop-frame 9 9 9 9", "@@@x"]
    # mawk cuts a line at a NUL byte (and joins what follows); the framing holds either way
    assert lines[4].startswith("nul") and sec.text.endswith("no newline")
    assert frames[0].find("probe") is not None
    # on the wire each "@@" content line carries one more "@"
    assert b"\n" + escape_line("@@end 1").encode() + b"\n" in bytes(probe.raw)


def test_hanging_tool_is_killed_and_the_frame_ships(node: Path, run_probe: list[Probe]) -> None:
    _write_tool(
        node / "bin",
        "ethtool",
        f'case $1 in -S) exec sleep 100 ;; -i) cat "{node}/bin/mlnx_qos" ;; esac\n',
    )
    probe = _start(run_probe, _shell_argv("dash", _args(node, max_frames=1)), node)
    frames = probe.frames(1)
    assert len(frames) == 1
    sec = frames[0].find("ethtool_S", "eth0")
    assert sec is not None and sec.status == "timeout"
    assert frames[0].find("sysnet") is not None
    assert probe.arrivals[0] < 0.2 + 1.0 + 1.0  # interval + timeout + start-up slack
    assert probe.proc.wait(timeout=3) == 0


def test_missing_tools_say_missing(node: Path, run_probe: list[Probe]) -> None:
    (node / "bin/ethtool").unlink()
    (node / "bin/mlnx_qos").unlink()
    probe = _start(run_probe, _shell_argv("dash", _args(node)), node)
    first, second = probe.frames(2)
    for kind in ("ethtool_S", "ethtool_i", "mlnx_qos", "dcb_pfc"):
        sec = first.find(kind)
        assert sec is not None and sec.status == "missing", kind
        assert second.find(kind) is None


def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(d.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _nvidia_shim(node: Path, fixtures_dir: Path, hang: bool = False) -> str:
    header, row = (fixtures_dir / NV_CSV).read_text().splitlines()[:2]
    fields = ",".join(h.split(" [")[0].strip() for h in header.split(","))
    (node / "gpu_row.csv").write_text(row + "\n")
    body = "exec sleep 100\n" if hang else (f'while cat "{node}/gpu_row.csv"; do sleep 0.1; done\n')
    _write_tool(node / "bin", "nvidia-smi", body)
    return fields


def test_closing_stdout_stops_every_process(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    fields = _nvidia_shim(node, fixtures_dir)
    args = _args(node, max_frames=0, gpu="auto", gpu_fields=tuple(fields.split(",")))
    probe = _start(run_probe, _shell_argv("dash", args), node)
    assert len(probe.frames(2)) == 2
    tree = _descendants(probe.proc.pid) | {probe.proc.pid}
    cmdline = b" ".join((Path("/proc") / str(p) / "cmdline").read_bytes() for p in tree)
    assert b"bin/nvidia-smi" in cmdline and b"awk" in cmdline
    assert probe.proc.stdout is not None
    probe.proc.stdout.close()
    end = time.monotonic() + 2.5
    while time.monotonic() < end and any(_alive(p) for p in tree):
        time.sleep(0.05)
    assert [p for p in tree if _alive(p)] == []


def test_gpu_rows_and_a_hanging_nvidia_smi_goes_stale(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    fields = _nvidia_shim(node, fixtures_dir)
    row = (node / "gpu_row.csv").read_text().strip()
    args = _args(
        node, interval_ms=100, max_frames=4, gpu="auto", gpu_fields=tuple(fields.split(","))
    )
    probe = _start(run_probe, _shell_argv("dash", args), node)
    frames = probe.frames(4)
    sec = frames[-1].find("gpu_nvidia")
    assert sec is not None and sec.status == "ok"
    assert sec.text.split("\n") == ["# " + fields, row]

    _nvidia_shim(node, fixtures_dir, hang=True)
    probe = _start(run_probe, _shell_argv("dash", replace(args, max_frames=5)), node)
    frames = probe.frames(5)
    assert [f.seq for f in frames] == [1, 2, 3, 4, 5]
    assert all(f.find("gpu_nvidia").status == "stale" for f in frames)  # type: ignore[union-attr]
    assert all(f.find("ethtool_S", "eth0").status == "ok" for f in frames)  # type: ignore[union-attr]
    tree = _descendants(probe.proc.pid)
    assert probe.proc.wait(timeout=3) == 0
    end = time.monotonic() + 2
    while time.monotonic() < end and any(_alive(p) for p in tree):
        time.sleep(0.05)
    assert [p for p in tree if _alive(p)] == []  # the hung nvidia-smi was stopped too


def test_real_sys_lo_counter(tmp_path: Path, run_probe: list[Probe]) -> None:
    lo = Path("/sys/class/net/lo/statistics/rx_bytes")
    if not lo.exists():
        skip_or_fail("no /sys/class/net/lo on this machine")
    args = ProbeArgs(
        interval_ms=100, max_frames=1, gpu="off", interfaces=("lo",), path=(), probe="sh"
    )
    probe = _start(run_probe, local_command(args, shell="dash"), tmp_path)
    (frame,) = probe.frames(1)
    after = int(lo.read_text())
    got = int(_lines(frame.find("sysnet").text)["lo/statistics/rx_bytes"])  # type: ignore[union-attr]
    assert 0 <= after - got < 10_000_000


@pytest.mark.parametrize("awk", ["gawk", "mawk", "busybox"])
def test_other_awks(awk: str, node: Path, fixtures_dir: Path, run_probe: list[Probe]) -> None:
    path = _awk_shim(node, awk)
    probe = _start(run_probe, _shell_argv("dash", _args(node)), node, path)
    frames = probe.frames(2)
    assert [f.seq for f in frames] == [1, 2]
    sec = frames[1].find("ethtool_S", "eth0")
    assert sec is not None and sec.text + "\n" == (fixtures_dir / ETHTOOL_S).read_text()
    assert _lines(frames[0].find("sysib").text)["mlx5_0/ports/1/state"] == "4: ACTIVE"  # type: ignore[union-attr]


def _probe_awk(probe: Probe) -> int:
    """The probe's own awk (its program names the frame markers; tool shims do not)."""
    for pid in _descendants(probe.proc.pid):
        with contextlib.suppress(OSError):
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
            if argv[0].endswith(b"awk") and any(b"@@fabtop-frame" in a for a in argv):
                return pid
    raise AssertionError("no awk under the probe")


def _peak_rss_kib(pid: int) -> int:
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("awk", ["gawk", "mawk"])
def test_a_tool_printing_without_end_is_truncated_and_frames_keep_coming(
    awk: str, node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    # 200 KB lines as fast as cat can print them until the timeout kills it: lines are
    # capped, bytes were not (the awk held ~450 MB and every frame overflowed 16 MB).
    big = node / "big.txt"
    big.write_text(("x" * 200_000 + "\n") * 20)
    _write_tool(
        node / "bin",
        "ethtool",
        f'case $1 in -S) while cat "{big}"; do :; done ;; '
        f'-i) cat "{fixtures_dir / ETHTOOL_I}" ;; esac\n',
    )
    cap = 2 * 1024 * 1024
    args = _args(node, max_frames=3, section_bytes=cap)
    probe = _start(run_probe, _shell_argv("dash", args), node, _awk_shim(node, awk))
    frames = probe.frames(2)
    peak_kib = _peak_rss_kib(_probe_awk(probe))
    frames += probe.frames(1)
    assert [f.seq for f in frames] == [1, 2, 3]
    assert probe.decoder.take_warnings() == []
    for f in frames:
        sec = f.find("ethtool_S", "eth0")
        assert sec is not None and sec.status == "truncated"
        assert sec.detail is not None and sec.detail.startswith(f"section cap {cap} bytes")
        assert "timeout" in sec.detail  # what it would have said is kept
        assert cap // 2 < len(sec.text) <= cap and set(sec.text) <= {"x", "\n"}
        sysnet = f.find("sysnet")
        assert sysnet is not None and sysnet.status == "ok"
        assert _lines(sysnet.text)["eth0/statistics/rx_bytes"] == "1000"
        assert f.find("probe") is not None
    eth_i = frames[0].find("ethtool_i", "eth0")
    assert eth_i is not None and eth_i.status == "ok"
    if awk == "gawk":
        # The section (2 MiB), the lines being written and one line in flight; before
        # the cap gawk peaked at 341 MB here. (mawk's own buffering of long lines peaks
        # near 75 MB per tick, whatever the volume, so its figure says less.)
        assert peak_kib < 48 * 1024, f"awk peak RSS {peak_kib} KiB"


def test_100k_ethtool_counters_still_fit_one_section(node: Path, run_probe: list[Probe]) -> None:
    # What held up before the caps must keep holding: a NIC with 100k counters.
    dump = node / "100k.txt"
    rows = [f"     rx_vport_rdma_unicast_packets_q{i}: {i * 1000003}" for i in range(100_000)]
    dump.write_text("NIC statistics:\n" + "\n".join(rows) + "\n")
    assert 4_000_000 < dump.stat().st_size < 6_000_000  # ~5 MB, under the 8 MiB cap
    _write_tool(node / "bin", "ethtool", f'cat "{dump}"\n')
    probe = _start(run_probe, _shell_argv("dash", _args(node, max_frames=1, timeout_s=5)), node)
    (frame,) = probe.frames(1, deadline_s=15)
    sec = frame.find("ethtool_S", "eth0")
    assert sec is not None and sec.status == "ok"
    assert sec.text + "\n" == dump.read_text()


def test_the_frame_cap_truncates_later_sections_and_keeps_the_probe_section(
    node: Path, run_probe: list[Probe]
) -> None:
    line = "y" * 1000
    (node / "kb.txt").write_text((line + "\n") * 100)  # 100 KB per tool
    _write_tool(node / "bin", "ethtool", f'cat "{node}/kb.txt"\n')
    _write_tool(node / "bin", "mlnx_qos", f'cat "{node}/kb.txt"\n')
    args = _args(node, max_frames=1, frame_bytes=65536 * 2, section_bytes=65536 * 2)
    probe = _start(run_probe, _shell_argv("dash", args), node)
    (frame,) = probe.frames(1)
    secs = [s for s in frame.sections if s.kind in ("ethtool_S", "ethtool_i", "mlnx_qos")]
    # sysfs and the first 100 KB fit in 128 KiB; what comes after is cut, said, and shipped
    assert [s.status for s in secs] == ["ok", "truncated", "truncated"]
    assert [s.detail for s in secs[1:]] == ["frame cap 131072 bytes"] * 2
    # The probe section (notes, warnings) comes on top, in the 64 KiB that frame_bytes'
    # maximum leaves below frames.py's 16 MiB limit: the cap is on everything else.
    total = sum(len(s.text) + 1 for s in frame.sections if s.text and s.kind != "probe")
    assert total <= 131072
    assert frame.find("probe") is not None and frame.find("sysnet").status == "ok"  # type: ignore[union-attr]


def test_a_fifo_in_the_tree_is_never_opened(node: Path, run_probe: list[Probe]) -> None:
    stats = node / "sys/class/net/eth0/statistics"
    os.mkfifo(stats / "rx_fifo_errors")
    (node / "sys/class/net/eth0/mtu").unlink()
    os.mkfifo(node / "sys/class/net/eth0/mtu")
    probe = _start(run_probe, _shell_argv("dash", _args(node, max_frames=3)), node)
    frames = probe.frames(3)
    assert [f.seq for f in frames] == [1, 2, 3]
    net = _lines(frames[0].find("sysnet").text)  # type: ignore[union-attr]
    assert net["eth0/statistics/rx_bytes"] == "1000" and net["eth0/statistics/tx_bytes"] == "1001"
    assert "eth0/statistics/rx_fifo_errors" not in net and "eth0/mtu" not in net
    notes = frames[0].find("probe").text.split("\n")  # type: ignore[union-attr]
    assert "warning not a regular file, not read: eth0/statistics/rx_fifo_errors" in notes
    assert "warning not a regular file, not read: eth0/mtu" in notes
    assert probe.proc.wait(timeout=5) == 0


def _frame_with(probe: Probe, want: str, deadline_s: float) -> tuple[Frame, list[Frame]]:
    """Read frames until one whose probe section has a line containing ``want``."""
    seen: list[Frame] = []
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for f in probe.frames(1, deadline_s=max(0.1, end - time.monotonic())):
            seen.append(f)
            notes = f.find("probe")
            if notes is not None and want in notes.text:
                return f, seen
    raise AssertionError(f"no frame says {want!r} in {deadline_s} s ({len(seen)} frames)")


@pytest.mark.parametrize(
    ("shell", "awk"), [("dash", "gawk"), ("dash", "mawk"), ("busybox", "busybox")]
)
def test_a_read_that_blocks_costs_one_value_and_says_so(
    shell: str, awk: str, node: Path, run_probe: list[Probe]
) -> None:
    # A regular file that blocks when read cannot be made without FUSE. The scan lists
    # only regular files, so swap one for a FIFO after the scan (slow_ticks: never
    # again): the reader then blocks in open on a path the probe believes is a file,
    # exactly as on a wedged driver attribute.
    if shell == "busybox" and not shutil.which("busybox"):
        skip_or_fail("busybox not installed (apt-get install busybox)")
    args = _args(node, max_frames=0, slow_ticks=100000)
    probe = _start(run_probe, _shell_argv(shell, args), node, _awk_shim(node, awk))
    assert len(probe.frames(2)) == 2
    victim = node / "sys/class/net/eth0/statistics/rx_dropped"
    victim.unlink()
    os.mkfifo(victim)
    swapped = time.monotonic()
    rel = "class/net/eth0/statistics/rx_dropped"
    warned, _ = _frame_with(probe, f"skipped from now on: {rel}", deadline_s=6)
    # the read's bound (timeout_s=1) plus a tick or two, not forever
    assert time.monotonic() - swapped < 1 + 2.5
    after = probe.frames(3)
    assert [f.seq for f in after] == [warned.seq + 1, warned.seq + 2, warned.seq + 3]
    for f in after:
        net = _lines(f.find("sysnet").text)  # type: ignore[union-attr]
        # one value lost: the files before and after it in the same list still come
        assert net["eth0/statistics/rx_bytes"] == "1000"
        assert net["eth0/statistics/tx_bytes"] == "1001"
        assert "eth0/statistics/rx_dropped" not in net
        assert f.find("ethtool_S", "eth0").status == "ok"  # type: ignore[union-attr]
        assert all(s.status in ("ok", "missing") for s in f.sections)
    steps = [b.clock_ns - a.clock_ns for a, b in itertools.pairwise(after)]
    assert all(100e6 < s < 600e6 for s in steps), steps


@pytest.mark.parametrize(
    "bad",
    [
        {"interval_ms": 50},
        {"interval_ms": 60001},
        {"sysfs": "sys"},
        {"sysfs": "/sys/../etc"},
        {"sysfs": "/sys;reboot"},
        {"path": ("/usr/bin:/x",)},
        {"path": ("$(reboot)",)},
        {"interfaces": ("eth0;reboot",)},
        {"interfaces": ("-eth0",)},
        {"interfaces": ("a" * 65,)},
        {"gpu": "on"},
        {"timeout_s": 0.0},
        {"gpu_fields": ("index;reboot",)},
    ],
)
def test_bad_arguments_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ProbeArgError):
        build_argv(replace(ProbeArgs(), **bad))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "word",
    [
        "interval_ms=99",
        "sysfs=/a b",
        "ifaces=eth0;x",
        "path=rel",
        "timeout_s=0",
        "gpu=maybe",
        "max_frames=-1",
        "bogus=1",
        "ifaces=-x",
    ],
)
def test_script_refuses_bad_words_itself(word: str, tmp_path: Path) -> None:
    r = subprocess.run(
        ["dash", "-s", "--", word],
        input=probe_script().encode(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
        env={"PATH": SYSTEM_PATH},
    )
    assert r.returncode == 2 and r.stdout == b""
    assert b"fabtop-probe: " in r.stderr


def test_probe_args_keyword_form_keeps_host_dirs_first() -> None:
    words = probe_args(interval_ms=500, path=["/opt/mellanox/bin"], interfaces=["eth2"])
    assert "path=/opt/mellanox/bin:/usr/local/sbin:/usr/sbin:/sbin" in words
    assert "ifaces=eth2" in words and "slow_ticks=120" in words
    with pytest.raises(ProbeArgError):
        probe_args(interfaces=["eth2 eth3"])


def test_dcb_qos_objects_are_read_on_slow_ticks(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    # A shim dcb answering with the real PFC capture and, for apptrust/app/ets/buffer
    # (no capture exists), the examples of iproute2's man pages and commit message.
    pfc = fixtures_dir / "qos/dcb_pfc_show_mlxsw_spectrum_commitmsg_iproute2.txt"
    _write_tool(
        node / "bin",
        "dcb",
        f"""case "$1 $2" in
"pfc show") cat "{pfc}" ;;
"apptrust show") echo "order: dscp pcp" ;;
"app show") echo "dscp-prio 0:0 CS3:3 CS6:6" ;;
"ets show") printf 'prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:0 7:0\\ntc-tsa 0:ets 3:ets\\n' ;;
"buffer show") printf 'prio-buffer 0:0 3:3\\nbuffer-size 0:10Kb 3:1Mb\\ntotal-size 1222Kb\\n' ;;
*) exit 1 ;;
esac
""",
    )
    probe = _start(run_probe, _shell_argv("dash", _args(node)), node)
    first, second = probe.frames(2)
    for kind, word in (
        ("dcb_pfc", "pg-pfc"),
        ("dcb_apptrust", "order:"),
        ("dcb_app", "dscp-prio"),
        ("dcb_ets", "prio-tc"),
        ("dcb_buffer", "total-size"),
    ):
        sec = first.find(kind, "eth0")
        assert sec is not None and sec.status == "ok" and word in sec.text, kind
        assert second.find(kind) is None, kind  # slow cadence

    from collectors.assemble import assemble

    link = assemble("node", first).links
    qos = next(lk.qos for lk in link.values() if lk.netdev == "eth0")
    assert qos is not None
    # mlnx_qos (also on this node) wins; dcb fills nothing it already said
    assert qos.source == "mlnx_qos" and qos.trust == "dscp"
