"""Recordings (``.fabrec``, schema ``fabtop.rec/3``): the raw inputs of a run, crash-safe.

A recording keeps what moved the FabricState, in the order it moved it: every probe
frame as wire text (``collectors.frames.render_frame``, each frame with the schemas of its
structured sections and its values whole, so any frame decodes alone once read), every
raw ``/metrics`` body, every host status change and every point where the live session
ran the rules. Replay feeds these back through the live code path, so its findings are
the live ones.

Layout: the 8-byte magic ``FABREC1\\n``, then records::

    kind (1 byte, ASCII) | length (u32 BE) | crc32 of the stored bytes (u32 BE) | stored bytes

The stored bytes of all records are one zlib stream, flushed at the end of every record
(``Z_SYNC_FLUSH`` up to ``/2``; ``Z_PARTIAL_FLUSH`` from ``/3`` on, which zlib documents
as making all data so far available to the decompressor just the same, without the four
bytes of a sync marker): each record is readable as soon as it is written, and later
records still compress against earlier ones. A SIGKILL leaves at worst one torn record at
the end; the reader stops there, cleanly, and says so. A record's payload is one JSON
line, ``\\n``, then an optional body (the frame's wire text). From ``fabtop.rec/3`` on,
a frame's body is written against the same host's earlier frames
(:mod:`fabtop.run.frame_delta`: the lines that did not move are not repeated, counters
are their differences), so an hour of a host at 1 Hz stays under a megabyte; the reader
rebuilds the wire text, so what it yields is what ``fabtop.rec/2`` held. ``/1`` and
``/2`` recordings still replay.

Kinds: ``H`` header (schema, config, start time), ``F`` frame, ``S`` status, ``M``
metrics poll, ``E`` rules evaluated, ``Z`` clean end. Every record but ``H`` has ``t``:
seconds since the recording started, on the recorder's monotonic clock.

A recording is a file someone may hand over, so reading trusts nothing in it: a record
decompresses to at most :data:`MAX_PAYLOAD_BYTES` (a bound, not the ratio a crafted
stream asks for), its head is checked field by field and every string in it goes
through ``collectors.text.clean``. A record that passed its CRC but holds what no
recorder writes (a host name that is a list, a ``t`` of ``"x"``) is a RecordError naming
the file, the record and the field; a torn or corrupt tail still just ends the reading.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, get_args

from collectors.frames import MAX_FRAME_BYTES, Frame, FrameDecoder, render_frame
from collectors.host_states import ConnectionState
from collectors.numbers import finite
from collectors.transport.base import MAX_HTTP_RESPONSE_BYTES
from fabtop import __version__
from fabtop.config import Config, ConfigError, HostConfig, SshTarget, parse_cables
from fabtop.run.frame_delta import FrameBases
from fabtop.run.outputs import OutputError, open_stream
from fabtop.run.session import MetricsReading
from fabtop.run.snapshot import clean_tree

SCHEMA = "fabtop.rec/3"
# What this reader replays: /1 frames are all text (before structured sections), /2 frames
# may hold structured sections, each with its schema; /3 frames are written against the
# host's earlier ones.
READ_SCHEMAS = ("fabtop.rec/1", "fabtop.rec/2", SCHEMA)
MAGIC = b"FABREC1\n"
_HEAD = struct.Struct(">cII")
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a length beyond this is corruption, not a frame
# What one record may decompress to: a frame's wire text, or a poll of a few /metrics
# bodies with their JSON escapes. The recorder writes nothing larger; a reader stops at
# a record that expands beyond it (1 MB of crafted zlib would otherwise become 1 GB).
MAX_PAYLOAD_BYTES = max(2 * MAX_FRAME_BYTES, 3 * MAX_HTTP_RESPONSE_BYTES) + 1024 * 1024

HEADER, FRAME, STATUS, METRICS, EVALUATED, END = "H", "F", "S", "M", "E", "Z"
# fabtop's own loop caught up after being behind (``late_s``): replay excuses the hosts'
# silence and says "fabtop fell behind" where the live run did. Older readers skip it.
STALLED = "L"
_KIND_NAMES = {
    HEADER: "header",
    FRAME: "frame",
    STATUS: "status",
    METRICS: "metrics",
    EVALUATED: "evaluated",
    END: "end",
    STALLED: "stalled",
}
_STATES = frozenset(
    get_args(ConnectionState)
)  # what a runner reports, so what a status record holds
_RAW_TEXT = frozenset({"body"})  # a /metrics body: raw text for the parser, which cleans it


class RecordError(OSError):
    """The recording could not be written or read; one line naming the file and the cause."""


@dataclass(slots=True)
class Record:
    """One decoded record: its kind, its JSON head and its body (frame wire text)."""

    kind: str
    head: dict[str, Any]
    body: str = ""

    @property
    def t(self) -> float:
        """Seconds since the recording started (0 for the header)."""
        v = self.head.get("t", 0.0)
        return float(v) if isinstance(v, int | float) else 0.0

    @property
    def host(self) -> str:
        """The host the record is about ('' for fabric-wide records)."""
        return str(self.head.get("host", ""))


def config_entry(config: Config) -> dict[str, Any]:
    """The config a recording ran with, as JSON (hosts, interval, thresholds)."""
    return {
        "source": config.source,
        "interval": config.interval,
        "thresholds": dict(config.thresholds),
        "hosts": [
            {
                "name": h.name,
                "target": h.target,
                "sysfs": h.sysfs,
                "path": list(h.path),
                "interfaces": list(h.interfaces) if h.interfaces is not None else None,
                "inference": list(h.inference),
            }
            for h in config.hosts
        ],
        # [[cable]] pairs as the config writes them (the replay's cable panel shows both ends)
        "cable": [{"a": c.a.label, "b": c.b.label} for c in config.cables],
    }


def config_from_entry(entry: Any, where: str = "recording") -> Config:
    """Rebuild the recorded Config (targets are kept for display; nothing is contacted).

    Raises RecordError naming ``where`` and the field when the entry is not what
    :func:`config_entry` writes.
    """
    try:
        entry = clean_tree(entry)
    except ValueError as e:
        raise RecordError(f"{where}: field 'config': {e}") from None
    if not isinstance(entry, dict):
        raise RecordError(f"{where}: field 'config' must be an object, not {_kind(entry)}")
    raw_hosts = entry.get("hosts", [])
    if not isinstance(raw_hosts, list):
        raise RecordError(f"{where}: field 'config.hosts' must be a list, not {_kind(raw_hosts)}")
    hosts = []
    for i, h in enumerate(raw_hosts):
        w = f"{where}: field 'config.hosts[{i}]"
        if not isinstance(h, dict):
            raise RecordError(f"{w}' must be an object, not {_kind(h)}")
        name = h.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RecordError(f"{w}.name' must be a host name, not {_kind(name)}")
        target = _text(h, "target", w, "local") or "local"
        ssh = None if target == "local" else SshTarget(host=target)
        ifaces = h.get("interfaces")
        hosts.append(
            HostConfig(
                name=name,
                ssh=ssh,
                sysfs=_text(h, "sysfs", w, "/sys"),
                path=_texts(h, "path", w),
                interfaces=_texts(h, "interfaces", w) if ifaces is not None else None,
                inference=_texts(h, "inference", w),
            )
        )
    interval = entry.get("interval", 1.0)
    if not _is_number(interval) or not 0.1 <= interval <= 60:
        raise RecordError(
            f"{where}: field 'config.interval' must be seconds in 0.1..60, not {_kind(interval)}"
        )
    thresholds = entry.get("thresholds") or {}
    if not isinstance(thresholds, dict) or not all(_is_number(v) for v in thresholds.values()):
        raise RecordError(f"{where}: field 'config.thresholds' must map names to numbers")
    try:
        cables = parse_cables(
            entry.get("cable", []), f"{where}: field 'config'", {h.name for h in hosts}
        )
    except ConfigError as e:
        raise RecordError(str(e)) from None
    return Config(
        hosts=hosts,
        interval=float(interval),
        source=_text(entry, "source", f"{where}: field 'config", "recording"),
        thresholds={str(k): float(v) for k, v in thresholds.items()},
        cables=cables,
    )


def _is_number(v: Any) -> bool:
    # numbers.finite: also an int too large for a float (10**400 is valid JSON) is not one.
    return isinstance(v, int | float) and finite(v) is not None


def _kind(v: Any) -> str:
    """What a bad value is, for an error line (never the value: it may be huge or hostile)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return f"{v:g}" if isinstance(v, float) else str(v) if abs(v) < 10**12 else "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object" if isinstance(v, dict) else type(v).__name__


