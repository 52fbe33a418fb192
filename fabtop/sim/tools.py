"""What perftest, iperf3 and sockperf print on a simulated node, in the real tools' formats.

Each text is shaped after a capture the parsers are tested on (collectors/parsers and
tests/fixtures/{perftest,iperf3,sockperf}/SOURCES.md):

- perftest: the header and tables of ``ib_write_bw_bidir_gbits_mlx5_roce.txt`` (RoCE),
  ``ib_write_bw_mb_mlx5_ib_server.txt`` (IB, the server's "Waiting for client" box) and
  ``ib_write_lat_all_sizes_mlx5_ib_client.txt``; the ``-U`` sample list as perftest's
  source prints it (``print_report_lat``: ``#, usec`` then ``%d, %g``), laid out as
  tests/unit/test_parse_perftest.py builds it; the refused connection of
  ``ib_write_bw_connect_failed_pr228.txt``, the missing device of
  ``ib_send_bw_device_not_found_rxe.txt``; a port not ACTIVE as ``ctx_set_link_layer``
  prints it (" Port number %d state is %s"); a run whose packets stop arriving as
  public transcripts show it (" Completion with error at client", " Failed status 12:
  wr_id 0 syndrom 0x81", "scnt=128, ccnt=0", " Failed to complete run_iter_bw function
  successfully": transport retry counter exceeded);
- iperf3 ``-J``: the 3.12 documents of ``client_3.12_tcp_loopback_testbed.json``,
  ``server_3.12_tcp_loopback_testbed.json`` and ``client_3.12_refused_testbed.json``
  (``--bidir`` adds the ``_bidir_reverse`` sums the parser reads, as 3.7+ does);
- sockperf 3.7: ``ping_pong_3.7_tcp_loopback_testbed.txt``, its ``--full-log`` file, and
  ``ping_pong_3.7_tcp_refused_testbed.txt``. The server's banner has no capture: only
  its version line is printed.

Pure text in, text out; the figures come from :mod:`fabtop.sim.bench`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

PERFTEST_VERSION = "6.29"
IPERF3_VERSION = "3.12"
SOCKPERF_VERSION = "3.7-no.git"
RULE = "-" * 87
_ESC = "\x1b"
_PURPLE, _RESET = f"{_ESC}[2;35m", f"{_ESC}[0m"

_TITLES = {
    "ib_write_bw": "RDMA_Write",
    "ib_read_bw": "RDMA_Read",
    "ib_send_bw": "Send",
    "ib_write_lat": "RDMA_Write",
    "ib_read_lat": "RDMA_Read",
    "ib_send_lat": "Send",
}


def version_text(tool: str, kernel: str, host: str) -> str:
    """``TOOL --version``."""
    if tool == "iperf3":
        return (
            f"iperf {IPERF3_VERSION} (cJSON 1.7.15)\n"
            f"Linux {host} {kernel} #45-Ubuntu SMP PREEMPT_DYNAMIC x86_64\n"
        )
    if tool == "sockperf":
        return f"sockperf, version {SOCKPERF_VERSION}\n"
    return f"Version: {PERFTEST_VERSION}\n"


# --- perftest -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PerftestSide:
    """What one side's header says about its run."""

    tool: str
    device: str
    link_type: str  # "Ethernet" (RoCE) or "IB"
    mtu: int
    gid_index: int | None
    qps: int = 1
    bidir: bool = False
    duration: bool = False  # -D: BW peak is not measured
    gbits: bool = True  # --report_gbits


def _header(side: PerftestSide, local_gid: str, remote_gid: str) -> str:
    is_bw = side.tool.endswith("_bw")
    kind = "BW" if is_bw else "Latency"
    title = f"{_TITLES[side.tool]}{' Bidirectional' if side.bidir else ''} {kind} Test"
    lines = []
    if side.duration and is_bw:
        lines.append("WARNING: BW peak won't be measured in this run.")
    lines += [
        RULE,
        " " * 20 + title,
        f" Dual-port       : OFF\t\tDevice         : {side.device}",
        f" Number of qps   : {side.qps}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        f" TX depth        : {128 if is_bw else 1}",
        f" CQ Moderation   : {100 if is_bw else 1}",
        f" Mtu             : {side.mtu}[B]",
        f" Link type       : {side.link_type}",
    ]
    if side.gid_index is not None:
        lines.append(f" GID index       : {side.gid_index}")
    lines += [
        f" Max inline data : {0 if is_bw else 220}[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        RULE,
    ]
    for who, gid in (("local", local_gid), ("remote", remote_gid)):
        for q in range(side.qps):
            lid = "0000" if side.link_type == "Ethernet" else "0x40"
            lines.append(
                f" {who} address: LID {lid} QPN 0x{0x8A + q:04x} PSN 0x{0xFB6D + q:06x}"
                f" RKey 0x238f86 VAddr 0x007dd5a3cfd000"
            )
            if side.link_type == "Ethernet":
                lines.append(f" GID: {gid}")
    lines.append(RULE)
    return "\n".join(lines) + "\n"


