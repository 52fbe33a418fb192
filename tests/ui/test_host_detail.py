"""A host's detail (Enter or i on a host): the whole error, warnings, sections, its links."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Region
from textual.widgets import Static

from collectors.samples import SectionStatus
from tests.ui.fabric import dashboard as make
from tests.ui.fabric import feed, sample, words
from tui.app import FabtopApp
from tui.screens.host_detail import HostDetailScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.host_table import HostTable
from tui.widgets.link_table import LinkTable

LONG_ERROR = (
    "node2 (admin@10.0.0.2): Host key verification failed.\n"
    "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ someone could be "
    "eavesdropping on you right now (man-in-the-middle attack); offending key in "
    "/home/admin/.ssh/known_hosts:12"
)


def body(app: FabtopApp) -> str:
    """The host detail as drawn (every line, wrapped to the screen)."""
    w = app.screen.query_one("#host-text", Static)
    return "\n".join(s.text for s in w.render_lines(Region(0, 0, *w.outer_size)))


async def test_enter_on_a_down_host_shows_its_whole_error_wrapped_at_80x24() -> None:
    app, state, _ = make()
    state.apply_status("node2", "down", LONG_ERROR)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        hosts = app.screen.query_one(HostTable)
        hosts.focus()
        hosts.move_cursor(row=hosts.row_keys().index("node2"))
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, HostDetailScreen) and scr.host == "node2"
        text = body(app)
        assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
        assert words(LONG_ERROR) in words(text)  # every word, none cut
        assert "DOWN" in text and "target" in text and "rtt" in text and "frames" in text
        assert "did not answer" in text  # its finding
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_probe_warnings_sections_and_what_is_not_read_are_shown() -> None:
    app, state, clock = make(hosts=2)
    s = sample("node1", 21)
    s.sections = [
        SectionStatus("gpu_nvidia", None, "missing", detail="no nvidia-smi"),
        SectionStatus("dcb_pfc", "enp65s0f0np0", "error", detail="DCB not supported by the device"),
        SectionStatus("ethtool", "enp65s0f0np0", "ok", read_ns=3_000_000),
    ]
    s.warnings = ["lldptool: not installed, neighbours unknown"]
    clock.t += 1.0
    feed(state, "node1", s, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        app.screen.query_one(LinkTable).focus()
        await pilot.press("i")  # the first link is node1's
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen) and app.screen.host == "node1"
        text = words(body(app))
        assert "lldptool: not installed, neighbours unknown" in text
        assert "no nvidia-smi" in text and "DCB not supported by the device" in text
        assert "gpu_nvidia" in text and "missing" in text and "ethtool" in text
        assert "Not read on this host" in text


async def test_l_shows_only_that_hosts_links_and_esc_shows_all() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.push_screen(HostDetailScreen(app.ctx, "node2"))
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        links = app.screen.query_one(LinkTable)
        assert {k.split("\x1f")[0] for k in links.row_keys()} == {"node2"}
        line = Text.from_markup(app.screen.query_one(HostTable).border_subtitle or "").plain
        assert "links: node2 only" in line and "Esc shows all" in line
        await pilot.press("escape")
        assert len(links.row_keys()) == 6
        line = Text.from_markup(app.screen.query_one(HostTable).border_subtitle or "").plain
        assert "only" not in line


async def test_l_from_the_findings_view_goes_to_the_overview() -> None:
    app, _, _ = make()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("i")  # the storm's host
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        keys = app.screen.query_one(LinkTable).row_keys()
        assert keys and {k.split("\x1f")[0] for k in keys} == {"node3"}


async def test_host_detail_says_what_is_not_monitored_on_a_host() -> None:
    # The test fabric's hosts have RDMA links but no GPU tool and no inference server:
    # said in the same sentences as the calm line, not as failures.
    app, _, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(HostDetailScreen(app.ctx, "node1"))
        await pilot.pause()
        text = words(body(app))
        assert "Not monitored on this host" in text
        assert "GPUs not monitored on node1" in text and "no inference server on node1" in text
