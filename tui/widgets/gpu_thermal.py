"""Thermal panel: GPU and NIC temperatures, module high-temperature events, CPU throttling."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from collectors.samples import HostSample
from collectors.vocabulary import Metric
from fabtop.core.state import FabricState
from tui import format as fmt
from tui.widgets.gpu_table import gpu_section_problem, is_thermal

MODULE_EVENTS = Metric.MODULE_HIGH_TEMP_EVENTS


def host_thermal_line(s: HostSample, cpu_rate: float | None) -> Text:
    """One host's temperatures and throttling as one line."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{s.host:<10}", "bold")
    problem = gpu_section_problem(s)
    if problem is not None:
        t.append(f" {problem} ", "bold yellow")
    for g in s.gpus:
        style = "bold red" if is_thermal(g) else ""
        t.append(f" gpu{g.index} {fmt.celsius(g.temperature_c)}", style)
        if g.memory_temperature_c is not None:
            t.append(f"/{fmt.celsius(g.memory_temperature_c)}", style)
        if is_thermal(g):
            t.append(" SLOWDOWN", "bold red")
    nics = [(lid, ln) for lid, ln in sorted(s.links.items()) if ln.temperature_c is not None]
    if nics:
        t.append("  NIC", "dim")
        for lid, ln in nics:
            t.append(f" {ln.netdev or lid} {fmt.celsius(ln.temperature_c)}")
    events = 0
    for ln in s.links.values():
        v = ln.metrics.get(MODULE_EVENTS)
        events += v if isinstance(v, int) else 0
    has_events = any(MODULE_EVENTS in ln.metrics for ln in s.links.values())
    if has_events:
        t.append("  module high-temp events ", "dim")
        t.append(str(events), "bold red" if events else "")
    if s.cpu_throttle_count is not None:
        t.append("  CPU throttled ", "dim")
        t.append(f"{s.cpu_throttle_count:,}")
        if cpu_rate is not None:
            t.append(f" (+{fmt.si(cpu_rate)}/s)", "bold red" if cpu_rate > 0 else "dim")
    return t


class ThermalPanel(Static):
    """One line per host: what is hot and what is being slowed down by heat."""

    def show(self, state: FabricState) -> None:
        """Redraw from the state."""
        # One line per host, cut at the edge: a wrapped tail would read as another host.
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append("thermal", "bold")
        for hs in state.hosts.values():
            s = hs.sample
            if s is None:
                continue
            out.append("\n")
            rate = hs.rates.cpu_throttle_per_s if hs.rates is not None else None
            out.append_text(host_thermal_line(s, rate))
        self.update(out)
