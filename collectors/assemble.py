"""Turn one decoded probe frame into a :class:`fabtop.model.HostSample`.

One :class:`LinkSample` per netdev and per RDMA port; an RDMA port is merged with the
netdev behind it (``gid_attrs/ndevs/*``, or ``device/net/<name>`` on a one-port device).
Raw counters are kept per source (``netdev``, ``ethtool``, ``ib_port``, ``ib_hw``);
normalized metrics take, per metric, ethtool's port counters first, then the RDMA port's,
then the netdev's.

Assembly is total: each section (and each link) is read behind a guard, so a parser that
still raises costs that section, said in one warning line (``host: section: error: ...``),
never the frame. Section headers are cleaned of control characters here, and every
warning line once more as it is added.

A frame is assembled in two steps. Its *shape* (section headers, every text section but
the GPUs', the structured sections' names and which of their values came) is what stays
the same tick after tick on a host; it is built by the code below with each structured
value standing for its position, and kept per host. Each tick then only decodes the
values, puts them where the shape says, and makes what depends on them (normalized
metrics, saturated IB counters, read times, GPUs): the links, their records, QoS and the
parse of the text are not redone while the host's shape holds. One path builds every
sample, so a kept shape gives exactly what a new one would.

The slow sections a Pipeline carries into the frames between slow ticks (Frame.carried)
are the same objects until one of their kind comes again: what each reader made of one
is kept with them (_Tail), so a carried section is parsed once, however often the
shape is built again (every tick for the sh probe, whose counters are text); a Mac's
frames and the GPU sections, read every tick, take the same kept readings.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from operator import eq, is_, itemgetter
from typing import Any, ParamSpec, TypeVar, cast

from collectors.darwin import TICK_KIND as DARWIN_TICK_KIND
from collectors.darwin import assemble_darwin
from collectors.frames import UNKNOWN_SCHEMA, Frame, Section, TextRead
from collectors.gpu_sections import GPU_KINDS, gpus_from_frame, read_gpu_section
from collectors.guard import Guard
from collectors.normalize import (
    IB_HW_MAP,
    IB_LEGACY_WIDTH,
    IB_PORT_MAP,
    NETDEV_MAP,
    MetricPlan,
    Step,
    apply_plan,
    ethtool_plan,
    metric_plan,
    netdev_counters,
    pfc_priorities_from_names,
    saturated_ib_counters,
    step_names,
    step_value,
    without_unknown,
)
from collectors.numbers import U64_MAX, parse_uint
from collectors.parsers.ethtool import (
    DriverInfo,
    parse_ethtool_info,
    parse_ethtool_stats,
    stat_names,
)
from collectors.parsers.firewall import firewall_read, firewall_state
from collectors.parsers.ipaddr import parse_ip_addr
from collectors.parsers.qos import (
    parse_dcb_app,
    parse_dcb_apptrust,
    parse_dcb_buffer,
    parse_dcb_ets,
    parse_dcb_pfc,
    parse_mlnx_qos,
)
from collectors.parsers.sysfs import (
    CounterRun,
    NetdevRecord,
    RdmaDeviceRecord,
    RdmaPortRecord,
    apply_sysib_counters,
    apply_sysnet_counters,
    counter_runs,
    parse_kv_dump,
    parse_sysib,
    parse_sysnet,
)
from collectors.parsers.thunderbolt import parse_systb
from collectors.ruleset import FirewallState
from collectors.samples import (
    PORT_SLOW_SOURCE,
    SLOW_SOURCE,
    GidEntry,
    HostSample,
    LinkSample,
    MetricValue,
    QosConfig,
    SectionStatus,
    SoftwareVersions,
    ThunderboltInfo,
)
from collectors.structured import COUNTER_KINDS, keyed_values
from collectors.text import MAX_TEXT, clean
from collectors.values import Values, decode_whole
from collectors.version_sections import versions_from_frame

_T = TypeVar("_T")
_A = TypeVar("_A")

_TB_DRIVERS = frozenset({"thunderbolt-net", "thunderbolt_net"})

_ARPHRD_INFINIBAND = 32  # include/uapi/linux/if_arp.h: IPoIB netdevs


def assemble(host: str, frame: Frame, kept: Shapes | None = None) -> HostSample:
    """Build the typed sample of one host from one frame; never raises, whatever the frame.

    ``kept``: what is kept of each host between its frames, one per stream of frames (a
    Pipeline's own: the dashboard's and focus mode's frames of one host have two shapes);
    None: this module's.
    """
    sample = HostSample(host=host, seq=frame.seq, clock_ns=frame.clock_ns, uptime_s=frame.uptime_s)
    warn = _Warner(host, sample.warnings)
    shapes = _SHAPES if kept is None else kept
    last = shapes.get(host)
    if any(s.kind == DARWIN_TICK_KIND for s in frame.sections):
        # A macOS probe's frame: all text, read by collectors/darwin.py (see its docstring);
        # what is kept of the host is its carried sections' readings.
        frame = _cleaned(frame)
        tail = last if isinstance(last, _Tail) and last.sections is frame.carried else None
        if tail is None and frame.carried:
            tail = _Tail(frame.carried, (), {}, None).keep(
                last if isinstance(last, _Tail) else None
            )
            _keep(shapes, host, tail)
        _guard(
            warn,
            "assemble",
            None,
            None,
            assemble_darwin,
            frame,
            sample,
            warn,
            _read_now if tail is None else tail.read,
        )
        return sample
    # Carried sections read before, this very tuple (Frame.carried): their headers were
    # looked at then (a frame whose headers needed cleaning is rebuilt without carried).
    seen = (
        len(frame.carried)
        if frame.carried
        and isinstance(last, _Kept)
        and last.tail is not None
        and last.tail.sections is frame.carried
        else 0
    )
    # A bug outside the per-section guards costs the rest of this frame, said in one line.
    _guard(
        warn, "assemble", None, None, _assemble, host, _cleaned(frame, seen), sample, warn, shapes
    )
    return sample


def _cleaned(frame: Frame, seen: int = 0) -> Frame:
    """The frame with its section headers (kind, subject, status, detail) cleaned, but for
    its last ``seen`` sections' (known clean)."""
    sections = frame.sections
    # Nearly always every header is printable ASCII, which clean() leaves as it is: one
    # look at all of them together instead of four calls per section.
    look = sections[: len(sections) - seen] if seen else sections
    heads = " ".join([h for s in look for h in (s.kind, s.status, s.subject, s.detail) if h])
    if len(heads) <= MAX_TEXT and heads.isascii() and heads.isprintable():
        return frame
    for i, s in enumerate(sections):
        kind, status = clean(s.kind), clean(s.status)
        subject = clean(s.subject) if s.subject is not None else None
        detail = clean(s.detail) if s.detail is not None else None
        # clean() hands back the very string when there is nothing to remove: a section
        # is rebuilt only when one of its headers changed (almost never).
        if kind is s.kind and status is s.status and subject is s.subject and detail is s.detail:
            continue
        if sections is frame.sections:
            sections = list(sections)
        # s.schema: its names were cleaned when the stream defined it.
        sections[i] = Section(kind, subject, s.read_ns, status, detail, s.text, s.schema, s.values)
    if sections is frame.sections:
        return frame
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, sections)


# --- the two steps: a host's shape, kept; each tick's values, put where it says ----------

# Structured sections whose values the links hold (the rest of a frame is text).
_VALUE_KINDS = frozenset({"ethtool_S", *COUNTER_KINDS.values()})
# Sections read anew every tick whatever the shape (their text changes every tick).
_PER_TICK_KINDS = frozenset(GPU_KINDS)

_Decoded = dict[int, tuple[list[int | None] | None, list[str]]]  # section index -> values
# Section index -> the values it was read against and the positions that moved since.
_Deltas = dict[int, tuple[list[int | None], list[int]]]


