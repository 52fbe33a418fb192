"""A host's layout, compiled once, and each tick read through it (collectors/assemble.py
builds the layout; this module owns reusing it).

The layout (:class:`Shape`) is keyed on what the probe declares: its generation (the
probe section's ``gen`` line, docs/PROBE.md "Generation", which moves whenever the text
of a section moved on the node) with what each frame shows at no cost (every section's
header, the structured sections' names and which of their values came). While the key
holds, each tick is a straight loop over the layout: the decoded values go where the
layout says (:class:`Resolver`), the NIC temperatures and the GPUs are read from the
text, the metrics come from the plans normalize made once for the link's names, and the
sample is out. A frame that declares nothing is laid out anew. A carried slow section is
read once for as long as the very same section is carried (:class:`_Tail`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from operator import eq, itemgetter
from typing import Any, ParamSpec, TypeVar, cast

from collectors.darwin import TICK_KIND as DARWIN_TICK_KIND
from collectors.darwin import assemble_darwin
from collectors.frames import Frame, Section, TextRead
from collectors.gpu_sections import GPU_KINDS, gpus_from_frame, read_gpu_section
from collectors.guard import Guard
from collectors.normalize import (
    FEC_MAP,
    MLXLINK_MAP,
    MetricPlan,
    apply_map,
    apply_plan,
    netdev_counters,
    saturated_ib_counters,
)
from collectors.ruleset import FirewallState
from collectors.samples import (
    MLXLINK_SOURCE,
    PORT_SLOW_SOURCE,
    SLOW_SOURCE,
    HostSample,
    LinkSample,
    MetricValue,
    QosConfig,
    SectionStatus,
    SoftwareVersions,
    ThunderboltInfo,
)
from collectors.structured import COUNTER_KINDS
from collectors.text import MAX_TEXT, clean
from collectors.values import decode_whole

_T = TypeVar("_T")
_A = TypeVar("_A")


def _cleaned(frame: Frame, seen: int = 0) -> Frame:
    """The frame with its section headers (kind, subject, status, detail) cleaned, but for
    its last ``seen`` sections' (known clean)."""
    sections = frame.sections
    # Nearly always every header is printable ASCII, which clean() leaves as it is: one
    # look at all of them together instead of four calls per section.
    look = sections[: len(sections) - seen] if seen else sections
    parts = [h for s in look for h in (s.kind, s.status, s.subject, s.detail) if h]
    heads = " ".join(parts)
    # (each header within clean()'s bound: a frame of hundreds of sections is longer than
    # one header may be, and must not be cleaned header by header every tick for that)
    if heads.isascii() and heads.isprintable() and max(map(len, parts), default=0) <= MAX_TEXT:
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
PER_TICK_KINDS = frozenset(GPU_KINDS)

Decoded = dict[int, tuple[list[int | None] | None, list[str]]]  # section index -> values


# Builds a host's layout from a frame (collectors/assemble.py): (host, frame, the decoded
# structured values by section, how to read a text section) -> the layout.
Build = Callable[[str, Frame, "Decoded", TextRead], "Shape"]


