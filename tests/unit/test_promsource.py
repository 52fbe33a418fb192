"""The Prometheus source under hostile answers, target churn and exporters sharing a host."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from collectors.numbers import json_loads
from fabtop.config import Config
from fabtop.core.finding_log import MAX_EPISODES
from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock
from fabtop.run.promsource import (
    PrometheusSource,
    group_series,
    instance_host,
    split_instance,
)

T0 = 1_700_000_000.0


def res(
    name: str, value: object, instance: str = "node7:9100", ts: object = None, **labels: str
) -> dict[str, Any]:
    """One instant-vector result as Prometheus's JSON has it (values as strings)."""
    return {
        "metric": {"__name__": name, "instance": instance, "job": "node", **labels},
        "value": [T0 if ts is None else ts, value],
    }


def eth(stat: str, value: object, device: str = "eth0", **kw: Any) -> dict[str, Any]:
    return res(f"node_ethtool_{stat}", value, device=device, **kw)


def source(clock: ManualClock | None = None, **kw: Any) -> PrometheusSource:
    clock = clock or ManualClock()
    src = PrometheusSource("http://prom:9090", interval=5.0, clock=clock, **kw)
    src.state = fabric_state(Config(hosts=[], interval=5.0), clock=clock)
    return src


def poll(src: PrometheusSource, results: list[Any]) -> int:
    """What poll_once does with an answer, without the HTTP."""
    unplaced: list[str] = []
    return src.apply(group_series(results, unplaced), unplaced)


def ethtool_of(src: PrometheusSource, host: str, device: str = "eth0") -> dict[str, Any]:
    hs = src.state.hosts[host] if src.state else None
    assert hs is not None and hs.sample is not None, host
    link = next(ln for ln in hs.sample.links.values() if ln.netdev == device)
    counters: dict[str, Any] = link.counters["ethtool"]
    return counters


def in_history(st: FabricState) -> set[str]:
    """The hosts with a series in the state's history."""
    keys = st.history.keys()
    return {k[0] for k in keys}


# --- one bad element costs that element ----------------------------------------------


@pytest.mark.parametrize(
    "bad", ["+Inf", "-Inf", "NaN", "1e400", "-5", "1" * 30, "soon", "", "1" * 5000, None, [1], True]
)
def test_a_bad_value_costs_that_sample_only(bad: object) -> None:
    src = source()
    assert (
        poll(
            src,
            [
                eth("received_bytes", "1000"),
                eth("x", bad),
                eth("received_bytes", "7", device="eth1"),
            ],
        )
        == 1
    )
    assert ethtool_of(src, "node7") == {"rx_bytes": 1000}
    assert ethtool_of(src, "node7", "eth1") == {"rx_bytes": 7}
    warnings = list(src.state.hosts["node7"].warnings)
    (line,) = [w for w in warnings if "node_ethtool_x" in w]
    assert line.startswith("node7: node_ethtool_x{device=eth0}: ") and "dropped" in line
    assert src.state is not None and not src.state.findings  # nothing else to say


def test_the_example_line_and_it_is_said_once() -> None:
    clock = ManualClock()
    src = source(clock)
    for i in range(3):
        clock.t += 5
        poll(src, [eth("received_bytes", str(1000 * i), ts=T0 + 5 * i), eth("x", "+Inf")])
    warnings = list(src.state.hosts["node7"].warnings)
    assert warnings.count("node7: node_ethtool_x{device=eth0}: +Inf dropped") == 1
    assert src.state is not None and src.state.hosts["node7"].frames == 3


@pytest.mark.parametrize("ts", ["soon", None, "NaN", "+Inf", 1e300, -1.0, [T0], {"t": T0}])
def test_a_bad_timestamp_costs_that_sample_only(ts: object) -> None:
    results = [eth("received_bytes", "1000"), eth("x", "5")]
    results[1]["value"][0] = ts
    src = source()
    assert poll(src, results) == 1
    assert ethtool_of(src, "node7") == {"rx_bytes": 1000}
    assert any(
        "node_ethtool_x{device=eth0}: timestamp" in w for w in src.state.hosts["node7"].warnings
    )


