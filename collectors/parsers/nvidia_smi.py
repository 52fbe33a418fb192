"""Parse ``nvidia-smi --query-gpu`` CSV into GPU samples.

Field names come from the ``--help-query-gpu`` text and the header rows in
``../shared/fixtures/nvidia_smi/captures_utkuozdemir/`` (drivers 590-610).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter, methodcaller

from collectors.memo import Memo
from collectors.numbers import parse_float, parse_hex
from collectors.samples import GpuSample
from collectors.text import MAX_TEXT, clean
from collectors.warning_lines import SUPPRESSED, WarningLines

# Driver >= 535 names the clock limiters "clocks_event_reasons"; every driver in the
# captures (590, 595, 610) still accepts "clocks_throttle_reasons.*" as an alias (see
# ``--help-query-gpu``: '"clocks_event_reasons.active" or "clocks_throttle_reasons.active"'),
# but drivers older than 535 reject the new names. QUERY_FIELDS uses the canonical new
# names (as the header rows print them); FALLBACK_FIELDS is what the probe retries with
# when nvidia-smi refuses a field: only names present in pre-535 drivers' help text, with
# the throttle state carried by the one bitmask field.
# Fields both lists share, in the order every driver prints them.
_BASE_FIELDS: tuple[str, ...] = (
    "timestamp",
    "index",
    "name",
    "pci.bus_id",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "power.draw",
)

QUERY_FIELDS: tuple[str, ...] = (
    *_BASE_FIELDS,
    "enforced.power.limit",
    "temperature.gpu",
    "temperature.memory",
    "clocks.sm",
    "clocks.mem",
    "fan.speed",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks_event_reasons.active",
    "clocks_event_reasons.sw_power_cap",
    "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
)

FALLBACK_FIELDS: tuple[str, ...] = (
    *_BASE_FIELDS,
    "power.limit",
    "temperature.gpu",
    "clocks.sm",
    "clocks.mem",
    "fan.speed",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks_throttle_reasons.active",
)

# Bits of nvmlClocksThrottleReasons (renamed nvmlClocksEventReasons in nvml.h for 535+,
# same values): nvidia-ml-py pynvml.py ``nvmlClocksThrottleReason*`` constants.
REASON_BITS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_REASON_ORDER = tuple(REASON_BITS.values())
# nvidia-smi -q -x spells this one "display_clocks_setting", NVML DisplayClockSetting.
_REASON_ALIASES = {"display_clocks_setting": "display_clock_setting"}
# An idle GPU dropping its clocks is not a throttle a user should chase.
_NOT_THROTTLE = frozenset({"gpu_idle"})

_MISSING = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "[not supported]",
        "not supported",
        "[requested functionality has been deprecated]",
        "err!",
        "[unknown error]",
        "unknown error",
        "[gpu is lost]",
        "[insufficient permissions]",
    }
)
# A number, a unit, blanks around: "\s*(?:unit)?\s*$" would try every split of a run of
# blanks between its two "\s*" (the square of the run); this reads the same linearly.
_NUM_UNIT = re.compile(r"^\s*([-+]?[0-9]+(?:\.[0-9]+)?)(?:\s*[A-Za-z%/]+)?\s*$")
_NUM_MAX = 128  # a reading ("1024 MiB", "  72.40 W") is far shorter: longer is none
_HEADER_CELL = re.compile(r"^[a-z][A-Za-z0-9_.]*$")
# "clocks_event_reasons.hw_power_brake_slowdown [Active]" is the longest header cell: a
# longer one is no field name (and no pattern looks at it).
_NAME_MAX = 128

# Alternative spellings nvidia-smi accepts for one field, mapped to the name used here.
_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "gpu.power.requested_limit": "power.limit",
    "gpu.power.current_limit": "enforced.power.limit",
}

MAX_WARNINGS = 50  # a garbage capture must not turn into thousands of warning lines


@dataclass(slots=True)
class NvidiaQueryResult:
    """GPUs read from one nvidia-smi output, with what could not be read."""

    gpus: list[GpuSample] = field(default_factory=list)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))
    timestamp: str | None = None  # nvidia-smi's own "YYYY/MM/DD HH:MM:SS.msec", when asked


# Cells repeat from one line to the next and one tick to the next (names, totals, limits,
# clocks, most readings): each short one is read once.
_CELL_MEMO_MAX = 8192
_CELL_MAX = 64


def _clean_of(raw: str) -> str | None:
    v = clean(raw).strip()
    if v.lower() in _MISSING or v.startswith("[") or v.lower().startswith("n/a"):
        return None
    return v


def _num_of(raw: str) -> float | None:
    # Nearly every cell is a plain number: the pattern admits digits, a unit and
    # whitespace only, so what it takes needs no cleaning (and is never a "no value").
    m = _NUM_UNIT.match(raw) if len(raw) <= _NUM_MAX else None
    if m is None:
        v = _clean_of(raw)  # bounded (clean), then looked at only when a reading's length
        m = _NUM_UNIT.match(v) if v is not None and len(v) <= _NUM_MAX else None
    return parse_float(m.group(1)) if m else None  # None for nan, inf and 400-digit text


def _int_of(raw: str) -> int | None:
    f = _NUMS[raw]
    # An index, a PCIe generation or width: anything beyond 32 bits is not one.
    return int(f) if f is not None and abs(f) < 2**32 else None


_TEXTS = Memo(_clean_of, _CELL_MEMO_MAX, _CELL_MAX)
_NUMS = Memo(_num_of, _CELL_MEMO_MAX, _CELL_MAX)
_INTS = Memo(_int_of, _CELL_MEMO_MAX, _CELL_MAX)


def _without_unit(cell: str) -> str:
    """A header cell stripped, without its ``[unit]`` (``memory.used [MiB]``: ``memory.used``).

    The unit is from the first ``[`` after the last ``]`` before the final one (what the
    pattern ``\\s*\\[[^\\]]*\\]\\s*$`` takes, found without its cost: tried at every
    blank or ``[`` of a long cell, it costs the square of the cell).
    """
    s = cell.strip()
    if s.endswith("]"):
        at = s.find("[", s.rfind("]", 0, len(s) - 1) + 1, len(s) - 1)
        if at >= 0:
            s = s[:at].rstrip()
    return s


def _canonical(name: str) -> str:
    """``name`` as this parser spells it."""
    n = _without_unit(name)
    n = _ALIASES.get(n, n)
    for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons."):
        if n.startswith(prefix):
            return "reasons." + n[len(prefix) :]
    return n


def reasons_from_mask(mask: int) -> set[str]:
    """Names of the NVML clock-event bits set in ``mask``."""
    return {name for bit, name in REASON_BITS.items() if mask & bit}


def _ordered_throttles(active: set[str]) -> tuple[str, ...]:
    return tuple(r for r in _REASON_ORDER if r in active and r not in _NOT_THROTTLE)


def _looks_like_header(cells: list[str]) -> bool:
    if not cells or len(cells[0]) > _NAME_MAX or not _HEADER_CELL.match(_without_unit(cells[0])):
        return False  # a data row, nearly always: its first cell tells
    if any(len(c) > _NAME_MAX for c in cells):
        return False
    names = [_without_unit(c) for c in cells]
    return all(_HEADER_CELL.match(n) for n in names) and any(
        "." in n or "_" in n or n in {"index", "name", "uuid", "timestamp"} for n in names
    )


_NUM_FIELDS: tuple[tuple[str, ...], ...] = (  # in GpuSample's order; first with a value wins
    ("utilization.gpu",),
    ("memory.used",),
    ("memory.total",),
    ("power.draw", "power.draw.average", "power.draw.instant"),
    ("enforced.power.limit", "power.limit"),
    ("temperature.gpu",),
    ("temperature.memory",),
    ("clocks.sm",),
    ("clocks.mem",),
    ("fan.speed",),
)
_HEADS_MAX = 512  # per plan: eight GPUs of a few dozen hosts, in their usual states
_HEAD_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "uuid",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "reasons.active",
)
# index, name, bus id, uuid, PCIe generation and width, throttles, what is wrong with the mask
_Head = tuple[
    int | None,
    str | None,
    str | None,
    str | None,
    int | None,
    int | None,
    tuple[str, ...],
    str | None,
]


@dataclass(frozen=True, slots=True)
class _RowPlan:
    """How a row of one header becomes a GpuSample: found once per header.

    Each getter picks a fixed set of cells out of a row in one call; a field the header
    lacks reads the empty cell appended last, which every memo reads as None.
    A GPU's identity, link and clock-event cells change seldom: they are read as one.

    Those cells end the row in the probe's query (link, clock events): a row is split
    at most ``cut`` times, keeping them as one cell (the tail), so that they cost one
    string and one key instead of one each. ``tail_heads`` reads a row split that way
    (the identity cells before the cut, then the tail): None when the tail's count of
    cells is wrong, and the row is then split whole. ``nums`` and ``timestamp`` read
    cells before the cut: they serve both ways of splitting.
    """

    width: int  # cells in a row of this header
    head_cells: Callable[[list[str]], tuple[str, ...]]  # _HEAD_FIELDS, then reason columns
    heads: Memo[tuple[str, ...], _Head]
    nums: Callable[[list[str]], tuple[str, ...]]  # one cell per _NUM_FIELDS entry
    # (position in nums, later columns): a field spelled more than one way
    num_fallbacks: tuple[tuple[int, tuple[int, ...]], ...]
    timestamp: int
    # The cells from column ``cut`` on are all identity, link or clock-event cells, two
    # or more; -2 (split(",", -2) splits whole) when the header does not end that way.
    cut: int
    tail_cells: Callable[[list[str]], tuple[str, ...]]  # a row split at the cut
    tail_heads: Memo[tuple[str, ...], _Head | None]


def _plan_of(fields: tuple[str, ...]) -> _RowPlan:
    names = [_canonical(f) for f in fields]
    width = len(names)
    pad = -1  # the empty cell appended to every row
    # A repeated name keeps its last column, as a dict of the row would.
    col = {n: i for i, n in enumerate(names)}
    num_cols = [[col[f] for f in fs if f in col] for fs in _NUM_FIELDS]
    reasons = [
        (i, _REASON_ALIASES.get(n[len("reasons.") :], n[len("reasons.") :]))
        for n, i in col.items()
        if n.startswith("reasons.") and n not in ("reasons.active", "reasons.supported")
    ]
    reason_names = tuple(r for _, r in reasons)

    def head(key: tuple[str, ...]) -> _Head:
        index, name, bus_id, uuid, gen, width, mask_raw, *reason_raws = key
        active: set[str] = set()
        note = None
        mask = _TEXTS[mask_raw]
        if mask is not None:
            bits = parse_hex(mask if mask[:2] in ("0x", "0X") else "0x" + mask)
            if bits is None:
                note = f"bad clock-event bitmask {mask[:40]!r}"
            elif bits:
                active |= reasons_from_mask(bits)
        for reason, raw in zip(reason_names, reason_raws, strict=True):
            v = _TEXTS[raw]
            if v is not None and v.lower() == "active":
                active.add(reason)
        return (
            _INTS[index],
            _TEXTS[name],
            _TEXTS[bus_id],
            _TEXTS[uuid],
            _INTS[gen],
            _INTS[width],
            _ordered_throttles(active) if active else (),
            note,
        )

    head_cols = (*(col.get(f, pad) for f in _HEAD_FIELDS), *(i for i, _ in reasons))
    timestamp = col.get("timestamp", pad)
    # The tail: the columns after the last one read otherwise (a timestamp or a number).
    cut = max(1, 1 + max((timestamp, *(c for cols in num_cols for c in cols))))
    if width - cut < 2:
        cut = -2
    before = tuple(c for c in head_cols if 0 <= c < cut)  # identity cells before the cut

    def tail_head(key: tuple[str, ...]) -> _Head | None:
        *pre, tail = key
        rest = tail.split(",")
        if len(rest) != width - cut:
            return None
        cells = dict(zip(before, pre, strict=True))
        cells.update(zip(range(cut, width), rest, strict=True))
        return head(tuple(cells.get(c, "") for c in head_cols))

    return _RowPlan(
        width=width,
        head_cells=itemgetter(*head_cols),
        heads=Memo(head, _HEADS_MAX, 512),
        nums=itemgetter(*(cols[0] if cols else pad for cols in num_cols)),
        num_fallbacks=tuple(
            (k, tuple(cols[1:])) for k, cols in enumerate(num_cols) if len(cols) > 1
        ),
        timestamp=timestamp,
        cut=cut,
        # (an itemgetter of one index returns the cell, not a tuple of it)
        tail_cells=itemgetter(*before, cut) if before else lambda cells: (cells[cut],),
        tail_heads=Memo(tail_head, _HEADS_MAX, 512),
    )


# A header is a few dozen names, the same on every host of a kind: a fabric has a few.
_PLANS = Memo(_plan_of, 16, 4096)

# Without quotes, the csv module's row is the line split at commas with the blanks after
# each comma (and at the start) dropped. A cell read with those blanks reads the same while
# clean() does not shorten it (MAX_TEXT), so rows are split by str.split (half the csv
# module's cost) and their cells read as they are.


def parse_query_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_FIELDS
) -> NvidiaQueryResult:
    """Parse ``--query-gpu`` CSV (with or without header and units); later rows of a GPU win."""
    result = NvidiaQueryResult()
    warnings = result.warnings
    lines = text.splitlines()
    rows: Iterable[list[str]]
    # The csv module refuses a field beyond its limit: text that long keeps its verdict.
    split = (
        '"' not in text
        and len(text) <= csv.field_size_limit()
        and max(map(len, lines), default=0) <= MAX_TEXT
    )
    plan = first = _PLANS[tuple(fields)]
    cut = first.cut if split else -2  # csv rows come whole
    if split:
        rows = map(methodcaller("split", ",", cut), lines)
    else:
        try:
            rows = list(csv.reader(lines, skipinitialspace=True))
        except csv.Error as e:
            warnings.append(clean(f"nvidia-smi CSV unreadable: {e}"))
            return result
    nums = _NUMS.__getitem__
    by_index: dict[int, GpuSample] = {}
    stamps: list[str] = []
    position = 0
    for cells in rows:
        head = None
        if len(cells) == cut + 1:  # split at the cut: the tail still one cell
            # a data row of the header the rows were split for (a header row may follow)
            if plan is first and "0" <= cells[0][:1] <= "9":
                cells.append("")
                head = first.tail_heads[first.tail_cells(cells)]
            if head is None:  # split whole (the empty cell appended goes with the tail)
                cells[cut:] = cells[cut].split(",")
        if head is None:
            # A data row starts with a date or an index: neither blank nor a header name.
            if not (cells and "0" <= cells[0][:1] <= "9"):
                if not "".join(cells).strip():
                    continue
                if _looks_like_header(cells):
                    plan = _PLANS[tuple(cells)]
                    continue
            if len(cells) != plan.width:
                shown = [c.lstrip(" ") for c in cells] if split else cells  # the csv module's
                line = clean(", ".join(shown))
                warnings.add(
                    f"nvidia-smi line with {len(cells)} values for {plan.width} fields "
                    f"ignored: {line[:120]!r}"
                )
                continue
            cells.append("")
            head = plan.heads[plan.head_cells(cells)]
        index, name, bus_id, uuid, pcie_gen, pcie_width, throttles, note = head
        v = list(map(nums, plan.nums(cells)))
        for k, later in plan.num_fallbacks:
            if v[k] is None:
                v[k] = next((f for i in later if (f := nums(cells[i])) is not None), None)
        if index is None:
            index = position
        if note is not None:
            warnings.add(f"GPU {index}: {note}")
        # By position, in GpuSample's field order: keywords cost twice as much per row.
        by_index[index] = GpuSample(
            index,
            name,
            bus_id,
            uuid,
            "nvidia",
            v[0],
            v[1],
            v[2],
            v[3],
            v[4],
            v[5],
            v[6],
            v[7],
            v[8],
            v[9],
            None,
            None,
            pcie_gen,
            pcie_width,
            throttles,
        )
        position += 1
        stamps.append(cells[plan.timestamp])
    # Only the last readable timestamp counts; each tick's is new, so none is memoized.
    result.timestamp = next(filter(None, map(_clean_of, reversed(stamps))), None)
    result.gpus = list(map(by_index.__getitem__, sorted(by_index)))
    return result
