"""Structured frames: schemas sent once, values by position, the same samples as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import MAX_SCHEMAS, Frame, FrameDecoder, Section, render_frame
from collectors.samples import HostSample
from collectors.structured import StructuredEncoder
from collectors.text import has_control
from collectors.values import decode_values
from fabtop.config import Config, HostConfig
from fabtop.core.pipeline import Pipeline
from fabtop.run.record import Recorder, RecordingReader, decode_frame
from fabtop.sim import Fabric, SimHostConfig

HEAD = "@@fabtop-frame {seq} {ns} 100.00 1700000000.000\n"


def _sim_text(ticks: int) -> list[str]:
    fab = Fabric([SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=2), SimHostConfig("n2")])
    return [fab.hosts["n1"].frame(30.0 + i, 1.0) for i in range(ticks)]


def _structured(texts: list[str]) -> list[str]:
    dec, enc = FrameDecoder(), StructuredEncoder()
    return [render_frame(enc.encode(f)) for t in texts for f in dec.feed(t.encode())]


def _same(a: HostSample, b: HostSample) -> None:
    assert a.links.keys() == b.links.keys()
    for k, la in a.links.items():
        lb = b.links[k]
        assert la.counters == lb.counters, k
        assert la.metrics == lb.metrics, k
        assert (la.state, la.mtu, la.rate_gbps, la.read_ns) == (
            lb.state,
            lb.mtu,
            lb.rate_gbps,
            lb.read_ns,
        )
    assert a.warnings == b.warnings


def test_structured_frames_give_the_text_frames_samples_in_a_third_of_the_bytes() -> None:
    texts = _sim_text(6)
    wire = _structured(texts)
    d_text, d_wire, carry = FrameDecoder(), FrameDecoder(), Pipeline()
    for t, w in zip(texts, wire, strict=True):
        (ft,) = d_text.feed(t.encode())
        (fw,) = d_wire.feed(w.encode())
        # The slow files come on slow frames only, as the fast probe sends them: the
        # collector carries the latest into the frames between.
        _same(assemble("n1", ft), assemble("n1", carry.with_slow_sections("n1", fw)))
    assert d_wire.take_warnings() == []
    assert "/ecn/roce_np/enable/3 1" in wire[0].split("@@section sysnet_slow")[1]
    assert "/ecn/roce_np/enable/3" not in wire[1] and "fw_ver" not in wire[1]
    # Schemas go with the first frame only; later frames carry values.
    assert "@@section schema" in wire[0] and "@@section schema" not in wire[1]
    assert len(wire[1]) < len(texts[1]) / 2
    counters = assemble("n1", FrameDecoder().feed(wire[0].encode())[0])
    assert sum(len(c) for ln in counters.links.values() for c in ln.counters.values()) > 500


def test_slow_files_changed_between_slow_frames_are_sent_at_once() -> None:
    """The simulated fast probe sends the slow files (ECN enables, PCIe link, firmware) on
    slow frames and, unlike the node's probe, again whenever one changed: a simulated
    fault shows on its tick."""
    fab = Fabric.single(
        [SimHostConfig("n1", roce_ports=1), SimHostConfig("n2")],
        "no_ecn",
        target="n1",
        start_s=33.0,
    )
    host = fab.hosts["n1"]
    dec, enc, pipe = FrameDecoder(), StructuredEncoder(), Pipeline()
    got = []
    for i in range(5):
        (f,) = dec.feed(host.frame(30.0 + i, 1.0).encode())
        w = render_frame(enc.encode(f))
        sample, _ = pipe.apply_frame("n1", FrameDecoder().feed(w.encode())[0])
        qos = sample.links["enp65s0f0np0"].qos
        got.append(("@@section sysnet_slow" in w, qos.ecn_np_enabled if qos else None))
    on, off = tuple(range(8)), ()
    assert got == [(True, on), (False, on), (False, on), (True, off), (False, off)]


def _ethtool_frame(seq: int, body: str) -> Frame:
    text = (
        HEAD.format(seq=seq, ns=seq * 10**9)
        + f"@@section sysnet - {seq * 10**9} ok\neth0/mtu 9000\n"
        + f"@@section ethtool_S eth0 {seq * 10**9} ok\n{body}\n@@end {seq}\n"
    )
    return FrameDecoder().feed(text.encode())[0]


def test_a_capture_round_trips_and_new_names_get_a_new_schema(fixtures_dir: Path) -> None:
    """mlx5 adds names when PFC is switched on: the names go again, under a new id."""
    capture = fixtures_dir / "ethtool" / "ethtool_S_ice_e810_25g_sfp_go-ethtool-metrics.txt"
    body = capture.read_text()
    enc, dec = StructuredEncoder(), FrameDecoder()
    first = render_frame(enc.encode(_ethtool_frame(1, body)))
    grown = body + "\n     rx_prio3_pause: 17\n     tx_prio3_pause: 4"
    second = render_frame(enc.encode(_ethtool_frame(2, grown)))
    third = render_frame(enc.encode(_ethtool_frame(3, grown)))
    assert "for=ethtool_S" in first and "for=ethtool_S" in second
    assert "@@section schema" not in third
    samples = [assemble("n1", f) for w in (first, second, third) for f in dec.feed(w.encode())]
    text = assemble("n1", _ethtool_frame(2, grown))
    assert samples[1].links["eth0"].counters == text.links["eth0"].counters
    assert samples[2].links["eth0"].counters["ethtool"]["rx_prio3_pause"] == 17
    assert len(samples[0].links["eth0"].counters["ethtool"]) > 50


def _wire(names: list[str], values: str, kind: str = "ethtool_S") -> str:
    return (
        HEAD.format(seq=1, ns=10**9)
        + f"@@section schema 4 - ok for={kind}\n"
        + "\n".join(names)
        + "\n"
        + f"@@section {kind} eth0 1000000000 ok schema=4\n{values}\n"
        + "@@section sysnet - 1000000000 ok\neth0/mtu 9000\n@@end 1\n"
    )


def _one(wire: str) -> tuple[HostSample, FrameDecoder]:
    dec = FrameDecoder()
    (frame,) = dec.feed(wire.encode())
    return assemble("n1", frame), dec


def test_a_bad_value_costs_that_counter_and_names_it() -> None:
    names = ["rx_bytes", "tx_bytes", "rx_prio3_pause"]
    for bad in ("12a", "1" * 5000, "+5", "18446744073709551616", "-1", "٣"):
        sample, _ = _one(_wire(names, f"100 {bad} 7"))
        got = sample.links["eth0"].counters["ethtool"]
        assert got == {"rx_bytes": 100, "rx_prio3_pause": 7}, bad
        assert any("tx_bytes" in w for w in sample.warnings), (bad, sample.warnings)
        assert sample.links["eth0"].mtu == 9000


def test_a_count_that_does_not_match_costs_the_section_only() -> None:
    sample, _ = _one(_wire(["rx_bytes", "tx_bytes"], "1 2 3"))
    assert "ethtool" not in sample.links["eth0"].counters
    assert any("3 values for 2 names" in w for w in sample.warnings)
    assert sample.links["eth0"].mtu == 9000


def test_values_for_a_schema_never_sent_are_an_error_not_text() -> None:
    wire = (
        HEAD.format(seq=1, ns=10**9)
        + "@@section ethtool_S eth0 1 ok schema=99\n1 2 3\n"
        + "@@section sysnet - 1 ok\neth0/mtu 1500\n@@end 1\n"
    )
    sample, _ = _one(wire)
    sec = next(s for s in sample.sections if s.kind == "ethtool_S")
    assert sec.status == "error" and "does not hold" in (sec.detail or "")
    assert "ethtool" not in sample.links["eth0"].counters
    assert any("ethtool_S eth0: error (values for schema '99'" in w for w in sample.warnings)
    counters = wire.replace("ethtool_S eth0", "sysnet_counters -")
    sample, _ = _one(counters)
    assert any("sysnet_counters: error (values for schema" in w for w in sample.warnings)


def test_a_schema_for_another_kind_is_not_used() -> None:
    wire = _wire(["rx_bytes"], "5").replace("for=ethtool_S", "for=sysnet_counters")
    sample, _ = _one(wire)
    assert "ethtool" not in sample.links["eth0"].counters


def test_schema_names_are_cleaned_once_and_bounded() -> None:
    sample, dec = _one(_wire(["rx_\x1b]52;c;evil\x07bytes", "x" * 5000], "1 2"))
    (schema,) = dec.schemas.values()
    assert not any(has_control(n) for n in schema.names)
    assert all(len(n) <= 256 for n in schema.names)
    assert not any(has_control(w) for w in sample.warnings)


def test_schemas_per_stream_are_bounded() -> None:
    parts = [HEAD.format(seq=1, ns=1)]
    parts += [
        f"@@section schema {i} - ok for=ethtool_S\nrx_bytes\n" for i in range(MAX_SCHEMAS + 50)
    ]
    parts.append("@@end 1\n")
    dec = FrameDecoder()
    dec.feed("".join(parts).encode())
    # Bounded, and the table forgets the least recently used: the newest is held.
    assert len(dec.schemas) <= MAX_SCHEMAS and MAX_SCHEMAS + 49 in dec.schemas
    assert any("least recently used forgotten" in w for w in dec.take_warnings())


def test_a_truncated_schema_is_not_defined() -> None:
    wire = _wire(["rx_bytes", "tx_bytes"], "1 2").replace(
        "@@section schema 4 - ok for=ethtool_S",
        "@@section schema 4 - truncated frame cap 10 bytes; ok for=ethtool_S",
    )
    sample, dec = _one(wire)
    assert dec.schemas == {}
    assert "ethtool" not in sample.links["eth0"].counters


@pytest.mark.parametrize("values", ["1 2 3", "1 - 3", "1\n2 3", "  1   2 3 "])
def test_values_by_position(values: str) -> None:
    got, warnings = decode_values(values, ("a", "b", "c"))
    assert got == [1, None if "-" in values else 2, 3]
    assert warnings == []


def test_a_recording_started_mid_stream_carries_its_schemas(tmp_path: Path) -> None:
    """Frame 1 of the stream defined the schemas; the recording starts at frame 3."""
    wire = _structured(_sim_text(5))
    dec = FrameDecoder()
    frames = [f for w in wire for f in dec.feed(w.encode())]
    path = tmp_path / "mid.fabrec"
    rec = Recorder(path, Config(hosts=[HostConfig(name="n1")])).open()
    for f in frames[2:]:
        rec.frame("n1", f)
    rec.close()
    records = [r for r in RecordingReader(path).records() if r.kind == "F"]
    assert len(records) == 3
    for r, live in zip(records, frames[2:], strict=True):
        replayed = decode_frame(r)
        assert replayed is not None
        _same(assemble("n1", replayed), assemble("n1", live))


def test_a_recording_of_an_unknown_format_fails_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "new.fabrec"
    Recorder(path, Config(hosts=[HostConfig(name="n1")])).open().close()
    raw = path.read_bytes()
    # A header written by a newer fabtop: rewrite it through the recorder's own framing.
    import json
    import struct
    import zlib

    head = json.dumps({"schema": "fabtop.rec/9", "config": {"hosts": []}}).encode() + b"\n"
    z = zlib.compressobj()
    body = z.compress(head) + z.flush(zlib.Z_SYNC_FLUSH)
    rec = struct.pack(">cII", b"H", len(body), zlib.crc32(body)) + body
    path.write_bytes(raw[:8] + rec)
    with pytest.raises(
        OSError, match=r"fabtop\.rec/9.*fabtop\.rec/1, fabtop\.rec/2, fabtop\.rec/3"
    ):
        RecordingReader(path).read_header()


def test_structured_section_rendered_with_schemas_decodes_alone() -> None:
    wire = _structured(_sim_text(3))
    dec = FrameDecoder()
    frames = [f for w in wire for f in dec.feed(w.encode())]
    alone = render_frame(frames[2], schemas=True)
    (again,) = FrameDecoder().feed(alone.encode())
    assert [s.kind for s in again.sections] == [s.kind for s in frames[2].sections]
    assert all(isinstance(s, Section) for s in again.sections)
    _same(assemble("n1", again), assemble("n1", frames[2]))


def test_a_values_section_cut_by_a_cap_is_said_and_costs_that_section() -> None:
    from collectors import probe_fast as pf

    out = pf.Sections(4096, 1 << 20)
    names = [b"c%d" % i for i in range(400)]
    vals = tuple(10**15 + i for i in range(400))  # 4.3 kB of base64: over the cap
    pf.Encoder().values(out, "ethtool_S", "eth0", 5, names, pf.b64_rows(vals), True)
    wire = b"\n".join(
        [
            b"@@fabtop-frame 1 1 1.00 1.000",
            *out.out,
            b"@@section sysnet - 1 ok",
            b"eth0/mtu 9000",
            b"@@end 1",
            b"",
        ]
    )
    (frame,) = FrameDecoder().feed(wire)
    sample = assemble("n1", frame)
    sec = next(s for s in sample.sections if s.kind == "ethtool_S")
    assert sec.status == "truncated" and "section cap 4096 bytes" in (sec.detail or "")
    assert "ethtool" not in sample.links["eth0"].counters
    assert any("no values for 400 names" in w for w in sample.warnings), sample.warnings


def test_the_schemas_of_one_stream_are_bounded_in_bytes() -> None:
    """A host that keeps defining large schemas cannot make the collector hold gigabytes."""
    from collectors import frames as fr

    names = "\n".join("n" * 200 + str(i) for i in range(20_000))  # ~4 MB per schema
    dec = FrameDecoder()
    for sid in range(40):
        dec.feed(
            (
                HEAD.format(seq=sid + 1, ns=1)
                + f"@@section schema {sid} - ok for=ethtool_S\n{names}\n"
                + f"@@end {sid + 1}\n"
            ).encode()
        )
    held = sum(len(n) for s in dec.schemas.values() for n in s.names)
    assert held <= fr.MAX_SCHEMA_CHARS and 39 in dec.schemas  # the newest is held
    assert any("least recently used forgotten" in w for w in dec.take_warnings())
    # Redefining an id frees what it held: a probe that resends never runs out.
    dec2 = FrameDecoder()
    for seq in range(40):
        dec2.feed(
            (
                HEAD.format(seq=seq + 1, ns=1) + f"@@section schema 1 - ok for=ethtool_S\n"
                f"{names}\n@@end {seq + 1}\n"
            ).encode()
        )
    assert dec2.take_warnings() == [] and len(dec2.schemas) == 1


def test_a_schema_refused_for_too_many_names_frees_what_its_id_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collectors import frames as fr

    monkeypatch.setattr(fr, "MAX_SCHEMA_NAMES", 3)
    dec = FrameDecoder()
    for seq, names in ((1, "a\nb"), (2, "a\nb\nc\nd")):
        dec.feed(
            (
                HEAD.format(seq=seq, ns=1) + f"@@section schema 1 - ok for=ethtool_S\n"
                f"{names}\n@@end {seq}\n"
            ).encode()
        )
    assert dec.schemas == {}
    assert dec._schema_chars == 0  # else every refusal would leak from the stream's budget
