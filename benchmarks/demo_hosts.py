"""The big simulated fabric's own cost (``fabtop --demo --demo-hosts N``): CPU per tick.

    python benchmarks/demo_hosts.py [N ...]        (default: 64 256)

For each N, the fabric of ``--demo-hosts N`` (8 RoCE rails a host, the demo's cycle) is
built, then run for 20 simulated seconds twice, once healthy (t = 1..20 s) and once
through the PFC storm (t = 46..65 s: every host's rail 0 paused), as its transports run
it: the shared simulation moved to each tick (every host's grid cells), each host's frame
rendered with its own structured encoder (as the fast probe sends them). Beside it, the
live path downstream of the transport for the same frames (frame decoder,
FabricState.apply_frame, the rules once a tick as a Session runs them), so the
simulator's share of a demo's CPU can be read off. The watchdog's 100 ms reads and
the inference servers' /metrics are left out. Process CPU time; prints figures and
asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.frames import FrameDecoder
from collectors.structured import StructuredEncoder
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.run.demo import ManualClock
from fabtop.sim.fabric import big_fabric

WINDOWS = {"healthy": 1.0, "PFC storm": 46.0}
TICKS = 20


def run(n: int) -> None:
    t0 = time.process_time()
    fab = big_fabric(n)
    build_s = time.process_time() - t0
    clock = ManualClock()
    hosts = [HostConfig(name=name) for name in fab.hosts]
    state = FabricState(hosts, rules=make_evaluator(), clock=clock, interval=1.0)
    state.evaluate_per_frame = False  # as a Session runs it: the rules once per tick
    enc = {name: StructuredEncoder() for name in fab.hosts}
    dec = {name: FrameDecoder() for name in fab.hosts}
    print(f"{n} hosts x 8 rails ({8 * n} RoCE links): fabric built in {build_s:.2f} s CPU")
    for label, start in WINDOWS.items():
        step, render, live = [], [], []
        for k in range(TICKS):
            t = start + k
            clock.t += 1.0
            a = time.process_time()
            fab.at(t)
            b = time.process_time()
            texts = {name: h.frame(t, encoder=enc[name]) for name, h in fab.hosts.items()}
            c = time.process_time()
            for name, text in texts.items():
                for frame in dec[name].feed(text.encode()):
                    state.apply_frame(name, frame)
            state.evaluate()
            d = time.process_time()
            if k:  # the first tick of a window carries the slow sections and the catch-up
                step.append(b - a)
                render.append(c - b)
                live.append(d - c)
        sim = [s + r for s, r in zip(step, render, strict=True)]
        print(
            f"  {label:<9}: simulator {1e3 * statistics.median(sim):7.1f} ms per tick "
            f"(stepping {1e3 * statistics.median(step):.1f}, frames "
            f"{1e3 * statistics.median(render):.1f}; "
            f"{1e6 * statistics.median(sim) / n:.0f} us per host), "
            f"{100 * statistics.median(sim):.0f} % of a core at 1 Hz; "
            f"live path {1e3 * statistics.median(live):.1f} ms per tick"
        )


def main() -> int:
    sizes = [int(a) for a in sys.argv[1:]] or [64, 256]
    for n in sizes:
        run(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
