"""Faults injected into namespace hosts while fabtop watches them, as an operator would see them.

For each fault: the host's expected status, one clear error line naming the host, the
other hosts still delivering frames at their interval, nothing lost, and recovery
when the fault ends. h1 and h2 are real hosts (h1 the victim, h2 the witness); h3
serves a simulated ConnectX/IB/GPU tree whose tools and counters we can break.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import IN_CI, REPO
from tests.testbed.netns import Testbed, bed_for_test
from tests.testbed.watch import Watch, max_gap

pytestmark = [pytest.mark.root, pytest.mark.sshd]

IVAL = 0.5
FABTOP = [str(REPO / ".venv" / "bin" / "fabtop")]


@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    with bed_for_test(3, sim_hosts=(3,), interval=IVAL) as b:
        yield b


def fabtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The installed CLI, as a user runs it."""
    cmd = FABTOP if Path(FABTOP[0]).exists() else [sys.executable, "-m", "tui"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def no_stall(w: Watch, host: str, start: float, end: float) -> None:
    """``host`` kept delivering frames at its interval through [start, end]."""
    gap = max_gap(w.of(host), start, end)
    assert gap < 3 * IVAL, f"{host} stalled for {gap:.2f} s while another host failed"


def error_of(w: Watch, host: str, status: str) -> str:
    """The error line shown with the host's first ``status`` event."""
    ev = next(e for e in w.events if e.host == host and e.status == status)
    assert ev.error and "\n" not in ev.error
    return ev.error


async def test_killed_sshd_is_down_named_and_comes_back(bed: Testbed, tmp_path: Path) -> None:
    h1 = bed.host("h1")
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h1", 2)
        t0 = time.monotonic()
        h1.sshd.stop()
        try:
            await w.until(lambda: w.state.hosts["h1"].status == "down", 8, "h1 down")
            # A snapshot taken now is still written, with the dead host named in it.
            out = tmp_path / "snap.json"
            r = await asyncio.to_thread(
                fabtop, "snapshot", "-c", str(bed.toml_path), "--timeout", "10", "-o", str(out)
            )
        finally:
            h1.sshd.start()
        t1 = time.monotonic()
        await w.until(lambda: w.state.hosts["h1"].status == "up", 15, "h1 back up")
        no_stall(w, "h2", t0, time.monotonic())
    err = error_of(w, "h1", "down")
    assert "h1" in err and any(w_ in err.lower() for w_ in ("refused", "closed", "lost")), err
    assert r.returncode == 1, r.stderr
    doc = json.loads(out.read_text())
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert hosts["h2"]["reachable"] and hosts["h3"]["reachable"]
    assert not hosts["h1"]["reachable"] and "h1" in hosts["h1"]["error"]
    assert any(line.startswith("fabtop: h1:") for line in r.stderr.splitlines())
    print(f"h1 back {time.monotonic() - t1:.1f} s after its sshd restarted")


async def test_management_link_down_goes_stale_then_down_then_recovers(bed: Testbed) -> None:
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h1", 2)
        t0 = time.monotonic()
        bed.set_link("h1", "mgmt", False)
        try:
            stale = await w.until(lambda: w.state.hosts["h1"].status == "stale", 4, "h1 stale")
            down = await w.until(lambda: w.state.hosts["h1"].status == "down", 10, "h1 down")
        finally:
            bed.set_link("h1", "mgmt", True)
        t1 = time.monotonic()
        await w.until(lambda: w.state.hosts["h1"].status == "up", 30, "h1 back up")
        no_stall(w, "h2", t0, time.monotonic())
        no_stall(w, "h3", t0, time.monotonic())
    assert stale - t0 < 2.5 * IVAL + 1.0
    assert "h1" in error_of(w, "h1", "down")
    assert "no frame" in error_of(w, "h1", "stale")
    print(
        f"stale after {stale - t0:.1f} s, down after {down - t0:.1f} s, "
        f"up {time.monotonic() - t1:.1f} s after the link came back"
    )


async def test_frozen_session_goes_stale_and_reconnects(bed: Testbed) -> None:
    h1 = bed.host("h1")
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h1", 2)
        pid = h1.sshd.session_pid("interval_ms=")
        assert pid is not None
        t0 = time.monotonic()
        os.kill(pid, signal.SIGSTOP)
        try:
            await w.until(lambda: w.state.hosts["h1"].status == "stale", 4, "h1 stale")
            # The runner gives up on the frozen session and opens a new one itself.
            await w.until(
                lambda: any(e.status == "up" and e.mono > t0 for e in w.events if e.host == "h1"),
                20,
                "h1 reconnected while frozen",
            )
        finally:
            os.kill(pid, signal.SIGCONT)
        await w.frames("h1", 2)
        no_stall(w, "h2", t0, time.monotonic())
    assert "h1" in error_of(w, "h1", "down") or "h1" in (w.state.hosts["h1"].error or "h1")


async def test_hanging_tool_times_out_as_a_section_not_a_stall(bed: Testbed) -> None:
    root = bed.host("h3").sim_root
    assert root is not None
    shim = root / "bin" / "ethtool"
    saved = shim.read_text()
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h3", 2)
        shim.write_text("#!/bin/sh\nexec sleep 60\n")
        t0 = time.monotonic()
        try:
            await w.until(
                lambda: any(
                    "timeout" in x or "timed out" in x for t in w.of("h3", t0) for x in t.warnings
                ),
                10,
                "a timeout warning from h3",
            )
            t1 = time.monotonic()
            # Two ticks more with the tool hung: rates from sysfs alone (the tick that
            # lost ethtool's counters is a new baseline, not a rate).
            await w.frames("h3", 2)
        finally:
            shim.write_text(saved)
        await w.until(
            lambda: not any("ethtool" in x for x in w.of("h3")[-1].warnings),
            10,
            "h3 ethtool warning gone",
        )
        no_stall(w, "h2", t0, time.monotonic())
        ticks = w.of("h3", t0)
    warned = next(x for t in ticks for x in t.warnings if "timeout" in x or "timed out" in x)
    print(f"h3 hanging ethtool: {warned!r} after {t1 - t0:.1f} s")
    assert "ethtool" in warned
    # The host itself kept answering: sysfs counters still moved while the tool hung.
    assert all(e.status != "down" for e in w.events if e.host == "h3" and e.mono > t0)
    assert any(isinstance(t.rates.get("enp65s0f0np0", {}).get("rx_bps"), float) for t in ticks)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xfe\x00\x9c binary \x1b[2J\x1b]0;pwned\x07 junk\n" * 40,
        b"rx_bytes_phy: not-a-number\n:::\n\n     \nNIC statistics\n" + b"x" * 5000 + b"\n",
    ],
    ids=["non-utf8-and-escapes", "malformed-lines"],
)
async def test_garbage_from_a_tool_is_a_warning_not_a_crash(bed: Testbed, garbage: bytes) -> None:
    root = bed.host("h3").sim_root
    assert root is not None
    junk = root / "junk.bin"
    junk.write_bytes(garbage)
    shim = root / "bin" / "ethtool"
    saved = shim.read_text()
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h3", 2)
        t0 = time.monotonic()
        shim.write_text(f"#!/bin/sh\ncat {junk}\n")
        try:
            await w.frames("h3", 4)
        finally:
            shim.write_text(saved)
        await w.frames("h3", 3)
        no_stall(w, "h2", t0, time.monotonic())
        ticks = w.of("h3", t0)
    assert all(e.status != "down" for e in w.events if e.host == "h3")
    # sysfs counters still give rates; no terminal escape reaches a warning line.
    assert any(isinstance(t.rates.get("enp65s0f0np0", {}).get("rx_bps"), float) for t in ticks)
    assert not any("\x1b" in x or "\x07" in x for t in ticks for x in t.warnings)
    # Once the tool is sane again, its counters come back.
    assert "rx_prio3_pause" in w.state.hosts["h3"].sample.links["enp65s0f0np0"].counters.get(  # type: ignore[union-attr]
        "ethtool", {}
    )


