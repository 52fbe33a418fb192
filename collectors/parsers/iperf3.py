"""Parse ``iperf3 -J`` (JSON) output of a client or a server.

The layout (iperf 3.6 to 3.12, ``src/iperf_api.c``; captures in ``tests/fixtures/iperf3/``):
``start`` (``version``, ``test_start`` with protocol, streams, duration, ``reverse``, and in
3.7+ ``bidir``), ``intervals`` (each with ``sum`` and, for ``--bidir``,
``sum_bidir_reverse``), ``end`` (``sum_sent``, ``sum_received``, their ``_bidir_reverse``
twins, UDP's ``sum`` with jitter and loss, ``cpu_utilization_percent``) and, when the run
failed, a top-level ``error`` string. A server prints the same document with
``sender: false`` sums.

Bounded like every remote body (:func:`collectors.parsers.json_body.bounded_json`);
numbers through :mod:`collectors.numbers`; strings cleaned. Never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from collectors.numbers import finite
from collectors.parsers.json_body import bounded_json
from collectors.text import clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_INTERVALS = 3600  # one per second for an hour: far past any test fabtop runs
MAX_WARNINGS = 20


@dataclass(slots=True)
class Iperf3Sum:
    """One ``sum``: bytes and rate over ``seconds``; None where the version omits a field."""

    seconds: float | None = None
    bytes: int | None = None
    bits_per_second: float | None = None
    retransmits: int | None = None  # TCP sender only
    jitter_ms: float | None = None  # UDP
    lost_packets: int | None = None  # UDP
    packets: int | None = None  # UDP
    lost_percent: float | None = None  # UDP


@dataclass(slots=True)
class Iperf3Interval:
    """One reporting interval (``-i``): its forward sum and, with ``--bidir``, the reverse one."""

    start: float | None
    end: float | None
    sum: Iperf3Sum
    reverse: Iperf3Sum | None = None
    omitted: bool = False


@dataclass(slots=True)
class Iperf3Result:
    """One iperf3 run; ``error`` is iperf3's own message (or why the output is unusable)."""

    version: str | None = None  # "3.12"
    protocol: str | None = None  # "TCP" / "UDP"
    streams: int | None = None
    duration_s: int | None = None
    reverse: bool = False
    bidir: bool = False
    role: str | None = None  # "client" / "server" (a server's sums say sender: false)
    intervals: list[Iperf3Interval] = field(default_factory=list)
    sent: Iperf3Sum | None = None
    received: Iperf3Sum | None = None
    sent_reverse: Iperf3Sum | None = None  # --bidir: the other direction
    received_reverse: Iperf3Sum | None = None
    udp: Iperf3Sum | None = None  # UDP's end "sum" (jitter, loss)
    cpu_host_percent: float | None = None
    cpu_remote_percent: float | None = None
    error: str | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))

    @property
    def ok(self) -> bool:
        return self.error is None and (self.received is not None or self.udp is not None)


def _obj(d: object, key: str) -> dict[str, Any] | None:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else None


def _f(d: dict[str, Any], key: str) -> float | None:
    v = d.get(key)
    return finite(v) if isinstance(v, int | float) else None


def _i(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _sum(d: dict[str, Any] | None) -> Iperf3Sum | None:
    if d is None:
        return None
    return Iperf3Sum(
        seconds=_f(d, "seconds"),
        bytes=_i(d, "bytes"),
        bits_per_second=_f(d, "bits_per_second"),
        retransmits=_i(d, "retransmits"),
        jitter_ms=_f(d, "jitter_ms"),
        lost_packets=_i(d, "lost_packets"),
        packets=_i(d, "packets"),
        lost_percent=_f(d, "lost_percent"),
    )


def _start(start: dict[str, Any], out: Iperf3Result) -> None:
    version = start.get("version")
    if isinstance(version, str):
        out.version = clean(version, 64).removeprefix("iperf ").strip() or None
    test = _obj(start, "test_start")
    if test is not None:
        proto = test.get("protocol")
        out.protocol = clean(proto, 16) if isinstance(proto, str) else None
        out.streams = _i(test, "num_streams")
        out.duration_s = _i(test, "duration")
        out.reverse = bool(_i(test, "reverse"))
        out.bidir = bool(_i(test, "bidir"))
    # Only a server's start has "accepted_connection"; only a client's "connecting_to".
    if _obj(start, "accepted_connection") is not None:
        out.role = "server"
    elif _obj(start, "connecting_to") is not None:
        out.role = "client"


def parse_iperf3(text: str) -> Iperf3Result:
    """Parse one ``iperf3 -J`` document (client or server side)."""
    out = Iperf3Result()
    doc, why = bounded_json(text, "iperf3 -J output", out.warnings)
    if why is not None or not isinstance(doc, dict):
        out.error = why or "iperf3 -J output is not a JSON object"
        return out
    err = doc.get("error")
    if isinstance(err, str) and err:
        out.error = "iperf3: " + clean(err, 300)
    start = _obj(doc, "start")
    if start is not None:
        _start(start, out)
    intervals = doc.get("intervals")
    if isinstance(intervals, list):
        if len(intervals) > MAX_INTERVALS:
            out.warnings.add(f"{len(intervals)} intervals: the first {MAX_INTERVALS} were kept")
        for item in intervals[:MAX_INTERVALS]:
            s = _sum(_obj(item, "sum"))
            if s is None or not isinstance(item, dict):
                out.warnings.add("an interval without a sum was skipped")
                continue
            raw = item["sum"]
            out.intervals.append(
                Iperf3Interval(
                    start=_f(raw, "start"),
                    end=_f(raw, "end"),
                    sum=s,
                    reverse=_sum(_obj(item, "sum_bidir_reverse")),
                    omitted=raw.get("omitted") is True,
                )
            )
    end = _obj(doc, "end")
    if end is not None:
        out.sent = _sum(_obj(end, "sum_sent"))
        out.received = _sum(_obj(end, "sum_received"))
        out.sent_reverse = _sum(_obj(end, "sum_sent_bidir_reverse"))
        out.received_reverse = _sum(_obj(end, "sum_received_bidir_reverse"))
        if out.protocol == "UDP":
            out.udp = _sum(_obj(end, "sum"))
        cpu = _obj(end, "cpu_utilization_percent")
        if cpu is not None:
            out.cpu_host_percent = _f(cpu, "host_total")
            out.cpu_remote_percent = _f(cpu, "remote_total")
    if out.error is None and out.received is None and out.udp is None:
        out.error = "iperf3 -J output has no end sums (the run was cut short)"
    elif out.error is None and out.received is not None and out.received.bits_per_second is None:
        out.error = "iperf3 -J output: end.sum_received has no bits_per_second"
    return out
