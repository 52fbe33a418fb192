"""fabtop's own series read back through Prometheus's query API (fabtop/run/promself.py).

The answers are in-process: the exporter's own exposition of a demo state, turned into
the query API's JSON as a Prometheus scraping it with ``honor_labels`` would answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.samples import HostSample
from collectors.vocabulary import Metric
from fabtop.config import Config
from fabtop.core.rules.context import link_up
from fabtop.core.state import DOWN, UP, FabricState, effective_status
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock, demo_state
from fabtop.run.export import registry_for
from fabtop.run.promself import READBACK_RULE
from fabtop.run.promself_series import read_own, read_range, sample_of
from fabtop.run.promsource import PrometheusSource

T0 = 1_700_000_000.0
SHARD = {"job": "fabtop", "instance": "shard1:9877"}


def exposition(state: FabricState, **target: str) -> list[dict[str, Any]]:
    """The state as ``fabtop export`` serves it, as an instant vector of the query API."""
    out: list[dict[str, Any]] = []
    text = generate_latest(registry_for(state)).decode()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = {"__name__": s.name, **s.labels, **(target or SHARD)}
            out.append({"metric": labels, "value": [T0, repr(float(s.value))]})
    return out


def stamps(results: list[dict[str, Any]], t: float) -> list[dict[str, Any]]:
    """timestamp(fabtop_host_up): each host's scrape time."""
    return [
        {"metric": {k: v for k, v in r["metric"].items() if k != "__name__"}, "value": [T0, str(t)]}
        for r in results
        if r["metric"]["__name__"] == "fabtop_host_up"
    ]


def up(value: str, **target: str) -> dict[str, Any]:
    return {"metric": {"__name__": "up", **(target or SHARD)}, "value": [T0, value]}


@pytest.fixture(scope="module")
def demo() -> FabricState:
    state, _, _ = demo_state(until_s=50.0, history_s=6.0)  # the storm began at 45 s
    return state


def reader(clock: ManualClock, answers: list[tuple[list[Any], list[Any], list[Any]]]) -> Any:
    """A source whose fetch answers STAMPS, SERIES and up from ``answers``, poll by poll
    (the hosts known on start: the first answer's stamps)."""
    polls = iter(answers)
    current: tuple[list[Any], ...] = ([], [], [])

    def fetch(url: str, query: str, timeout: float, at: float | None = None) -> list[Any]:
        nonlocal current
        if query.startswith("last_over_time("):
            return list(answers[0][0]) if answers else []
        if query.startswith("timestamp("):
            current = next(polls)
            return list(current[0])
        return list(current[1] if query.startswith("{") else current[2])

    src = PrometheusSource("http://prom:9090", interval=1.0, fetch=fetch, clock=clock)
    src.state = fabric_state(Config(hosts=[], interval=1.0), clock=clock)
    src.own.backfill_s = None  # the backfill has a test of its own
    return src


def test_every_counter_state_speed_gpu_and_inference_comes_back_as_exported(
    demo: FabricState,
) -> None:
    results = exposition(demo)
    answer = read_own(results, stamps(results, T0 - 1))
    assert sorted(answer.hosts) == sorted(demo.hosts)
    info = any(r["metric"]["__name__"] == "fabtop_link_info" for r in results)
    compared = 0
    for name, hs in demo.hosts.items():
        want = hs.sample
        assert want is not None
        got = sample_of(answer.hosts[name], 1)
        assert got.clock_ns == int((T0 - 1) * 1e9)  # the shard's scrape time
        assert sorted(got.links) == sorted(want.links)
        for lid, link in want.links.items():
            back = got.links[lid]
            # every normalized counter, per priority too, in its vocabulary unit
            assert back.metrics == {m: v for m, v in link.metrics.items() if m in Metric}, lid
            compared += len(back.metrics)
            assert link_up(back.state) == link_up(link.state)
            if info:  # an exporter with the info series (issue 31 item 1): the facts too
                fields = ("netdev", "rdma_device", "port", "kind", "driver", "firmware", "mtu")
                assert [getattr(back, f) for f in fields] == [getattr(link, f) for f in fields]
                assert back.state == link.state and back.physical == link.physical
                if link.qos is not None and link.qos.pfc_enabled is not None:
                    assert back.qos is not None and back.qos.pfc_enabled == link.qos.pfc_enabled
            if link.rate_gbps is not None:
                assert back.rate_gbps == pytest.approx(link.rate_gbps)
            assert back.temperature_c == link.temperature_c
        assert [g.index for g in got.gpus] == [g.index for g in want.gpus]
        for g, w in zip(got.gpus, want.gpus, strict=True):
            assert g.memory_used_mib == pytest.approx(w.memory_used_mib)
            assert g.temperature_c == w.temperature_c
        assert {i.url: i.generated_tokens_total for i in got.inference} == {
            i.url: i.generated_tokens_total for i in want.inference
        }
    assert compared > 100
    # the shards' findings, each marked with its shard (the storm the demo raised at 45 s)
    rules = {f.rule for f in answer.findings}
    assert "pfc_storm" in rules and {f.shard for f in answer.findings} == {"fabtop/shard1:9877"}