def _assemble(
    host: str, frame: Frame, sample: HostSample, warn: Warner, shapes: Shapes, build: Build
) -> None:
    sections = frame.sections
    had = shapes.get(host)
    kept = had if isinstance(had, _Kept) else None
    decoded: Decoded = {}
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
    # The layout's key: the generation the probe declares (docs/PROBE.md "Generation":
    # it moves when the text of a section moved on the node), and what the frame itself
    # shows at no cost: every section's header, in order, and the structured sections'
    # names and which of their values came. A frame that declares nothing (an old
    # recording, another source) is laid out anew: there is nothing to key it on.
    gen: str | None = None
    heads: list[tuple[object, ...]] = []
    for i, s in enumerate(sections if tail is None else sections[:end]):
        if s.schema is not None and s.kind in _VALUE_KINDS:
            got = s.values  # as the stream's decoder read them
            if got is None:  # a frame made in-process (tests, tools): read here
                got = decode_whole(s.text, s.schema.names)
            decoded[i] = (got.vals, got.warnings)
            # Which values came: a value not read ("-", or no number) is no key of a dict.
            heads.append((s.kind, s.subject, s.status, s.detail, s.schema.names, got.unread))
            continue
        heads.append((s.kind, s.subject, s.status, s.detail))
        if s.kind == "probe":
            if gen is None:
                gen = declared(s.text)
        elif s.kind in _TEMP_KINDS and s.schema is None and "/hwmon/" in s.text:
            cut = _temps_out(s, temps)
            if cut is not None:
                if shaped is sections:
                    shaped = list(sections)
                shaped[i] = cut
    if tail is not None:
        heads.extend((s.kind, s.subject, s.status, s.detail) for s in carried)
        for kind, got_temps in tail.temps.items():
            into = temps.setdefault(kind, {})
            for owner, v in got_temps.items():
                if v > into.get(owner, -1):
                    into[owner] = v
        if tail.shaped is not None:
            shaped = (
                sections[:end] + tail.shaped if shaped is sections else shaped[:end] + tail.shaped
            )
    key = None if gen is None else (gen, heads)
    if kept is None or key is None or kept.key != key:
        bare = (
            frame
            if shaped is sections
            else Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, shaped)
        )
        read = _read_now if tail is None else tail.read
        kept = _Kept(key, build(host, bare, decoded, read))
        _keep(shapes, host, kept)
    if tail is not None:
        kept.tail = tail
    _fill(kept.shape, frame, decoded, temps, sample, warn, end, tail)


GEN_MAX = 64  # characters of a declared generation (an opaque token, only compared)


def declared(text: str) -> str | None:
    """The generation a probe section declares: its last line, ``gen <token>`` (both
    probes write it last); None: none, or no token (it is only compared)."""
    last = text[text.rfind("\n") + 1 :]
    if not last.startswith("gen "):
        return None
    token = last[4:]
    ok = 0 < len(token) <= GEN_MAX and token.isascii() and token.isprintable()
    return token if ok and " " not in token else None


def _keep(shapes: Shapes, host: str, kept: _Kept | _Tail) -> None:
    if len(shapes) >= _SHAPES_MAX and host not in shapes:
        del shapes[next(iter(shapes))]  # the host kept longest ago
    shapes[host] = kept


@dataclass(slots=True)
class _Tail:
    """A frame's carried sections, with their NIC temperatures and the sections without
    those, read once for as long as the very same tuple comes; and what each reader made
    of each of them (a carried section is parsed once, whatever the frames between and
    however often the host's layout is built again)."""

    sections: tuple[Section, ...]
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
        return memo(parse, sec.text) if i is None else self._once(parse, i, sec.text)

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
    return memo(parse, sec.text)


def _tail(carried: tuple[Section, ...], prev: _Tail | None) -> _Tail | None:
    """The carried sections read as _assemble reads a frame's, with what ``prev`` read of
    those it held too; None when one has values by position (read every tick, never
    cached)."""
    temps: dict[str, dict[str, int]] = {}
    shaped: list[Section] | None = None
    for i, s in enumerate(carried):
        if s.schema is not None and s.kind in _VALUE_KINDS:
            return None
        if s.kind in _TEMP_KINDS and s.schema is None and "/hwmon/" in s.text:
            cut = _temps_out(s, temps)
            if cut is not None:
                if shaped is None:
                    shaped = list(carried)
                shaped[i] = cut
    return _Tail(carried, temps, shaped).keep(prev)


def _temps_out(s: Section, temps: dict[str, dict[str, int]]) -> Section | None:
    """The section as the layout is built from it: without its NIC temperatures, which
    go to ``temps`` and are read every tick (None: it has none)."""
    text = _hwmon_values(s.text, temps.setdefault(_TEMP_KINDS[s.kind], {}))
    if text is s.text:
        return None
    return Section(s.kind, s.subject, s.read_ns, s.status, s.detail, text)


