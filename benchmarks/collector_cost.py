"""Collector cost per host-tick: decode, assemble, rates, history, rules (prints only).

A simulated 2-port ConnectX (mlx5) host with an IB port and 8 GPUs (fabtop.sim frames,
evolved from the real captures) is fed through the same FabricState the dashboard uses.
Goal (issue 28): <= 0.6 ms per host-tick on the fast probe's structured frames;
the sh probe's text frames are measured beside them.

    .venv/bin/python benchmarks/collector_cost.py [--ticks 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.assemble import assemble  # noqa: E402
from collectors.frames import FrameDecoder, render_frame  # noqa: E402
from collectors.structured import StructuredEncoder  # noqa: E402
from fabtop.config import HostConfig  # noqa: E402
from fabtop.core.history import History  # noqa: E402
from fabtop.core.pipeline import Pipeline  # noqa: E402
from fabtop.core.rates import RateEngine  # noqa: E402
from fabtop.core.rules import make_evaluator  # noqa: E402
from fabtop.core.state import FabricState  # noqa: E402
from fabtop.sim import Fabric, SimHostConfig  # noqa: E402


def frames(ticks: int, structured: bool = False, ports: int = 2) -> list[bytes]:
    """Wire text of ``ticks`` consecutive 1 Hz frames of one host (``ports`` mlx5 ports;
    with 2, an IB port and 8 GPUs besides).

    ``structured``: as the fast probe sends them (counters by position against schemas
    sent once, collectors/structured.py); else as the sh probe sends them (text).
    """
    many = ports != 2
    fab = Fabric(
        [
            SimHostConfig("n1", roce_ports=ports, ib_port=not many, gpus=0 if many else 8),
            SimHostConfig("n2"),
        ]
    )
    host = fab.hosts["n1"]
    text = [host.frame(30.0 + i, 1.0).encode() for i in range(ticks)]
    if not structured:
        return text
    dec, enc = FrameDecoder(), StructuredEncoder()
    return [render_frame(enc.encode(f)).encode() for w in text for f in dec.feed(w)]


def whole_path(wire: list[bytes], repeats: int = 5, warm: int = 0) -> tuple[float, float, float]:
    """Milliseconds per host-tick of the whole path as the dashboard runs it (median, min,
    max of ``repeats`` passes, each on a fresh state): decode, assemble, rates, history,
    and the rules once per tick. The first ``warm`` pieces of ``wire`` go through untimed
    (a short stream's first frame, which builds the host's shape, is not its usual tick).

    Timed first and on its own: the stage timings below keep every tick's frames, samples
    and rates alive at once (which a dashboard never does), and the garbage collector's
    full passes over those would be charged to this path.
    """
    runs = []
    for _ in range(repeats):
        state = FabricState([HostConfig("n1")], rules=make_evaluator())
        state.evaluate_per_frame = False  # as a Session runs it: rules once per tick
        dec = FrameDecoder()
        t0 = 0.0
        for i, w in enumerate(wire):
            if i == warm:
                t0 = time.perf_counter()
            for f in dec.feed(w):
                state.apply_frame("n1", f)
            state.evaluate()
        runs.append(1000 * (time.perf_counter() - t0) / (len(wire) - warm))
    return statistics.median(runs), min(runs), max(runs)


def stages(wire: list[bytes]) -> dict[str, float]:
    """Milliseconds per host-tick of each stage alone, and of the rules pass alone."""
    t0 = time.perf_counter()
    dec = FrameDecoder()
    decoded = [f for w in wire for f in dec.feed(w)]
    t_dec = time.perf_counter() - t0
    # The slow sections carried into the frames between, as the pipeline carries them.
    carry = Pipeline()
    decoded = [carry.with_slow_sections("n1", f) for f in decoded]
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
    n = len(decoded)
    del samples, rates, hist
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    state.evaluate_per_frame = False
    dec2 = FrameDecoder()
    for w in wire:
        for f in dec2.feed(w):
            state.apply_frame("n1", f)
    t0 = time.perf_counter()
    for _ in range(len(wire)):
        state.evaluate()
    t_rules = time.perf_counter() - t0
    return {
        k: 1000 * v / n
        for k, v in (
            ("decode", t_dec),
            ("assemble", t_asm),
            ("rates", t_rates),
            ("history", t_hist),
            ("rules", t_rules),
        )
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ticks", type=int, default=600)
    ns = p.parse_args()
    fast, text = frames(ns.ticks, structured=True), frames(ns.ticks)
    s = assemble("n1", FrameDecoder().feed(text[-1])[0])
    print(
        f"collector cost per host-tick ({ns.ticks} ticks; host with {len(s.links)} links, "
        f"{len(s.gpus)} GPUs; wire bytes per tick after the first frame, mean: "
        f"{sum(map(len, fast[1:])) // max(1, len(fast) - 1)} fast probe (values whole, "
        f"ethtool's in binary), "
        f"{sum(map(len, text[1:])) // max(1, len(text) - 1)} sh probe):"
    )
    got = {}
    for name, wire in (("fast probe (structured)", fast), ("sh probe (text)", text)):
        med, lo, hi = whole_path(wire)
        ms = got[name] = {**stages(wire), "total": med}
        print(
            f"  {name}: decode {ms['decode']:.3f} ms, assemble {ms['assemble']:.3f} ms, "
            f"rates {ms['rates']:.3f} ms, history {ms['history']:.3f} ms, "
            f"rules {ms['rules']:.3f} ms; whole path {med:.3f} ms "
            f"(median of 5 passes, {lo:.3f}-{hi:.3f})"
        )
    # Cost per port as a host has more of them (SR-IOV VFs, many netdevs): it should grow
    # linearly. Frames of a host without GPUs or IB, N mlx5 ports, whole path.
    curve = []
    for ports in (8, 32, 128):
        wire = frames(40, structured=True, ports=ports)
        med, _, _ = whole_path(wire, repeats=3, warm=10)
        curve.append(f"{ports} ports {med:.2f} ms ({1000 * med / ports:.0f} us per port)")
    print(f"  ports curve (fast probe, whole path): {'; '.join(curve)}")
    total = got["fast probe (structured)"]["total"]
    print(
        f"  collector_ms_per_host_tick {total:.3f} fast probe, "
        f"{got['sh probe (text)']['total']:.3f} sh probe "
        f"(decode+assemble+rates+history+rules; fast-probe goal <= 0.6 ms: "
        f"{'met' if total <= 0.6 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
