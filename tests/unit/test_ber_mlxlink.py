"""mlxlink's corrected bits as the pre-FEC BER's numerator, at mlxlink's own read time
(issue 33: fabtop/core/slow_rates.py ``mlxlink_read``, fabtop/core/ber.py FROM_MLXLINK).

Where ``ethtool -S`` counts no corrected bits (mlx5 firmware without the PPCNT statistical
group: no ``rx_corrected_bits_phy``) and the opt-in ``mlxlink -m -c --json`` answers, the
sum of its per-lane raw physical errors is the link's corrected bits. The probes run
mlxlink for one device per optics round, so with three devices a port's read comes every
third round (90 s at a 30 s optics round) and is carried on every frame between; the FEC
is read every round. These frames go through the real pipeline (assembler, rate engine,
cable rules) as a probe sends them: 1 s frames, ``ethtool_fec`` on every 30th, ``mlxlink``
on every 90th. The mlxlink sections are the capture
tests/fixtures/optics/mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json (yuuki/
mlxlink_exporter, MFT 4.34.1, ConnectX-7 400GBASE-DR4) with their lane counts edited.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.vocabulary import Metric
from fabtop.config import HostConfig
from fabtop.core.ber import FROM_BITS, FROM_MLXLINK, corrected_count
from fabtop.core.findings import Finding
from fabtop.core.rules import Evaluator, link_ber
from fabtop.core.state import FabricState
from fabtop.run.export_cable import cable_families
from fabtop.run.promself_info import OwnInfo, bers, place_link

CAPTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures/optics/mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json"
)
T0 = 1_700_000_000_000_000_000
ROUND = 30  # frames (1 s apart) per optics round
MLX_EVERY = 3 * ROUND  # one device per round, three devices: this port's read every 90 s
GBPS = 400  # the capture's port: 400GBASE-DR4, four lanes
BUS = "0000:0a:00.0"
BITS = Metric.PHY_CORRECTED_BITS.per_s
# ethtool -S of an mlx5 port whose firmware has no statistical group: no corrected bits
ETHTOOL_S = "NIC statistics:\n     rx_bytes_phy: 1000\n     rx_symbol_err_phy: 0\n"
WITH_BITS = ETHTOOL_S + "     rx_corrected_bits_phy: {bits}\n"


def _mlxlink(lanes: list[int]) -> str:
    """The capture with its four lanes' raw physical errors (corrected bits) edited."""
    doc = json.loads(CAPTURE.read_text())
    phy = doc["result"]["output"]["Physical Counters and BER Info"]
    phy["Raw Physical Errors Per Lane"]["values"] = [str(n) for n in lanes]
    return json.dumps(doc)


def _frame(i: int, lanes: list[int] | None, gen: str, up: bool, stats: str) -> Frame:
    """Frame ``i`` (1 s after frame i-1); ``lanes``: mlxlink's read in this tick (None: the
    frames between its reads, which the pipeline carries it on, as it does the FEC's);
    ``gen``: the generation the probe declares (it moves when a section's text moved)."""
    t = T0 + i * 1_000_000_000
    state = "up" if up else "down"
    sysnet = f"eth0/mtu 1500\neth0/device -\neth0/operstate {state}\neth0/speed {GBPS * 1000}\n"
    sections = [
        Section("probe", None, t, "ok", None, f"gen {gen}"),
        Section("sysnet", None, t, "ok", None, sysnet),
        Section("ethtool_i", "eth0", t, "ok", None, f"driver: mlx5_core\nbus-info: {BUS}\n"),
        Section("ethtool_S", "eth0", t, "ok", None, stats),
    ]
    if lanes is not None:  # mlxlink takes about 0.8 s: read late in the tick
        sections.append(Section("mlxlink", BUS, t + 800_000_000, "ok", None, _mlxlink(lanes)))
    return Frame(i + 1, t, 1000.0 + i, T0 / 1e9 + i, sections)


