"""The info series read back (fabtop/run/promself_info.py): every fact a screen shows of the
demo (PCIe, the DSCP map, buffers, versions, Thunderbolt, GPUs' slow numbers, inference
latencies, the shard's own coverage gaps) comes back as the shard had it, value by value.

In-process answers, as tests/unit/test_promself.py makes them (the exporter's exposition as
the query API's JSON).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from collectors.optics import Limits
from collectors.parsers.devlink_health import parse_devlink_health
from collectors.parsers.ethtool_module import parse_ethtool_module
from collectors.parsers.fec import parse_show_fec
from fabtop.core.coverage import coverage, gap, host_gaps
from fabtop.core.rules import link_ber
from fabtop.core.state import FabricState
from fabtop.core.thunderbolt import pair_cables
from fabtop.run.demo import ManualClock, demo_state, scenario_fabric
from fabtop.run.export_cable import cable_families
from fabtop.run.promself_info import parse_dscp
from fabtop.run.promself_series import read_own, sample_of
from tests.conftest import REPO
from tests.unit.test_promself import SHARD, T0, exposition, reader, stamps, up


@pytest.fixture(scope="module")
def demo() -> FabricState:
    state, _, _ = demo_state(until_s=50.0, history_s=6.0)
    return state


def _peers(tb: Any) -> list[Any]:
    """A host's cable ends in one order (the exporter serves them by port)."""
    return sorted(tb.peers, key=lambda p: str(p.port or p.netdev))


def test_every_fact_of_a_sample_comes_back_value_by_value(demo: FabricState) -> None:
    results = exposition(demo)
    answer = read_own(results, stamps(results, T0))
    assert answer.infos
    checked = 0
    for name, hs in demo.hosts.items():
        want = hs.sample
        assert want is not None
        got = sample_of(answer.hosts[name], 1)
        for lid, link in want.links.items():
            back = got.links[lid]
            assert back.pcie == link.pcie, (name, lid)
            if link.qos is not None:
                assert back.qos is not None
                # all but ETS, which no series carries (shown on no screen)
                assert dataclasses.replace(back.qos, ets=link.qos.ets) == link.qos, (name, lid)
                checked += bool(link.qos.dscp2prio)
            assert back.state == link.state, (name, lid)  # "" is no state, never "down"
        assert got.versions == want.versions, name
        assert got.probe == want.probe
        if want.thunderbolt is None:
            assert got.thunderbolt is None
        else:
            tb, wtb = got.thunderbolt, want.thunderbolt
            assert tb is not None
            assert (tb.source, tb.self_uid, tb.generation, tb.domain_uids) == (
                wtb.source,
                wtb.self_uid,
                wtb.generation,
                wtb.domain_uids,
            )
            assert _peers(tb) == _peers(wtb), name
        assert got.gpus == want.gpus, name  # every field, limits and PCIe included
        for g, w in zip(got.inference, want.inference, strict=True):
            assert (g.prompt_tokens_total, g.preemptions_total) == (
                w.prompt_tokens_total,
                w.preemptions_total,
            )
    assert checked >= 8  # the demo's RoCE ports have DSCP maps
    # the cables pair as on the direct path (macOS ports with identities of their own)
    back = {n: sample_of(answer.hosts[n], 1) for n in demo.hosts}
    direct = {n: hs.sample for n, hs in demo.hosts.items()}
    assert [c.text for c in pair_cables(back)] == [c.text for c in pair_cables(direct)]
    assert any(c.status == "paired" for c in pair_cables(back))


def test_the_coverage_lines_are_the_shards_own(demo: FabricState) -> None:
    """A shard's word wins over a recomputation: the Macs' unverified sources (the shard
    saw their frames; the rebuilt sample has no macOS section) come back."""
    results = exposition(demo)
    src = reader(ManualClock(), [(stamps(results, T0), results, [up("1")])])
    assert asyncio.run(src.poll_once()) == len(demo.hosts)
    st = src.state
    want = coverage(demo, demo.now(), demo.interval).gaps
    assert any(line.startswith("unverified on mac1, mac2 (") for line in want)
    for name, hs in demo.hosts.items():  # each host's lines, word for word
        assert host_gaps(st.hosts[name]) == host_gaps(hs), name
    assert len(coverage(st, st.now(), st.interval).gaps) == len(want)


def test_a_gap_the_reader_does_not_know_and_bad_dscp_lists_are_dropped() -> None:
    assert gap("warp_drive", "tool_missing") is None  # a newer shard's source: not a line
    assert gap("rdma", "tool_missing", "no /sys/class/infiniband") is not None
    assert parse_dscp("0-7,46") == [*range(8), 46]
    for bad in ("", "7-0", "64", "1,,2", "a-b", "٣"):
        assert parse_dscp(bad) is None, bad


OPTICS = REPO / "tests" / "fixtures" / "optics"
PORTS = ("enp65s0f0np0", "enp65s0f1np1", "enp65s0f2np2", "enp65s0f3np3")


