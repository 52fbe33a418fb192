"""Parse perftest's output: ``ib_write_bw``/``ib_send_bw``/``ib_read_bw`` and the ``*_lat`` tools.

What is read, from linux-rdma/perftest ``src/perftest_parameters.{c,h}`` (6.29) and the
captures in ``tests/fixtures/perftest/`` (see its SOURCES.md):

- the header ``ctx_print_test_info`` prints: the test's title (``RDMA_Write Bidirectional
  BW Test``), then ``key : value`` pairs, two to a line where the source puts a tab
  between them (``Device``, ``Link type``, ``Mtu``, ``GID index``, ...);
- the bandwidth table (``RESULT_FMT``): ``#bytes #iterations BW peak BW average MsgRate``,
  its unit in the column title: ``MB/sec`` until March 2024 (commit 1d202bb),
  ``MiB/sec`` since (both 2^20 bytes: the help text's "MiB=2^20 byte, while Gb=10^9
  bits"), ``Gb/sec`` with ``--report_gbits``; ``--sl`` runs add a ``#sl`` column;
- the latency table (``RESULT_FMT_LAT``): t_min, t_max, t_typical (the median), t_avg,
  t_stdev, 99% and 99.9% percentiles in microseconds (before July 2016, commit 1ccb3fd,
  only the first three; ``-D`` runs: t_avg only);
- every raw sample, which ``-U``/``--report-unsorted`` prints (``print_report_lat``) as
  ``#, usec`` then one ``N, value`` line per iteration, in the order measured (``-H``
  prints the same lines sorted and without the two largest: fabtop asks for ``-U``).
  This layout is read from the source only: no public capture of it was found;
- ``--out_json`` (:func:`parse_perftest_json`): the last message size only;
- errors: the tool's own line, typed (:class:`PerftestError`).

Lines perftest interleaves with the table ("Conflicting CPU frequency values detected")
are skipped. Never raises: a bad line costs that line, a warning says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from collectors.numbers import json_loads, parse_float, parse_uint
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

# A -U run of 1,000,000 iterations prints 1M sample lines of ~12 bytes: 16 MiB bounds it
# with room; past it the text is cut (a warning says so) and what came before is read.
MAX_BYTES = 16 * 1024 * 1024
MAX_SAMPLES = 2_000_000  # more iterations than any plan asks (latency plans use ~1M)
MAX_ROWS = 64  # -a runs 23 sizes (2 B .. 8 MiB); a longer table is garbage
MAX_WARNINGS = 20
MAX_ERRORS = 8
_LINE_MAX = 512  # a perftest line is < 200 characters; longer is not one of its lines

# Bytes per second of one "MB"/"MiB" column unit: perftest divides by 2^20 in both.
_MIB = 1024 * 1024
_UNITS = {"MB/sec": _MIB * 8 / 1e9, "MiB/sec": _MIB * 8 / 1e9, "Gb/sec": 1.0}

# --sl runs (RESULT_FMT_QOS) put a "#sl" column between the size and the iterations.
_BW_TITLE = re.compile(r"#bytes\s+(#sl\s+)?#iterations\s+BW peak\[([A-Za-z/]+)\]")
_LAT_TITLE = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]")
_LAT_DUR_TITLE = re.compile(r"#bytes\s+#iterations\s+t_avg\[usec\]")
_TEST_TITLE = re.compile(r"^\s*([A-Za-z_ ]+? (?:BW|Latency)) Test\s*$")
_SAMPLES_TITLE = "#, usec"
_SAMPLE = re.compile(r"^\s*([0-9]{1,9}),\s*(\S{1,32})\s*$")
_KEY_SPLIT = re.compile(r"\s*:\s+|\s+:\s*")
_VERSION = re.compile(r"^\s*Version:\s*([0-9][0-9A-Za-z._-]{0,31})\s*$")
_RULE = re.compile(r"^-{20,}$")
_NOT_HEADER = ("local address", "remote address", "GID:", "WARNING")

# The tool's own error lines (perftest_communication.c, perftest_resources.c, *_bw.c,
# *_lat.c), each to a kind a user acts on. The first pattern that matches decides.
_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("device", re.compile(r"IB device \S+ not found|No IB devices found|Unable to find the")),
    ("device", re.compile(r"Couldn't get context for the device|Failed to query device")),
    ("port", re.compile(r"(?i)port .*(state|not active|down)|query port|Couldn't set Eth MTU")),
    ("gid", re.compile(r"(?i)\bgid\b.*(fail|invalid|not|couldn)|Incompatibility issue with GID")),
    ("connect", re.compile(r"(?i)Couldn't connect to|Unable to connect|Couldn't listen to port")),
    ("connect", re.compile(r"Unable to init the socket connection|socket connection")),
    ("connect", re.compile(r"Problem in resolving basic address|Couldn't read remote address")),
    (
        "arguments",
        re.compile(
            r"(?i)invalid option|unrecognized option|available only on|only available on|usage:"
        ),
    ),
    (
        "arguments",
        re.compile(r"Parser function exited with Error|not supported|Unsupported|n't support"),
    ),
    ("arguments", re.compile(r"does not support|Invalid Command line")),
    ("run", re.compile(r"Completion with error|Failed status|Couldn't post|Failed to complete")),
    (
        "run",
        re.compile(r"Couldn't allocate|Couldn't create|Failed to exchange data|Failed to sync"),
    ),
    (
        "run",
        re.compile(r"^\s*(Couldn't|Unable to|Failed to|Failed|ERROR|Error|error:)\b"),
    ),
)

_HEADER_INTS = {"Number of qps": "qps", "GID index": "gid_index", "Mtu": "mtu"}
_HEADER_STRS = {
    "Device": "device",
    "Link type": "link_type",
    "Transport type": "transport",
    "Connection type": "connection_type",
}


@dataclass(slots=True)
class PerftestError:
    """One error line of the tool: ``kind`` is device, port, gid, connect, arguments or run."""

    kind: str
    line: str


@dataclass(slots=True)
class PerftestHeader:
    """What the tool printed about the test before it ran (None: not printed)."""

    test: str | None = None  # "RDMA_Write BW", "Send Latency", ...
    bidirectional: bool = False
    device: str | None = None
    link_type: str | None = None  # "IB" or "Ethernet" (RoCE)
    transport: str | None = None
    connection_type: str | None = None  # RC, UC, UD, ...
    mtu: int | None = None  # bytes
    gid_index: int | None = None
    qps: int | None = None
    version: str | None = None  # from a "Version: 6.29" line (--version), when present
    fields: dict[str, str] = field(default_factory=dict)  # every "key : value" as printed


@dataclass(slots=True)
class BwRow:
    """One message size of a bandwidth run; rates in Gb/s (10^9 bits), None when unreadable."""

    size_bytes: int
    iterations: int
    peak_gbps: float | None  # None also where perftest printed 0.00: not measured (-D, -b)
    average_gbps: float | None
    msg_rate_mpps: float | None


@dataclass(slots=True)
class LatRow:
    """One message size of a latency run, microseconds; columns an older tool lacks are None."""

    size_bytes: int
    iterations: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None


@dataclass(slots=True)
class PerftestResult:
    """One perftest run's output; ``ok`` when a table row was read and no error printed."""

    kind: str | None = None  # "bw" or "lat"
    unit: str | None = None  # the bandwidth column's unit as printed: MB/sec, MiB/sec, Gb/sec
    header: PerftestHeader = field(default_factory=PerftestHeader)
    bw: list[BwRow] = field(default_factory=list)
    lat: list[LatRow] = field(default_factory=list)
    samples_us: list[float] = field(default_factory=list)  # -U: every iteration, in order
    errors: list[PerftestError] = field(default_factory=list)
    complete: bool = False  # the closing rule after the table was printed
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.bw or self.lat)

    @property
    def error(self) -> str | None:
        """The one line a user reads when the run gave no figures; None when it did."""
        if self.errors:
            return f"perftest: {self.errors[0].kind}: {self.errors[0].line}"
        if not (self.bw or self.lat):
            return "perftest: no result table in the output"
        return None


