"""Structured values on the wire: whole in every frame, decimal or binary (collectors/values.py).

The fast probe's own encoder (``collectors.probe_fast.Encoder``) makes the frames here, and
the stream's decoder reads them: every value placed is the value the probe had; hostile
binary values cost their section, never the stream; a recorded frame decodes on its own.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import probe_fast as pf
from collectors.frames import Frame, FrameDecoder, render_frame
from collectors.numbers import U64_MAX
from collectors.values import decode_whole_b64


class _Stream:
    """The probe's encoder and its frames (what Probe.frame writes of its counters)."""

    def __init__(self) -> None:
        self.enc = pf.Encoder()
        self.seq = 0

    def frame(self, eth: tuple[int, ...], sysfs: list[bytes]) -> bytes:
        """An ethtool section (ints, from the ioctl: binary) and a sysfs counters section
        (file contents: decimal, "-" for one not read)."""
        self.seq += 1
        out = pf.Sections(1 << 20, 1 << 24)
        eth_names = [b"e%d" % i for i in range(len(eth))]
        self.enc.values(out, "ethtool_S", "eth0", 7, eth_names, pf.b64_rows(eth), True)
        sys_names = [b"eth0/statistics/c%d" % i for i in range(len(sysfs))]
        self.enc.values(out, "sysnet_counters", "-", 7, sys_names, pf.decimal_rows(sysfs))
        head = b"@@fabtop-frame %d 1 1.00 1.000" % self.seq
        return b"\n".join([head, *out.out, b"@@end %d" % self.seq, b""])


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
    n_eth, n_sys = draw(st.integers(1, 40)), draw(st.integers(1, 600))
    eth = draw(st.lists(_U64, min_size=n_eth, max_size=n_eth))
    sysfs = [str(v).encode() for v in draw(st.lists(_U64, min_size=n_sys, max_size=n_sys))]
    out = [(tuple(eth), list(sysfs))]
    for _ in range(draw(st.integers(1, 6))):
        for i in draw(st.lists(st.integers(0, n_eth - 1), max_size=n_eth)):
            eth[i] = draw(_U64)
        for i in draw(st.lists(st.integers(0, n_sys - 1), max_size=8)):
            sysfs[i] = draw(st.sampled_from([b"-", str(draw(_U64)).encode()]))
        out.append((tuple(eth), list(sysfs)))
    return out


@settings(max_examples=100, deadline=None)
@given(_ticks())
def test_every_value_placed_is_the_value_the_probe_read(
    ticks: list[tuple[tuple[int, ...], list[bytes]]],
) -> None:
    stream, dec = _Stream(), FrameDecoder()
    for eth, sysfs in ticks:
        (frame,) = dec.feed(stream.frame(eth, sysfs))
        assert _placed(frame, "ethtool_S") == list(eth)
        assert _placed(frame, "sysnet_counters") == _sysfs_truth(sysfs)
        # the decoder hides how the values came: no enc= (the shape keys on the detail)
        assert frame.find("ethtool_S").detail == "schema=1"  # type: ignore[union-attr]
    assert dec.take_warnings() == []


def test_hostile_binary_values_cost_their_section() -> None:
    names = tuple(f"c{i}" for i in range(4))
    good = b"".join(pf.b64_rows([5, 6, 7, U64_MAX])).decode()
    assert decode_whole_b64(good, names).vals == [5, 6, 7, U64_MAX]
    for text in (good[:-4], good + "AAAA", "!!!!", good.replace("A", "é", 1), "AAA", ""):
        got = decode_whole_b64(text, names)
        assert got.vals is None and got.warnings, text
        assert "section not placed" in got.warnings[0] or "no values" in got.warnings[0]


def test_a_recorded_frame_decodes_on_its_own() -> None:
    """A recording writes each frame with its schemas and its values in decimal: each frame
    decodes with a fresh decoder to the values the live stream placed."""
    stream, dec = _Stream(), FrameDecoder()
    eth = [7] * 30
    for t in range(6):
        eth[t] = 1000 + t
        (frame,) = dec.feed(stream.frame(tuple(eth), [b"-", b"%d" % t]))
        text = render_frame(frame, schemas=True)
        assert "enc=" not in text
        (again,) = FrameDecoder().feed(text.encode())
        assert _placed(again, "ethtool_S") == eth
        assert _placed(again, "sysnet_counters") == [None, t]
