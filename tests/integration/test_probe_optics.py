"""The cable's own health (issue 33) as both probes read it on a node, over the real sshd.

Verified on captures only: on this machine a veth answers ``ethtool -m`` and
``--show-fec`` with ``Operation not supported`` and there is no devlink device, so shim
``ethtool`` and ``devlink`` on the node's PATH replay the public captures of
tests/fixtures/optics (SOURCES.md) to the real probe.sh and probe_fast.py, run through a
real sshd on loopback, and the frames go through the pipeline to typed samples."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame, FrameDecoder
from collectors.optics import RX_POWER_MW, Limits
from collectors.probe import ProbeArgs, build_argv, local_command, probe_script
from collectors.vocabulary import Metric
from fabtop.core.coverage import host_gaps
from fabtop.core.pipeline import Pipeline
from fabtop.core.state import HostState
from tests.conftest import skip_or_fail
from tests.integration.sshd import Sshd
from tests.integration.test_probe import (  # noqa: F401
    ETHTOOL_I,
    ETHTOOL_S,
    Probe,
    _args,
    _write_tool,
    node,
    run_probe,
)

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optics"
# eth0 sits on the PCI function of the devlink capture (the test pairs the two captures)
BUS = "0000:b1:00.3"


def _shims(node: Path, fixtures_dir: Path, version: str = "6.1") -> None:
    """ethtool: -S/-i as test_probe's, -m and --show-fec per netdev (eth0 answers with
    real module and FEC captures, eth1 as a veth does; -m refused to a user who is not
    root, in the real tool's words, unless the sudo shim ran it); devlink: health show;
    sudo: -n only, runs the command as "root" (SUDO_USER set), or refuses as sudo does
    where the node has a file ``sudo_refuses``."""
    refused = CAPTURES / "ethtool_m_not_root_testbed.txt"
    _write_tool(
        node / "bin",
        "sudo",
        f"""echo "$*" >> {node}/sudo.log
[ "$1" = -n ] || exit 9
shift
[ -e {node}/sudo_refuses ] && {{ echo "sudo: a password is required" >&2; exit 1; }}
SUDO_USER=nobody exec "$@"
""",
    )
    (node / "sys/class/net/eth1/statistics").mkdir(parents=True)
    (node / "sys/class/net/eth1/device").write_text("")
    info = node / "ethtool_i.txt"
    info.write_text(
        (fixtures_dir / ETHTOOL_I).read_text().replace("0000:b3:00.0", BUS)  # see BUS
    )
    veth_m = CAPTURES / "ethtool_m_veth_not_supported_testbed.txt"
    veth_fec = CAPTURES / "show_fec_veth_not_supported_testbed.txt"
    _write_tool(
        node / "bin",
        "ethtool",
        f"""echo "$*" >> {node}/ethtool.log
case "$1 $2 $3" in
"-S "*) cat "{fixtures_dir / ETHTOOL_S}" ;;
"-i "*) cat "{info}" ;;
"--version  ") echo "ethtool version {version}" ;;
"-m eth0 ")
  [ "$(id -u)" = 0 ] || [ -n "$SUDO_USER" ] || {{ cat "{refused}" >&2; exit 1; }}
  cat "{CAPTURES / "ethtool_m_sfp_xgspon_dark_rx_netdev.txt"}" ;;
"-I --show-fec eth0" | "--show-fec eth0 ") cat "{CAPTURES / "show_fec_per_lane_netdev.txt"}" ;;
"-m eth1 ") cat "{veth_m}" >&2; exit 1 ;;
"-I --show-fec eth1") cat "{veth_fec}" >&2; exit 1 ;;
*) exit 1 ;;
esac
""",
    )
    _write_tool(
        node / "bin",
        "devlink",
        f"""echo "$*" >> {node}/devlink.log