def _header_line(line: str, out: PerftestHeader) -> None:
    """``key : value`` pairs, two to a line in the source (split at the tab, or at the
    run of spaces a pasted capture turned the tab into); values are one word."""
    parts = _KEY_SPLIT.split(line.strip())
    if len(parts) < 2:
        return
    key = parts[0]
    for middle in [*parts[1:-1], None]:
        if middle is None:
            value, nxt = parts[-1].strip(), ""
        else:
            value, _, nxt = middle.strip().partition(" ")
        if key and len(out.fields) < 64:
            out.fields.setdefault(key.strip()[:64], value[:128])
        key = nxt.strip()
    f = out.fields
    for name, attr in _HEADER_STRS.items():
        if f.get(name) and getattr(out, attr) is None:
            setattr(out, attr, f[name])
    for name, attr in _HEADER_INTS.items():
        raw = f.get(name)
        if raw and getattr(out, attr) is None:
            setattr(out, attr, parse_uint(raw.removesuffix("[B]")))


def _floats(words: list[str]) -> list[float | None]:
    return [parse_float(w) for w in words]


def _bw_row(words: list[str], unit: str, out: PerftestResult) -> bool:
    if len(words) < 4:  # before June 2012 (commit 5787613) there was no MsgRate column
        return False
    size, iters = parse_uint(words[0]), parse_uint(words[1])
    if size is None or iters is None:
        return False
    peak, avg, rate = [*_floats(words[2:5]), None][:3]
    if avg is None:
        out.warnings.add(f"size {size}: unreadable BW average {words[3][:32]!r}")
    scale = _UNITS.get(unit)
    if scale is None:
        return False
    if len(out.bw) >= MAX_ROWS:
        out.warnings.add(f"more than {MAX_ROWS} result rows: the rest were left out")
        return True
    if peak == 0 and avg:  # "BW peak won't be measured in this run" (-D, -b): 0.00
        peak = None
    out.bw.append(
        BwRow(
            size_bytes=size,
            iterations=iters,
            peak_gbps=None if peak is None else peak * scale,
            average_gbps=None if avg is None else avg * scale,
            msg_rate_mpps=rate,
        )
    )
    return True


