"""The .fabrec format: round trip, torn tails, corruption, limits and a full disk."""

from __future__ import annotations

import errno
import io
import json
import zlib
from pathlib import Path
from typing import BinaryIO

import pytest

from collectors.frames import Frame, FrameDecoder, render_frame
from collectors.structured import StructuredEncoder
from fabtop.config import Config, HostConfig
from fabtop.run import record
from fabtop.run.record import (
    _HEAD,
    FRAME,
    MAGIC,
    METRICS,
    STATUS,
    Recorder,
    RecordError,
    RecordingReader,
    config_entry,
    decode_frame,
)
from fabtop.run.replay import Replay
from fabtop.run.session import MetricsReading
from fabtop.sim import Fabric, demo_hosts

FRAME_TEXT = (
    "@@fabtop-frame 7 1700000000000000000 1234.50 1700000000.000\n"
    "@@section sysnet - 1700000000000000000 ok\n"
    "eth0/statistics/rx_bytes 1000\n"
    "@@@@section looks like a control line but is content\n"
    "@@section ethtool_S eth0 1700000000000000000 ok\n"
    "NIC statistics:\n     rx_prio3_pause: 5\n"
    "@@end 7\n"
)


def _cfg() -> Config:
    return Config(
        hosts=[HostConfig(name="n1"), HostConfig(name="n2")],
        interval=0.5,
        thresholds={"detect_s": 3.0},
    )


def _write(path: Path, frames: int = 5) -> Recorder:
    rec = Recorder(path, _cfg()).open()
    frame = FrameDecoder().feed(FRAME_TEXT.encode())[0]
    rec.status("n1", "up", None, 0.001)
    for _ in range(frames):
        rec.frame("n1", frame)
    rec.metrics("n2", [MetricsReading("http://127.0.0.1:8000/metrics", 200, "x 1\n")])
    rec.status("n2", "down", "n2: no route to host", None)
    rec.evaluated()
    return rec


def test_round_trip_keeps_wire_text_config_and_order(tmp_path: Path) -> None:
    path = tmp_path / "r.fabrec"
    _write(path).close()
    reader = RecordingReader(path)
    recs = list(reader.records())
    assert reader.clean_end and reader.torn is None
    assert reader.header["schema"] == "fabtop.rec/3"
    cfg = reader.config()
    assert [h.name for h in cfg.hosts] == ["n1", "n2"] and cfg.interval == 0.5
    assert cfg.thresholds == {"detect_s": 3.0}
    assert [r.kind for r in recs] == ["S", "F", "F", "F", "F", "F", "M", "S", "E", "Z"]
    frame = recs[1]
    assert frame.body == FRAME_TEXT  # the probe's exact text, escapes included
    decoded = decode_frame(frame)
    assert decoded is not None and render_frame(decoded) == FRAME_TEXT
    assert recs[6].kind == METRICS and recs[6].head["readings"][0]["body"] == "x 1\n"
    assert recs[7].kind == STATUS and recs[7].head["error"] == "n2: no route to host"


def test_every_truncation_reads_up_to_the_last_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "r.fabrec"
    _write(path, frames=3).close()
    data = path.read_bytes()
    full = [r.kind for r in RecordingReader(path).records()]
    cut = tmp_path / "cut.fabrec"
    seen_counts = set()
    for n in range(len(b"FABREC1\n") + 40, len(data), 7):
        cut.write_bytes(data[:n])
        reader = RecordingReader(cut)
        kinds = [r.kind for r in reader.records()]
        assert kinds == full[: len(kinds)]  # a prefix, never garbage
        assert reader.torn is not None and not reader.clean_end
        seen_counts.add(len(kinds))
    assert len(seen_counts) > 3


def test_a_flipped_byte_stops_reading_at_that_record(tmp_path: Path) -> None:
    path = tmp_path / "r.fabrec"
    _write(path, frames=4).close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    reader = RecordingReader(path)
    frames = [r for r in reader.records() if r.kind == FRAME]
    assert len(frames) < 4
    assert reader.torn is not None and "corrupt" in reader.torn


def test_size_limit_ends_the_file_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "r.fabrec"
    limits: list[str] = []
    rec = Recorder(path, _cfg(), max_bytes=2000, on_limit=limits.append).open()
    frame = FrameDecoder().feed(FRAME_TEXT.encode())[0]
    for _ in range(500):
        rec.frame("n1", frame)
    rec.close()
    assert limits and "size limit" in limits[0] and str(path) in limits[0]
    reader = RecordingReader(path)
    n = sum(1 for r in reader.records() if r.kind == FRAME)
    assert 0 < n < 500 and reader.clean_end
    assert path.stat().st_size < 2000 + 1000


