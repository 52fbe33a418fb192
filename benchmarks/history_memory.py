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
import dataclasses
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.assemble import assemble  # noqa: E402
from collectors.frames import FrameDecoder  # noqa: E402
from collectors.samples import HostSample  # noqa: E402
from fabtop.core.history import History  # noqa: E402
from fabtop.core.rates import HostRates, RateEngine  # noqa: E402
from fabtop.sim import Fabric  # noqa: E402
from fabtop.sim import HostConfig as SimHostConfig  # noqa: E402

Pair = tuple[HostSample, HostRates]


def rss_mb() -> float:
    """Resident set size of this process (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, nargs="+", default=[24.0, 72.0])
    p.add_argument("--hosts", type=int, default=64)
    ns = p.parse_args()
    fab = Fabric([SimHostConfig(f"n{i}", gpus=0) for i in range(ns.hosts)])
    pairs = {}
    eng = RateEngine()
    for name, host in fab.hosts.items():
        dec = FrameDecoder()
        got = []
        for k in range(4):
            (f,) = dec.feed(host.frame(2.0 + k, 1.0).encode())
            s = assemble(name, f)
            got.append((s, eng.update(s)))
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
