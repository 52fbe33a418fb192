"""The top line: cluster token rate, hosts by status, findings by severity, mode markers."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui import format as fmt
from tui.rows.links import Summary

SEVERITY_STYLE = {"critical": "bold white on red", "warning": "bold black on yellow",
                  "info": "cyan"}
STATUS_STYLE = {"up": "green", "stale": "bold black on yellow", "connecting": "dim",
                "down": "bold white on red", "failing": "bold white on red"}


def summary_text(s: Summary, width: int, paused: bool, delta: str | None) -> Text:
    """The top line for ``s``; shorter words below 100 columns."""
    narrow = width < 100
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(" fabtop ", "bold reverse")
    t.append("  ")
    if s.tokens_per_s is not None:
        t.append(fmt.si(s.tokens_per_s), "bold")
        t.append(" tok/s" if narrow else " tokens/s")
    elif s.inference_servers:
        t.append(f"{fmt.DASH} tok/s", "dim")
    else:
        t.append("no inference servers" if not narrow else "no LLM", "dim")
    t.append("  │ ", "dim")
    t.append("hosts ")
    first = True
    for status, n in s.hosts.items():
        if not n and status != "up":
            continue
        if not first:
            t.append(" ")
        first = False
        label = status if not narrow else {"up": "up", "stale": "stale", "down": "down",
                                           "connecting": "conn", "failing": "fail"}[status]
        t.append(f"{n} {label}", STATUS_STYLE[status] if status != "up" or n else "dim")
    t.append("  │ ", "dim")
    total = sum(s.findings.values())
    if not total:
        t.append("no findings", "green")
    else:
        first = True
        for sev, n in s.findings.items():
            if not n:
                continue
            if not first:
                t.append(" ")
            first = False
            word = sev if not narrow else sev[:4]
            t.append(f" {n} {word} ", SEVERITY_STYLE[sev])
    if delta:
        t.append("  ")
        t.append(f" Δ {delta} ", "bold black on cyan")
    if paused:
        t.append("  ")
        t.append(" PAUSED ", "bold white on blue")
    return t


class TopBar(Static):
    """One line; keeps the last summary so the PAUSED marker can change without new data."""

    DEFAULT_CSS = """
    TopBar { height: 1; width: 1fr; background: $boost; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._summary: Summary | None = None
        self._paused = False
        self._delta: str | None = None

    def show(self, s: Summary | None, paused: bool, delta: str | None) -> None:
        """Show ``s`` (None keeps the last one) with the current mode markers."""
        if s is not None:
            self._summary = s
        self._paused, self._delta = paused, delta
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        if self._summary is None:
            self.update(Text(" fabtop  waiting for the first frame…", "dim"))
            return
        self.update(summary_text(self._summary, self.size.width or 120, self._paused,
                                 self._delta))
