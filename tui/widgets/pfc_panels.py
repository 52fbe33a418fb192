"""The PFC screen's text panels: who pauses whom, findings with evidence, and focus mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text

from fabtop.core.findings import Finding
from fabtop.core.rules.pauses import PAUSE_PER_S, PAUSE_RATIO, PRIOS
from fabtop.run.focus import FocusPoint, FocusSession
from tui import format as fmt
from tui.rows.pfc import PausePair
from tui.widgets.findings_panel import append_finding
from tui.widgets.pfc_matrix import STORM_STYLE, pause_pct
from tui.widgets.quiet_static import QuietStatic


def pairs_text(pairs: Sequence[PausePair], limit: int = 3) -> Text:
    """One line per sender: ``X sends pauses on prio p -> pauses A, B``."""
    if not pairs:
        return Text("who pauses whom: no port is pausing its peers hard", "dim")
    t = Text(no_wrap=True, overflow="ellipsis")
    for i, p in enumerate(pairs[:limit]):
        if i:
            t.append("\n")
        t.append("STUCK RECEIVER " if p.storm else "pausing ", "bold red" if p.storm else "yellow")
        t.append(p.sender.label, "bold")
        t.append(" ")
        t.append(f"prio {p.prio} tx pause {pause_pct(p.sender_level)}%")
        if p.paused:
            t.append(" → pauses " + ", ".join(x.label for x in p.paused))
        else:
            t.append(" → paused peer beyond the switch")
    if len(pairs) > limit:
        t.append(f"\n… {len(pairs) - limit} more", "dim")
    return t


def findings_detail(findings: Sequence[Finding], limit: int) -> Text:
    """Each finding with its evidence and next step, worst first, up to ``limit`` lines."""
    if not findings:
        return Text("✓ no PFC or ECN findings", "green")
    t = Text(no_wrap=True, overflow="ellipsis")
    lines = shown = 0
    for f in findings:
        if lines + 1 > limit:
            break
        if lines:
            t.append("\n")
        append_finding(t, f)
        lines += 1
        shown += 1
        ev = ", ".join(f"{k}={v}" for k, v in f.readable_evidence())
        if ev and lines < limit:
            t.append("\n      evidence: " + ev, "dim")
            lines += 1
        if f.next_step and lines < limit:
            t.append("\n      next: " + f.next_step, "cyan")
            lines += 1
    if shown < len(findings):  # as the overview does: never drop a finding silently
        t.append(f"\n… {len(findings) - shown} more", "dim")
    return t


def focus_text(fs: FocusSession, width: int, thresholds: Mapping[str, float]) -> Text:
    """The focused port at 4 Hz: tx/rx pause time per priority now, and a tx sparkline."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"FOCUS {fs.host}/{fs.netdev} every {fs.interval_s * 1000:.0f} ms", "bold")
    last: FocusPoint | None = fs.latest()
    state = fs.status.state
    if last is None:
        t.append(f"  ({state}{': ' + fs.status.error if fs.status.error else ''})", "dim")
        return t
    t.append(f"  {state}, {fs.status.frames} frames  (f: stop)", "dim")
    storm = thresholds["storm_pause_ratio"]
    for d in ("tx", "rx"):
        ratio = last.rates.get(PAUSE_RATIO[d])
        per_s = last.rates.get(PAUSE_PER_S[d])
        rmap = ratio if isinstance(ratio, dict) else {}
        fmap = per_s if isinstance(per_s, dict) else {}
        t.append(f"\n{d} ")
        for p in PRIOS:
            if p in rmap:
                v = pause_pct(rmap[p]) + "%"
            elif p in fmap:
                v = fmt.si(fmap[p]) + "/s"
            else:
                v = fmt.DASH
            hot = rmap.get(p, 0.0) >= storm
            t.append(f"p{p} {v:>5} ", STORM_STYLE if hot else "")
        # The hottest priority's recent history, newest on the right.
        hist = [_level(pt, d) for pt in fs.points]
        spark_w = max(0, width - 4 - 8 * 10 - 2)
        if spark_w >= 8:
            t.append(" " + fmt.sparkline(hist, spark_w, top=1.0))
    return t


def _level(pt: FocusPoint, d: str) -> float | None:
    v = pt.rates.get(PAUSE_RATIO[d])
    if isinstance(v, dict) and v:
        return max(v.values())
    return None


class PairsPanel(QuietStatic):
    """Who pauses whom."""

    DEFAULT_CSS = """
    PairsPanel {
        height: auto; max-height: 4; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    _shown: list[PausePair] | None = None

    def show(self, pairs: Sequence[PausePair]) -> None:
        """Redraw when the pairs changed."""
        if list(pairs) == self._shown:
            return
        self._shown = list(pairs)
        self.update(pairs_text(pairs))


class PfcFindings(QuietStatic):
    """The active PFC/ECN findings, with evidence and next step."""

    DEFAULT_CSS = """
    PfcFindings {
        height: auto; max-height: 7; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None, limit: int = 6) -> None:
        super().__init__("", id=id)
        self.limit = limit
        self._shown: tuple[object, ...] | None = None

    def show(self, findings: Sequence[Finding]) -> None:
        """Redraw when the findings changed."""
        sig = (
            self.limit,
            *((f.severity, f.subject, f.summary, tuple(f.evidence.items())) for f in findings),
        )
        if sig == self._shown:
            return
        self._shown = sig
        self.update(findings_detail(findings, self.limit))


class FocusPanel(QuietStatic):
    """Focus mode's fast-updating lines (hidden while nothing is focused)."""

    DEFAULT_CSS = """
    FocusPanel {
        height: auto; max-height: 3; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def show(self, fs: FocusSession | None, width: int, thresholds: Mapping[str, float]) -> None:
        """Redraw from the focus session, or hide."""
        self.display = fs is not None
        if fs is not None:
            self.update(focus_text(fs, width, thresholds))
