"""GPU rules: sustained thermal slowdown, hot GPU."""

from __future__ import annotations

from collectors.samples import GpuSample
from tests.unit.rules_support import Fabric, by_rule


def gpu_fabric() -> tuple[Fabric, GpuSample]:
    fab = Fabric()
    fab.port("node4")
    g = GpuSample(index=1, temperature_c=70.0, sm_clock_mhz=1980.0)
    fab.gpus["node4"] = [GpuSample(index=0, temperature_c=65.0), g]
    return fab, g


def test_thermal_slowdown_sustained_fires_within_two_ticks() -> None:
    fab, g = gpu_fabric()
    fab.run(2)
    g.throttle_reasons, g.temperature_c, g.sm_clock_mhz = ("sw_thermal_slowdown",), 84.0, 1230.0
    assert not by_rule(fab.tick(), "gpu_thermal_slowdown")
    found = by_rule(fab.tick(), "gpu_thermal_slowdown")
    assert [(f.subject, f.severity) for f in found] == [("node4/gpu1", "warning")]
    assert "1230 MHz" in found[0].summary
    g.throttle_reasons = ("sw_thermal_slowdown", "hw_thermal_slowdown")
    assert by_rule(fab.tick(), "gpu_thermal_slowdown")[0].severity == "critical"
    g.throttle_reasons = ()
    fab.run(4)
    assert not by_rule(fab.findings, "gpu_thermal_slowdown")


def test_power_cap_is_not_a_thermal_problem() -> None:
    fab, g = gpu_fabric()
    g.throttle_reasons = ("sw_power_cap",)
    assert not by_rule(fab.run(5), "gpu_thermal_slowdown")


def test_hot_gpu_core_and_memory() -> None:
    fab, g = gpu_fabric()
    fab.run(2)
    g.temperature_c, g.memory_temperature_c = 88.0, 96.0
    fab.run(2)
    found = by_rule(fab.findings, "gpu_hot")
    assert [f.subject for f in found] == ["node4/gpu1"]
    assert "core 88" in found[0].summary and "memory 96" in found[0].summary
    g.temperature_c, g.memory_temperature_c = 75.0, 80.0
    fab.run(4)
    assert not by_rule(fab.findings, "gpu_hot")
