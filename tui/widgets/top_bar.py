"""The top line: cluster token rate, hosts by status, findings by severity, mode markers.

"No findings" is said only when every host reports; otherwise the line counts the hosts
it cannot see (DESIGN §10: blind is not healthy).
"""

from __future__ import annotations

from rich.text import Text

from tui import format as fmt
from tui.rows.links import Summary
from tui.widgets.quiet_static import QuietStatic

SEVERITY_STYLE = {
    "critical": "bold white on red",
    "warning": "bold black on yellow",
    "info": "cyan",
}
STATUS_STYLE = {
    "up": "green",
    "stale": "bold black on yellow",
    "connecting": "dim",
    "down": "bold white on red",
    "failing": "bold white on red",
}


BLIND_STYLE = "bold black on yellow"
REC_STYLE = "bold white on red"


def summary_text(
    s: Summary,
    width: int,
    paused: bool,
    delta: str | None,
    recording: bool = False,
    filtered: str = "",
) -> Text:
    """The top line for ``s``; shorter words below 100 columns."""
    narrow = width < 100
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(" fabtop ", "bold reverse")
    t.append("  ")
    if s.tokens_per_s is not None:
        t.append(fmt.si(s.tokens_per_s), "bold")
        if s.tokens_unknown:  # some servers have no counter: a floor, not the total
            t.append("+?", "bold yellow")
        t.append(" tok/s" if narrow else " tokens/s")
    elif s.tokens_unknown and s.tokens_unknown == s.inference_servers:
        t.append("tok/s unknown", "yellow")
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
        label = (
            status
            if not narrow
            else {
                "up": "up",
                "stale": "stale",
                "down": "down",
                "connecting": "conn",
                "failing": "fail",
            }[status]
        )
        t.append(f"{n} {label}", STATUS_STYLE[status] if status != "up" or n else "dim")
    t.append("  │ ", "dim")
    total = sum(s.findings.values())
    cov = s.coverage
    badges: list[tuple[str, str]] = []
    if not total and cov.all_seen:
        badges.append(("no findings" if narrow else "no findings in what was seen", "green"))
    for sev, n in s.findings.items():
        if n:
            word = sev if not narrow else sev[:4]
            badges.append((f" {n} {word} ", SEVERITY_STYLE[sev]))
    if not cov.hosts:
        badges.append((" no hosts ", BLIND_STYLE))
    elif not cov.all_seen:
        n = len(cov.not_reporting)
        badges.append((f" {n} blind " if narrow else f" {n} not seen ", BLIND_STYLE))
    for i, (word, style) in enumerate(badges):
        if i:
            t.append(" ")
        t.append(word, style)
    if filtered:  # what the links are narrowed to is never hidden
        t.append("  ")
        t.append(f" / {fmt.middle(filtered, 16 if narrow else 40)} ", "bold black on yellow")
    if delta:
        t.append("  ")
        t.append(f" Δ {delta} ", "bold black on cyan")
    if paused:
        t.append("  ")
        t.append(" PAUSED ", "bold white on blue")
    if recording:
        t.append("  ")
        t.append(" ● REC ", REC_STYLE)
    return t


class TopBar(QuietStatic):
    """One line; keeps the last summary so the PAUSED marker can change without new data.

    ``recording`` is set by the screen (DataScreen does it for every screen): REC shows
    while frames are written to a recording.
    """

    FIXED_SIZE = True  # one line (DEFAULT_CSS): its text never moves another widget

    DEFAULT_CSS = """
    TopBar { height: 1; width: 1fr; background: $boost; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._summary: Summary | None = None
        self._paused = False
        self._delta: str | None = None
        self.recording = False
        self.filtered = ""  # the overview's filter in force (its own screen sets it)

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
            t = Text(" fabtop  waiting for the first frame…", "dim")
            if self.recording:
                t.append("  ")
                t.append(" ● REC ", REC_STYLE)
            self.update(t)
            return
        self.update(
            summary_text(
                self._summary,
                self.size.width or 120,
                self._paused,
                self._delta,
                self.recording,
                self.filtered,
            )
        )
