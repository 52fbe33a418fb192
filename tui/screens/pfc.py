"""PFC (key 2): pause matrix per priority, who pauses whom, QoS side by side, findings, focus."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

from tui.context import ViewContext
from tui.rows.links import summary
from tui.rows.pfc import SEP, PauseRow, pause_pairs, pause_rows, pfc_findings, qos_rows
from tui.screens.base import DataScreen
from tui.screens.overview import delta_marker
from tui.widgets.pfc_config import QosTable
from tui.widgets.pfc_matrix import PauseMatrix
from tui.widgets.pfc_panels import FocusPanel, PairsPanel, PfcFindings
from tui.widgets.top_bar import TopBar

if TYPE_CHECKING:
    from fabtop.run.focus import FocusSession
    from fabtop.run.session import Session

FOCUS_REDRAW_S = 0.25


class PfcScreen(DataScreen):
    """Where PFC and ECN problems are diagnosed."""

    BINDINGS = [
        Binding("f", "focus_port", "focus port"),
        Binding("m", "mode", "% / frames"),
        Binding("tab", "next_table", "next table", show=False),
    ]

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="pfc")
        self.focus_session: FocusSession | None = None
        self._stamp: tuple[object, ...] = ()
        self._rows: list[PauseRow] = []

    def compose(self) -> ComposeResult:
        yield TopBar(id="pfc-top")
        yield PauseMatrix(id="pfc-matrix")
        yield PairsPanel(id="pfc-pairs")
        yield QosTable(id="pfc-qos")
        yield PfcFindings(id="pfc-findings")
        yield FocusPanel(id="pfc-focus")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(PauseMatrix).focus()
        self.query_one(FocusPanel).display = False
        self.set_interval(FOCUS_REDRAW_S, self._focus_tick)
        self.refresh_view()

    def on_resize(self) -> None:
        self.refresh_view()

    def on_unmount(self) -> None:
        self._stop_focus()

    def refresh_view(self) -> None:
        """Sync every panel with the state."""
        super().refresh_view()
        ctx = self.ctx
        state = ctx.state
        width = self.size.width or 120
        height = self.size.height or 40
        findings = pfc_findings(state.findings)
        th = state.thresholds
        small = height < 32
        self.query_one(TopBar).show(
            summary(state, ctx.now(), ctx.interval), ctx.paused, delta_marker(ctx)
        )
        matrix = self.query_one(PauseMatrix)
        # The tables read only the hosts' samples and rates, which change with a frame
        # used: a second refresh in a tick (the app's timer) finds them as they were.
        stamp = (
            self.frames_used(),
            width,
            height,
            matrix.mode,
            tuple(th.items()),
        )
        if stamp != self._stamp:
            self._stamp = stamp
            self._rows = pause_rows(state)
            matrix.show(self._rows, th)
            qos = self.query_one(QosTable)
            qos.styles.max_height = 5 if small else 10
            qos.show(qos_rows(state))
        self.query_one(PairsPanel).show(pause_pairs(self._rows, findings, th))
        panel = self.query_one(PfcFindings)
        panel.limit = 3 if small else 6
        panel.show(findings)
        self.query_one(FocusPanel).show(self.focus_session, width, th)
        self.sub_title = "pause " + ("time %" if matrix.mode == "time" else "frames/s")

    def show_flags(self) -> None:
        """Redraw the PAUSED and delta markers."""
        self.query_one(TopBar).show(None, self.ctx.paused, delta_marker(self.ctx))

    def _focus_tick(self) -> None:
        if self.focus_session is not None and not self.ctx.paused:
            self._show_focus()

    def _show_focus(self) -> None:
        panel = self.query_one(FocusPanel)
        panel.show(self.focus_session, self.size.width or 120, self.ctx.state.thresholds)

    # actions -----------------------------------------------------------------

    def action_mode(self) -> None:
        """Show pause time % or pause frames/s in the matrix."""
        mode = self.query_one(PauseMatrix).cycle_mode()
        self.notify(f"matrix shows pause {'time %' if mode == 'time' else 'frames/s'}", timeout=2)
        self.refresh_view()

    def action_next_table(self) -> None:
        """Move the keyboard between the matrix and the QoS table."""
        if self.query_one(PauseMatrix).has_focus:
            self.query_one(QosTable).focus()
        else:
            self.query_one(PauseMatrix).focus()

    def selected_port(self) -> tuple[str, str] | None:
        """(host, netdev) of the row under the matrix cursor."""
        key = self.query_one(PauseMatrix).cursor_key()
        if key is None:
            return None
        host, lid, _ = key.split(SEP)
        hs = self.ctx.state.hosts.get(host)
        link = hs.sample.links.get(lid) if hs is not None and hs.sample is not None else None
        if link is None or link.netdev is None:
            return None
        return host, link.netdev

    def action_focus_port(self) -> None:
        """Sample the selected port every 250 ms (press again to stop)."""
        if self.focus_session is not None:
            port = f"{self.focus_session.host}/{self.focus_session.netdev}"
            self._stop_focus()
            self.query_one(FocusPanel).show(None, 0, self.ctx.state.thresholds)
            self.notify(f"focus on {port} stopped", timeout=2)
            return
        session: Session | None = getattr(self.app, "session", None)
        if session is None:
            self.notify(
                "focus mode needs a live session (not a replay or a picture)",
                severity="warning",
                timeout=4,
            )
            return
        chosen = self.selected_port()
        if chosen is None:
            self.notify("no netdev under the cursor", timeout=3)
            return
        try:
            self.focus_session = session.focus(*chosen)
        except Exception as e:  # a refused argument or unknown host is a message
            self.notify(f"focus failed: {e}", severity="error", timeout=6)
            return
        self._show_focus()
        self.notify(f"focus on {chosen[0]}/{chosen[1]}: sampling every 250 ms", timeout=3)

    def _stop_focus(self) -> None:
        if self.focus_session is None:
            return
        self.focus_session = None
        session: Session | None = getattr(self.app, "session", None)
        if session is not None:
            session.unfocus()
