"""Findings: severity, subject, one line each; Tab reaches it, Enter opens one in full.

With no findings it shows the core's calm line, which says what was not seen: never
"healthy" while a host is down, failing, stale or connecting (DESIGN §10).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from fabtop.core.findings import Finding
from tui.messages import FindingChosen
from tui.rows.findings import finding_key

BADGE = {
    "critical": (" CRIT ", "bold white on red"),
    "warning": (" WARN ", "bold black on yellow"),
    "info": (" info ", "cyan"),
}
CURSOR_STYLE = "reverse"
HINT = "{keys} here, ↑↓ choose, Enter reads it in full"
FOCUSED = "▶ findings: ↑↓ choose, Enter reads it in full, Esc leaves"


def one_line(f: Finding) -> str:
    """The summary on one line, without the subject it usually starts with."""
    return " ".join(f.headline.split())


def badge(severity: str) -> tuple[str, str]:
    """The severity's badge text and style (an unknown severity: its first letters)."""
    return BADGE.get(severity, (f" {severity[:4]} ", ""))


def append_finding(t: Text, f: Finding) -> None:
    """Append one finding's line: badge, subject, summary."""
    label, style = badge(f.severity)
    t.append(label, style)
    t.append(" ")
    t.append(f.subject, "bold")
    t.append("  ")
    t.append(one_line(f))


def window(n: int, limit: int, cursor: int) -> tuple[int, int]:
    """The [start, end) of ``n`` lines shown in ``limit`` rows with ``cursor`` in view.

    When they do not all fit, one row is kept for the count of the others.
    """
    if n <= limit:
        return 0, n
    rows = max(1, limit - 1)
    start = min(max(0, cursor - rows + 1), n - rows)
    return start, start + rows


def findings_text(
    findings: Sequence[Finding],
    limit: int,
    calm: str = "no findings",
    calm_style: str = "green",
    cursor: int | None = None,
) -> Text:
    """Up to ``limit`` lines, worst first, and a count of the rest.

    ``calm``: the line shown when there are none (the core's calm line); ``cursor``: the
    line drawn highlighted (the panel has focus), kept in view.
    """
    if not findings:
        return Text(calm, calm_style)
    t = Text(no_wrap=True, overflow="ellipsis")
    start, end = window(len(findings), limit, cursor or 0)
    for i in range(start, end):
        if i > start:
            t.append("\n")
        line = Text()
        append_finding(line, findings[i])
        if i == cursor:  # the badge keeps its colour; the rest of the line is highlighted
            line.stylize(CURSOR_STYLE, len(badge(findings[i].severity)[0]) + 1)
        t.append_text(line)
    hidden = len(findings) - (end - start)
    if hidden:
        where = []
        if start:
            where.append(f"{start} above")
        if end < len(findings):
            where.append(f"{len(findings) - end} below")
        t.append(f"\n… {hidden} more ({', '.join(where)}): key 6 lists all", "dim")
    return t


class FindingsPanel(Static, can_focus=True):
    """The findings panel; redraws only when the findings, calm line or cursor changed."""

    BINDINGS = [
        Binding("up", "move(-1)", "previous finding", show=False, key_display="↑"),
        Binding("down", "move(1)", "next finding", show=False, key_display="↓"),
        Binding("enter", "choose", "read finding"),
    ]

    DEFAULT_CSS = """
    FindingsPanel {
        height: auto; max-height: 7; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
        border-title-color: $text-muted;
    }
    FindingsPanel:focus { border-title-color: $accent; border-title-style: bold; color: $text; }
    /* The calm line names what was not monitored: all of it is read, wrapped. */
    FindingsPanel.-calm { text-wrap: wrap; text-overflow: fold; }
    """

    def __init__(self, *, id: str | None = None, limit: int = 6) -> None:
        super().__init__("", id=id)
        self.limit = limit
        self.cursor = 0
        self.findings: tuple[Finding, ...] = ()
        self.calm = ""
        self.calm_style = "green"
        self._shown: object = None
        self._title_shown: str | None = None

    def show(self, findings: Sequence[Finding], calm: str, all_seen: bool) -> None:
        """Show ``findings`` (already sorted worst first), or ``calm`` when there are none.

        ``all_seen``: every host reports, so the calm line is calm (green), not a warning.
        """
        keys = [finding_key(f) for f in self.findings]
        kept = keys[self.cursor] if self.cursor < len(keys) else None
        self.findings = tuple(findings)
        new_keys = [finding_key(f) for f in self.findings]
        # The cursor stays on its finding while others come and go around it.
        self.cursor = (
            new_keys.index(kept)
            if kept in new_keys
            else min(self.cursor, max(0, len(new_keys) - 1))
        )
        self.calm, self.calm_style = calm, ("green" if all_seen else "bold yellow")
        self.set_class(bool(findings) or not all_seen, "-alert")
        self.set_class(not findings, "-calm")
        self._redraw()

    def _title(self) -> str | None:
        """What the panel's top line says: how to reach it, or (focused) that keys go here."""
        if not self.findings:
            return None
        return FOCUSED if self.has_focus else HINT.format(keys=self.keys_here())

    def keys_here(self) -> str:
        """The keys that move the focus here from where it is now: Tab or shift+Tab, as
        often as needed (whichever is fewer), never a hint that lands elsewhere."""
        chain, focused = self.screen.focus_chain, self.screen.focused
        if self not in chain or focused not in chain:
            return "Tab"
        n = len(chain)
        ahead = (chain.index(self) - chain.index(focused)) % n
        key, times = ("Tab", ahead) if ahead <= n - ahead else ("shift+Tab", n - ahead)
        return " ".join([key] * max(1, times))

    def _redraw(self) -> None:
        title = self._title() if self.is_attached else None
        if title != self._title_shown:  # each assignment repaints the border
            self._title_shown = self.border_title = title
        cursor = self.cursor if self.has_focus else None
        sig = (
            tuple((f.severity, f.subject, f.summary) for f in self.findings),
            self.calm,
            self.calm_style,
            cursor,
            self.limit,
        )
        if sig == self._shown:
            return
        self._shown = sig
        self.update(findings_text(self.findings, self.limit, self.calm, self.calm_style, cursor))

    def chosen(self) -> Finding | None:
        """The finding under the cursor."""
        return self.findings[self.cursor] if self.cursor < len(self.findings) else None

    def on_focus(self) -> None:
        self._redraw()

    def on_blur(self) -> None:
        self._redraw()

    def focus_moved(self) -> None:
        """The focus moved on the screen: the hint names the keys from where it is now."""
        self._redraw()

    def action_move(self, step: int) -> None:
        """Move the highlighted finding up or down."""
        if self.findings:
            self.cursor = max(0, min(len(self.findings) - 1, self.cursor + step))
            self._redraw()

    def action_choose(self) -> None:
        """Open the findings view on the highlighted finding."""
        f = self.chosen()
        if f is not None:
            self.post_message(FindingChosen(finding_key(f)))