def test_bad_values_and_labels_cost_that_sample_named_on_its_host() -> None:
    base = {"__name__": "fabtop_link_rx_bytes_total", "host": "n1", "link": "eth0", **SHARD}
    results = [
        {"metric": {**base, "priority": ""}, "value": [T0, "NaN"]},
        {"metric": {**base, "link": "eth1", "priority": ""}, "value": [T0, "-5"]},
        {"metric": {**base, "link": "eth2", "priority": ""}, "value": [T0, "1e30"]},
        {"metric": {**base, "link": "eth3", "priority": ""}, "value": [T0, "42"]},
        {
            "metric": {**base, "__name__": "fabtop_link_rx_pause_total", "priority": "9"},
            "value": [T0, "1"],
        },
        {"metric": {**base, "host": "n1\x1b[2J", "priority": ""}, "value": [T0, "7"]},
        "not a result",
    ]
    answer = read_own(results)
    h = answer.hosts["n1"]
    assert h.links["eth3"].metrics == {Metric.RX_BYTES: 42}
    assert h.dropped == [
        "fabtop_link_rx_bytes_total: NaN dropped",
        "fabtop_link_rx_bytes_total: dropped (not a 64-bit counter)",
        "fabtop_link_rx_bytes_total: dropped (not a 64-bit counter)",
        "fabtop_link_rx_pause_total: dropped (no priority 0-7)",
    ]
    # a label with control characters would redraw the screen or pass for another host
    assert list(answer.hosts) == ["n1"] and answer.odd == 2


def test_rates_come_from_the_rate_engine_over_two_scrapes(demo: FabricState) -> None:
    first = exposition(demo)
    later = []
    for r in first:  # 5 s later every byte counter moved by 5 GB
        r2 = {"metric": r["metric"], "value": list(r["value"])}
        if r["metric"]["__name__"] == "fabtop_link_rx_bytes_total":
            r2["value"][1] = repr(float(r["value"][1]) + 5e9)
        later.append(r2)
    clock = ManualClock()
    src = reader(
        clock, [(stamps(first, T0), first, [up("1")]), (stamps(later, T0 + 5), later, [up("1")])]
    )
    st = src.state
    assert asyncio.run(src.poll_once()) == len(demo.hosts)
    clock.t += 5
    assert asyncio.run(src.poll_once()) == len(demo.hosts)
    hs = st.hosts["node1"]
    assert hs.rates is not None and hs.sample is not None
    fast = [lid for lid, ln in hs.sample.links.items() if (ln.rate_gbps or 0) >= 100]
    assert fast
    for lid in fast:
        assert hs.rates.links[lid].rates["rx_bytes_per_s"] == pytest.approx(1e9)
    # beyond a link's speed is a glitch (a gap), as on the direct path: the 1 GbE port
    assert "counter glitch ignored on eno1 rx_bytes" in hs.warnings
    # the shards' findings are the findings; the reader says how its view differs
    rules = {f.rule for f in st.findings}
    assert "pfc_storm" in rules
    (note,) = [f for f in st.findings if f.rule == READBACK_RULE]
    assert "resolution 5 s (the scrape interval)" in note.summary
    storm = next(f for f in st.findings if f.rule == "pfc_storm")
    assert storm.evidence["shard"] == "fabtop/shard1:9877" and storm.host is not None
    assert storm.port is not None and storm.port.link in st.hosts[storm.host].sample.links  # type: ignore[union-attr]


def test_a_shard_that_is_down_makes_its_hosts_blind_never_healthy(demo: FabricState) -> None:
    results = exposition(demo)
    clock = ManualClock()
    src = reader(clock, [(stamps(results, T0), results, [up("1")]), ([], [], [up("0")])])
    st = src.state
    asyncio.run(src.poll_once())
    assert all(effective_status(h, clock.t, st.interval) == UP for h in st.hosts.values())
    clock.t += 1
    # Prometheus marks a failed target's series stale: the answer holds none of them
    assert asyncio.run(src.poll_once()) == 0
    assert sorted(st.hosts) == sorted(demo.hosts)  # kept: blind, not gone
    assert {h.status for h in st.hosts.values()} == {DOWN}
    down = {f.host for f in st.findings if f.rule == "host_unreachable"}
    assert down == set(demo.hosts)
    shard = [f for f in st.findings if f.rule == "shard_down"]
    assert len(shard) == 1 and shard[0].severity == "critical"
    assert "shard fabtop/shard1:9877 is down" in shard[0].summary
    # its old findings are not shown as if it still saw them
    assert "pfc_storm" not in {f.rule for f in st.findings}