def _lat_row(words: list[str], duration: bool, out: PerftestResult) -> bool:
    if len(words) < 3:
        return False
    size, iters = parse_uint(words[0]), parse_uint(words[1])
    if size is None or iters is None:
        return False
    nums = _floats(words[2:9])
    if any(v is None for v in nums):
        out.warnings.add(f"size {size}: unreadable latency figure in {' '.join(words)[:80]!r}")
    if len(out.lat) >= MAX_ROWS:
        out.warnings.add(f"more than {MAX_ROWS} result rows: the rest were left out")
        return True
    row = LatRow(size_bytes=size, iterations=iters)
    if duration:  # "-D" runs: only t_avg (and transactions per second)
        row.t_avg_us = nums[0]
    else:
        nums += [None] * (7 - len(nums))
        (
            row.t_min_us,
            row.t_max_us,
            row.t_typical_us,
            row.t_avg_us,
            row.t_stdev_us,
            row.p99_us,
            row.p999_us,
        ) = nums
    out.lat.append(row)
    return True


def _error_kind(line: str) -> str | None:
    for kind, pattern in _ERRORS:
        if pattern.search(line):
            return kind
    return None


def parse_perftest(text: str) -> PerftestResult:
    """Parse the standard output and error of one perftest run (server or client side)."""
    out = PerftestResult()
    if len(text) > MAX_BYTES:
        out.warnings.add(f"output over {MAX_BYTES} bytes: the rest was left out")
        text = text[:MAX_BYTES]
    table: str | None = None  # "bw", "lat", "lat_dur" once the column titles were read
    in_samples = False
    in_header = False
    for raw in text.splitlines():
        if len(raw) > _LINE_MAX:
            out.warnings.add(f"line of {len(raw)} characters skipped")
            continue
        if in_samples:
            m = _SAMPLE.match(raw)
            if m is not None:
                value = parse_float(m.group(2))
                if value is None or value < 0:
                    out.warnings.add(f"sample {m.group(1)}: unreadable {m.group(2)[:32]!r}")
                elif len(out.samples_us) < MAX_SAMPLES:
                    out.samples_us.append(value)
                else:
                    out.warnings.add(f"more than {MAX_SAMPLES} samples: the rest were left out")
                    in_samples = False  # said once; the lines left are skipped below
                continue
            in_samples = False
        line = clean(raw).strip()
        if not line:
            continue
        if line == _SAMPLES_TITLE:
            in_samples = True
            if out.samples_us:
                out.warnings.add("a second sample list was ignored")
                in_samples = False
            continue
        if _RULE.match(line):
            if table is not None and (out.bw or out.lat):
                out.complete = True
            in_header = out.header.test is not None and not out.header.fields
            continue
        if m := _BW_TITLE.search(line):
            table, out.kind, out.unit = "bw_sl" if m.group(1) else "bw", "bw", m.group(2)
            if out.unit not in _UNITS:
                out.warnings.add(f"unknown bandwidth unit {out.unit[:16]!r}")
            continue
        if _LAT_TITLE.search(line) or _LAT_DUR_TITLE.search(line):
            table = "lat_dur" if _LAT_DUR_TITLE.search(line) else "lat"
            out.kind = "lat"
            continue
        if m := _TEST_TITLE.match(line):
            title = m.group(1).strip()
            out.header.bidirectional = " Bidirectional " in f" {title} "
            out.header.test = title.replace(" Bidirectional", "")
            in_header = True
            continue
        if m := _VERSION.match(line):
            out.header.version = m.group(1)
            continue
        words = line.split()
        if table is not None and words and words[0].isascii() and words[0].isdigit():
            if table == "bw_sl":
                words = words[:1] + words[2:]  # the service level is not a figure
            ok = (
                _bw_row(words, out.unit or "", out)
                if table.startswith("bw")
                else _lat_row(words, table == "lat_dur", out)
            )
            if ok:
                continue
        if in_header and ":" in line and not line.startswith(_NOT_HEADER):
            # before the error patterns: "rdma_cm QPs : OFF" and "PCIe relax order:
            # Unsupported" are header lines, not errors
            _header_line(line, out.header)
            continue
        kind = _error_kind(line)
        if kind is not None and len(out.errors) < MAX_ERRORS:
            out.errors.append(PerftestError(kind, line[:200]))
    if out.kind is not None and not (out.bw or out.lat) and not out.errors:
        out.warnings.add("the result table has no rows (the run was cut short)")
    elif (out.bw or out.lat) and not out.complete:
        out.warnings.add("the output ends inside the result table (cut short?)")
    return out


