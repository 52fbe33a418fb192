"""Help (?): every key, generated from the BINDINGS so it cannot drift from them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

HelpSection = tuple[str, list[tuple[str, str]]]


def key_label(b: Binding) -> str:
    """How a binding's key is written on screen."""
    if b.key_display:
        return b.key_display
    names = {"slash": "/", "question_mark": "?", "escape": "Esc", "enter": "Enter"}
    return ", ".join(names.get(k, k) for k in b.key.split(","))


def binding_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(key, what it does) for each Binding, in declaration order."""
    rows = []
    for b in bindings:
        if isinstance(b, Binding):
            rows.append((key_label(b), b.description or b.action))
    return rows


def help_table(sections: Sequence[HelpSection]) -> Table:
    """All sections as one two-column table."""
    t = Table(box=None, show_header=False, padding=(0, 2), expand=False)
    t.add_column(style="bold cyan", justify="right", no_wrap=True)
    t.add_column()
    for i, (title, rows) in enumerate(sections):
        if i:
            t.add_row("", "")
        t.add_row("", Text(title, "bold underline"))
        for key, what in rows:
            t.add_row(key, what)
    return t


class HelpScreen(Screen[None]):
    """The key reference; Esc or ? closes it (q still quits fabtop)."""

    BINDINGS = [
        Binding("escape", "close", "close"),
        Binding("question_mark", "close", "close", show=False),
    ]

    def __init__(self, sections: Sequence[HelpSection]) -> None:
        super().__init__(name="help")
        self.sections = list(sections)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(Text(" fabtop keys ", "bold reverse"), id="help-title")
            yield Static(help_table(self.sections), id="help-keys")
            yield Static(
                Text(
                    "Rates are per second from the hosts' own clocks. A grey row is a host "
                    "whose last frame is old; '╌' in a sparkline and 'gap' mark a counter "
                    "reset, never a spike. Collection never pauses: 'p' freezes only the "
                    "display; 'r' stores a baseline in fabtop and never touches hardware.",
                    "dim",
                ),
                id="help-notes",
            )
        yield Footer()

    def action_close(self) -> None:
        """Back to where help was opened."""
        self.dismiss()
