"""Snapshot rendering: JSON round-trips, CSV rows, Prometheus text parses with a real parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.config import HostConfig
from fabtop.core.state import FabricState
from fabtop.run import snapshot
from fabtop.sim import demo_fabric


@pytest.fixture(scope="module")
def doc() -> dict:  # type: ignore[type-arg]
    fab = demo_fabric(slow_every_s=0.0)
    state = FabricState([HostConfig(name=n) for n in fab.hosts])
    from collectors.frames import FrameDecoder

    for t in (10.0, 11.0):
        for name, host in fab.hosts.items():
            (frame,) = FrameDecoder().feed(host.frame(t).encode())
            state.apply_frame(name, frame)
    return snapshot.build(state, 1.0)


def test_json_is_strict_and_keeps_priorities_as_keys(doc: dict) -> None:  # type: ignore[type-arg]
    text = snapshot.render(doc, "json")
    back = json.loads(text)
    assert back["schema"] == "fabtop.snapshot/2"
    link = next(x for x in back["hosts"][0]["links"] if x["kind"] == "roce")
    assert set(link["metrics"]["rx_bytes_prio"]) == {str(p) for p in range(8)}
    assert link["rates"]["rx_bps"] == pytest.approx(link["rates"]["rx_bytes_per_s"] * 8)
    assert 0.9 < link["rates"]["rdma_share"] <= 1.0


def test_prometheus_text_parses_and_has_bounded_labels(doc: dict) -> None:  # type: ignore[type-arg]
    text = snapshot.render(doc, "prom")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert "fabtop_host_up" in fams
    assert all(s.value == 1.0 for s in fams["fabtop_host_up"].samples)
    pauses = fams["fabtop_link_rx_pause"].samples
    assert {s.labels["priority"] for s in pauses} == {"3"}
    for fam in fams.values():
        for s in fam.samples:
            assert set(s.labels) <= {"host", "link", "priority"}


def test_csv_has_a_row_per_counter(doc: dict) -> None:  # type: ignore[type-arg]
    rows = snapshot.render(doc, "csv").splitlines()
    assert rows[0] == "host,link,kind,name,priority,value,rate_per_s"
    assert any(",raw:ethtool,rx_prio3_pause," in r for r in rows)
    assert any(",metric,rx_pause,3," in r for r in rows)


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text("old")
    snapshot.write_atomic(p, "new\n")
    assert p.read_text() == "new\n" and [x.name for x in tmp_path.iterdir()] == ["s.json"]
    with pytest.raises(snapshot.SnapshotError, match="No such file"):
        snapshot.write_atomic(tmp_path / "missing" / "s.json", "x")


def test_write_atomic_gives_the_usual_file_mode(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        p = tmp_path / "s.json"
        snapshot.write_atomic(p, "{}\n")
        assert p.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    finally:
        os.umask(old)


def _hostile_state() -> FabricState:
    """One host whose readings hold every number that cannot be, and names that are formulas."""
    from collectors.samples import GpuSample, HostSample, InferenceSample, LinkSample
    from fabtop.core.rates import HostRates, LinkRates
    from fabtop.core.state import UP

    nan, inf = float("nan"), float("inf")
    link = LinkSample(
        id="eth0",
        netdev="eth0",
        rate_gbps=inf,
        temperature_c=nan,
        kind="roce",
        counters={
            "ethtool": {
                '=HYPERLINK("http://x")': 5,
                "+cmd|' /C calc'!A0": 1,
                "@SUM(A1)": 2,
                "-2+3": 3,
                "rx_bytes_phy": 10,
            }
        },
        metrics={"rx_bytes": 10, "rx_pause": {3: 7}},
    )
    sample = HostSample(
        host="n1",
        seq=2,
        clock_ns=2 * 10**9,
        uptime_s=100.0,
        links={"eth0": link},
        gpus=[GpuSample(index=0, power_w=nan, temperature_c=-inf, utilization_pct=50.0)],
        inference=[
            InferenceSample(
                url="http://127.0.0.1:8000/metrics",
                requests_running=nan,
                generated_tokens_total=inf,
            )
        ],
    )
    rates = HostRates(
        host="n1",
        interval_s=1.0,
        clock_stepped=False,
        links={
            "eth0": LinkRates(
                rates={"rx_bytes_per_s": nan, "rx_pause_per_s": {3: inf}, "rx_bps": 8.0}, raw={}
            )
        },
        inference={"http://127.0.0.1:8000/metrics": {"generated_tokens_per_s": nan}},
    )
    state = FabricState([HostConfig(name="n1")])
    hs = state.hosts["n1"]
    hs.sample, hs.rates, hs.status, hs.frames = sample, rates, UP, 2
    return state


def test_non_finite_numbers_are_null_in_json_and_empty_in_csv() -> None:
    doc = snapshot.build(_hostile_state(), 1.0)
    back = json.loads(snapshot.render(doc, "json"))  # strict JSON: raised before
    (host,) = back["hosts"]
    (link,) = host["links"]
    assert link["rate_gbps"] is None and link["temperature_c"] is None
    assert link["rates"]["rx_bytes_per_s"] is None and link["rates"]["rx_pause_per_s"] == {
        "3": None
    }
    assert link["rates"]["rx_bps"] == 8.0
    gpu = host["gpus"][0]
    assert gpu["power_w"] is None and gpu["temperature_c"] is None
    assert gpu["utilization_pct"] == 50.0
    inf_entry = host["inference"][0]
    assert inf_entry["requests_running"] is None and inf_entry["generated_tokens_total"] is None
    rows = list(__import__("csv").reader(snapshot.render(doc, "csv").splitlines()))
    pause = next(r for r in rows if r[3] == "rx_pause")
    assert pause[4:] == ["3", "7", ""]  # the rate is not finite: an empty cell, not "nan"
    assert not any(c in ("nan", "inf", "-inf", "NaN") for r in rows for c in r)


def test_csv_cells_never_start_a_formula() -> None:
    doc = snapshot.build(_hostile_state(), 1.0)
    rows = list(__import__("csv").reader(snapshot.render(doc, "csv").splitlines()))
    names = [r[3] for r in rows if r[2] == "raw:ethtool"]
    assert '\'=HYPERLINK("http://x")' in names and "'@SUM(A1)" in names
    assert "'+cmd|' /C calc'!A0" in names and "'-2+3" in names
    for r in rows:
        for cell in r:
            assert not cell.startswith(("=", "+", "@", "|", "%")), r
            assert not cell.startswith("-") or cell.lstrip("-").replace(".", "").isdigit(), r


def test_non_finite_numbers_are_absent_from_the_prometheus_forms() -> None:
    from prometheus_client import generate_latest

    from fabtop.run.export import registry_for

    state = _hostile_state()
    for text in (
        snapshot.render(snapshot.build(state, 1.0), "prom"),
        generate_latest(registry_for(state)).decode(),
    ):
        fams = list(text_string_to_metric_families(text))
        values = [s.value for f in fams for s in f.samples]
        assert values and all(v == v and abs(v) != float("inf") for v in values), text
    exported = {
        f.name: f
        for f in text_string_to_metric_families(generate_latest(registry_for(state)).decode())
    }
    assert "fabtop_gpu_power_watts" not in exported  # its only reading was NaN
    assert [s.value for s in exported["fabtop_gpu_utilization_percent"].samples] == [50.0]
    assert [s.value for s in exported["fabtop_link_rx_bytes"].samples] == [10.0]


def test_snapshot_says_what_was_seen_and_keeps_the_finding_episodes() -> None:
    from fabtop.run.demo import demo_state

    state, _, _ = demo_state(until_s=60.0)  # the demo's storm began at 45 s
    back = json.loads(snapshot.render(snapshot.build(state, 1.0), "json"))
    demo = list(state.hosts)  # node1..node4, mac1, mac2, spark1
    assert back["coverage"]["hosts"] == len(demo) and back["coverage"]["reporting"] == demo
    assert back["coverage"]["not_reporting"] == []
    # the DGX Spark is simulated without RDMA NIC and GPU (no capture of either): said
    assert back["coverage"]["gaps"][:3] == [
        "no RDMA device on spark1",
        "GPUs not monitored on spark1 (no GPU tool answered)",
        "no inference server on node2, node3, node4, mac1 and 2 more",
    ]
    storm = [e for e in back["episodes"] if e["rule"] == "pfc_storm"]
    assert storm and all(e["cleared"] is None and e["severity"] == "critical" for e in storm)
    root = next(e for e in storm if e["subject"] == "node3/enp65s0f0np0/prio3")
    assert 1_767_225_600.0 + 44 <= root["raised"] <= 1_767_225_600.0 + 50
    # the probe's warnings per host are there as before
    assert all("warnings" in h for h in back["hosts"])


def test_each_host_carries_its_software_versions(doc: dict) -> None:  # type: ignore[type-arg]
    back = json.loads(snapshot.render(doc, "json"))
    node1 = next(h for h in back["hosts"] if h["name"] == "node1")
    v = node1["versions"]
    assert v["kernel"] == {"value": "6.8.0-45-generic", "source": "uname -r", "note": None}
    assert v["rdma_core"]["value"] == "2307mlnx47-1.2310119"
    assert v["rdma_core"]["source"] == "dpkg-query"
    assert v["ofed"]["value"] == "MLNX_OFED_LINUX-23.10-1.1.9.0"
    assert v["nvidia_driver"]["value"] == "580.95.05"
    assert v["nccl"] == {"value": "2.21.5", "source": "mapped libnccl", "note": None}


def test_an_unknown_version_is_null_with_its_reason() -> None:
    from dataclasses import replace

    from collectors.frames import FrameDecoder
    from fabtop.sim import Fabric, demo_hosts

    hosts = demo_hosts()
    hosts[2] = replace(hosts[2], ofed=None, nccl=None)  # no ofed_info; NCCL not loaded
    fab = Fabric(hosts)
    state = FabricState([HostConfig(name=n) for n in fab.hosts])
    for name, host in fab.hosts.items():
        (frame,) = FrameDecoder().feed(host.frame(1.0).encode())
        state.apply_frame(name, frame)
    node3 = next(h for h in snapshot.build(state, 1.0)["hosts"] if h["name"] == "node3")
    assert node3["versions"]["ofed"] == {
        "value": None,
        "source": "ofed_info -s",
        "note": "no ofed_info",
    }
    assert node3["versions"]["nccl"]["value"] is None
    assert "no readable process" in node3["versions"]["nccl"]["note"]
