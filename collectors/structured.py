"""Structured sections: values by position against a schema sent once (collectors/frames.py).

The fast probe sends its counters this way (``ethtool_S`` per netdev, and the counter
files of ``sysnet``/``sysib`` as ``sysnet_counters``/``sysib_counters``); everything else
stays text. Values go whole in every frame; collectors/values.py reads them.

:class:`StructuredEncoder` turns a text frame into the structured form the fast probe
sends, for the simulated hosts and the benchmarks, through the probe's own encoder
(``collectors.probe_fast.Encoder``: the probe runs on the node with the standard library
only, so the encoder lives there, written once). Its probe section counts ioctls as the
fast probe's does (``ethtool_ioctls N``, a line that changes every tick), and declares
its generation as the fast probe does (``gen <run>.<n>``, through the probe's own
``Generation``: docs/PROBE.md "Generation").
"""

from __future__ import annotations

from itertools import count
from typing import cast

from collectors.frames import Frame, Section
from collectors.probe_fast import Encoder, Generation, b64_rows, decimal_rows
from collectors.values import decode_values

# The counter files the fast probe sends by position (the rest of sysfs stays text).
COUNTER_KINDS = {"sysnet": "sysnet_counters", "sysib": "sysib_counters"}
_IB_COUNTER_DIRS = frozenset({"counters", "counters_ext", "hw_counters"})
# Each stream's run, as each fast probe run has its own (deterministic: simulated
# fabrics are seeded).
_RUNS = count(1)


def is_counter_path(kind: str, rel: str) -> bool:
    """Whether ``rel`` of a ``sysnet``/``sysib`` dump is a counter sent by position."""
    parts = rel.split("/")
    if kind == "sysnet":
        return len(parts) == 3 and parts[1] == "statistics"
    if kind == "sysib":
        return len(parts) == 5 and parts[1] == "ports" and parts[3] in _IB_COUNTER_DIRS
    return False


# docs/PROBE.md "Slow files": what the fast probe reads only on slow ticks, sent in
# sysnet_slow/sysib_slow (the collector keeps the latest of each).
_SLOW_NET_DEVICE = frozenset(
    {"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"}
)
_SLOW_IB_DEVICE = frozenset({"fw_ver", "hca_type", "board_id", "node_guid", "node_type"})


def is_slow_path(kind: str, rel: str) -> bool:
    """Whether ``rel`` of a ``sysnet``/``sysib`` dump is a file the fast probe reads on
    slow ticks only."""
    parts = rel.split("/")
    n = len(parts)
    if kind == "sysnet":
        return (
            (n == 3 and parts[1] == "device" and parts[2] in _SLOW_NET_DEVICE)
            or (n == 5 and parts[1:3] == ["device", "hwmon"] and parts[4] == "name")
            or (
                n == 5
                and parts[1] == "ecn"
                and parts[2] in ("roce_np", "roce_rp")
                and parts[3] == "enable"
            )
        )
    if kind == "sysib":
        return (
            (n == 2 and parts[1] in _SLOW_IB_DEVICE)
            or (n == 6 and parts[1] == "ports" and parts[3:5] == ["gid_attrs", "ndevs"])
            or (n == 4 and parts[1:3] == ["device", "net"])
        )
    return False


def section_values(
    section: Section, keys: tuple[str, ...] | None = None
) -> tuple[dict[str, int], list[str]]:
    """A structured section as ``key -> value``, keyed by its names or by ``keys`` (one per
    position; ``""`` drops one). A repeated key keeps its first value; unread values go."""
    schema = section.schema
    if schema is None:
        return {}, []
    if section.values is not None:  # as its stream decoded it (binary has no line)
        vals, warnings = section.values.vals, section.values.warnings
    else:
        vals, warnings = decode_values(section.text, schema.names)
    if vals is None:
        return {}, warnings
    return keyed_values(schema.names if keys is None else keys, vals), warnings


def keyed_values(keys: tuple[str, ...], vals: list[int | None]) -> dict[str, int]:
    """``key -> value`` by position (``""`` drops one); a repeated key keeps its first value
    (as the text parser does), an unread value (None) goes."""
    pairs = dict(zip(keys, vals, strict=True))
    if len(pairs) == len(vals) and None not in pairs.values() and "" not in pairs:
        return cast(dict[str, int], pairs)
    out: dict[str, int] = {}  # rare: repeats or unread values
    for key, v in zip(keys, vals, strict=True):
        if v is not None and key and key not in out:
            out[key] = v
    return out


