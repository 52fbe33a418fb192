"""Findings (key 6): every finding, and the recently cleared ones, readable in full.

Like k9s's describe: a table of findings (severity, subject, headline, for how long) and,
below it, the selected one whole and wrapped: its summary, every evidence item, the next
step, when it was raised (and cleared), its host. Enter opens what it is about (the
port's link detail, the host's detail); ``i`` the host's detail.
"""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static

from collectors.text import clean_lines
from fabtop.core.coverage import calm_line
from tui import format as fmt
from tui.context import ViewContext
from tui.rows.findings import FindingRow, finding_rows
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.findings_panel import badge, one_line
from tui.widgets.keyed_table import Column, KeyedTable, Spec
from tui.widgets.quiet_static import QuietStatic
from tui.widgets.top_bar import TopBar

DIM = "grey50"


def clock_time(t: float) -> str:
    """A time on the operator's axis as UTC time of day (the same on every terminal)."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(t))


def when_text(r: FindingRow, now: float | None) -> str:
    """How long it has held, or when it cleared: ``for 1m05s``, ``cleared 3m10s ago``."""
    if r.cleared is not None:
        return f"cleared {fmt.age(now - r.cleared)} ago" if now is not None else "cleared"
    if r.raised is None or now is None:
        return "active"
    return f"for {fmt.age(now - r.raised)}"


def finding_columns(width: int) -> list[Column]:
    """Severity, subject, headline (what is left) and how long."""
    subject = 28 if width >= 120 else 20
    cols = [
        Column("sev", "Sev", 6, False),
        Column("subject", "Subject", subject, False),
        Column("when", "State", 16, False),
    ]
    used = sum((c.width or 0) + 2 for c in cols) + 4
    cols.insert(2, Column("headline", "Finding", max(12, width - used - 2), False))
    return cols


def finding_cells(r: FindingRow, now: float | None) -> dict[str, Spec]:
    """One row: an active finding in its severity's colours, a cleared one greyed."""
    f = r.finding
    label, style = badge(f.severity)
    base = "" if r.active else DIM
    one = one_line(f)
    return {
        "sev": Spec(label, style if r.active else DIM),
        "subject": Spec(f.subject, base or "bold", None, True, "ellipsis"),
        "headline": Spec(one, base, None, True, "ellipsis"),
        "when": Spec(when_text(r, now), base, None, True, "ellipsis"),
    }


def detail(r: FindingRow, now: float | None) -> RenderableType:
    """The finding whole: every word wrapped, every evidence item, the next step, times."""
    f = r.finding
    label, style = badge(f.severity)
    head = Text()
    head.append(label, style)
    head.append(" ")
    head.append(f.subject, "bold")
    if not r.active:
        head.append("  cleared", "bold green")
    parts: list[RenderableType] = [head, Text(""), Text(clean_lines(f.summary))]
    # The next step first: at 80x24 it must be on screen without scrolling.
    parts += [
        Text(""),
        Text("Next step", "bold underline"),
        Text(clean_lines(f.next_step)) if f.next_step else Text("no next step given", "dim"),
    ]
    ev = f.readable_evidence(unknown="not known")
    if ev:
        parts += [Text(""), Text("Evidence", "bold underline")]
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
        table.add_column(no_wrap=True, style="cyan", max_width=30, overflow="ellipsis")
        table.add_column(overflow="fold")
        for k, v in ev:
            table.add_row(Text(k), Text(clean_lines(v)))
        parts.append(table)
    meta = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
    meta.add_column(no_wrap=True, style="bold")
    meta.add_column(overflow="fold")
    if r.raised is not None:
        ago = f" ({fmt.age(now - r.raised)} ago)" if now is not None else ""
        meta.add_row(Text("raised"), Text(clock_time(r.raised) + ago))
    if r.cleared is not None:
        ago = f" ({fmt.age(now - r.cleared)} ago)" if now is not None else ""
        meta.add_row(Text("cleared"), Text(clock_time(r.cleared) + ago))
        if r.raised is not None:
            meta.add_row(Text("lasted"), Text(fmt.age(r.cleared - r.raised)))
    host = f.port.host if f.port is not None else f.host
    if host is not None:
        meta.add_row(Text("host"), Text(host))
    if f.port is not None:
        meta.add_row(Text("port"), Text(f.port.label))
    meta.add_row(Text("rule"), Text(f.rule))
    parts += [Text(""), meta]
    return Group(*parts)


class FindingsTable(KeyedTable):
    """The findings, worst first, then the cleared ones, newest first."""

    DEFAULT_CSS = """
    FindingsTable { height: auto; max-height: 45%; border-bottom: solid $panel; }
    """

    def show(self, rows: list[FindingRow], width: int, now: float | None) -> None:
        """Sync with ``rows`` (the cursor stays on its finding)."""
        self.set_columns(finding_columns(width))
        self.sync([(r.key, finding_cells(r, now)) for r in rows])


