"""Memory for 24 h of history of 128 links, simulated fast (prints, never asserts).

64 simulated hosts x 2 RoCE ports are recorded into one History with synthetic
timestamps: a few real (sample, rates) pairs per host are replayed, so only time moves.
Fast: the coarse tiers only need one point per bucket, so the first 18 h are fed at one
point a minute, the next hours at one per 10 s (the 10-s tier's 6 h), and the last
20 minutes at 1 Hz (the raw ring); every tier ends as full as after a real 1 Hz day.
Reports History.nbytes and the process RSS delta. Target: <= 150 MB.

    .venv/bin/python benchmarks/history_memory.py [--hours 24] [--hosts 64]
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
    Series,
)
from fabtop.sim import Fabric, SimHost, SimHostConfig  # noqa: E402


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


def roce_link_series() -> list[tuple[str, ...]]:
    """The series History.record makes for one RoCE port (mlx5, lossless priority 3, as the
    simulator's): the suffixes of its keys, from a real record of three ticks."""
    hist = History()
    ticks = _ticks("n0", Fabric([SimHostConfig("n0", gpus=0)]).hosts["n0"], 3)
    for k, (s, r) in enumerate(ticks):
        hist.record(1.7e9 + k, s, r)
    lid = next(lid for lid, ln in ticks[-1][0].links.items() if ln.kind == "roce")
    keys = hist.keys()
    return sorted(key[2:] for key in keys if key[1:2] == (lid,))


def estimate_24h(
    links: int,
    hours: float = 24.0,
    link_series: Sequence[tuple[str, ...]] | None = None,
    tiers: Sequence[tuple[float, int]] = DEFAULT_TIERS,
    coarse_typecode: FloatTypecode = DEFAULT_COARSE_TYPECODE,
) -> tuple[int, int]:
    """History bytes and RSS growth for ``links`` RoCE links after ``hours`` at 1 Hz.

    One series of each kind is filled point by point (1 Hz for the raw ring's span, one
    point per finest coarse bucket before, which fills the tiers alike), then copied for
    every link, so the figure costs seconds, not a day of appends. ``link_series``: the
    series of one link (default: :func:`roce_link_series`).
    """
    span = hours * 3600.0
    t0 = 1_700_000_000.0
    raw_span = tiers[0][0] * tiers[0][1]
    coarse_step = tiers[1][0] if len(tiers) > 1 else tiers[0][0]
    templates: dict[bool, Series] = {}
    for keep in (False, True):
        s = Series(tiers, keep, coarse_typecode)
        t = 0.0
        while t < span:
            s.append(t0 + t, float(int(t) % 97))
            t += coarse_step if t < span - raw_span else tiers[0][0]
        templates[keep] = s
    suffixes = roce_link_series() if link_series is None else link_series
    rss0 = _rss_bytes()
    hist = History(tiers, coarse_typecode=coarse_typecode)
    for i in range(links):
        host, lid = f"host{i // 2}", f"eth{i % 2}"
        for suffix in suffixes:
            key = (host, lid, *suffix)
            # Copies go straight into the History's index: filling each by its appends
            # would take a day's worth per series.
            hist._series[key] = copy.deepcopy(templates[hist._keep_max(key)])
    rss = _rss_bytes() - rss0
    return hist.nbytes, rss


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, default=24.0)
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
    rss0 = rss_mb()
    hist = History()
    end = ns.hours * 3600
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
    print(
        f"history for {ns.hours:g} h at 1 Hz: {ns.hosts} hosts, {roce} RoCE ports "
        f"({len(times)} fed ticks), {len(list(hist.keys()))} series; recorded in {wall:.1f} s"
    )
    print(
        f"  history_nbytes_mb {mb:.1f}, rss_delta_mb {rss_mb() - rss0:.1f} "
        f"(target <= 150 MB: {'met' if max(mb, rss_mb() - rss0) <= 150 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
