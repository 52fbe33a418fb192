"""LinkSample.layout: the assembler's promise that a link's raw names are last tick's.

The rate engine trusts it instead of comparing a few hundred names per link and tick, so
a layout shared by two samples whose names differ would hide a counter that came or went
(a metric moved to another source, a reset missed). These run the demo's whole cycle
(storms, flaps, PFC switched on and off, slow ticks, the Macs) as the fast probe sends it.
"""

from __future__ import annotations

from collectors.assemble import Shapes, assemble
from collectors.frames import FrameDecoder, render_frame
from collectors.samples import HostSample
from collectors.structured import StructuredEncoder
from fabtop.core.rates import RateEngine
from fabtop.sim import demo_fabric
from fabtop.sim.episodes import DEMO_CYCLE_S


def _names(s: HostSample, lid: str) -> list[tuple[str, list[str]]]:
    return [(src, list(c)) for src, c in s.links[lid].counters.items()]


def test_one_layout_means_the_same_sources_and_names() -> None:
    # A fresh decoder per frame would lose the schemas: keep one per host instead.
    fab = demo_fabric()
    decoders = {n: FrameDecoder() for n in fab.hosts}
    encoders = {n: StructuredEncoder() for n in fab.hosts}
    readers = {n: FrameDecoder() for n in fab.hosts}
    shapes: Shapes = {}
    last: dict[tuple[str, str], HostSample] = {}
    shared = changed = 0
    for i in range(int(DEMO_CYCLE_S) + 5):
        for n, h in fab.hosts.items():
            for f in decoders[n].feed(h.frame(float(i), 1.0).encode()):
                wire = render_frame(encoders[n].encode(f)).encode()
                for g in readers[n].feed(wire):
                    s = assemble(n, g, shapes)
                    for lid, link in s.links.items():
                        prev = last.get((n, lid))
                        if prev is not None and link.layout is not None:
                            if link.layout is prev.links[lid].layout:
                                shared += 1
                                assert _names(s, lid) == _names(prev, lid), (i, n, lid)
                            else:
                                changed += 1
                        last[(n, lid)] = s
    assert shared > 1000 and changed > 0  # the promise was used, and a layout did change


def test_rates_are_the_same_without_layouts() -> None:
    fab = demo_fabric()
    decoders = {n: FrameDecoder() for n in fab.hosts}
    encoders = {n: StructuredEncoder() for n in fab.hosts}
    readers = {n: FrameDecoder() for n in fab.hosts}
    shapes: list[Shapes] = [{}, {}]
    engines = [RateEngine(), RateEngine()]
    for i in range(int(DEMO_CYCLE_S) + 5):
        for n, h in fab.hosts.items():
            for f in decoders[n].feed(h.frame(float(i), 1.0).encode()):
                wire = render_frame(encoders[n].encode(f)).encode()
                for g in readers[n].feed(wire):
                    a = assemble(n, g, shapes[0])
                    b = assemble(n, g, shapes[1])
                    for link in b.links.values():
                        link.layout = None  # the engine compares the names itself
                    ra, rb = engines[0].update(a), engines[1].update(b)
                    assert ra.links.keys() == rb.links.keys()
                    for lid, la in ra.links.items():
                        lb = rb.links[lid]
                        got = (
                            la.rates,
                            la.gap,
                            la.norm_reset,
                            la.saturated,
                            la.glitched,
                            la.confirmed,
                            la.raw_rates,
                        )
                        want = (
                            lb.rates,
                            lb.gap,
                            lb.norm_reset,
                            lb.saturated,
                            lb.glitched,
                            lb.confirmed,
                            lb.raw_rates,
                        )
                        assert got == want, (i, n, lid)
