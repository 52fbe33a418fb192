"""Link detail (Enter on a link): charts over time and every raw counter that moved."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.widgets import Footer, Input, Static

from collectors.samples import LinkSample
from collectors.text import clean
from collectors.vocabulary import Derived, Metric
from fabtop.core.history import SeriesKey
from fabtop.core.rates import LinkRates
from fabtop.core.rules.context import is_rdma_ethernet
from fabtop.core.rules.roce_gids import gid_text, v2_address
from fabtop.core.thunderbolt import cables_of, pair_cables
from tui import format as fmt
from tui.context import ViewContext
from tui.rows.cable import cable_panel
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.charts import TimeChart
from tui.widgets.keyed_table import Column, KeyedTable
from tui.widgets.quiet_static import QuietStatic
from tui.widgets.top_bar import TopBar

SPANS = {"1m": 60.0, "15m": 900.0, "6h": 6 * 3600.0}
# The charts' lines: (label, the link's history series, scale to the chart's unit).
Line = tuple[str, str, float]
THROUGHPUT: tuple[Line, ...] = (("rx", Derived.RX_BPS, 1e-9), ("tx", Derived.TX_BPS, 1e-9))
PAUSES: tuple[tuple[str, str], ...] = (("rx", Metric.RX_PAUSE.per_s), ("tx", Metric.TX_PAUSE.per_s))
CONGESTION: tuple[Line, ...] = (
    ("ECN", Metric.ECN_MARKED.per_s, 1.0),
    ("CNP sent", Metric.CNP_SENT.per_s, 1.0),
    ("CNP handled", Metric.CNP_HANDLED.per_s, 1.0),
)
LOSS: tuple[Line, ...] = (
    ("discards", Metric.RX_DISCARDS.per_s, 1.0),
    ("out of buffer", Metric.RX_OUT_OF_BUFFER.per_s, 1.0),
    ("phy errors", Metric.RX_PHY_ERRORS.per_s, 1.0),
)


def _rate_of(lr: LinkRates | None, key: str) -> float:
    if lr is None:
        return 0.0
    source, _, name = key.partition("\x1f")
    return lr.raw_rates.get(source, {}).get(name, 0.0)


def _addressing(link: LinkSample) -> tuple[str, str]:
    """(text, style): an InfiniBand port's SM LID; a RoCE port's RoCE v2 GID (index and
    address), or that it has none; empty when unknown."""
    if link.link_layer == "InfiniBand" and link.sm_lid is not None:
        stuck = link.sm_lid == 0 and link.phys_state == "LinkUp"
        return f"sm_lid 0x{link.sm_lid:x}", "bold red" if stuck else ""
    if is_rdma_ethernet(link) and link.gids is not None:
        g = v2_address(link.gids)
        if g is not None:
            return f"v2 GID {g.index} {clean(gid_text(g), 64)}", ""
        if not link.gids_truncated:
            return "no v2 GID with an address", "bold red"
    return "", ""


class LinkDetailScreen(DataScreen):
    """One link: throughput, pauses per priority, ECN/CNP, errors, raw counters."""

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("m", "span('1m')", "1 min"),
        Binding("f", "span('15m')", "15 min"),
        Binding("h", "span('6h')", "6 h"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("o", "sort", "order by rate/name"),
    ]

    def __init__(self, ctx: ViewContext, host: str, lid: str) -> None:
        super().__init__(ctx, name="link_detail")
        self.host, self.lid = host, lid
        self.span = "1m"
        self.filter_text = ""
        self.by_rate = False
        self._moved: set[tuple[str, str]] = set()

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield QuietStatic(id="link-title")
        yield QuietStatic(id="cable")
        with Grid(id="charts"):
            yield TimeChart("throughput Gb/s", id="chart-bps")
            yield TimeChart("pause frames/s", id="chart-pause")
            yield TimeChart("ECN marks, CNPs /s", id="chart-ecn")
            yield TimeChart("loss /s", id="chart-loss")
        yield KeyedTable(id="raw")
        yield Input(placeholder="filter counters (Enter keeps it, Esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        # The value column grows to the longest counter (a u64 with separators is 26
        # characters): digits are never dropped. The counter name takes what is left.
        self.query_one("#raw", KeyedTable).set_layout(
            [
                Column("source", "Source", None, False, drop=1),
                Column("counter", "Counter", None, False, flex=True, min_width=16),
                Column("rate", "per s", 5),
                Column("value", "value", 6),
            ]
        )
        self.query_one("#raw", KeyedTable).focus()
        self.refresh_view()

    def refresh_view(self) -> None:
        """Redraw the title, the charts and the raw counter table."""
        super().refresh_view()
        ctx = self.ctx
        state = ctx.state
        self.query_one(TopBar).show(summary(state, ctx.now(), ctx.interval), ctx.paused, None)
        hs = state.hosts.get(self.host)
        link = hs.sample.links.get(self.lid) if hs and hs.sample else None
        lr = hs.rates.links.get(self.lid) if hs and hs.rates else None
        self.query_one("#link-title", Static).update(self._title(link is not None))
        panel = cable_panel(state, self.host, self.lid, ctx.cables)
        box = self.query_one("#cable", Static)
        box.display = panel is not None
        if panel is not None:
            box.update(panel)
        self._charts()
        rows: list[tuple[str, dict[str, Text]]] = []
        if link is not None:
            raw = lr.raw_rates if lr is not None else {}
            for source, counters in sorted(link.counters.items()):
                rates = raw.get(source, {})
                for name, value in sorted(counters.items()):
                    rate = rates.get(name)
                    if rate:
                        self._moved.add((source, name))
                    if (source, name) not in self._moved:
                        continue
                    if self.filter_text and self.filter_text.lower() not in name.lower():
                        continue
                    style = "" if rate else "grey50"
                    rows.append(
                        (
                            f"{source}\x1f{name}",
                            {
                                "source": Text(source, style),
                                "counter": Text(name, style or "bold"),
                                "rate": Text(fmt.si(rate), style, justify="right"),
                                "value": Text(f"{value:,}", style, justify="right"),
                            },
                        )
                    )
        if self.by_rate:
            rows.sort(key=lambda r: -_rate_of(lr, r[0]))
        self.query_one("#raw", KeyedTable).sync(rows)

    def _title(self, present: bool) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f" {self.host} ", "bold reverse")
        t.append(f" {self.lid} ", "bold")
        t.append(" span", "dim")
        for name in SPANS:
            t.append(f" {name} ", "bold reverse" if name == self.span else "dim")
        hs = self.ctx.state.hosts.get(self.host)
        link = hs.sample.links.get(self.lid) if hs and hs.sample else None
        if link is None or not present:
            t.append("  link not reported by the host", "red")
        else:
            kind = {"roce": "RoCE", "ib": "InfiniBand", "tb": "Thunderbolt"}.get(
                link.kind, link.link_layer or link.kind
            )
            bits = [
                kind,
                fmt.speed(link.rate_gbps),
                link.state or "",
                f"mtu {link.mtu}" if link.mtu else "",
                f"{link.rdma_device}/{link.port}" if link.rdma_device else "",
            ]
            if link.kind == "tb":  # the cable it rides on: lanes x lane speed, the far end
                cab = cables_of(
                    pair_cables({n: h.sample for n, h in self.ctx.state.hosts.items()}),
                    self.host,
                    link.netdev,
                )
                bits.append(clean(cab[0].text, 200) if cab else "Thunderbolt bus not read")
            t.append("  " + "  ".join(b for b in bits if b), "")
            text, style = _addressing(link)  # beside the RDMA port it belongs to
            if text:
                t.append("  ")
                t.append(text, style)
            more = [link.driver or "", f"fw {link.firmware}" if link.firmware else ""]
            t.append("".join(f"  {b}" for b in more if b), "")
        return t

    def _key(self, *parts: str) -> SeriesKey:
        return (self.host, self.lid, *parts)

    def _lines(self, lines: tuple[Line, ...]) -> list[tuple[str, SeriesKey, float]]:
        return [(label, self._key(name), scale) for label, name, scale in lines]

    def _charts(self) -> None:
        h = self.ctx.state.history
        span = SPANS[self.span]
        stat: Literal["mean", "max"] = "max" if span > 900 else "mean"
        ref = h.get(self._key(Derived.RX_BPS)) or h.get(self._key(Derived.TX_BPS))
        times, _ = ref.points(1.0) if ref is not None else ([], [])
        now = times[-1] if times else None
        self.query_one("#chart-bps", TimeChart).draw(h, self._lines(THROUGHPUT), span, now)
        pause: list[tuple[str, SeriesKey, float]] = []
        for side, name in PAUSES:
            for p in range(8):
                key = self._key(name, str(p))
                s = h.get(key)
                if s is not None:
                    _, vals = s.points(span, now=now)
                    if any(v for v in vals):
                        pause.append((f"{side} p{p}", key, 1.0))
        self.query_one("#chart-pause", TimeChart).draw(h, pause, span, now, stat)
        self.query_one("#chart-ecn", TimeChart).draw(h, self._lines(CONGESTION), span, now, stat)
        self.query_one("#chart-loss", TimeChart).draw(h, self._lines(LOSS), span, now, stat)

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def action_back(self) -> None:
        """Back to the overview (or close the filter first)."""
        box = self.query_one("#filter", Input)
        if box.display or self.filter_text:
            self.filter_text = ""
            box.value = ""
            box.display = False
            self.query_one("#raw", KeyedTable).focus()
            self.refresh_view()
            return
        self.dismiss()

    def action_span(self, span: str) -> None:
        """Show the last 1 min, 15 min or 6 h."""
        if span in SPANS:
            self.span = span
            self.refresh_view()

    def action_sort(self) -> None:
        """Order the raw counters by rate (biggest movers first) or by name."""
        self.by_rate = not self.by_rate
        self.refresh_view()

    def action_filter(self) -> None:
        """Open the counter filter."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.refresh_view()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.display = False
        self.query_one("#raw", KeyedTable).focus()
