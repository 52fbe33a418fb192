"""A host's kept shape and last values: a tick assembled from them is exactly what a new
build of the same frame gives, whatever moves between ticks (collectors/assemble.py)."""

from __future__ import annotations

import random

import pytest
from hypothesis import strategies as st

import collectors.layout as lay
from collectors.assemble import assemble
from collectors.frames import Frame, FrameDecoder, Section, render_frame
from collectors.parsers.sysfs import parse_sysnet
from collectors.probe_fast import Generation
from collectors.structured import StructuredEncoder
from collectors.text import has_control
from collectors.values import values_line
from fabtop.config import HostConfig
from fabtop.core.pipeline import Pipeline
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.sim import Fabric, SimHostConfig


def _stream(ticks: int, seed: int = 0) -> list[Frame]:
    """Structured frames of a 2-port mlx5 + IB host, slow sections carried as the pipeline
    carries them; NIC temperatures move from tick to tick, slow ticks come every 60 s."""
    fab = Fabric(
        [SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=2), SimHostConfig("n2")], seed=seed
    )
    dec, enc, wire_dec, pipe = (
        FrameDecoder(),
        StructuredEncoder(),
        FrameDecoder(),
        Pipeline(),
    )
    out = []
    for i in range(ticks):
        for f in dec.feed(fab.hosts["n1"].frame(25.0 + i, 1.0).encode()):
            (g,) = wire_dec.feed(render_frame(enc.encode(f)).encode())
            out.append(pipe.with_slow_sections("n1", g))
    return out


def _declared(frames: list[Frame], run: str = "t") -> list[Frame]:
    """The frames with the generation a probe declares for their text (one run of the
    probe's own Generation over their sections, as the fast probe and the simulator run
    it): a test that changes a frame's text changes it on the node."""
    gen = Generation(run)
    out = []
    for f in frames:
        secs = list(f.sections)
        at = next(i for i, s in enumerate(secs) if s.kind == "probe")
        for s in secs:
            lines = s.text.encode().split(b"\n") if s.text else []
            gen.section(s.kind, s.subject or "-", s.detail or "", lines)
        p = secs[at]
        notes = [ln for ln in p.text.split("\n") if not ln.startswith("gen ")]
        line = gen.declare([n.encode() for n in notes], "slow 1" in notes).decode()
        secs[at] = Section(
            p.kind, p.subject, p.read_ns, p.status, p.detail, "\n".join([*notes, line])
        )
        out.append(Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs, carried=f.carried))
    return out


def _fresh(host: str, frame: Frame) -> str:
    """The sample a new build gives: nothing kept of the host."""
    kept = lay._SHAPES.pop(host, None)
    try:
        return repr(assemble(host, frame))
    finally:
        if kept is not None:
            lay._SHAPES[host] = kept


def _whole(s: Section) -> str:
    """A structured section's values as one whole decimal line (as the fallback reads)."""
    if s.values is None or s.values.plain:
        return s.text
    return values_line(s.values.vals or [], 10**9)


def _spoil(frame: Frame, rng: random.Random) -> Frame:
    """Hostile values: not read, not numbers, too many digits, a count that is wrong."""
    secs = []
    for s in frame.sections:
        if s.schema is not None and rng.random() < 0.4:
            toks = _whole(s).split(" ")
            i = rng.randrange(len(toks))
            toks[i] = rng.choice(
                ["-", "x1", "99999999999999999999", str(2**32 - 1), "07", "", "1\t2"]
            )
            if rng.random() < 0.1:
                toks.pop()
            s = Section(s.kind, s.subject, s.read_ns, s.status, s.detail, " ".join(toks), s.schema)
        elif s.kind == "sysnet" and rng.random() < 0.3:
            # a temperature that is no number, then one that is
            bad = rng.choice(["x", "-5", "57000\r", "12345678901"])
            s = Section(
                s.kind,
                s.subject,
                s.read_ns,
                s.status,
                s.detail,
                s.text.replace("temp1_input 5", f"temp1_input {bad}5", 1),
            )
        secs.append(s)
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, secs)


def test_a_kept_shape_gives_what_a_new_build_gives() -> None:
    frames = _stream(130)
    builds = 0
    for f in frames:
        before = lay._SHAPES.get("n1")
        got = repr(assemble("n1", f))
        builds += lay._SHAPES["n1"] is not before and (
            before is None or lay._SHAPES["n1"].shape is not before.shape
        )
        assert got == _fresh("n1", f), f.seq
    # Counters, temperatures and GPUs move every tick, slow sections come twice: the
    # shape is built on the first frame only.
    assert builds == 1


def test_hostile_values_and_temperatures_give_what_a_new_build_gives() -> None:
    rng = random.Random(7)
    for g in _declared([_spoil(f, rng) for f in _stream(60, seed=3)]):
        assert repr(assemble("n2", g)) == _fresh("n2", g), g.seq