def _run(
    reads: list[list[int]],
    down_at: int | None = None,
    stats: str = ETHTOOL_S,
    every: int = MLX_EVERY,
) -> tuple[FabricState, list[dict[str, object]], list[tuple[int, Finding]]]:
    """One mlxlink read of eth0 per value of ``reads`` (``every`` frames apart): each
    frame's corrected-bit rate and the cable findings with their frame; the link goes down
    at frame ``down_at`` (a flap: up again the frame after)."""
    state = FabricState([HostConfig("n1")], rules=Evaluator())
    seen: list[dict[str, object]] = []
    found: list[tuple[int, Finding]] = []
    for i in range(every * len(reads)):
        lanes = reads[i // every] if i % every == 0 else None
        up = i != down_at
        gen = f"m{'-'.join(map(str, reads[i // every]))}{up}"  # the text of its sections
        state.apply_frame("n1", _frame(i, lanes, gen, up, stats))
        state.evaluate()
        rates = state.hosts["n1"].rates
        assert rates is not None
        link = rates.links["eth0"]
        assert "mlxlink" not in link.raw_rates  # nor a per-frame rate of its raw counters
        seen.append({k: v for k, v in link.rates.items() if k == BITS})
        found += [(i, f) for f in state.findings if f.subject == "n1/eth0"]
    return state, seen, found


def _lanes(total: float, bad: float = 0.0) -> list[int]:
    """Four lanes' cumulative corrected bits: ``total`` spread as the capture's lanes are,
    and ``bad`` more on lane 1 (the degrading one)."""
    share = (3017647, 15132549, 7368641, 9233545)  # the capture's own counts
    whole = sum(share)
    return [round(total * s / whole + (bad if n == 1 else 0)) for n, s in enumerate(share)]


def _steady(ber: float, reads: int, start: float = 34_752_382) -> list[list[int]]:
    """Reads of a link at a constant BER (400 Gb/s, 90 s between reads)."""
    per_read = ber * GBPS * 1e9 * MLX_EVERY
    return [_lanes(start + per_read * k) for k in range(reads)]


def test_mlxlink_corrected_bits_rate_between_its_reads_on_every_frame() -> None:
    # 5e-10 (the capture's own raw BER) x 400 Gb/s = 200 corrected bits/s
    state, seen, found = _run(_steady(5e-10, 4))
    assert all(r == {} for r in seen[:MLX_EVERY])  # before the second read: unknown, never 0
    for r in seen[MLX_EVERY:]:  # never 0 then a spike: the rate between two reads
        assert r[BITS] == pytest.approx(200.0, rel=1e-3)
    ber = link_ber(state, "n1", "eth0")
    assert ber is not None and ber.ber == pytest.approx(5e-10, rel=0.01)
    assert ber.counted_from == FROM_MLXLINK
    assert not found  # a constant low rate stays quiet


def test_a_degrading_lane_is_named_before_the_flap() -> None:
    # 15 minutes at 5e-10, then lane 1's corrected bits climb a decade per 3 minutes;
    # the link flaps at the 22nd read (33 minutes in)
    reads = _steady(5e-10, 10)
    total, extra = reads[-1], 0.0
    for k in range(1, 13):
        extra += 5e-10 * 10 ** (k / 2) * GBPS * 1e9 * MLX_EVERY
        base = sum(total) + 5e-10 * GBPS * 1e9 * MLX_EVERY * k
        reads.append(_lanes(base, extra))
    flap = MLX_EVERY * 21 + 45
    _, _, found = _run(reads, down_at=flap)
    named = [(i, f) for i, f in found if f.rule == "cable_ber"]
    assert named and named[0][0] < flap
    assert named[0][0] >= MLX_EVERY * 10  # quiet while it was steady
    ev = named[0][1].evidence
    assert ev["ber_counted_from"] == FROM_MLXLINK
    assert float(ev["ber_before"]) == pytest.approx(5e-10, rel=0.05)  # type: ignore[arg-type]


def test_a_clear_by_someone_else_is_a_reset_never_a_negative_rate() -> None:
    # mlxlink --pc (another tool's clear) at the third read: its counts start over
    reads = [*_steady(5e-10, 2), *_steady(5e-10, 3, start=4000)]
    state, seen, found = _run(reads)
    assert all(r[BITS] == pytest.approx(200.0, rel=1e-3) for r in seen[MLX_EVERY : 2 * MLX_EVERY])
    assert all(BITS not in r for r in seen[2 * MLX_EVERY : 3 * MLX_EVERY])  # no rate
    assert all(r[BITS] == pytest.approx(200.0, rel=1e-3) for r in seen[3 * MLX_EVERY :])
    assert not any(float(r.get(BITS, 0.0)) < 0 for r in seen)  # type: ignore[arg-type]
    ber = link_ber(state, "n1", "eth0")
    assert ber is not None and ber.ber == pytest.approx(5e-10, rel=0.01)
    assert not found


@pytest.mark.parametrize("every", [MLX_EVERY, 1])
def test_a_counter_that_stops_reads_0_from_its_next_read_on(every: int) -> None:
    # the same text again: a new read all the same (every frame: the host's layout is
    # kept, and takes the read's time from its section)
    reads = _steady(5e-10, 2)
    _, seen, _ = _run([*reads, reads[-1], reads[-1]], every=every)
    assert [r[BITS] for r in seen[2 * every :]] == [0.0] * (2 * every)


def test_ethtool_corrected_bits_win_where_both_count() -> None:
    # ethtool -S is read every frame: its counter is the link's, mlxlink's stays raw
    state = FabricState([HostConfig("n1")], rules=Evaluator())
    for i in range(3):
        stats = WITH_BITS.format(bits=1000 + 100 * i)
        lanes = _lanes(34_752_382 + 10**6 * i)
        state.apply_frame("n1", _frame(i, lanes, f"w{i}", True, stats))
    link = state.hosts["n1"].sample.links["eth0"]  # type: ignore[union-attr]
    assert link.metrics[Metric.PHY_CORRECTED_BITS] == 1200
    assert link.mlxlink_read_ns is None
    assert link.counters["mlxlink"]["raw_physical_errors_lane1"] > 0
    assert corrected_count(link) == (1200, FROM_BITS)
    rates = state.hosts["n1"].rates
    assert rates is not None and rates.links["eth0"].rates[BITS] == 100.0


def test_the_exporter_names_mlxlink_and_the_read_back_maps_it_back() -> None:
    state, _, _ = _run(_steady(5e-10, 3))
    want = link_ber(state, "n1", "eth0")
    assert want is not None and want.counted_from == FROM_MLXLINK
    info = OwnInfo()
    labels: set[object] = set()
    for fam in cable_families(state):
        for x in fam.samples:
            if x.labels.get("link") == "eth0" and x.name.startswith("fabtop_link_pre_fec_ber"):
                labels.add(x.labels.get("counted_from"))
                place_link(info, "eth0", x.name, x.labels, x.value, _text)
    assert labels >= {"mlxlink_corrected_bits"}
    assert bers(info)["eth0"] == want  # the panel's figure and its source, read back


def _text(labels: Mapping[str, object], key: str) -> str | None:
    v = labels.get(key)
    return v if isinstance(v, str) else None


@pytest.mark.parametrize(
    ("lanes", "why"),
    [
        ([5, 2**32 - 1, 7, 9], "a lane reads all-ones"),
        ([2**63, 2**63, 2**63, 2**63], "sum beyond 64 bits"),
    ],
)
def test_a_glitched_or_huge_lane_costs_the_corrected_bits_said_on_the_port(
    lanes: list[int], why: str
) -> None:
    sample = assemble("n1", _frame(0, lanes, f"mlx{lanes[1]}", True, ETHTOOL_S))
    link = sample.links["eth0"]
    assert Metric.PHY_CORRECTED_BITS not in link.metrics and link.mlxlink_read_ns is None
    assert link.counters["mlxlink"]["raw_physical_errors_lane0"] == 5 or lanes[0] == 2**63
    assert [w for w in sample.warnings if "mlxlink" in w] == [
        f"n1: mlxlink {BUS}: raw physical errors: {why}, corrected bits left out"
    ]
    ok = assemble("n1", _frame(0, [5, 6, 7, 8], "mlxok", True, ETHTOOL_S))
    assert ok.links["eth0"].metrics[Metric.PHY_CORRECTED_BITS] == 26
    assert not [w for w in ok.warnings if "mlxlink" in w]
