"""Every rules pass over the demo's whole cycle and every ``--demo-scenario``, pinned.

The demo fabric runs its cycle (storms, incast, flaps, ECN off, hot GPUs, a RoCE port
without IPv4, the Thunderbolt Macs and their token rates) and each scenario runs from
t=0, frame by frame through the live path (frame text -> FabricState -> rules after every
frame). Every pass's findings (order, since, evidence, summaries, next steps) and each
tick's one-shot judgement (:meth:`Evaluator.once`) are written out with ``repr`` and
hashed per tick; ``rules_passes.json`` beside this file holds the digests the rules gave
before issue 28 reworked how they run (every rule every pass; the rule tail one call on
the context). A rework of how rules run must not change what they say.

A change meant to change findings writes the file again, from the checkout that has it:
``python tests/integration/test_rules_passes.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

if __name__ == "__main__":  # run as a script from any checkout: that checkout's code
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from collectors.frames import FrameDecoder
from collectors.optics import (
    RX_LOS,
    RX_POWER_MW,
    TEMPERATURE_C,
    HealthReporter,
    LaneOptics,
    Limits,
    ModuleDiag,
)
from collectors.parsers.exo_state import parse_exo_state
from collectors.parsers.prometheus_text import parse_inference_metrics
from fabtop.config import HostConfig
from fabtop.core.findings import Finding
from fabtop.core.rules import RULES, Evaluator
from fabtop.core.rules.context import StateView
from fabtop.core.rules.kinds import kind_of
from fabtop.core.state import FabricState
from fabtop.run.demo import SCENARIOS, ManualClock, scenario_fabric
from fabtop.sim import Fabric, demo_fabric
from fabtop.sim.episodes import DEMO_CYCLE_S
from tests.unit.test_clock_skew import SkewedFabric

EXPECTED = Path(__file__).with_name("rules_passes.json")
SCENARIO_S = 30  # seconds each scenario runs: its fault is raised, the quiet rules rerun
DEMO_S = int(DEMO_CYCLE_S) + 10  # the whole cycle, and into the next one's healthy start


class _Recorder:
    """The rules hook of a FabricState: the evaluator, each pass's findings kept."""

    def __init__(self) -> None:
        self.evaluator = Evaluator()
        self.thresholds = self.evaluator.thresholds
        self.firewall_ports = self.evaluator.firewall_ports
        self.passes: list[list[Finding]] = []

    def __call__(self, state: StateView) -> list[Finding]:
        found = self.evaluator(state)
        self.passes.append(found)
        return found


def run(fab: Fabric, seconds: int) -> tuple[list[str], set[str]]:
    """Per tick, a digest of its rules passes and its one-shot judgement; the rules raised."""
    rec = _Recorder()
    urls = {n: (h.cfg.inference_url, h.cfg.exo_url) for n, h in fab.hosts.items()}
    state = FabricState([HostConfig(n) for n in fab.hosts], rules=rec, clock=ManualClock())
    decoders = {n: FrameDecoder() for n in fab.hosts}
    digests: list[str] = []
    raised: set[str] = set()
    for i in range(1, seconds + 1):
        t = float(i)
        for name, host in fab.hosts.items():
            if not host.answers(t):
                continue
            for frame in decoders[name].feed(host.frame(t).encode()):
                state.apply_frame(name, frame)
            url, exo = urls[name]
            readings = [parse_inference_metrics(host.metrics_text(), url)] if url else []
            if exo:
                readings.append(parse_exo_state(host.exo_text(t), exo))
            if readings:
                state.apply_inference(name, readings)
        live = rec.passes[-1] if rec.passes else []
        text = repr(rec.passes) + repr(rec.evaluator.once(state, live))
        digests.append(hashlib.sha256(text.encode()).hexdigest()[:16])
        raised |= {f.rule for found in rec.passes for f in found}
        rec.passes.clear()
    return digests, raised


