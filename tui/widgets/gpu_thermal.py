"""Thermal panel: GPU and NIC temperatures, module high-temperature events, CPU throttling."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from collectors.samples import HostSample
from collectors.vocabulary import Metric
from fabtop.core.state import FabricState
from tui import format as fmt
from tui.widgets.gpu_table import gpu_section_problem, is_thermal
from tui.widgets.quiet_static import QuietStatic

MODULE_EVENTS = Metric.MODULE_HIGH_TEMP_EVENTS
HOST_W = 10  # the host name's column: every line's readings start at the same place


def _events(s: HostSample) -> int | None:
    """Module high-temperature events summed over the host's links (None: not reported)."""
    if not any(MODULE_EVENTS in ln.metrics for ln in s.links.values()):
        return None
    total = 0
    for ln in s.links.values():
        v = ln.metrics.get(MODULE_EVENTS)
        total += v if isinstance(v, int) else 0
    return total


def _span(temps: Sequence[float]) -> str:
    lo, hi = fmt.celsius(min(temps)), fmt.celsius(max(temps))
    return lo if lo == hi else f"{lo[:-1]}-{hi}"  # 55-60°


def host_thermal_line(s: HostSample, cpu_rate: float | None, compact: bool = False) -> Text:
    """One host's temperatures and throttling as one line.

    ``compact`` (a narrow terminal, or 8 GPUs a host): the range of the GPU and NIC
    temperatures, and every GPU in thermal slowdown by name: the answer stays on screen.
    """
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{s.host:<{HOST_W}}", "bold")
    problem = gpu_section_problem(s)
    if problem is not None:
        t.append(f" {problem} ", "bold yellow")
    hot = [g for g in s.gpus if is_thermal(g)]
    temps = [g.temperature_c for g in s.gpus if g.temperature_c is not None]
    if compact and temps:
        t.append(f" {len(s.gpus)} GPU{'s' if len(s.gpus) != 1 else ''} {_span(temps)}")
    for g in s.gpus if not compact else hot:
        style = "bold red" if is_thermal(g) else ""
        t.append(f" gpu{g.index} {fmt.celsius(g.temperature_c)}", style)
        if g.memory_temperature_c is not None:
            t.append(f"/{fmt.celsius(g.memory_temperature_c)}", style)
        if is_thermal(g):
            t.append(" SLOWDOWN", "bold red")
    nics = [(lid, ln) for lid, ln in sorted(s.links.items()) if ln.temperature_c is not None]
    if nics:
        t.append("  NIC", "dim")
        if compact:
            temps = [ln.temperature_c for _, ln in nics if ln.temperature_c is not None]
            t.append(f" {_span(temps)}")
        else:
            for lid, ln in nics:
                t.append(f" {ln.netdev or lid} {fmt.celsius(ln.temperature_c)}")
    events = _events(s)
    if events is not None and (events or not compact):
        t.append("  module high-temp events ", "dim")
        t.append(str(events), "bold red" if events else "")
    if s.cpu_throttle_count is not None:
        t.append("  CPU throttled ", "dim")
        t.append(f"{s.cpu_throttle_count:,}")
        if cpu_rate is not None:
            t.append(f" (+{fmt.si(cpu_rate)}/s)", "bold red" if cpu_rate > 0 else "dim")
    return t


def thermal_text(state: FabricState, width: int, max_lines: int) -> Text:
    """The panel: a title and one line per host, each in ``width`` cells where it can be.

    A host whose whole line does not fit gets the compact line. With more hosts than
    ``max_lines - 1``, the hosts with a GPU in thermal slowdown or a GPU reading problem
    come first and the rest are counted on the last line, never dropped silently.
    """
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append("thermal", "bold")
    lines: list[tuple[bool, Text]] = []
    for hs in state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        rate = hs.rates.cpu_throttle_per_s if hs.rates is not None else None
        line = host_thermal_line(s, rate)
        if line.cell_len > width:
            line = host_thermal_line(s, rate, compact=True)
        urgent = any(is_thermal(g) for g in s.gpus) or gpu_section_problem(s) is not None
        lines.append((urgent, line))
    room = max(1, max_lines - 1)
    if len(lines) > room:
        kept = sorted(range(len(lines)), key=lambda i: not lines[i][0])[: room - 1]
        shown = [lines[i][1] for i in sorted(kept)]
        rest = len(lines) - len(shown)
        more = Text(f"… {rest} more host{'s' if rest != 1 else ''}", "dim")
        if not any(lines[i][0] for i in range(len(lines)) if i not in kept):
            more.append(", none slowed down for heat", "dim")
        shown.append(more)
    else:
        shown = [line for _, line in lines]
    for line in shown:
        out.append("\n")
        out.append_text(line)
    return out


class ThermalPanel(QuietStatic):
    """One line per host: what is hot and what is being slowed down by heat."""

    def show(self, state: FabricState, width: int, max_lines: int) -> None:
        """Redraw from the state in ``width`` cells and at most ``max_lines`` lines."""
        # One line per host, cut at the edge: a wrapped tail would read as another host.
        self.update(thermal_text(state, width, max_lines))
