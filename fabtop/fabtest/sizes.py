"""``fabtop test sizes``: one pair per rail swept over inference-sized messages, and the
size below which the fabric is latency-bound.

Each size from 4 KiB to 4 MiB (powers of two) gets a bandwidth run with several queue
pairs or streams (perftest ``ib_write_bw -s SIZE -q 4``; ``iperf3 -P 4 -l SIZE``, whose
writes stop at 1 MiB) and a latency run of that size (``ib_write_lat -s SIZE``;
``sockperf ping-pong -m SIZE``, whose TCP messages stop at 1 MiB - 1 B). Before them, a
round trip of the smallest message: the path's own round trip.

**The bend** is the half-power size ``n½ = peak x rtt``: the sweep's highest bandwidth
times the smallest message's round trip (twice the one-way figure perftest and sockperf
print). A request of ``s`` bytes that waits for a short answer, as a decode step's
dispatch waits for its experts, takes ``rtt + s / peak``, so it moves
``s / (rtt + s / peak)``: exactly half the peak at ``n½`` (Hockney's half-performance
length with a round trip). (A ping-pong that echoes ``s`` bytes back pays ``s / peak``
twice: it never moves more than half the peak, so the bend is not read off it.)
Below the bend a transfer's time is mostly the round trip (latency-bound): more bandwidth
does not help it, a shorter path does; above it, bandwidth decides. Streaming bandwidth
alone barely bends with the size on TCP (the kernel coalesces writes), so the bend comes
from the two measurements that do not depend on it: the peak, and the round trip.

Serving reads the curve at two places: a decode step's dispatch moves about 7 KiB per
token per expert destination (DeepEP's low-latency path), prefill and KV-cache transfer
move megabytes. The report says on which side of the bend each lies.

The verdict: the bandwidth at the largest size against ``test_bw_ratio`` x the reference
rate (as ``pairs``: fail under it), bandwidth that falls with size (under
``test_sizes_drop_ratio`` of a smaller size's: a warning), and the window's counters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from collectors.engines import SOCKPERF_MAX_TCP_SIZE
from fabtop.core.thresholds import effective
from fabtop.fabtest.evidence import WindowEvidence
from fabtop.fabtest.judge import Status, Verdict, _counters, gb
from fabtop.fabtest.measure import Measured, Port, bandwidth, latency
from fabtop.fabtest.plans import Step, iterations_for
from fabtop.fabtest.rails import Rails
from fabtop.fabtest.stats import summarize

KIB, MIB = 1024, 1024 * 1024
SIZES = tuple(4 * KIB << i for i in range(11))  # 4 KiB .. 4 MiB
# Queue pairs (perftest -q) or streams (iperf3 -P) of each bandwidth run: one expert
# destination is one queue pair, and a few of them keep a link full where one queue
# pair's outstanding work requests or one TCP window would not: the figure is the path's.
STREAMS = 4
# Latency runs of the sweep: 10 samples past p99 (p99 is what each size reports).
LAT_ITERATIONS = iterations_for(0.99)
# A decode step's dispatch: about 7 KiB per token per expert destination (DeepEP's
# low-latency kernels send a 7168-wide FP8 hidden state and its scales).
DECODE_BYTES = 7 * KIB
# Prefill activations and KV-cache blocks move a megabyte and more per transfer.
PREFILL_BYTES = 1 * MIB


@dataclass(frozen=True, slots=True)
class SizeRow:
    """One size of the sweep: its bandwidth, and its latency (one-way, as the tools
    print it: half the round trip)."""

    size: int
    gbps: float | None
    p50_us: float | None = None
    p99_us: float | None = None
    samples: int = 0


@dataclass(slots=True)
class Sweep:
    """What a sweep measured: every size, and the smallest message's latency."""

    rows: list[SizeRow] = field(default_factory=list)
    base_us: float | None = None  # p50 one-way latency of the smallest message
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Bend:
    """The half-power size ``bytes = peak x rtt`` and what it comes from."""

    bytes: float
    peak_gbps: float
    rtt_us: float


def bend(rows: Sequence[SizeRow], base_us: float | None) -> Bend | None:
    """The bend of a curve (module docstring): None without a bandwidth or a round trip.

    The peak is the highest bandwidth at any size, whatever the curve's shape: a flat
    curve (TCP) bends at the same place as one that rises, and a dip (a size that ran
    slower) moves nothing; a dip is judged, not averaged in.
    """
    got = [r.gbps for r in rows if r.gbps is not None and math.isfinite(r.gbps) and r.gbps > 0]
    if not got or base_us is None or not math.isfinite(base_us) or base_us <= 0:
        return None
    peak = max(got)
    rtt_us = 2 * base_us
    return Bend(peak * 1e9 / 8 * rtt_us / 1e6, peak, rtt_us)