def test_a_timestamp_far_off_the_answers_cannot_hold_its_host() -> None:
    # One sample stamped a day ahead: taken, it would make every later answer "not newer".
    clock = ManualClock()
    src = source(clock)
    assert poll(src, [eth("received_bytes", "1"), eth("x", "5", ts=T0 + 86400)]) == 1
    clock.t += 5
    assert poll(src, [eth("received_bytes", "2", ts=T0 + 5)]) == 1
    assert ethtool_of(src, "node7") == {"rx_bytes": 2}


@pytest.mark.parametrize("value", [[T0], [T0, "1", "2"], "1", {"t": T0}, None])
def test_a_value_of_the_wrong_shape_costs_that_sample(value: object) -> None:
    results = [eth("received_bytes", "1000"), eth("x", "5")]
    results[1]["value"] = value
    src = source()
    assert poll(src, results) == 1
    assert ethtool_of(src, "node7") == {"rx_bytes": 1000}
    assert any(
        "node_ethtool_x{device=eth0}: dropped (its value is not [time, value])" in w
        for w in src.state.hosts["node7"].warnings
    )


@pytest.mark.parametrize(
    "odd",
    [
        ["not", "a", "dict"],
        "text",
        7,
        None,
        {},
        {"metric": []},
        {"metric": {}},
        {"metric": {}, "value": [T0, "1"]},  # a metric without labels
        {"metric": {"__name__": "node_ethtool_x", "device": "eth0"}, "value": [T0, "1"]},
        {"metric": {"__name__": "node_ethtool_x", "instance": 9100}, "value": [T0, "1"]},
        {"metric": {"__name__": "up", "instance": "node7:9100"}, "value": [T0, "1"]},
        {"metric": {"__name__": "node_ethtool_x\n@@end 1", "instance": "n"}, "value": [T0, "1"]},
    ],
)
def test_a_result_of_an_odd_shape_costs_that_result_and_is_said_on_the_source(odd: Any) -> None:
    src = source()
    assert poll(src, [odd, eth("received_bytes", "1000")]) == 1
    assert list(src.state.hosts) == ["node7"]
    assert ethtool_of(src, "node7") == {"rx_bytes": 1000}
    (f,) = src.state.findings
    assert (f.rule, f.severity) == ("source_partial", "warning")
    assert "1 result " in f.summary and "left out" in f.summary
    poll(src, [eth("received_bytes", "1000", ts=T0 + 5)])  # a clean answer: said no more
    assert not src.state.findings


def test_counters_beyond_64_bits_and_negative_are_dropped_gauges_kept() -> None:
    src = source()
    poll(
        src,
        [
            eth("received_bytes", "123456789012345678901234567890"),
            eth("transmitted_bytes", "-1"),
            eth("received_packets", "18446744073709549568"),  # the last float64 below 2**64
            res(
                "node_infiniband_port_data_received_bytes_total", "1e30", device="mlx5_0", port="1"
            ),
            res(
                "node_infiniband_port_data_transmitted_bytes_total",
                "4000",
                device="mlx5_0",
                port="1",
            ),
            res("node_infiniband_state_id", "+Inf", device="mlx5_0", port="1"),
            res("node_infiniband_rate_bytes_per_second", "-Inf", device="mlx5_0", port="1"),
            res("DCGM_FI_DEV_GPU_TEMP", "71", instance="node7:9400", gpu="0"),
            res("DCGM_FI_DEV_POWER_USAGE", "NaN", instance="node7:9400", gpu="0"),
        ],
    )
    assert ethtool_of(src, "node7") == {"rx_packets": 2**64 - 2048}
    hs = src.state.hosts["node7"]
    assert hs.sample is not None
    ib = next(ln for ln in hs.sample.links.values() if ln.rdma_device == "mlx5_0")
    assert ib.metrics.get("tx_bytes") == 4000 and "rx_bytes" not in ib.metrics
    (gpu,) = hs.sample.gpus
    assert gpu.temperature_c == 71 and gpu.power_w is None
    named = [w for w in hs.warnings if "dropped" in w and "more sample" not in w]
    assert len(named) == 5  # MAX_NAMED_DROPS named ...
    assert "node7: 1 more sample dropped" in hs.warnings  # ... and the rest counted


