"""A frame written against its host's earlier frames (fabtop.rec/3) reads back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabtop.run import frame_delta
from fabtop.run.frame_delta import FrameBases

# Tokens a frame's lines are made of: counters, text, what looks like a number and is not
# one (leading zeros, a sign, a float, too many digits), and what looks like a marker.
TOKEN = st.one_of(
    st.integers(0, 10**25).map(str),
    st.sampled_from(["", "ok", "-", "0007", "+5", "-3", "1.50", "9" * 31, "^2", "=x"]),
    st.text("ab@=~>!^- 0123456789", max_size=6),
)
LINE = st.one_of(
    st.lists(TOKEN, min_size=1, max_size=8).map(" ".join),
    st.sampled_from(["@@=3", "@@>x y", "@@~1 2", "@@!", "@@@section looks like one", "@@"]),
)
SECTION = st.tuples(
    st.sampled_from(["ethtool_S", "sysnet", "schema", "gpu_nvidia", "a#1"]),
    st.sampled_from(["-", "eth0", "eth1", "1", "x 1"]),
    st.lists(LINE, max_size=6),
)


def render(seq: int, clock: int, sections: list[tuple[str, str, list[str]]]) -> str:
    out = [f"@@fabtop-frame {seq} {clock} {seq}.50 {clock // 10**9}.000"]
    for kind, subject, lines in sections:
        out.append(f"@@section {kind} {subject} {clock} ok")
        out += lines
    out.append(f"@@end {seq}")
    return "\n".join(out) + "\n"


def moved(lines: list[str], bump: int) -> list[str]:
    """The same lines with every plain number moved on, as counters move."""
    return [
        " ".join(str(int(t) + bump) if t.isdigit() and t[0] != "0" else t for t in ln.split(" "))
        for ln in lines
    ]


FRAMES = st.lists(
    st.tuples(
        st.sampled_from(["n1", "n2"]),
        st.lists(SECTION, max_size=5),
        st.integers(0, 3),  # how many of the host's last sections come again, moved on
        st.integers(0, 10**6),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(FRAMES)
def test_every_frame_reads_back_as_written(frames: list) -> None:  # type: ignore[type-arg]
    writer, reader = FrameBases(), FrameBases()
    last: dict[str, list[tuple[str, str, list[str]]]] = {}
    for seq, (host, new, again, bump) in enumerate(frames):
        old = [(k, s, moved(ls, bump)) for k, s, ls in last.get(host, [])[:again]]
        sections = old + new
        last[host] = sections
        text = render(seq, 1_700_000_000_000_000_000 + seq * 10**9, sections)
        body = writer.encode(host, text)
        assert reader.decode(host, body) == text


def test_a_frame_like_the_last_is_a_few_bytes_and_counters_their_differences() -> None:
    values = [" ".join(str(10**9 + i) if i % 3 else "0" for i in range(60)), "rx_bytes: 1000"]
    sysnet = [f"eth{i}/mtu 9000" for i in range(20)]
    w, r = FrameBases(), FrameBases()
    first = render(1, 10**18, [("ethtool_S", "eth0", values), ("sysnet", "-", sysnet)])
    assert w.encode("n1", first) == first  # nothing to write it against yet
    r.decode("n1", first)
    nxt = render(
        2, 10**18 + 10**9, [("ethtool_S", "eth0", moved(values, 7)), ("sysnet", "-", sysnet)]
    )
    body = w.encode("n1", nxt)
    assert "rx_bytes" not in body and "mtu 9000" not in body
    assert not any(t in body for t in moved(values, 7)[0].split(" ") if len(t) > 3)
    assert len(body) < len(nxt) / 4
    assert r.decode("n1", body) == nxt


@pytest.mark.parametrize(
    "body",
    [
        "@@>ethtool_S eth9\n@@=1",  # no such earlier section
        "@@>ethtool_S eth0\n@@=99",  # a run past it
        "@@>ethtool_S eth0\n@@=0",
        "@@>ethtool_S eth0\n@@=1\n@@~1 2 3",  # tokens that do not match the earlier line
        "@@>ethtool_S eth0\n@@=1\n@@~^9 1 1 1 1",  # a reference before the frame's first
        "@@>ethtool_S eth0\n@@=1\n@@~-2000 1 1 1 1",  # a counter below zero
        "@@>ethtool_S eth0\n@@=1\n@@~" + "9" * 40 + " 1 1 1 1",  # beyond any counter
        "@@>ethtool_S eth0\n@@=1\n@@~x 1 1 1 1",
        "@@>ethtool_S eth0\n@@>ethtool_S eth0",  # the same section twice
        "@@=1",  # a run with nothing to run on
        "@@~5",
    ],
)
def test_a_body_no_recorder_writes_is_a_value_error(body: str) -> None:
    w, r = FrameBases(), FrameBases()
    first = render(1, 10**18, [("ethtool_S", "eth0", ["1000 0 5 77 0"])])
    r.decode("n1", w.encode("n1", first))
    with pytest.raises(ValueError):
        r.decode("n1", body)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["@@>", "@@=", "@@~", "@@!", "^", "=", " ", "\n", "1", "9", "-"])))
def test_garbage_is_a_value_error_or_a_bounded_text(parts: list[str]) -> None:
    w, r = FrameBases(), FrameBases()
    first = render(1, 10**18, [("ethtool_S", "eth0", ["1000 0 5 77 0"])])
    r.decode("n1", w.encode("n1", first))
    body = "@@>ethtool_S eth0\n" + "".join(parts)
    try:
        text = r.decode("n1", body)
    except ValueError:
        return
    assert len(text) <= len(first) + len(body) * (frame_delta.MAX_DIGITS + 1)


def test_bases_past_the_bound_are_forgotten_on_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_delta, "MAX_BASE_BYTES", 3000)
    w, r = FrameBases(), FrameBases()
    for seq in range(40):
        for host in ("n1", "n2", "n3"):
            text = render(seq, 10**18 + seq, [("sysnet", "-", [f"{host} {seq} 1"] * 5)])
            body = w.encode(host, text)
            assert r.decode(host, body) == text
    assert w._bytes <= 3000 and r._bytes == w._bytes


def test_a_section_gone_longer_than_the_bound_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_delta, "FORGET_FRAMES", 10)
    w, r = FrameBases(), FrameBases()
    slow = ("ethtool_i", "eth0", ["driver: mlx5_core", "firmware-version: 22.36"])
    for seq in range(200):
        sections = [("sysnet", "-", [f"eth0/mtu {9000 + seq}"])] + ([slow] if seq == 0 else [])
        text = render(seq, 10**18 + seq, sections)
        assert r.decode("n1", w.encode("n1", text)) == text
    assert "ethtool_i eth0" not in w._hosts["n1"].bases
    back = render(200, 10**18 + 200, [slow])
    assert "driver: mlx5_core\nfirmware-version: 22.36" in w.encode("n1", back)  # whole again
