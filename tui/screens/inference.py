"""Inference (key 4): every server's token rates, queue and latency quantiles, cluster total."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from fabtop.core.state import FabricState
from tui.context import ViewContext
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.exo_cluster import node_names, placement_line
from tui.widgets.gpu_inference_table import InferenceTable
from tui.widgets.top_bar import TopBar


def cluster_lines(state: FabricState) -> list[Text]:
    """Why each unknown rate is unknown (whole, wrapped), then each exo model's placement."""
    out: list[Text] = []
    for name, hs in state.hosts.items():
        for inf in hs.sample.inference if hs.sample is not None else []:
            if inf.rate_unknown is not None:
                out.append(
                    Text(
                        f"{name} {inf.server or ''}: token rate unknown: {inf.rate_unknown}",
                        "yellow",
                    )
                )
    for name, hs in state.hosts.items():
        for inf in hs.sample.inference if hs.sample is not None else []:
            if inf.cluster is None:
                continue
            names = node_names(inf.cluster)
            for inst in inf.cluster.instances:
                line = Text(f"exo on {name}: ", "dim")
                line.append_text(placement_line(inst, names))
                out.append(line)
    return out


class InferenceScreen(DataScreen):
    """Generated and prompt tokens/s from the servers' counters, running/waiting, TTFT, ITL."""

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="inference")

    DEFAULT_CSS = """
    InferenceScreen #inference-clusters { height: auto; max-height: 10; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield InferenceTable(id="inference")
        # exo clusters: where each model's runners sit (hidden when no host runs exo)
        yield Static(id="inference-clusters")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(InferenceTable).focus()
        self.refresh_view()

    def refresh_view(self) -> None:
        """Sync the table with the state."""
        super().refresh_view()
        ctx = self.ctx
        self.query_one(TopBar).show(summary(ctx.state, ctx.now(), ctx.interval), ctx.paused, None)
        self.query_one(InferenceTable).show(ctx.state)
        lines = cluster_lines(ctx.state)
        clusters = self.query_one("#inference-clusters", Static)
        clusters.display = bool(lines)
        if lines:
            clusters.update(Group(*lines))

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)