def test_labels_that_would_write_other_lines_are_refused() -> None:
    src = source()
    poll(
        src,
        [
            eth("received_bytes", "5"),
            eth("received_bytes", "6", device="eth0\nNIC statistics:"),
            eth("received_bytes", "7", device="../../x"),
            res("DCGM_FI_DEV_GPU_TEMP", "71", instance="node7:9400", gpu="0"),
            res("DCGM_FI_DEV_GPU_TEMP", "99", instance="node7:9400", gpu="1\n2, GPU-x, 5"),
            res("node_infiniband_port_packets_received_total", "5", device="mlx5_0", port="1/x"),
        ],
    )
    hs = src.state.hosts["node7"]
    assert hs.sample is not None
    assert [ln.netdev for ln in hs.sample.links.values()] == ["eth0"]
    assert [g.temperature_c for g in hs.sample.gpus] == [71]
    assert sum("dropped (no usable" in w for w in hs.warnings) == 4


async def test_hostile_json_is_read_through_the_number_checks() -> None:
    # The tokens Python's json takes and JSON does not, and numbers past a float or 64 bits.
    text = (
        '{"status": "success", "data": {"resultType": "vector", "result": ['
        '{"metric": {"__name__": "node_ethtool_a", "instance": "n1:9100", "device": "e0"},'
        ' "value": [1700000000.5, "1"]},'
        '{"metric": {"__name__": "node_ethtool_b", "instance": "n1:9100", "device": "e0"},'
        ' "value": [NaN, "2"]},'
        '{"metric": {"__name__": "node_ethtool_c", "instance": "n1:9100", "device": "e0"},'
        ' "value": [1700000000.5, Infinity]},'
        '{"metric": {"__name__": "node_ethtool_d", "instance": "n1:9100", "device": "e0"},'
        f' "value": [1700000000.5, {"9" * 400}]}},'
        '{"metric": {"__name__": "node_ethtool_e", "instance": "n1:9100", "device": "e0"},'
        ' "value": [1e400, 3]}]}}'
    )
    results = json_loads(text)["data"]["result"]

    def fetch(url: str, query: str, timeout: float) -> list[Any]:
        return results if "ethtool" in query else []

    src = PrometheusSource("http://prom:9090", interval=5.0, fetch=fetch)
    src.state = FabricState([])
    assert await src.poll_once() == 1
    assert src.error is None and src.state.sources[src.name].up
    assert ethtool_of(src, "n1", "e0") == {"a": 1}
    assert sum("dropped" in w for w in src.state.hosts["n1"].warnings) == 4


# --- what a host is --------------------------------------------------------------------


def test_exporters_of_different_families_on_one_machine_are_one_host() -> None:
    src = source()
    poll(
        src,
        [
            eth("received_bytes", "5", instance="node7:9100"),
            res("DCGM_FI_DEV_GPU_TEMP", "71", instance="node7:9400", job="dcgm", gpu="0"),
        ],
    )
    assert list(src.state.hosts) == ["node7"]
    hs = src.state.hosts["node7"]
    assert hs.sample is not None and hs.sample.gpus[0].temperature_c == 71
    assert ethtool_of(src, "node7") == {"rx_bytes": 5}


def test_two_exporters_of_one_family_on_one_machine_stay_apart() -> None:
    # Merged, their counters alternate in one series: rates 9x too high, then "resets".
    clock = ManualClock()
    src = source(clock)
    for i in range(4):
        poll(
            src,
            [
                eth("received_bytes_phy", str(1000 * i), instance="node7:9100", ts=T0 + 5 * i),
                eth("received_bytes_phy", str(9000 * i), instance="node7:9101", ts=T0 + 5 * i),
            ],
        )
        clock.t += 5
    st = src.state
    assert st is not None and sorted(st.hosts) == ["node7:9100", "node7:9101"]
    assert ethtool_of(src, "node7:9100") == {"rx_bytes_phy": 3000}
    assert ethtool_of(src, "node7:9101") == {"rx_bytes_phy": 27000}
    for host, per_s in (("node7:9100", 200.0), ("node7:9101", 1800.0)):
        rates = st.hosts[host].rates
        assert rates is not None
        (lr,) = rates.links.values()
        assert lr.rates["rx_bytes_per_s"] == pytest.approx(per_s)
    assert any("shown apart" in w for w in st.hosts["node7:9100"].warnings)