[ "$*" = "health show" ] || exit 2
cat "{CAPTURES / "devlink_health_ice_e810_port_error_netdev.txt"}"
""",
    )


async def _over_ssh(sshd: Sshd, args: ProbeArgs, n: int) -> list[Frame]:
    t = sshd.transport()
    await t.connect()
    stream = t.stream(probe_script(), build_argv(args))
    dec, frames = FrameDecoder(), []
    try:
        async with asyncio.timeout(30):
            async for chunk in stream:
                frames += dec.feed(chunk)
                if len(frames) >= n:
                    break
    finally:
        await stream.aclose()
        await t.close()
    assert dec.take_warnings() == []
    return frames[:n]


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_both_probes_bring_module_fec_and_health_to_the_sample_and_back_off(
    impl: str, node: Path, fixtures_dir: Path, sshd: Sshd
) -> None:
    _shims(node, fixtures_dir)
    # Every tick slow and an optics round (optics_s=0): three rounds in three frames.
    args = replace(_args(node, probe=impl), slow_ticks=1, optics_s=0, max_frames=3)
    frames = asyncio.run(_over_ssh(sshd, args, 3))
    pipe = Pipeline()
    samples = [pipe.apply_frame("n1", f)[0] for f in frames]

    link = samples[0].links["eth0"]
    m = link.module
    assert m is not None and (m.identifier, m.part, m.temperature_c) == (
        "SFP",
        "SFP+ONU-XGSPON",
        52.47,
    )
    assert m.read_ns == frames[0].find("ethtool_m", "eth0").read_ns  # type: ignore[union-attr]
    assert [(ln.lane, ln.rx_power_mw) for ln in m.lanes] == [(1, 0.0)]  # dark: 0 mW
    assert m.limits[RX_POWER_MW] == Limits(0.1995, 0.1584, 0.0014, 0.0011)
    assert link.fec is not None and link.fec.histogram is False
    assert link.counters["fec"]["corrected_blocks_lane1"] == 1
    assert link.metrics[Metric.FEC_CORRECTED_BLOCKS] == 256
    assert link.metrics[Metric.FEC_UNCORRECTABLE_BLOCKS] == 145
    assert link.health is not None
    assert [(h.name, h.state, h.error) for h in link.health] == [
        ("fw", "healthy", 0),
        ("port", "error", 1),
    ]
    fec_sec = frames[0].find("ethtool_fec", "eth0")
    assert fec_sec is not None and fec_sec.detail == "ethtool=6.1"
    assert (
        "n1: ethtool_fec: no FEC error histogram in this node's output (ethtool 6.1): it needs "
        "Linux 6.18 and an ethtool that prints fec_symbol_err_*" in samples[0].warnings
    )

    # eth1 answers as a veth (no module, no FEC: a fact of the port, no warning on any
    # round), then is left alone for 15 rounds
    bad = samples[0].links["eth1"]
    assert bad.module is None and bad.fec is None
    said = [w for s in samples for w in s.warnings if "ethtool_m eth1" in w or "fec eth1" in w]
    assert said == [], said
    failed = frames[0].find("ethtool_m", "eth1")
    assert failed is not None and (failed.status, failed.detail) == ("error", "rc=1")
    for f in frames[1:]:
        sec = f.find("ethtool_m", "eth1")
        assert sec is not None and (sec.status, sec.detail) == ("error", "backoff")
    log = (node / "ethtool.log").read_text().splitlines()
    assert log.count("-m eth1") == 1 and log.count("-I --show-fec eth1") == 1
    assert log.count("-m eth0") == 3  # a port that answers is read every round
    # Only `show`, never `dump`
    assert set((node / "devlink.log").read_text().splitlines()) == {"health show"}
    # Each round's reading, the same module (read at its own time)
    mods = [s.links["eth0"].module for s in samples]
    assert all(x is not None and replace(x, read_ns=None) == replace(m, read_ns=None) for x in mods)


def test_optics_wait_for_their_round_not_every_slow_tick(
    node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    """Slow ticks every frame, optics at most every 30 s (the default): one round, and
    the pipeline carries its sections into the frames between."""
    from tests.integration.test_probe import _start

    _shims(node, fixtures_dir)
    args = replace(_args(node, probe="sh"), slow_ticks=1, max_frames=3)
    frames = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node).frames(3)
    assert [f.find("ethtool_m", "eth0") is not None for f in frames] == [True, False, False]
    pipe = Pipeline()
    last = [pipe.apply_frame("n1", f)[0] for f in frames][-1]
    assert last.links["eth0"].module is not None
    assert last.links["eth0"].metrics[Metric.FEC_CORRECTED_BLOCKS] == 256


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_an_ethtool_before_5_10_is_asked_the_fec_mode_without_statistics(
    impl: str, node: Path, fixtures_dir: Path, run_probe: list[Probe]
) -> None:
    """Ubuntu 20.04's ethtool 5.4 has no -I (--include-statistics, ethtool 5.10)."""
    from tests.integration.test_probe import _start

    _shims(node, fixtures_dir, version="5.4")
    args = replace(_args(node, probe=impl), slow_ticks=1, max_frames=1)
    (frame,) = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node).frames(1)
    sec = frame.find("ethtool_fec", "eth0")
    assert sec is not None and (sec.status, sec.detail) == ("ok", "ethtool=5.4")
    log = (node / "ethtool.log").read_text().splitlines()
    assert "--show-fec eth0" in log and "-I --show-fec eth0" not in log


