"""One host's frames cost that host, not every host (issue 27, class 1).

A carried slow section (Pipeline.with_slow_sections) is parsed once per section the host
sent, not once per frame it is carried into; and a frame that still takes longer than
the ``frame_budget_s`` threshold to read makes its host's frames read 1 in N (said on
that host) while every other host's frames are read as they come.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import collectors.assemble as asm
import collectors.darwin as darwin
import collectors.gpu_sections as gpu_sections
import collectors.layout as lay
import collectors.version_sections as version_sections
from collectors.frames import Frame, FrameDecoder, Section
from collectors.parsers.iptables import parse_iptables_save
from fabtop.config import HostConfig
from fabtop.core.pipeline import Pipeline
from fabtop.core.state import FabricState
from fabtop.sim import Fabric, SimHostConfig

ROCM = Path(__file__).resolve().parents[1] / "fixtures"  # (no rocm capture here: inline)


def _rocm(level: str) -> str:
    return (
        f'{{"card0": {{"Card Series": "MI100", "pcie clock level": "{level}"}}, '
        '"card1": {"Card Series": "MI100", "pcie clock level": "1 (16.0GT/s x16)"}}'
    )


def _frames(name: str = "n1", macos: bool = False, ticks: int = 8) -> Iterator[Frame]:
    """A host's frames as the sh probe sends them (text: its shape is built anew each
    tick, since its counters are in the text); the first is a slow tick."""
    fab = Fabric(
        [
            SimHostConfig(name, roce_ports=2, gpus=2, macos=macos),
            SimHostConfig("peer", macos=macos),
        ],
        seed=0,
    )
    dec = FrameDecoder()
    for i in range(ticks):
        yield from dec.feed(fab.hosts[name].frame(25.0 + i, 1.0).encode())


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls = [0]
    real: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


def _with(frame: Frame, *extra: Section) -> Frame:
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, [*frame.sections, *extra])


@pytest.mark.timeout(60)
def test_a_carried_gpu_amd_section_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's instance: rocm-smi's section comes once a minute and was parsed again in
    every frame it was carried into (with 40,000 digits in a field: 42 s each)."""
    calls = _counting(monkeypatch, gpu_sections, "parse_rocm_smi_json")
    pipe = Pipeline()
    for i, frame in enumerate(_frames()):
        if i in (0, 5):  # two slow ticks
            frame = _with(
                frame,
                Section(
                    "gpu_amd",
                    None,
                    frame.clock_ns,
                    "ok",
                    "rocm-smi",
                    _rocm("1" * 40_000 if i == 0 else "1 (8.0GT/s x8)"),
                ),
            )
        sample, _ = pipe.apply_frame("n1", frame)
        amd = [g for g in sample.gpus if g.vendor == "amd"]
        assert [g.name for g in amd] == ["MI100", "MI100"]
        assert amd[0].pcie_gen == (None if i < 5 else 3)
        assert calls[0] == (1 if i < 5 else 2), i


# The assembler's readers of the slow kinds (version_sections' are in its _PARSERS).
_ASSEMBLER_READERS = (
    "parse_ethtool_info",
    "parse_mlnx_qos",
    "parse_dcb_apptrust",
    "parse_dcb_app",
    "parse_dcb_ets",
    "parse_dcb_buffer",
    "parse_ip_addr",
    "parse_kv_dump",
    "firewall_read",
)
_VERSION_KINDS = ("uname_r", "ofed_info", "nccl", "nvidia_driver")
_DCB = [
    ("dcb_apptrust", "order: dscp pcp\n"),
    ("dcb_app", "dscp-prio 0:0 CS3:3\n"),
    ("dcb_ets", "prio-tc 0:0 3:3\ntc-bw 0:50 3:50\n"),
    ("dcb_buffer", "prio-buffer 3:1\n"),
]