def _assemble(host: str, frame: Frame, sample: HostSample, warn: _Warner, shapes: Shapes) -> None:
    sections = frame.sections
    had = shapes.get(host)
    kept = had if isinstance(had, _Kept) else None
    last = kept.values if kept is not None else {}
    values: dict[int, _Values] = {}
    decoded: _Decoded = {}
    deltas: _Deltas = {}
    temps: dict[str, dict[str, int]] = {}
    shaped = sections
    # The carried slow sections (Frame.carried) are read once while they stay the same:
    # on a real host they are most of a frame's sections (ethtool -i and dcb per netdev).
    carried = frame.carried
    tail = None
    if carried:
        tail = (
            kept.tail
            if kept is not None and kept.tail is not None and kept.tail.sections is carried
            else _tail(carried, kept.tail if kept else None)
        )
    end = len(sections) if tail is None else len(sections) - len(carried)
    # The shape's key: all of the frame but the values, the GPUs and the read times.
    parts: list[tuple[object, ...]] = []
    for i, s in enumerate(sections if tail is None else sections[:end]):
        if s.schema is not None and s.kind in _VALUE_KINDS:
            got = s.values  # as the stream's decoder read them
            if got is None:  # a frame made in-process (tests, tools): read here
                before = last.get(i)
                since = (
                    before[2] if before is not None and before[:2] == (s.kind, s.subject) else None
                )
                got = decode_whole(s.text, s.schema.names, since)
                if got.vals is not None:
                    values[i] = (s.kind, s.subject, got)
            decoded[i] = (got.vals, got.warnings)
            if got.moved is not None and got.base is not None:
                deltas[i] = (got.base, got.moved)
            # Which values came: a value not read ("-", or no number) is no key of a dict.
            parts.append((s.kind, s.subject, s.status, s.detail, s.schema.names, got.unread))
        elif s.kind in _PER_TICK_KINDS:
            parts.append((s.kind, s.subject, s.status, s.detail))
        else:
            part, cut = _text_part(s, temps)
            if cut is not None:
                if shaped is sections:
                    shaped = list(sections)
                shaped[i] = cut
            parts.append(part)
    if tail is None:
        key = tuple(parts)
    else:
        key = tuple(parts) + tail.parts
        for kind, got_temps in tail.temps.items():
            into = temps.setdefault(kind, {})
            for owner, v in got_temps.items():
                if v > into.get(owner, -1):
                    into[owner] = v
        if tail.shaped is not None:
            shaped = (
                sections[:end] + tail.shaped if shaped is sections else shaped[:end] + tail.shaped
            )
    if kept is not None and kept.key == key:
        kept.values = values
    else:
        bare = (
            frame
            if shaped is sections
            else Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, shaped)
        )
        kept = _Kept(
            key, _build_shape(host, bare, decoded, _read_now if tail is None else tail.read), values
        )
        _keep(shapes, host, kept)
    if tail is not None:
        kept.tail = tail
    _fill(kept.shape, frame, decoded, deltas, temps, sample, warn, end, tail)


def _keep(shapes: Shapes, host: str, kept: _Kept | _Tail) -> None:
    if len(shapes) >= _SHAPES_MAX and host not in shapes:
        del shapes[next(iter(shapes))]  # the host kept longest ago
    shapes[host] = kept


