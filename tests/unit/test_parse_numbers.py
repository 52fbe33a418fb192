"""Numbers that cannot be, at parse time: each costs its one value, never the parse.

Every case here raised or passed a non-finite float through before issue 11: Python's
``int()`` refuses strings beyond 4300 digits, ``float()`` and ``json`` accept NaN and
±Inf, and ``math.fsum`` raises on ``inf + -inf``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from collectors.numbers import (
    U64_MAX,
    finite,
    json_loads,
    parse_float,
    parse_hex,
    parse_int,
    parse_uint,
)
from collectors.parsers.amd_smi import parse_amd_smi_metric_json, parse_rocm_smi_json
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.nvidia_smi import parse_query_csv
from collectors.parsers.prometheus_text import parse_inference_metrics, parse_prometheus_text
from collectors.parsers.qos import parse_dcb_buffer, parse_dcb_pfc, parse_mlnx_qos
from collectors.parsers.sysfs import parse_sysib, parse_sysnet

URL = "http://127.0.0.1:8000/metrics"
HUGE = "9" * 5000  # beyond int()'s 4300-digit limit
NON_FINITE = ("nan", "NaN", "+Inf", "-Inf", "inf", "Infinity", "-Infinity")


def test_number_helpers_bound_and_refuse() -> None:
    assert parse_uint("18446744073709551615") == U64_MAX
    assert parse_uint("18446744073709551616") is None
    assert parse_uint(HUGE) is None and parse_int("-" + HUGE) is None
    assert parse_uint(" 42 ") == 42 and parse_uint("-1") is None and parse_uint("4²") is None
    assert parse_int("-1") == -1 and parse_int("1_000") is None
    assert parse_hex("0x1f") == 31 and parse_hex("0x" + "f" * 17) is None
    assert parse_hex("0x") is None and parse_hex("12") is None
    for tok in NON_FINITE:
        assert parse_float(tok) is None, tok
    assert parse_float("1" + "0" * 400) is None  # float() gives inf for long digit strings
    assert parse_float("2.5") == 2.5
    assert finite(math.nan) is None and finite(10**400) is None and finite(3) == 3.0
    assert json_loads(f"[NaN, Infinity, -Infinity, 1e999, {HUGE}, 5, 2.5]") == [
        None,
        None,
        None,
        None,
        None,
        5,
        2.5,
    ]
    with pytest.raises(ValueError):
        json_loads("[" * 100_000)


def test_ethtool_huge_counter_costs_one_value() -> None:
    stats = parse_ethtool_stats(f"NIC statistics:\n     rx_bytes: {HUGE}\n     tx_bytes: 5\n")
    assert stats.counters == {"tx_bytes": 5}
    assert any("rx_bytes" in w for w in stats.warnings)
    over = parse_ethtool_stats(f"     rx_bytes: {U64_MAX + 1}\n     [3]: rx_packets: {HUGE}\n")
    assert over.counters == {} and len(over.warnings) == 2


def test_sysfs_huge_values_cost_one_value() -> None:
    net = parse_sysnet(
        f"eth0/statistics/rx_bytes {HUGE}\neth0/statistics/tx_bytes 7\n"
        f"eth0/mtu {HUGE}\neth0/speed 0x{'f' * 5000}\neth0/device/current_link_speed "
        f"{HUGE} GT/s PCIe\neth0/device/hwmon/hwmon0/temp1_input {HUGE}\n"
        f"eth0/device/current_link_width {HUGE}\neth0/device/max_link_width x{HUGE}\n"
    )
    rec = net.netdevs["eth0"]
    assert rec.statistics == {"tx_bytes": 7}
    assert rec.mtu is None and rec.speed_mbps is None and rec.pcie is None
    assert rec.temperature_c is None
    ib = parse_sysib(
        f"mlx5_0/ports/1/counters/port_rcv_data {HUGE}\n"
        f"mlx5_0/ports/1/hw_counters/out_of_buffer 3\nmlx5_0/ports/1/rate {HUGE} Gb/sec\n"
        f"mlx5_0/ports/{HUGE}/state 4: ACTIVE\n"
    )
    port = ib.devices["mlx5_0"].ports[1]
    assert port.counters == {} and port.hw_counters == {"out_of_buffer": 3}
    assert port.rate_gbps is None
    assert len(ib.devices["mlx5_0"].ports) == 1
    assert any("port_rcv_data" in w for w in ib.warnings)


def test_sysfs_counter_beyond_64_bits_and_negative_is_refused() -> None:
    net = parse_sysnet(f"eth0/statistics/rx_bytes {U64_MAX + 1}\neth0/statistics/tx_bytes -5\n")
    assert net.netdevs["eth0"].statistics == {}
    assert len(net.warnings) == 2


def test_qos_huge_numbers() -> None:
    mq = parse_mlnx_qos(
        f"Priority trust state: dscp\ndscp2prio mapping:\n\tprio:{HUGE} dscp:{HUGE},\n"
        f"PFC configuration:\n\tpriority    0   1\n\tenabled     0   {HUGE}\n"
        f"tc: {HUGE} ratelimit: unlimited, tsa: vendor\nCable len: {HUGE}\n"
    )
    assert mq.config.trust == "dscp" and mq.cable_len is None
    assert mq.config.dscp2prio is None
    pfc = parse_dcb_pfc(f"pfc-cap {HUGE} prio-pfc {HUGE}:on 3:on requests 3:{HUGE} 4:9")
    assert pfc.pfc_cap is None and pfc.config.pfc_enabled == (3,) and pfc.requests == {4: 9}
    buf = parse_dcb_buffer(f"buffer-size 0:{HUGE}Kb 1:{2**63}Gb 2:10Kb total-size {HUGE}")
    assert buf.buffer_size == {2: 10 * 1024} and buf.total_size is None


@pytest.mark.parametrize("tok", NON_FINITE)
def test_prometheus_non_finite_values_dropped(tok: str) -> None:
    text = (
        f'vllm:generation_tokens_total{{model_name="m"}} {tok}\n'
        'vllm:prompt_tokens_total{model_name="m"} 5\n'
        f'vllm:num_requests_running{{model_name="m"}} {tok}\n'
        'vllm:num_requests_waiting{model_name="m"} 1\n'
    )
    parsed = parse_prometheus_text(text)
    assert all(math.isfinite(s.value) for s in parsed.samples)
    s = parse_inference_metrics(text, URL)
    assert s.generated_tokens_total is None and s.requests_running is None
    assert (s.prompt_tokens_total, s.requests_waiting) == (5.0, 1.0)
    assert any("vllm:generation_tokens_total" in w for w in s.warnings)
    assert s.error is None  # the page was read; one value was not


def test_prometheus_inf_plus_minus_inf_does_not_raise() -> None:
    """The counter sum that raised out of math.fsum and stopped every host."""
    text = (
        'vllm:generation_tokens_total{engine="0",model_name="m"} +Inf\n'
        'vllm:generation_tokens_total{engine="1",model_name="m"} -Inf\n'
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 1e308\n'
        'vllm:prompt_tokens_total{engine="1",model_name="m"} 1e308\n'
    )
    s = parse_inference_metrics(text, URL)
    assert s.generated_tokens_total is None
    assert s.prompt_tokens_total is None  # the sum overflows: no value, not inf
    assert len(s.warnings) == 2


def test_prometheus_non_finite_bucket_drops_that_histogram(fixtures_dir: Path) -> None:
    text = (fixtures_dir / "llm_metrics/vllm_metrics_datadog.txt").read_text()
    line = 'vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="facebook/opt-125m"} 1.0'
    assert line in text
    for tok in ("NaN", "+Inf", "-Inf"):
        s = parse_inference_metrics(text.replace(line, line[: -len("1.0")] + tok), URL)
        assert "vllm:time_to_first_token_seconds" not in s.histograms
        assert "vllm:inter_token_latency_seconds" in s.histograms
        assert s.generated_tokens_total == 7.0
        assert any("vllm:time_to_first_token_seconds" in w for w in s.warnings)
    for h in parse_inference_metrics(text, URL).histograms.values():
        bounds, counts, count, total = h
        assert all(math.isfinite(b) for b in bounds[:-1]) and bounds[-1] == math.inf
        assert all(math.isfinite(c) for c in (*counts, count, total))


@pytest.mark.parametrize("tok", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_rocm_smi_json_non_finite_is_none(tok: str) -> None:
    card = {
        "GPU use (%)": tok,
        "Average Graphics Package Power (W)": f'"{tok}"',
        "VRAM Total Memory (B)": HUGE,
        "Temperature (Sensor edge) (C)": '"41.0"',
        "pcie clock level": f'"1 ({HUGE}GT/s x{HUGE})"',
    }
    text = '{"card0": {' + ", ".join(f'"{k}": {v}' for k, v in card.items()) + "}}"
    r = parse_rocm_smi_json(text)
    (g,) = r.gpus
    assert g.utilization_pct is None and g.power_w is None and g.memory_total_mib is None
    assert g.pcie_gen is None and g.pcie_width is None
    assert g.temperature_c == 41.0


def test_amd_smi_json_non_finite_and_huge() -> None:
    text = (
        '[{"gpu": true, "usage": {"gfx_activity": {"value": NaN, "unit": "%"}},'
        ' "power": {"socket_power": {"value": Infinity, "unit": "W"}},'
        ' "mem_usage": {"total_vram": {"value": 1e308, "unit": "GB"}},'
        f' "temperature": {{"edge": {HUGE}, "hotspot": 50}}, "pcie": {{"width": {HUGE}}}}}]'
    )
    (g,) = parse_amd_smi_metric_json(text).gpus
    assert g.index == 0  # a JSON true is not a GPU index
    assert g.utilization_pct is None and g.power_w is None
    assert g.memory_total_mib is None  # 1e308 GB in MiB overflows: no value, not inf
    assert g.temperature_c == 50.0 and g.pcie_width is None


def test_amd_json_nested_too_deep_is_a_warning() -> None:
    for fn in (parse_rocm_smi_json, parse_amd_smi_metric_json):
        r = fn("[" * 100_000)
        assert r.gpus == [] and r.warnings


def test_nvidia_huge_and_non_finite_numbers() -> None:
    fields = [
        "index",
        "name",
        "utilization.gpu",
        "power.draw",
        "pcie.link.width.current",
        "clocks_event_reasons.active",
    ]
    text = f"0, H100, {HUGE}, inf, {HUGE}, 0x{'f' * 5000}\n1, H100, nan, 1e999, 16, 0x4\n"
    r = parse_query_csv(text, fields)
    g0, g1 = r.gpus
    assert g0.utilization_pct is None and g0.power_w is None and g0.pcie_width is None
    assert g1.utilization_pct is None and g1.power_w is None and g1.pcie_width == 16
    assert g1.throttle_reasons == ("sw_power_cap",)
