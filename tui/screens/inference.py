"""Inference (key 4): every server's token rates, queue and latency quantiles, cluster total."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer

from tui.context import ViewContext
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.gpu_inference_table import InferenceTable
from tui.widgets.top_bar import TopBar


class InferenceScreen(DataScreen):
    """Generated and prompt tokens/s from the servers' counters, running/waiting, TTFT, ITL."""

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="inference")

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield InferenceTable(id="inference")
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

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)
