"""The frame decoder: what the probe's stream becomes, however SSH chunks it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import frames
from collectors.frames import Frame, FrameDecoder, Section, render_frame


def _frame(seq: int, *sections: Section) -> Frame:
    return Frame(
        seq, 1_700_000_000_000_000_000 + seq * 10**9, 100.0 + seq, 1.7e9 + seq, list(sections)
    )


TRICKY = Section(
    "ethtool_S",
    "eth0",
    5,
    "ok",
    None,
    "NIC statistics:\n     rx_bytes_phy: 1\n@@end 1\n@@@already\n@@fabtop-frame 9 9 9 9\n",
)


def test_render_then_decode_keeps_every_content_line() -> None:
    f = _frame(
        1,
        TRICKY,
        Section("probe", None, None, "ok", None, "interval_ms 1000"),
        Section("dcb_pfc", "eth0", 7, "error", "rc=1", "Attribute read: nope"),
    )
    (back,) = FrameDecoder().feed(render_frame(f).encode())
    assert (back.seq, back.clock_ns, back.uptime_s) == (1, f.clock_ns, 101.0)
    eth = back.find("ethtool_S", "eth0")
    assert eth is not None and eth.text == TRICKY.text.rstrip("\n") + "\n"
    err = back.find("dcb_pfc")
    assert err is not None and (err.status, err.detail, err.read_ns) == ("error", "rc=1", 7)
    probe = back.find("probe")
    assert probe is not None and probe.subject is None and probe.read_ns is None


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=40))
def test_any_chunking_gives_the_same_frames(cuts: list[int]) -> None:
    data = b"".join(render_frame(_frame(i, TRICKY)).encode() for i in range(1, 4))
    whole = FrameDecoder().feed(data)
    d = FrameDecoder()
    got: list[Frame] = []
    prev = 0
    for c in sorted({min(c, len(data)) for c in cuts} | {len(data)}):
        got += d.feed(data[prev:c])
        prev = c
    assert [(f.seq, [(s.kind, s.text) for s in f.sections]) for f in got] == [
        (f.seq, [(s.kind, s.text) for s in f.sections]) for f in whole
    ]
    assert [f.seq for f in whole] == [1, 2, 3]


def test_garbage_truncation_and_bad_bytes_are_warnings_not_errors() -> None:
    d = FrameDecoder()
    good = render_frame(_frame(2, Section("sysnet", None, 1, "ok", None, "eth0/mtu 9000")))
    stream = (
        b"Welcome to node1!\r\n"  # a chatty login banner before the probe starts
        + b"@@fabtop-frame 1 1 1 1\n@@section sysnet - 1 ok\neth0/mtu 1500\n"  # no @@end
        + good.encode()
        + b"@@fabtop-frame 3 x y z\n"  # a bad header
        + b"@@section ethtool_S eth0 1 ok\nrx_\xff\xfe: 5\r\n@@end 3\n"
    )
    out = d.feed(stream)
    assert [f.seq for f in out] == [2]
    sec = out[0].find("sysnet")
    assert sec is not None and sec.text == "eth0/mtu 9000"
    warnings = d.take_warnings()
    assert any("outside a frame" in w and "Welcome" in w for w in warnings)
    assert any("frame 1 truncated" in w for w in warnings)
    assert any("bad frame header" in w for w in warnings)
    assert d.take_warnings() == []
    # Bad bytes spoil only their own line: the next frame still decodes.
    (f4,) = d.feed(b"@@fabtop-frame 4 4 4 4\n@@section x - 1 ok\nr\xffx: 1\r\n@@end 4\n")
    sec4 = f4.find("x")
    assert sec4 is not None and sec4.text == "r\ufffdx: 1"


def test_oversized_frame_and_endless_line_are_dropped_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(frames, "MAX_FRAME_BYTES", 1000)
    monkeypatch.setattr(frames, "MAX_LINE_BYTES", 500)
    d = FrameDecoder()
    head = b"@@fabtop-frame 1 1 1 1\n@@section s - 1 ok\n" + b"x" * 100 + b"\n"
    assert d.feed(head + (b"y" * 100 + b"\n") * 20 + b"@@end 1\n") == []
    assert any("larger than 1000 bytes dropped" in w for w in d.take_warnings())
    assert d.feed(b"z" * 600) == []  # no newline yet, and already too long
    assert any("longer than 500 bytes" in w for w in d.take_warnings())
    (ok,) = d.feed(b"zzz\n" + render_frame(_frame(2)).encode())
    assert ok.seq == 2


def test_a_truncated_section_keeps_its_text_detail_and_the_rest_of_the_frame() -> None:
    # What the probe sends when a tool printed past the section cap before its timeout.
    wire = (
        "@@fabtop-frame 3 1700000000000000000 12.50 1700000000.000\n"
        "@@section ethtool_S eth0 1700000000000000000 truncated section cap 8388608 bytes;"
        " timeout after 2s\n"
        "NIC statistics:\n     rx_bytes_phy: 12\n"
        "@@section sysnet - 1700000000000000000 ok\neth0/mtu 1500\n"
        "@@section probe - 1700000000000000000 ok\ninterval_ms 1000\n"
        "@@end 3\n"
    )
    decoder = FrameDecoder()
    (frame,) = decoder.feed(wire.encode())
    assert decoder.take_warnings() == []
    eth = frame.find("ethtool_S", "eth0")
    assert eth is not None and eth.status == "truncated" and eth.status in frames.SECTION_STATUSES
    assert eth.detail == "section cap 8388608 bytes; timeout after 2s"
    assert eth.text == "NIC statistics:\n     rx_bytes_phy: 12"
    assert [s.kind for s in frame.sections] == ["ethtool_S", "sysnet", "probe"]
    (again,) = FrameDecoder().feed(render_frame(frame).encode())
    assert again.find("ethtool_S", "eth0") == eth


def test_crlf_bodies_and_schemas_decode_as_lf_however_chunked() -> None:
    # Section bodies are taken whole between control lines (issue 13): a stream through
    # a pty ends its lines in \r\n, and each line loses its \r as it did line by line.
    lf = (
        b"@@fabtop-frame 1 5 1.0 1.0\n@@section schema 4 - ok for=ethtool_S\n"
        b"rx_bytes\ntx_bytes\n@@section ethtool_S eth0 5 ok schema=4\n7 9\n"
        b"@@section sysnet - 5 ok\neth0/mtu 9000\neth0/operstate up\n@@@x\n\n@@end 1\n"
    )
    crlf = lf.replace(b"\n", b"\r\n")
    for data in (lf, crlf):
        for cut in range(len(data) + 1):
            d = FrameDecoder()
            (f,) = d.feed(data[:cut]) + d.feed(data[cut:])
            eth, net = f.find("ethtool_S", "eth0"), f.find("sysnet")
            assert eth is not None and eth.schema is not None and net is not None
            assert eth.schema.names == ("rx_bytes", "tx_bytes") and eth.text == "7 9"
            assert net.text == "eth0/mtu 9000\neth0/operstate up\n@@x\n"
            assert d.take_warnings() == []


_HOSTILE_LINES = st.sampled_from(
    [
        "@@fabtop-frame 1 1 1 1",
        "@@fabtop-event 2 2 2 2",
        "@@fabtop-frame x",
        "@@end 1",
        "@@end",
        "@@section sysnet - 5 ok",
        "@@section\tx\x0by 1 ok rc=1",
        "@@section x - 1 ok schema=1",
        "@@section schema 1 - ok for=x",
        "@@section schema 2 - truncated for=x",
        "@@",
        "@@bogus",
        "@@@escaped",
        "@@@",
        "@",
        " @@section x",
        "",
        "a\tb",
        "rx: 1",
        "1 2 -",
        "\x1b[31m\x00",
        "é",
        "x" * 70,
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(
        st.tuples(_HOSTILE_LINES, st.sampled_from(["\n", "\r\n", "\r\r\n"])), max_size=40
    ),
    bad=st.booleans(),
)
def test_hostile_streams_decode_the_same_whole_or_byte_by_byte(
    lines: list[tuple[str, str]], bad: bool
) -> None:
    """Control lines, escapes, CR, odd whitespace, bad bytes: every chunking, one result."""
    data = "".join(a + b for a, b in lines).encode() + (b"r\xff\n" if bad else b"")

    def run(chunks: list[bytes]) -> tuple[object, ...]:
        d = FrameDecoder()
        got = [f for c in chunks for f in d.feed(c)]
        return (
            [
                (
                    f.seq,
                    f.event,
                    [
                        (
                            s.kind,
                            s.subject,
                            s.read_ns,
                            s.status,
                            s.detail,
                            s.text,
                            s.schema and s.schema.names,
                        )
                        for s in f.sections
                    ],
                )
                for f in got
            ],
            d.take_warnings(),
            sorted(d.schemas),
        )

    whole = run([data])
    assert run([data[i : i + 1] for i in range(len(data))]) == whole
    assert run(data.splitlines(keepends=True)) == whole