async def test_counter_reset_is_a_gap_never_a_spike(bed: Testbed) -> None:
    assert bed.driver is not None
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h3", 3)
        # The rate before the reset: the highest of its ticks, as the bed's writer thread
        # may rewrite the tree a little late under load (two reads of one state: 0 b/s).
        before = max(
            (
                t.rates["enp65s0f0np0"].get("rx_bps") or 0.0
                for t in w.of("h3")
                if "enp65s0f0np0" in t.rates
            ),
            default=0.0,
        )
        t0 = time.monotonic()
        bed.driver.reload_driver("h3")
        await w.frames("h3", 4)
        no_stall(w, "h2", t0, time.monotonic())
        ticks = w.of("h3", t0)
    assert isinstance(before, float) and before > 0
    assert any(t.gap.get("enp65s0f0np0") for t in ticks), "the reset made no gap"
    for t in ticks:
        for lid, rates in t.rates.items():
            for k, v in rates.items():
                vals = v.values() if isinstance(v, dict) else [v]
                assert all(x >= 0 for x in vals), f"{lid} {k} negative after a reset"
        rx = t.rates.get("enp65s0f0np0", {}).get("rx_bps")
        assert rx is None or (isinstance(rx, float) and rx < 3 * before), f"spike {rx}"


async def test_saturated_32bit_ib_counters_are_flagged_not_zero(bed: Testbed) -> None:
    assert bed.driver is not None
    root = bed.host("h3").sim_root
    assert root is not None
    counters = root / "sys/class/infiniband/mlx5_2/ports/1/counters"
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h3", 2)
        bed.driver.hold.add("h3")
        try:
            with bed.driver.lock:
                for name in ("port_rcv_data", "port_xmit_data"):
                    (counters / name).write_text(f"{2**32 - 1}\n")
            t0 = time.monotonic()
            await w.frames("h3", 3)
        finally:
            bed.driver.hold.discard("h3")
        await w.frames("h3", 2)
        ticks = w.of("h3", t0)
    held = [t for t in ticks if "port_rcv_data" in t.saturated.get("mlx5_2/1", [])]
    assert held, "2**32-1 not flagged saturated"
    for t in held:
        rx = t.rates.get("mlx5_2/1", {}).get("rx_bps")
        assert rx is None, f"a saturated counter shown as rate {rx}"
    assert not ticks[-1].saturated.get("mlx5_2/1")