def test_a_host_its_shard_does_not_reach_is_blind() -> None:
    results = [
        {
            "metric": {"__name__": "fabtop_host_up", "host": "n1", **SHARD},
            "value": [T0, "0"],
        },
        {
            "metric": {"__name__": "fabtop_host_up", "host": "n2", **SHARD},
            "value": [T0, "1"],
        },
    ]
    src = reader(ManualClock(), [(stamps(results, T0), results, [up("1")])])
    asyncio.run(src.poll_once())
    st = src.state
    assert st.hosts["n1"].status == DOWN and st.hosts["n2"].status == UP
    assert [f.host for f in st.findings if f.rule == "host_unreachable"] == ["n1"]


def test_a_source_without_fabtop_series_is_read_as_node_exporter() -> None:
    def fetch(url: str, query: str, timeout: float) -> list[Any]:
        if query.startswith("timestamp("):
            return []
        if "node_ethtool_" in query:
            return [
                {
                    "metric": {
                        "__name__": "node_ethtool_received_bytes_phy",
                        "device": "eth0",
                        "instance": "node7:9100",
                        "job": "node",
                    },
                    "value": [T0, "1000"],
                }
            ]
        return []

    src = PrometheusSource("http://prom:9090", interval=1.0, fetch=fetch, clock=ManualClock())
    src.state = fabric_state(Config(hosts=[], interval=1.0))
    assert asyncio.run(src.poll_once()) == 1
    assert not src.own.active and list(src.state.hosts) == ["node7"]


def test_a_range_answer_becomes_one_instant_vector_per_step() -> None:
    m = {"__name__": "fabtop_host_up", "host": "n1", **SHARD}
    matrix = [
        {"metric": m, "values": [[T0, "1"], [T0 + 15, "1"]]},
        {"metric": {**m, "host": "n2"}, "values": [[T0 + 15, "1"], ["x", "1"]]},
        "odd",
    ]
    steps = read_range(matrix)
    assert [t for t, _ in steps] == [T0, T0 + 15]
    assert [sorted(answer.hosts) for _, answer in steps] == [["n1"], ["n1", "n2"]]


def test_a_range_answer_reads_each_series_labels_once_and_checks_every_value() -> None:
    def series(name: str, *values: list[Any], **labels: str) -> dict[str, Any]:
        return {
            "metric": {"__name__": name, "host": "n1", **labels, **SHARD},
            "values": list(values),
        }

    link = {"link": "eth0"}
    matrix = [
        series("fabtop_host_up", [T0, "1"], [T0 + 15, "1"]),
        series("fabtop_link_rx_phy_errors_total", [T0, "10"], [T0 + 15, "NaN"], **link),
        # a bad label costs every value of its series, each step saying why
        series(
            "fabtop_link_rx_discards_prio_total", [T0, "1"], [T0 + 15, "2"], priority="9", **link
        ),
        series(
            "fabtop_link_rx_buf_discard_total", [T0, "3"], [T0 + 15, "1e30"], priority="3", **link
        ),
        series("fabtop_link_link_down_events_total", ["x", "5"], [-1, "5"], **link),  # no time
    ]
    steps = read_range(matrix)
    assert [t for t, _ in steps] == [T0, T0 + 15]
    first, second = (answer.hosts["n1"] for _, answer in steps)
    assert (first.t, second.t) == (T0, T0 + 15)
    assert first.links["eth0"].metrics == {
        Metric.RX_PHY_ERRORS: 10,
        Metric.RX_BUF_DISCARD: {3: 3},
    }
    assert second.links["eth0"].metrics == {}
    assert first.dropped == [
        "fabtop_link_rx_discards_prio_total: dropped (no priority 0-7)",
    ]
    assert second.dropped == [
        "fabtop_link_rx_phy_errors_total: NaN dropped",
        "fabtop_link_rx_discards_prio_total: dropped (no priority 0-7)",
        "fabtop_link_rx_buf_discard_total: dropped (not a 64-bit counter)",
    ]


