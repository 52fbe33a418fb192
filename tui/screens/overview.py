"""Overview (key 1): top line, hosts, the health grid, links with sparklines, findings.

What narrows or orders the links is said on the line between the hosts and the links
("links: node3 only", "filter: enp65", "sort: rx ▼"), so no state is hidden.
"""

from __future__ import annotations

import contextlib

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Input

from fabtop.commands.fabtest import rail_config
from fabtop.core.coverage import calm_line
from fabtop.run.link_filter import FilterError, LinkFilter, parse
from tui import format as fmt
from tui.context import ViewContext
from tui.rows.filtering import narrowed
from tui.rows.grid import GridMemo, grid, rail_index
from tui.rows.groups import CLOSED, FOLDED, GROUPINGS, HOST, OPEN, Group, grouped
from tui.rows.links import GROUP_MARK, host_rows, link_rows, summary
from tui.screens.base import DataScreen
from tui.widgets.findings_panel import FindingsPanel
from tui.widgets.health_grid import HealthGrid
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import DOWN_ARROW, UP_ARROW, LinkTable
from tui.widgets.quiet_static import drawn_as
from tui.widgets.top_bar import TopBar

# Past this many links the filter applies on Enter, not on each key.
LIVE_FILTER_MAX_LINKS = 256
# Below this many rows the health grid starts folded to its one line of counts (80x24
# keeps its rows for the links); ``g`` unfolds it, and the choice then stays.
GRID_FOLD_BELOW_ROWS = 30


def delta_marker(ctx: ViewContext) -> str | None:
    """The top line's delta-mode marker ("since r 37s"), or None outside delta mode."""
    if not ctx.delta_mode:
        return None
    if ctx.baseline_at is None:
        return "since r"
    return f"since r {fmt.age(ctx.now() - ctx.baseline_at)}"


def state_line(
    host: str | None,
    needle: str,
    sort: str,
    descending: bool,
    virtual: bool,
    group_by: str | None = None,
    hidden: int = 0,
    cursor_group: Group | None = None,
    new_above: int = 0,
) -> Text:
    """``links: node3 only · filter: enp65 · sort: rx ▼ · Esc shows all``; first, new
    problems above the view (``▲ 1 new problem above (n)``) until seen."""
    t = Text(" ")
    if new_above:  # first: at 80 columns the line's end is cut
        s = "s" if new_above != 1 else ""
        t.append(f"{UP_ARROW} {new_above} new problem{s} above (n)", "bold yellow")
        t.append(" · ")
    narrowed = host is not None or bool(needle)
    if host is not None:
        t.append("links: ", "bold")
        t.append(host, "bold")
        t.append(" only", "bold")
        t.append(" · ")
    if needle:
        t.append("filter: ", "bold")
        t.append(needle, "bold")
        t.append(" · ")
    if cursor_group is not None:  # first: at 80 columns the line's end is cut
        # Without its traffic: that is on the group's row under the cursor, and a number
        # here would change every second, repainting the hosts table whose border this is.
        t.append(cursor_group.sentence(traffic=False), "bold")
        t.append(" · ")
    t.append(f"sort: {sort} {DOWN_ARROW if descending else UP_ARROW}")
    t.append(" (o next, O reverse)" if not narrowed else "")
    if virtual:
        t.append(" · virtual shown")
    if group_by is not None:
        t.append(f" · by {group_by} (b next)")
    if hidden:
        t.append(f" · {hidden} links folded (Enter on a group, z all)")
    if narrowed:
        t.append(" · Esc shows all", "bold")
    t.append(" ")
    return t


