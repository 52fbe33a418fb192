"""The replay bar: time cursor over the recording, speed, paused/playing, and the keys."""

from __future__ import annotations

from rich.text import Text

from tui.widgets.quiet_static import QuietStatic


def clock(seconds: float) -> str:
    """``H:MM:SS`` (or ``M:SS`` under an hour)."""
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def replay_text(
    cursor: float, duration: float, speed: float, paused: bool, width: int, name: str = ""
) -> Text:
    """One line: ▶/⏸, cursor / duration, a progress track, speed and the keys."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(" REPLAY ", "bold reverse")
    t.append(" ⏸ " if paused else " ▶ ", "bold yellow" if paused else "bold green")
    t.append(f"{clock(cursor)} / {clock(duration)}", "bold")
    t.append(f"  {speed:g}x")
    keys = "  space pause  ,/. ±10s  </> ±60s  -/+ speed"
    track = max(0, width - len(t.plain) - len(keys) - len(name) - 4)
    if track >= 10:
        done = int(track * (cursor / duration)) if duration > 0 else 0
        t.append("  ")
        t.append("━" * done, "green")
        t.append("─" * (track - done), "dim")
    t.append(keys, "dim")
    if name:
        t.append(f"  {name}", "dim")
    return t


class ReplayBar(QuietStatic):
    """Shown at the bottom of every screen while replaying; the app sets its position."""

    FIXED_SIZE = True  # one line (DEFAULT_CSS): its text never moves another widget

    DEFAULT_CSS = """
    ReplayBar {
        dock: bottom;
        height: 1;
        background: $boost;
    }
    """

    def __init__(self, name: str = "") -> None:
        super().__init__("", id="replay-bar")
        self.file_name = name
        self.position: tuple[float, float, float, bool] = (0.0, 0.0, 1.0, False)
        self.drawn = False

    def show(self, cursor: float, duration: float, speed: float, paused: bool) -> None:
        """Move the cursor (redraws only when something visible changed)."""
        pos = (float(int(cursor)), duration, speed, paused)
        if pos == self.position and self.drawn:
            return
        self.position, self.drawn = pos, True
        self.update(
            replay_text(cursor, duration, speed, paused, self.size.width or 120, self.file_name)
        )

    def on_resize(self) -> None:
        c, d, s, p = self.position
        self.update(replay_text(c, d, s, p, self.size.width or 120, self.file_name))
