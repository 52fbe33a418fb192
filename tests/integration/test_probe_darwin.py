"""The macOS probe path: probe.sh on a node whose `uname -s` says Darwin hands over to the
zsh probe, under the shells a Mac (bash 3.2 as /bin/sh, zsh) and CI (sh, dash, busybox)
have, with tool shims replaying the public captures of tests/fixtures/darwin. Through
the local transport and through a real sshd on loopback.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder
from collectors.probe import ProbeArgs, build_argv, local_command, probe_script
from collectors.samples import HostSample
from collectors.transport.local import LocalTransport
from fabtop.core.pipeline import Pipeline
from tests.conftest import IN_CI, skip_or_fail
from tests.integration.sshd import Sshd

DARWIN = Path(__file__).resolve().parents[1] / "fixtures" / "darwin"
STUDIO_TB = "system_profiler_SPThunderboltDataType_json_macstudio_m3ultra_tb5_omlx.json"
SHELLS = {
    "sh": ["sh"],
    "dash": ["dash"],
    "busybox": ["busybox", "sh"],
    "bash-posix": ["bash", "--posix"],  # a Mac's /bin/sh is bash 3.2 in POSIX mode
}


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        skip_or_fail(f"{tool} not installed (apt-get install {tool})")


def _tool(bindir: Path, name: str, body: str) -> None:
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


def _cat(bindir: Path, name: str, capture: str) -> None:
    _tool(bindir, name, f"exec cat '{DARWIN / capture}'\n")


@pytest.fixture()
def mac(tmp_path: Path) -> Path:
    """A fake Mac: shims for the tools the Darwin probe runs, each replaying a capture."""
    _need("zsh")
    b = tmp_path / "bin"
    b.mkdir()
    _tool(b, "uname", 'case "$1" in -s|"") echo Darwin ;; *) echo Darwin ;; esac\n')
    _tool(b, "sysctl", 'echo "{ sec = 1700000000, usec = 250000 } Tue Nov 14 22:13:20 2023"\n')
    _cat(b, "netstat", "netstat_ibdn_gopsutil.txt")
    _cat(b, "ibv_devinfo", "ibv_devinfo_macbookpro_3port_down_osaurus.txt")
    _cat(b, "rdma_ctl", "rdma_ctl_status_enabled_mlx2944.txt")
    _cat(b, "system_profiler", STUDIO_TB)
    _cat(b, "networksetup", "networksetup_listallhardwareports_macbookpro_osaurus.txt")
    _cat(b, "ifconfig", "ifconfig_bridge0_3members_macmini_mlx1903.txt")
    _cat(b, "pmset", "pmset_g_therm_speed_limited_machealthkit.txt")
    # The awk a Mac has (BWK): the Darwin path must not need another.
    if shutil.which("original-awk"):
        os.symlink(shutil.which("original-awk") or "", b / "awk")
    elif IN_CI:
        pytest.fail("CI=true but original-awk is not installed")
    return b


def _frames(data: bytes) -> list[Frame]:
    return FrameDecoder().feed(data)


def _run(shell: list[str], args: ProbeArgs, timeout: float = 30) -> bytes:
    """The probe as a transport runs it: its own session, the script on stdin, and stdin
    kept open until it is done (stdin's EOF ends the probe)."""
    argv = shell + local_command(args)[1:]
    p = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert p.stdin is not None
    p.stdin.write(probe_script().encode())
    p.stdin.flush()
    assert p.stdout is not None and p.stderr is not None
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(p.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        p.wait(timeout=max(0.1, deadline - time.monotonic()))
        err = p.stderr.read()
    finally:
        p.stdin.close()
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    out = b"".join(chunks)
    assert p.returncode == 0, err.decode()[-500:]
    assert err == b"", err.decode()[-500:]
    return out


def _last_sample(frames: list[Frame]) -> HostSample:
    """The last frame's sample, as the dashboard assembles it (slow sections carried)."""
    pipe = Pipeline()
    sample = None
    for f in frames:
        sample, _ = pipe.apply_frame("mac1", f)
    assert sample is not None
    return sample


def _check_captured_values(s: HostSample) -> None:
    """What a user checks against the captures the shims replay."""
    assert s.probe is not None and s.probe.startswith("zsh-darwin"), s.probe
    en0 = s.links["en0"]
    # netstat_ibdn_gopsutil.txt: en0 <Link#4> 5708989 0 7295722068 3494252 0 379533492 0 230
    assert en0.metrics["rx_bytes"] == 7295722068
    assert en0.metrics["tx_bytes"] == 379533492
    assert en0.metrics["rx_packets"] == 5708989
    assert en0.metrics["tx_packets"] == 3494252
    assert en0.metrics["rx_phy_errors"] == 0
    assert en0.counters["netstat"]["Drop"] == 230
    assert "rx_discards" not in en0.metrics  # Drop counts send-queue drops
    assert s.links["gif0"].state == "down"  # "gif0*"
    tb = s.thunderbolt
    assert tb is not None and tb.source == "system_profiler"
    # The Studio's bus 1 (receptacle 2) is cabled to the MacBook Pro's bus 0.
    assert tb.self_uid == "28CA4C30-A263-4C55-B302-953416D0B209"
    assert tb.generation == 5
    [peer] = tb.peers  # the OWC drive on bus 3 is no peer
    assert peer.peer_uid == "817DCFA4-B481-4100-80FC-91C7AA969F0B"
    assert peer.peer_name == "MacBook Pro"
    assert peer.port == "Receptacle 2"
    assert peer.netdev == "en6"  # networksetup: "Thunderbolt 2" is en6
    assert peer.link_gbps == 80 and peer.max_link_gbps == 120 and peer.total_gbps == 80
    mac = s.macos
    assert mac is not None
    assert mac.rdma_ctl == "enabled"
    assert mac.rdma_devices == ("rdma_en1", "rdma_en2", "rdma_en6")
    assert mac.bridges == {"bridge0": ("en2", "en3", "en4")}
    assert mac.thunderbolt_ports == ("en1", "en2", "en6")
    assert (mac.thermal_source, mac.thermal_pressure, mac.cpu_speed_limit_pct) == (
        "pmset",
        "throttled",
        62,
    )
    en6 = s.links["en6"]
    assert (en6.rdma_device, en6.state, en6.link_layer, en6.kind) == (
        "rdma_en6",
        "down",
        "Thunderbolt",
        "tb",
    )
    assert s.warnings == []


@pytest.mark.parametrize("shell", list(SHELLS))
def test_darwin_path_under_each_shell(shell: str, mac: Path) -> None:
    if shutil.which(SHELLS[shell][0]) is None:
        skip_or_fail(f"{SHELLS[shell][0]} not installed")
    args = ProbeArgs(interval_ms=200, path=(str(mac),), max_frames=4, slow_ticks=100)
    frames = _frames(_run(SHELLS[shell], args))
    assert [f.seq for f in frames] == [1, 2, 3, 4]
    # Remote clock: ns from $EPOCHREALTIME, uptime from kern.boottime, both moving on.
    assert all(b.clock_ns > a.clock_ns for a, b in itertools.pairwise(frames))
    assert abs(frames[0].clock_ns / 1e9 - time.time()) < 10
    assert abs(frames[0].uptime_s - (time.time() - 1700000000.25)) < 10
    slow = [f for f in frames if any(s.kind == "sp_thunderbolt" for s in f.sections)]
    assert len(slow) == 1  # the slow tools ran once, off the tick path
    _check_captured_values(_last_sample(frames))


def test_hung_tool_is_bounded_and_huge_output_capped(mac: Path) -> None:
    _tool(mac, "netstat", "exec sleep 30\n")
    _tool(mac, "ifconfig", "yes 'x' | head -c 300000\n")
    args = ProbeArgs(
        interval_ms=500,
        path=(str(mac),),
        max_frames=3,
        slow_ticks=100,
        timeout_s=0.5,
        section_bytes=65536,
        frame_bytes=1 << 20,
    )
    start = time.monotonic()
    frames = _frames(_run(["sh"], args, timeout=40))
    assert time.monotonic() - start < 10
    assert len(frames) == 3
    net = [s for f in frames for s in f.sections if s.kind == "netstat_i"]
    assert {s.status for s in net} == {"timeout"}
    ifc = [s for f in frames for s in f.sections if s.kind == "ifconfig"]
    assert ifc and ifc[0].status == "truncated" and "section cap 65536" in (ifc[0].detail or "")
    assert len(ifc[0].text) <= 65536


def test_macmon_gives_the_gpu_and_thermal_source(mac: Path) -> None:
    line = (DARWIN / "macmon_pipe_m3pro_macmonbar.json").read_text().strip()
    _tool(mac, "macmon", f"while :; do echo '{line}'; sleep 0.1; done\n")
    args = ProbeArgs(interval_ms=300, path=(str(mac),), max_frames=4, slow_ticks=100)
    s = _last_sample(_frames(_run(["dash"], args)))
    assert s.macos is not None and s.macos.thermal_source == "macmon"
    assert s.macos.cpu_temp_c == pytest.approx(43.73614)
    [gpu] = s.gpus
    assert (gpu.vendor, gpu.name) == ("apple", "Apple M3 Pro")
    assert gpu.temperature_c == pytest.approx(36.95167)
    assert gpu.utilization_pct == pytest.approx(2.15)


def test_probe_ends_with_its_connection(mac: Path) -> None:
    """stdin EOF (the channel gone) ends the zsh probe and everything it started."""
    args = ProbeArgs(interval_ms=200, path=(str(mac),), slow_ticks=100)
    p = subprocess.Popen(
        ["sh", *local_command(args)[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(probe_script().encode())
    p.stdin.flush()
    first = p.stdout.readline()
    assert first.startswith(b"@@fabtop-frame 1 ")
    p.stdin.close()
    try:
        p.wait(timeout=5)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    left = ""
    while time.monotonic() < deadline:
        # Processes of the probe's group still alive (zombies aside: init reaps them).
        ps = subprocess.run(
            ["ps", "-o", "pid=,stat=,args=", "-g", str(p.pid)], capture_output=True, text=True
        ).stdout
        left = "\n".join(ln for ln in ps.splitlines() if ln.split()[1:2] != ["Z"])
        if not left:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"processes of the probe outlived its connection:\n{left}")


def test_the_mac_probe_takes_every_word_a_session_may_send(mac: Path) -> None:
    # A session sends its per-tick counter lists and the watchdog's thresholds to every
    # host, and fw_sudo=1, optics_sudo=1, mlxlink=1 where the config asks: a Mac takes them
    # (and has no use for them).
    args = ProbeArgs(
        interval_ms=200,
        path=(str(mac),),
        max_frames=2,
        fw_sudo=True,
        optics_sudo=True,
        mlxlink=True,
        ib_hw_tick=("out_of_buffer",),
        ib_port_tick=("port_xmit_wait",),
        storm_pause_ratio=0.9,
        storm_flat_fraction=0.02,
        storm_flat_bytes_per_s=1e6,
    )
    assert [f.seq for f in _frames(_run(SHELLS["sh"], args))] == [1, 2]


def test_linux_node_is_not_taken_for_a_mac(mac: Path) -> None:
    _tool(mac, "uname", "echo Linux\n")
    args = ProbeArgs(
        interval_ms=200, path=(str(mac),), max_frames=1, probe="sh", gpu="off", sysfs="/nonexistent"
    )
    frames = _frames(_run(["dash"], args))
    assert not any(s.kind == "netstat_i" for s in frames[0].sections)


async def test_local_transport_runs_the_darwin_path(mac: Path) -> None:
    t = LocalTransport("mac1", env_path_prefix=[str(mac)])
    args = ProbeArgs(interval_ms=200, path=(str(mac),), max_frames=3, slow_ticks=100)
    data = b"".join([c async for c in t.stream(probe_script(), build_argv(args))])
    _check_captured_values(_last_sample(_frames(data)))


async def test_sshd_runs_the_darwin_path(mac: Path, sshd: Sshd) -> None:
    t = sshd.transport("mac1")
    args = ProbeArgs(interval_ms=200, path=(str(mac),), max_frames=3, slow_ticks=100)
    await t.connect()
    try:
        data = b"".join([c async for c in t.stream(probe_script(), build_argv(args))])
    finally:
        await asyncio.wait_for(t.close(), 5)
    _check_captured_values(_last_sample(_frames(data)))


def test_ifaces_argument_keeps_only_those_interfaces(mac: Path) -> None:
    args = ProbeArgs(
        interval_ms=200, path=(str(mac),), max_frames=2, slow_ticks=100, interfaces=("en0",)
    )
    s = _last_sample(_frames(_run(["dash"], args)))
    assert {n for n, lk in s.links.items() if lk.counters} == {"en0"}
