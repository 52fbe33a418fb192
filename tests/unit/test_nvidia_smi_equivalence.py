"""The --query-gpu CSV path (parse_query_csv, gpus_from_frame) against a plain reference.

The parser is tuned for the 8 GPU rows every host sends each tick (issue 13); the
reference below is the straightforward per-cell reading it replaced, without caches or
row plans, so any difference in samples, warnings or their order shows here.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.frames import Frame, FrameDecoder, Section
from collectors.gpu_sections import gpus_from_frame
from collectors.numbers import parse_float, parse_hex
from collectors.parsers.nvidia_smi import (
    FALLBACK_FIELDS,
    QUERY_FIELDS,
    NvidiaQueryResult,
    parse_query_csv,
)
from collectors.samples import GpuSample
from collectors.text import clean
from fabtop.sim import Fabric, SimHostConfig

# --- reference ------------------------------------------------------------------------

_MISSING = {
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
_NUM_UNIT = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:[A-Za-z%/]+)?\s*$")
_HEADER_CELL = re.compile(r"^[a-z][A-Za-z0-9_.]*$")
_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")
_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "gpu.power.requested_limit": "power.limit",
    "gpu.power.current_limit": "enforced.power.limit",
}
_BITS = {
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
_NUMS = (
    ("utilization_pct", ("utilization.gpu",)),
    ("memory_used_mib", ("memory.used",)),
    ("memory_total_mib", ("memory.total",)),
    ("power_w", ("power.draw", "power.draw.average", "power.draw.instant")),
    ("power_limit_w", ("enforced.power.limit", "power.limit")),
    ("temperature_c", ("temperature.gpu",)),
    ("memory_temperature_c", ("temperature.memory",)),
    ("sm_clock_mhz", ("clocks.sm",)),
    ("mem_clock_mhz", ("clocks.mem",)),
    ("fan_pct", ("fan.speed",)),
)


def _ref_clean(raw: str) -> str | None:
    v = clean(raw).strip()
    if v.lower() in _MISSING or v.startswith("[") or v.lower().startswith("n/a"):
        return None
    return v


def _ref_num(raw: str) -> float | None:
    m = _NUM_UNIT.match(raw)
    if m is None:
        v = _ref_clean(raw)
        m = _NUM_UNIT.match(v) if v is not None else None
    return parse_float(m.group(1)) if m else None


def _ref_int(raw: str) -> int | None:
    f = _ref_num(raw)
    return int(f) if f is not None and abs(f) < 2**32 else None


def _ref_name(name: str) -> str:
    n = _UNIT_SUFFIX.sub("", name.strip())
    n = _ALIASES.get(n, n)
    for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons."):
        if n.startswith(prefix):
            return "reasons." + n[len(prefix) :]
    return n


def _ref_is_header(cells: list[str]) -> bool:
    names = [_UNIT_SUFFIX.sub("", c.strip()) for c in cells]
    return all(_HEADER_CELL.match(n) for n in names) and any(
        "." in n or "_" in n or n in {"index", "name", "uuid", "timestamp"} for n in names
    )


def _ref_row(cells: list[str], names: list[str], position: int, warnings: list[str]) -> GpuSample:
    row = dict(zip(names, cells, strict=True))  # a repeated name keeps its last column
    index = _ref_int(row["index"]) if "index" in row else None
    gpu = GpuSample(index=index if index is not None else position)
    for attr, f in (("name", "name"), ("bus_id", "pci.bus_id"), ("uuid", "uuid")):
        if f in row:
            setattr(gpu, attr, _ref_clean(row[f]))
    for attr, fs in _NUMS:
        for f in fs:
            v = _ref_num(row[f]) if f in row else None
            if v is not None:
                setattr(gpu, attr, v)
                break
    for attr, f in (
        ("pcie_gen", "pcie.link.gen.current"),
        ("pcie_width", "pcie.link.width.current"),
    ):
        if f in row:
            setattr(gpu, attr, _ref_int(row[f]))
    active: set[str] = set()
    mask = _ref_clean(row["reasons.active"]) if "reasons.active" in row else None
    if mask is not None:
        bits = parse_hex(mask if mask[:2] in ("0x", "0X") else "0x" + mask)
        if bits is None:
            warnings.append(f"GPU {gpu.index}: bad clock-event bitmask {mask[:40]!r}")
        else:
            active |= {name for bit, name in _BITS.items() if bits & bit}
    for n, raw in row.items():
        if n.startswith("reasons.") and n not in ("reasons.active", "reasons.supported"):
            v = _ref_clean(raw)
            if v is not None and v.lower() == "active":
                reason = n[len("reasons.") :]
                active.add(
                    "display_clock_setting" if reason == "display_clocks_setting" else reason
                )
    gpu.throttle_reasons = tuple(r for r in _BITS.values() if r in active and r != "gpu_idle")
    return gpu


def reference_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_FIELDS
) -> NvidiaQueryResult:
    result = NvidiaQueryResult()
    names = [_ref_name(f) for f in fields]
    by_index: dict[int, GpuSample] = {}
    position = 0
    try:
        rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
    except csv.Error as e:
        result.warnings.append(clean(f"nvidia-smi CSV unreadable: {e}"))
        return result
    for cells in rows:
        if not "".join(cells).strip():
            continue
        if _ref_is_header(cells):
            names = [_ref_name(c) for c in cells]
            continue
        if len(cells) != len(names):
            line = clean(", ".join(cells))
            result.warnings.append(
                f"nvidia-smi line with {len(cells)} values for {len(names)} fields ignored: "
                f"{line[:120]!r}"
            )
            continue
        gpu = _ref_row(cells, names, position, result.warnings)
        position += 1
        by_index[gpu.index] = gpu
        if "timestamp" in names:
            ts = _ref_clean(cells[len(names) - 1 - names[::-1].index("timestamp")])
            if ts is not None:
                result.timestamp = ts
    result.gpus = [by_index[i] for i in sorted(by_index)]
    return result


def reference_section(text: str) -> tuple[list[GpuSample], list[str]]:
    """What gpus_from_frame makes of an ``ok`` gpu_nvidia section: GPUs and warnings."""
    lines = text.split("\n")
    first = lines[0].strip()
    if not first.startswith("#"):
        return [], ["gpu_nvidia: gpu_nvidia section has no '# <fields>' line"]
    fields = [f.strip() for f in first[1:].split(",") if f.strip()]
    if not fields:
        return [], ["gpu_nvidia: gpu_nvidia section names no query fields"]
    r = reference_csv("\n".join(lines[1:]), fields)
    return r.gpus, [f"gpu_nvidia: {w}" for w in r.warnings]


# --- comparisons ----------------------------------------------------------------------


def _same_csv(text: str, fields: tuple[str, ...] | list[str]) -> None:
    want = reference_csv(text, fields)
    for _ in range(2):  # the second run reads from the caches the first one filled
        got = parse_query_csv(text, fields)
        assert got == want
        assert repr(got) == repr(want)


def _same_section(text: str) -> None:
    want_gpus, want_warnings = reference_section(text)
    frame = Frame(1, 10**18, 1.0, 1.0, [Section("gpu_nvidia", None, 99, "ok", None, text)])
    for _ in range(2):
        gpus, read_ns, warnings = gpus_from_frame(frame)
        assert (gpus, warnings) == (want_gpus, want_warnings)
        assert repr(gpus) == repr(want_gpus)
        assert read_ns == (99 if want_gpus else None)


def test_every_csv_capture_matches_the_reference(fixtures_dir: Path) -> None:
    files = sorted((fixtures_dir / "nvidia_smi").rglob("*query_gpu_csv*"))
    assert len(files) == 19
    for f in files:
        text = f.read_text()
        lines = text.splitlines()
        for fields in (QUERY_FIELDS, FALLBACK_FIELDS, lines[0].split(", ")):
            _same_csv(text, fields)
            _same_csv("\n".join(lines[1:]), fields)  # the stream's rows, without a header
            _same_section(f"# {','.join(fields)}\n" + "\n".join(lines[1:]))


def test_simulated_hosts_match_the_reference() -> None:
    fab = Fabric(
        [
            SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=8),
            SimHostConfig("n2", gpu_profile="rtx4080s", gpus=3),
        ]
    )
    seen = 0
    for name in ("n1", "n2"):
        decoder = FrameDecoder()
        for i in range(40):
            for frame in decoder.feed(fab.hosts[name].frame(30.0 + i, 1.0).encode()):
                section = frame.find("gpu_nvidia")
                assert section is not None
                _same_section(section.text)
                seen += 1
    assert seen == 80


# Cells nvidia-smi prints, and what a broken or hostile node could print instead.
_CELLS = st.sampled_from(
    [
        "0",
        "7",
        "42",
        "99",
        "100",
        "-3",
        "+5",
        "1980",
        "75034",
        "81559",
        "635.34",
        "700.00",
        "12 W",
        "81559 MiB",
        "99 %",
        "1980 MHz",
        " 5 ",
        "5x",
        "0.5.1",
        "1e3",
        "1.",
        ".5",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "1e999",
        "9" * 70,
        "9" * 12,
        "4294967296",
        "4294967295",
        "-4294967296",
        "[N/A]",
        "N/A",
        "n/a (MIG)",
        "[Not Supported]",
        "Not Supported",
        "[Unknown Error]",
        "ERR!",
        "[GPU is lost]",
        "",
        " ",
        "\t",
        "Active",
        "Not Active",
        "active",
        " Active ",
        "ACTIVE",
        "0x0000000000000000",
        "0x0000000000000004",
        "0x0000000000000001",
        "0x00000000000000A4",
        "0X1FF",
        "0x",
        "0xZZ",
        "0x" + "f" * 17,
        "4",
        "ff",
        "-0x4",
        "NVIDIA H100 80GB HBM3",
        "00000000:18:00.0",
        "GPU-e220a839-7b1d-cdaf-910a-2dec89025cc1",
        "2026/01/01 00:00:29.880",
        "\x1b]0;pwned\x07H100",
        "\x1b[31m42",
        "42\x00",
        "4\u202e2",
        "\u00b2",
        "\x85",
        "x" * 70,
        "é",
        "[",
        "[x",
        "index",
        "name",
        "power.draw",
        "fan.speed [%]",
        "'q'",
    ]
)
_QUOTED = st.sampled_from(['"', '"a, b"', '"7"', 'x"y', '"Not Active'])
_NAMES = st.sampled_from(
    [
        *sorted({*QUERY_FIELDS, *FALLBACK_FIELDS}),
        "power.draw.average",
        "power.draw.instant",
        "clocks.current.sm",
        "clocks.current.memory",
        "gpu.power.current_limit",
        "gpu.power.requested_limit",
        "clocks_throttle_reasons.sw_power_cap",
        "clocks_event_reasons.display_clocks_setting",
        "clocks_event_reasons.gpu_idle",
        "clocks_event_reasons.supported",
        "clocks_throttle_reasons.supported",
        "power.draw [W]",
        "memory.used [MiB]",
        "serial",
        "driver_version",
        "Index",
        "x y",
    ]
)
_FIELD_LISTS = st.one_of(
    st.sampled_from([QUERY_FIELDS, FALLBACK_FIELDS]),
    st.lists(_NAMES, min_size=1, max_size=26).map(tuple),
)


@st.composite
def _csv_texts(draw: st.DrawFn) -> tuple[tuple[str, ...], str]:
    fields = draw(_FIELD_LISTS)
    # Quotes take the csv module's path; most texts are kept free of them.
    cell = st.one_of(_CELLS, _QUOTED) if draw(st.integers(0, 3)) == 0 else _CELLS
    seps = st.sampled_from([", ", ",", " , ", ",  ", ",\t"])
    ends = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\u2028"])
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:  # a header row
            cells = draw(st.lists(_NAMES, min_size=1, max_size=26))
        elif kind == 1:  # anything at all
            lines.append(draw(st.text(max_size=40)))
            continue
        else:  # a data row, now and then a cell short or long
            width = len(fields) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
            cells = draw(st.lists(cell, min_size=max(width, 0), max_size=max(width, 0)))
        sep = draw(seps)
        lines.append(draw(st.sampled_from(["", " "])) + sep.join(cells))
    text = ""
    for line in lines:
        text += line + draw(ends)
    return fields, text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_csv_texts())
def test_hostile_csv_matches_the_reference(case: tuple[tuple[str, ...], str]) -> None:
    fields, text = case
    _same_csv(text, fields)
    _same_section(f"# {','.join(fields)}\n{text}")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(max_size=200))
def test_any_section_text_matches_the_reference(head: str, body: str) -> None:
    _same_section(head)
    _same_section(f"# {head}\n{body}")
    _same_section(f"#{','.join(QUERY_FIELDS)}\n{body}")


def test_odd_texts_match_the_reference() -> None:
    row = "2026/01/01 00:00:29.880, 0, H100, 00:18.0, GPU-1, 99, 1, 2, 3, 4"
    fields = QUERY_FIELDS[:10]
    for text in (
        row + ", " + "9" * 140_000,  # a field beyond the csv module's limit
        row.replace("H100", '"' + "x" * 140_000 + '"'),
        row.replace("H100", "H\x00100"),
        # Blanks after a comma shift where clean() cuts a long cell: the csv module drops them.
        row.replace("H100", "\x00" + " " * 4092 + "H100"),
        row.replace(" 99,", " \x00" + " " * 4094 + "99,"),
        row + "\n\n , ,\n" + row.replace(" 0,", " 1,"),
        row + "\n" + ",".join(fields) + "\n" + row,
    ):
        _same_csv(text, fields)
        _same_section(f"# {','.join(fields)}\n{text}")


_DIGIT_CELLS = st.sampled_from(["0", "7", "42", "2026/01/01 00:00:29.880", "1980", "4294967296"])


@st.composite
def _data_rows(draw: st.DrawFn) -> tuple[tuple[str, ...], str]:
    """Rows as each tick sends them: data rows of the header's width, now and then a row a
    cell short or long (a comma too many in some cell), or a header row."""
    fields = draw(_FIELD_LISTS)
    sep = draw(st.sampled_from([", ", ","]))
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.integers(0, 19))
        if kind == 0:
            lines.append(sep.join(draw(st.lists(_NAMES, min_size=1, max_size=26))))
            continue
        width = len(fields) + (draw(st.sampled_from([-1, 1])) if kind == 1 else 0)
        if width <= 0:
            continue
        cells = [
            draw(_DIGIT_CELLS),
            *draw(st.lists(_CELLS, min_size=width - 1, max_size=width - 1)),
        ]
        if kind == 2:  # a comma too many, before or after the cut
            i = draw(st.integers(0, width - 1))
            cells[i] += ","
        lines.append(sep.join(cells))
    return fields, "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_data_rows())
def test_data_rows_match_the_reference(case: tuple[tuple[str, ...], str]) -> None:
    """The path each tick takes (rows split at the header's tail) against the reference."""
    fields, text = case
    _same_csv(text, fields)
    _same_section(f"# {','.join(fields)}\n{text}")


def test_rows_split_at_the_tail_match_the_reference() -> None:
    """Headers whose tail of identity, link and clock-event columns comes right after the
    timestamp, with nothing before the cut, or is one column long; tails a cell off."""
    row = "2026/01/01 00:00:29.880, 0, H100, 00:18.0, GPU-1, 5, 16, 0x4, Active, Not Active"
    cells = row.split(", ")
    for fields, text in (
        (("timestamp", "name", "uuid"), "2026/01/01, H100, GPU-1\n7, H100, GPU-1, x\n3, H100"),
        (("index", "name", "uuid"), "0, H100, GPU-1\n1, H100\n2, H100, GPU-2, x\n3,,"),
        (("name", "uuid"), "4, GPU-1\n4, GPU-1, x\n4"),
        (("clocks_event_reasons.active",), "0\n42\n0x4, 1"),
        (("utilization.gpu", "index"), "5, 0\n6, 1, 2\n7"),
        (QUERY_FIELDS[:5] + QUERY_FIELDS[15:20], row),
        (QUERY_FIELDS[:5] + QUERY_FIELDS[15:20], ", ".join(cells[:-1]) + ",, Active"),
        (QUERY_FIELDS[:5] + QUERY_FIELDS[15:20], ", ".join(cells[:-2])),
        (QUERY_FIELDS[:5] + QUERY_FIELDS[15:20], row + "\n" + ",".join(QUERY_FIELDS) + "\n" + row),
    ):
        _same_csv(text, fields)
        _same_section(f"# {','.join(fields)}\n{text}")