@dataclass(slots=True)
class _Tail:
    """What a frame's carried sections give the key (their parts, NIC temperatures, the
    sections without those), read once for as long as the very same tuple comes; and
    what each reader made of each of them (a carried section is parsed once, whatever
    the frames between and however often the host's shape is built again)."""

    sections: tuple[Section, ...]
    parts: tuple[tuple[object, ...], ...]
    temps: dict[str, dict[str, int]]
    shaped: list[Section] | None  # None: as they came
    # Where each of its sections (as came, and as shaped) is: it holds them, so their
    # ids are theirs for as long as it lives.
    at: dict[int, int] = field(default_factory=dict)
    reads: dict[tuple[object, int], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.at = {id(s): i for i, s in enumerate(self.sections)}
        self.at.update((id(s), i) for i, s in enumerate(self.shaped or ()))

    def read(self, parse: Callable[[str], _T], sec: Section) -> _T:
        """``parse(sec.text)``: once per carried section; the memo's for any other."""
        i = self.at.get(id(sec))
        return _memo(parse, sec.text) if i is None else self._once(parse, i, sec.text)

    def read_section(self, read: Callable[[Section], _T], sec: Section) -> _T:
        """``read(sec)``: once per carried section; anew for any other."""
        i = self.at.get(id(sec))
        return read(sec) if i is None else self._once(read, i, sec)

    def keep(self, prev: _Tail | None) -> _Tail:
        """What ``prev`` read of the sections both hold: a Pipeline carries each section on,
        the very object, until one of its kind comes again (a new tail each time any does),
        so a section is parsed once, not once per tail."""
        if prev is not None:
            for (read, i), got in prev.reads.items():
                j = self.at.get(id(prev.sections[i]))
                if j is not None and self.sections[j] is prev.sections[i]:
                    self.reads[(read, j)] = got
        return self

    def _once(self, read: Callable[[_A], _T], i: int, arg: _A) -> _T:
        key = (read, i)
        got = self.reads.get(key, self)  # (self: not read yet; a reading may be None)
        if got is self:
            got = self.reads[key] = read(arg)
        return cast(_T, got)


def _read_now(parse: Callable[[str], _T], sec: Section) -> _T:
    """How a section is read where no tail keeps it (TextRead): the memo's."""
    return _memo(parse, sec.text)


def _tail(carried: tuple[Section, ...], prev: _Tail | None) -> _Tail | None:
    """The carried sections read as _assemble reads a frame's, with what ``prev`` read of
    those it held too; None when one has values by position (read every tick, never
    cached)."""
    parts: list[tuple[object, ...]] = []
    temps: dict[str, dict[str, int]] = {}
    shaped: list[Section] | None = None
    for i, s in enumerate(carried):
        if s.schema is not None and s.kind in _VALUE_KINDS:
            return None
        if s.kind in _PER_TICK_KINDS:
            parts.append((s.kind, s.subject, s.status, s.detail))
            continue
        part, cut = _text_part(s, temps)
        if cut is not None:
            if shaped is None:
                shaped = list(carried)
            shaped[i] = cut
        parts.append(part)
    return _Tail(carried, tuple(parts), temps, shaped).keep(prev)


def _text_part(
    s: Section, temps: dict[str, dict[str, int]]
) -> tuple[tuple[object, ...], Section | None]:
    """A text section's part of the shape's key, and the section as the shape keeps it
    when that differs: its NIC temperatures taken out into ``temps``, which every tick
    reads anew (None: as it came)."""
    text = s.text
    cut = None
    if s.kind in _TEMP_KINDS and s.schema is None and "/hwmon/" in text:
        text = _hwmon_values(text, temps.setdefault(_TEMP_KINDS[s.kind], {}))
        if text is not s.text:
            cut = Section(s.kind, s.subject, s.read_ns, s.status, s.detail, text)
    key = _probe_key(text) if s.kind == "probe" else text
    return (s.kind, s.subject, s.status, s.detail, key, s.schema is None), cut


@dataclass(slots=True)
class _Kept:
    """What is kept of a host between its frames: its shape, and the last values of the
    structured sections it read itself (a frame not from a stream's decoder), by section."""

    key: tuple[object, ...]
    shape: _Shape
    values: dict[int, _Values]
    tail: _Tail | None = None  # the carried sections as last read (Frame.carried)


# A structured section's kind, subject and last values.
_Values = tuple[str, str | None, Values]


# NIC temperatures (hwmon, millidegrees) are in the sysfs text and move every few ticks:
# read as values, like the counters, so that the shape holds while they move. A line
# that is not plain stays in the shape's text, where the parser says what is wrong. Only
# printable ASCII is taken: such a line reads the same to the parser (nothing to clean).
_TEMP_KINDS = {"sysnet": "net", "sysnet_slow": "net", "sysib": "ib", "sysib_slow": "ib"}
_HWMON_LINE = re.compile(
    r"([!-.0-~]{1,64})(/device/hwmon/[!-.0-~]{1,64}/temp[0-9]{1,4}_input) ([0-9]{1,9})"
)


def _hwmon_values(text: str, into: dict[str, int]) -> str:
    """``text`` without its hwmon temperature values; the hottest of each owner goes to
    ``into`` (in millidegrees, as the parser reads them)."""
    parts: list[str] = []
    done = 0
    at = text.find("/hwmon/")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        m = _HWMON_LINE.fullmatch(text, start, end)
        if m is not None:
            owner, path, milli = m.groups()
            v = int(milli)
            if v > into.get(owner, -1):
                into[owner] = v
            parts.append(text[done:start])
            parts.append(owner + path)
            done = end
        at = text.find("/hwmon/", end)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


# A host's last shape and values (a macOS host's: its carried sections' readings); one per
# host: bounded by the hosts watched (and this).
Shapes = dict[str, "_Kept | _Tail"]
_SHAPES: Shapes = {}
_SHAPES_MAX = 4096


class _Pos:
    """A structured value while a shape is built: the section and position it comes from."""

    __slots__ = ("index", "section")

    def __init__(self, section: int, index: int) -> None:
        self.section = section
        self.index = index


class _Resolver:
    """One dict of a shape (name -> position, or a value read from text), made each tick.

    A shape is its host's own, so a resolver keeps the dict it made last and the values it
    made it of: when this tick's values were read against those, only the positions that
    moved are set, in a copy of it (three in four counters do not move in a tick).
    """

    __slots__ = (
        "base",
        "first",
        "get",
        "items",
        "moved",
        "names",
        "out",
        "section",
        "tops",
        "vals",
    )

    def __init__(self, template: Mapping[str, object], placed: bool = True) -> None:
        """``placed``: the frame had values by position (else none is looked for)."""
        self.names = tuple(template)
        self.section = -1
        self.first = -1  # where the run starts (-1: not one run)
        self.get: Callable[[list[int | None]], Any] | None = None
        self.vals: list[int | None] | None = None  # the values the last dict was made of
        self.out: dict[str, int] | None = None  # the last dict made
        # The dict made before it, and the positions whose values moved between the two
        # (None: any may have): which metrics to make again (_metrics).
        self.base: dict[str, int] | None = None
        self.moved: list[int] | tuple[()] | None = None
        self.tops: tuple[int, ...] = ()  # the legacy PMA counters' all-ones (_saturated)
        places = [v for v in template.values() if isinstance(v, _Pos)] if placed else []
        if not places:  # all read from text (the sh probe): a copy each tick
            self.items: dict[str, object] | tuple[tuple[str, object], ...] = dict(template)
            return
        self.items = tuple(template.items())
        if (
            len(places) > 1
            and len(places) == len(template)
            and all(p.section == places[0].section for p in places)
        ):
            # The usual dict: every value from one section, taken in one call into C.
            self.section = places[0].section
            first, last = places[0].index, places[-1].index
            if [p.index for p in places] == list(range(first, last + 1)):
                self.first = first
                self.get = itemgetter(slice(first, last + 1))  # a run: one slice
            else:
                self.get = itemgetter(*(p.index for p in places))

    def __call__(self, decoded: _Decoded, deltas: _Deltas) -> dict[str, int]:
        moved: list[int] | tuple[()] | None = None
        if self.get is not None:
            vals = decoded[self.section][0]
            assert vals is not None  # a shape places values only where they came
            delta = deltas.get(self.section)
            if delta is not None and self.vals is delta[0] and self.first >= 0:
                assert self.out is not None  # made with self.vals
                out = self.out.copy()
                names, first, all_moved = self.names, self.first, delta[1]
                # moved is in order: the run's part of it lies between two bisections
                moved = all_moved[
                    bisect_left(all_moved, first) : bisect_left(all_moved, first + len(names))
                ]
                for p in moved:
                    out[names[p - first]] = vals[p]  # type: ignore[assignment]
            else:
                out = dict(zip(self.names, self.get(vals), strict=True))
            self.vals = vals
        elif isinstance(self.items, dict):
            out = self.items.copy()  # type: ignore[assignment]
            moved = ()  # all read from the shape's text
        else:
            out = {}
            for name, v in self.items:
                if isinstance(v, _Pos):
                    got = decoded[v.section][0]
                    assert got is not None
                    out[name] = got[v.index]  # type: ignore[assignment]
                else:
                    out[name] = v  # type: ignore[assignment]
        self.base, self.out, self.moved = self.out, out, moved
        return out


@dataclass(slots=True)
class _LinkPlan:
    """One link of a shape: what stays, and how each tick fills the rest."""

    link: LinkSample  # its fixed facts; counters, metrics, saturated and read_ns stay empty
    counters: tuple[tuple[str, _Resolver], ...] = ()  # LinkSample.counters, source by source
    # What the normalizers take beside link.counters (None: that normalizer is not run):
    carrier: tuple[int | None, int | None] | None = None  # the netdev's carrier counts
    rdma: bool = False  # an RDMA port's link: its counters and hw_counters make metrics
    ethtool: bool = False
    legacy: _Resolver | None = None  # the RDMA port's legacy PMA counters (saturation)
    # Those of them read on slow ticks only (ib_port_tick) that read their maximum: their
    # values are the shape's own text, so found once.
    slow_saturated: tuple[str, ...] = ()
    read_at: int | None = None  # the section whose read time the counters have
    # Whose hwmon temperatures the link shows: its netdev's, else its RDMA device's, each
    # with the hottest read from the shape's own text (a line that was not plain).
    temp: tuple[str | None, float | None, str | None, float | None] | None = None
    # normalize's plans for its netdev, RDMA port, hw_counters and ethtool counters (the
    # names are the shape's: which raw names make each metric is found once).
    plans: tuple[MetricPlan, MetricPlan, MetricPlan, MetricPlan] = ((), (), (), ())
    # Per plan, the raw names listed but not read (unread: part of the shape's key): a
    # metric summed from one of them is unknown, never the sum of the other parts.
    lost: tuple[frozenset[str], ...] = (frozenset(),) * 4
    # Which of the plans run (netdev, RDMA port, hw_counters, ethtool: 0 to 3), in order.
    runs: tuple[int, ...] = ()
    # Per counter source (as .counters): its positions a metric reads, and which metrics
    # each makes; None until _plan_metrics made them (no metric is then made again alone).
    feeds: tuple[tuple[frozenset[int], dict[int, tuple[str, ...]]], ...] | None = None
    # Each metric's steps, the winning plan's first: (which plan, step).
    steps: dict[str, tuple[tuple[int, Step], ...]] | None = None
    # The counters dicts (as .counters) of the tick whose metrics these are.
    made: tuple[tuple[dict[str, int], ...], dict[str, MetricValue]] | None = None
    # The link's and its QoS's fields in order: a tick's own are made in one call.
    fields: tuple[Any, ...] = ()
    qos: tuple[Any, ...] | None = None


@dataclass(slots=True)
class _Shape:
    """What a host's frames keep tick after tick, and where each tick's values go."""

    sections: tuple[tuple[int, str, str | None, str, str | None], ...]  # index, header
    # Warning lines in frame order; (index, kind, subject): that structured section's decode
    # warnings go there; a _LinkPlan: that link's metrics are made there (and a failure said).
    warnings: list[str | tuple[int, str, str | None] | _LinkPlan]
    links: list[_LinkPlan]
    cpu_throttle_count: int | None
    probe: str | None
    versions: SoftwareVersions | None = None  # slow text sections: part of the shape
    firewall: FirewallState | None = None  # parsed once per shape: never changed after
    thunderbolt: ThunderboltInfo | None = None  # shared by the samples: read-only
    metrics_at_once: bool = False  # the warnings make the metrics of .links, in order
    gpu_at: tuple[int, ...] = ()  # where the GPU sections are (read every tick)
    # The statuses of a frame's carried sections, made once for that very tuple.
    tail_status: tuple[tuple[Section, ...], list[SectionStatus]] | None = None


def _build_shape(host: str, frame: Frame, decoded: _Decoded, read: TextRead) -> _Shape:
    """Run the whole assembly once, each structured value standing for its position.

    ``read``: how the readers parse a text section (the tail keeps each carried one's).
    """
    index = {id(s): i for i, s in enumerate(frame.sections)}
    values: dict[int, list[int | None] | None] = {}
    for i, (vals, _) in decoded.items():
        values[i] = (
            None
            if vals is None
            else cast(
                list[int | None], [None if v is None else _Pos(i, j) for j, v in enumerate(vals)]
            )
        )
    warn = _ShapeWarner(host)
    b = _Build(frame, warn, index, values, read)
    b.thunderbolt = _guard(warn, "systb_slow", None, None, _thunderbolt, b)
    statuses = []
    for i, s in enumerate(frame.sections):
        detail = s.detail
        if s.schema is not None:  # "schema=7": how the values came, nothing to show
            detail = " ".join(t for t in (detail or "").split() if not t.startswith("schema="))
        statuses.append((i, s.kind, s.subject, s.status, detail or None))
    links = _guard(warn, "assemble", None, [], _links, b)
    probe = HostSample("", 0, 0, 0.0)
    cpu = _guard(warn, "cputhrottle", None, None, _cpu_throttle, b)
    _guard(warn, "probe", None, None, _probe_notes, frame, probe, warn)
    versions = _guard(warn, "versions", None, None, versions_from_frame, frame, read)
    fw = _guard(warn, "firewall", None, None, _firewall, b)
    # Every link's metrics are made at its place in the warnings: when those places are
    # the links, in their order, _fill may make them all in one try.
    at_once = [item for item in warn.plan if isinstance(item, _LinkPlan)]
    return _Shape(
        tuple(statuses),
        warn.plan,
        links,
        cpu,
        probe.probe,
        versions,
        fw,
        b.thunderbolt,
        len(at_once) == len(links) and all(map(is_, at_once, links)),
        tuple(i for i, s in enumerate(frame.sections) if s.kind in _PER_TICK_KINDS),
    )


@dataclass(slots=True)
class _Build:
    """What the steps of a shape's build share."""

    frame: Frame
    warn: _ShapeWarner
    index: dict[int, int]  # id(section) -> its index in the frame
    values: dict[int, list[int | None] | None]  # section index -> its values, as positions
    read: TextRead  # parse(section.text), or the tail's reading of a carried section
    thunderbolt: ThunderboltInfo | None = None
    # (kind, subject) and (kind, None) -> the first such section (Frame.find's answer)
    found: dict[tuple[str, str | None], Section] | None = None

    def of(self, sec: Section) -> tuple[int, list[int | None] | None]:
        i = self.index[id(sec)]
        return i, self.values[i]

    def find(self, kind: str, subject: str | None = None) -> Section | None:
        """``frame.find``, from an index made once: each link looks for a few sections of
        its own, and a frame of thousands of netdevs has thousands of sections."""
        found = self.found
        if found is None:
            found = self.found = {}
            for sec in self.frame.sections:
                found.setdefault((sec.kind, sec.subject), sec)
                found.setdefault((sec.kind, None), sec)
        return found.get((kind, subject))


def _links(b: _Build) -> list[_LinkPlan]:
    warn = b.warn
    netdevs = _guard(warn, "sysnet", None, {}, _sysnet, b)
    devices = _guard(warn, "sysib", None, {}, _sysib, b)
    slow_names = _guard(warn, "sysib_slow", None, {}, _slow_names, b)
    infos = _driver_infos(b)
    ethtool = _ethtool_stats(b)

    found: dict[str, _LinkPlan] = {}
    claimed: set[str] = set()
    for dev in devices.values():
        for port in dev.ports.values():
            ndev = _netdev_of(dev, port)
            if ndev in claimed:  # one netdev over two ports (bond): keep the ports apart
                ndev = None
            if ndev is not None:
                claimed.add(ndev)
            rec = netdevs.get(ndev) if ndev else None
            where = f"{dev.name}/{port.port}"
            lp = _guard(
                warn,
                "sysib",
                where,
                None,
                _rdma_link,
                dev,
                port,
                rec,
                ndev,
                slow_names,
                bool(b.values),
            )
            if lp is not None:
                found[lp.link.id] = lp
    for name, netdev in netdevs.items():
        if name not in claimed:
            net_link = _guard(warn, "sysnet", name, None, _netdev_link, netdev)
            if net_link is not None:
                found[name] = net_link

    if b.thunderbolt is not None:
        _tb_rates(found, b.thunderbolt)
    addresses = _guard(warn, "ip_addr", None, None, _addresses, b)
    for lp in found.values():
        if addresses is not None and lp.link.netdev is not None:
            lp.link.addresses = addresses.get(lp.link.netdev, ())  # read: none on it
        _finish(lp, b, infos, ethtool, netdevs, warn)
    return list(found.values())


def _addresses(b: _Build) -> dict[str, tuple[str, ...]] | None:
    """Each netdev's addresses (``ip -o addr show``, slow): None when not read whole."""
    sec = b.frame.find("ip_addr")
    if sec is None or sec.schema is not None or sec.status != "ok":
        return None  # a cut or failed listing cannot say a netdev has no address
    parsed = b.read(parse_ip_addr, sec)
    b.warn.add("ip_addr", None, parsed.warnings)
    return parsed.addresses


def _thunderbolt(b: _Build) -> ThunderboltInfo | None:
    """The host's Thunderbolt domain (Linux sysfs), from its latest slow section."""
    secs = _texts(b.frame, "systb_slow")
    if not secs:
        return None
    parsed = b.read(parse_systb, secs[-1])
    b.warn.add("systb_slow", None, parsed.warnings)
    return parsed.info


def _tb_rates(found: dict[str, _LinkPlan], tb: ThunderboltInfo) -> None:
    """A thunderbolt-net netdev's rate from its XDomain (lane speed x lanes) where the
    kernel gave it no ``speed`` (thunderbolt-net has link settings only since late 2025:
    net: thunderbolt: Allow reading link settings, netdev list)."""
    for peer in tb.peers:
        lp = found.get(peer.netdev) if peer.netdev else None
        if lp is not None and lp.link.rate_gbps is None:
            lp.link.rate_gbps = peer.total_gbps


def _fill(
    shape: _Shape,
    frame: Frame,
    decoded: _Decoded,
    deltas: _Deltas,
    temps: dict[str, dict[str, int]],
    sample: HostSample,
    warn: _Warner,
    end: int,
    tail: _Tail | None,
) -> None:
    """One tick's sample from its host's shape and its own values; from ``end`` on, the
    frame's sections are its carried ones (Frame.carried, read as ``tail`` says)."""
    sections = frame.sections
    statuses = shape.sections if end == len(sections) else shape.sections[:end]
    sample.sections = [
        SectionStatus(kind, subject, status, sections[i].read_ns, detail)
        for i, kind, subject, status, detail in statuses
    ]
    if end < len(sections):
        # The shape's own: a key that matched had these sections at these places.
        noted = shape.tail_status
        if noted is None or noted[0] is not frame.carried:
            noted = shape.tail_status = (
                frame.carried,
                [
                    SectionStatus(kind, subject, status, sections[i].read_ns, detail)
                    for i, kind, subject, status, detail in shape.sections[end:]
                ],
            )
        sample.sections += noted[1]
        sample.carried_sections = noted[1]
    links = sample.links
    for lp in shape.links:
        link = links[lp.link.id] = LinkSample(*lp.fields)
        link.counters = {source: r(decoded, deltas) for source, r in lp.counters}
        link.metrics = {}  # made where the warnings say (below)
        if lp.qos is not None:
            link.qos = QosConfig(*lp.qos)  # each sample's own, as a new build gives
        link.saturated = _saturated(lp.legacy, decoded, deltas) if lp.legacy is not None else []
        if lp.slow_saturated:
            link.saturated = sorted([*link.saturated, *lp.slow_saturated])
        if lp.read_at is not None:
            link.read_ns = sections[lp.read_at].read_ns
        if temps and lp.temp is not None:
            link.temperature_c = _temperature(lp.temp, temps)
    # The metrics of all links in one try: a failure is said at its link's place in the
    # warnings, where each link's are then made again behind a guard of its own.
    each = not shape.metrics_at_once
    left: list[str] = []  # metrics left out (a sum beyond 64 bits): said, not silent
    if not each:
        try:
            for lp in shape.links:
                _metrics(links[lp.link.id], lp, left)
        except Exception:
            each = True
    for item in shape.warnings:
        if isinstance(item, str):
            warn.put(item)
        elif isinstance(item, tuple):
            i, kind, subject = item
            warn.add(kind, subject, decoded[i][1])
        elif each:
            link = links[item.link.id]
            _guard(warn, "link", link.id, None, _metrics, link, item, left)
    if left:
        warn.add("metrics", None, left)
    sample.cpu_throttle_count = shape.cpu_throttle_count
    sample.probe = shape.probe
    sample.versions = shape.versions  # frozen: shared by the samples of one shape
    sample.firewall = shape.firewall
    sample.thunderbolt = shape.thunderbolt
    _gpus(frame, sample, warn, shape.gpu_at, tail)


def _saturated(legacy: _Resolver, decoded: _Decoded, deltas: _Deltas) -> list[str]:
    """saturated_ib_counters of the link's legacy PMA counters this tick.

    Nearly always none reads its maximum: one look at the values by position says so,
    without making their dict (the resolver then has no last dict to update: its next
    call makes the whole dict, which gives the same).
    """
    if legacy.get is not None:
        vals = decoded[legacy.section][0]
        assert vals is not None  # a shape places values only where they came
        if not any(map(eq, legacy.get(vals), legacy.tops)):
            return []
    return saturated_ib_counters(legacy(decoded, deltas))


def _metrics(link: LinkSample, lp: _LinkPlan, left: list[str]) -> None:
    # Precedence: netdev < RDMA port < ethtool port counters, metric by metric.
    counters = link.counters
    made = lp.made
    metrics = _moved_metrics(lp, counters, made) if made is not None else None
    if metrics is None:
        metrics = {}
        for i in lp.runs:
            metrics.update(apply_plan(lp.plans[i], _plan_input(i, lp, counters)))
    if lp.steps is not None and len(metrics) < len(lp.steps):
        left.extend(
            f"{link.id} {m}: sum beyond 64 bits, left out" for m in lp.steps if m not in metrics
        )
    lp.made = (tuple(counters.values()), metrics)
    link.metrics = metrics


def _moved_metrics(
    lp: _LinkPlan,
    counters: dict[str, dict[str, int]],
    made: tuple[tuple[dict[str, int], ...], dict[str, MetricValue]],
) -> dict[str, MetricValue] | None:
    """The metrics of last tick with those made of a moved counter made again; None when
    that cannot be known (the dicts are not last tick's with some values moved, or a
    metric came or went: it would not keep its place in the dict)."""
    feeds, steps = lp.feeds, lp.steps
    if feeds is None or steps is None or len(made[0]) != len(lp.counters):
        return None
    again: set[str] = set()
    for (_, r), was, (where, makes) in zip(lp.counters, made[0], feeds):  # noqa: B905 (lengths checked)
        moved = r.moved
        if moved is None or r.base is not was:
            return None
        if moved:
            for p in where.intersection(moved):
                again.update(makes[p])
    metrics = made[1].copy()
    inputs: list[Mapping[str, int] | None] = [None, None, None, None]
    for metric in again:
        v: MetricValue | None = None
        for i, step in steps[metric]:
            got = inputs[i]
            if got is None:
                got = inputs[i] = _plan_input(i, lp, counters)
            one = step[5]
            if one.__class__ is str:  # the usual step: one name, scale 1 (apply_plan's)
                v = got[one]
                if v <= U64_MAX:
                    break
                v = None
                continue
            v = step_value(step, got)
            if v is not None:
                break
        if v is None:
            if metric in metrics:
                return None  # rare: a sum beyond 64 bits
        elif metric in metrics:
            metrics[metric] = v
        else:
            return None
    return metrics


def _plan_input(i: int, lp: _LinkPlan, counters: dict[str, dict[str, int]]) -> Mapping[str, int]:
    """What plan ``i`` of the link reads: each source's counters are the link's own
    (netdev: its statistics and carrier counts; ib_port: counters with counters_ext over
    them); only hw_counters differ, the slow ones included here."""
    if i == 0:
        assert lp.carrier is not None  # plan 0 runs only then
        return netdev_counters(counters.get("netdev", _EMPTY), *lp.carrier)
    if i == 1:
        return {**counters.get("ib_port", _EMPTY), **counters.get(PORT_SLOW_SOURCE, _EMPTY)}
    if i == 2:
        return {**counters.get("ib_hw", _EMPTY), **counters.get(SLOW_SOURCE, _EMPTY)}
    return counters["ethtool"]


_EMPTY: dict[str, int] = {}
# In the order their classes take them.
_LINK_FIELDS = tuple(f.name for f in fields(LinkSample))
_QOS_FIELDS = tuple(f.name for f in fields(QosConfig))


def _temperature(
    temp: tuple[str | None, float | None, str | None, float | None],
    temps: dict[str, dict[str, int]],
) -> float | None:
    """The link's temperature this tick, as the parser would make it of the whole text."""
    rec, rec_base, dev, dev_base = temp
    if rec is not None:
        t = _hotter(rec_base, temps.get("net", _EMPTY).get(rec))
        if t is not None:  # the netdev's wins over its RDMA device's
            return t
    return _hotter(dev_base, temps.get("ib", _EMPTY).get(dev)) if dev is not None else None


def _hotter(base: float | None, milli: int | None) -> float | None:
    if milli is None:
        return base
    t = milli / 1000.0
    return t if base is None or t > base else base


_D = TypeVar("_D")
_P = ParamSpec("_P")


def _guard(
    warn: _Warner,
    kind: str,
    subject: str | None,
    default: _D,
    step: Callable[_P, _T],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> _T | _D:
    """Run one section's step; a failure costs that section, in one warning line."""
    guard = Guard("error")  # the one guard (collectors/guard.py): traceback logged at debug
    with guard:
        return step(*args, **kwargs)
    warn.add(kind, subject, [guard.error or "error"])
    return default


_MEMO: dict[tuple[Callable[[str], object], str], object] = {}
_MEMO_MAX = 1024
# The memo's keys are remote text: bounded in bytes too, not only in entries (1024 texts
# at a section's 8 MiB cap would be 8 GiB). A text beyond _MEMO_TEXT_MAX is parsed, not kept.
_MEMO_BYTES_MAX = 32 * 1024 * 1024
_MEMO_TEXT_MAX = 1024 * 1024
_memo_bytes = 0


def _memo(parse: Callable[[str], _T], text: str) -> _T:
    """Parse slow-cadence output once: the collector re-sends the same text every tick.

    Callers treat the result as read-only (parsers are pure, so sharing is safe).
    """
    global _memo_bytes
    if len(text) > _MEMO_TEXT_MAX:
        return parse(text)
    key = (parse, text)
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= _MEMO_MAX or _memo_bytes + len(text) > _MEMO_BYTES_MAX:
            _MEMO.clear()
            _memo_bytes = 0
        hit = _MEMO[key] = parse(text)
        _memo_bytes += len(text)
    return hit  # type: ignore[return-value]


MAX_FRAME_WARNINGS = 200  # each parser caps its own; 259 netdevs must not make 13,000 lines


class _Warner:
    """Prefixes every parser warning with host, section kind and subject; cleans and bounds."""

    def __init__(self, host: str, sink: list[str]) -> None:
        self.host = host
        self.sink = sink

    def add(self, kind: str, subject: str | None, messages: list[str]) -> None:
        where = f"{kind} {subject}" if subject else kind
        for m in messages:
            # Parsers clean what they read; this is the backstop for anything quoted
            # into a message (an exception's text, a probe note, a section detail).
            if not self.put(clean(f"{self.host}: {where}: {m}")):
                return

    def put(self, line: str) -> bool:
        """Add one finished line; False once the frame's bound is reached."""
        n = len(self.sink)
        if n < MAX_FRAME_WARNINGS:
            self.sink.append(line)
            return True
        if n == MAX_FRAME_WARNINGS:
            self.sink.append(f"{self.host}: further warnings of this frame suppressed")
        return False


class _ShapeWarner(_Warner):
    """Keeps a shape's warnings in order, with the places of what each tick adds."""

    def __init__(self, host: str) -> None:
        super().__init__(host, [])
        self.plan: list[str | tuple[int, str, str | None] | _LinkPlan] = []
        self._lines = 0

    def put(self, line: str) -> bool:
        # Past the frame's bound a line is never shown, whatever a tick adds before it.
        if self._lines > MAX_FRAME_WARNINGS:
            return False
        self._lines += 1
        self.plan.append(line)
        return True

    def values(self, section: int, kind: str, subject: str | None) -> None:
        """Here go the warnings of decoding section ``section``'s values, each tick."""
        self.plan.append((section, kind, subject))

    def metrics(self, lp: _LinkPlan) -> None:
        """Here the link's metrics are made each tick (a failure is said here)."""
        self.plan.append(lp)


def _texts(frame: Frame, kind: str) -> list[Section]:
    # A section that timed out or failed may still carry partial text worth reading.
    return [s for s in frame.all(kind) if s.schema is None and s.text.strip()]


def _sysfs_text(frame: Frame, kind: str) -> tuple[str, str]:
    # Slow-cadence files (PCIe, ECN enables, firmware, RoCE netdev mapping) come in
    # <kind>_slow; the collector carries the latest one into the frames between.
    secs = _texts(frame, kind) + _texts(frame, kind + "_slow")
    return "\n".join(s.text for s in secs), kind


def _sysnet(b: _Build) -> dict[str, NetdevRecord]:
    text, kind = _sysfs_text(b.frame, "sysnet")
    netdevs: dict[str, NetdevRecord] = {}
    if text:
        parsed = _memo(parse_sysnet, text)
        b.warn.add(kind, None, parsed.warnings)
        netdevs = {name: _own_netdev(rec) for name, rec in parsed.netdevs.items()}
    for sec, runs, vals in _counter_sections(b, "sysnet"):
        _guard(b.warn, sec.kind, None, None, apply_sysnet_counters, netdevs, runs, vals)
    return netdevs


def _sysib(b: _Build) -> dict[str, RdmaDeviceRecord]:
    text, kind = _sysfs_text(b.frame, "sysib")
    devices: dict[str, RdmaDeviceRecord] = {}
    if text:
        parsed = _memo(parse_sysib, text)
        b.warn.add(kind, None, parsed.warnings)
        devices = {name: _own_device(dev) for name, dev in parsed.devices.items()}
    for sec, runs, vals in _counter_sections(b, "sysib"):
        _guard(b.warn, sec.kind, None, None, apply_sysib_counters, devices, runs, vals)
    return devices


_R = TypeVar("_R", NetdevRecord, RdmaDeviceRecord, RdmaPortRecord, QosConfig)


def _shallow(obj: _R) -> _R:
    """``copy.copy`` of a slots dataclass at a third of its cost."""
    cls = type(obj)
    mine = cls.__new__(cls)
    for name in cls.__slots__:
        setattr(mine, name, getattr(obj, name))
    return mine


def _own_netdev(rec: NetdevRecord) -> NetdevRecord:
    """A frame's own copy of a memoized record: what the frame fills in is its own."""
    mine = _shallow(rec)
    mine.statistics, mine.lost = dict(rec.statistics), set(rec.lost)
    return mine


def _own_device(dev: RdmaDeviceRecord) -> RdmaDeviceRecord:
    mine = _shallow(dev)
    mine.ports = {}
    for n, port in dev.ports.items():
        p = mine.ports[n] = _shallow(port)
        p.counters, p.counters_ext = dict(port.counters), dict(port.counters_ext)
        p.hw_counters = dict(port.hw_counters)
        p.lost, p.absent = set(port.lost), set(port.absent)
    return mine


_Placed = tuple[Section, tuple[CounterRun, ...], list[int | None]]


def _counter_sections(b: _Build, kind: str) -> list[_Placed]:
    """The structured counter sections of ``sysnet``/``sysib``, placed by position."""
    out: list[_Placed] = []
    for sec in b.frame.all(COUNTER_KINDS[kind]):
        if sec.schema is None:
            if sec.status != "ok":
                detail = f" ({sec.detail})" if sec.detail else ""
                b.warn.add(sec.kind, None, [f"{sec.status}{detail}"])
            continue
        placed = _guard(b.warn, sec.kind, None, None, _placed, b, sec)
        if placed is not None:
            out.append(placed)
    return out


def _placed(b: _Build, sec: Section) -> _Placed | None:
    assert sec.schema is not None
    plan: tuple[tuple[CounterRun, ...], list[str]] | None = sec.schema.plans.get("runs")
    if plan is None:
        plan = sec.schema.plans["runs"] = counter_runs(sec.kind, sec.schema.names)
    runs, plan_warnings = plan
    b.warn.add(sec.kind, None, plan_warnings)
    if sec.status != "ok":
        detail = f" ({sec.detail})" if sec.detail else ""
        b.warn.add(sec.kind, None, [f"{sec.status}{detail}"])
    i, vals = b.of(sec)
    b.warn.values(i, sec.kind, None)
    return (sec, runs, vals) if vals is not None else None


# The counter source of an RDMA port's files, by their directory.
_PORT_DIRS = {"counters": "ib_port", "counters_ext": "ib_port", "hw_counters": "ib_hw"}


def _slow_names(b: _Build) -> dict[tuple[str, int, str], frozenset[str]]:
    """Port counters the probe reads on slow ticks only (ib_port_tick, ib_hw_tick), by
    (device, port, their source: ib_port or ib_hw)."""
    out: dict[tuple[str, int, str], frozenset[str]] = {}
    for sec in _texts(b.frame, "sysib_slow"):
        out.update(b.read(_slow_in_text, sec))
    return out


def _slow_in_text(text: str) -> dict[tuple[str, int, str], frozenset[str]]:
    found: dict[tuple[str, int, str], set[str]] = {}
    for line in text.splitlines():
        parts = line.split(" ", 1)[0].split("/")
        # <dev>/ports/<n>/{counters,counters_ext,hw_counters}/<name>
        if len(parts) == 5 and parts[1] == "ports" and parts[3] in _PORT_DIRS:
            n = parse_uint(parts[2])
            if n is not None:
                key = (clean(parts[0]), n, _PORT_DIRS[parts[3]])
                found.setdefault(key, set()).add(clean(parts[4]))
    return {k: frozenset(v) for k, v in found.items()}


def _driver_infos(b: _Build) -> dict[str, DriverInfo]:
    warn = b.warn
    out: dict[str, DriverInfo] = {}
    for s in _texts(b.frame, "ethtool_i"):
        if s.subject:
            info = _guard(warn, s.kind, s.subject, None, b.read, parse_ethtool_info, s)
            if info is not None:
                warn.add(s.kind, s.subject, info.warnings)
                out[s.subject] = info
    return out


def _ethtool_stats(b: _Build) -> dict[str, dict[str, int]]:
    frame, warn = b.frame, b.warn
    out: dict[str, dict[str, int]] = {}
    for s in frame.all("ethtool_S"):  # an empty timed-out section still needs saying
        if not s.subject:
            continue
        # A timed-out or truncated dump is partial but real (parsed, and said); an error
        # exit printed a message instead of counters (said, not parsed).
        unplaced = (s.detail or "").startswith(UNKNOWN_SCHEMA)
        if (
            s.status == "error"
            and not unplaced
            and (not s.text.strip() or "no stats available" in s.text)
        ):
            continue  # a driver without ethtool stats (thunderbolt-net, veth): nothing to say
        if s.status != "ok":
            _tool_output(b, s.kind, s.subject)
        if s.schema is not None:
            names: tuple[str, ...] | None = s.schema.plans.get("ethtool")
            if names is None:
                names = s.schema.plans["ethtool"] = stat_names(s.schema.names)
            got = _guard(warn, s.kind, s.subject, None, _keyed_values, b, s, names)
            if got is not None:
                out[s.subject] = got
        elif s.status in _PARTIAL_BUT_REAL:
            stats = _guard(warn, s.kind, s.subject, None, parse_ethtool_stats, s.text)
            if stats is not None:
                warn.add(s.kind, s.subject, stats.warnings)
                out[s.subject] = stats.counters
    return out


def _keyed_values(b: _Build, sec: Section, keys: tuple[str, ...]) -> dict[str, int]:
    """A structured section as ``key -> value`` (keyed_values: its values, as positions)."""
    i, vals = b.of(sec)
    b.warn.values(i, sec.kind, sec.subject)
    return {} if vals is None else keyed_values(keys, vals)


def _netdev_of(dev: RdmaDeviceRecord, port: RdmaPortRecord) -> str | None:
    if port.netdevs:
        return port.netdevs[0]
    # device/net/* does not say which port a netdev belongs to: trust it on one-port devices.
    if len(dev.ports) == 1 and len(dev.netdevs) == 1:
        return dev.netdevs[0]
    return None


def _rdma_link(
    dev: RdmaDeviceRecord,
    port: RdmaPortRecord,
    rec: NetdevRecord | None,
    ndev: str | None,
    slow_names: dict[tuple[str, int, str], frozenset[str]],
    placed: bool,
) -> _LinkPlan:
    ib = port.link_layer == "InfiniBand" or (rec is not None and rec.type == _ARPHRD_INFINIBAND)
    link = LinkSample(
        id=ndev or f"{dev.name}/{port.port}",
        netdev=ndev,
        rdma_device=dev.name,
        port=port.port,
        link_layer=port.link_layer,
        physical=True,
        kind="ib" if ib else "roce",
    )
    link.state = _ib_state(port)
    link.port_state, link.phys_state, link.sm_lid = port.state, port.phys_state, port.sm_lid
    link.node_type = dev.node_type
    if port.gids is not None:
        link.gids = tuple(
            GidEntry(i, g, port.gid_types.get(i), port.gid_ndevs.get(i))
            for i, g in sorted(port.gids.items())
        )
        link.gids_truncated = port.gids_truncated
    link.rate_gbps = port.rate_gbps
    link.firmware = dev.fw_ver
    link.pcie = dev.pcie
    link.temperature_c = dev.temperature_c
    # Each source's slow files (read on slow ticks, carried between) kept apart.
    ib_counters = {**port.counters, **port.counters_ext}
    ib_slow = _slow_part(ib_counters, slow_names.get((dev.name, port.port, "ib_port")))
    hw = dict(port.hw_counters)
    hw_slow = _slow_part(hw, slow_names.get((dev.name, port.port, "ib_hw")))
    for source, counters in (
        ("ib_port", ib_counters),
        (PORT_SLOW_SOURCE, ib_slow),
        ("ib_hw", hw),
        (SLOW_SOURCE, hw_slow),
    ):
        if counters:
            link.counters[source] = counters
    lp = _LinkPlan(link, rdma=True)
    if port.lost:
        gone = frozenset(port.lost)
        lp.lost = (frozenset(rec.lost) if rec is not None else frozenset(), gone, gone, frozenset())
    elif rec is not None and rec.lost:
        lp.lost = (frozenset(rec.lost), *lp.lost[1:])
    legacy = {k: v for k, v in port.counters.items() if k in IB_LEGACY_WIDTH and k not in ib_slow}
    lp.legacy = _Resolver(legacy, placed)
    slow_legacy = {k: v for k, v in ib_slow.items() if k in IB_LEGACY_WIDTH}
    lp.slow_saturated = tuple(saturated_ib_counters(slow_legacy))
    lp.legacy.tops = tuple((1 << IB_LEGACY_WIDTH[n]) - 1 for n in lp.legacy.names)
    lp.temp = (None, None, dev.name, dev.temperature_c)
    if rec is not None:
        _apply_netdev(link, rec)
        lp.temp = (rec.name, rec.temperature_c, dev.name, dev.temperature_c)
    return lp


def _slow_part(counters: dict[str, _T], names: frozenset[str] | None) -> dict[str, _T]:
    """The counters of ``names`` (read on slow ticks), taken out of ``counters``."""
    if not names:
        return {}
    slow = {k: v for k, v in counters.items() if k in names}
    for k in slow:
        del counters[k]
    return slow


def _netdev_link(rec: NetdevRecord) -> _LinkPlan:
    link = LinkSample(id=rec.name, netdev=rec.name, physical=rec.physical)
    link.kind = "netdev" if rec.physical else "virtual"
    _apply_netdev(link, rec)
    lp = _LinkPlan(link, temp=(rec.name, rec.temperature_c, None, None))
    if rec.lost:
        lp.lost = (frozenset(rec.lost), *lp.lost[1:])
    return lp


def _apply_netdev(link: LinkSample, rec: NetdevRecord) -> None:
    """Netdev facts win over the RDMA port's where both know (state, speed, PCIe)."""
    if rec.operstate:
        link.state = rec.operstate.lower()
    if rec.speed_mbps is not None:
        link.rate_gbps = rec.speed_mbps / 1000.0
    link.mtu = rec.mtu
    link.pcie = rec.pcie or link.pcie
    if rec.temperature_c is not None:
        link.temperature_c = rec.temperature_c
    if rec.statistics:
        link.counters["netdev"] = dict(rec.statistics)


def _ib_state(port: RdmaPortRecord) -> str | None:
    state = port.state.lower() if port.state else None
    # "DOWN" alone hides why; the physical state says polling (no peer) or disabled.
    if state == "down" and port.phys_state:
        return port.phys_state.lower()
    return state


def _finish(
    lp: _LinkPlan,
    b: _Build,
    infos: dict[str, DriverInfo],
    ethtool: dict[str, dict[str, int]],
    netdevs: dict[str, NetdevRecord],
    warn: _Warner,
) -> None:
    """Driver facts, where the metrics go, and QoS of one link, each behind its own guard."""
    link = lp.link
    ndev = link.netdev
    rec = netdevs.get(ndev) if ndev else None
    _guard(warn, "link", link.id, None, _driver_facts, link, infos, ethtool)
    if rec is not None:
        lp.carrier = (rec.carrier_changes, rec.carrier_down_count)
    lp.ethtool = "ethtool" in link.counters
    b.warn.metrics(lp)
    lp.read_at = _read_at(link, b, ethtool)
    raw_ethtool = ethtool.get(ndev) if ndev else None
    link.qos = _guard(warn, "qos", ndev, None, _qos, b, ndev, rec, raw_ethtool)
    placed = bool(b.values)
    lp.counters = tuple((source, _Resolver(c, placed)) for source, c in link.counters.items())
    _guard(warn, "link", link.id, None, _plan_metrics, lp)
    link.counters = {}
    # layout: one token for every tick of this plan (its dicts' sources and names); a bare
    # object, so that nothing walking a sample's fields walks into the plan.
    layout = object()
    lp.fields = tuple(layout if name == "layout" else getattr(link, name) for name in _LINK_FIELDS)
    if link.qos is not None:
        lp.qos = tuple(getattr(link.qos, name) for name in _QOS_FIELDS)


def _plan_metrics(lp: _LinkPlan) -> None:
    """The metric plans of a link of the shape, from the names its dicts will have."""
    c = lp.link.counters
    netdev: MetricPlan = ()
    ib: MetricPlan = ()
    hw: MetricPlan = ()
    ethtool: MetricPlan = ()
    lost = lp.lost
    if lp.carrier is not None:
        netdev = metric_plan(
            NETDEV_MAP,
            _listed(netdev_counters(c.get("netdev", _EMPTY), *lp.carrier), lost[0]),
            None,
        )
    if lp.rdma:
        ib = metric_plan(
            IB_PORT_MAP,
            _listed({**c.get("ib_port", _EMPTY), **c.get(PORT_SLOW_SOURCE, _EMPTY)}, lost[1]),
            None,
        )
        hw = metric_plan(
            IB_HW_MAP,
            _listed({**c.get("ib_hw", _EMPTY), **c.get(SLOW_SOURCE, _EMPTY)}, lost[2]),
            None,
        )
    if lp.ethtool:
        ethtool = ethtool_plan(_listed(c["ethtool"], lost[3]), lp.link.driver)
    plans = (netdev, ib, hw, ethtool)
    lp.plans = without_unknown(plans, lost) if any(lost) else plans  # type: ignore[assignment]
    lp.runs = tuple(
        i for i, run in enumerate((lp.carrier is not None, lp.rdma, lp.rdma, lp.ethtool)) if run
    )
    # Which metrics each raw name makes, by plan; and each metric's steps, by precedence.
    makes: list[dict[str, list[str]]] = [{}, {}, {}, {}]
    steps: dict[str, list[tuple[int, Step]]] = {}
    for i in lp.runs:
        for step in lp.plans[i]:
            steps.setdefault(step[0], []).append((i, step))
            for name in step_names(step):
                makes[i].setdefault(name, []).append(step[0])
    lp.steps = {metric: tuple(reversed(each)) for metric, each in steps.items()}
    feeds = []
    for source, r in lp.counters:
        plan = _PLAN_OF.get(source)
        feed: dict[int, tuple[str, ...]] = {}
        if r.first >= 0 and plan is not None:  # one run of values: moves are known
            for j, name in enumerate(r.names):
                metrics = makes[plan].get(name)
                if metrics:
                    feed[r.first + j] = tuple(metrics)
        feeds.append((frozenset(feed), feed))
    lp.feeds = tuple(feeds)


def _listed(counters: Mapping[str, object], lost: frozenset[str]) -> Mapping[str, object]:
    """The names a source listed: those read and those whose values were not."""
    return {**counters, **dict.fromkeys(sorted(lost))} if lost else counters


# The plan (of _LinkPlan.plans) each counter source is read by.
_PLAN_OF = {
    "netdev": 0,
    "ib_port": 1,
    PORT_SLOW_SOURCE: 1,
    "ib_hw": 2,
    SLOW_SOURCE: 2,
    "ethtool": 3,
}


def _read_at(link: LinkSample, b: _Build, ethtool: dict[str, dict[str, int]]) -> int | None:
    """Which section's read time the link's counters have: its ethtool -S, else its RDMA
    port, else sysfs."""
    sec = None
    if link.netdev is not None and link.netdev in ethtool:
        sec = b.find("ethtool_S", link.netdev)
    if sec is None:
        sec = b.find("sysib" if link.rdma_device is not None else "sysnet")
    return b.index[id(sec)] if sec is not None else None


def _driver_facts(
    link: LinkSample, infos: dict[str, DriverInfo], ethtool: dict[str, dict[str, int]]
) -> None:
    ndev = link.netdev
    info = infos.get(ndev) if ndev else None
    if info is not None:
        link.driver = info.driver
        link.driver_version = info.version
        link.firmware = info.firmware_version or link.firmware
        if info.driver in _TB_DRIVERS:
            link.kind = "tb"
    raw_ethtool = ethtool.get(ndev) if ndev else None
    if raw_ethtool:
        link.counters["ethtool"] = raw_ethtool


# Statuses whose text is tool output worth parsing: a timeout or the byte cap cut it short.
_PARTIAL_BUT_REAL = ("ok", "timeout", "truncated")


def _tool_output(b: _Build, kind: str, subject: str) -> Section | None:
    # A tool that failed printed its error message, not its table: report it in one
    # line instead of feeding the message to the parser word by word.
    warn = b.warn
    sec = b.find(kind, subject)
    if sec is None or sec.status == "ok":
        return sec
    detail = f" ({sec.detail})" if sec.detail else ""
    if sec.status == "truncated":  # the probe cut it at its byte cap: what is there is real
        warn.add(kind, subject, [f"{sec.status}{detail}"])
        return sec
    first = sec.text.strip().splitlines()[0][:160] if sec.text.strip() else ""
    warn.add(kind, subject, [f"{sec.status}{detail}" + (f": {first}" if first else "")])
    return None


def _qos(
    b: _Build,
    ndev: str | None,
    rec: NetdevRecord | None,
    raw_ethtool: dict[str, int] | None,
) -> QosConfig | None:
    if ndev is None:
        return None
    warn = b.warn
    cfg: QosConfig | None = None
    mq = _tool_output(b, "mlnx_qos", ndev)
    dcb = _tool_output(b, "dcb_pfc", ndev)
    if mq is not None and mq.text.strip():
        parsed = b.read(parse_mlnx_qos, mq)
        warn.add(mq.kind, ndev, parsed.warnings)
        cfg = _shallow(parsed.config)  # the parse is shared (kept); this link's is not
    elif dcb is not None and dcb.text.strip():
        parsed_dcb = b.read(parse_dcb_pfc, dcb)
        warn.add(dcb.kind, ndev, parsed_dcb.warnings)
        cfg = _shallow(parsed_dcb.config)
    cfg = _dcb_extras(b, ndev, cfg)
    if cfg is None or cfg.pfc_enabled is None:
        inferred = pfc_priorities_from_names(raw_ethtool) if raw_ethtool else None
        if inferred is not None:
            if cfg is None:
                cfg = QosConfig(source="ethtool")
            cfg.pfc_enabled = inferred
    ecn_np = rec.ecn_np_enabled if rec else None
    ecn_rp = rec.ecn_rp_enabled if rec else None
    if ecn_np is not None or ecn_rp is not None:
        if cfg is None:
            cfg = QosConfig(source="sysfs")
        cfg.ecn_np_enabled = ecn_np
        cfg.ecn_rp_enabled = ecn_rp
    return cfg


def _dcb_extras(b: _Build, ndev: str, cfg: QosConfig | None) -> QosConfig | None:
    # iproute2 dcb fills what mlnx_qos did not report (hosts without mlnx-tools).
    warn = b.warn
    trust_sec = _tool_output(b, "dcb_apptrust", ndev)
    app_sec = _tool_output(b, "dcb_app", ndev)
    ets_sec = _tool_output(b, "dcb_ets", ndev)
    buf_sec = _tool_output(b, "dcb_buffer", ndev)
    found = [s for s in (trust_sec, app_sec, ets_sec, buf_sec) if s is not None and s.text.strip()]
    if not found:
        return cfg
    if cfg is None:
        cfg = QosConfig(source="dcb")
    if trust_sec is not None and trust_sec.text.strip() and cfg.trust is None:
        parsed_trust = b.read(parse_dcb_apptrust, trust_sec)
        warn.add(trust_sec.kind, ndev, parsed_trust.warnings)
        cfg.trust = parsed_trust.trust
    if app_sec is not None and app_sec.text.strip() and cfg.dscp2prio is None:
        parsed_app = b.read(parse_dcb_app, app_sec)
        warn.add(app_sec.kind, ndev, parsed_app.warnings)
        cfg.dscp2prio = parsed_app.dscp2prio or None
    if ets_sec is not None and ets_sec.text.strip() and cfg.ets is None:
        parsed_ets = b.read(parse_dcb_ets, ets_sec)
        warn.add(ets_sec.kind, ndev, parsed_ets.warnings)
        cfg.ets = parsed_ets.ets or None
    if buf_sec is not None and buf_sec.text.strip() and cfg.prio_buffer is None:
        parsed_buf = b.read(parse_dcb_buffer, buf_sec)
        warn.add(buf_sec.kind, ndev, parsed_buf.warnings)
        cfg.prio_buffer = dict(parsed_buf.prio_buffer) or None
        cfg.buffer_size = dict(parsed_buf.buffer_size) or None
    return cfg


def _cpu_throttle(b: _Build) -> int | None:
    warn = b.warn
    total: int | None = None
    for s in _texts(b.frame, "cputhrottle"):
        values, warnings = b.read(parse_kv_dump, s)
        warn.add(s.kind, s.subject, warnings)
        for path, value in values.items():
            num = parse_uint(value)
            if num is not None:
                total = (total or 0) + num
            elif value:
                warn.add(s.kind, s.subject, [f"{path}: bad value {value[:40]!r}"])
    if total is not None and total > U64_MAX:
        warn.add("cputhrottle", None, ["sum beyond 64 bits: no value"])
        return None
    return total


def _probe_key(text: str) -> str:
    """A probe section as the shape knows it: without the lines that no sample reads and
    that change from tick to tick (``slow 0|1``, ``skipped_ticks N``, the fast probe's
    running ``ethtool_ioctls N``) or with the probe's arguments (``interval_ms N``). Kept
    in, every tick would build the host's shape anew.
    """
    return "\n".join([ln for ln in text.split("\n") if not ln.startswith(_PROBE_TICK)])


# docs/PROBE.md "probe lines"; _probe_notes reads impl and warning lines only
_PROBE_TICK = ("slow ", "skipped_ticks ", "ethtool_ioctls ", "interval_ms ")


def _probe_notes(frame: Frame, sample: HostSample, warn: _Warner) -> None:
    for s in _texts(frame, "probe"):
        lines = [clean(ln) for ln in s.text.splitlines()]
        impl = next((ln[5:].strip() for ln in lines if ln.startswith("impl ")), None)
        if impl:
            sample.probe = clean(impl, 120)
        notes = [
            ln.split(" ", 1)[1].strip()
            for ln in lines
            if ln.startswith("warning ") and ln[8:].strip()
        ]
        warn.add(s.kind, None, notes)


def _firewall(b: _Build) -> FirewallState | None:
    sec = b.frame.find("firewall")
    if sec is None:
        return None
    # A ruleset's text comes again each slow tick: parsed once while it stays the same.
    fw = (
        b.read(firewall_read, sec)
        if sec.status == "ok"
        else firewall_state(sec.status, sec.detail, sec.text)
    )
    if fw.ruleset is not None:
        b.warn.add("firewall", None, fw.ruleset.warnings[:20])
    return fw


def _gpus(
    frame: Frame, sample: HostSample, warn: _Warner, at: tuple[int, ...], tail: _Tail | None
) -> None:
    """The GPUs of the frame's sections at ``at`` (the shape knows where they are); a
    carried one (``gpu_amd`` comes once a minute) is read once, by its tail."""
    sections = frame.sections
    only = Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, [sections[i] for i in at])
    read = read_gpu_section if tail is None else partial(tail.read_section, read_gpu_section)
    # A bug in the GPU parsers must not lose the network sample.
    found = _guard(warn, "gpu", None, None, gpus_from_frame, only, read)
    if found is None:
        return
    gpus, read_ns, warnings = found
    sample.gpus = list(gpus)
    sample.gpu_read_ns = read_ns
    warn.add("gpu", None, list(warnings))