@pytest.mark.timeout(60)
def test_every_carried_slow_section_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """However often the host's shape is built again (a text frame: every tick), and
    however large the section (a ruleset over the parse memo's 1 MiB bound)."""
    calls: dict[str, int] = {}

    def count(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return real(*args)

        return counted

    for name in _ASSEMBLER_READERS:
        monkeypatch.setattr(asm, name, count(name, getattr(asm, name)))
    for kind in _VERSION_KINDS:
        source, parse = version_sections._PARSERS[kind]
        monkeypatch.setitem(version_sections._PARSERS, kind, (source, count(kind, parse)))
    rules = "".join(f"-A INPUT -p tcp --dport {p} -j ACCEPT\n" for p in range(1, 40_000))
    ruleset = f"*filter\n:INPUT ACCEPT [0:0]\n{rules}COMMIT\n"
    assert len(ruleset) > lay._MEMO_TEXT_MAX
    pipe = Pipeline()
    for i, frame in enumerate(_frames()):
        if i == 0:
            frame = _with(
                Frame(
                    frame.seq,
                    frame.clock_ns,
                    frame.uptime_s,
                    frame.unix_s,
                    [s for s in frame.sections if s.kind != "firewall"],
                ),
                Section("firewall", None, frame.clock_ns, "ok", None, ruleset),
                Section(
                    "cputhrottle",
                    None,
                    frame.clock_ns,
                    "ok",
                    None,
                    "cpu0/thermal_throttle/core_throttle_count 5\n",
                ),
                *(Section(k, "eno1", frame.clock_ns, "ok", None, t) for k, t in _DCB),
            )
            sections = [s.kind for s in frame.sections]
        sample, _ = pipe.apply_frame("n1", frame)
        assert sample.firewall is not None and sample.firewall.tool == "iptables-save"
        assert sample.versions is not None and sample.versions.kernel is not None
        assert sample.cpu_throttle_count == 5
        qos = sample.links["eno1"].qos
        assert qos is not None and qos.trust == "dscp" and qos.prio_buffer is not None
        assert qos.dscp2prio == {0: 0, 24: 3} and qos.ets is not None
    # Once per section the host sent (two mlnx_qos, three ethtool -i: one per netdev).
    assert calls == {
        "parse_ethtool_info": sections.count("ethtool_i") == 3 and 3,
        "parse_mlnx_qos": sections.count("mlnx_qos") == 2 and 2,
        **{name: 1 for name in (*_ASSEMBLER_READERS[2:], *_VERSION_KINDS)},
    }


@pytest.mark.timeout(60)
def test_a_macs_carried_sections_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (
        "parse_hardware_ports",
        "parse_ifconfig",
        "parse_ibv_devinfo",
        "parse_rdma_ctl",
        "parse_sp_thunderbolt",
    )
    counts = {n: _counting(monkeypatch, darwin, n) for n in names}
    pipe = Pipeline()
    slow_ticks = 0
    for frame in _frames("mac1", macos=True):
        slow_ticks += frame.find("hwports") is not None
        sample, _ = pipe.apply_frame("mac1", frame)
        assert sample.macos is not None and sample.macos.rdma_ctl == "enabled"
        assert sample.thunderbolt is not None and sample.macos.thunderbolt_ports
    assert slow_ticks == 2  # the simulated Mac's slow sections come every 5 ticks
    assert {n: c[0] for n, c in counts.items()} == {n: slow_ticks for n in names}


# --- the budget ------------------------------------------------------------------------


class _CostClock:
    """A CPU clock that a reader made dear moves on as the frame is read."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _two_hosts() -> Iterator[tuple[Frame, Frame]]:
    fab = Fabric([SimHostConfig("n1", roce_ports=2, gpus=2), SimHostConfig("n2")], seed=0)
    dec = {"n1": FrameDecoder(), "n2": FrameDecoder()}
    for i in range(30):
        (a,) = dec["n1"].feed(fab.hosts["n1"].frame(25.0 + i, 1.0).encode())
        (b,) = dec["n2"].feed(fab.hosts["n2"].frame(25.0 + i, 1.0).encode())
        yield a, b


def test_a_dear_frame_costs_its_host_not_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """n1's firewall reads in 1.2 s (an injected reader): n1's next 4 frames are skipped,
    said on n1, their slow sections kept for the next frame read; n2 is read throughout."""
    clock = _CostClock()
    real = asm.firewall_read

    def dear(text: str) -> Any:
        if "dear" in text:
            clock.t += 1.2
        return real(text)

    monkeypatch.setattr(asm, "firewall_read", dear)
    state = FabricState([HostConfig("n1"), HostConfig("n2")], cost_clock=clock)
    ruleset = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m comment --comment {} -j ACCEPT\nCOMMIT\n"
    read: list[int] = []
    for i, (a, b) in enumerate(_two_hosts()):
        if i == 3:
            a = _with(a, Section("firewall", None, a.clock_ns, "ok", None, ruleset.format("dear")))
        if i == 5:  # a slow tick while n1 is skipped: read with the next frame read
            a = _with(a, Section("uname_r", None, a.clock_ns, "ok", None, "6.9.0-1-generic\n"))
        if state.apply_frame("n1", a) is not None:
            read.append(i)
        assert state.apply_frame("n2", b) is not None  # every frame of n2 read
        if i == 10:
            break
    assert read == [0, 1, 2, 3, 8, 9, 10]  # 1.2 s over 0.25 s: 1 frame in 5 read
    n1 = state.hosts["n1"]
    said = [w for w in n1.warnings if "to read" in w or "again" in w]
    assert said == [
        "n1: frame took 1.20 s to read, over the 0.25 s budget: 1 frame in 5 read until one "
        "reads within it",
        "n1: frame read in 0.000 s, within the 0.25 s budget: every frame read again",
    ]
    assert not any("budget" in w for w in state.hosts["n2"].warnings)
    assert n1.sample is not None and n1.sample.versions is not None
    assert n1.sample.versions.kernel is not None
    assert n1.sample.versions.kernel.value == "6.9.0-1-generic"
    assert n1.sample.firewall is not None and n1.sample.firewall.status == "ok"
    # frames arrived while skipped: the host is not silent
    assert n1.last_frame_mono is not None and n1.status == "up"


def test_a_real_dear_frame_is_measured_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real clock (this thread's CPU time) sees a reader that burns CPU."""
    real = parse_iptables_save

    def burning(text: str, family: str = "ip") -> Any:
        end = time.thread_time() + 0.2
        while time.thread_time() < end:
            pass
        return real(text, family)

    monkeypatch.setattr("collectors.parsers.firewall.parse_iptables_save", burning)
    state = FabricState([HostConfig("n1"), HostConfig("n2")], thresholds={"frame_budget_s": 0.05})
    for i, (a, b) in enumerate(_two_hosts()):
        if i == 1:
            a = _with(
                a,
                Section(
                    "firewall", None, a.clock_ns, "ok", None, "*filter\n:INPUT DROP [0:0]\nCOMMIT\n"
                ),
            )
        got = state.apply_frame("n1", a)
        assert state.apply_frame("n2", b) is not None
        if i == 2:
            assert got is None  # skipped: the frame before cost 0.2 s of 0.05
            break
    assert any("n1: frame took 0.2" in w and "1 frame in" in w for w in state.hosts["n1"].warnings)