@pytest.fixture()
def open_node(fixtures_dir: Path) -> Iterator[Path]:
    """A small node (eth0, a physical netdev) where a user who is not root can read it
    and write the shims' logs; the shims as :func:`_shims` makes them."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        skip_or_fail("running the probe as nobody needs root and setpriv")
    top = Path(tempfile.mkdtemp(prefix="fabtop-optics-"))
    node = top / "node"
    (node / "sys/class/net/eth0/statistics").mkdir(parents=True)
    (node / "sys/class/net/eth0/device").write_text("")
    (node / "sys/class/net/eth0/statistics/rx_bytes").write_text("1\n")
    (node / "bin").mkdir()
    for name in (ETHTOOL_S, ETHTOOL_I):
        (node / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixtures_dir / name, node / name)
    _shims(node, node)
    for where, _dirs, files in os.walk(top):
        os.chmod(where, 0o777)  # the shims' logs are written as nobody
        for f in files:
            os.chmod(os.path.join(where, f), 0o755)
    yield node
    shutil.rmtree(top)


def _as_nobody(node: Path, impl: str, n: int, **kw: object) -> tuple[list[Frame], HostState]:
    """``n`` frames, every one an optics round, of the probe run as nobody; the host's
    state as the dashboard keeps it."""
    from tests.integration.test_probe import Probe

    args = replace(_args(node, probe=impl), slow_ticks=1, optics_s=0, max_frames=n, **kw)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    p = Probe([*argv, *local_command(args)], node)
    try:
        frames = p.frames(n)
    finally:
        p.close()
    assert len(frames) == n
    hs, pipe = HostState("n1", "n1"), Pipeline()
    for f in frames:
        hs.sample = pipe.apply_frame("n1", f)[0]
        hs.note_sections(hs.sample)
        hs.warnings.extend(hs.sample.warnings)
    return frames, hs


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_module_optics_without_root_are_said_once_or_read_through_sudo_n(
    impl: str, open_node: Path
) -> None:
    frames, hs = _as_nobody(open_node, impl, 3)
    # ethtool -m needs CAP_NET_ADMIN: never run, one section per round says why
    log = (open_node / "ethtool.log").read_text().splitlines()
    assert not [ln for ln in log if ln.startswith("-m")], log
    for f in frames:
        assert [(s.subject, s.status, s.detail) for s in f.sections if s.kind == "ethtool_m"] == [
            (None, "missing", "needs root")
        ]
    assert hs.sample is not None and hs.sample.links["eth0"].module is None
    assert hs.sample.links["eth0"].fec is not None  # FEC needs no privilege: still read
    assert not [w for w in hs.warnings if "ethtool_m" in w], list(hs.warnings)
    assert "module optics need root or sudo -n on n1" in host_gaps(hs)

    # optics_sudo: through `sudo -n` (never a prompt), the module read as root reads it
    frames, hs = _as_nobody(open_node, impl, 1, optics_sudo=True)
    assert hs.sample is not None
    m = hs.sample.links["eth0"].module
    assert m is not None and m.part == "SFP+ONU-XGSPON"
    assert "-n ethtool -m eth0" in (open_node / "sudo.log").read_text().splitlines()
    assert not [g for g in host_gaps(hs) if "optics" in g]

    # sudo wants a password: the read fails once, said with the fix, then backs off
    (open_node / "sudo_refuses").write_text("")
    frames, hs = _as_nobody(open_node, impl, 2, optics_sudo=True)
    said = [w for w in hs.warnings if "ethtool_m eth0" in w]
    assert said == [
        "n1: ethtool_m eth0: error (rc=1): sudo: a password is required; sudo -n may not "
        "run ethtool here: allow it without a password, or log in as root"
    ], list(hs.warnings)
    sec = frames[1].find("ethtool_m", "eth0")
    assert sec is not None and sec.detail == "backoff"
