"""Every data screen at 80x24 and 200x50, over the longest strings the fixtures and real
life give: no text is cut without "…", no digit is dropped, no column is off screen.

A screen is one line in ``SCREENS``: its name and the keys that lead to it from the
overview. What is checked is what a user reads:

- each table cell as drawn in its column is the whole text, or a prefix of it ending in
  "…" (a middle cut, "node1/enp2…f1np1v0", keeps a prefix and a suffix), headers too;
- every table fits its widget's width: no column needs a sideways scroll;
- each Static panel shows each of its lines whole (wrapped or not), or cut with "…";
  a line that does not appear at all is a cut too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rich.text import Text
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Footer, Static

from collectors.samples import GpuSample, HostSample, InferenceSample, LinkSample
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from tests.ui.fabric import T0, FakeClock, _roce
from tui.app import FabtopApp
from tui.context import ViewContext
from tui.widgets.keyed_table import KeyedTable
from tui.widgets.virtual_table import VirtualTable


@dataclass(frozen=True)
class Visit:
    """A screen: its name and the keys pressed on the overview to reach it."""

    name: str
    keys: tuple[str, ...] = ()


SCREENS: tuple[Visit, ...] = (
    Visit("overview"),
    Visit("pfc", ("2",)),
    Visit("gpus", ("3",)),
    Visit("inference", ("4",)),
    Visit("timeline", ("5",)),
    Visit("link detail", ("enter",)),
    Visit("help", ("question_mark",)),
    Visit("findings", ("6",)),
    Visit("host detail", ("i",)),
)
SIZES = ((80, 24), (200, 50))

# The longest strings the fixtures and real clusters give.
HOSTS = ("gpu-node-017.cluster", "node2")
NETDEVS = ("enp225s0f1np1v0", "enp65s0f0np0")  # 15 characters: IFNAMSIZ - 1
GPU_NAMES = ("NVIDIA GeForce RTX 4090 D", "AMD Instinct MI50/MI60", "NVIDIA H100 80GB HBM3")
MODEL = "meta-llama/Llama-3.1-405B-Instruct-FP8"
U64_MAX = 18_446_744_073_709_551_615  # a 20-digit counter, 26 characters with separators


def _link(host: str, netdev: str, tick: int) -> LinkSample:
    link = _roce(
        netdev,
        tick,
        120.0,
        96.0,
        10.0,
        pause_p3=90_000 if host == HOSTS[0] else 0,
        paused_us_p3=995_000 if host == HOSTS[0] else 0,
    )
    # a counter near the top of a u64, moving every tick (so the link detail lists it)
    link.counters["ethtool"]["rx_vport_rdma_unicast_bytes"] = U64_MAX - 10_000 + tick
    return link


def _gpus(tick: int) -> list[GpuSample]:
    out = []
    for i in range(8):
        hot = i == 7
        out.append(
            GpuSample(
                index=i,
                name=GPU_NAMES[i % len(GPU_NAMES)],
                bus_id=f"00000000:{0x18 + i:02X}:00.0",
                vendor="amd" if "AMD" in GPU_NAMES[i % len(GPU_NAMES)] else "nvidia",
                utilization_pct=100.0,
                memory_used_mib=81_000.0 + tick,
                memory_total_mib=81_559.0,
                power_w=699.9,
                power_limit_w=700.0,
                temperature_c=94.0 if hot else 71.0,
                memory_temperature_c=88.0,
                sm_clock_mhz=1155.0 if hot else 1980.0,
                mem_clock_mhz=11251.0,
                fan_pct=100.0,
                pcie_rx_kbps=26_000_000.0,
                pcie_tx_kbps=25_000_000.0,
                pcie_gen=5,
                pcie_width=16,
                throttle_reasons=(
                    ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown")
                    if hot
                    else ()
                ),
            )
        )
    return out


def _inference(host: str, tick: int, clock: float) -> list[InferenceSample]:
    url = f"http://{host}:30000/metrics"
    return [
        InferenceSample(
            url=url,
            server="vllm",
            model=MODEL,
            generated_tokens_total=123_456.0 * tick,
            prompt_tokens_total=654_321.0 * tick,
            requests_running=1024.0,
            requests_waiting=4096.0,
            read_s=clock,
        ),
        InferenceSample(
            url=f"http://{host}:8000/v1/metrics?format=prometheus",
            server="sglang",
            model="Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int8",
            error="GET /metrics: connection refused after 3 attempts (timeout 2 s)",
            read_s=clock,
        ),
    ]


def long_fabric(ticks: int = 30) -> tuple[FabricState, FakeClock]:
    """Two hosts with the longest names, 8 GPUs each, two servers each, u64 counters."""
    clock = FakeClock()
    state = FabricState([HostConfig(name=h) for h in HOSTS], rules=make_evaluator(), clock=clock)
    for tick in range(1, ticks + 1):
        clock.t += 1.0
        for host in HOSTS:
            links = {n: _link(host, n, tick) for n in NETDEVS}
            state.apply_sample(
                host,
                HostSample(
                    host=host,
                    seq=tick,
                    clock_ns=int((T0 + tick) * 1e9),
                    uptime_s=5000.0 + tick,
                    links=links,
                    gpus=_gpus(tick),
                    inference=_inference(host, tick, clock.t),
                    cpu_throttle_count=12_345_678_901 + tick,
                ),
            )
    return state, clock


def cut_problem(shown: str, full: str) -> str | None:
    """Why ``shown`` (a cell as drawn) is not an honest view of ``full``, or None."""
    shown, full = shown.strip(), full.strip()
    if shown == full:
        return None
    if "…" in shown and "…" not in full:
        head, tail = shown.split("…", 1)
        if full.startswith(head) and full.endswith(tail.strip()):
            return None
    return f"{full!r} shows as {shown!r}"


def table_problems(table: KeyedTable | VirtualTable[Any]) -> Iterator[str]:
    """Cells and headers cut without "…", and columns beyond the widget's width."""
    where = f"#{table.id or type(table).__name__}"
    if isinstance(table, VirtualTable):
        labels = list(table.labels().values())
    else:
        labels = [c.label.plain for c in table.ordered_columns]
    for label, shown in zip(labels, table.drawn_cells(-1), strict=True):
        problem = cut_problem(shown, label)
        if problem:
            yield f"{where} header: {problem}"
    for i in range(table.row_count):
        if isinstance(table, VirtualTable):
            key = table.row_keys()[i]
            cells = [table.get_cell(key, c).plain for c in table.column_keys]
        else:
            cells = [c.plain if c is not None else "" for c in table.get_row_at(i)]
        for key, full, shown in zip(table.column_keys, cells, table.drawn_cells(i), strict=True):
            problem = cut_problem(shown, full)
            if problem:
                yield f"{where} row {i} {key}: {problem}"
    visible = table.scrollable_content_region.width
    if table.virtual_size.width > visible:
        yield (
            f"{where}: {table.virtual_size.width} columns wide in {visible}: "
            f"{', '.join(table.column_keys)}"
        )