class _FillsUp(io.BytesIO):
    """A file that runs out of space after ``room`` bytes."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)

    def fileno(self) -> int:
        raise OSError("no fd")


def test_full_disk_stops_recording_with_one_line_and_never_raises(tmp_path: Path) -> None:
    errors: list[str] = []
    holder: list[_FillsUp] = []

    def opener(_: Path) -> BinaryIO:
        f = _FillsUp(1500)
        holder.append(f)
        return f

    rec = Recorder(tmp_path / "x.fabrec", _cfg(), on_error=errors.append, opener=opener).open()
    frame = FrameDecoder().feed(FRAME_TEXT.encode())[0]
    for _ in range(200):
        rec.frame("n1", frame)  # must not raise
    rec.close()
    assert errors == [f"{tmp_path / 'x.fabrec'}: recording stopped: No space left on device"]
    assert not rec.active and 0 < rec.frames < 200


# --- fabtop.rec/3: frames written against their host's earlier ones ---------------------


def _demo_frames(ticks: int) -> list[tuple[str, Frame]]:
    """The demo's hosts, ``ticks`` seconds of them in turn, as the session hands them over
    (counters by position, as the fast probe and the demo send them)."""
    fab = Fabric(demo_hosts())
    streams = {name: (FrameDecoder(), StructuredEncoder()) for name in fab.hosts}
    out = []
    for k in range(ticks):
        for name, host in fab.hosts.items():
            dec, enc = streams[name]
            out += [(name, f) for f in dec.feed(host.frame(2.0 + k, encoder=enc).encode())]
    return out


def _demo_cfg() -> Config:
    return Config(hosts=[HostConfig(name=h.name) for h in demo_hosts()], interval=1.0)


def test_a_host_hour_of_the_demo_fits_in_a_megabyte(tmp_path: Path) -> None:
    """DESIGN.md §8: a recording <= 1 MB per host-hour (fabtop.rec/2 took 3.4 MB)."""
    path = tmp_path / "demo.fabrec"
    frames = _demo_frames(240)
    rec = Recorder(path, _demo_cfg()).open()
    for i, (host, frame) in enumerate(frames):
        rec.frame(host, frame)
        if i % len(demo_hosts()) == 0:
            rec.evaluated()  # the session's rules run, once a tick
    rec.close()
    per_host_hour = path.stat().st_size / len(frames) * 3600
    assert per_host_hour <= 1e6


def test_every_frame_reads_back_as_its_wire_text_and_every_cut_is_a_prefix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "moving.fabrec"
    frames = _demo_frames(70)  # past a slow tick (one a minute): sections come and go
    rec = Recorder(path, _cfg()).open()
    for host, frame in frames:
        rec.frame(host, frame)
    rec.close()
    want = [render_frame(f, schemas=True) for _, f in frames]
    reader = RecordingReader(path)
    got = [r for r in reader.records() if r.kind == FRAME]
    assert reader.header["schema"] == "fabtop.rec/3" and reader.clean_end
    assert [r.host for r in got] == [h for h, _ in frames]
    assert [r.body for r in got] == want
    data = path.read_bytes()
    cut = tmp_path / "cut.fabrec"
    for n in range(len(data) // 3, len(data), len(data) // 17):
        cut.write_bytes(data[:n])
        reader = RecordingReader(cut)
        bodies = [r.body for r in reader.records() if r.kind == FRAME]
        assert bodies == want[: len(bodies)] and reader.torn is not None


def _old_file(path: Path, schema: str, records: list[tuple[str, dict[str, object], str]]) -> None:
    """A recording as fabtop.rec/1 and /2 recorders wrote it: zlib 6, a sync flush each,
    frames whole."""
    z = zlib.compressobj(6)
    out = bytearray(MAGIC)
    header = {"schema": schema, "config": config_entry(_demo_cfg())}
    for kind, head, body in [("H", header, ""), *records]:
        payload = json.dumps(head).encode() + b"\n" + body.encode()
        stored = z.compress(payload) + z.flush(zlib.Z_SYNC_FLUSH)
        out += _HEAD.pack(kind.encode(), len(stored), zlib.crc32(stored)) + stored
    path.write_bytes(bytes(out))


@pytest.mark.parametrize("schema", ["fabtop.rec/1", "fabtop.rec/2"])
def test_older_recordings_still_replay(tmp_path: Path, schema: str) -> None:
    frames = _demo_frames(4)
    texts = [render_frame(f, schemas=schema == "fabtop.rec/2") for _, f in frames]
    path = tmp_path / "old.fabrec"
    _old_file(
        path,
        schema,
        [
            ("F", {"t": 0.1 * i, "host": h}, text)
            for i, ((h, _), text) in enumerate(zip(frames, texts, strict=True))
        ]
        + [("Z", {"t": 9.0, "frames": len(frames), "reason": "closed"}, "")],
    )
    reader = RecordingReader(path)
    assert [r.body for r in reader.records() if r.kind == FRAME] == texts
    assert reader.clean_end
    rp = Replay(path)
    rp.advance_to(rp.duration)
    assert sum(h.frames for h in rp.state.hosts.values()) == len(frames)


def test_a_frame_that_rebuilds_past_the_bound_stops_the_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two small sections, then a frame of a few bytes that copies both: what it rebuilds
    # is bounded as a record's payload is (MAX_PAYLOAD_BYTES), whatever the file says.
    lines = "\n".join(["x" * 100] * 30)
    path = tmp_path / "crafted.fabrec"
    _old_file(
        path,
        "fabtop.rec/3",
        [
            (
                "F",
                {"t": 0.1, "host": "n1"},
                f"@@fabtop-frame 1 1 1.00 1.000\n@@section a - 1 ok\n{lines}",
            ),
            (
                "F",
                {"t": 0.2, "host": "n1"},
                f"@@fabtop-frame 2 2 2.00 2.000\n@@section b - 2 ok\n{lines}",
            ),
            ("F", {"t": 0.3, "host": "n1"}, "@@>a -\n@@=31\n@@>b -\n@@=31"),
        ],
    )
    assert len(list(RecordingReader(path).records())) == 3  # within the bound: read
    monkeypatch.setattr(record, "MAX_PAYLOAD_BYTES", 4000)
    with pytest.raises(RecordError, match=r"crafted\.fabrec: record 3 \(frame\).*rebuilds"):
        list(RecordingReader(path).records())
