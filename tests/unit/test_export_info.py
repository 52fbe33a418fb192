"""The exporter's info series (issue 31 item 1): what the dashboard shows, bounded.

Scraped in process from the demo fabric and the 8-rail big fabric (the real HTTP server
and a real Prometheus are tests/integration/test_export.py and test_demo_hosts.py).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.text import has_control
from fabtop.commands.export import export_command
from fabtop.core.coverage import GAP_REASONS, GAP_SOURCES, gaps_of
from fabtop.core.state import FabricState
from fabtop.run.demo import demo_state
from fabtop.run.export import parse_shard, registry_for
from fabtop.run.export_info import MAX_LABEL, dscp_text
from fabtop.sim.fabric import big_fabric
from tests.conftest import REPO

Sample = tuple[str, dict[str, str], float]

# Series per link and per host, as docs/EXPORT.md's cardinality table gives them: a
# RoCE port with 8 priorities and its QoS config is the largest.
MAX_PER_LINK = 130
MAX_PER_HOST = 16  # without its links, GPUs and inference servers
MAX_PER_GPU = 14  # with one throttle reason active
MAX_PER_SERVER = 14
MAX_PER_CABLE_END = 10  # a Thunderbolt port: its peer, lane speeds and lanes, the cable


def _scrape(state: FabricState, shard: str | None = None) -> list[Sample]:
    text = generate_latest(registry_for(state, shard)).decode()
    return [
        (s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples
    ]


@pytest.fixture(scope="module")
def demo() -> tuple[FabricState, list[Sample]]:
    state, _, _ = demo_state(
        until_s=60.0, history_s=20.0
    )  # the demo's PFC storm on node3 holds at 60 s
    return state, _scrape(state, "a")


@pytest.fixture(scope="module")
def big4() -> tuple[FabricState, list[Sample]]:
    state, _, _ = demo_state(until_s=10.0, history_s=5.0, fabric=big_fabric(4, "b"))
    return state, _scrape(state, "b")


def _one(samples: list[Sample], name: str, **labels: str) -> tuple[dict[str, str], float]:
    got = [(lab, v) for n, lab, v in samples if n == name and labels.items() <= lab.items()]
    assert len(got) == 1, (name, labels, got)
    return got[0]


def _series_per(samples: list[Sample]) -> dict[str, Counter[tuple[str, ...]]]:
    keys = ("link", "gpu", "url", "port")  # port: a Thunderbolt cable end
    out: dict[str, Counter[tuple[str, ...]]] = {k: Counter() for k in (*keys, "host")}
    for _, lab, _ in samples:
        key = next((k for k in keys if lab.get(k)), "host")
        if lab.get("host"):
            out[key][(lab["host"], lab.get(key, ""))] += 1
    return out


@pytest.mark.parametrize("fabric", ["demo", "big4"])
def test_series_per_link_and_per_host_stay_bounded(fabric: str, request: Any) -> None:
    state, samples = request.getfixturevalue(fabric)
    per = _series_per(samples)
    assert max(per["link"].values()) <= MAX_PER_LINK, per["link"].most_common(3)
    assert max(per["host"].values()) <= MAX_PER_HOST, per["host"].most_common(3)
    assert max(per["gpu"].values()) <= MAX_PER_GPU, per["gpu"].most_common(3)
    if per["url"]:
        assert max(per["url"].values()) <= MAX_PER_SERVER
    if per["port"]:
        assert max(per["port"].values()) <= MAX_PER_CABLE_END
    links = sum(len(hs.sample.links) for hs in state.hosts.values() if hs.sample is not None)
    assert len(per["link"]) == links  # every link exported, each under its own key
    for name, lab, _ in samples:
        assert not {"job", "instance"} & set(lab), name  # honor_labels-safe
        assert all(len(v) <= MAX_LABEL and not has_control(v) for v in lab.values()), lab
    if fabric == "big4":
        # 8 rails per host, every host alike: the fleet grows by hosts, never per host.
        assert len({n for n in per["host"].values()}) == 1
        assert len([k for k in per["link"] if k[1].startswith("enp")]) == 4 * 8


def test_the_shard_and_its_hosts_are_found_from_its_series(
    big4: tuple[FabricState, list[Sample]],
) -> None:
    _, samples = big4
    assert _one(samples, "fabtop_shard_info")[0]["shard"] == "b"
    assert _one(samples, "fabtop_shard_hosts", shard="b")[1] == 4.0
    up = {lab["host"]: (lab["shard"], v) for n, lab, v in samples if n == "fabtop_host_up"}
    assert up == {f"b{i}": ("b", 1.0) for i in range(1, 5)}
    states = {lab["host"]: lab["state"] for n, lab, _ in samples if n == "fabtop_host_state"}
    assert states == dict.fromkeys(up, "up")


def test_info_series_carry_what_the_dashboard_shows(
    demo: tuple[FabricState, list[Sample]],
) -> None:
    state, s = demo
    link = state.hosts["node1"].sample.links["enp65s0f0np0"]  # type: ignore[union-attr]
    at = {"host": "node1", "link": "enp65s0f0np0"}
    info, _ = _one(s, "fabtop_link_info", **at)
    assert (info["firmware"], info["driver"], info["kind"]) == (
        link.firmware,
        link.driver,
        "roce",
    )
    assert _one(s, "fabtop_link_state_info", **at)[0]["port_state"] == "ACTIVE"
    assert _one(s, "fabtop_link_mtu_bytes", **at)[1] == link.mtu == 9000
    assert _one(s, "fabtop_link_pcie_lanes", **at, bound="current")[1] == 16
    assert _one(s, "fabtop_link_qos_info", **at)[0]["trust"] == "dscp"
    ecn = [lab for n, lab, _ in s if n == "fabtop_link_ecn_enabled" and at.items() <= lab.items()]
    assert len(ecn) == 16  # 8 priorities x (np, rp)
    dscp = {
        lab["priority"]: (lab["dscp"], v)
        for n, lab, v in s
        if n == "fabtop_link_dscp_map" and at.items() <= lab.items()
    }
    assert dscp["3"] == ("24-31", 8.0) and len(dscp) == 8
    assert _one(s, "fabtop_gpu_info", host="node1", gpu="0")[0]["name"].startswith("NVIDIA")
    inf, _ = _one(s, "fabtop_inference_info", host="node1")
    assert (inf["server"], inf["model"]) == ("vllm", "meta-llama/Llama-3.1-70B-Instruct")
    kernel, _ = _one(s, "fabtop_software_version_info", host="node1", software="kernel")
    assert kernel["version"] == "6.8.0-45-generic"
    cable, _ = _one(s, "fabtop_thunderbolt_cable_info", host="node3")
    assert (cable["peer_host"], cable["status"]) == ("node4", "paired")
    assert _one(s, "fabtop_thunderbolt_lanes", host="node3", direction="rx")[1] == 2.0
    # What is not monitored: the same gaps the coverage line gives, in bounded words.
    gaps = {(lab["host"], lab["source"], lab["reason"]) for n, lab, _ in s if n.endswith("_gap")}
    assert ("node2", "inference", "not_present") in gaps
    want = {(h, g.source, g.reason) for h, hs in state.hosts.items() for g in gaps_of(hs)}
    assert gaps == want
    assert {g[1] for g in gaps} <= set(GAP_SOURCES) and {g[2] for g in gaps} <= set(GAP_REASONS)


def test_finding_evidence_numbers_are_values_and_ports_one_series_each(
    demo: tuple[FabricState, list[Sample]],
) -> None:
    state, s = demo
    (storm,) = [f for f in state.findings if f.rule == "pfc_storm"]
    fd, _ = _one(s, "fabtop_finding", rule="pfc_storm")
    assert (fd["host"], fd["link"], fd["priority"]) == ("node3", "enp65s0f0np0", "3")
    key = {"rule": "pfc_storm", "subject": storm.subject}
    ratio = _one(s, "fabtop_finding_evidence", **key, field="tx_pause_time_ratio")[1]
    assert ratio == storm.number("tx_pause_time_ratio")
    peers = {
        lab["value"]
        for n, lab, _ in s
        if n == "fabtop_finding_evidence_info" and lab["field"] == "paused_peers"
    }
    assert peers == {p.label for p in storm.refs("paused_peers")} and len(peers) == 3


def test_remote_text_in_labels_is_cleaned_and_bounded() -> None:
    state, _, _ = demo_state(until_s=5.0)
    s1 = state.hosts["node1"].sample
    assert s1 is not None
    s1.links["enp65s0f0np0"].firmware = "\x1b]52;c;cHdu\x0722.39\u200b.2048"
    s1.gpus[0].throttle_reasons = ("sw_thermal_slowdown\x1b[31m",)
    s1.inference[0].model = "m" * 5000
    s = _scrape(state)
    fw = _one(s, "fabtop_link_info", host="node1", link="enp65s0f0np0")[0]["firmware"]
    assert fw == "22.39.2048"
    reason = _one(s, "fabtop_gpu_throttle_reason", host="node1", gpu="0")[0]["reason"]
    assert reason == "sw_thermal_slowdown"
    model = _one(s, "fabtop_inference_info", host="node1")[0]["model"]
    assert len(model) == MAX_LABEL and model.endswith("…")


def test_a_dscp_map_is_at_most_eight_series_with_short_labels() -> None:
    assert dscp_text([26, 24, 25, 46, 0]) == "0,24-26,46"
    # The worst map: every other DSCP value on one priority, the rest spread.
    worst = dscp_text(list(range(0, 64, 2)))
    assert len(worst) < MAX_LABEL and "…" not in worst


def test_a_shard_name_is_checked_with_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_shard("rack-1.a_b") == "rack-1.a_b" and parse_shard(None) is None
    for bad in ("", "a b", "x" * 64, 'a"}', "-lead", "\x1b[2Jx"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)
    assert asyncio.run(export_command(None, "127.0.0.1:9877", shard="a b")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--shard 'a b'" in err


def test_two_cable_ends_named_alike_are_one_series() -> None:
    """A node that names two Thunderbolt peers alike (no port, no netdev): one series per
    label set, as Prometheus takes a scrape only without duplicates."""
    state, _, _ = demo_state(until_s=5.0)
    tb = state.hosts["node3"].sample.thunderbolt  # type: ignore[union-attr]
    assert tb is not None and tb.peers
    for _ in range(2):
        tb.peers.append(replace(tb.peers[0], port=None, netdev=None))
    s = _scrape(state)
    keys = [(n, tuple(sorted(lab.items()))) for n, lab, _ in s]
    assert len(keys) == len(set(keys)), Counter(keys).most_common(1)
    assert [lab for n, lab, _ in s if n == "fabtop_thunderbolt_peer_info" and not lab["port"]]


def test_every_series_exported_is_in_the_docs_table(
    demo: tuple[FabricState, list[Sample]],
) -> None:
    """docs/EXPORT.md is where a reader (and --from-prometheus) finds the names."""
    documented = set(re.findall(r"`(fabtop_\w+)`", (REPO / "docs" / "EXPORT.md").read_text()))
    exported = {n for n, _, _ in demo[1]}
    assert exported - documented == set()