class FindingsScreen(DataScreen):
    """All findings, and one of them in full."""

    DEFAULT_CSS = """
    FindingsScreen #findings-title { height: 1; }
    FindingsScreen #finding-detail { height: 1fr; padding: 0 1; }
    """

    BINDINGS = [
        Binding("enter", "open_subject", "open its port or host", show=False),
        Binding("i", "host_detail", "host detail"),
        Binding("escape", "app.back", "back"),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="findings")
        self.rows: dict[str, FindingRow] = {}
        self._detail_sig: object = None
        self._detail_key: str | None = None  # the finding the detail pane shows
        self._active = (0, 0)  # findings active, and listed
        self._calm = ("", "green")  # the core's calm line and its style

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield QuietStatic(id="findings-title")
        yield FindingsTable(id="findings-table")
        with VerticalScroll(id="finding-detail"):
            yield QuietStatic(id="finding-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FindingsTable).focus()
        self.refresh_view()

    def on_resize(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Sync the table and the detail with the state; select the finding asked for."""
        super().refresh_view()
        ctx = self.ctx
        state = ctx.state
        s = summary(state, ctx.now(), ctx.interval)
        self.query_one(TopBar).show(s, ctx.paused, None)
        now = state.data_now()
        rows = finding_rows(state)
        self.rows = {r.key: r for r in rows}
        table = self.query_one(FindingsTable)
        table.show(rows, self.size.width or 120, now)
        self._select_asked()
        self._active = (sum(1 for r in rows if r.active), len(rows))
        self._title()
        self._calm = (calm_line(s.coverage), "green" if s.coverage.all_seen else "bold yellow")
        self._show_detail()

    def _title(self) -> None:
        """The counts, and what the keys do where the focus is (the list or the text)."""
        active, every = self._active
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(" findings ", "bold reverse")
        title.append(f" {active} active")
        title.append(f" · {every - active} cleared", "dim")
        wide = (self.size.width or 120) >= 100
        if isinstance(self.focused, VerticalScroll):
            keys = "↑↓ scroll the text · Tab back to the list" if wide else "↑↓ scroll · Tab list"
        elif wide:
            keys = "↑↓ choose · Enter opens its port or host · Tab scrolls the text"
        else:
            keys = "↑↓ · Enter opens · Tab scrolls"
        title.append("   " + keys, "dim")
        self.query_one("#findings-title", Static).update(title)

    def on_descendant_focus(self) -> None:
        self._title()

    def _select_asked(self) -> None:
        """Put the cursor on the finding Enter chose in a panel (``ctx.finding_key``)."""
        key = self.ctx.finding_key
        if key is None:
            return
        self.ctx.finding_key = None
        table = self.query_one(FindingsTable)
        if key in self.rows:
            table.move_cursor(row=table.row_keys().index(key))

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        # Paused, the view is not redrawn on resume; the finding asked for is still shown.
        if self.ctx.paused and self.ctx.finding_key is not None:
            self._select_asked()
            self._show_detail()

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def selected(self) -> FindingRow | None:
        """The row under the cursor."""
        key = self.query_one(FindingsTable).cursor_key()
        return self.rows.get(key) if key is not None else None

    def _show_detail(self) -> None:
        r = self.selected()
        now = self.ctx.state.data_now()
        if r is None:  # no findings at all: what was seen, and what was not
            sig: object = self._calm
            body: RenderableType = Text(*self._calm)
        else:
            f = r.finding
            sig = (
                r.key,
                f.severity,
                f.summary,
                f.next_step,
                tuple(f.shown_evidence().items()),
                r.raised,
                r.cleared,
                None if now is None else int(now),
            )
            body = detail(r, now)
        if sig != self._detail_sig:
            self._detail_sig = sig
            self.query_one("#finding-text", Static).update(body)
        key = None if r is None else r.key
        if key != self._detail_key:
            # Another finding opens at its top, not at the line the last one was read to.
            self._detail_key = key
            self.query_one("#finding-detail", VerticalScroll).scroll_home(animate=False)

    def home(self) -> None:
        """Keys go to the table of findings, as on the first visit."""
        self.query_one(FindingsTable).focus()

    # events and actions --------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if isinstance(event.data_table, FindingsTable):
            self._show_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if isinstance(event.data_table, FindingsTable):
            self.action_open_subject()

    def action_open_subject(self) -> None:
        """Open what the selected finding is about: its port's link detail, else its host."""
        r = self.selected()
        if r is None:
            return
        f = r.finding
        state = self.ctx.state
        if f.port is not None and f.port.host in state.hosts:
            from tui.screens.link_detail import LinkDetailScreen

            self.app.push_screen(LinkDetailScreen(self.ctx, f.port.host, f.port.link))
        elif f.host is not None and f.host in state.hosts:
            self._open_host(f.host)

    def action_host_detail(self) -> None:
        """Open the selected finding's host."""
        r = self.selected()
        if r is None:
            return
        f = r.finding
        host = f.port.host if f.port is not None else f.host
        if host is not None and host in self.ctx.state.hosts:
            self._open_host(host)

    def _open_host(self, host: str) -> None:
        from tui.screens.host_detail import HostDetailScreen

        self.app.push_screen(HostDetailScreen(self.ctx, host))
