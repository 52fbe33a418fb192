"""GPU table: one row per host and GPU, throttle reasons spelled out."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from collectors.samples import GpuSample, HostSample
from fabtop.core.state import FabricState
from tui import format as fmt
from tui.widgets.keyed_table import Column, FixedTable

# Parser names (nvidia_smi REASON_BITS; amd_smi "throttled") in the words nvidia-smi -q uses.
REASON_TEXT: dict[str, str] = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "applications clocks setting",
    "sw_power_cap": "SW power cap",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "SW thermal slowdown",
    "hw_thermal_slowdown": "HW thermal slowdown",
    "hw_power_brake_slowdown": "HW power brake slowdown",
    "display_clock_setting": "display clock setting",
    "throttled": "throttled (reason not reported)",
}
BOTH_THERMAL = ("hw_thermal_slowdown", "sw_thermal_slowdown")
BOTH_THERMAL_TEXT = "HW+SW thermal slowdown"
GPU_SECTIONS = ("gpu_nvidia", "gpu_amd")

# Fixed columns for numbers, flexible ones for names; at narrow widths the least telling
# go first (highest ``drop``). Temperatures and what limits the clocks (the screen's answer:
# is a GPU slowed down for heat?) are never dropped.
COLUMNS = (
    Column("host", "Host", None, False, flex=True, min_width=8),
    Column("gpu", "GPU", 3, False),
    # "NVIDIA GeForce RTX 4090 D" whole where there is room: 4080 is not 4090
    Column("name", "Name", None, False, flex=True, min_width=10, drop=5),
    Column("util", "Util", 4, drop=3),
    Column("mem", "Mem used/total", 11, short="Mem", drop=7),
    Column("power", "W/limit", 7, drop=6),
    Column("clocks", "SM/mem MHz", 9, short="MHz", drop=4),
    Column("temp", "Temp/mem", 7, short="Temp"),
    Column("throttle", "Clocks limited by", None, False, flex=True, min_width=22),
    Column("fan", "Fan", 4, drop=8),
    Column("pcie", "PCIe", 6, drop=9),
    Column("pcie_io", "PCIe rx/tx", 11, drop=10),
    Column("bus", "Bus", 12, False, drop=11),
)


def spell_reasons(reasons: Iterable[str]) -> str:
    """Throttle reasons as words ("HW thermal slowdown, SW power cap").

    Both thermal slowdowns read as one, "HW+SW thermal slowdown": the answer of the
    screen then fits the narrowest Clocks column whole.
    """
    got = list(reasons)
    both = all(r in got for r in BOTH_THERMAL)
    words: list[str] = []
    for r in got:
        word = (
            BOTH_THERMAL_TEXT
            if both and r in BOTH_THERMAL
            else REASON_TEXT.get(r, r.replace("_", " "))
        )
        if word not in words:
            words.append(word)
    return ", ".join(words)


def is_thermal(g: GpuSample) -> bool:
    """The GPU's clocks are held down for heat."""
    return any("thermal" in r for r in g.throttle_reasons)


def gpu_section_problem(sample: HostSample) -> str | None:
    """Why the host's GPU data is not current (nvidia-smi hung or failed), or None."""
    for sec in sample.sections:
        if sec.kind in GPU_SECTIONS and sec.status != "ok" and sec.status != "missing":
            detail = f": {sec.detail}" if sec.detail else ""
            return f"GPU data {sec.status}{detail}"
    return None


def short_bus(bus_id: str | None) -> str:
    """nvidia-smi's 8-digit PCI domain in the usual 4-digit form (0000:18:00.0)."""
    if bus_id is None:
        return fmt.DASH
    domain, sep, rest = bus_id.partition(":")
    if sep and len(domain) == 8 and domain.startswith("0000"):
        return f"{domain[4:]}:{rest}".lower()
    return bus_id.lower()


def _num(v: float | None, digits: int = 0) -> str:
    return fmt.DASH if v is None else f"{v:.{digits}f}"


def _pair(a: float | None, b: float | None, digits: int = 0) -> str:
    if a is None and b is None:
        return fmt.DASH
    return f"{_num(a, digits)}/{_num(b, digits)}"


def _mem(g: GpuSample) -> str:
    if g.memory_used_mib is None and g.memory_total_mib is None:
        return fmt.DASH
    gib = [None if v is None else v / 1024 for v in (g.memory_used_mib, g.memory_total_mib)]
    return f"{_num(gib[0], 1)}/{_num(gib[1], 0)} GiB"


def gpu_cells(g: GpuSample) -> dict[str, Text]:
    """One GPU's row; colour only where something is wrong."""
    thermal = is_thermal(g)
    reasons = spell_reasons(g.throttle_reasons)
    r_style = "bold red" if thermal else ("yellow" if reasons else "")
    t_style = "bold red" if thermal else ""
    pcie = f"G{g.pcie_gen}x{g.pcie_width}" if g.pcie_gen or g.pcie_width else fmt.DASH
    io = fmt.DASH
    if g.pcie_rx_kbps is not None or g.pcie_tx_kbps is not None:
        io = "/".join(
            fmt.si(None if v is None else v * 1e3) + "B" if v is not None else fmt.DASH
            for v in (g.pcie_rx_kbps, g.pcie_tx_kbps)
        )
    temp = fmt.celsius(g.temperature_c)
    if g.memory_temperature_c is not None:
        temp += f"/{fmt.celsius(g.memory_temperature_c)}"
    util = fmt.DASH if g.utilization_pct is None else f"{g.utilization_pct:.0f}%"
    fan = fmt.DASH if g.fan_pct is None else f"{g.fan_pct:.0f}%"
    return {
        "gpu": Text(str(g.index)),
        "name": Text(g.name or fmt.DASH),
        "bus": Text(short_bus(g.bus_id), "dim"),
        "util": Text(util, justify="right"),
        "mem": Text(_mem(g), justify="right"),
        "power": Text(_pair(g.power_w, g.power_limit_w), justify="right"),
        "clocks": Text(_pair(g.sm_clock_mhz, g.mem_clock_mhz), t_style, justify="right"),
        "temp": Text(temp, t_style, justify="right"),
        "fan": Text(fan, justify="right"),
        "pcie": Text(pcie, justify="right"),
        "pcie_io": Text(io, justify="right"),
        # macmon (Apple GPUs) says nothing of clock limits: unknown, never "none".
        "throttle": Text(
            reasons or (fmt.DASH if g.vendor == "apple" else "none"), r_style or "dim"
        ),
    }


def gpu_rows(state: FabricState) -> list[tuple[str, dict[str, Text]]]:
    """Rows of every host's GPUs; a host whose GPU reading failed gets one row saying so."""
    rows: list[tuple[str, dict[str, Text]]] = []
    for name, hs in state.hosts.items():
        s = hs.sample
        if s is None:
            continue
        problem = gpu_section_problem(s)
        if problem is not None:
            rows.append(
                (
                    f"{name}\x1fstale",
                    {"host": Text(name, "bold"), "name": Text(problem, "bold yellow")},
                )
            )
        for g in s.gpus:
            cells = gpu_cells(g)
            cells["host"] = Text(name)
            rows.append((f"{name}\x1f{g.index}", cells))
    return rows


class GpuTable(FixedTable):
    """Every GPU of every host."""

    COLUMNS = COLUMNS

    def show(self, state: FabricState) -> None:
        """Sync with the state."""
        self.show_rows(gpu_rows(state))
