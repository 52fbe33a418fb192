"""Split the probe's byte stream into frames and sections.

Wire format (one frame per tick, see docs/PROBE.md)::

    @@fabtop-frame <seq> <clock_ns> <uptime_s> <unix_s>
    @@section <kind> <subject|-> <read_ns|-> <status> [detail...]
    ...raw tool output; a content line starting with "@@" is sent with one extra "@"...
    @@end <seq>

The fast probe also sends watchdog events between frames, framed alike::

    @@fabtop-event <seq> <clock_ns> <uptime_s> <unix_s>
    @@section pfcwd - <read_ns> ok window_ms=<n>
    storm <netdev> <prio> <rx|tx> <ratio> <bytes_per_s|-> <window_us>
    clear <netdev> <prio> <rx|tx> <ratio>
    @@end <seq>

They decode to a :class:`Frame` with ``event`` set; their ``seq`` counts events only.

Structured sections (the fast probe; docs/PROBE.md "Structured frames"): a section's
names are sent once, in a ``schema`` section, and again under a new id when they change;
each tick then carries one line of values by position (decimal, ``-`` for not read)::

    @@section schema <sid> - ok for=<kind>
    <name>            (one per line)
    @@section <kind> <subject> <read_ns> ok schema=<sid>
    <value> <value> ...

Values may also come in binary (``enc=b64``): collectors/values.py. Every frame carries
them whole: nothing but the schemas is kept from one frame to the next.

Schema ids live as long as the stream (one decoder); the decoder keeps the schemas in
use and hands each values section over with its :class:`Schema` and its values read
(``Section.values``).
The tables forget what is no longer used, never refuse what is new (a week of netdevs
coming and going): a section bound to a new schema frees its old one, the probe says
``@@section schema <sid> - ok drop`` for a section it stopped sending, and past the
bounds the least recently used schemas go (said in a warning). A values section naming
a schema the stream does not hold becomes an ``error`` section saying so, counted in
:attr:`FrameDecoder.undecoded`: the host is partly blind until a new stream starts.

The decoder is incremental, bounded and never raises on bad input: garbage
outside a frame and truncated frames become warnings.

A section's status is one of SECTION_STATUSES. ``truncated`` means the probe kept the
section's first bytes only (its byte cap, or the frame's, said in the detail, followed
by the status it would have had): what is there is real and is parsed. The decoder
keeps any status token as it came; consumers decide what an unknown one means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from collectors.numbers import parse_float, parse_uint
from collectors.text import clean
from collectors.values import Values, decode_whole, decode_whole_b64, values_line
from collectors.warning_lines import WarningLines

MAX_FRAME_BYTES = 16 * 1024 * 1024  # a frame larger than this is dropped, not buffered forever
SECTION_STATUSES = ("ok", "missing", "timeout", "error", "stale", "truncated")
MAX_LINE_BYTES = 1024 * 1024
SCHEMA_KIND = "schema"
MAX_SCHEMAS = 4096  # in use per stream: a schema per netdev's ethtool -S, a few more per host
MAX_SCHEMA_NAMES = 200_000  # the fast probe's own cap on one netdev's ethtool names
MAX_NAME_CHARS = 256
UNKNOWN_SCHEMA = "values for schema"  # how the detail of such a section starts
# All names of one stream's schemas together: 4096 schemas of 200,000 names each would be
# 200 GB; a real host needs a few MB (259 netdevs x 300 names x 30 characters is 2.3 MB).
MAX_SCHEMA_CHARS = 64 * 1024 * 1024


@dataclass(slots=True, eq=False)
class Schema:
    """The names of one structured section, by position, as its stream defined them.

    ``plans`` holds what consumers derive from the names once (a parser's placement of
    each position): a schema never changes, so neither do they.
    """

    sid: int
    kind: str
    names: tuple[str, ...]
    plans: dict[str, Any] = field(default_factory=dict)
    chars: int = 0  # what its names take of the stream's MAX_SCHEMA_CHARS
    used: int = 0  # the last frame (seq) whose values it read: the least recent go first
    key: tuple[str, str | None] | None = None  # the (kind, subject) whose values it reads


@dataclass(slots=True)
class Section:
    """One section of a frame: the raw text a source printed, with its read time and status."""

    kind: str
    subject: str | None
    read_ns: int | None
    status: str
    detail: str | None
    text: str
    # Set on a structured section: ``text`` is then its one line of values by position.
    schema: Schema | None = None
    # Its values as the stream's decoder read them (whole, or a delta applied to the
    # section's values in an earlier frame: then ``text`` is empty).
    values: Values | None = None


@dataclass(slots=True)
class Frame:
    """One tick of one host, still as raw text per section."""

    seq: int
    clock_ns: int
    uptime_s: float
    unix_s: float
    sections: list[Section] = field(default_factory=list)
    event: bool = False  # a watchdog event between frames, not a tick
    # The last len(carried) sections: slow sections a Pipeline carried in from earlier
    # frames, this very tuple tick after tick while none of them changed (what assemble
    # read of them once holds for every such tick).
    carried: tuple[Section, ...] = ()

    def find(self, kind: str, subject: str | None = None) -> Section | None:
        """First section of ``kind`` (and ``subject`` when given)."""
        for s in self.sections:
            if s.kind == kind and (subject is None or s.subject == subject):
                return s
        return None

    def all(self, kind: str) -> list[Section]:
        """Every section of ``kind``."""
        return [s for s in self.sections if s.kind == kind]


_T = TypeVar("_T")


class TextRead(Protocol):
    """How a reader gets ``parse(sec.text)`` of a frame's section: parsed there, or what
    was made of that very section before (collectors/assemble.py keeps a reading of each
    carried section for as long as it is carried)."""

    def __call__(self, parse: Callable[[str], _T], sec: Section, /) -> _T: ...


def read_now(parse: Callable[[str], _T], sec: Section, /) -> _T:
    """A TextRead that parses every time."""
    return parse(sec.text)


def escape_line(line: str) -> str:
    """Escape one content line the way the probe does."""
    return "@" + line if line.startswith("@@") else line


def render_frame(frame: Frame, schemas: bool = False) -> str:
    """Serialize a frame to the wire format (used by simulated hosts and recordings).

    With ``schemas``, each structured section is preceded by its schema (once per frame):
    the text then decodes on its own, as a recording's frame must.
    """
    head = "fabtop-event" if frame.event else "fabtop-frame"
    out = [f"@@{head} {frame.seq} {frame.clock_ns} {frame.uptime_s:.2f} {frame.unix_s:.3f}"]
    sent: set[int] = set()
    for s in frame.sections:
        if schemas and s.schema is not None and s.schema.sid not in sent:
            sent.add(s.schema.sid)
            out.append(f"@@section {SCHEMA_KIND} {s.schema.sid} - ok for={s.schema.kind}")
            out.extend(escape_line(n) for n in s.schema.names)
        head = (
            f"@@section {s.kind} {s.subject or '-'} "
            f"{s.read_ns if s.read_ns is not None else '-'} {s.status}"
        )
        if s.detail:
            head += " " + s.detail
        out.append(head)
        text = s.text
        if schemas and s.values is not None and not s.values.plain and s.values.vals is not None:
            text = values_line(s.values.vals)  # whole, as a recording's frame needs them
        if text:
            out.extend(escape_line(ln) for ln in text.split("\n"))
    out.append(f"@@end {frame.seq}")
    return "\n".join(out) + "\n"


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the frames completed so far."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._frame: Frame | None = None
        self._section_head: list[str] | None = None
        self._section_lines: list[str] = []
        self._frame_bytes = 0
        self._skipping_long_line = False
        self.warnings = WarningLines(100)
        self.schemas: dict[int, Schema] = {}
        self._schema_chars = 0
        # (kind, subject) -> the schema id its values last named: a new one frees the old.
        self._bound: dict[tuple[str, str | None], int] = {}
        # Values sections this stream could not decode (their schema is not held), in all
        # and in a row of frames: a consumer reconnects to start the stream fresh.
        self.undecoded = 0
        self.undecoded_frames = 0
        self._undecoded_in_frame = False

    def feed(self, data: bytes) -> list[Frame]:
        """Consume bytes; return every frame that ended in them."""
        buf = self._buf
        if not buf and data[-1:] == b"\n":  # whole lines, nothing held over: no copy
            text = str(data, "utf-8", "replace")
        else:
            # What is held over has no newline: only the new bytes are looked at (a line
            # trickled in byte by byte must not be scanned whole at each byte).
            held = len(buf)
            buf += data
            end = data.rfind(b"\n")
            if end >= 0:
                end += held
            else:
                if len(buf) > MAX_LINE_BYTES:
                    self._warn(f"line longer than {MAX_LINE_BYTES} bytes dropped")
                    buf.clear()
                    self._skipping_long_line = True
                return []
            # Decode all complete lines at once: a newline byte is never inside a UTF-8
            # sequence, so a bad byte spoils only its own line, as it would line by line.
            text = buf[: end + 1].decode("utf-8", errors="replace")
            del buf[: end + 1]
        # ``text`` ends with the newline of its last line.
        done: list[Frame] = []
        if self._skipping_long_line:  # the rest of a line already dropped as too long
            self._skipping_long_line = False
            pos = text.find("\n") + 1
            if pos == len(text):
                return []
            text = text[pos:]
        # Cut at control lines ("@@..." at a line's start) in one call: each part is a
        # control line (without its "@@") and the section body up to the next one, so a
        # frame's few hundred content lines cost a slice, not a Python step each. The
        # first part is a body (a section continued from the last feed) unless the text
        # starts with a control line.
        parts = text.split("\n@@")
        parts[-1] = parts[-1][:-1]
        if parts[0].startswith("@@"):
            parts[0] = parts[0][2:]
        else:
            self._body(parts[0], done)
            del parts[0]
        for part in parts:
            line, sep, body = part.partition("\n")
            nbytes = len(line) + 3
            if line.endswith("\r"):
                line = line[:-1]
            frame = self._control(line, nbytes)
            if frame is not None:
                done.append(frame)
            if sep:
                self._body(body, done)
        return done

    def _body(self, chunk: str, done: list[Frame]) -> None:
        """Content lines between two control lines (or the text's ends)."""
        size = len(chunk) + 1
        if self._section_head is not None and self._frame_bytes + size <= MAX_FRAME_BYTES:
            if "\r" in chunk:
                chunk = "\n".join(ln[:-1] if ln.endswith("\r") else ln for ln in chunk.split("\n"))
            self._frame_bytes += size
            self._section_lines.append(chunk)
            return
        for line in chunk.split("\n"):  # outside a section, or at the frame cap
            if line.endswith("\r"):
                line = line[:-1]
            if self._section_head is not None and self._frame_bytes <= MAX_FRAME_BYTES:
                self._frame_bytes += len(line) + 1
                self._section_lines.append(line)
                continue
            frame = self._line(line, len(line) + 1)
            if frame is not None:
                done.append(frame)

    def take_warnings(self) -> list[str]:
        """Return and clear the warnings gathered so far."""
        w, self.warnings = self.warnings, WarningLines(100)
        return w

    def _warn(self, msg: str) -> None:
        self.warnings.add(msg)

    def _close_section(self) -> None:
        if self._frame is None or self._section_head is None:
            return
        h = self._section_head
        n = len(h)
        kind = h[0] if n else "?"
        subject = h[1] if n > 1 and h[1] != "-" else None
        read_ns = parse_uint(h[2]) if n > 2 else None
        status = h[3] if n > 3 else "ok"
        # Tokens are never empty: one is its own detail (most sections), no join needed.
        detail = h[4] if n == 5 else " ".join(h[4:]) or None
        lines, self._section_head, self._section_lines = self._section_lines, None, []
        if kind == SCHEMA_KIND:
            if status == "ok":  # its body came in chunks of lines (feed): one name a line
                self._define(subject, detail, "\n".join(lines).split("\n") if lines else [])
            else:  # cut by a cap: the probe sends it again, whole, with its next frame
                self._warn(f"schema {subject!r} {status}: not defined"[:120])
            return
        section = Section(kind, subject, read_ns, status, detail, "\n".join(lines))
        if detail is not None and "schema=" in detail:
            self._bind(section, h[4:])
            if section.schema is not None:
                self._place(section, h[4:])
        self._frame.sections.append(section)

    def _place(self, section: Section, detail: list[str]) -> None:
        """Read a structured section's values, decimal or binary (collectors/values.py)."""
        schema = section.schema
        assert schema is not None
        if "enc=b64" not in detail:
            section.values = decode_whole(section.text, schema.names)
            return
        # How the values came, not what the section is: the shape and a recording's frame
        # see the section as decimal values would give it.
        section.detail = " ".join(t for t in detail if t != "enc=b64")
        text, section.text = section.text, ""
        section.values = decode_whole_b64(text, schema.names)

    def _define(self, subject: str | None, detail: str | None, names: list[str]) -> None:
        sid = parse_uint(subject) if subject else None
        if sid is not None and detail == "drop":  # the probe stopped sending its section
            self._forget(sid)
            return
        kind = detail[4:] if detail and detail.startswith("for=") else ""
        if sid is None or not kind or " " in kind:
            self._warn(f"bad schema header ignored: {subject!r} {detail!r}"[:120])
            return
        self._forget(sid)  # an id defined again names other values
        if len(names) > MAX_SCHEMA_NAMES:
            self._warn(
                f"schema {sid} of {kind}: {len(names)} names, over {MAX_SCHEMA_NAMES}: "
                "refused (its values will not decode)"
            )
            return
        # Cleaned once here, for every tick that uses them.
        cleaned = tuple(clean(n.strip(), MAX_NAME_CHARS) for n in names)
        size = sum(map(len, cleaned)) + len(cleaned)
        if size > MAX_SCHEMA_CHARS:
            self._warn(
                f"schema {sid} of {kind}: names of {size} characters, over "
                f"{MAX_SCHEMA_CHARS}: refused (its values will not decode)"
            )
            return
        if len(self.schemas) >= MAX_SCHEMAS or self._schema_chars + size > MAX_SCHEMA_CHARS:
            self._evict(size)
        self._schema_chars += size
        used = self._frame.seq if self._frame is not None else 0
        self.schemas[sid] = Schema(sid, clean(kind, 64), cleaned, chars=size, used=used)

    def _evict(self, room: int) -> None:
        """Past a bound, the least recently used quarter of the schemas (at least enough
        for ``room`` characters) goes: forget, never refuse. A section still sent under
        one of them no longer decodes (``undecoded``) until the stream starts again."""
        ranked = sorted(self.schemas.values(), key=lambda sc: sc.used)
        goal = min(len(ranked), max(1, len(ranked) // 4))
        n = 0
        for sc in ranked:
            if n >= goal and self._schema_chars + room <= MAX_SCHEMA_CHARS:
                break
            self._forget(sc.sid)
            n += 1
        self._warn(
            f"schemas of one stream past {MAX_SCHEMAS} or {MAX_SCHEMA_CHARS} "
            f"characters: the {n} least recently used forgotten"
        )

    def _forget(self, sid: int) -> None:
        old = self.schemas.pop(sid, None)
        if old is None:
            return
        self._schema_chars -= old.chars
        key = old.key
        if key is not None and self._bound.get(key) == sid:
            del self._bound[key]

    def _bind(self, section: Section, detail: list[str]) -> None:
        token = ""
        for t in detail:
            if t.startswith("schema="):
                token = t
                break
        sid = parse_uint(token[7:])
        schema = self.schemas.get(sid) if sid is not None else None
        if schema is None or schema.kind != section.kind:
            section.status = "error"
            section.detail = (
                f"{UNKNOWN_SCHEMA} {token[7:][:20]!r}, which this stream "
                "does not hold: not decoded until the stream starts again"
            )
            section.text = ""
            self.undecoded += 1
            self._undecoded_in_frame = True
            return
        section.schema = schema
        assert self._frame is not None
        schema.used = self._frame.seq
        key = (section.kind, section.subject)
        old = self._bound.get(key)
        if old != schema.sid:
            if len(self._bound) >= 2 * MAX_SCHEMAS:  # keys of schemas no longer held
                self._bound = {k: v for k, v in self._bound.items() if v in self.schemas}
            self._bound[key] = schema.sid
            schema.key = key
            if old is not None:
                self._forget(old)  # the section's names changed: its old schema is done

    def _line(self, line: str, nbytes: int) -> Frame | None:
        if line.startswith("@@"):
            return self._control(line[2:], nbytes)
        return self._content(line, nbytes)

    def _control(self, line: str, nbytes: int) -> Frame | None:
        """A line that started with "@@", given without it (``nbytes``: the whole line's)."""
        if line.startswith("@"):  # escaped content ("@@@..."): one "@" goes
            return self._content("@@" + line, nbytes, "@" + line)
        tok = line.split()
        head = tok[0] if tok else ""
        if head == "section" and self._frame is not None:  # most control lines
            self._close_section()
            self._section_head = tok[1:]
            return None
        if head in ("fabtop-frame", "fabtop-event"):
            if self._frame is not None:
                what = "event" if self._frame.event else "frame"
                self._warn(f"{what} {self._frame.seq} truncated (no @@end)")
            self._start_frame(tok[1:], head == "fabtop-event")
            return None
        if self._frame is None:
            self._warn(f"control line outside a frame ignored: {('@@' + line)[:80]!r}")
            return None
        if head == "end":
            self._close_section()
            frame, self._frame = self._frame, None
            if not frame.event:
                self.undecoded_frames = self.undecoded_frames + 1 if self._undecoded_in_frame else 0
                self._undecoded_in_frame = False
            return frame
        self._warn(f"unknown control line ignored: {('@@' + line)[:80]!r}")
        return None

    def _content(self, line: str, nbytes: int, kept: str | None = None) -> Frame | None:
        """A content line outside the bulk path; ``kept``: what a section keeps of it."""
        if self._frame is None:
            if line.strip():
                self._warn(f"text outside a frame ignored: {line[:80]!r}")
            return None
        self._frame_bytes += nbytes
        if self._frame_bytes > MAX_FRAME_BYTES:
            self._warn(f"frame {self._frame.seq} larger than {MAX_FRAME_BYTES} bytes dropped")
            self._frame = None
            self._section_head = None
            self._section_lines = []
            return None
        if self._section_head is None:
            self._warn("text before the first section ignored")
            return None
        self._section_lines.append(line if kept is None else kept)
        return None

    def _start_frame(self, args: list[str], event: bool = False) -> None:
        self._section_head = None
        self._section_lines = []
        self._frame_bytes = 0
        try:
            seq, clock_ns = parse_uint(args[0]), parse_uint(args[1])
            uptime = parse_float(args[2])
            unix = parse_float(args[3]) if len(args) > 3 else None
            if seq is None or clock_ns is None or uptime is None or uptime < 0:
                raise ValueError(args)
            if unix is None:
                unix = clock_ns / 1e9
        except (IndexError, ValueError):
            self._warn(f"bad frame header ignored: {' '.join(args)[:80]!r}")
            self._frame = None
            return
        self._frame = Frame(seq, clock_ns, uptime, unix, event=event)
