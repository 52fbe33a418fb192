"""Structured values on the wire: whole or as deltas, decimal or binary (collectors/values.py).

The fast probe's own code (``Probe.values``) makes the frames here, and the stream's
decoder reads them: every value placed is the value the probe had, a delta whose base the
decoder lost is not placed (said once, in one warning), and the values are back with the
next whole frame. Hostile deltas cost their section, never the stream.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import probe_fast as pf
from collectors.frames import Frame, FrameDecoder, render_frame
from collectors.numbers import U64_MAX
from collectors.values import (
    Values,
    apply_delta,
    apply_delta_b64,
    decode_whole_b64,
    encode_delta_b64,
    encode_whole_b64,
)


def _probe(full_every: int) -> Any:
    probe = pf.Probe.__new__(pf.Probe)
    probe.schemas, probe.nsid, probe.sent, probe.seq = {}, 0, {}, 0
    probe.full_every = full_every
    return probe


def _frame(probe: Any, eth: tuple[int, ...], sysfs: list[bytes]) -> bytes:
    """One frame as the probe writes it: an ethtool section (ints, from the ioctl: binary)
    and a sysfs counters section (file contents: decimal, "-" for one not read)."""
    probe.seq += 1
    probe.full = probe.seq % probe.full_every == 1 or probe.full_every == 1
    out = pf.Sections(1 << 20, 1 << 24)
    eth_names = [b"e%d" % i for i in range(len(eth))]
    pf.Probe.values(probe, out, "ethtool_S", "eth0", 7, eth_names, eth, None)
    sys_names = [b"eth0/statistics/c%d" % i for i in range(len(sysfs))]
    pf.Probe.values(probe, out, "sysnet_counters", "-", 7, sys_names, sysfs, [b" ".join(sysfs)])
    head = b"@@fabtop-frame %d 1 1.00 1.000" % probe.seq
    return b"\n".join([head, *out.out, b"@@end %d" % probe.seq, b""])


def _placed(frame: Frame, kind: str) -> list[int | None] | None:
    sec = frame.find(kind)
    assert sec is not None and sec.values is not None
    return sec.values.vals


def _sysfs_truth(raw: list[bytes]) -> list[int | None]:
    return [None if v == b"-" else int(v) for v in raw]


_U64 = st.integers(0, U64_MAX)


@st.composite
def _ticks(draw: st.DrawFn) -> list[tuple[tuple[int, ...], list[bytes]]]:
    """Consecutive readings of one port: each tick moves a few counters, or many."""
    n_eth, n_sys = draw(st.integers(1, 40)), draw(st.integers(1, 20))
    eth = draw(st.lists(_U64, min_size=n_eth, max_size=n_eth))
    sysfs = [str(v).encode() for v in draw(st.lists(_U64, min_size=n_sys, max_size=n_sys))]
    out = [(tuple(eth), list(sysfs))]
    for _ in range(draw(st.integers(1, 14))):
        for i in draw(st.lists(st.integers(0, n_eth - 1), max_size=n_eth)):
            eth[i] = draw(_U64)
        for i in draw(st.lists(st.integers(0, n_sys - 1), max_size=n_sys)):
            sysfs[i] = draw(st.sampled_from([b"-", str(draw(_U64)).encode()]))
        out.append((tuple(eth), list(sysfs)))
    return out


@settings(max_examples=150, deadline=None)
@given(_ticks(), st.integers(1, 6))
def test_every_value_placed_is_the_value_the_probe_read(
    ticks: list[tuple[tuple[int, ...], list[bytes]]], full_every: int
) -> None:
    probe, dec = _probe(full_every), FrameDecoder()
    for eth, sysfs in ticks:
        (frame,) = dec.feed(_frame(probe, eth, sysfs))
        assert _placed(frame, "ethtool_S") == list(eth)
        assert _placed(frame, "sysnet_counters") == _sysfs_truth(sysfs)
    assert dec.take_warnings() == []


def test_deltas_go_between_whole_frames_and_are_smaller() -> None:
    probe, dec = _probe(5), FrameDecoder()
    eth = list(range(1000, 1300))
    sizes = []
    for t in range(11):
        eth[t] += 7  # one counter moves a tick
        wire = _frame(probe, tuple(eth), [b"%d" % t, b"0"])
        sizes.append(len(wire))
        (frame,) = dec.feed(wire)
        assert _placed(frame, "ethtool_S") == eth
        # the decoder hides how the values came: no base=, no enc= (the shape keys on it)
        assert frame.find("ethtool_S").detail == "schema=1"  # type: ignore[union-attr]
    assert "base=" not in wire.decode()  # tick 11 (seq 11) is whole again
    whole, delta = sizes[0], sizes[1]
    assert delta * 8 < whole, sizes


def test_a_delta_whose_base_the_decoder_lost_is_not_placed_until_values_come_whole() -> None:
    probe, dec = _probe(4), FrameDecoder()
    rng = random.Random(3)
    eth = [rng.randrange(1 << 40) for _ in range(50)]
    seen: list[list[int | None] | None] = []
    for t in range(10):
        eth[t % 50] += 1
        wire = _frame(probe, tuple(eth), [b"%d" % t])
        if t == 2:
            continue  # lost on the way (a frame over the decoder's cap, garbage)
        (frame,) = dec.feed(wire)
        got = _placed(frame, "ethtool_S")
        assert got is None or got == eth  # never a wrong value
        seen.append(got)
        if got is None:
            sec = frame.find("ethtool_S")
            assert sec is not None and sec.values is not None
            assert sec.values.warnings == [
                "values against frame 3, which this stream did not place: section not "
                "placed until its values come whole"
            ]
    # whole at seq 1, 5, 9; seq 3 lost: seq 4 (a delta against 3) not placed, 5 whole
    assert [v is not None for v in seen] == [True, True, False, True, True, True, True, True, True]


def _last(vals: list[int | None]) -> Values:
    return Values(vals, [], (), None, None, None, False)


def test_hostile_deltas_cost_their_section_and_say_why() -> None:
    names = tuple(f"c{i}" for i in range(5))
    last = _last([10, 20, 30, 40, 50])
    cases = {
        "3 1 2 2": "out of order",  # positions must rise
        "2 1 2 5": "out of order",  # repeated
        "1 1 9 5": "out of order or range",  # beyond the schema
        "1 1 2": "not pairs",
        "x 1": "outside",
        "+1 5": "outside",
        "1_0 5": "outside",
        "1 5 " + "9" * 5000 + " 1": "outside",
    }
    for text, why in cases.items():
        got = apply_delta(text, names, last)
        assert got.vals is None and why in got.warnings[0], (text, got.warnings)
        assert "section not placed" in got.warnings[0]
    # A bad value costs that value, said by name; the rest are placed.
    got = apply_delta("1 x 3 " + str(2**64) + " 4 -", names, last)
    assert got.vals == [10, None, 30, None, None]
    assert got.warnings == ["c1: bad value 'x'", "c3: bad value '18446744073709551616'"]
    assert got.unread == (1, 3, 4) and got.moved == [1, 3, 4]
    got = apply_delta("0 7 2 " + str(2**64), names, last)  # plain digits, one too large
    assert got.vals == [7, 20, None, 40, 50]
    assert got.warnings == ["c2: value beyond 64 bits"] and got.unread == (2,)
    assert last.vals == [10, 20, 30, 40, 50]  # what it was read against is not changed


def test_hostile_binary_values_cost_their_section() -> None:
    names = tuple(f"c{i}" for i in range(4))
    last = _last([1, 2, 3, 4])
    good = encode_whole_b64([5, 6, 7, U64_MAX])
    assert decode_whole_b64(good, names, last).vals == [5, 6, 7, U64_MAX]
    assert decode_whole_b64(good, names, last).moved == [0, 1, 2, 3]
    for text in (good[:-4], good + "AAAA", "!!!!", good.replace("A", "é", 1), "AAA"):
        got = decode_whole_b64(text, names, last)
        assert got.vals is None and "section not placed" in got.warnings[0], text
    assert apply_delta_b64(encode_delta_b64([1, 3], [9, 9]), names, last).vals == [1, 9, 3, 9]
    for pos in ([3, 1], [1, 1], [4], [2**31]):
        got = apply_delta_b64(encode_delta_b64(pos, [0] * len(pos)), names, last)
        assert got.vals is None and "out of order or range" in got.warnings[0], pos
    got = apply_delta_b64(encode_delta_b64([1], [9])[:-4], names, last)
    assert got.vals is None and "not position-value pairs" in got.warnings[0]


def test_a_delta_with_a_bad_base_or_for_an_unknown_section_is_not_placed() -> None:
    probe, dec = _probe(100), FrameDecoder()
    eth = (1, 2, 3)
    for _ in range(2):
        dec.feed(_frame(probe, eth, [b"1"]))
    wire = _frame(probe, (1, 2, 4), [b"1"]).decode()
    assert "base=2" in wire
    # d2 placed only frame 1: frame 2 is a base it never saw
    for bad in ("base=2", "base=3", "base=x", "base=" + "9" * 40, "base=", "base=01"):
        spoiled = wire.replace("base=2", bad, 1).encode() if bad != "base=2" else wire.encode()
        d2 = FrameDecoder()
        d2.feed(_frame(_probe(1), eth, [b"1"]))  # one whole frame, seq 1
        (frame,) = d2.feed(spoiled)
        sec = frame.find("ethtool_S")
        assert sec is not None and sec.values is not None and sec.values.vals is None, bad
        assert "did not place" in sec.values.warnings[0]


def test_a_recording_of_a_delta_stream_replays_on_its_own() -> None:
    """A recording that starts mid-stream writes each frame whole, in decimal: each frame
    decodes with a fresh decoder to the values the live stream placed."""
    probe, dec = _probe(10), FrameDecoder()
    eth = [7] * 30
    for t in range(6):
        eth[t] = 1000 + t
        (frame,) = dec.feed(_frame(probe, tuple(eth), [b"-", b"%d" % t]))
        text = render_frame(frame, schemas=True)
        assert "base=" not in text and "enc=" not in text
        (again,) = FrameDecoder().feed(text.encode())
        assert _placed(again, "ethtool_S") == eth
        assert _placed(again, "sysnet_counters") == [None, t]


def test_a_host_read_from_deltas_is_the_host_read_from_whole_values() -> None:
    """The same frames of a simulated 2-port mlx5 + IB host, sent whole every tick and as
    the fast probe sends them (deltas, binary ethtool): the same samples, tick by tick."""
    from collectors.assemble import assemble
    from collectors.structured import StructuredEncoder
    from fabtop.sim import Fabric, SimHostConfig

    fab = Fabric(
        [SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=2), SimHostConfig("n2")], seed=5
    )
    text_dec = FrameDecoder()
    whole = (StructuredEncoder(full_every=1), FrameDecoder(), {})
    delta = (StructuredEncoder(), FrameDecoder(), {})
    deltas = 0
    for i in range(35):
        for f in text_dec.feed(fab.hosts["n1"].frame(30.0 + i, 1.0).encode()):
            got = []
            for enc, dec, shapes in (whole, delta):
                wire = render_frame(enc.encode(f))
                deltas += "base=" in wire
                (g,) = dec.feed(wire.encode())
                got.append(repr(assemble("n1", g, shapes)))
            assert got[0] == got[1], i
    assert deltas > 25


def test_a_schema_id_defined_again_is_not_a_base_for_a_delta() -> None:
    """A stream that defines an id again with other names: a delta against the values of
    the old names is not placed (no value is put where another name was)."""
    dec = FrameDecoder()
    head = "@@fabtop-frame {seq} 1 1.00 1.000\n"
    dec.feed(
        (
            head.format(seq=1) + "@@section schema 1 - ok for=ethtool_S\na\nb\n"
            "@@section ethtool_S eth0 5 ok schema=1\n10 20\n@@end 1\n"
        ).encode()
    )
    (frame,) = dec.feed(
        (
            head.format(seq=2) + "@@section schema 1 - ok for=ethtool_S\n"
            "a\nb\nc\nd\n@@section ethtool_S eth0 5 ok schema=1 base=1\n3 7\n"
            "@@end 2\n"
        ).encode()
    )
    vals = frame.find("ethtool_S").values  # type: ignore[union-attr]
    assert vals is not None and vals.vals is None
    assert "did not place" in vals.warnings[0]


def test_the_values_kept_for_deltas_are_bounded(monkeypatch: Any) -> None:
    """A stream that sends values for ever more sections cannot make the decoder keep
    them all: past the bound they are still placed whole, and said once."""
    from collectors import frames as fr

    monkeypatch.setattr(fr, "MAX_KEPT_VALUES", 100)
    dec = FrameDecoder()
    text = "@@fabtop-frame 1 1 1.00 1.000\n@@section schema 1 - ok for=ethtool_S\n"
    text += "\n".join(f"c{i}" for i in range(30)) + "\n"
    for i in range(10):
        text += f"@@section ethtool_S eth{i} 5 ok schema=1\n" + " ".join(["7"] * 30) + "\n"
    (frame,) = dec.feed((text + "@@end 1\n").encode())
    assert all(s.values is not None and s.values.vals == [7] * 30 for s in frame.all("ethtool_S"))
    assert dec._kept_values <= 100 and len(dec._values) == 3
    said = dec.take_warnings()
    assert len(said) == 1 and "not kept for a delta" in said[0]
    (frame,) = dec.feed(
        b"@@fabtop-frame 2 1 1.00 1.000\n"
        b"@@section ethtool_S eth1 5 ok schema=1 base=1\n0 8\n"
        b"@@section ethtool_S eth9 5 ok schema=1 base=1\n0 8\n@@end 2\n"
    )
    eth1, eth9 = frame.all("ethtool_S")
    assert eth1.values is not None and eth1.values.vals == [8] + [7] * 29
    assert eth9.values is not None and eth9.values.vals is None