# The rules the demo never raises, on hand-fed ports: (tick, what changes), in order.
def _hand_fed() -> tuple[SkewedFabric, dict[int, list[Callable[[], object]]]]:
    fab = SkewedFabric({"node2": 120.0})  # node2's clock two minutes ahead: clock_skew
    a, b, c = (
        fab.port(h).traffic(50).set(rx_pause=dict.fromkeys(range(8), 0.0))
        for h in ("node1", "node2", "node3")
    )
    d = fab.port("node3", "enp65s0f1np1", temperature_c=70.0).traffic(20)
    # The cable rules (issue 33): e's BER jumps after a flap, node2's second port's is over
    # the mark from the start.
    e = fab.port("node1", "enp65s0f1np1").set(
        phy_corrected_bits=1e-8 * 100e9, fec_uncorrectable_blocks=0.0, link_integrity_errors=0.0
    )
    fab.port("node2", "enp65s0f1np1").set(fec_corrected_blocks=3e-5 * 100e9)
    reporter = HealthReporter("pci/0000:41:00.1", "tx", "healthy", error=1, recover=1)
    near = ModuleDiag(
        temperature_c=73.0,
        lanes=(LaneOptics(1, rx_power_mw=0.11),),
        limits={
            RX_POWER_MW: Limits(low_alarm=0.1),
            TEMPERATURE_C: Limits(high_warning=75.0),
        },
    )

    los_lane = LaneOptics(2, rx_power_mw=0.8, signals=(RX_LOS,))

    def storm(on: bool) -> None:
        ratio, frames = (996_000.0, 5976.0) if on else (0.0, 0.0)
        c.traffic(0 if on else 50).set(tx_pause_us={3: ratio}, tx_pause={3: frames})
        for p in (a, b):
            p.traffic(0 if on else 50).set(
                rx_pause_us={3: ratio * 0.99}, rx_pause={3: frames * 0.97}
            )

    steps: dict[int, list[Callable[[], object]]] = {
        3: [lambda: setattr(d, "temperature_c", 98.0)],  # nic_temperature
        4: [lambda: a.set(rx_pause={5: 300.0})],  # pfc_disabled_prio
        5: [lambda: setattr(d, "temperature_c", 107.0)],
        6: [lambda: a.set(rx_discards_prio={3: 40.0, 0: 500.0})],  # lossless_drops
        7: [lambda: setattr(d, "temperature_c", 80.0)],
        8: [lambda: a.set(rx_pause={5: 0.0})],
        9: [lambda: c.set(module_high_temp_events=1.0)],  # module_high_temp
        10: [
            lambda: a.set(rx_discards_prio={3: 0.0, 0: 0.0}),
            lambda: c.set(module_high_temp_events=0.0),
        ],
        11: [lambda: c.traffic(50, rdma_share=0.01)],  # rdma_fallback
        12: [lambda: setattr(b, "mtu", 1500)],  # mtu_mismatch, roce_mtu_low
        14: [  # pfc_pressure: paused 40 % while traffic flows
            lambda: a.set(rx_pause_us={3: 400_000.0}, rx_pause={3: 3000.0}, ecn_marked=5e4)
        ],
        15: [lambda: b.set(out_of_sequence=5000.0)],  # roce_out_of_sequence
        16: [lambda: c.traffic(50)],
        17: [lambda: b.set(out_of_sequence=0.0)],
        18: [lambda: setattr(b, "mtu", 9000)],
        19: [lambda: c.set(link_down_events=1.0), lambda: setattr(c, "state", "down")],
        20: [
            lambda: c.set(link_down_events=0.0),
            lambda: setattr(c, "state", "up"),
            lambda: a.set(rx_pause_us={3: 0.0}, rx_pause={3: 0.0}, ecn_marked=0.0),
        ],
        22: [lambda: storm(True)],  # pfc_storm, congestion_without_ecn
        24: [lambda: c.set(tx_pause_storm_warning_events=1.0)],  # pfc_stall
        25: [lambda: c.set(tx_pause_storm_warning_events=0.0, tx_pause_storm_error_events=1.0)],
        26: [lambda: c.set(tx_pause_storm_error_events=0.0)],
        28: [lambda: storm(False)],
        30: [lambda: e.set(link_down_events=1.0), lambda: setattr(e, "state", "down")],
        31: [
            lambda: e.set(link_down_events=0.0, phy_corrected_bits=1e-5 * 100e9),
            lambda: setattr(e, "state", "up"),
            lambda: e.fields.update(health=(reporter,), module=near),
        ],
        33: [
            lambda: e.fields.update(health=(replace(reporter, error=2, recover=2),)),
            lambda: e.set(fec_uncorrectable_blocks=2.0, link_integrity_errors=1.0),
        ],
        34: [lambda: e.set(fec_uncorrectable_blocks=0.0, link_integrity_errors=0.0)],
        # optic_los: a lit lane the module flags loss of signal on a later read
        36: [lambda: e.fields.update(module=replace(near, lanes=(*near.lanes, los_lane)))],
        40: [lambda: e.fields.clear()],
    }
    return fab, steps


def run_hand_fed(seconds: int) -> tuple[list[str], set[str]]:
    """As :func:`run`, on the hand-fed ports (the rules once per tick, as a Session runs)."""
    fab, steps = _hand_fed()
    digests: list[str] = []
    raised: set[str] = set()
    for i in range(1, seconds + 1):
        for step in steps.get(i, ()):
            step()
        found = fab.tick()
        text = repr(found) + repr(fab.evaluator.once(fab, found))
        digests.append(hashlib.sha256(text.encode()).hexdigest()[:16])
        raised |= {f.rule for f in found}
    return digests, raised


# the hand-fed timeline, and the quiet after it (restore, event hold); f's BER window (60 s)
HAND_FED_S = 64


def names() -> list[str]:
    """Every run: the demo's cycle, each scenario, the hand-fed ports."""
    return ["demo", *(f"scenario:{s}" for s in SCENARIOS), "hand-fed"]


def run_named(name: str) -> tuple[list[str], set[str]]:
    """One run's per-tick digests and the rules it raised."""
    if name == "hand-fed":
        return run_hand_fed(HAND_FED_S)
    if name == "demo":
        return run(demo_fabric(), DEMO_S)
    return run(scenario_fabric(name.removeprefix("scenario:")), SCENARIO_S)


def _first_difference(got: list[str], want: list[str]) -> str:
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return f"first at tick {i + 1} (t={i + 1}.0 s)"
    return f"{len(got)} ticks against {len(want)}"


def test_every_pass_finds_what_it_found_before() -> None:
    want: Mapping[str, list[str]] = json.loads(EXPECTED.read_text())
    assert names() == list(want), "a scenario came or went: write the file again"
    raised: set[str] = set()
    differ: list[str] = []
    for name in names():
        got, rules = run_named(name)
        raised |= rules
        if got != want[name]:
            differ.append(f"{name}: {_first_difference(got, want[name])}")
    assert not differ, "findings changed: " + "; ".join(differ)
    # What the comparison covers: every finding a rule declares, raised somewhere, but
    # counters_undecoded's (a stream that lost a schema; tests/integration/test_fresh_stream.py).
    declared = {n for rule in RULES if (kind := kind_of(rule)) is not None for n in kind.names}
    assert declared - raised == {"counters_undecoded"}, declared - raised


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write  (records {EXPECTED.name})")
    EXPECTED.write_text(json.dumps({n: run_named(n)[0] for n in names()}, indent=0) + "\n")
    print(f"wrote {EXPECTED}")
