"""Overview (key 1): top line, hosts, links with sparklines, findings."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input

from tui import format as fmt
from tui.context import ViewContext
from tui.rows.links import host_rows, link_rows, summary
from tui.screens.base import DataScreen
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable
from tui.widgets.top_bar import TopBar


def delta_marker(ctx: ViewContext) -> str | None:
    """The top line's delta-mode marker ("since r 37s"), or None outside delta mode."""
    if not ctx.delta_mode:
        return None
    if ctx.baseline_at is None:
        return "since r"
    return f"since r {fmt.age(ctx.now() - ctx.baseline_at)}"


class OverviewScreen(DataScreen):
    """Every host and link at a glance."""

    BINDINGS = [
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("o", "sort", "sort"),
        Binding("v", "toggle_virtual", "virtual"),
        Binding("enter", "open_link", "link detail", show=False),
        Binding("escape", "clear_filter", "clear filter", show=False),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="overview")
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield HostTable(id="hosts")
        yield LinkTable(id="links")
        yield FindingsPanel(id="findings")
        yield Input(placeholder="filter hosts and links (Enter keeps it, Esc clears)",
                    id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one(LinkTable).focus()
        self.refresh_view()

    def on_resize(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Sync every panel with the state (cells change in place, rows by set)."""
        super().refresh_view()
        ctx = self.ctx
        state, now, ival = ctx.state, ctx.now(), ctx.interval
        width = self.size.width or 120
        needle = self.filter_text.lower()
        hosts = host_rows(state, now, ival)
        links = link_rows(state, now, ival, ctx.show_virtual)
        if needle:
            hosts = [h for h in hosts if needle in h.name.lower()]
            links = [r for r in links if needle in r.text()]
        self.query_one(TopBar).show(summary(state, now, ival), ctx.paused, delta_marker(ctx))
        self.query_one(HostTable).show(hosts, width)
        self.query_one(LinkTable).show(links, width, state.history, ival, ctx.delta_mode,
                                       state.thresholds)
        self.query_one(FindingsPanel).show(state.findings)
        self._titles()

    def show_flags(self) -> None:
        """Redraw the PAUSED and delta markers."""
        self.query_one(TopBar).show(None, self.ctx.paused, delta_marker(self.ctx))

    def _titles(self) -> None:
        lt = self.query_one(LinkTable)
        parts = [f"sort: {lt.sort_spec.label}"]
        if self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        if self.ctx.show_virtual:
            parts.append("virtual shown")
        self.sub_title = "  ".join(parts)

    # actions -----------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter input."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """Drop the filter and close its input."""
        box = self.query_one("#filter", Input)
        self.filter_text = ""
        box.value = ""
        box.display = False
        self.query_one(LinkTable).focus()
        self.refresh_view()

    def action_sort(self) -> None:
        """Sort the links table by the next column."""
        spec = self.query_one(LinkTable).cycle_sort()
        self.notify(f"links sorted by {spec.label}", timeout=2)
        self.refresh_view()

    def action_toggle_virtual(self) -> None:
        """Show or hide virtual netdevs (lo, veth, bridges)."""
        self.ctx.show_virtual = not self.ctx.show_virtual
        self.refresh_view()

    def action_open_link(self) -> None:
        """Open the detail screen of the link under the cursor."""
        key = self.query_one(LinkTable).cursor_key()
        if key is not None:
            self._open(key)

    def _open(self, key: str) -> None:
        from tui.screens.link_detail import LinkDetailScreen

        host, _, lid = key.partition("\x1f")
        self.app.push_screen(LinkDetailScreen(self.ctx, host, lid))

    # events ------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value.strip()
            self.refresh_view()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = False
            self.query_one(LinkTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if isinstance(event.data_table, LinkTable) and event.row_key.value is not None:
            self._open(str(event.row_key.value))
        elif isinstance(event.data_table, HostTable) and event.row_key.value is not None:
            # Enter on a host narrows the links to it; Esc widens again.
            self.filter_text = str(event.row_key.value)
            self.refresh_view()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        if isinstance(event.data_table, LinkTable):
            spec = event.data_table.sort_by_column(str(event.column_key.value))
            if spec is not None:
                self.refresh_view()
