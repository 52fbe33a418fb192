"""Counters read at slow cadence get rates between two reads (fabtop/core/rates.py).

The FEC counters come on optics rounds (30 s or more apart) and are carried between them:
a per-frame rate said 0/s for a round's frames, then the round's whole delta over one
frame. These frames go through the real pipeline (assembly, rate engine, history) as a
probe sends them: an ``ethtool_fec`` section on every 30th 1 s frame only.
"""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.frames import Frame, Section
from collectors.vocabulary import Metric
from fabtop.config import HostConfig
from fabtop.core.ber import FROM_BLOCKS
from fabtop.core.rules import Evaluator
from fabtop.core.state import FabricState
from fabtop.run import snapshot
from fabtop.run.export import registry_for

T0 = 1_700_000_000_000_000_000
ROUND = 30  # frames (1 s apart) per optics round
SYSNET = "eth0/mtu 1500\neth0/device -\neth0/operstate up\neth0/speed 100000\n"
CORRECTED = Metric.FEC_CORRECTED_BLOCKS.per_s
UNCORRECTABLE = Metric.FEC_UNCORRECTABLE_BLOCKS.per_s


def _frame(i: int, fec: tuple[int, int] | None, gen: str, stamped: bool = True) -> Frame:
    """Frame ``i`` (1 s after frame i-1); ``fec``: the optics round's (corrected,
    uncorrectable) blocks read in this frame's tick, None on the frames between rounds;
    ``gen``: the generation the probe declares (it moves when a section's text moved on
    the node: the layout is kept while it stays); ``stamped``: its section says when it was
    read (else it was read in the frame's tick)."""
    t = T0 + i * 1_000_000_000
    sections = [
        Section("probe", None, t, "ok", None, f"gen {gen}"),
        Section("sysnet", None, t, "ok", None, SYSNET),
        Section("ethtool_i", "eth0", t, "ok", None, "driver: mlx5_core\nbus-info: 0:0a.0\n"),
    ]
    if fec is not None:
        text = (
            "FEC parameters for eth0:\nConfigured FEC encodings: RS\nActive FEC encoding: RS\n"
            f"Statistics:\n corrected_blocks: {fec[0]}\n uncorrectable_blocks: {fec[1]}\n"
        )
        read_ns = t + 40_000_000 if stamped else None
        sections.append(Section("ethtool_fec", "eth0", read_ns, "ok", None, text))
    return Frame(i + 1, t, 1000.0 + i, T0 / 1e9 + i, sections)