@contextlib.contextmanager
def _full_tmpfs(path: Path) -> Iterator[Path]:
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], check=True)
    try:
        with contextlib.suppress(OSError), (path / "filler").open("wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_full_disk_under_a_snapshot_is_a_clear_error_and_no_partial_file(
    bed: Testbed, tmp_path: Path
) -> None:
    with _full_tmpfs(tmp_path / "full") as full:
        out = full / "snap.json"
        r = fabtop("snapshot", "-c", str(bed.toml_path), "-o", str(out))
        left = sorted(p.name for p in full.iterdir())
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if "snap.json" in x]
    assert len(lines) == 1 and "No space left" in lines[0], r.stderr
    assert left == ["filler"], f"partial files left: {left}"


def test_full_disk_under_a_recording(bed: Testbed, tmp_path: Path) -> None:
    with _full_tmpfs(tmp_path / "full") as full:
        out = full / "rec.fabrec"
        r = fabtop("record", "-c", str(bed.toml_path), "-o", str(out), "--duration", "2")
        left = sorted(p.name for p in full.iterdir())
    assert r.returncode == 2, r.stderr  # the same status as `snapshot` on a full disk
    lines = [x for x in r.stderr.splitlines() if "No space left" in x]
    assert len(lines) == 1 and str(out) in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert all(not n.endswith(".tmp") for n in left), left


