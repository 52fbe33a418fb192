"""Simulated NVIDIA GPUs: real ``--query-gpu`` rows evolved under load (``csv,nounits``).

Base rows (every static value below) come from
``../shared/fixtures/nvidia_smi/captures_utkuozdemir/``:
``query_gpu_csv_load__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt`` and
``query_gpu_csv_load__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt``
(header row = field names, units dropped as ``nounits`` does).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Field -> value as nvidia-smi prints it with ``nounits``; "[N/A]" where the capture has it.
H100_ROW: dict[str, str] = {
    "driver_version": "590.48.01",
    "name": "NVIDIA H100 80GB HBM3",
    "pci.bus_id": "00000000:00:09.0",
    "pcie.link.gen.current": "5",
    "pcie.link.gen.max": "5",
    "pcie.link.width.current": "16",
    "pcie.link.width.max": "16",
    "fan.speed": "[N/A]",
    "pstate": "P0",
    "memory.total": "81559",
    "memory.used": "19818",
    "utilization.gpu": "100",
    "utilization.memory": "11",
    "temperature.gpu": "59",
    "temperature.memory": "54",
    "power.draw": "631.95",
    "power.limit": "700.00",
    "enforced.power.limit": "700.00",
    "clocks.current.sm": "1980",
    "clocks.current.graphics": "1980",
    "clocks.current.memory": "2619",
    "clocks.max.sm": "1980",
    "compute_cap": "9.0",
}
RTX4080S_ROW: dict[str, str] = {
    "driver_version": "595.71.05",
    "name": "NVIDIA GeForce RTX 4080 SUPER",
    "pci.bus_id": "00000000:01:00.0",
    "pcie.link.gen.current": "4",
    "pcie.link.gen.max": "4",
    "pcie.link.width.current": "16",
    "pcie.link.width.max": "16",
    "fan.speed": "0",
    "pstate": "P2",
    "memory.total": "16376",
    "memory.used": "1474",
    "utilization.gpu": "7",
    "utilization.memory": "2",
    "temperature.gpu": "46",
    "temperature.memory": "N/A",
    "power.draw": "84.24",
    "power.limit": "320.00",
    "enforced.power.limit": "320.00",
    "clocks.current.sm": "2805",
    "clocks.current.graphics": "2805",
    "clocks.current.memory": "11251",
    "clocks.max.sm": "3165",
    "compute_cap": "8.9",
}
PROFILES = {"h100": H100_ROW, "rtx4080s": RTX4080S_ROW}

# Names nvidia-smi accepts for the same field (``--help-query-gpu``).
_ALIASES = {
    "clocks.sm": "clocks.current.sm",
    "clocks.gr": "clocks.current.graphics",
    "clocks.mem": "clocks.current.memory",
}
SW_THERMAL = 0x20  # nvmlClocksThrottleReasonSwThermalSlowdown
HW_THERMAL = 0x40  # nvmlClocksThrottleReasonHwThermalSlowdown
THROTTLE_AT_C = 85.0
HOT_C = 90.0


def _canonical(field: str) -> str:
    f = field.strip()
    if f.startswith("clocks_throttle_reasons."):
        f = "clocks_event_reasons." + f[len("clocks_throttle_reasons.") :]
    return _ALIASES.get(f, f)


@dataclass(slots=True)
class SimGpu:
    """One GPU: a base row plus the values that move with load and heat."""

    index: int
    profile: str
    uuid: str
    bus_id: str
    util: float = 0.0
    temp_c: float = 0.0
    power_w: float = 0.0
    sm_mhz: float = 0.0
    mem_used_mib: float = 0.0
    reasons: int = 0
    sw_thermal_us: float = 0.0

    @property
    def base(self) -> dict[str, str]:
        """The captured row this GPU evolves."""
        return PROFILES[self.profile]

    def step(self, load: float, heat: float, noise: float, dt: float) -> None:
        """Evolve one cell: ``load`` 0..1 (token rate share), ``heat`` 0..1 (of the way to 90 C)."""
        b = self.base
        limit = float(b["enforced.power.limit"])
        max_sm = float(b["clocks.max.sm"])
        idle_temp = 38.0
        loaded_temp = 63.0 if self.profile == "h100" else 66.0
        temp = idle_temp + (loaded_temp - idle_temp) * load + 1.5 * noise
        temp += (HOT_C + 0.8 * noise - temp) * heat
        self.temp_c = temp
        self.reasons = 0
        throttle = 1.0
        if temp >= THROTTLE_AT_C:
            self.reasons = SW_THERMAL | (HW_THERMAL if temp >= HOT_C - 1.0 else 0)
            throttle = 0.62
            self.sw_thermal_us += dt * 1e6
        self.util = min(100.0, max(0.0, 97.0 * load + 2.0 * noise)) if load > 0.02 else 0.0
        self.sm_mhz = max_sm * throttle if load > 0.02 else 345.0
        self.power_w = min(limit, limit * (0.1 + 0.8 * load * throttle) + 6.0 * noise)
        self.mem_used_mib = float(b["memory.total"]) * 0.92

    def csv_row(self, fields: tuple[str, ...], clock_s: float) -> str:
        """One ``csv,noheader,nounits`` line for ``fields``."""
        return ", ".join(self.values(fields, clock_s))

    def values(self, fields: tuple[str, ...], clock_s: float) -> list[str]:
        """The value of each of ``fields`` as nvidia-smi prints it with ``nounits``."""
        b = self.base
        live = {
            "timestamp": time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(clock_s))
            + f".{int(clock_s * 1000) % 1000:03d}",
            "index": str(self.index),
            "uuid": self.uuid,
            "pci.bus_id": self.bus_id,
            "utilization.gpu": f"{self.util:.0f}",
            "utilization.memory": f"{self.util * 0.3:.0f}",
            "temperature.gpu": f"{self.temp_c:.0f}",
            "power.draw": f"{self.power_w:.2f}",
            "power.draw.average": f"{self.power_w:.2f}",
            "power.draw.instant": f"{self.power_w:.2f}",
            "clocks.current.sm": f"{self.sm_mhz:.0f}",
            "clocks.current.graphics": f"{self.sm_mhz:.0f}",
            "memory.used": f"{self.mem_used_mib:.0f}",
            "memory.free": f"{float(b['memory.total']) - self.mem_used_mib:.0f}",
            "clocks_event_reasons.active": f"0x{self.reasons:016X}",
            "clocks_event_reasons.sw_thermal_slowdown": (
                "Active" if self.reasons & SW_THERMAL else "Not Active"
            ),
            "clocks_event_reasons.hw_thermal_slowdown": (
                "Active" if self.reasons & HW_THERMAL else "Not Active"
            ),
            "clocks_event_reasons_counters.sw_thermal_slowdown": f"{self.sw_thermal_us:.0f}",
        }
        if self.profile == "h100":
            live["temperature.memory"] = f"{self.temp_c - 5.0:.0f}"
        out = []
        for f in fields:
            c = _canonical(f)
            if c in live:
                out.append(live[c])
            elif c in b:
                out.append(b[c])
            elif c.startswith("clocks_event_reasons."):
                out.append("Not Active")
            else:
                out.append("[N/A]")
        return out