@dataclass(slots=True)
class _Kept:
    """What is kept of a host between its frames: its layout, and the key it holds for."""

    key: object  # None: built for one frame (it declared nothing)
    shape: Shape
    tail: _Tail | None = None  # the carried sections as last read (Frame.carried)


# NIC temperatures (hwmon, millidegrees) are in the sysfs text and move every few ticks:
# read every tick, like the counters, and left out of the text the layout is built from
# (the probes' generation leaves their values out too: probe_fast.py GEN_TEMP_LINE, the
# same pattern). A line that is not plain stays in the layout's text, where the parser
# says what is wrong. Only printable ASCII is taken: such a line reads the same to the
# parser (nothing to clean).
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


class Pos:
    """A structured value while a shape is built: the section and position it comes from."""

    __slots__ = ("index", "section")

    def __init__(self, section: int, index: int) -> None:
        self.section = section
        self.index = index


class Resolver:
    """One dict of a shape (name -> position, or a value read from text), made each tick."""

    __slots__ = ("get", "items", "names", "section", "tops")

    def __init__(self, template: Mapping[str, object], placed: bool = True) -> None:
        """``placed``: the frame had values by position (else none is looked for)."""
        self.names = tuple(template)
        self.section = -1
        self.get: Callable[[list[int | None]], Any] | None = None
        self.tops: tuple[int, ...] = ()  # the legacy PMA counters' all-ones (_saturated)
        places = [v for v in template.values() if isinstance(v, Pos)] if placed else []
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
                self.get = itemgetter(slice(first, last + 1))  # a run: one slice
            else:
                self.get = itemgetter(*(p.index for p in places))

    def __call__(self, decoded: Decoded) -> dict[str, int]:
        if self.get is not None:
            vals = decoded[self.section][0]
            assert vals is not None  # a shape places values only where they came
            return dict(zip(self.names, self.get(vals), strict=True))
        if isinstance(self.items, dict):
            return self.items.copy()  # type: ignore[return-value]
        out: dict[str, int] = {}
        for name, v in self.items:
            if isinstance(v, Pos):
                got = decoded[v.section][0]
                assert got is not None
                out[name] = got[v.index]  # type: ignore[assignment]
            else:
                out[name] = v  # type: ignore[assignment]
        return out


@dataclass(slots=True)
class LinkPlan:
    """One link of a shape: what stays, and how each tick fills the rest."""

    link: LinkSample  # its fixed facts; counters, metrics, saturated and read_ns stay empty
    counters: tuple[tuple[str, Resolver], ...] = ()  # LinkSample.counters, source by source
    # What the normalizers take beside link.counters (None: that normalizer is not run):
    carrier: tuple[int | None, int | None] | None = None  # the netdev's carrier counts
    rdma: bool = False  # an RDMA port's link: its counters and hw_counters make metrics
    ethtool: bool = False
    legacy: Resolver | None = None  # the RDMA port's legacy PMA counters (saturation)
    # Those of them read on slow ticks only (ib_port_tick) that read their maximum: their
    # values are the shape's own text, so found once.
    slow_saturated: tuple[str, ...] = ()
    read_at: int | None = None  # the section whose read time the counters have
    slow_at: int | None = None  # ... and the slow metrics (the FEC's: LinkSample.slow_read_ns)
    mlx_at: int | None = None  # ... and mlxlink's corrected bits (LinkSample.mlxlink_read_ns)
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
    # The metrics the plans make (a tick that makes fewer left a sum beyond 64 bits out).
    makes: frozenset[str] = frozenset()
    # The link's and its QoS's fields in order: a tick's own are made in one call.
    fields: tuple[Any, ...] = ()
    qos: tuple[Any, ...] | None = None