def static_problems(widget: Static) -> Iterator[str]:
    """Lines of a Static that are cut without "…" or not shown at all."""
    where = f"#{widget.id or type(widget).__name__}"
    content = widget.render()
    if not isinstance(content, Text | Content):
        return  # a Rich table or the like: no lines of text to compare
    full = [ln for ln in (_squash(x) for x in str(content).splitlines()) if ln]
    # the lines inside the border and padding (a border title is not the content)
    inner, outer = widget.content_region, widget.region
    strips = widget.render_lines(
        Region(inner.x - outer.x, inner.y - outer.y, inner.width, inner.height)
    )
    shown = [s for s in (_squash(s.text) for s in strips) if s]
    i = 0
    for line in full:
        rest = line
        while rest:
            if i >= len(shown):
                yield f"{where}: {line!r} is not on screen"
                return
            got = shown[i]
            i += 1
            if rest.startswith(got):
                rest = rest[len(got) :]
            elif got.endswith("…") and rest.startswith(got[:-1]):
                rest = ""
            else:
                yield f"{where}: {line!r} shows as {got!r}"
                return


def _squash(text: str) -> str:
    # Wrapping and padding move spaces around; the words and their order are what count.
    return "".join(text.split())


def _shown(widget: Widget) -> bool:
    return widget.display and widget.visible and widget.region.area > 0


async def problems_on(visit: Visit, size: tuple[int, int]) -> list[str]:
    state, clock = long_fabric()
    app = FabtopApp(ViewContext(state, interval=1.0, clock=clock))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for key in visit.keys:
            await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        found: list[str] = []
        for table in [*screen.query(KeyedTable), *screen.query(VirtualTable)]:
            if _shown(table):
                found += table_problems(table)
        for static in screen.query(Static):
            if _shown(static) and not any(isinstance(a, Footer) for a in static.ancestors):
                found += static_problems(static)
        return found


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("visit", SCREENS, ids=lambda v: v.name)
async def test_nothing_is_cut_without_an_ellipsis(visit: Visit, size: tuple[int, int]) -> None:
    assert await problems_on(visit, size) == []


def test_the_check_sees_a_silent_cut() -> None:
    assert cut_problem("1,889,455,255,01", "1,889,455,255,012") is not None
    assert cut_problem("http://127.0.0.1:8000/metr", "http://127.0.0.1:8000/metrics")
    assert cut_problem("meta-llama/Llama-3.…", MODEL) is None
    assert cut_problem("node1/enp2…f1np1v0", "node1/enp225s0f1np1v0") is None
    assert cut_problem("  42", "42") is None