class _Into:
    """What the probe's encoder writes to (its Sections' ``add``), as a Frame's sections."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    def add(self, kind: str, subj: str, rns: int, st: str, det: str, lines: list[bytes]) -> bool:
        text = b"\n".join(lines).decode()
        self.frame.sections.append(
            Section(kind, None if subj == "-" else subj, rns or None, st, det or None, text)
        )
        return True


class StructuredEncoder:
    """One stream's structured encoding of text frames (what the fast probe sends).

    ``ethtool_S`` text becomes values against a schema of its names; the counter lines
    of ``sysnet``/``sysib`` move into ``*_counters`` sections. A schema is sent in the
    first frame that needs it and again, under a new id, when its names change; values go
    whole in every frame.
    """

    def __init__(self) -> None:
        self._enc = Encoder()
        self._gen = Generation(f"sim{next(_RUNS)}")
        self._ioctls = 0
        # Per sysnet/sysib: the slow lines last sent in its *_slow section, and the text of
        # the last *_slow section the frames brought (the GID tables), sent with them.
        self._slow_sent: dict[str, list[str]] = {}
        self._slow_came: dict[str, str] = {}

    def encode(self, frame: Frame) -> Frame:
        out = Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, event=frame.event)
        probe = None
        # Slow files go apart only where the frame says whether it is a slow one (as the
        # probes' frames do): "slow 1" or "slow 0" in its probe section.
        said = next((s.text for s in frame.sections if s.kind == "probe"), "").split("\n")
        slow = True if "slow 1" in said else False if "slow 0" in said else None
        lines: dict[str, list[str]] = {}
        reads: dict[str, int | None] = {}  # read times of the sysnet/sysib sections
        came: set[str] = set()
        for s in frame.sections:
            if s.schema is not None or s.status != "ok":
                out.sections.append(s)
            elif s.kind == "ethtool_S" and s.subject:
                self._ethtool(out, s)
                self._ioctls += 2  # ETHTOOL_GSSET_INFO, ETHTOOL_GSTATS
            elif s.kind in COUNTER_KINDS:
                self._sysfs(out, s, None if slow is None else lines.setdefault(s.kind, []))
                reads[s.kind] = s.read_ns
            elif slow is not None and s.kind.endswith("_slow") and s.kind[:-5] in COUNTER_KINDS:
                self._slow_came[s.kind[:-5]] = s.text
                came.add(s.kind[:-5])
                reads.setdefault(s.kind[:-5], s.read_ns)
            else:
                if s.kind == "probe" and probe is None:
                    probe = len(out.sections)
                out.sections.append(s)
        for kind in sorted(lines.keys() | came):
            # Sent on slow frames, as the probe sends them, and whenever they changed (a
            # simulated fault that changes one shows at once, as in the text frames).
            got = lines.get(kind, [])
            if slow or kind in came or got != self._slow_sent.get(kind):
                self._slow_sent[kind] = got
                text = "\n".join(got)
                gids = self._slow_came.get(kind)
                if gids:
                    text = f"{text}\n{gids}" if text else gids
                out.sections.append(Section(f"{kind}_slow", None, reads[kind], "ok", None, text))
        if probe is not None and not frame.event:
            s = out.sections[probe]
            # The fast probe counts its ioctls in its probe section (a line that changes
            # every tick, as a real host's frames have it).
            text = f"{s.text}\nethtool_ioctls {self._ioctls}" if self._ioctls else s.text
            gen = self._gen
            for sec in out.sections:
                raw = sec.text.encode().split(b"\n") if sec.text else []
                gen.section(sec.kind, sec.subject or "-", sec.detail or "", raw)
            text += "\n" + gen.declare(text.encode().split(b"\n"), slow is True).decode()
            out.sections[probe] = Section(s.kind, s.subject, s.read_ns, s.status, s.detail, text)
        return out

    def _values(
        self,
        out: Frame,
        s: Section,
        kind: str,
        names: list[str],
        vals: list[str],
        binary: bool = False,
    ) -> None:
        """``binary``: as the probe sends what an ioctl read (``enc=b64``: every value a
        number), else in decimal."""
        rows = (
            b64_rows(list(map(int, vals))) if binary else decimal_rows([v.encode() for v in vals])
        )
        subj = s.subject or "-"
        self._enc.values(
            _Into(out), kind, subj, s.read_ns or 0, [n.encode() for n in names], rows, binary
        )

    def _ethtool(self, out: Frame, s: Section) -> None:
        names: list[str] = []
        vals: list[str] = []
        for line in s.text.splitlines():
            name, sep, value = line.rpartition(":")
            value = value.strip()
            if sep and value.isascii() and value.isdigit():
                names.append(name.strip())
                vals.append(value)
        self._values(out, s, s.kind, names, vals, binary=True)

    def _sysfs(self, out: Frame, s: Section, slow: list[str] | None = None) -> None:
        """``slow``: where the slow files' lines go (else they stay in the text)."""
        names: list[str] = []
        vals: list[str] = []
        text: list[str] = []
        for line in s.text.splitlines():
            path, _, value = line.partition(" ")
            if slow is not None and is_slow_path(s.kind, path):
                slow.append(line)
            elif is_counter_path(s.kind, path):
                names.append(path)
                ok = value.isascii() and value.isdigit()
                vals.append(value if ok else "-")
                if not ok:
                    text.append(line)  # said by the text parser (N/A, a bad value)
            else:
                text.append(line)
        out.sections.append(Section(s.kind, s.subject, s.read_ns, "ok", s.detail, "\n".join(text)))
        if names:
            self._values(out, s, COUNTER_KINDS[s.kind], names, vals)