def test_a_second_exporter_of_a_family_splits_the_host_and_its_going_joins_it_again() -> None:
    clock = ManualClock()
    src = source(clock, forget_after=60.0)
    poll(src, [eth("received_bytes", "1")])
    assert list(src.state.hosts) == ["node7"]
    clock.t += 5
    poll(
        src,
        [
            eth("received_bytes", "2", ts=T0 + 5),
            eth("received_bytes", "9", instance="node7:9101", ts=T0 + 5),
        ],
    )
    assert sorted(src.state.hosts) == ["node7:9100", "node7:9101"]
    assert [h.name for h in src.config.hosts] == ["node7:9100", "node7:9101"]
    for i in range(2, 20):  # :9101 is gone; the split holds while it may come back
        clock.t += 5
        poll(src, [eth("received_bytes", str(i), ts=T0 + 5 * i)])
        if clock.t - 10_005.0 <= 60.0:
            assert "node7:9101" in src.state.hosts
    assert list(src.state.hosts) == ["node7"]
    assert [h.name for h in src.config.hosts] == ["node7"]


def test_one_instance_under_two_jobs_is_two_sources() -> None:
    src = source()
    poll(src, [eth("received_bytes", "5", job="node"), eth("received_bytes", "6", job="again")])
    assert sorted(src.state.hosts) == ["node7:9100", "node7:9100@node"]


@pytest.mark.parametrize(
    ("instance", "host", "port"),
    [
        ("node7:9100", "node7", "9100"),
        ("node7", "node7", ""),
        ("[fe80::1]:9100", "fe80__1", "9100"),
        ("fe80::1", "fe80__1", ""),
        ("10.0.0.7:9100", "10.0.0.7", "9100"),
        ("n\x1b]0;x\x07:9100", "n__0_x_", "9100"),
        ("a" * 300 + ":1", "a" * 64, "1"),
        ("node7:http", "node7", ""),
        ("", "unknown", ""),
    ],
)
def test_instance_names_become_safe_host_names(instance: str, host: str, port: str) -> None:
    assert split_instance(instance) == (host, port)
    assert instance_host(instance) == host


# --- forgetting ------------------------------------------------------------------------


def test_a_target_gone_is_forgotten_with_its_findings_and_history() -> None:
    clock = ManualClock()
    src = source(clock)
    assert src.forget_after == 300.0  # the larger of 5 minutes and 10 polls of 5 s
    poll(
        src,
        [
            eth("received_bytes_phy", "1", instance="a:9100"),
            eth("received_bytes_phy", "1", instance="b:9100"),
        ],
    )
    st = src.state
    assert st is not None
    for i in range(1, 200):
        clock.t += 5
        poll(src, [eth("received_bytes_phy", str(i), instance="a:9100", ts=T0 + 5 * i)])
        st.refresh_liveness()
        if 10 < 5 * i <= 300:  # stale, said, and kept while it may come back
            assert any(f.rule == "host_stale" and f.host == "b" for f in st.findings)
    assert list(st.hosts) == ["a"]
    assert not [f for f in st.findings if f.host == "b"]
    assert in_history(st) == {"a"}
    assert "b" not in src._last_t and [h.name for h in src.config.hosts] == ["a"]
    clock.t += 5  # it comes back: a new host, from scratch
    poll(src, [eth("received_bytes", "5", instance="b:9100", ts=T0 + 1000)])
    assert sorted(st.hosts) == ["a", "b"] and st.hosts["b"].frames == 1


def test_a_failed_poll_forgets_nothing() -> None:
    clock = ManualClock()
    answers: list[Any] = [[eth("received_bytes", "1")]]

    def fetch(url: str, query: str, timeout: float) -> list[Any]:
        if not answers:
            raise OSError("connection refused")
        return answers[0] if "ethtool" in query else []

    src = PrometheusSource("http://prom:9090", interval=5.0, fetch=fetch, clock=clock)
    src.state = FabricState([], clock=clock)
    asyncio.run(src.poll_once())
    answers.clear()
    clock.t += 3600  # an hour without an answer
    asyncio.run(src.poll_once())
    assert list(src.state.hosts) == ["node7"]  # stale, and the source's finding says why
    assert {f.rule for f in src.state.findings} == {"source_unreachable", "host_stale"}