def perftest_waiting() -> str:
    """What a server prints while it waits for its client."""
    box = "*" * 36
    return f"\n{box}\n* Waiting for client to connect... *\n{box}\n"


def gid_text(ipv4: str) -> str:
    """An IPv4 address as perftest prints a RoCE v2 GID (``::ffff:a.b.c.d``)."""
    octets = ":".join(f"{int(o):02d}" for o in ipv4.split("."))
    return "00:00:00:00:00:00:00:00:00:00:255:255:" + octets


def perftest_bw(
    side: PerftestSide, size: int, gbps: float, seconds: float, gids: tuple[str, str]
) -> str:
    """A bandwidth run's whole output: header, table, closing rule. Rates in Gb/s with
    ``--report_gbits``, else in MiB/s (the column title of 2024 and later builds)."""
    msgs = gbps * 1e9 / 8 / size * seconds
    peak = 0.0 if side.duration or side.bidir else gbps * 1.004
    unit, scale = ("Gb/sec", 1.0) if side.gbits else ("MiB/sec", 1e9 / 8 / 2**20)
    row = (
        f" {size:<10} {round(msgs):<16} {peak * scale:<18.2f} {gbps * scale:<20.2f} "
        f"{gbps * 1e9 / 8 / size / 1e6:.6f}"
    )
    title = f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"
    return _header(side, *gids) + f"{title}\n{row}\n{RULE}\n"