def size_text(n: float) -> str:
    """``4 KiB``, ``1 MiB``, ``48.5 KiB``, ``700 B``."""
    for unit, div in (("MiB", MIB), ("KiB", KIB)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if v == round(v) or v >= 100 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _merge(out: Measured, m: Measured) -> None:
    out.runs += m.runs
    out.problems += [p for p in m.problems if p not in out.problems]  # said once, not per size
    out.versions.update(m.versions)
    if m.retransmits is not None:
        out.retransmits = (out.retransmits or 0) + m.retransmits
    if m.sent_bytes is not None:
        out.sent_bytes = (out.sent_bytes or 0) + m.sent_bytes


def _missing(m: Measured) -> bool:
    return any(r.missing for r in m.runs)


async def measure(
    sender: Port,
    receiver: Port,
    seconds: int,
    iterations: int | None,
    ports: Callable[[str], int],
    sizes: Sequence[int] = SIZES,
) -> tuple[Measured, Sweep]:
    """The smallest message's round trip, then each size's bandwidth and latency, one run
    after the other (runs at once would load each other). A missing tool is not run again
    (it would be missing at every size): without the bandwidth tool the sweep ends, without
    the latency tool it goes on with bandwidth alone."""
    out, sweep = Measured(), Sweep()
    n = iterations or LAT_ITERATIONS
    base = await latency(sender, receiver, n, seconds, ports)
    _merge(out, base)
    sweep.base_us = summarize(base.samples_us).p50_us
    timed = not _missing(base)
    for size in sizes:
        bw = await bandwidth([sender], receiver, seconds, ports, False, size, STREAMS)
        _merge(out, bw)
        out.engine = bw.engine
        if _missing(bw):
            break
        gbps = bw.gbps[0] if bw.gbps else None
        if not timed or (not receiver.rdma and size > SOCKPERF_MAX_TCP_SIZE):
            sweep.rows.append(SizeRow(size, gbps))
            continue
        lat = await latency(sender, receiver, n, seconds, ports, size)
        _merge(out, lat)
        s = summarize(lat.samples_us)
        sweep.rows.append(SizeRow(size, gbps, s.p50_us, s.p99_us, s.n))
    if not receiver.rdma:
        out.engine = "iperf3+sockperf"
        above = [r.size for r in sweep.rows if r.size > SOCKPERF_MAX_TCP_SIZE]
        if above:
            sweep.notes.append(
                f"no latency from {size_text(above[0])} on: sockperf's TCP messages stop at "
                f"{SOCKPERF_MAX_TCP_SIZE} bytes; iperf3 writes 1 MiB blocks at larger sizes"
            )
    return out, sweep


def judge(
    step: Step,
    sweep: Sweep | None,
    reference_gbps: float | None,
    evidence: WindowEvidence | None,
    thresholds: Mapping[str, float] | None = None,
    retransmits: int | None = None,
    loss_fraction: float | None = None,
) -> Verdict:
    """A sweep's verdict: the largest size against the reference rate, bandwidth that
    falls with size, the engine's retransmissions (``loss_fraction`` of what it sent, as
    a pair's) and the window's counters; its figures, the bend and every row."""
    th = effective(thresholds)
    sweep = sweep or Sweep()
    rows = sweep.rows
    table = tuple(
        {"size_bytes": float(r.size), "gbps": r.gbps, "p50_us": r.p50_us, "p99_us": r.p99_us}
        for r in rows
    )
    b = bend(rows, sweep.base_us)
    largest = rows[-1] if rows else None
    figures: dict[str, float | None] = {
        "bend_bytes": b.bytes if b else None,
        "peak_gbps": b.peak_gbps if b else None,
        "base_rtt_us": 2 * sweep.base_us if sweep.base_us is not None else None,
        "largest_bytes": float(largest.size) if largest else None,
        "gbps": largest.gbps if largest else None,
        "reference_gbps": reference_gbps,
        "engine_retransmits": retransmits,
    }
    reasons: list[str] = []
    notes = list(sweep.notes)
    if largest is None or all(r.gbps is None for r in rows):
        reasons.append("no bandwidth figure at any size")
        return Verdict(step, Status.FAIL, tuple(reasons), figures, tuple(notes), False, evidence)
    status = Status.PASS
    lost = [size_text(r.size) for r in rows if r.gbps is None]
    if lost:
        status = Status.WARN
        reasons.append(f"no bandwidth figure at {', '.join(lost)}")
    if largest.gbps is not None and reference_gbps is not None:
        figures["of_reference"] = largest.gbps / reference_gbps
        need = th["test_bw_ratio"] * reference_gbps
        if largest.gbps < need:
            status = Status.FAIL
            reasons.append(
                f"{gb(largest.gbps)} Gb/s at {size_text(largest.size)} is below "
                f"{th['test_bw_ratio']:g} x {reference_gbps:g} Gb/s = {gb(need)} Gb/s"
            )
    elif reference_gbps is None:
        notes.append(
            "no reference rate (an IP path with no declared speed, or a port that does not "
            "report its rate): the largest size is not judged against the link's speed"
        )
    fall = _falls(rows, th["test_sizes_drop_ratio"])
    if fall:
        status = max(status, Status.WARN)
        reasons.append(fall)
    if b is None:
        notes.append("no round trip of the smallest message: no bend")
    figure = f"{gb(largest.gbps)} Gb/s" if largest.gbps is not None else "the sweep"
    lossy = loss_fraction is not None and loss_fraction > th["test_loss_fraction"]
    status = _counters(status, reasons, evidence, figure, retransmits, lossy)
    return Verdict(
        step,
        status,
        tuple(reasons),
        figures,
        tuple(notes),
        reference_gbps is None,
        evidence,
        rows=table,
    )


def _falls(rows: Sequence[SizeRow], ratio: float) -> str | None:
    """The first size whose bandwidth falls under ``ratio`` of a smaller size's best."""
    best: SizeRow | None = None
    for r in rows:
        if r.gbps is None:
            continue
        if best is not None and best.gbps is not None and r.gbps < ratio * best.gbps:
            return (
                f"bandwidth falls with size: {gb(r.gbps)} Gb/s at {size_text(r.size)} is under "
                f"{ratio:.0%} of {gb(best.gbps)} Gb/s at {size_text(best.size)}"
            )
        if best is None or best.gbps is None or r.gbps > best.gbps:
            best = r
    return None


def _serving(size: int, bend_bytes: float | None) -> str:
    """What a row means for serving: which transfers have this size."""
    words = []
    if size // 2 < DECODE_BYTES <= size:
        words.append("decode dispatch")
    if size >= PREFILL_BYTES:
        words.append("prefill/KV")
    if bend_bytes is not None:
        words.append("latency-bound" if size < bend_bytes else "bandwidth-bound")
    return ", ".join(words)


def row_lines(v: Verdict) -> list[str]:
    """The sweep's table, its bend, and what the curve means for serving."""
    if not v.rows:
        return []
    f = v.figures
    bend_bytes = f.get("bend_bytes")
    out = [f"{'size':>8}  {'Gb/s':>7}  {'p50 µs':>9}  {'p99 µs':>9}"]
    for r in v.rows:
        size = int(r["size_bytes"] or 0)
        gbps, p50, p99 = r.get("gbps"), r.get("p50_us"), r.get("p99_us")
        out.append(
            f"{size_text(size):>8}  {gb(gbps) if gbps is not None else '-':>7}  "
            f"{_us(p50):>9}  {_us(p99):>9}  {_serving(size, bend_bytes)}"
        )
    peak, rtt = f.get("peak_gbps"), f.get("base_rtt_us")
    if bend_bytes is None or peak is None or rtt is None:
        out.append("bend: not known (no bandwidth, or no round trip of the smallest message)")
        return out
    out.append(
        f"bend (half-power size) {size_text(bend_bytes)} = peak {gb(peak)} Gb/s x round trip "
        f"{_us(rtt)} µs: a request that waits for a short answer moves half the peak there, "
        "less below it (latency-bound)"
    )
    if bend_bytes < SIZES[0]:
        out.append(
            f"(below the sweep's {size_text(SIZES[0])}: every size measured is bandwidth-bound)"
        )
    decode = "latency-bound" if bend_bytes > DECODE_BYTES else "bandwidth-bound"
    out.append(
        f"decode dispatch (about 7 KiB per token per expert destination): {decode}; "
        f"prefill and KV transfers ({size_text(PREFILL_BYTES)} and up): "
        + ("bandwidth-bound" if bend_bytes <= PREFILL_BYTES else "still latency-bound")
    )
    return out


def _us(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def summary(fabric: Rails, steps: Sequence[Step], seconds: int) -> str:
    """What the sweep will run and for how long, said before it starts."""
    pairs = "; ".join(
        f"rail {s.rail}: {s.senders[0]}/{_name(fabric, s.senders[0], s.rail)} -> "
        f"{s.receiver}/{_name(fabric, s.receiver, s.rail)}"
        for s in steps
    )
    runs = 2 * len(SIZES) + 1
    each = seconds + 3  # a run's setup and report (an RDMA latency run is shorter)
    return (
        f"fabtop test sizes: {len(SIZES)} sizes ({size_text(SIZES[0])} to "
        f"{size_text(SIZES[-1])}) x (a bandwidth run of {seconds} s with {STREAMS} streams "
        f"or queue pairs, and a latency run), after a round trip of the smallest message: "
        f"{runs} runs, about {runs * each} s, every rail at once; one pair per "
        f"rail (its first two hosts): {pairs}"
    )


def _name(fabric: Rails, host: str, rail: int) -> str:
    port = fabric.port(host, rail)
    return port.name if port is not None else "?"
