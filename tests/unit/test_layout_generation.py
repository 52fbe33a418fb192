"""A host's layout is keyed on what its probe declares (docs/PROBE.md "Generation"): the
generation moves when the text of a section moved on the node, a frame that declares
nothing is laid out anew, and a probe that declares a stale generation cannot make a
sample that a new build of its frame would not give for what the frame shows."""

from __future__ import annotations

import pytest

import collectors.layout as lay
from collectors.assemble import assemble
from collectors.frames import Frame, FrameDecoder, Section, render_frame
from collectors.gpu_sections import GPU_KINDS
from collectors.probe_fast import GEN_PER_TICK, Generation, temp_less
from collectors.structured import StructuredEncoder
from fabtop.core.pipeline import Pipeline
from fabtop.sim import Fabric, SimHostConfig
from tests.unit.test_assemble_shape import _declared, _fresh, _stream


def _gen(frame: Frame) -> str | None:
    sec = frame.find("probe")
    assert sec is not None
    return lay.declared(sec.text)


def _with(frame: Frame, change: dict[tuple[str, str | None], str | None]) -> Frame:
    """``frame`` with the text of some sections replaced (None: the section left out),
    its generation as it came (a probe that says nothing moved)."""
    secs = []
    for s in frame.sections:
        key = (s.kind, s.subject)
        if key not in change:
            secs.append(s)
        elif (text := change[key]) is not None:
            secs.append(Section(s.kind, s.subject, s.read_ns, s.status, s.detail, text, s.schema))
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, secs)


def _builds(host: str, frames: list[Frame]) -> int:
    """How many of ``frames`` built the host's layout anew; each gives what a new build of
    it gives."""
    n = 0
    for f in frames:
        before = lay._SHAPES.get(host)
        got = repr(assemble(host, f))
        after = lay._SHAPES[host]
        assert isinstance(after, lay._Kept)
        n += not isinstance(before, lay._Kept) or after.shape is not before.shape
        assert got == _fresh(host, f), f.seq
    return n


def test_the_generation_moves_with_the_text_of_a_section_and_with_nothing_else() -> None:
    gen = Generation("r")
    notes = [b"interval_ms 1000", b"slow 1", b"impl python 3.12"]

    def frame(sysnet: bytes, dcb: bytes | None, gpu: bytes, ioctls: int, *warn: bytes) -> bytes:
        gen.section("sysnet", "-", "", sysnet.split(b"\n"))
        if dcb is not None:
            gen.section("dcb_pfc", "eth0", "", [dcb])
        gen.section("gpu_nvidia", "-", "", [gpu])
        gen.section("ethtool_S", "eth0", "schema=3 enc=b64", [b"AAAA%d" % ioctls])
        slow = b"slow 1" in notes and dcb is not None
        return gen.declare([*notes, b"ethtool_ioctls %d" % ioctls, *warn], slow)

    temp = b"eth0/mtu 9000\neth0/device/hwmon/hwmon3/temp1_input %d"
    first = frame(temp % 57000, b"pfc-enabled 3", b"0, 40", 2)
    # NIC temperatures, GPUs, values by position and the probe's tick lines move; a slow
    # section not sent between its slow ticks is carried by the collector.
    assert frame(temp % 58000, None, b"0, 41", 4) == first
    assert frame(temp % 56000, b"pfc-enabled 3", b"0, 42", 6) == first
    assert first.startswith(b"gen r.")
    moved = [
        frame(temp % 57000, b"pfc-enabled 3 4", b"0, 40", 8),  # a slow section's text
        frame(b"eth0/mtu 1500\n" + temp[14:] % 57000, b"pfc-enabled 3 4", b"0, 40", 8),
        frame(temp[:14] + b"eth0/device/hwmon/hwmon3/temp1_input x", b"pfc-enabled 3 4", b"", 8),
        frame(temp % 5, b"pfc-enabled 3 4", b"", 8, b"warning a file skipped"),
    ]
    assert len({first, *moved}) == 5
    assert frame(temp % 6, b"pfc-enabled 3 4", b"", 9, b"warning a file skipped") == moved[-1]


def test_the_probe_forgets_what_it_no_longer_sends() -> None:
    """A week of pod veths: the text kept per section is of the sections sent since the
    last slow frame only."""
    gen = Generation("r")
    for i in range(50):
        gen.section("ethtool_i", f"veth{i}", "", [b"driver: veth"])
        gen.declare([], True)
    assert len(gen.last) == 2  # the last veth's, and the probe section's


def test_the_probe_leaves_out_what_the_collector_reads_every_tick() -> None:
    """The GPU sections and the NIC temperature lines: what collectors/layout.py reads
    every tick is exactly what the probe's generation leaves out."""
    assert set(GEN_PER_TICK) == set(GPU_KINDS)
    lines = [
        "eth0/device/hwmon/hwmon3/temp1_input 57000",
        "eth0/device/hwmon/hwmon3/temp12_input 0",
        "eth0/device/hwmon/hwmon3/temp1_input 1234567890",
        "eth0/device/hwmon/hwmon3/temp1_input -5",
        "eth0/device/hwmon/hwmon3/temp1_input 5x",
        "eth0/device/hwmon/hwmon3/temp12345_input 5",
        "eth0/device/hwmon/hwmon3/name mlx5",
        "a/b/device/hwmon/hwmon3/temp1_input 5",
        "é0/device/hwmon/hwmon3/temp1_input 5",
        "x" * 65 + "/device/hwmon/hwmon3/temp1_input 5",
    ]
    for line in lines:
        probe = temp_less(line.encode()).decode() != line
        collector = lay._hwmon_values(line, {}) != line
        assert probe == collector, line


