"""GPUs (key 3): every GPU of every host, throttle reasons in words, and a thermal panel."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer

from tui.context import ViewContext
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.gpu_table import GpuTable
from tui.widgets.gpu_thermal import ThermalPanel
from tui.widgets.top_bar import TopBar


class GpuScreen(DataScreen):
    """Per host and GPU: load, memory, power, clocks, temperatures, PCIe and what limits clocks."""

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="gpus")
        self._stamp: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield GpuTable(id="gpus")
        yield ThermalPanel(id="thermal")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(GpuTable).focus()
        self.refresh_view()

    def refresh_view(self) -> None:
        """Sync the table and the thermal panel with the state."""
        super().refresh_view()
        ctx = self.ctx
        self.query_one(TopBar).show(summary(ctx.state, ctx.now(), ctx.interval), ctx.paused, None)
        # The panel's CSS caps it at 40 % of the screen, its top border included.
        width, height = self.size.width or 80, self.size.height or 24
        stamp = (self.frames_used(), width, height)
        if stamp == self._stamp:  # 512 GPUs at 64 x 8: no frame since, nothing to sync
            return
        self._stamp = stamp
        self.query_one(GpuTable).show(ctx.state)
        self.query_one(ThermalPanel).show(ctx.state, width - 2, max(2, int(height * 0.4) - 1))

    def on_resize(self) -> None:
        self.refresh_view()

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)