def _text(d: dict[str, Any], key: str, where: str, default: str) -> str:
    v = d.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise RecordError(f"{where}.{key}' must be a string, not {_kind(v)}")
    return v


def _texts(d: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    v = d.get(key) or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise RecordError(f"{where}.{key}' must be a list of strings")
    return tuple(v)


@dataclass(slots=True)
class Recorder:
    """Appends records to a ``.fabrec`` file; an EventTap for a Session.

    A write error (full disk) stops the recording, never the caller: ``error`` holds
    one line naming the file, ``on_error`` is told once, later events are dropped.
    """

    path: Path
    config: Config
    max_bytes: int | None = None
    max_seconds: float | None = None
    max_frames: int | None = None  # frames of all hosts together
    on_error: Callable[[str], None] | None = None
    on_limit: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.monotonic
    opener: Callable[[Path], BinaryIO] | None = None
    error: str | None = None
    stopped: str | None = None  # why recording ended (limit reached, closed, error)
    frames: int = 0
    bytes_written: int = 0
    _file: BinaryIO | None = None
    _z: Any = None
    _bases: FrameBases = field(default_factory=FrameBases)
    _t0: float = 0.0
    _hosts_seen: set[str] = field(default_factory=set)

    def open(self) -> Recorder:
        """Create the file and write the header; raises RecordError when that fails."""
        self._t0 = self.clock()
        # Z_FILTERED, level 8: what is left of a frame is mostly digits, which Huffman codes
        # better than short string matches do (on the demo: the default strategy at level
        # 6, 10 % more bytes; level 9, under 1 % fewer for twice the CPU).
        self._z = zlib.compressobj(8, zlib.DEFLATED, 15, 8, zlib.Z_FILTERED)
        self._bases = FrameBases()
        try:
            self._file = (
                self.opener(self.path) if self.opener else open_stream(self.path, "recording")
            )
            self._write_raw(MAGIC)
        except OutputError as e:
            self.error, self.stopped = str(e), "error"
            raise RecordError(self.error) from None
        except OSError as e:
            self._fail(e)
            raise RecordError(self.error) from None
        header = {
            "schema": SCHEMA,
            "fabtop": __version__,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "started_unix": time.time(),
            "config": config_entry(self.config),
        }
        self._put(HEADER, header)
        if self.error is not None:
            raise RecordError(self.error)
        return self

    @property
    def active(self) -> bool:
        """Still writing (not closed, failed or past a limit)."""
        return self._file is not None and self.stopped is None

    def elapsed(self) -> float:
        """Seconds since the recording started."""
        return self.clock() - self._t0

    # EventTap ------------------------------------------------------------------

    def frame(self, host: str, frame: Frame, arrived_unix: float | None = None) -> None:
        """Keep one probe frame as its wire text (and, when given, the operator's wall clock
        when it arrived, so replay places it where the live run did)."""
        head: dict[str, Any] = {"t": self._t(), "host": host}
        if arrived_unix is not None:
            head["arrived_unix"] = arrived_unix
        if self._put(FRAME, head, render_frame(frame, schemas=True), host):
            self.frames += 1
            if self.max_frames is not None and self.frames >= self.max_frames:
                self._over_limit()  # ends the file now, not at the next record

    def status(self, host: str, state: str, error: str | None, rtt_s: float | None) -> None:
        """Keep a host's connection state change (host loss is part of the evidence)."""
        self._put(
            STATUS, {"t": self._t(), "host": host, "state": state, "error": error, "rtt_s": rtt_s}
        )

    def metrics(self, host: str, readings: list[MetricsReading]) -> None:
        """Keep one /metrics poll of a host, bodies raw."""
        rows = [
            {"url": r.url, "status": r.status, "body": r.body, "error": r.error, "read_s": r.read_s}
            for r in readings
        ]
        self._put(METRICS, {"t": self._t(), "host": host, "readings": rows})

    def evaluated(self) -> None:
        """Mark where the live session ran the rules, so replay runs them at the same point."""
        self._put(EVALUATED, {"t": self._t()})

    def stalled(self, late_s: float) -> None:
        """Keep that fabtop's own loop was ``late_s`` behind, up to now."""
        self._put(STALLED, {"t": self._t(), "late_s": round(late_s, 6)})

    # ---------------------------------------------------------------------------

    def close(self, reason: str = "closed") -> None:
        """Write the end record and close the file (idempotent)."""
        if self._file is None:
            return
        if self.stopped is None:
            self._put(END, {"t": self._t(), "frames": self.frames, "reason": reason})
            self.stopped = reason
        f, self._file = self._file, None
        try:
            f.flush()
            os.fsync(f.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        try:
            f.close()
        except OSError as e:
            if self.error is None:
                self._fail(e)

    def _t(self) -> float:
        return round(self.clock() - self._t0, 6)

    def _put(self, kind: str, head: dict[str, Any], body: str = "", host: str = "") -> bool:
        if self._file is None or self.stopped is not None:
            return False
        if kind not in (HEADER, END) and self._over_limit():
            return False
        line = json.dumps(head, separators=(",", ":")).encode() + b"\n"
        if len(line) + len(body.encode()) > MAX_PAYLOAD_BYTES:
            return False  # no reader would take it (see MAX_PAYLOAD_BYTES): not written
        if kind == FRAME:  # only a frame that is written becomes the host's base
            body = self._bases.encode(host, body)
        payload = line + body.encode()
        stored = self._z.compress(payload) + self._z.flush(zlib.Z_PARTIAL_FLUSH)
        try:
            self._write_raw(_HEAD.pack(kind.encode(), len(stored), zlib.crc32(stored)) + stored)
        except OSError as e:
            self._fail(e)
            return False
        return True

    def _over_limit(self) -> bool:
        why = None
        if self.max_bytes is not None and self.bytes_written >= self.max_bytes:
            why = f"size limit of {self.max_bytes / 1e6:g} MB reached"
        elif self.max_seconds is not None and self.elapsed() >= self.max_seconds:
            why = f"time limit of {self.max_seconds:g} s reached"
        elif self.max_frames is not None and self.frames >= self.max_frames:
            why = f"frame limit of {self.max_frames} reached"
        if why is None:
            return False
        self._put(END, {"t": self._t(), "frames": self.frames, "reason": why})
        self.stopped = why
        if self.on_limit is not None:
            self.on_limit(f"{self.path}: recording stopped: {why}")
        return True

    def _write_raw(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)
        # Flushed per record: a SIGKILL then loses nothing the kernel was given.
        self._file.flush()
        self.bytes_written += len(data)

    def _fail(self, e: OSError) -> None:
        self.error = f"{self.path}: recording stopped: {e.strerror or e}"
        self.stopped = "error"
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
        if self.on_error is not None:
            self.on_error(self.error)


@dataclass(slots=True)
class RecordingReader:
    """Reads a ``.fabrec`` file record by record; stops cleanly at a torn or corrupt tail."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    torn: str | None = None  # why reading stopped before a clean end record, if it did
    clean_end: bool = False

    def records(self) -> Iterator[Record]:
        """Every record after the header, in file order (raises RecordError if not a recording)."""
        try:
            f = open(self.path, "rb")  # noqa: SIM115
        except OSError as e:
            raise RecordError(f"{self.path}: cannot read recording: {e.strerror or e}") from None
        with f:
            if f.read(len(MAGIC)) != MAGIC:
                raise RecordError(f"{self.path}: not a fabtop recording (bad magic)")
            z = zlib.decompressobj()
            bases: FrameBases | None = None  # from /3 on: the hosts' earlier frames
            index = 0
            self.torn, self.clean_end = None, False
            while True:
                head = f.read(_HEAD.size)
                if not head:
                    if not self.clean_end:
                        self.torn = (
                            f"{self.path}: recording ends without an end record "
                            f"after {index} records (the recorder was killed)"
                        )
                    return
                if len(head) < _HEAD.size:
                    self.torn = f"{self.path}: torn record header after {index} records"
                    return
                kind_b, length, crc = _HEAD.unpack(head)
                if length > MAX_RECORD_BYTES:
                    self.torn = f"{self.path}: record {index} has an impossible length"
                    return
                stored = f.read(length)
                if len(stored) < length or zlib.crc32(stored) != crc:
                    self.torn = (
                        f"{self.path}: record {index} is torn or corrupt; "
                        f"read up to the record before it"
                    )
                    return
                try:
                    kind = kind_b.decode("ascii")
                    payload = z.decompress(stored, MAX_PAYLOAD_BYTES)
                except (zlib.error, UnicodeDecodeError) as e:
                    self.torn = f"{self.path}: record {index} cannot be decoded: {e}"
                    return
                if z.unconsumed_tail:
                    self.torn = (
                        f"{self.path}: record {index} expands to more than "
                        f"{MAX_PAYLOAD_BYTES // 2**20} MiB; read up to the record "
                        "before it"
                    )
                    return
                where = f"{self.path}: record {index} ({_KIND_NAMES.get(kind, repr(kind))})"
                rec = _decode(kind, payload, where)
                index += 1
                if rec.kind == HEADER:
                    if rec.head.get("schema") not in READ_SCHEMAS:
                        raise RecordError(
                            f"{self.path}: recording format {rec.head.get('schema')!r} is "
                            f"not one this fabtop reads ({', '.join(READ_SCHEMAS)})"
                        )
                    self.header = rec.head
                    bases = FrameBases() if rec.head["schema"] == SCHEMA else None
                    continue
                if rec.kind == FRAME and bases is not None:
                    rec.body = _rebuild(bases, rec, where)
                if rec.kind == END:
                    self.clean_end = True
                yield rec

    def read_header(self) -> dict[str, Any]:
        """The header record (schema, config, start time)."""
        for _ in self.records():
            break
        if not self.header:
            raise RecordError(f"{self.path}: recording has no readable header")
        return self.header

    def config(self) -> Config:
        """The config the recording ran with (raises RecordError naming a bad field)."""
        return config_from_entry(
            self.read_header().get("config", {}), f"{self.path}: record 0 (header)"
        )


def _rebuild(bases: FrameBases, rec: Record, where: str) -> str:
    """A /3 frame's wire text from what the recorder wrote; RecordError if it cannot be."""
    try:
        text = bases.decode(rec.host, rec.body)
    except ValueError as e:
        raise RecordError(f"{where}: body is not a frame a recorder writes: {e}") from None
    if len(text) > MAX_PAYLOAD_BYTES:  # the recorder writes no larger frame
        raise RecordError(f"{where}: body rebuilds to more than the recorder writes")
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _decode(kind: str, payload: bytes, where: str) -> Record:
    """One record from its decompressed bytes, its head checked; raises RecordError."""
    line, _, body = payload.partition(b"\n")
    try:
        head = clean_tree(json.loads(line, parse_constant=_no_constant), _RAW_TEXT)
    except RecursionError:
        raise RecordError(f"{where}: head nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise RecordError(f"{where}: head is not JSON a recorder writes: {e}") from None
    if not isinstance(head, dict):
        raise RecordError(f"{where}: head must be an object, not {_kind(head)}")
    _check_head(kind, head, where)
    return Record(kind, head, body.decode("utf-8", errors="replace"))


def _check_head(kind: str, head: dict[str, Any], where: str) -> None:
    """Every field replay reads has the type the recorder wrote; raises RecordError."""
    w = f"{where}: field '"
    if kind == HEADER:
        if not isinstance(head.get("config", {}), dict):
            raise RecordError(f"{w}config' must be an object, not {_kind(head['config'])}")
        _check_fields(head, w, {}, {"started_unix": float})
        return
    t: Any = head.get("t")
    if not _is_number(t) or t < 0:
        raise RecordError(f"{w}t' must be seconds (a number >= 0), not {_kind(t)}")
    if kind in (FRAME, STATUS, METRICS):
        host = head.get("host")
        if not isinstance(host, str) or not host:
            raise RecordError(f"{w}host' must be a host name, not {_kind(host)}")
    if kind == FRAME:
        _check_fields(head, w, {}, {"arrived_unix": float})
    if kind == STALLED:
        _check_fields(head, w, {"late_s": float}, {})
        if head["late_s"] < 0:
            raise RecordError(f"{w}late_s' must be seconds (a number >= 0)")
    if kind == STATUS:
        _check_fields(head, w, {"state": str}, {"error": str, "rtt_s": float})
        if head["state"] not in _STATES:
            raise RecordError(f"{w}state' must be one of {', '.join(sorted(_STATES))}")
    elif kind == METRICS:
        readings = head.get("readings")
        if not isinstance(readings, list):
            raise RecordError(f"{w}readings' must be a list, not {_kind(readings)}")
        for i, r in enumerate(readings):
            if not isinstance(r, dict):
                raise RecordError(f"{w}readings[{i}]' must be an object, not {_kind(r)}")
            _check_fields(
                r,
                f"{w}readings[{i}].",
                {"url": str},
                {"status": int, "body": str, "error": str, "read_s": float},
            )


def _check_fields(
    d: dict[str, Any], w: str, required: dict[str, type], optional: dict[str, type]
) -> None:
    for key, want in (*required.items(), *optional.items()):
        v = d.get(key)
        if v is None and key in optional:
            continue
        ok = (
            _is_number(v)
            if want is float
            else isinstance(v, int) and not isinstance(v, bool)
            if want is int
            else isinstance(v, want)
        )
        if not ok:
            what = {str: "a string", int: "an integer", float: "a number"}[want]
            null = " or null" if key in optional else ""
            raise RecordError(f"{w}{key}' must be {what}{null}, not {_kind(v)}")


def decode_frame(record: Record) -> Frame | None:
    """The probe frame a frame record holds (None when its text does not decode)."""
    frames = FrameDecoder().feed(record.body.encode())
    return frames[0] if frames else None


def metrics_readings(record: Record) -> list[MetricsReading]:
    """The raw /metrics fetches of a metrics record."""
    out = []
    for r in record.head.get("readings", []):
        status = r.get("status")
        out.append(
            MetricsReading(
                url=str(r.get("url", "")),
                status=int(status) if isinstance(status, int) else None,
                body=r.get("body") if isinstance(r.get("body"), str) else None,
                error=r.get("error") if isinstance(r.get("error"), str) else None,
                read_s=float(r["read_s"]) if isinstance(r.get("read_s"), int | float) else None,
            )
        )
    return out


def summary(path: Path) -> dict[str, Any]:
    """Hosts, frames per host, duration and how the file ended (for ``fabtop replay --info``)."""
    reader = RecordingReader(path)
    frames: dict[str, int] = {}
    last_t = 0.0
    for rec in reader.records():
        last_t = max(last_t, rec.t)
        if rec.kind == FRAME:
            frames[rec.host] = frames.get(rec.host, 0) + 1
    return {
        "path": str(path),
        "bytes": path.stat().st_size,
        "duration_s": last_t,
        "frames": frames,
        "clean_end": reader.clean_end,
        "torn": reader.torn,
        "header": reader.header,
    }
