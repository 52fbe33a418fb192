"""Parse sockperf ping-pong output: its summary and its ``--full-log`` CSV of every sample.

The summary (sockperf 3.7 and later, ``src/client.cpp``; captures in
``tests/fixtures/sockperf/``) is a block of ``sockperf:`` lines per server:
``[Valid Duration] RunTime=... SentMessages=N; ReceivedMessages=N``,
``avg-latency=22.772 (std-dev=17.498)``, ``# dropped messages = 0; # duplicated
messages = 0; # out-of-order messages = 0``, then ``---> percentile 99.900 = 69.472``
lines and ``<MAX>``/``<MIN> observation`` lines, latencies in microseconds (half the
round trip). A run with ``--full-log FILE`` repeats that block in the file, then a
``packet, txTime(sec), rxTime(sec), latency(usec)`` header and one line per sample.
Numbers go through :mod:`collectors.numbers`; the colour escapes sockperf prints are
removed by :func:`collectors.text.clean`. Never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import parse_float, parse_uint
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

# A one-second run on loopback logs ~12k samples of ~40 bytes; a 10 s run at full rate
# about 1M (40 MB). 64 MiB bounds the log; past it the text is cut, a warning says so.
MAX_BYTES = 64 * 1024 * 1024
MAX_SAMPLES = 2_000_000
MAX_WARNINGS = 20
_LINE_MAX = 512

_PERCENTILE = re.compile(r"--->\s+percentile\s+([0-9.]{1,8})\s*=\s*(\S{1,32})\s*$")
_OBSERVATION = re.compile(r"--->\s+<(MAX|MIN)>\s+observation\s*=\s*(\S{1,32})\s*$")
# 3.7: "avg-latency=22.772 (std-dev=17.498)"; 3.10 adds ", mean-ad=..., std-error=..." inside.
_AVG = re.compile(r"avg-latency=([^\s(]{1,32})\s*\(std-dev=([^\s,)]{1,32})")
_VALID = re.compile(
    r"\[Valid Duration\].*SentMessages=([0-9]{1,20});\s*ReceivedMessages=([0-9]{1,20})"
)
_COUNTS = re.compile(
    r"# dropped messages = ([0-9]{1,20}); # duplicated messages = ([0-9]{1,20}); "
    r"# out-of-order messages = ([0-9]{1,20})"
)
_VERSION = re.compile(r"== version #([0-9][0-9A-Za-z._-]{0,31}) ==")
_CSV_HEADER = re.compile(r"^packet,\s*txTime\(sec\),\s*rxTime\(sec\),\s*latency\(usec\)$")
# sockperf's own error lines ("sockperf: ERROR: ...", the client's "No messages were
# received"): it exits 0 after each of them (3.7), so the text is what tells a failed run.
# Upper case only: 3.10's statistics line holds "std-error=".
_ERROR = re.compile(
    r"\bERROR\b|(?i:can.t connect|no response from server|connection refused"
    r"|no messages were received from the server)"
)


@dataclass(slots=True)
class SockperfResult:
    """One ping-pong run; latencies in microseconds, None where not printed."""

    version: str | None = None
    sent: int | None = None  # messages in the valid (measured) part of the run
    received: int | None = None
    dropped: int | None = None
    duplicated: int | None = None
    out_of_order: int | None = None
    avg_us: float | None = None
    stdev_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    percentiles_us: dict[str, float] = field(default_factory=dict)  # "99.900" -> 69.472
    samples_us: list[float] = field(default_factory=list)  # --full-log, in order
    error: str | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))

    @property
    def ok(self) -> bool:
        return self.error is None and (self.avg_us is not None or bool(self.samples_us))


def _sample(line: str, out: SockperfResult) -> bool:
    """Read one sample line; False once the samples are full (the rest is skipped)."""
    parts = line.split(",")
    value = parse_float(parts[3]) if len(parts) == 4 else None
    if value is None or value < 0:
        out.warnings.add(f"unreadable sample line {line[:60]!r}")
    elif len(out.samples_us) < MAX_SAMPLES:
        out.samples_us.append(value)
    else:
        out.warnings.add(f"more than {MAX_SAMPLES} samples: the rest were left out")
        return False
    return True


def parse_sockperf(text: str) -> SockperfResult:
    """Parse sockperf ping-pong's standard output, or its ``--full-log`` file.

    Only the first server's block is read (fabtop runs one server per client).
    """
    out = SockperfResult()
    if len(text) > MAX_BYTES:
        out.warnings.add(f"output over {MAX_BYTES} bytes: the rest was left out")
        text = text[:MAX_BYTES]
    in_samples = False
    summary_done = False  # the summary is printed twice in a full log: read it once
    for raw in text.splitlines():
        if len(raw) > _LINE_MAX:
            out.warnings.add(f"line of {len(raw)} characters skipped")
            continue
        if in_samples:
            if raw.startswith("---"):  # the rule that ends the log
                in_samples = False
            elif not _sample(raw, out):
                break
            continue
        line = clean(raw).strip()
        if not line:
            continue
        if _CSV_HEADER.match(line):
            in_samples = True
            continue
        if line.startswith("-----") and out.min_us is not None:
            summary_done = True
            continue
        if m := _VERSION.search(line):
            out.version = m.group(1)
            continue
        if summary_done:
            continue
        if m := _PERCENTILE.search(line):
            value = parse_float(m.group(2))
            if value is None:
                out.warnings.add(f"unreadable percentile {m.group(1)}: {m.group(2)!r}")
            elif len(out.percentiles_us) < 32:
                out.percentiles_us.setdefault(m.group(1), value)
        elif m := _OBSERVATION.search(line):
            value = parse_float(m.group(2))
            if m.group(1) == "MAX":
                out.max_us = value
            else:
                out.min_us = value
        elif m := _AVG.search(line):
            out.avg_us, out.stdev_us = parse_float(m.group(1)), parse_float(m.group(2))
        elif m := _VALID.search(line):
            out.sent, out.received = parse_uint(m.group(1)), parse_uint(m.group(2))
        elif m := _COUNTS.search(line):
            out.dropped, out.duplicated, out.out_of_order = (parse_uint(g) for g in m.groups())
        elif _ERROR.search(line) and out.error is None:
            out.error = "sockperf: " + clean(line.removeprefix("sockperf:").strip(), 200)
    if out.error is None and out.avg_us is None and not out.samples_us:
        out.error = "sockperf: no latency summary in the output (the run was cut short)"
    return out