def _run(corrected: list[int], stamped: bool = True) -> tuple[FabricState, list[dict[str, float]]]:
    """Each frame's FEC rates of eth0 for one round per value of ``corrected`` (the
    uncorrectable count stuck at 7)."""
    state = FabricState([HostConfig("n1")])
    seen: list[dict[str, float]] = []
    for i in range(ROUND * len(corrected)):
        fec = (corrected[i // ROUND], 7) if i % ROUND == 0 else None
        state.apply_frame("n1", _frame(i, fec, f"c{corrected[i // ROUND]}", stamped))
        rates = state.hosts["n1"].rates
        assert rates is not None
        link = rates.links["eth0"]
        assert "fec" not in link.raw_rates  # nor a per-frame rate of its raw counters
        seen.append({k: v for k, v in link.rates.items() if k in (CORRECTED, UNCORRECTABLE)})  # type: ignore[misc]
    return state, seen


@pytest.mark.parametrize("stamped", [True, False])
def test_a_fec_counter_reads_its_rate_between_two_rounds_on_every_frame(stamped: bool) -> None:
    _, seen = _run([1000, 1300, 1600, 1900], stamped)
    # before the second read: unknown, never 0
    assert all(r == {} for r in seen[:ROUND])
    # from the second read on, every frame: 300 blocks per 30 s round, never 0, never 300/s;
    # the counter that did not move reads 0/s (a healthy link is 0, not unknown)
    for r in seen[ROUND:]:
        assert r[CORRECTED] == 10.0
        assert r[UNCORRECTABLE] == 0.0


def test_the_span_of_a_fresh_read_is_said_on_its_frame_only() -> None:
    # the pre-FEC BER adds rate x span once per read (fabtop/core/ber.py): the span is on
    # the frame whose read made the rates, never on the frames that carry them
    state = FabricState([HostConfig("n1")])
    spans = []
    for i in range(ROUND * 3):
        fec = (1000 + 300 * (i // ROUND), 7) if i % ROUND == 0 else None
        state.apply_frame("n1", _frame(i, fec, f"c{i // ROUND}"))
        rates = state.hosts["n1"].rates
        assert rates is not None
        spans.append(rates.links["eth0"].slow_span_s)
    assert [i for i, s in enumerate(spans) if s is not None] == [ROUND, 2 * ROUND]
    assert spans[ROUND] == spans[2 * ROUND] == 30.0


def test_a_ber_read_in_fec_rounds_is_quiet_while_constant_and_named_when_it_climbs() -> None:
    # The probes' frames through the assembler, the rate engine and the cable rules: the
    # BER is made of the rounds' reads (each once, on its frame), never of carried values.
    state = FabricState([HostConfig("n1")], rules=Evaluator())
    blocks, named = 0, []
    for i in range(ROUND * 16):
        ber = 5e-8 if i < ROUND * 10 else 5e-8 * 10 ** ((i - ROUND * 10) / ROUND / 2)
        fec = None
        if i % ROUND == 0:
            blocks += round(ber * 100e9 * ROUND)
            fec = (blocks, 0)
        state.apply_frame("n1", _frame(i, fec, f"c{blocks}"))
        state.evaluate()
        named += [(i, f) for f in state.findings if f.rule == "cable_ber"]
    assert named and named[0][0] >= ROUND * 11  # quiet at a constant BER for 5 minutes
    assert named[0][1].evidence["ber_counted_from"] == FROM_BLOCKS
    assert float(named[0][1].evidence["ber_before"]) == pytest.approx(5e-8, rel=0.05)  # type: ignore[arg-type]


def test_a_counter_that_stops_reads_0_from_the_next_read_on() -> None:
    # the same text again: a new read all the same (the kept layout takes its time)
    _, seen = _run([1000, 1300, 1300, 1300])
    assert [r[CORRECTED] for r in seen[ROUND:]] == [10.0] * ROUND + [0.0] * (2 * ROUND)


def test_a_counter_reset_starts_over() -> None:
    _, seen = _run([1000, 1300, 5, 305])
    assert all(r[CORRECTED] == 10.0 for r in seen[ROUND : 2 * ROUND])
    # the driver reset it: no rate (never a negative one) until a read after the reset
    assert all(CORRECTED not in r for r in seen[2 * ROUND : 3 * ROUND])
    assert all(r[UNCORRECTABLE] == 0.0 for r in seen[ROUND:])
    assert all(r[CORRECTED] == 10.0 for r in seen[3 * ROUND :])


def test_the_exporter_and_a_snapshot_say_the_same_rate() -> None:
    state, _ = _run([1000, 1300, 1600])
    (link,) = snapshot.build(state, 1.0)["hosts"][0]["links"]
    assert link["rates"][CORRECTED] == 10.0
    exported = {
        s.name: s.value
        for f in text_string_to_metric_families(generate_latest(registry_for(state)).decode())
        for s in f.samples
        if s.labels.get("link") == "eth0"
    }
    assert exported["fabtop_link_fec_corrected_blocks_per_second"] == 10.0
    assert exported["fabtop_link_fec_uncorrectable_blocks_per_second"] == 0.0
    assert exported["fabtop_link_fec_corrected_blocks_total"] == 1600


def test_the_cpu_throttle_count_read_on_slow_ticks_gets_its_rate_between_two_reads() -> None:
    state = FabricState([HostConfig("n1")])
    seen: list[float | None] = []
    for i in range(ROUND * 3):
        count = min(60 * (i // ROUND), 60)  # then none: the same text, a new read
        frame = _frame(i, None, f"c{count}")
        if i % ROUND == 0:  # a slow tick: 60 throttle events per 30 s
            text = f"devices/system/cpu/cpu*/thermal_throttle/core_throttle_count {count}\n"
            frame.sections.append(Section("cputhrottle", None, frame.clock_ns, "ok", None, text))
        state.apply_frame("n1", frame)
        rates = state.hosts["n1"].rates
        assert rates is not None
        seen.append(rates.cpu_throttle_per_s)
    assert seen[:ROUND] == [None] * ROUND  # unknown before the second read, never 0
    assert seen[ROUND : 2 * ROUND] == [2.0] * ROUND  # never 0 between reads, never 60/s
    assert seen[2 * ROUND :] == [0.0] * ROUND
