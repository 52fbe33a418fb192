"""Findings: severity, subject, one line each; one calm line when the fabric is healthy."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from fabtop.core.findings import Finding

BADGE = {
    "critical": (" CRIT ", "bold white on red"),
    "warning": (" WARN ", "bold black on yellow"),
    "info": (" info ", "cyan"),
}


def one_line(f: Finding) -> str:
    """The summary on one line, without the subject it usually starts with."""
    return " ".join(f.headline.split())


def append_finding(t: Text, f: Finding) -> None:
    """Append one finding's line: badge, subject, summary."""
    label, style = BADGE.get(f.severity, (f" {f.severity[:4]} ", ""))
    t.append(label, style)
    t.append(" ")
    t.append(f.subject, "bold")
    t.append("  ")
    t.append(one_line(f))


def findings_text(findings: Sequence[Finding], limit: int) -> Text:
    """Up to ``limit`` lines, worst first, and a count of the rest."""
    if not findings:
        return Text("✓ no findings: the fabric looks healthy", "green")
    t = Text(no_wrap=True, overflow="ellipsis")
    shown = findings[:limit] if len(findings) <= limit else findings[: max(1, limit - 1)]
    for i, f in enumerate(shown):
        if i:
            t.append("\n")
        append_finding(t, f)
    if len(shown) < len(findings):
        t.append(f"\n… {len(findings) - len(shown)} more", "dim")
    return t


class FindingsPanel(Static):
    """The findings panel; redraws only when the findings changed."""

    DEFAULT_CSS = """
    FindingsPanel {
        height: auto; max-height: 7; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None, limit: int = 6) -> None:
        super().__init__("", id=id)
        self.limit = limit
        self._shown: tuple[tuple[str, str, str], ...] | None = None

    def show(self, findings: Sequence[Finding]) -> None:
        """Show ``findings`` (already sorted worst first)."""
        sig = tuple((f.severity, f.subject, f.summary) for f in findings)
        if sig == self._shown:
            return
        self._shown = sig
        self.set_class(bool(findings), "-alert")
        self.update(findings_text(findings, self.limit))