def test_a_slow_section_that_changed_on_the_node_reaches_the_next_slow_tick() -> None:
    """Simulated hosts declare as the fast probe does (the probe's own Generation): a
    change of QoS on the node moves the generation on the next slow tick, whose sample
    shows it, and nothing else moves it."""
    fab = Fabric(
        [SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=2), SimHostConfig("n2")],
        slow_every_s=5.0,
    )
    host = fab.hosts["n1"]
    dec, enc, wire, pipe = FrameDecoder(), StructuredEncoder(), FrameDecoder(), Pipeline()
    trust, gens = [], []
    for i in range(16):
        if i == 7:
            host.cfg.trust = "pcp"  # on the node, between two slow ticks (5 and 10)
        for f in dec.feed(host.frame(25.0 + i, 1.0).encode()):
            (g,) = wire.feed(render_frame(enc.encode(f)).encode())
            sample, _ = pipe.apply_frame("n1", g)
            assert repr(sample) == repr(assemble("n1", pipe.with_slow_sections("n9", g), {}))
            qos = sample.links["enp65s0f0np0"].qos
            assert qos is not None
            trust.append(qos.trust)
            gens.append(_gen(g))
    assert trust == ["dscp"] * 10 + ["pcp"] * 6
    assert len(set(gens[:10])) == 1 and len(set(gens[10:])) == 1 and gens[9] != gens[10]


def test_a_frame_that_declares_nothing_is_laid_out_anew_every_tick() -> None:
    """Recordings of older probes, other sources: no key, so no layout kept."""
    bare = []
    for f in _stream(6):
        p = f.find("probe")
        assert p is not None
        text = "\n".join(ln for ln in p.text.split("\n") if not ln.startswith("gen "))
        bare.append(_with(f, {("probe", None): text}))
    assert _builds("u1", bare) == 6
    assert _builds("u2", _stream(6)) == 1


def test_a_new_run_of_the_probe_is_not_taken_for_the_old_one() -> None:
    """A reconnect starts the generation again: the run tells the two apart."""
    frames = _stream(4)
    first = _declared(frames[:2], run="a")
    mtu = [
        _with(f, {("sysnet", None): f.sections[i].text.replace("/mtu 9000", "/mtu 1500")})
        for f in frames[2:]
        for i, s in enumerate(f.sections)
        if s.kind == "sysnet"
    ]
    second = _declared(mtu, run="b")
    assert [_gen(f) for f in first] == ["a.2", "a.2"] and _gen(second[0]) == "b.2"
    assert _builds("u3", first + second) == 2
    assert assemble("u3", second[-1]).links["enp65s0f0np0"].mtu == 1500


@pytest.mark.parametrize("lie", ["swapped", "dropped", "renamed", "text"])
def test_a_probe_that_declares_a_stale_generation(lie: str) -> None:
    """A hostile probe keeps its generation while its sections change. What a frame
    shows at no cost (its sections, their order and subjects, the schemas) rebuilds the
    layout: no value lands on another link, nothing raises. A text changed under a
    stale generation is the probe's own truth: the layout it declared holds."""
    frames = _stream(3)
    assemble("u4", frames[0])
    f = frames[1]
    ports = [s for s in f.sections if s.kind == "ethtool_S"]
    if lie == "swapped":  # two ports' values under each other's names
        a, b = ports[0], ports[1]
        secs = [
            _subject(s, b.subject if s is a else a.subject) if s in (a, b) else s
            for s in f.sections
        ]
        g = Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs)
    elif lie == "dropped":
        g = _with(f, {("ethtool_S", ports[0].subject): None})
    elif lie == "renamed":  # another schema for the same section
        s = ports[0]
        assert s.schema is not None and s.values is not None
        names = tuple(reversed(s.schema.names))
        other = type(s.schema)(s.schema.sid + 100, s.schema.kind, names)
        secs = [
            Section(s.kind, s.subject, s.read_ns, s.status, s.detail, s.text, other, s.values)
            if x is s
            else x
            for x in f.sections
        ]
        g = Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs)
    else:
        sysnet = next(s for s in f.sections if s.kind == "sysnet")
        down = sysnet.text.replace("enp65s0f0np0/operstate up", "enp65s0f0np0/operstate down")
        g = _with(f, {("sysnet", None): down})
    assert _gen(g) == _gen(frames[0])
    got = assemble("u4", g)
    fresh = _fresh("u4", g)
    if lie != "text":
        assert repr(got) == fresh
        return
    assert repr(got) != fresh  # the text moved: the declared layout holds...
    assert got.links["enp65s0f0np0"].state == "up"
    new = assemble("u5", g)  # ...and every value is its own link's
    for lid, link in got.links.items():
        assert link.counters == new.links[lid].counters, lid
        assert link.metrics == new.links[lid].metrics, lid


def _subject(s: Section, subject: str | None) -> Section:
    return Section(s.kind, subject, s.read_ns, s.status, s.detail, s.text, s.schema, s.values)


def test_what_counts_as_a_declaration() -> None:
    """The probe section's last line, one printable token of at most GEN_MAX characters;
    anything else declares nothing (that frame is laid out anew)."""
    assert lay.declared("impl sh\ninterval_ms 1000\ngen 123-456.7") == "123-456.7"
    assert lay.declared("gen a.1") == "a.1"
    for text in (
        "gen a.1\nimpl sh",  # not last: a probe's lines after it are not its
        "impl sh",
        "gen ",
        "gen a b",
        "gen a\x1b[31m",
        "gen é.1",
        "gen " + "x" * (lay.GEN_MAX + 1),
        "",
    ):
        assert lay.declared(text) is None, text
