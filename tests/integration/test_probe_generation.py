"""Both Linux probes declare the generation a host's layout is keyed on (docs/PROBE.md
"Generation"): a change on the node moves it, on the next tick for a per-tick file and on
the next slow tick for a slow tool, and the sample of that tick shows the change."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import Frame, FrameDecoder
from collectors.layout import declared
from collectors.probe import ProbeArgs, build_argv, probe_script
from fabtop.core.pipeline import Pipeline
from tests.integration.sshd import Sshd
from tests.integration.test_probe import (  # noqa: F401
    MLNX_QOS,
    Probe,
    _args,
    _awk_shim,
    _shell_argv,
    _start,
    _write_tool,
    node,
    run_probe,
)


async def _over_ssh(sshd: Sshd, args: ProbeArgs, change: Callable[[], None]) -> list[Frame]:
    """Ten frames of the probe run through real sshd on loopback; ``change`` after two."""
    t = sshd.transport()
    await t.connect()
    stream = t.stream(probe_script(), build_argv(args))
    dec, frames = FrameDecoder(), []
    try:
        async with asyncio.timeout(30):
            async for chunk in stream:
                before = len(frames)
                frames += dec.feed(chunk)
                if before < 2 <= len(frames):
                    change()
                if len(frames) >= 10:
                    break
    finally:
        await stream.aclose()
        await t.close()
    assert dec.take_warnings() == []
    return frames[:10]


@pytest.mark.parametrize("via", ["local", "ssh"])
@pytest.mark.parametrize("impl", ["sh", "python"])
def test_a_change_on_the_node_moves_the_generation_and_reaches_the_sample(
    impl: str, via: str, node: Path, fixtures_dir: Path, run_probe: list[Probe], sshd: Sshd
) -> None:
    qos = node / "qos.txt"
    qos.write_text((fixtures_dir / MLNX_QOS).read_text())
    _write_tool(node / "bin", "mlnx_qos", f'cat "{qos}"\n')
    args = replace(_args(node, probe=impl), slow_ticks=4, max_frames=10, interval_ms=250)

    def change() -> None:
        """On the node, after the second frame: a per-tick file and a slow tool's output."""
        (node / "sys/class/net/eth0/mtu").write_text("9000\n")
        qos.write_text(qos.read_text().replace("trust state: dscp", "trust state: pcp"))

    if via == "ssh":
        frames = asyncio.run(_over_ssh(sshd, args, change))
    else:
        probe = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node)
        frames = probe.frames(2, deadline_s=15)
        assert len(frames) == 2
        change()
        frames += probe.frames(8, deadline_s=20)
        assert probe.decoder.take_warnings() == []
    assert len(frames) == 10
    gens = []
    pipe, carry = Pipeline(), Pipeline()
    mtu, trust = [], []
    for f in frames:
        sec = f.find("probe")
        assert sec is not None
        gens.append(declared(sec.text))
        sample, _ = pipe.apply_frame("n1", f)
        # Through the kept layout: what a new build of the frame gives.
        assert repr(sample) == repr(assemble("n1", carry.with_slow_sections("n1", f), {}))
        link = sample.links["eth0"]
        assert link.qos is not None
        mtu.append(link.mtu)
        trust.append(link.qos.trust)
    assert all(g is not None and g.split(".")[1].isdigit() for g in gens), gens
    assert len({g.split(".")[0] for g in gens if g}) == 1  # one run
    # Slow frames are the 1st, 5th and 9th: the QoS shows on the 5th, the MTU on the 3rd.
    assert mtu[:2] == [1500, 1500] and set(mtu[2:]) == {9000}
    assert trust[:4] == ["dscp"] * 4 and set(trust[4:]) == {"pcp"}
    assert gens[2] != gens[1] and gens[4] != gens[3]
    # Between slow frames, with nothing changed on the node, the generation holds.
    assert gens[5] == gens[6] == gens[7]


@pytest.mark.parametrize("awk", ["gawk", "mawk", "busybox", "original-awk", "python"])
def test_every_awk_declares_alike_and_a_temperature_moves_nothing(
    awk: str, node: Path, run_probe: list[Probe]
) -> None:
    """The sh probe's generation in each awk it runs on, and the fast probe's ("python"):
    it holds while only a NIC temperature moves (the collector reads those every tick)
    and moves with the MTU."""
    device = node / "sys/class/net/eth0/device"
    device.unlink()
    hwmon = device / "hwmon/hwmon9"
    hwmon.mkdir(parents=True)
    (hwmon / "name").write_text("mlx5\n")
    temp = hwmon / "temp1_input"
    temp.write_text("57000\n")
    args = replace(_args(node), slow_ticks=100000, max_frames=6, interval_ms=250)
    if awk == "python":
        probe = _start(run_probe, _shell_argv("dash", replace(args, probe="python")), node)
    else:
        probe = _start(run_probe, _shell_argv("dash", args), node, _awk_shim(node, awk))
    frames = probe.frames(2, deadline_s=15)
    temp.write_text("61000\n")
    frames += probe.frames(2, deadline_s=15)
    (node / "sys/class/net/eth0/mtu").write_text("9000\n")
    frames += probe.frames(2, deadline_s=15)
    assert len(frames) == 6
    gens = [declared(f.find("probe").text) for f in frames]  # type: ignore[union-attr]
    pipe = Pipeline()
    links = [pipe.apply_frame("n1", f)[0].links["eth0"] for f in frames]
    assert [ln.temperature_c for ln in links[1:4:2]] == [57.0, 61.0]
    assert gens[1] == gens[2] == gens[3] != gens[4] == gens[5], gens
    assert [ln.mtu for ln in links] == [1500] * 4 + [9000] * 2