def test_backfill_fills_the_history_through_the_rate_engine(demo: FabricState) -> None:
    results = exposition(demo)
    matrix: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for i in range(10):  # ten steps of 15 s, 1.5 GB per step on every rx_bytes
        for r in results:
            key = tuple(sorted(r["metric"].items()))
            v = float(r["value"][1])
            if r["metric"]["__name__"] == "fabtop_link_rx_bytes_total":
                v += i * 1.5e9
            matrix.setdefault(key, {"metric": r["metric"], "values": []})["values"].append(
                [T0 - 150 + 15 * i, repr(v)]
            )
    clock = ManualClock()
    src = reader(clock, [])
    src.own.fetch_range = lambda *a: list(matrix.values())
    n = asyncio.run(src.own.backfill(span=150.0, end=T0))
    assert n == 10 * len(demo.hosts)
    st: FabricState = src.state
    hs = st.hosts["node1"]
    assert hs.rates is not None and hs.sample is not None
    lid = "enp65s0f0np0"
    assert hs.rates.links[lid].rates["rx_bytes_per_s"] == pytest.approx(1e8)
    # the timeline's history holds the backfilled span at once
    series = st.history.get(("node1", lid, "rx_bps"))
    assert series is not None
    ts, vs = series.points(3600.0)
    assert len(ts) == 9 and ts[-1] - ts[0] == pytest.approx(120.0)
    assert vs == [pytest.approx(8e8)] * 9
    assert src.own.backfilled == (150.0, 1.0)
    assert isinstance(hs.sample, HostSample)


def r1(metric: str, value: str = "1", /, **labels: str) -> dict[str, Any]:
    return {"metric": {"__name__": metric, **labels, **SHARD}, "value": [T0, value]}


def test_the_info_series_fill_what_the_screens_show() -> None:
    link = {"host": "n1", "link": "eth0"}
    results = [
        r1("fabtop_host_up", host="n1", shard="rack1"),
        r1("fabtop_link_rx_bytes_total", "10", priority="", **link),
        r1(
            "fabtop_link_info",
            **link,
            netdev="eth0",
            rdma_device="mlx5_0",
            port="1",
            kind="roce",
            link_layer="Ethernet",
            node_type="",
            driver="mlx5_core",
            driver_version="24.10",
            firmware="28.39.1002",
        ),
        r1("fabtop_link_state_info", **link, state="up", port_state="ACTIVE", phys_state="LinkUp"),
        r1("fabtop_link_mtu_bytes", "4200", **link),
        r1("fabtop_link_qos_info", **link, source="mlnx_qos", trust="dscp"),
        *(
            r1("fabtop_link_pfc_enabled", str(int(p == 3)), **link, priority=str(p))
            for p in range(8)
        ),
        *(
            r1("fabtop_link_ecn_enabled", "1", **link, priority="3", point=pt)
            for pt in ("np", "rp")
        ),
        r1("fabtop_link_info", host="n1", link="veth9", netdev="veth9", kind="virtual"),
        r1(
            "fabtop_gpu_info", host="n1", gpu="0", name="NVIDIA H100", uuid="GPU-1", vendor="nvidia"
        ),
        r1("fabtop_gpu_throttle_reason", host="n1", gpu="0", reason="hw_thermal_slowdown"),
        r1("fabtop_inference_info", host="n1", url="http://n1:8000", server="vllm", model="m"),
        r1(
            "fabtop_finding",
            rule="pfc_storm",
            severity="critical",
            subject="n1/eth0/prio3",
            host="n1",
            link="eth0",
            priority="3",
        ),
        r1(
            "fabtop_finding_evidence",
            "0.99",
            rule="pfc_storm",
            subject="n1/eth0/prio3",
            field="tx_pause_time_ratio",
        ),
        r1(
            "fabtop_finding_evidence_info",
            rule="pfc_storm",
            subject="n1/eth0/prio3",
            field="paused_peers",
            value="n2/eth0",
        ),
    ]
    answer = read_own(results)
    assert answer.names == {"fabtop/shard1:9877": "rack1"}
    s = sample_of(answer.hosts["n1"], 1)
    eth0 = s.links["eth0"]
    assert (eth0.rdma_device, eth0.port, eth0.kind, eth0.driver, eth0.firmware) == (
        "mlx5_0",
        1,
        "roce",
        "mlx5_core",
        "28.39.1002",
    )
    assert (eth0.state, eth0.port_state, eth0.phys_state, eth0.mtu) == (
        "up",
        "ACTIVE",
        "LinkUp",
        4200,
    )
    assert eth0.qos is not None
    assert (eth0.qos.source, eth0.qos.trust, eth0.qos.pfc_enabled) == ("mlnx_qos", "dscp", (3,))
    assert eth0.qos.ecn_np_enabled == (3,) and eth0.qos.ecn_rp_enabled == (3,)
    assert not s.links["veth9"].physical
    (g,) = s.gpus
    assert (g.name, g.uuid, g.throttle_reasons) == (
        "NVIDIA H100",
        "GPU-1",
        ("hw_thermal_slowdown",),
    )
    (inf,) = s.inference
    assert (inf.server, inf.model) == ("vllm", "m")
    # the storm as the shard raised it: its port and priority, its evidence, its shard
    src = reader(ManualClock(), [(stamps(results, T0), results, [up("1")])])
    asyncio.run(src.poll_once())
    storm = next(f for f in src.state.findings if f.rule == "pfc_storm")
    assert storm.port is not None and storm.port.key == ("n1", "eth0") and storm.priority == 3
    assert storm.evidence == {
        "tx_pause_time_ratio": 0.99,
        "paused_peers": "n2/eth0",
        "shard": "rack1",
    }
    assert storm.summary.endswith("[shard rack1]")