def _num(d: dict[str, Any], key: str) -> float | None:
    v = d.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return clean(v, 128) if isinstance(v, str) else None


def parse_perftest_json(text: str) -> PerftestResult:
    """Parse the file ``--out_json`` writes (``{"test_info": {...}, "results": {...}}``).

    It holds the last message size only (``write_bw_report_to_file``,
    ``write_report_lat_to_file``); rates are read in Gb/s only when ``--report_gbits`` was
    given, which the JSON does not say: fabtop always asks for it, so BW is taken as Gb/s.
    """
    out = PerftestResult()
    if len(text) > 1024 * 1024:
        out.errors.append(PerftestError("run", "--out_json file over 1 MiB"))
        return out
    try:
        doc = json_loads(text)
    except ValueError as e:
        out.errors.append(PerftestError("run", clean(f"--out_json is not JSON: {e}", 200)))
        return out
    if not isinstance(doc, dict):
        out.errors.append(PerftestError("run", "--out_json is not a JSON object"))
        return out
    info = doc.get("test_info")
    res = doc.get("results")
    h = out.header
    if isinstance(info, dict):
        test = _str(info, "test") or ""
        h.bidirectional = "Bidirectional" in test
        h.test = test.replace("_Bidirectional", "").replace("_Test", "").replace("_", " ") or None
        h.device = _str(info, "Device")
        h.link_type = _str(info, "Link_type")
        h.transport = _str(info, "Transport_type")
        h.connection_type = _str(info, "Connection_type")
        h.mtu = _int(info, "Mtu")
        h.gid_index = _int(info, "GID_index")
        h.qps = _int(info, "Number_of_qps")
    if not isinstance(res, dict):
        out.warnings.add("--out_json has no results")
        return out
    size, iters = _int(res, "MsgSize"), _int(res, "n_iterations")
    if size is None or iters is None:
        out.warnings.add("--out_json results without MsgSize/n_iterations")
        return out
    out.complete = True
    if "BW_average" in res:
        out.kind, out.unit = "bw", "Gb/sec"
        out.bw.append(
            BwRow(size, iters, _num(res, "BW_peak"), _num(res, "BW_average"), _num(res, "MsgRate"))
        )
    else:
        out.kind = "lat"
        out.lat.append(
            LatRow(
                size,
                iters,
                _num(res, "t_min"),
                _num(res, "t_max"),
                _num(res, "t_typical"),
                _num(res, "t_avg"),
                _num(res, "t_stdev"),
                _num(res, "percentile_99"),
                _num(res, "percentile_99.9"),
            )
        )
    return out