def _captured(n: int) -> dict[str, Any]:
    """Port ``n``'s module, FEC and health reporters as real captures have them."""
    module = (
        "ethtool_m_qsfpdd_cmis4_400g_xdr4_temp_warning_netdev.txt",  # 8 lanes, a flag
        "ethtool_m_qsfp28_aoc_oma_zero_thresholds_sonic.txt",  # OMA, no limits
        "ethtool_m_sfp_xgspon_dark_rx_netdev.txt",  # a dark lane
        "ethtool_m_qsfp28_aoc_los_peer_down_netdev.txt",  # loss of signal/lock on each lane
    )[n]
    fec = (
        "show_fec_per_lane_netdev.txt",
        "show_fec_ice_e810_netdev.txt",
        "show_fec_hist_netdev.txt",
        "show_fec_per_lane_netdev.txt",
    )
    health = (
        "devlink_health_port_reporters_netdev.txt",
        "devlink_health_mlx5_tx_netdev.txt",
        "devlink_health_ice_e810_port_error_netdev.txt",
        "devlink_health_mlx5_tx_netdev.txt",
    )
    return {
        "module": parse_ethtool_module((OPTICS / module).read_text()).module,
        "fec": parse_show_fec((OPTICS / fec[n]).read_text()).state,
        "health": parse_devlink_health((OPTICS / health[n]).read_text()).reporters,
    }


def test_a_cables_optics_fec_health_and_ber_come_back_value_by_value() -> None:
    # 125 s into the degrading optic (2.5 s frames): the shard's rules measure its BER
    fabric = scenario_fabric("optic_degrade", interval_s=2.5, hosts=2)
    state, _, _ = demo_state(125.0, fabric=fabric, history_s=125.0, interval=2.5)
    links = state.hosts["node1"].sample.links  # type: ignore[union-attr]
    for n, port in enumerate(PORTS):
        links[port] = dataclasses.replace(links[port], **_captured(n))
    results = exposition(state)
    src = reader(ManualClock(), [(stamps(results, T0), results, [up("1")])])
    assert asyncio.run(src.poll_once()) == 2
    back = src.state.hosts["node1"].sample.links
    for port in PORTS:
        want = links[port]
        assert want.module is not None and want.fec is not None and want.health
        got = back[port]
        # lanes, limits, flags, a dark lane's 0 mW; a module that implements no limit
        # (all zero: None each) has none said, as it has none
        said = {q: lim for q, lim in want.module.limits.items() if lim != Limits()}
        assert got.module == dataclasses.replace(want.module, limits=said), port
        assert got.fec == want.fec and got.health == want.health, port
    # the BER the shard's cable rules measure, with its trend: the panel's figure
    for port in ("enp65s0f1np1", "enp65s0f3np3"):  # the degrading port and a healthy one
        want_ber = link_ber(state, "node1", port)
        assert want_ber is not None and want_ber.ber is not None
        assert link_ber(src.state, "node1", port) == want_ber, port
    degrading = link_ber(src.state, "node1", "enp65s0f1np1")
    assert degrading is not None and (degrading.decades_per_h or 0) > 1  # its trend too
    shard = {r["metric"]["__name__"] for r in results}
    assert {"fabtop_link_module_lane_rx_power_watts", "fabtop_link_pre_fec_ber"} <= shard
    # docs/EXPORT.md's count: an 8-lane module with its limits 47 (+1 flag raised), FEC 1,
    # 3 per health reporter (2 here), BER 3
    qsfpdd = [
        x
        for f in cable_families(state)
        for x in f.samples
        if (x.labels["host"], x.labels["link"]) == ("node1", PORTS[0])
    ]
    assert len(qsfpdd) == 47 + 1 + 1 + 2 * 3 + 3


def test_bad_cable_and_info_series_cost_that_sample_named_on_its_host() -> None:
    link = {"host": "n1", "link": "eth0", **SHARD}

    def r(name: str, value: str = "1", **labels: str) -> dict[str, Any]:
        return {"metric": {"__name__": name, **link, **labels}, "value": [T0, value]}

    lane = "fabtop_link_module_lane_rx_power_watts"
    results = [
        r(lane, "0.001", lane="1"),
        r(lane, "0.001", lane="99"),  # no module has 99 lanes
        r(lane, "0.001", lane="٣"),  # a digit, not an ASCII one
        r("fabtop_link_module_limit", "1", quantity="flux", limit="high_alarm"),
        r("fabtop_link_health_reporter_errors_total", "3", device="pci/0"),  # no reporter
        r("fabtop_link_health_reporter_errors_total", "3", device="pci/0", reporter="tx\x1b[2J"),
        r("fabtop_link_dscp_map", "8", priority="3", dscp="24-99"),
        r("fabtop_link_pcie_lanes", "16", bound="sideways"),
        r("fabtop_coverage_gap", source="warp_drive", reason="tool_missing", detail=""),
        r("fabtop_thunderbolt_domain_info", source="sysfs", self_uid="u1"),
        r("fabtop_thunderbolt_cable_info", port="0-9", status="one_end"),  # no cable end
    ]
    h = read_own(results).hosts["n1"]
    tb = sample_of(h, 1).thunderbolt
    assert tb is not None and (tb.self_uid, tb.peers) == ("u1", [])
    got = sample_of(h, 1).links["eth0"]
    assert got.module is not None
    assert [(ln.lane, ln.rx_power_mw) for ln in got.module.lanes] == [(1, 1.0)]
    assert got.health is None and got.pcie is None and got.qos is None
    assert h.dropped == [
        f"{lane}: dropped (no lane 0-16)",
        f"{lane}: dropped (no lane 0-16)",
        "fabtop_link_module_limit: dropped (no known quantity and limit)",
        "fabtop_link_health_reporter_errors_total: dropped (no reporter)",
        "fabtop_link_health_reporter_errors_total: dropped (no reporter)",
        "fabtop_link_dscp_map: dropped (no dscp list)",
        "fabtop_link_pcie_lanes: dropped (no bound current or max)",
        "fabtop_coverage_gap: dropped (a source this fabtop does not know)",
    ]