def test_a_shard_whose_scrapes_stop_coming_makes_its_hosts_stale() -> None:
    results = [
        r1("fabtop_host_up", host="n1"),
        r1("fabtop_link_rx_bytes_total", "5", host="n1", link="eth0", priority=""),
    ]
    clock = ManualClock()
    same = (stamps(results, T0), results, [up("1")])
    src = reader(clock, [same] * 6)
    st = src.state
    for _ in range(6):  # Prometheus answers, with the same old scrape each time
        asyncio.run(src.poll_once())
        clock.t += 1
    assert [f.rule for f in st.findings if f.host == "n1"] == ["host_stale"]


async def test_export_refuses_only_a_source_holding_shards_own_series() -> None:
    from fabtop.commands.export import _loop

    def fetch(shards: list[str]) -> Any:
        return lambda url, query, timeout: [
            {"metric": {"job": "fabtop", "instance": s}, "value": [T0, "7"]} for s in shards
        ]

    node_only = PrometheusSource("http://prom:9090", fetch=fetch([]))
    assert await _loop(node_only) is None
    shards = PrometheusSource("http://prom:9090", fetch=fetch(["a:9877", "b:9877"]))
    why = await _loop(shards)
    assert why is not None and "shards fabtop/a:9877, fabtop/b:9877" in why


def test_a_snapshot_of_a_prometheus_that_does_not_answer_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.main import main

    assert main(["snapshot", "--from-prometheus", "http://127.0.0.1:1"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["hosts"] == [] and doc["findings"][0]["rule"] == "source_unreachable"


def test_a_shard_already_down_when_the_reader_starts_leaves_its_hosts_blind() -> None:
    b = {"job": "fabtop", "instance": "shard2:9877"}
    live = [r1("fabtop_host_up", host="n1", shard="a")]
    # the last hour's fabtop_host_up knows shard b's hosts; its series are stale now
    gone = [{"metric": {"host": h, "shard": "b", **b}, "value": [T0, "1"]} for h in ("n7", "n8")]
    clock = ManualClock()
    ups = [up("1"), {"metric": {"__name__": "up", **b}, "value": [T0, "0"]}]
    src = reader(clock, [(stamps(live, T0), live, ups)])
    real = src.fetch
    src.fetch = lambda url, q, timeout, *at: (
        real(url, q, timeout) + gone if q.startswith("last_over_time(") else real(url, q, timeout)
    )
    asyncio.run(src.poll_once())
    st = src.state
    assert sorted(st.hosts) == ["n1", "n7", "n8"]
    assert {n: h.status for n, h in st.hosts.items()} == {"n1": UP, "n7": DOWN, "n8": DOWN}
    (down,) = [f for f in st.findings if f.rule == "shard_down"]
    assert down.subject == "b" and "its 2 hosts are blind" in down.summary
    assert {f.host for f in st.findings if f.rule == "host_unreachable"} == {"n7", "n8"}


def test_a_backfill_that_fails_is_said_and_the_live_poll_goes_on() -> None:
    results = [r1("fabtop_host_up", host="n1")]
    src = reader(ManualClock(), [(stamps(results, T0), results, [up("1")])])
    src.own.backfill_s = 3600.0

    def refused(*_: object) -> list[Any]:
        raise OSError("query_range: 422 Unprocessable Entity")

    src.own.fetch_range = refused
    assert asyncio.run(src.poll_once()) == 1
    (note,) = [f for f in src.state.findings if f.rule == READBACK_RULE]
    assert "no history backfilled: query_range: 422 Unprocessable Entity" in note.summary
