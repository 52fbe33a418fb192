"""What every data screen shares: the view context and one refresh entry point."""

from __future__ import annotations

from textual.screen import Screen

from tui.context import ViewContext


class DataScreen(Screen[None]):
    """A screen over FabricState; only the visible one is refreshed, by the app."""

    def __init__(self, ctx: ViewContext, name: str | None = None) -> None:
        super().__init__(name=name)
        self.ctx = ctx
        self.refreshes = 0

    def refresh_view(self) -> None:
        """Redraw from the current state (called at most once per tick by the app)."""
        self.refreshes += 1

    def show_flags(self) -> None:
        """The pause/delta markers changed: redraw them without new data."""

    def on_screen_resume(self) -> None:
        # Background screens were not refreshed; catch up as soon as one is shown.
        if not self.ctx.paused:
            self.refresh_view()
        self.show_flags()