@dataclass(slots=True)
class Shape:
    """What a host's frames keep tick after tick, and where each tick's values go."""

    sections: tuple[tuple[int, str, str | None, str, str | None], ...]  # index, header
    # Warning lines in frame order; (index, kind, subject): that structured section's decode
    # warnings go there; a LinkPlan: that link's metrics are made there (and a failure said).
    warnings: list[str | tuple[int, str, str | None] | LinkPlan]
    links: list[LinkPlan]
    cpu_throttle_count: int | None
    probe: str | None
    versions: SoftwareVersions | None = None  # slow text sections: part of the shape
    firewall: FirewallState | None = None  # parsed once per shape: never changed after
    thunderbolt: ThunderboltInfo | None = None  # shared by the samples: read-only
    metrics_at_once: bool = False  # the warnings make the metrics of .links, in order
    gpu_at: tuple[int, ...] = ()  # where the GPU sections are (read every tick)
    cpu_at: int | None = None  # the section the CPU throttle count was read from
    # The statuses of a frame's carried sections, made once for that very tuple.
    tail_status: tuple[tuple[Section, ...], list[SectionStatus]] | None = None


def _fill(
    shape: Shape,
    frame: Frame,
    decoded: Decoded,
    temps: dict[str, dict[str, int]],
    sample: HostSample,
    warn: Warner,
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
        link.counters = {source: r(decoded) for source, r in lp.counters}
        link.metrics = {}  # made where the warnings say (below)
        if lp.qos is not None:
            link.qos = QosConfig(*lp.qos)  # each sample's own, as a new build gives
        link.saturated = _saturated(lp.legacy, decoded) if lp.legacy is not None else []
        if lp.slow_saturated:
            link.saturated = sorted([*link.saturated, *lp.slow_saturated])
        if lp.read_at is not None:
            link.read_ns = sections[lp.read_at].read_ns
        if lp.slow_at is not None:  # a new read of the same text keeps the shape: its time
            link.slow_read_ns = sections[lp.slow_at].read_ns
        if lp.mlx_at is not None:
            link.mlxlink_read_ns = sections[lp.mlx_at].read_ns
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
            guard(warn, "link", link.id, None, _metrics, link, item, left)
    if left:
        warn.add("metrics", None, left)
    sample.cpu_throttle_count = shape.cpu_throttle_count
    if shape.cpu_at is not None:  # a new read of the same text keeps the shape: its time
        sample.cpu_throttle_read_ns = sections[shape.cpu_at].read_ns
    sample.probe = shape.probe
    sample.versions = shape.versions  # frozen: shared by the samples of one shape
    sample.firewall = shape.firewall
    sample.thunderbolt = shape.thunderbolt
    _gpus(frame, sample, warn, shape.gpu_at, tail)


def _saturated(legacy: Resolver, decoded: Decoded) -> list[str]:
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
    return saturated_ib_counters(legacy(decoded))


def _metrics(link: LinkSample, lp: LinkPlan, left: list[str]) -> None:
    # Precedence: netdev < RDMA port < ethtool port counters, metric by metric.
    counters = link.counters
    metrics: dict[str, MetricValue] = {}
    for i in lp.runs:
        metrics.update(apply_plan(lp.plans[i], _plan_input(i, lp, counters)))
    fec = counters.get("fec")  # optics rounds' FEC blocks (collectors/optics_sections.py)
    if fec:
        metrics.update(apply_map(FEC_MAP, fec))
    mlx = counters.get(MLXLINK_SOURCE)  # its corrected bits where ethtool -S has none
    if mlx and link.mlxlink_read_ns is not None:
        metrics.update(apply_map(MLXLINK_MAP, mlx))
    if len(metrics) < len(lp.makes):
        left.extend(
            f"{link.id} {m}: sum beyond 64 bits, left out" for m in lp.makes if m not in metrics
        )
    link.metrics = metrics


def _plan_input(i: int, lp: LinkPlan, counters: dict[str, dict[str, int]]) -> Mapping[str, int]:
    """What plan ``i`` of the link reads: each source's counters are the link's own
    (netdev: its statistics and carrier counts; ib_port: counters with counters_ext over
    them); the port's files read on slow ticks only are included here."""
    if i == 0:
        assert lp.carrier is not None  # plan 0 runs only then
        return netdev_counters(counters.get("netdev", EMPTY), *lp.carrier)
    if i == 1:
        return {**counters.get("ib_port", EMPTY), **counters.get(PORT_SLOW_SOURCE, EMPTY)}
    if i == 2:
        return {**counters.get("ib_hw", EMPTY), **counters.get(SLOW_SOURCE, EMPTY)}
    return counters["ethtool"]


EMPTY: dict[str, int] = {}
# In the order their classes take them.
LINK_FIELDS = tuple(f.name for f in fields(LinkSample))
QOS_FIELDS = tuple(f.name for f in fields(QosConfig))


def _temperature(
    temp: tuple[str | None, float | None, str | None, float | None],
    temps: dict[str, dict[str, int]],
) -> float | None:
    """The link's temperature this tick, as the parser would make it of the whole text."""
    rec, rec_base, dev, dev_base = temp
    if rec is not None:
        t = _hotter(rec_base, temps.get("net", EMPTY).get(rec))
        if t is not None:  # the netdev's wins over its RDMA device's
            return t
    return _hotter(dev_base, temps.get("ib", EMPTY).get(dev)) if dev is not None else None


def _hotter(base: float | None, milli: int | None) -> float | None:
    if milli is None:
        return base
    t = milli / 1000.0
    return t if base is None or t > base else base


_D = TypeVar("_D")
_P = ParamSpec("_P")


def guard(
    warn: Warner,
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


def memo(parse: Callable[[str], _T], text: str) -> _T:
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


class Warner:
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


class ShapeWarner(Warner):
    """Keeps a shape's warnings in order, with the places of what each tick adds."""

    def __init__(self, host: str) -> None:
        super().__init__(host, [])
        self.plan: list[str | tuple[int, str, str | None] | LinkPlan] = []
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

    def metrics(self, lp: LinkPlan) -> None:
        """Here the link's metrics are made each tick (a failure is said here)."""
        self.plan.append(lp)


def _gpus(
    frame: Frame, sample: HostSample, warn: Warner, at: tuple[int, ...], tail: _Tail | None
) -> None:
    """The GPUs of the frame's sections at ``at`` (the shape knows where they are); a
    carried one (``gpu_amd`` comes once a minute) is read once, by its tail."""
    sections = frame.sections
    only = Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, [sections[i] for i in at])
    read = read_gpu_section if tail is None else partial(tail.read_section, read_gpu_section)
    # A bug in the GPU parsers must not lose the network sample.
    found = guard(warn, "gpu", None, None, gpus_from_frame, only, read)
    if found is None:
        return
    gpus, read_ns, warnings = found
    sample.gpus = list(gpus)
    sample.gpu_read_ns = read_ns
    warn.add("gpu", None, list(warnings))


def tick(host: str, frame: Frame, kept: Shapes | None, build: Build) -> HostSample:
    """The typed sample of one host from one frame, through its kept layout (``build``
    makes a new one when the frame's shape changed); never raises, whatever the frame.

    ``kept``: what is kept of each host between its frames, one per stream of frames (a
    Pipeline's own: the dashboard's and focus mode's frames of one host have two shapes);
    None: this module's.
    """
    sample = HostSample(host=host, seq=frame.seq, clock_ns=frame.clock_ns, uptime_s=frame.uptime_s)
    warn = Warner(host, sample.warnings)
    shapes = _SHAPES if kept is None else kept
    last = shapes.get(host)
    if any(s.kind == DARWIN_TICK_KIND for s in frame.sections):
        # A macOS probe's frame: all text, read by collectors/darwin.py (see its docstring);
        # what is kept of the host is its carried sections' readings.
        frame = _cleaned(frame)
        tail = last if isinstance(last, _Tail) and last.sections is frame.carried else None
        if tail is None and frame.carried:
            tail = _Tail(frame.carried, {}, None).keep(last if isinstance(last, _Tail) else None)
            _keep(shapes, host, tail)
        guard(
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
    guard(
        warn,
        "assemble",
        None,
        None,
        _assemble,
        host,
        _cleaned(frame, seen),
        sample,
        warn,
        shapes,
        build,
    )
    return sample
