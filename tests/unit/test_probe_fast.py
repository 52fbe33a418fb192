"""The fast probe's own logic, in process: its Python floor, its PFC watchdog, and what
the collector does with a watchdog event."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from collectors import probe_fast as pf
from collectors.frames import Frame, FrameDecoder
from collectors.parsers.pfcwd import parse_pfcwd
from collectors.structured import section_values
from fabtop.config import HostConfig
from fabtop.core.findings import WATCHDOG_WINDOW_S
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.sim import Fabric, SimHostConfig
from tests.conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "collectors" / "probe_fast.py"


def test_the_fast_probe_needs_nothing_newer_than_python_3_6(tmp_path: Path) -> None:
    vermin = shutil.which("vermin") or str(Path(sys.executable).parent / "vermin")
    if not Path(vermin).exists():
        skip_or_fail("vermin not installed (pip install vermin)")
    # --violations: exit status 1 and the offending lines when anything needs more than 3.6.
    p = subprocess.run(
        [vermin, "--no-tips", "-t=3.6-", "--violations", "--eval-annotations", str(PROBE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    # ... and vermin does see what it would refuse (a check that cannot fail checks nothing).
    bad = tmp_path / "newer.py"
    bad.write_text("import dataclasses\nif (n := 3):\n    pass\n")
    q = subprocess.run(
        [vermin, "--no-tips", "-t=3.6-", "--violations", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert q.returncode != 0


class _Stub:
    """What the watchdog needs of the probe: its arguments, clock and output."""

    def __init__(self, iv_ms: int = 1000) -> None:
        self.a = pf.Args([f"interval_ms={iv_ms}"])
        self.scan = None
        self.eth = object()
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def wall_ns(self, mono: float | None = None) -> int:
        return int(1_800_000_000e9 + (mono or 0.0) * 1e9)

    def uptime(self) -> str:
        return "1000.00"


def _reading(pause_us: dict[int, int], tx: dict[int, int], rx: dict[int, int]) -> Any:
    names: list[bytes] = []
    vals: list[int] = []
    for p in range(8):
        for n, v in (
            (f"rx_prio{p}_pause_duration", pause_us.get(p, 0)),
            (f"tx_prio{p}_pause_duration", 0),
            (f"tx_prio{p}_bytes", tx.get(p, 0)),
            (f"rx_prio{p}_bytes", rx.get(p, 0)),
        ):
            names.append(n.encode())
            vals.append(v)
    return names, tuple(vals)


def _events(stub: _Stub) -> list[Frame]:
    dec = FrameDecoder()
    frames = [f for chunk in stub.out for f in dec.feed(chunk)]
    assert dec.take_warnings() == []
    return frames


def test_a_storm_is_an_event_after_one_fast_window_and_incast_is_not() -> None:
    stub = _Stub()
    wd = pf.Watchdog(stub)  # type: ignore[arg-type]
    t, pause, tx, rx = 0.0, 0, 0, 0
    wd.seen("eth2", t, _reading({3: pause}, {3: tx}, {3: rx}))
    # Healthy incast: paused 30 % of the time while its bytes keep moving.
    for _ in range(30):
        t += 0.1
        pause += 30_000
        tx += 1_000_000_000
        wd.seen("eth2", t, _reading({3: pause}, {3: tx}, {3: rx}))
    assert stub.out == []
    assert wd.next_read() < float("inf")  # pause activity: the port is fast-sampled
    # The storm starts: paused 99.6 % of the next window, tx flat.
    t += 0.1
    pause += 99_600
    wd.seen("eth2", t, _reading({3: pause}, {3: tx}, {3: rx}))
    [ev] = _events(stub)
    assert ev.event and ev.clock_ns == stub.wall_ns(t)
    sec = ev.find("pfcwd")
    assert sec is not None
    [storm], warnings = parse_pfcwd(sec.text, ev.clock_ns)
    assert warnings == []
    assert (storm.netdev, storm.prio, storm.side, storm.storm) == ("eth2", 3, "rx", True)
    assert storm.ratio == pytest.approx(0.996) and storm.moved_bytes_per_s == 0
    # Held: said again at most once per interval, then cleared when the pauses stop.
    for _ in range(5):
        t += 0.1
        pause += 100_000
        wd.seen("eth2", t, _reading({3: pause}, {3: tx}, {3: rx}))
    t += 0.1
    wd.seen("eth2", t, _reading({3: pause}, {3: tx}, {3: rx}))
    kinds = [ln.split()[0] for f in _events(stub) for ln in f.find("pfcwd").text.splitlines()]  # type: ignore[union-attr]
    assert kinds == ["storm", "clear"]


def test_paused_but_moving_is_not_a_storm() -> None:
    stub = _Stub()
    wd = pf.Watchdog(stub)  # type: ignore[arg-type]
    wd.seen("eth2", 0.0, _reading({3: 0}, {3: 0}, {}))
    # 99.9 % paused, yet 5 GB/s left on prio 3: the pause counter lies, or it is not stuck.
    wd.seen("eth2", 0.1, _reading({3: 99_900}, {3: 500_000_000}, {}))
    assert stub.out == []


@pytest.mark.parametrize(
    "line",
    [
        "storm eth2 9 rx 0.99 0 100000",
        "storm eth2 3 up 0.99 0 100000",
        "storm eth2 3 rx nan 0 100000",
        "storm eth2 3 rx 1.5 0 100000",
        "storm eth2;reboot 3 rx 0.99 0 100000",
        "storm eth2 3 rx 0.99 -5 100000",
        "storm eth2 3 rx 0.99 0 0",
        "storm eth2 3 rx 0.99 0",
        "storm \x1b[31meth2 3 rx 0.99 0 100000",
        "reboot",
    ],
)
def test_a_bad_watchdog_line_costs_that_line(line: str) -> None:
    events, warnings = parse_pfcwd(f"{line}\nstorm eth3 3 tx 0.995 - 100000", 1)
    assert [(e.netdev, e.side) for e in events] == [("eth3", "tx")]
    assert len(warnings) == 1 and "\x1b" not in warnings[0]


def _state() -> tuple[FabricState, Fabric, float]:
    fab = Fabric([SimHostConfig("n1", roce_ports=2), SimHostConfig("n2")])
    clock = [0.0]
    state = FabricState(
        [HostConfig("n1")], rules=make_evaluator(), clock=lambda: clock[0], wall=lambda: 0.0
    )
    dec = FrameDecoder()
    t = 30.0
    for _ in range(3):
        for f in dec.feed(fab.hosts["n1"].frame(t, 1.0).encode()):
            state.apply_frame("n1", f)
        t += 1.0
        clock[0] += 1.0
    return state, fab, t


def _event(clock_ns: int, *lines: str) -> Frame:
    text = "\n".join(
        [
            f"@@fabtop-event 1 {clock_ns} 1000.00 {clock_ns // 10**9}.000",
            f"@@section pfcwd - {clock_ns} ok window_ms=100",
            *lines,
            "@@end 1",
            "",
        ]
    )
    [frame] = FrameDecoder().feed(text.encode())
    return frame


def test_a_watchdog_event_names_the_storm_at_once_without_waiting_for_frames() -> None:
    state, fab, _ = _state()
    ndev = fab.hosts["n1"].cfg.netdev(0)
    assert not [f for f in state.findings if f.rule == "pfc_storm"]
    sample = state.hosts["n1"].sample
    assert sample is not None
    ev = _event(sample.clock_ns + 300_000_000, f"storm {ndev} 3 tx 0.997 0 100000")
    assert state.apply_frame("n1", ev) is None  # not a tick: no sample, no rates
    [f] = [f for f in state.findings if f.rule == "pfc_storm"]
    assert f.severity == "critical" and f.subject == f"n1/{ndev}/prio3"
    assert "stuck receiver" in f.summary
    # Who saw it is evidence, not wording: the frames that follow say the same words.
    assert f.evidence[WATCHDOG_WINDOW_S] == 0.1
    assert "ms window" not in f.summary and "of the last" not in f.summary
    assert state.hosts["n1"].sample is sample  # the event did not replace the frame


def test_a_watchdog_storm_the_probe_stops_repeating_expires() -> None:
    state, fab, _ = _state()
    ndev = fab.hosts["n1"].cfg.netdev(0)
    sample = state.hosts["n1"].sample
    assert sample is not None
    state.apply_frame("n1", _event(sample.clock_ns, f"storm {ndev} 3 rx 0.995 0 100000"))
    assert state.watchdog
    clear = _event(sample.clock_ns + 10**8, f"clear {ndev} 3 rx 0.2")
    state.apply_frame("n1", clear)
    assert state.watchdog == {}
    state.apply_frame("n1", _event(sample.clock_ns, f"storm {ndev} 3 rx 0.995 0 100000"))
    assert state.watchdog
    state._clock = lambda: 1e6  # type: ignore[method-assign]  # the host went silent
    assert state.watchdog == {}


def _tick(seq: int, clock_ns: int, read_ns: int, pause_us: int) -> Frame:
    text = "\n".join(
        [
            f"@@fabtop-frame {seq} {clock_ns} {1000 + seq}.00 {clock_ns // 10**9}.000",
            f"@@section sysnet - {clock_ns} ok",
            "eth2/mtu 4200",
            "eth2/operstate up",
            "eth2/device -",
            f"@@section ethtool_S eth2 {read_ns} ok",
            "NIC statistics:",
            f"     rx_prio3_pause_duration: {pause_us}",
            "     tx_prio3_bytes: 0",
            f"@@end {seq}",
            "",
        ]
    )
    [frame] = FrameDecoder().feed(text.encode())
    return frame


@pytest.mark.parametrize("stamped", [True, False])
def test_rates_divide_by_the_read_times_when_the_probe_stamps_them(stamped: bool) -> None:
    # A receiver paused 99.5 % of the time, read 10 ms into one tick and 60 ms into the
    # next (a tool started late): by the ticks' times that reads 104.5 %, then 94.5 %.
    from fabtop.core.pipeline import Pipeline
    from fabtop.core.rules.pauses import PAUSE_RATIO

    pipe = Pipeline()
    base = 1_800_000_000 * 10**9
    ratios = []
    for seq, lag_ms in enumerate((10, 60, 10, 60), start=1):
        clock = base + seq * 10**9
        read = clock + lag_ms * 10**6
        pause = int(0.995 * (read - base) / 1000)  # microseconds paused so far
        _, rates = pipe.apply_frame("n1", _tick(seq, clock, read if stamped else clock, pause))
        if seq > 1:
            ratios.append(rates.links["eth2"].rates[str(PAUSE_RATIO["rx"])][3])  # type: ignore[index]
    if stamped:
        assert ratios == pytest.approx([0.995] * 3, abs=1e-4)
    else:  # the sh probe's stamps: the tick's start, so the ratio jitters with the lag
        assert min(ratios) < 0.95 and max(ratios) == 1.0


class _Driver(pf.Ethtool):
    """ETHTOOL_* answered in process: ``names`` and ``values``, ``grow`` names added
    between the count and the read (mlx5 when PFC is switched on)."""

    def __init__(self, names: list[bytes], grow: list[bytes] | None = None) -> None:
        super().__init__()
        self.driver_names = names
        self.grow = grow or []

    def _call(self, ifname: str, buf: Any) -> None:
        import struct

        cmd = struct.unpack_from("=I", buf.raw)[0]
        names = self.driver_names
        if cmd == pf.ETHTOOL_GSSET_INFO:
            struct.pack_into("=IIQI", buf, 0, cmd, 0, 1 << pf.ETH_SS_STATS, len(names))
        elif cmd == pf.ETHTOOL_GSTRINGS:
            struct.pack_into("=III", buf, 0, cmd, pf.ETH_SS_STATS, len(names))
            for i, n in enumerate(names):
                struct.pack_into("32s", buf, 12 + 32 * i, n)
        elif cmd == pf.ETHTOOL_GSTATS:
            if self.grow:  # the driver grew between GSSET_INFO and GSTATS
                self.driver_names, self.grow = names + self.grow, []
                names = self.driver_names
            # As the kernel did before 2025: as many values as the driver has now.
            struct.pack_into("=II", buf, 0, cmd, len(names))
            for i in range(len(names)):
                struct.pack_into("=Q", buf, 8 + 8 * i, 1000 + i)


def test_driver_names_cannot_start_a_frame_line_and_a_growing_count_is_read_again() -> None:
    drv = _Driver(
        [b"rx_bytes", b"evil\n@@end 9", b"rx_prio3_pause"],
        grow=[b"tx_prio3_pause", b"rx_prio3_pause_duration"],
    )
    names, vals = drv.read("eth2")
    assert names == [
        b"rx_bytes",
        b"evil?@@end 9",
        b"rx_prio3_pause",
        b"tx_prio3_pause",
        b"rx_prio3_pause_duration",
    ]
    assert vals == (1000, 1001, 1002, 1003, 1004)
    # Sent as the fast probe sends them: a schema of names, then values by position.
    out = pf.Sections(1 << 20, 1 << 24)
    pf.Encoder().values(out, "ethtool_S", "eth2", 7, names, pf.b64_rows(vals), True)
    wire = b"\n".join([b"@@fabtop-frame 1 1 1.00 1.000", *out.out, b"@@end 1", b""])
    dec = FrameDecoder()
    (frame,) = dec.feed(wire)
    assert dec.take_warnings() == []
    (sec,) = frame.sections
    assert sec.schema is not None
    assert sec.schema.names == tuple(n.decode() for n in names)
    assert section_values(sec)[0] == {n.decode(): v for n, v in zip(names, vals, strict=True)}


def test_a_counter_file_that_holds_no_number_costs_that_counter(tmp_path: Path) -> None:
    """Counters go by position; one that holds garbage goes as "-" with its line in the
    text, where the parser says what it held. The other counters of the host stay."""
    from collectors.assemble import assemble

    net = tmp_path / "sys" / "class" / "net" / "eth0"
    (net / "statistics").mkdir(parents=True)
    for name, value in (
        ("rx_bytes", "100"),
        ("tx_bytes", "12 34"),
        ("rx_packets", "7"),
        ("tx_packets", "N/A (no PMA)"),
        ("rx_errors", "\x1b]0;owned\x07"),
    ):
        (net / "statistics" / name).write_text(value + "\n")
    (net / "mtu").write_text("9000\n")
    (net / "operstate").write_text("up\n")
    probe = pf.Probe(pf.Args([f"sysfs={tmp_path / 'sys'}", "gpu=off", "interval_ms=250"]))
    dec = FrameDecoder()
    samples = [assemble("n1", f) for f in dec.feed(probe.tick(True) + probe.tick(False))]
    assert dec.take_warnings() == []
    for sample in samples:
        stats = sample.links["eth0"].counters["netdev"]
        assert stats == {"rx_bytes": 100, "rx_packets": 7}
        assert sample.links["eth0"].mtu == 9000
        said = "\n".join(sample.warnings)
        assert "tx_bytes: bad value '12 34'" in said and "tx_packets: bad value" in said
        assert "\x1b" not in said and "owned" not in said
    sec = next(
        s for s in dec.feed(probe.tick(False)) for s in s.sections if s.kind == "sysnet_counters"
    )
    assert sec.schema is not None and sec.values is not None
    assert sec.values.vals is not None and sec.values.vals.count(None) == 3


def _paused_port_frame(seq: int, t: float) -> Frame:
    """A tick of a port paused 95 % of the time on priority 3 while its tx stays flat."""
    clock = 1_800_000_000 * 10**9 + round(t * 1e9)
    text = "\n".join(
        [
            f"@@fabtop-frame {seq} {clock} {1000 + t:.2f} {clock // 10**9}.000",
            f"@@section sysnet - {clock} ok",
            "eth2/mtu 4200",
            "eth2/operstate up",
            "eth2/device -",
            f"@@section ethtool_S eth2 {clock} ok",
            "NIC statistics:",
            f"     rx_prio3_pause: {round(t * 2000)}",
            f"     rx_prio3_pause_duration: {round(0.95 * t * 1e6)}",
            "     tx_prio3_bytes: 5000000000",
            "     rx_prio3_bytes: 7000000000",
            f"@@end {seq}",
            "",
        ]
    )
    [frame] = FrameDecoder().feed(text.encode())
    return frame


@pytest.mark.parametrize("override", [None, 0.9], ids=["defaults", "storm_pause_ratio=0.9"])
def test_a_thresholds_override_moves_the_probes_and_the_frames_verdict_alike(
    override: float | None,
) -> None:
    # One storm judgment: a port paused 95 % of the time with its bytes flat is a storm
    # at storm_pause_ratio 0.9 and none at 0.99, both for the probe's watchdog (told by
    # the session's probe arguments) and for the rules over the frames.
    from fabtop.config import Config
    from fabtop.run.compose import fabric_state
    from fabtop.run.session import Session

    config = Config(
        hosts=[HostConfig("n1")],
        thresholds={} if override is None else {"storm_pause_ratio": override},
    )
    clock = [0.0]
    state = fabric_state(config, clock=lambda: clock[0])
    stub = _Stub()
    stub.a = pf.Args(Session(config, state).probe_argv(config.hosts[0]))
    wd = pf.Watchdog(stub)  # type: ignore[arg-type]
    for k in range(31):  # 3 s of the watchdog's 100 ms reads of the same port
        t = k / 10
        wd.seen("eth2", t, _reading({3: round(0.95 * t * 1e6)}, {3: 5_000_000_000}, {}))
    probe_storms = [
        ln.split()[:4]
        for f in _events(stub)
        for ln in f.find("pfcwd").text.splitlines()  # type: ignore[union-attr]
    ]
    frame_storms = []
    for seq in range(1, 7):  # 6 s of frames, one a second
        state.apply_frame("n1", _paused_port_frame(seq, float(seq)))
        clock[0] += 1.0
        frame_storms += [f.subject for f in state.findings if f.rule == "pfc_storm"]
    if override is None:
        assert probe_storms == [] and frame_storms == []
    else:
        assert probe_storms and probe_storms[0] == ["storm", "eth2", "3", "rx"]
        assert frame_storms and set(frame_storms) == {"n1/eth2/prio3"}


@pytest.mark.parametrize(("words", "storms"), [((), True), (("storm_pause_ratio=1",), False)])
def test_the_demo_watchdog_judges_by_the_words_the_probe_is_sent(
    words: tuple[str, ...], storms: bool
) -> None:
    # The demo's hosts run the same watchdog on simulated readings: a session's
    # thresholds reach it through the same argument words (a 99.6 % storm is none at 1).
    from fabtop.sim.watchdog import SimWatchdog

    fab = Fabric.single(
        [SimHostConfig("n1", roce_ports=1), SimHostConfig("n2", roce_ports=1)],
        "pfc_storm",
        target="n1",
    )
    wd = SimWatchdog(fab.hosts["n1"], 1.0, ["interval_ms=1000", "gpu=off", *words])
    events = [ev for k in range(30) for ev in wd.read(1.0 + k / 10)]
    assert bool(events) == storms


def _tree_probe(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[pf.Probe, Path]:
    """The fast probe in process on a tree: netdev eth0 (rx_bytes 100, tx_bytes 200) and
    an ethtool whose -S is a process every tick (no ioctl on a tree)."""
    net = root / "sys" / "class" / "net" / "eth0"
    (net / "statistics").mkdir(parents=True)
    (net / "device").mkdir()
    for name, value in (("rx_bytes", "100"), ("tx_bytes", "200"), ("operstate", "up")):
        (net / ("statistics" if name.endswith("bytes") else "") / name).write_text(value + "\n")
    bindir = root / "bin"
    bindir.mkdir()
    (bindir / "ethtool").write_text(
        "#!/bin/sh\ncase $1 in -S) printf 'NIC statistics:\\n     rx_prio3_pause: 5\\n' ;;"
        " *) exit 1 ;; esac\n"
    )
    (bindir / "ethtool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    args = [f"sysfs={root / 'sys'}", "gpu=off", "interval_ms=250", "timeout_s=0.3"]
    return pf.Probe(pf.Args(args)), net


def test_a_tick_hands_its_reads_over_once_and_runs_its_tools_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One handoff a tick: the reader thread reads while the tick's own thread runs and
    # collects its tools; no thread is started for them.
    import threading

    probe, _ = _tree_probe(tmp_path, monkeypatch)
    dec = FrameDecoder()
    dec.feed(probe.tick(True))
    started: list[threading.Thread] = []
    real_start = threading.Thread.start

    def start(t: threading.Thread) -> None:
        started.append(t)
        real_start(t)

    monkeypatch.setattr(threading.Thread, "start", start)
    for _ in range(3):
        [frame] = dec.feed(probe.tick(False))
        assert frame.find("ethtool_S", "eth0").status == "ok"  # type: ignore[union-attr]
    assert started == []


def test_a_read_that_blocks_costs_one_value_and_the_tick_ships_with_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sysfs read stuck in the kernel (a wedged driver attribute) cannot be made on a
    # tree: the probe's pread of one file blocks here instead. The tick ships within the
    # read timeout without that value and says so; the tick's tool (ethtool -S, a process
    # on a tree) still runs and is read meanwhile; the next tick no longer waits for it.
    import os
    import threading
    import time

    from collectors.assemble import assemble

    probe, net = _tree_probe(tmp_path, monkeypatch)
    dec = FrameDecoder()
    dec.feed(probe.tick(True))
    assert probe.scan is not None
    victim = str(net / "statistics" / "rx_bytes")
    fd = next(e.fd for e in probe.scan.entries if e.path == victim)
    release = threading.Event()
    real = os.pread

    tries: list[int] = []  # reads of the stuck file

    def pread(f: int, n: int, off: int) -> bytes:
        if f == fd:
            tries.append(f)
            release.wait(30)
        return real(f, n, off)

    monkeypatch.setattr(os, "pread", pread)
    try:
        took = []
        for _ in range(3):
            t0 = time.monotonic()
            [frame] = dec.feed(probe.tick(False))
            took.append(time.monotonic() - t0)
            assert frame.find("ethtool_S", "eth0").status == "ok"  # type: ignore[union-attr]
            if len(took) == 1:  # the tick whose read hung: what was read after it is lost
                said = frame.find("probe").text  # type: ignore[union-attr]
                want = "blocked for 0.3s, skipped from now on: class/net/eth0/statistics/rx_bytes"
                assert f"sysfs read {want}" in said
            else:  # one value lost from then on
                assert assemble("n1", frame).links["eth0"].counters["netdev"] == {"tx_bytes": 200}
        # bounded; the next ticks never wait on it again (asked by what they read, not by
        # their wall time: on a busy machine a later tick took longer than the timeout)
        assert took[0] < 3 and tries == [fd]
    finally:
        release.set()


def test_a_slow_file_of_a_tree_replaced_by_rename_is_read_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the dirs of the files read every tick are watched for renames; a slow file
    # (here the NIC's PCIe link speed) is opened for each slow read.
    import os

    probe, net = _tree_probe(tmp_path, monkeypatch)
    speed = net / "device" / "current_link_speed"
    speed.write_text("8.0 GT/s PCIe\n")
    dec = FrameDecoder()

    def slow_value(frame: bytes) -> str:
        [f] = dec.feed(frame)
        text = f.find("sysnet_slow").text  # type: ignore[union-attr]
        return dict(ln.split(" ", 1) for ln in text.splitlines())["eth0/device/current_link_speed"]

    assert slow_value(probe.tick(True)) == "8.0 GT/s PCIe"
    (net / "device" / ".new").write_text("16.0 GT/s PCIe\n")
    os.replace(net / "device" / ".new", speed)
    dec.feed(probe.tick(False))
    assert slow_value(probe.tick(True)) == "16.0 GT/s PCIe"


def test_a_ticks_tools_are_read_past_a_thousand_open_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A node's fast probe holds every sysfs file it reads open (thousands with GID tables
    # and hw_counters): the tools' pipes then get descriptors past 1024, where select()
    # refuses to look (ValueError); their sections must still come.
    import os
    import resource

    probe, _ = _tree_probe(tmp_path, monkeypatch)  # raises its soft limit to the hard one
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        skip_or_fail("needs an open-file limit of 1200 or more (ulimit -n)")
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        dec = FrameDecoder()
        for slow in (True, False):
            [frame] = dec.feed(probe.tick(slow))
            assert frame.find("ethtool_S", "eth0").status == "ok"  # type: ignore[union-attr]
    finally:
        for fd in held:
            os.close(fd)