async def test_changed_host_key_is_refused_as_changed_and_recovers(bed: Testbed) -> None:
    h1 = bed.host("h1")
    old_key = h1.sshd.host_key_path.read_bytes()
    async with Watch(bed.config(IVAL)) as w:
        await w.frames("h1", 2)
        t0 = time.monotonic()
        h1.sshd.new_host_key()
        try:
            await w.until(
                lambda: "CHANGED" in (w.state.hosts["h1"].error or ""), 20, "host key changed error"
            )
            frames_then = w.state.hosts["h1"].frames
            await asyncio.sleep(3 * IVAL)
            assert w.state.hosts["h1"].frames == frames_then, "frames accepted from a new key"
        finally:
            h1.sshd.host_key_path.write_bytes(old_key)
            h1.sshd.stop()
            h1.sshd.start()
        await w.until(lambda: w.state.hosts["h1"].status == "up", 40, "h1 back with its key")
        no_stall(w, "h2", t0, time.monotonic())
    err = next(e.error or "" for e in w.events if "CHANGED" in (e.error or ""))
    assert err.startswith("h1 ") and "\n" not in err


async def test_shell_metacharacters_in_interface_names_never_run(
    bed: Testbed, tmp_path: Path
) -> None:
    made = []
    for a, b in (("a$(id)", "b;id"), ("c`id`", "$(touch${IFS}Q)")):
        r = bed.exec("h1", "ip", "link", "add", a, "type", "veth", "peer", "name", b, check=False)
        if r.returncode == 0:
            made += [a, b]
    assert len(made) >= 2, "the kernel refused every odd name"
    marker = Path("/root/Q")
    try:
        out = tmp_path / "snap.json"
        r = await asyncio.to_thread(fabtop, "snapshot", "-c", str(bed.toml_path), "-o", str(out))
        assert r.returncode == 0, r.stderr
        h1 = next(h for h in json.loads(out.read_text())["hosts"] if h["name"] == "h1")
        async with Watch(bed.config(IVAL)) as w:
            await w.frames("h1", 2)
        # The dashboard keeps the probe's first-frame note (the snapshot, of frame 2, does not).
        warned = " ".join(w.state.hosts["h1"].warnings)
    finally:
        for n in made[::2]:
            bed.exec("h1", "ip", "link", "del", n, check=False)
    assert not marker.exists() and not (REPO / "Q").exists(), "a name was run as a command"
    assert not any(link["id"] in made for link in h1["links"])
    assert {"eth0", "mgmt"} <= {link["id"] for link in h1["links"]}
    assert "h1: probe: refused netdev name" in warned, warned
    assert "$(" not in warned and "`" not in warned and ";" not in warned


@pytest.mark.parametrize(
    "field,value",
    [
        ("interfaces", '["eth0;id"]'),
        ("interfaces", '["$(id)"]'),
        ("sysfs", '"/sys;id"'),
        ("path", '["/usr/bin`id`"]'),
        ("ssh", '"root@h;id"'),
        ("inference", '["http://x:80/$(id)"]'),
    ],
)
def test_shell_metacharacters_in_config_values_are_refused(
    tmp_path: Path, field: str, value: str
) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(
        f'[[host]]\nname = "n1"\nssh = "root@127.0.0.1:1"\n{field} = {value}\n'.replace(
            'ssh = "root@127.0.0.1:1"\nssh', "ssh"
        )
    )
    r = fabtop("snapshot", "-c", str(cfg), "--timeout", "5")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert str(cfg) in line and field in line and "n1" in line, line


def test_prerequisites_are_there_in_ci() -> None:
    if IN_CI:
        assert shutil.which("iperf3") and shutil.which("nft") and os.geteuid() == 0