def _pct(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def perftest_lat(
    side: PerftestSide, size: int, samples: Sequence[float], gids: tuple[str, str], raw: bool
) -> str:
    """A latency run's output; ``raw`` (``-U``, the client): every sample, in order."""
    ordered = sorted(samples)
    n = len(ordered)
    avg = sum(ordered) / n
    stdev = math.sqrt(sum((v - avg) ** 2 for v in ordered) / n)
    title = (
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
        "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
    )
    row = (
        f" {size:<7} {n:<13} {ordered[0]:<14.2f} {ordered[-1]:<12.2f} "
        f"{_pct(ordered, 0.5):<8.2f}\t       {avg:<8.2f}\t{stdev:<6.2f}\t\t"
        f"{_pct(ordered, 0.99):<8.2f}\t{_pct(ordered, 0.999):<7.2f}"
    )
    out = [_header(side, *gids), title + "\n"]
    if raw:
        out.append("#, usec\n")
        out.append("".join(f"{i + 1}, {v:g}\n" for i, v in enumerate(samples)))
        out.append(f"{RULE}\n{title}\n")
    out.append(f"{row}\n{RULE}\n")
    return "".join(out)


def perftest_refused(address: str, port: int) -> str:
    """A client whose server is not (yet) listening (exit status 1)."""
    return (
        f"Couldn't connect to {address}:{port}\n"
        "Unable to open file descriptor for socket connection"
        " Unable to init the socket connection\n"
    )


def perftest_no_device(device: str) -> str:
    """``-d`` names a device the node does not have (exit status 1)."""
    return f"IB device {device} not found\n Unable to find the Infiniband/RoCE device\n"


def perftest_port_state(ib_port: int, state: str) -> str:
    """The port is not ACTIVE (``ctx_set_link_layer``; exit status 1)."""
    return f" Port number {ib_port} state is {state}\n"


def perftest_stalled(side: PerftestSide, gids: tuple[str, str], server: bool) -> str:
    """The connection was made, then no packet got across: RC retries ran out."""
    where = "server" if server else "client"
    fn = "run_iter_bw" if side.tool.endswith("_bw") else "run_iter_lat"
    return _header(side, *gids) + (
        f" Completion with error at {where}\n"
        " Failed status 12: wr_id 0 syndrom 0x81\n"
        "scnt=128, ccnt=0\n"
        f" Failed to complete {fn} function successfully\n"
    )


# --- iperf3 -J ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Iperf3Side:
    """What one side's document says about its run."""

    server: bool
    host: str
    kernel: str
    local: str
    remote: str
    port: int
    streams: int
    duration: int
    reverse: bool
    bidir: bool
    epoch_s: float


def _dump(doc: object) -> str:
    return json.dumps(doc, indent="\t") + "\n"


def _sum(
    start: float, end: float, nbytes: float, sender: bool, retr: int | None
) -> dict[str, object]:
    secs = max(end - start, 1e-9)
    out: dict[str, object] = {
        "start": round(start, 6),
        "end": round(end, 6),
        "seconds": secs,
        "bytes": int(nbytes),
        "bits_per_second": nbytes * 8 / secs,
    }
    if retr is not None:
        out["retransmits"] = retr
    out["sender"] = sender
    return out


def iperf3_doc(
    side: Iperf3Side,
    forward: Sequence[float],
    backward: Sequence[float] | None,
    retransmits: int,
    interval_s: float = 1.0,
    error: str | None = None,
) -> str:
    """A whole ``-J`` document. ``forward``: bytes of each ``interval_s`` interval from
    the client (``-R``: from the server); ``backward``: the ``--bidir`` other way;
    ``error``: a run that failed (its intervals so far, no end sums, as iperf3 prints)."""
    sends_fwd = side.server == side.reverse  # this side sends the forward direction
    start: dict[str, object] = {
        "connected": [
            {
                "socket": 5,
                "local_host": side.local,
                "local_port": side.port if side.server else 55234,
                "remote_host": side.remote,
                "remote_port": 55234 if side.server else side.port,
            }
        ],
        "version": f"iperf {IPERF3_VERSION}",
        "system_info": f"Linux {side.host} {side.kernel} #45-Ubuntu SMP PREEMPT_DYNAMIC x86_64",
        "timestamp": {"timesecs": int(side.epoch_s)},
    }
    if side.server:
        start["accepted_connection"] = {"host": side.remote, "port": 55218}
    else:
        start["connecting_to"] = {"host": side.remote, "port": side.port}
    start["test_start"] = {
        "protocol": "TCP",
        "num_streams": side.streams,
        "blksize": 131072,
        "omit": 0,
        "duration": side.duration,
        "bytes": 0,
        "blocks": 0,
        "reverse": int(side.reverse),
        "bidir": int(side.bidir),
        "tos": 0,
        "target_bitrate": 0,
    }
    intervals = []
    share = max(retransmits // max(len(forward), 1), 0)
    iv = interval_s
    for i, fwd in enumerate(forward):
        retr = share if sends_fwd and not side.server else None
        item: dict[str, object] = {
            "streams": [],
            "sum": _sum(i * iv, (i + 1) * iv, fwd, sends_fwd, retr),
        }
        if backward is not None:
            item["sum_bidir_reverse"] = _sum(i * iv, (i + 1) * iv, backward[i], not sends_fwd, None)
        intervals.append(item)
    if error is not None:
        return _dump({"start": start, "intervals": intervals, "end": {}, "error": error})
    dur = len(forward) * iv
    total = sum(forward)
    end: dict[str, object] = {
        "streams": [],
        "sum_sent": _sum(0, dur, total if sends_fwd else 0, sends_fwd, retransmits),
        "sum_received": _sum(0, dur, total, sends_fwd, None),
    }
    if not sends_fwd and side.server:  # a server that only received: nothing sent
        end["sum_sent"] = _sum(0, dur, 0, False, None)
    if backward is not None:
        back = sum(backward)
        end["sum_sent_bidir_reverse"] = _sum(0, dur, back, not sends_fwd, 0)
        end["sum_received_bidir_reverse"] = _sum(0, dur, back, not sends_fwd, None)
    end["cpu_utilization_percent"] = {"host_total": 31.5, "remote_total": 24.2}
    end["sender_tcp_congestion"] = "cubic"
    return _dump({"start": start, "intervals": intervals, "end": end})


def iperf3_refused(host: str, kernel: str) -> str:
    """A client with no server listening (exit status 1)."""
    doc = {
        "start": {
            "connected": [],
            "version": f"iperf {IPERF3_VERSION}",
            "system_info": f"Linux {host} {kernel} #45-Ubuntu SMP PREEMPT_DYNAMIC x86_64",
        },
        "intervals": [],
        "end": {},
        "error": "unable to connect to server: Connection refused",
    }
    return _dump(doc)


# --- sockperf -------------------------------------------------------------------------------


def _version_line() -> str:
    return f"sockperf: {_PURPLE}== version #{SOCKPERF_VERSION} == {_RESET}\n"


def sockperf_server_banner() -> str:
    """What a server prints while it waits (its version line; no capture of the rest)."""
    return _version_line()


def sockperf_refused(tcp: bool) -> str:
    """A client with no server (sockperf 3.7 exits 0 after either)."""
    if tcp:
        return (
            _version_line()
            + "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)\n"
        )
    return (
        _version_line()
        + "sockperf: No messages were received from the server. Is the server down?\n"
    )


@dataclass(frozen=True, slots=True)
class SockperfRun:
    """One ping-pong run: samples are half round trips (µs) in the order measured."""

    address: str
    port: int
    tcp: bool
    duration_s: int
    mps: str
    size: int
    samples: tuple[float, ...]
    t0_s: float  # txTime of the first valid sample
    period_s: float | None  # --mps=N: 1/N; max: each message right after the reply


def _summary(run: SockperfRun, valid_s: float) -> list[str]:
    n = len(run.samples)
    ordered = sorted(run.samples)
    avg = sum(ordered) / n
    stdev = math.sqrt(sum((v - avg) ** 2 for v in ordered) / n)
    total = n + round(n * 0.4 / max(valid_s, 1e-9))
    lines = [
        f"sockperf: [Total Run] RunTime={run.duration_s:.3f} sec; Warm up time=400 msec; "
        f"SentMessages={total}; ReceivedMessages={total}",
        "sockperf: ========= Printing statistics for Server No: 0",
        f"sockperf: [Valid Duration] RunTime={valid_s:.3f} sec; SentMessages={n}; "
        f"ReceivedMessages={n}",
        f"sockperf: {_PURPLE}====> avg-latency={avg:.3f} (std-dev={stdev:.3f}){_RESET}",
        "sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0",
        f"sockperf: {_PURPLE}Total {n} observations{_RESET}; "
        f"each percentile contains {n / 100:.2f} observations",
        f"sockperf: ---> <MAX> observation = {ordered[-1]:8.3f}",
        *(
            f"sockperf: ---> percentile {q:6.3f} = {_pct(ordered, q / 100):8.3f}"
            for q in (99.999, 99.99, 99.9, 99.0, 90.0, 75.0, 50.0, 25.0)
        ),
        f"sockperf: ---> <MIN> observation = {ordered[0]:8.3f}",
    ]
    return lines


def sockperf_client(run: SockperfRun, valid_s: float) -> str:
    """The client's standard output."""
    proto = "TCP" if run.tcp else "UDP"
    lines = [
        _version_line().rstrip("\n"),
        "sockperf[CLIENT] send on:sockperf: using recvfrom() to block on socket(s)",
        "",
        f"[ 0] IP = {run.address:<15} PORT = {run.port:5} # {proto}",
        "sockperf: Warmup stage (sending a few dummy messages)...",
        "sockperf: Starting test...",
        "sockperf: Test end (interrupted by timer)",
        "sockperf: Test ended",
    ]
    summary = _summary(run, valid_s)
    mean = summary[3].split("avg-latency=")[1].split(" ")[0]
    return (
        "\n".join(
            [*lines, *summary[:5], f"sockperf: Summary: Latency is {mean} usec", *summary[5:]]
        )
        + "\n"
    )


def sockperf_full_log(run: SockperfRun, valid_s: float) -> str:
    """The ``--full-log`` file: the parameters, the summary, then every sample."""
    rule = "-" * 30
    head = [
        rule,
        f"test was performed using the following parameters: --mps={run.mps} --burst=1 "
        f"--reply-every=1 --msg-size={run.size} --time={run.duration_s}",
        rule,
        *_summary(run, valid_s),
        rule,
        "packet, txTime(sec), rxTime(sec), latency(usec)",
    ]
    body = []
    tx = run.t0_s
    for i, lat in enumerate(run.samples):
        body.append(f"{i}, {tx:.9f}, {tx + 2 * lat / 1e6:.9f}, {lat:.3f}")
        tx += run.period_s if run.period_s is not None else 2 * lat / 1e6
    return "\n".join([*head, *body, rule]) + "\n"