def test_a_kept_shape_follows_a_change_of_state_and_of_names() -> None:
    frames = _stream(8)
    assemble("n1", frames[0])
    down = [
        Section(
            s.kind,
            s.subject,
            s.read_ns,
            s.status,
            s.detail,
            s.text.replace("enp65s0f0np0/operstate up", "enp65s0f0np0/operstate down"),
            s.schema,
        )
        for s in frames[1].sections
    ]
    f = Frame(frames[1].seq, frames[1].clock_ns, frames[1].uptime_s, frames[1].unix_s, down)
    first, downed, again = _declared([frames[0], f, frames[2]])
    assemble("n1", first)
    assert assemble("n1", downed).links["enp65s0f0np0"].state == "down"
    assert assemble("n1", again).links["enp65s0f0np0"].state == "up"


def test_probe_lines_that_change_every_tick_keep_the_shape() -> None:
    """The probes' own lines change from tick to tick (``slow 0|1``, ``skipped_ticks``,
    the fast probe's running ``ethtool_ioctls``): the host keeps its shape; a probe
    warning is said on the tick it comes, and the shape follows it."""
    frames = _stream(6)

    def with_probe(f: Frame, text: str) -> Frame:
        secs = [
            Section(s.kind, s.subject, s.read_ns, s.status, s.detail, text)
            if s.kind == "probe"
            else s
            for s in f.sections
        ]
        return Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs)

    shapes = []
    probed = _declared(
        [
            with_probe(
                f,
                f"interval_ms 1000\nslow {i % 2}\nimpl python3.12"
                f"\nskipped_ticks {i}\nethtool_ioctls {10 * i}",
            )
            for i, f in enumerate(frames[:4])
        ]
        + [
            with_probe(
                frames[4],
                "interval_ms 1000\nslow 0\nimpl python3.12\n"
                "ethtool_ioctls 50\nwarning sysfs file skipped (its read blocked)",
            )
        ]
    )
    for g in probed[:4]:
        got = assemble("n3", g)
        assert got.probe == "python3.12"
        assert repr(got) == _fresh("n3", g)
        shapes.append(lay._SHAPES["n3"].shape)
    assert len({id(s) for s in shapes}) == 1
    got = assemble("n3", probed[4])
    assert any("sysfs file skipped" in w for w in got.warnings)
    assert lay._SHAPES["n3"].shape is not shapes[0]


def test_carried_slow_sections_read_once_give_what_a_new_build_gives() -> None:
    """The slow sections carried into the frames between slow ticks are read once for
    as long as they stay the same (Frame.carried): every tick still gives what a new
    build of its frame gives, their headers cleaned, a NIC temperature among them kept,
    and the host's unread notes of them kept; a slow tick that changes one is read."""
    fab = Fabric([SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=2), SimHostConfig("n2")])
    dec, enc, wire = FrameDecoder(), StructuredEncoder(), FrameDecoder()
    raw = [
        g
        for i in range(8)
        for f in dec.feed(fab.hosts["n1"].frame(25.0 + i, 1.0).encode())
        for g in wire.feed(render_frame(enc.encode(f)).encode())
    ]

    def slow(f: Frame, dcb: str) -> Frame:
        secs = [
            Section(
                s.kind,
                s.subject,
                s.read_ns,
                s.status,
                s.detail,
                s.text + "\nenp65s0f0np0/device/hwmon/hwmon9/temp2_input 91000",
            )
            if s.kind == "sysnet_slow"
            else s
            for s in f.sections
        ]
        secs.append(Section("dcb_pfc", "enp65s0f0np0", f.clock_ns, "error", dcb, ""))
        return Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs)

    raw[0] = slow(raw[0], "rc=1 \x1b[31mno dcb\x1b[0m")
    raw[5] = slow(raw[5], "rc=2")  # the next slow tick: sysnet_slow comes again
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    carried = []
    for f in raw:
        g = state.pipeline.with_slow_sections("n9", f)  # what this tick's frame holds
        carried.append(g.carried)
        sample = state.apply_frame("n1", f)
        assert sample is not None
        assert repr(sample) == repr(assemble("n1", g, {})), f.seq
        assert sample.links["enp65s0f0np0"].temperature_c == 91.0
        assert not any(has_control(f"{st.detail}") for st in sample.sections)
        want = "error (rc=2)" if f.seq >= raw[5].seq else "error (rc=1 no dcb)"
        assert state.hosts["n1"].unread["dcb_pfc"] == want
    # One tuple carried from the first slow tick to the next, another after it.
    assert len({id(c) for c in carried[1:5]}) == 1 and carried[5] is not carried[4]
    assert carried[6] is carried[5] and len(carried[1]) > 5


_TOKEN = st.one_of(
    st.integers(0, 2**64 + 10).map(str),
    st.sampled_from(["-", "0", "1", "", "x", "+1", "٣", "00000000000000000000001", "1\t2"]),
)