class OverviewScreen(DataScreen):
    """Every host and link at a glance."""

    BINDINGS = [
        Binding("slash", "filter", "filter", key_display="/"),
        # To the grid's worst cell; on the grid, folds it (80x24 wants the rows back).
        Binding("g", "grid", "grid"),
        Binding("o", "sort", "sort"),
        # The state line above the links says "O reverse"; the footer keeps its room.
        Binding("O", "reverse_sort", "reverse the sort", key_display="O", show=False),
        Binding("v", "toggle_virtual", "virtual"),
        Binding("b", "group_by", "group"),  # by host, rail, rule, then none
        Binding("z", "toggle_fold", "fold all"),  # every group: all its links, then none
        Binding("Z", "toggle_fold", "fold all (as z)", key_display="Z", show=False),
        Binding("space", "toggle_group", "fold or unfold the group under the cursor", show=False),
        # The line above the links says "(n)" when a new problem is above the view (on the
        # grid, n is the grid's own: its next worst cell).
        Binding("n", "next_problem", "next link with something to say", show=False),
        Binding("i", "host_detail", "host detail"),
        Binding(
            "enter",
            "open_link",
            "link detail, host detail (on a host), fold (on a group)",
            show=False,
        ),
        Binding("escape", "back", "back to the links, then show all links", show=False),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="overview")
        # What the filter's input holds, and the filter in force (the last one that read).
        self.filter_text = ctx.link_filter.text
        self.link_filter = ctx.link_filter
        self._links_total = 0
        # Groups (b): None until the user says, then by host past ctx.fold_past_links and
        # none below; "" none. Each group's view (Enter) over how all start (z sets it).
        self.group_by: str | None = None
        self.views: dict[str, str] = {}
        self.all_view: str | None = None
        self._groups: dict[str, Group] = {}  # by the row key of their summary row
        self._grid_folded: bool | None = None  # the user's choice by ``g``; None: by size
        self._grid_memo = GridMemo()  # the grid's rails and cells, kept between ticks
        self._title_drawn: object = None  # the line above the links, as last shown

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield HostTable(id="hosts")
        yield HealthGrid(id="grid")
        yield LinkTable(id="links")
        yield FindingsPanel(id="findings")
        yield Input(
            placeholder="filter: text host:node[1-4] rail:0 kind:roce state:down rule:pfc_storm "
            "sev:warning, ! inverts (Enter keeps it, Esc clears)",
            id="filter",
        )
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
        hosts = host_rows(state, now, ival)
        links = link_rows(state, now, ival, ctx.show_virtual)
        self._links_total = len(links)
        rail_cfg = rail_config(ctx.bench.config) if ctx.bench is not None else None
        samples = {n: hs.sample for n, hs in state.hosts.items() if hs.sample is not None}
        # Rails of every host, whatever is shown: the grid, the rail groups and 'rail:'
        # number them alike.
        rail_of = rail_index(samples, rail_cfg, self._grid_memo)
        if self.link_filter:
            hosts, links = narrowed(self.link_filter, state, hosts, links, now, rail_of)
        if ctx.links_host is not None:
            links = [r for r in links if r.host == ctx.links_host]
        s = summary(state, now, ival)
        top = self.query_one(TopBar)
        top.filtered = self.link_filter.text
        top.show(s, ctx.paused, delta_marker(ctx))
        self.query_one(HostTable).show(hosts, width)
        cells = self.query_one(HealthGrid)
        grid_folded = self._grid_folded
        if grid_folded is None:
            grid_folded = self.size.height < GRID_FOLD_BELOW_ROWS
        cells.fold(grid_folded)
        # 'l' on a host narrows the links, not the hosts table: the grid follows the links
        # (every one of them: the grid has a cell for each healthy link the table folds).
        shown = [h for h in hosts if ctx.links_host in (None, h.name)]
        cells.show(grid(shown, links, rail_of, state.findings, self._grid_memo))
        by = self._grouping()
        self._groups = {}
        if by:
            links, groups = grouped(
                links, by, state.findings, rail_of, self.views, self._start_view()
            )
            self._groups = {f"{GROUP_MARK}{g.key}": g for g in groups}
        self.query_one(LinkTable).show(
            links, width, state.history, ival, ctx.delta_mode, state.thresholds
        )
        self.query_one(FindingsPanel).show(
            state.findings,
            calm_line(s.coverage, elsewhere="the findings screen lists them"),
            s.coverage.all_seen,
        )
        self._titles()

    def show_flags(self) -> None:
        """Redraw the PAUSED and delta markers."""
        self.query_one(TopBar).show(None, self.ctx.paused, delta_marker(self.ctx))

    def _titles(self) -> None:
        """The line above the links: what narrows them and how they are sorted."""
        lt = self.query_one(LinkTable)
        line = state_line(
            self.ctx.links_host,
            self.link_filter.text,
            lt.sort_spec.label,
            lt.descending,
            self.ctx.show_virtual,
            self._grouping() or None,
            sum(len(g.links) - len(g.shown()) for g in self._groups.values()),
            # the group under the cursor, while the cursor shows (the links have the keys)
            self._groups.get(lt.cursor_key() or "") if lt.has_focus else None,
            len(lt.new_above),
        )
        # Each assignment repaints the border: only a changed line is assigned.
        if drawn_as(line) != self._title_drawn:
            self._title_drawn = drawn_as(line)
            self.query_one(HostTable).border_subtitle = line

    def _grouping(self) -> str:
        """How the links are grouped now ("": not at all)."""
        if self.group_by is not None:
            return self.group_by
        return HOST if self._links_total > self.ctx.fold_past_links else ""

    def _start_view(self) -> str:
        """How a group the user has not opened or closed shows its links."""
        if self.all_view is not None:
            return self.all_view
        return FOLDED if self._links_total > self.ctx.fold_past_links else OPEN

    # actions -----------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter input."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """Drop the filter and the host selection; close the filter's input."""
        box = self.query_one("#filter", Input)
        self.filter_text = ""
        self.link_filter = self.ctx.link_filter = LinkFilter()
        self.ctx.links_host = None
        box.value = ""
        box.display = False
        self.query_one(LinkTable).focus()
        self.refresh_view()

    def home(self) -> None:
        """Keys go to the links, as when the dashboard starts (the filter stays, said)."""
        box = self.query_one("#filter", Input)
        box.display = False
        self.query_one(LinkTable).focus()

    def action_back(self) -> None:
        """Esc, one step back: from the hosts or the findings to the links; there (or in the
        filter's input), drop the filter and the host selection."""
        if self.query_one("#filter", Input).display:  # as its placeholder says: Esc clears
            self.action_clear_filter()
        elif not isinstance(self.focused, LinkTable):
            self.query_one(LinkTable).focus()
        else:
            self.action_clear_filter()

    def on_descendant_focus(self) -> None:
        self.query_one(FindingsPanel).focus_moved()
        self._titles()

    def action_grid(self) -> None:
        """To the grid's worst cell (unfolding the grid); on the grid, fold it."""
        cells = self.query_one(HealthGrid)
        self._grid_folded = cells.has_focus
        cells.fold(self._grid_folded)
        if self._grid_folded:
            self.query_one(LinkTable).focus()
            return
        cells.to_worst()
        cells.focus()

    def on_health_grid_chosen(self, event: HealthGrid.Chosen) -> None:
        c = event.cell
        if c.link is not None:
            self._open(f"{c.host}\x1f{c.link}")
        elif c.host in self.ctx.state.hosts:
            self._open_host(c.host)

    def action_sort(self) -> None:
        """Sort the links table by the next column (its header shows the arrow)."""
        self.query_one(LinkTable).cycle_sort()
        self.refresh_view()

    def action_reverse_sort(self) -> None:
        """Sort the links the other way round."""
        self.query_one(LinkTable).reverse_sort()
        self.refresh_view()

    def action_next_problem(self) -> None:
        """To the new problem above the view, else the next problem row (keys to the links)."""
        lt = self.query_one(LinkTable)
        lt.focus()
        lt.action_next_problem()

    def action_host_detail(self) -> None:
        """Open the detail of the host under the cursor (a host, a link's host, a finding's)."""
        focused = self.focused
        host: str | None = None
        if isinstance(focused, HostTable):
            host = focused.cursor_key()
        elif isinstance(focused, FindingsPanel):
            f = focused.chosen()
            host = f.host if f is not None else None
        elif isinstance(focused, HealthGrid):
            c = focused.current()
            host = c.host if c is not None else None
        else:
            key = self.query_one(LinkTable).cursor_key()
            host = key.partition("\x1f")[0] if key is not None else None
        if host is not None and host in self.ctx.state.hosts:
            self._open_host(host)

    def _open_host(self, host: str) -> None:
        from tui.screens.host_detail import HostDetailScreen

        self.app.push_screen(HostDetailScreen(self.ctx, host))

    def action_toggle_virtual(self) -> None:
        """Show or hide virtual netdevs (lo, veth, bridges)."""
        self.ctx.show_virtual = not self.ctx.show_virtual
        self.refresh_view()

    def action_open_link(self) -> None:
        """Open the detail screen of the link under the cursor."""
        key = self.query_one(LinkTable).cursor_key()
        if key is not None:
            self._open(key)

    def action_group_by(self) -> None:
        """Group the links by the next of host, rail, rule, then not at all."""
        now = self._grouping()
        i = GROUPINGS.index(now) if now in GROUPINGS else -1
        self.group_by = GROUPINGS[i + 1] if i + 1 < len(GROUPINGS) else ""
        self.views.clear()
        self.refresh_view()

    def action_toggle_fold(self) -> None:
        """Every group: closed to its summary row when every link shows, else open; with
        no groups, group by host folded (each host's links with something to say)."""
        if not self._grouping():
            self.group_by, self.all_view = HOST, FOLDED
        else:
            whole = all(g.whole for g in self._groups.values())
            self.all_view = CLOSED if whole else OPEN
        self.views.clear()
        self.refresh_view()

    def action_toggle_group(self) -> None:
        """Space on a group's row folds or unfolds it (elsewhere the key goes on: replay)."""
        key = self.query_one(LinkTable).cursor_key()
        if not isinstance(self.focused, LinkTable) or key not in self._groups:
            raise SkipAction()
        self._open(key)

    def _open(self, key: str) -> None:
        from tui.screens.link_detail import LinkDetailScreen

        g = self._groups.get(key)
        if g is not None:  # a group's row: all its links, or none
            self.views[g.key] = CLOSED if g.whole else OPEN
            self.refresh_view()
            return
        host, _, lid = key.partition("\x1f")
        if lid:
            self.app.push_screen(LinkDetailScreen(self.ctx, host, lid))

    # events ------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "filter":
            return
        self.filter_text = event.value.strip()
        # On a big fleet the filter applies on Enter: each key would re-judge every link.
        if self._links_total > LIVE_FILTER_MAX_LINKS:
            return
        # Half typed ("host:"): the last filter that read stays until Enter says why not.
        with contextlib.suppress(FilterError):
            self._apply(parse(self.filter_text))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        try:
            flt = parse(event.value)
        except FilterError as e:
            self.notify(str(e), severity="error", markup=False)
            return  # the input stays open to mend it; the filter in force stays
        self._apply(flt)
        event.input.display = False
        self.query_one(LinkTable).focus()

    def _apply(self, flt: LinkFilter) -> None:
        self.link_filter = self.ctx.link_filter = flt
        self.refresh_view()

    def on_virtual_table_row_chosen(self, event: LinkTable.RowChosen) -> None:
        if isinstance(event.table, LinkTable):
            self._open(event.key)
        elif isinstance(event.table, HostTable):
            # Enter on a host reads it in full (its error, warnings, what is not
            # monitored); 'l' there narrows these links to it.
            self._open_host(event.key)

    def on_virtual_table_cursor_moved(self, event: LinkTable.CursorMoved) -> None:
        if isinstance(event.table, LinkTable):
            self._titles()  # a group's row under the cursor: its sentence on the line

    def on_link_table_problems_above(self, event: LinkTable.ProblemsAbove) -> None:
        self._titles()

    def on_virtual_table_header_clicked(self, event: LinkTable.HeaderClicked) -> None:
        if isinstance(event.table, LinkTable):
            spec = event.table.sort_by_column(event.column)
            if spec is not None:
                self.refresh_view()
