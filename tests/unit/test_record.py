"""The .fabrec format: round trip, torn tails, corruption, limits and a full disk."""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import BinaryIO

from collectors.frames import FrameDecoder, render_frame
from fabtop.config import Config, HostConfig
from fabtop.run.record import FRAME, METRICS, STATUS, Recorder, RecordingReader, decode_frame
from fabtop.run.session import MetricsReading

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
    assert reader.header["schema"] == "fabtop.rec/2"
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