def test_a_week_of_pod_churn_keeps_the_host_table_bounded() -> None:
    # A week in 30-minute polls, forgetting after an hour: every poll one of 12 pods is
    # replaced by a new one on a new address, and a new machine's 12 exporters (one family
    # on 12 ports: 12 hosts) replace the last one's; 4379 targets in all.
    clock = ManualClock()
    src = source(clock, forget_after=3600.0)
    st = src.state
    assert st is not None
    most_hosts = most_findings = 0
    for step in range(7 * 48):
        t = T0 + 1800 * step
        live = [f"10.1.{(step + k) // 256}.{(step + k) % 256}:9100" for k in range(12)]
        live += [f"10.2.{step // 256}.{step % 256}:{9100 + k}" for k in range(12)]  # one host
        poll(src, [eth("received_bytes_phy", str(step), instance=i, ts=t) for i in live])
        st.refresh_liveness()
        most_hosts = max(most_hosts, len(st.hosts))
        most_findings = max(most_findings, len(st.findings))
        clock.t += 1800
    # live now + gone less than an hour ago; each finding is one of those hosts'
    assert most_hosts <= 12 + 12 + 1 + 2 * (12 + 1)
    assert most_findings <= most_hosts
    gone = "10.1.0.0"
    assert gone not in st.hosts and gone not in in_history(st)
    assert len(src._targets) <= 3 * 24 and len(src._by_hostname) <= 3 * 13
    assert len(st.finding_log) <= MAX_EPISODES + most_findings


def test_more_targets_than_a_source_holds_forgets_the_longest_unseen() -> None:
    clock = ManualClock()
    src = source(clock, max_hosts=10)
    poll(src, [eth("received_bytes", "1", instance=f"old{i}:9100") for i in range(8)])
    clock.t += 5
    poll(src, [eth("received_bytes", "1", instance=f"old{i}:9100", ts=T0 + 5) for i in range(4)])
    clock.t += 5
    poll(src, [eth("received_bytes", "1", instance=f"new{i}:9100", ts=T0 + 10) for i in range(4)])
    st = src.state
    assert st is not None
    # the 6 not seen since the first poll were the first to go (2 of them kept, by
    # name); the new ones were not refused
    assert sorted(st.hosts) == sorted(
        [f"old{i}" for i in range(4)] + [f"old{i}" for i in (6, 7)] + [f"new{i}" for i in range(4)]
    )
    (f,) = [f for f in st.findings if f.rule == "source_partial"]
    assert "more than the 10 a source holds" in f.summary
    clock.t += 5  # one answer alone past the bound: held ones kept, the rest left out
    poll(src, [eth("received_bytes", "1", instance=f"x{i}:9100", ts=T0 + 15) for i in range(30)])
    assert len(st.hosts) == 10 and len(src._targets) == 10


def test_one_target_of_endless_series_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from fabtop.run import promsource

    monkeypatch.setattr(promsource, "MAX_SAMPLES_PER_TARGET", 100)
    src = source()
    flood = [eth(f"s{i}", "1", device=f"v{i % 7}") for i in range(130)]
    poll(src, [*flood, eth("received_bytes", "5", instance="b:9100")])
    st = src.state
    assert st is not None
    hs = st.hosts["node7"]
    assert hs.sample is not None
    assert sum(len(ln.counters["ethtool"]) for ln in hs.sample.links.values()) == 100
    assert "node7: 25 more samples dropped" in hs.warnings  # 30 past the bound, 5 named
    assert ethtool_of(src, "b") == {"rx_bytes": 5}


def test_remove_host_forgets_all_the_state_holds_of_it() -> None:
    clock = ManualClock()
    src = source(clock)
    for i in range(3):
        clock.t += 5
        poll(
            src,
            [
                eth("received_bytes_phy", str(100 * i), instance=h, ts=T0 + 5 * i)
                for h in ("a:9100", "b:9100")
            ],
        )
    st = src.state
    assert st is not None
    st.set_baseline()
    st.remove_host("b")
    st.evaluate()
    assert list(st.hosts) == ["a"] and "b" not in st.baseline and in_history(st) == {"a"}
    pipe = st.pipeline
    assert "b" not in pipe._latest and "b" not in pipe._shapes and pipe.clocks.offset("b") is None
    assert pipe.engine._base.keys() == {"a"}
