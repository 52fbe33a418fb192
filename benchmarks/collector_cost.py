"""Collector cost per host-tick: decode, assemble, rates, history, rules (prints only).

A simulated 2-port ConnectX (mlx5) host with an IB port and 8 GPUs (fabtop.sim frames,
evolved from the real captures) is fed through the same FabricState the dashboard uses.
Goal: <= 1 ms per host-tick.

    .venv/bin/python benchmarks/collector_cost.py [--ticks 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.assemble import assemble  # noqa: E402
from collectors.frames import FrameDecoder  # noqa: E402
from fabtop.config import HostConfig  # noqa: E402
from fabtop.core.history import History  # noqa: E402
from fabtop.core.rates import RateEngine  # noqa: E402
from fabtop.core.rules import make_evaluator  # noqa: E402
from fabtop.core.state import FabricState  # noqa: E402
from fabtop.sim import Fabric  # noqa: E402
from fabtop.sim import HostConfig as SimHostConfig  # noqa: E402


def frames(ticks: int) -> list[bytes]:
    """Wire text of ``ticks`` consecutive 1 Hz frames of one 8-GPU host."""
    fab = Fabric([SimHostConfig("n1", roce_ports=2, ib_port=True, gpus=8), SimHostConfig("n2")])
    host = fab.hosts["n1"]
    return [host.frame(30.0 + i, 1.0).encode() for i in range(ticks)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ticks", type=int, default=600)
    ns = p.parse_args()
    wire = frames(ns.ticks)
    t0 = time.perf_counter()
    dec = FrameDecoder()
    decoded = [f for w in wire for f in dec.feed(w)]
    t_dec = time.perf_counter() - t0
    t0 = time.perf_counter()
    samples = [assemble("n1", f) for f in decoded]
    t_asm = time.perf_counter() - t0
    eng = RateEngine()
    t0 = time.perf_counter()
    rates = [eng.update(s) for s in samples]
    t_rates = time.perf_counter() - t0
    hist = History()
    t0 = time.perf_counter()
    for f, s, r in zip(decoded, samples, rates, strict=True):
        hist.record(f.clock_ns / 1e9, s, r)
    t_hist = time.perf_counter() - t0
    # The whole path as the dashboard runs it, rules evaluated once per tick.
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    state.evaluate_per_frame = False  # as a Session runs it: rules once per tick
    dec2 = FrameDecoder()
    t0 = time.perf_counter()
    for w in wire:
        for f in dec2.feed(w):
            state.apply_frame("n1", f)
        state.evaluate()
    t_all = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(ns.ticks):
        state.evaluate()
    t_rules = time.perf_counter() - t0
    n = len(decoded)
    s = samples[-1]

    def per(t: float) -> float:
        return 1000 * t / n

    print(f"collector cost per host-tick ({n} ticks; host with {len(s.links)} links, "
          f"{len(s.gpus)} GPUs, {len(wire[-1])} bytes/frame):")
    print(f"  decode {per(t_dec):.3f} ms, assemble {per(t_asm):.3f} ms, rates "
          f"{per(t_rates):.3f} ms, history {per(t_hist):.3f} ms, rules {per(t_rules):.3f} ms")
    total = per(t_all)
    print(f"  collector_ms_per_host_tick {total:.3f} (decode+assemble+rates+history+rules; "
          f"goal <= 1 ms: {'met' if total <= 1.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
