"""Memory for 24 h and 72 h of history of 128 links, simulated fast (prints, never asserts).

64 simulated hosts x 2 RoCE ports are recorded into one History with synthetic
timestamps: a few real (sample, rates) pairs per host are replayed, so only time moves.
Fast: the coarse tiers only need one point per bucket, so all but the last 6 h are fed at
one point a minute, the next hours at one per 10 s (the 10-s tier's 6 h), and the last
20 minutes at 1 Hz (the raw ring); every tier ends as full as after real 1 Hz hours.
Reports History.nbytes (and per link) and the process RSS delta, for each span.
Target (DESIGN.md §8): <= 0.5 MB per link at 24 h, level from then on.

    .venv/bin/python benchmarks/history_memory.py [--hours 24 72] [--hosts 64]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.assemble import assemble  # noqa: E402
from collectors.frames import FrameDecoder  # noqa: E402
from collectors.samples import HostSample  # noqa: E402
from fabtop.core.history import History  # noqa: E402
from fabtop.core.rates import HostRates, RateEngine  # noqa: E402
from fabtop.core.series import (  # noqa: E402
    DEFAULT_COARSE_TYPECODE,
    DEFAULT_TIERS,
    FloatTypecode,
    append_all,
)
from fabtop.sim import Fabric, SimHost, SimHostConfig  # noqa: E402

Pair = tuple[HostSample, HostRates]


def rss_mb() -> float:
    """Resident set size of this process (MB)."""
    return _rss_bytes() / 2**20


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _ticks(name: str, host: SimHost, n: int) -> list[tuple[HostSample, HostRates]]:
    """``n`` ticks of a simulated host, assembled and rated as live (the first has no rates)."""
    dec, eng = FrameDecoder(), RateEngine()
    got = []
    for k in range(n):
        (f,) = dec.feed(host.frame(2.0 + k, 1.0).encode())
        s = assemble(name, f)
        got.append((s, eng.update(s)))
    return got


def estimate_24h(
    links: int,
    hours: float = 24.0,
    tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
    coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
) -> tuple[int, int]:
    """History bytes and RSS growth for ``links`` RoCE links (two a host) after ``hours``
    at 1 Hz.

    The series History.record makes for a simulated host's two RoCE ports (mlx5, lossless
    priority 3; from a real record of three ticks: one raw time ring for the host, the
    aggregate and its one priority one series) are filled (1 Hz for the raw ring's span,
    one point per finest coarse bucket before, which fills the tiers alike), then copied
    for every host, so the figure costs seconds, not a day of appends.
    """
    span = hours * 3600.0
    t0 = 1_700_000_000.0
    raw_span = tiers[0][0] * tiers[0][1]
    coarse_step = tiers[1][0] if len(tiers) > 1 else tiers[0][0]
    hist = History(tiers, coarse_typecode=coarse_typecode)
    ticks = _ticks("host0", Fabric([SimHostConfig("host0", gpus=0)]).hosts["host0"], 3)
    for k, (s, r) in enumerate(ticks):
        hist.record(t0 + k, s, r)
    ports = [lid for lid, ln in ticks[-1][0].links.items() if ln.kind == "roce"][:2]
    hist._drop([k for k in list(hist.keys()) if k[1] not in ports])
    template = list(
        {id(s): s for s in hist._series.values()}.values()
    )  # a series two keys name: once
    t = 3.0
    while t < span:
        append_all(t0 + t, template, [float(int(t) % 97)] * len(template))
        t += coarse_step if t < span - raw_span else tiers[0][0]
    where = {id(s): i for i, s in enumerate(template)}
    keys = [(key, where[id(s)]) for key, s in hist._series.items()]
    rss0 = _rss_bytes()
    for i in range(1, (links + 1) // 2):
        # Copies go straight into the History's index: filling each host by its appends
        # would take a day's worth per series.
        copies = copy.deepcopy(template)
        host = f"host{i}"
        hist._clocks[host] = copies[0]._clock
        for key, j in keys:
            hist._series[(host, *key[1:])] = copies[j]
    if links % 2:  # the last host has one port
        last = f"host{(links - 1) // 2}"
        hist._drop([k for k in list(hist.keys()) if k[0] == last and k[1] == ports[1]])
    rss = _rss_bytes() - rss0
    return hist.nbytes, rss


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, nargs="+", default=[24.0, 72.0])
    p.add_argument("--hosts", type=int, default=64)
    ns = p.parse_args()
    fab = Fabric([SimHostConfig(f"n{i}", gpus=0) for i in range(ns.hosts)])
    pairs = {}
    for name, host in fab.hosts.items():
        got = _ticks(name, host, 4)
        keep = {lid for lid, ln in got[0][0].links.items() if ln.kind == "roce"}
        pairs[name] = [
            (
                dataclasses.replace(s, links={k: v for k, v in s.links.items() if k in keep}),
                dataclasses.replace(r, links={k: v for k, v in r.links.items() if k in keep}),
            )
            for s, r in got[1:]
        ]
    roce = sum(1 for v in pairs.values() for ln in v[0][0].links.values() if ln.kind == "roce")
    for hours in ns.hours:
        run(pairs, roce, hours, ns.hosts)


def run(pairs: dict[str, list[Pair]], roce: int, hours: float, hosts: int) -> None:
    rss0 = rss_mb()
    hist = History()
    end = hours * 3600
    times = [float(x) for x in range(0, int(max(0.0, end - 6 * 3600)), 60)]
    times += [float(x) for x in range(int(times[-1] + 60 if times else 0), int(end - 1200), 10)]
    times += [float(x) for x in range(int(times[-1] + 10 if times else 0), int(end))]
    t0 = time.perf_counter()
    base = 1.7e9
    for k, dt in enumerate(times):
        t = base + dt
        for plist in pairs.values():
            s, r = plist[k % len(plist)]
            hist.record(t, s, r)
    wall = time.perf_counter() - t0
    mb = hist.nbytes / 1e6
    per_link = mb / max(roce, 1)
    print(
        f"history for {hours:g} h at 1 Hz: {hosts} hosts, {roce} RoCE ports "
        f"({len(times)} fed ticks), {len(list(hist.keys()))} series; recorded in {wall:.1f} s"
    )
    print(
        f"  history_nbytes_mb {mb:.1f} ({per_link:.3f} MB per link), rss_delta_mb "
        f"{rss_mb() - rss0:.1f} (target <= 0.5 MB per link: "
        f"{'met' if per_link <= 0.5 else 'NOT met'})"
    )
    del hist


if __name__ == "__main__":
    main()