def test_nic_temperatures_follow_the_text_every_tick() -> None:
    """Temperatures are read as values (the shape holds while they move): each tick's are
    those the sysfs parser reads from that tick's whole text, hottest sensor first."""
    rng = random.Random(11)
    seen = set()
    for g in _declared([_spoil(f, rng) for f in _stream(40)]):
        text = "\n".join(s.text for s in g.sections if s.kind in ("sysnet", "sysnet_slow"))
        records = parse_sysnet(text).netdevs
        sample = assemble("n1", g)
        for name in ("enp65s0f0np0", "enp65s0f1np1"):
            want = records[name].temperature_c
            assert sample.links[name].temperature_c == want, (g.seq, name)
            seen.add(want)
    assert len(seen) > 3  # they did move


def test_slow_sections_are_carried_last_in_one_order() -> None:
    """A slow tick's frame is laid out as the frames between (its shape is kept), and the
    newest of each slow section is the one carried."""
    pipe = Pipeline()

    def frame(seq: int, *sections: tuple[str, str | None, str]) -> Frame:
        return Frame(seq, seq, 1.0, 1.0, [Section(k, s, 1, "ok", None, t) for k, s, t in sections])

    slow = (("ethtool_i", "eth0", "driver: mlx5_core"), ("mlnx_qos", "eth0", "old"))
    first = pipe.with_slow_sections("h", frame(1, slow[0], ("sysnet", None, "a"), slow[1]))
    between = pipe.with_slow_sections("h", frame(2, ("sysnet", None, "b")))
    again = pipe.with_slow_sections(
        "h", frame(3, ("mlnx_qos", "eth0", "new"), ("sysnet", None, "c"), slow[0])
    )
    layouts = [[(s.kind, s.subject) for s in f.sections] for f in (first, between, again)]
    assert (
        layouts[0]
        == layouts[1]
        == layouts[2]
        == [("sysnet", None), ("ethtool_i", "eth0"), ("mlnx_qos", "eth0")]
    )
    assert [s.text for s in again.sections] == ["c", "driver: mlx5_core", "new"]
    after = pipe.with_slow_sections("h", frame(4, ("sysnet", None, "d")))
    assert after.sections[2].text == "new"


def test_a_value_not_read_then_read_again() -> None:
    """A counter the probe could not read ("-": no key) and read again next tick."""
    frames = _stream(26)
    for n, f in enumerate(frames):
        secs = []
        for s in f.sections:
            if s.kind == "ethtool_S" and s.subject == "enp65s0f0np0" and n in (20, 22):
                toks = _whole(s).split(" ")
                toks[3] = "-"
                s = Section(
                    s.kind, s.subject, s.read_ns, s.status, s.detail, " ".join(toks), s.schema
                )
            secs.append(s)
        g = Frame(f.seq, f.clock_ns, f.uptime_s, f.unix_s, secs)
        got = assemble("n3", g)
        assert repr(got) == _fresh("n3", g), n
        assert (len(got.links["enp65s0f0np0"].counters["ethtool"]) == 248) == (n in (20, 22))


def test_two_streams_of_one_host_keep_a_shape_each() -> None:
    """Focus mode reads one port of a host at 4 Hz beside the dashboard's whole frames:
    each Pipeline keeps its own shapes, so neither stream rebuilds the other's."""
    whole = _stream(12)
    one_port = [
        Frame(
            f.seq,
            f.clock_ns,
            f.uptime_s,
            f.unix_s,
            [
                s
                for s in f.sections
                if s.subject in (None, "enp65s0f0np0") and not s.kind.startswith("gpu")
            ],
        )
        for f in whole
    ]
    main, focus = Pipeline(), Pipeline()
    shapes = []
    for a, b in zip(whole, one_port, strict=True):
        main.apply_frame("n1", a)
        focus.apply_frame("n1", b)
        shapes.append((main._shapes["n1"].shape, focus._shapes["n1"].shape))
    assert len({id(m) for m, _ in shapes[1:]}) == 1
    assert len({id(f) for _, f in shapes[1:]}) == 1
    assert shapes[-1][0] is not shapes[-1][1]


def test_a_frame_of_hundreds_of_clean_sections_is_not_cleaned_header_by_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A host of 128 ports sends about 400 sections: their headers together are longer
    than one header may be, which once sent every header through clean() every tick; a
    dirty header among them is still cleaned."""
    secs = [Section("ethtool_i", f"eth{i}", 1, "ok", None, "driver: mlx5_core") for i in range(400)]
    frame = Frame(1, 1, 1.0, 1.0, secs)
    calls = []
    real = lay.clean
    monkeypatch.setattr(lay, "clean", lambda t, *a: calls.append(t) or real(t, *a))
    assert lay._cleaned(frame) is frame and calls == []
    dirty = Frame(
        1, 1, 1.0, 1.0, [*secs, Section("ethtool_i", "eth\x1b]0;x\x07", 1, "ok", None, "")]
    )
    got = lay._cleaned(dirty)
    assert got is not dirty and got.sections[-1].subject == "eth"
