"""What every data screen shares: the view context, one refresh entry point, the footer's order.

The footer lists the help key first, then every screen, then the screen's own keys, quit,
then the rest; a key that does not fit whole is left out (help lists every key), so at 80
columns the footer still shows ``?`` and every screen (as ``1-6 screens`` when their
names do not fit beside the screen's own keys), never half a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from textual.binding import ActiveBinding, Binding
from textual.screen import Screen

from tui.context import ViewContext
from tui.widgets.top_bar import TopBar

FooterItem = tuple[str, ActiveBinding]


def item_width(binding: Binding, key_display: str) -> int:
    """Columns one key takes in Textual's Footer: `` k `` then ``description ``."""
    return len(key_display) + 2 + (len(binding.description) + 1 if binding.description else 0)


def footer_items(
    active: Mapping[str, ActiveBinding],
    app_node: object,
    screens: tuple[tuple[str, str], ...],
    width: int,
    key_display: dict[str, str],
) -> dict[str, ActiveBinding]:
    """``active`` in footer order, with ``show`` off for keys that do not fit ``width``.

    ``screens``: (number key, name) of every screen; each is listed by name when all of
    them fit beside the help key, else as one ``1-N screens`` key. ``key_display``: how
    the app writes each key (``?`` for question_mark).
    """
    screen_keys = {k for k, _ in screens}
    helps: list[FooterItem] = []
    own: list[FooterItem] = []
    rest: list[FooterItem] = []
    by_screen: dict[str, ActiveBinding] = {}
    for k, ab in active.items():
        is_app = ab.node is app_node
        if is_app and k in screen_keys:
            by_screen[k] = ab
        elif is_app and ab.binding.action == "help":
            helps.append((k, ab))
        elif is_app:
            rest.append((k, ab))
        else:
            own.append((k, ab))
    rest.sort(key=lambda item: item[1].binding.action != "quit")  # quit first of the rest

    def width_of(items: list[FooterItem]) -> int:
        return sum(
            item_width(ab.binding, key_display.get(k, k)) for k, ab in items if ab.binding.show
        )

    named = [
        (
            k,
            by_screen[k]._replace(
                binding=replace(by_screen[k].binding, show=True, description=name)
            ),
        )
        for k, name in screens
        if k in by_screen
    ]
    quits = [(k, ab) for k, ab in rest if ab.binding.action == "quit"]
    # By name only when the screen's own keys and quit still fit beside them.
    if named and width_of([*helps, *named, *own, *quits]) > width:
        first, last = named[0][0], named[-1][0]
        ab = named[0][1]
        one = ab._replace(
            binding=replace(ab.binding, description="screens", key_display=f"{first}-{last}")
        )
        key_display = {**key_display, first: f"{first}-{last}"}
        named = [(first, one)] + [
            (k, a._replace(binding=replace(a.binding, show=False))) for k, a in named[1:]
        ]
    out: dict[str, ActiveBinding] = {}
    used = 0
    for k, ab in [*helps, *named, *own, *rest]:
        if not ab.binding.show:
            out[k] = ab
            continue
        w = item_width(ab.binding, key_display.get(k, k))
        if used + w > width:
            out[k] = ab._replace(binding=replace(ab.binding, show=False))
            continue
        used += w
        out[k] = ab
    return out


class DataScreen(Screen[None]):
    """A screen over FabricState; only the visible one is refreshed, by the app."""

    def __init__(self, ctx: ViewContext, name: str | None = None) -> None:
        super().__init__(name=name)
        self.ctx = ctx
        self.refreshes = 0

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys in the footer's order (see the module's docstring); Textual's Footer
        shows them in this order."""
        active = super().active_bindings
        app = self.app
        display = {k: app.get_key_display(ab.binding) for k, ab in active.items()}
        return footer_items(active, app, self.ctx.screens, self.size.width or 80, display)

    def on_resize(self) -> None:
        # The footer's keys depend on the width: the screens by name, or as one key.
        self.refresh_bindings()

    def frames_used(self) -> tuple[tuple[str, int], ...]:
        """Each host's count of frames used: the hosts' samples and rates change with it
        only, so a screen drawn from them alone skips a refresh that finds it as it was
        (the app refreshes on frames and on its own 1 s timer)."""
        return tuple((name, hs.frames) for name, hs in self.ctx.state.hosts.items())

    def refresh_view(self) -> None:
        """Redraw from the current state (called at most once per tick by the app)."""
        self.refreshes += 1
        # Every top line says REC while recording (each screen then redraws its own).
        for bar in self.query(TopBar):
            bar.recording = self.ctx.recording

    def show_flags(self) -> None:
        """The pause/delta markers changed: redraw them without new data."""

    def home(self) -> None:
        """Reached by its number key or by Esc from another screen: a screen with panels
        puts the focus where it starts, so the same keys do the same thing on every visit."""

    def on_screen_resume(self) -> None:
        # Background screens were not refreshed; catch up as soon as one is shown.
        if not self.ctx.paused:
            self.refresh_view()
        self.show_flags()
