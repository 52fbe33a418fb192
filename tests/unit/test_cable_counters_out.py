"""The cable counters (issue 33) go wherever every normalized counter goes: the snapshot's
metrics and rates, ``fabtop diff`` (errors first) and the Prometheus exporter."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.samples import HostSample, LinkSample, MetricValue
from fabtop.commands.diff import diff_docs
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.run import snapshot
from fabtop.run.export import registry_for

# (phy_corrected_bits, fec_corrected_blocks, fec_uncorrectable_blocks) at two frames 1 s apart
READS = ((10_000, 900, 0), (14_000, 1_300, 2))


def _docs() -> tuple[FabricState, list[dict[str, Any]]]:
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    docs = []
    for i, (bits, blocks, lost) in enumerate(READS):
        metrics: dict[str, MetricValue] = {
            "phy_corrected_bits": bits,
            "fec_corrected_blocks": blocks,
            "fec_uncorrectable_blocks": lost,
            "phy_received_bits": 106_250_000_000 * i,  # rx_bits_phy: the BER's denominator
            "rx_bytes": 10**9 * i,
        }
        link = LinkSample(id="eth1", netdev="eth1", physical=True, rate_gbps=100.0, metrics=metrics)
        sample = HostSample("n1", i + 1, int((1_700_000_000 + i) * 1e9), 1000.0 + i, {"eth1": link})
        state.apply_sample("n1", sample)
        docs.append(snapshot.build(state, 1.0))
    return state, docs


def test_cable_counters_in_snapshot_diff_and_export() -> None:
    state, (a, b) = _docs()
    (link,) = b["hosts"][0]["links"]
    assert link["metrics"]["phy_corrected_bits"] == 14_000
    assert link["rates"]["phy_corrected_bits_per_s"] == 4_000.0
    assert link["rates"]["fec_uncorrectable_blocks_per_s"] == 2.0
    rows = diff_docs(a, b)
    names = [r.metric for r in rows]
    assert names.index("fec_uncorrectable_blocks") < names.index("rx_bytes")  # errors first
    assert {r.metric: r.delta for r in rows}["phy_corrected_bits"] == 4_000
    exported = {
        s.name: s.value
        for f in text_string_to_metric_families(generate_latest(registry_for(state)).decode())
        for s in f.samples
    }
    assert exported["fabtop_link_phy_corrected_bits_total"] == 14_000
    assert exported["fabtop_link_phy_received_bits_total"] == 106_250_000_000
    assert exported["fabtop_link_fec_uncorrectable_blocks_total"] == 2
    assert exported["fabtop_link_fec_corrected_blocks_total"] == 1_300
