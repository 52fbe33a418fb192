"""Links table: throughput with sparklines, line-rate share, RDMA share, loss, pauses, ECN.

Colours that mark a threshold read it from the state's thresholds (the ones the rules
run with): pause counts red from ``pause_hot_ratio``, line share bold from
``line_busy_ratio``, temperature yellow and red at the NIC rule's warning and critical.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from textual.message import Message

from collectors.text import natural
from collectors.vocabulary import Derived
from fabtop.core.history import History
from tui import format as fmt
from tui.rows.grid import GLYPHS, cable_word
from tui.rows.groups import RULE
from tui.rows.links import LinkRow
from tui.widgets.health_grid import STYLES as GRID_STYLES
from tui.widgets.keyed_table import Column, Spec
from tui.widgets.virtual_table import VirtualTable

DIM = "grey50"
SPARK_W = 5
HOT_PAUSE_STYLE = "bold white on red"
BPS = {"rx": Derived.RX_BPS, "tx": Derived.TX_BPS}  # the sparklines' series
UNKNOWN_SPEED_FLOOR_BPS = 1e9
CABLE_MIN_WIDTH = 136  # the cable column: room beside every other column
DOWN_ARROW, UP_ARROW = "▼", "▲"  # the sorted column's header: descending, ascending
GROUP_OPEN, GROUP_SHUT = "▾", "▸"  # a group's row: all its links below it, or not


@dataclass(slots=True, frozen=True)
class SortSpec:
    """A sortable column: label in the footer, key function, descending or not."""

    key: str
    label: str
    # The column's value; None: the host order (hosts by number, fabric links first).
    value: Callable[[LinkRow], object] | None
    descending: bool = True
    worst: bool = False  # links with something to say first, the worst on top


# Within a host, fabric links first: RDMA, then Thunderbolt, then the rest.
KIND_RANK = {"roce": 0, "ib": 1, "tb": 2, "netdev": 3, "virtual": 4}


def _num(v: float | None) -> float:
    return -1.0 if v is None else v


def host_order(rows: Iterable[LinkRow]) -> Callable[[LinkRow], tuple[int, int, str]]:
    """The key of the host order over ``rows``: hosts by number (node2 before node10),
    within a host RDMA links, then Thunderbolt, then the rest, each by id. A host's place
    is one number: comparing names part by part was half of sorting 1250 rows."""
    place = {h: i for i, h in enumerate(sorted({r.host for r in rows}, key=natural))}
    kind = KIND_RANK.get
    return lambda r: (place[r.host], kind(r.kind, 5), r.lid)


def _group_rank(r: LinkRow) -> tuple[int, int]:
    return r.rank


SORTS: tuple[SortSpec, ...] = (
    # The default: links with a finding, down or on a host not reporting on top, worst
    # first; the rest as the host order has them (a quiet fabric reads as before).
    SortSpec("worst", "worst first", None, False, worst=True),
    SortSpec("host", "host", None, False),
    SortSpec("rx", "rx", lambda r: _num(r.rx_bps)),
    SortSpec("tx", "tx", lambda r: _num(r.tx_bps)),
    SortSpec("line", "% line", lambda r: _num(r.line_ratio)),
    SortSpec("loss", "loss", lambda r: _num(r.loss_per_s)),
    SortSpec("prx", "pause rx", lambda r: _num(r.pause_rx_per_s)),
    SortSpec("ptx", "pause tx", lambda r: _num(r.pause_tx_per_s)),
    SortSpec("ecn", "ECN", lambda r: _num(r.ecn_per_s)),
    SortSpec("cnp", "CNP", lambda r: _num(r.cnp_per_s)),
    SortSpec("temp", "temp", lambda r: _num(r.temperature_c)),
)
SORT_BY_COLUMN = {s.key: s for s in SORTS} | {"link": SORTS[1]}


def link_columns(width: int, delta: bool) -> list[Column]:
    """The columns that fit ``width`` (80 columns keep the essentials)."""
    wide = width >= 116
    num_w = 5 + (1 + SPARK_W) if wide else 6
    cols = [
        Column("host", "Host", 8, False),
        # 100 columns have room for a whole "enp65s0f0np0" beside CNP
        Column("link", "Link", 13 if width >= 100 else 10, False),
    ]
    if wide:
        cols.append(Column("type", "Type", 9, False))
    cols += [
        Column("state", "St", 4, False),
        Column("rx", "RX Gb/s" if wide else "RX G/s", num_w),
        Column("tx", "TX Gb/s" if wide else "TX G/s", num_w),
        Column("line", "%L", 4),
    ]
    if wide:
        cols.append(Column("rdma", "RDMA", 4))
    # Loss, pauses, ECN and CNP are per second, or counts since 'r' in delta mode (where
    # the pause headers shorten so "Δ" fits the 5 columns whole).
    d = "Δ" if delta else ""
    prx, ptx = ("ΔPRx", "ΔPTx") if delta else ("PauRx", "PauTx")
    cols += [
        Column("loss", f"{d}Loss", 5),
        Column("prx", prx, 5),
        Column("ptx", ptx, 5),
        Column("ecn", f"{d}ECN", 5),
    ]
    if width >= 100:
        cols.append(Column("cnp", f"{d}CNP", 5))
    if width >= 128:
        cols.append(Column("temp", "Temp", 4))
    if width >= CABLE_MIN_WIDTH:  # the cable rules' word on the link (issue 33)
        cols.append(Column("cable", "Cable", 7, False))
    return cols


_KIND_LABEL = {"roce": "RoCE", "ib": "IB", "tb": "TB", "virtual": "virt", "netdev": "eth"}


def sorted_label(label: str, width: int, descending: bool) -> str:
    """The sorted column's header: its label and the direction's arrow, within ``width``.

    The unit goes first when both do not fit ("RX G/s" -> "RX ▼"), then the label's end.
    """
    arrow = DOWN_ARROW if descending else UP_ARROW
    word = label.split(" ")[0]
    for candidate in (f"{label} {arrow}", f"{label}{arrow}", f"{word} {arrow}"):
        if len(candidate) <= width:
            return candidate
    return label[: max(0, width - 1)] + arrow


def _kind(r: LinkRow) -> str:
    if r.group:  # several links of several kinds: the link column says how many
        return ""
    return _KIND_LABEL.get(r.kind) or r.kind[:4]


def _state(r: LinkRow) -> Spec:
    if r.group:  # a group: how many of its links have something to say
        return Spec(f"{r.bad} !", "bold red") if r.bad else Spec("ok", "green" if r.live else DIM)
    s = r.state or fmt.DASH
    if s in ("up", "active"):
        return Spec("up", "green" if r.live else DIM)
    if s in ("down", "disabled"):
        return Spec(s[:4].upper(), "bold red")
    if s == "empty":  # a Thunderbolt receptacle with no cable (collectors/darwin.py)
        return Spec("free", DIM)
    return Spec(s[:4], "yellow")


def _bad(v: float | None, style: str, base: str) -> Spec:
    return Spec(fmt.si(v), style if v and base != DIM else base, "right")


def link_cells(
    r: LinkRow,
    spark: Callable[[LinkRow, str], str] | None,
    delta: bool,
    thresholds: Mapping[str, float],
    link_w: int = 13,
) -> dict[str, Spec]:
    """The cells of one link row, coloured at ``thresholds`` (the state's)."""
    base = "" if r.live else DIM
    host, name = r.host, fmt.middle(r.lid, link_w)
    if r.group:  # ▾ every link of the group shown below it, ▸ some hidden (Enter)
        arrow = GROUP_OPEN if not r.hidden else GROUP_SHUT
        host, name = f"{arrow} {r.host}", f"{r.folded} link{'s' if r.folded != 1 else ''}"
        if r.group.startswith(f"{RULE}:"):  # a rule's name wants the wider column
            host, name = f"{arrow} {r.folded}", fmt.middle(r.host, link_w)
    cells: dict[str, Spec] = {
        "host": Spec(host, base or "bold", None, True, "ellipsis"),
        "link": Spec(name, base or ("dim" if r.group else ""), None, True),
        "type": Spec("" if r.group else f"{_kind(r):<4} {fmt.speed(r.speed_gbps):>4}", base),
        "state": _state(r),
    }
    for side, bps in (("rx", r.rx_bps), ("tx", r.tx_bps)):
        parts: list[tuple[str, str]] = []
        if spark is not None:
            parts.append((spark(r, side), "cyan" if not base else DIM))
            parts.append((" ", ""))
        if r.gap:
            parts.append((" gap ", "bold magenta" if not base else DIM))
        else:
            parts.append((fmt.gbps(bps).rjust(5), base or "bold"))
        cells[side] = Spec(tuple(parts), "", "right", True)
    line = r.line_ratio
    busy = line is not None and line >= thresholds["line_busy_ratio"]
    cells["line"] = Spec(fmt.pct(line), base or ("bold" if busy else ""), "right")
    cells["rdma"] = Spec(fmt.pct(r.rdma_share), base, "right")
    hot = r.pause_time_ratio is not None and r.pause_time_ratio >= thresholds["pause_hot_ratio"]
    pause_style = HOT_PAUSE_STYLE if hot else "yellow"
    if delta:
        vals = (r.d_loss, r.d_pause_rx, r.d_pause_tx, r.d_ecn, r.d_cnp)
    else:
        vals = (r.loss_per_s, r.pause_rx_per_s, r.pause_tx_per_s, r.ecn_per_s, r.cnp_per_s)
    loss, prx, ptx, ecn, cnp = vals
    if r.gap and not delta:
        loss = prx = ptx = ecn = cnp = None
    cells["loss"] = _bad(loss, "bold red", base)
    cells["prx"] = _bad(prx, pause_style, base)
    cells["ptx"] = _bad(ptx, pause_style, base)
    cells["ecn"] = _bad(ecn, "cyan", base)
    cells["cnp"] = _bad(cnp, "cyan", base)
    temp = r.temperature_c
    warn, crit = thresholds["nic_temp_warn_c"], thresholds["nic_temp_crit_c"]
    tstyle = base or (
        "bold red" if temp and temp >= crit else "yellow" if temp and temp >= warn else ""
    )
    cells["temp"] = Spec(fmt.celsius(temp), tstyle, "right")
    cells["cable"] = _cable(r, base)
    return cells


def _cable(r: LinkRow, base: str) -> Spec:
    """The grid's glyph and a word for what the cable rules say ("C BER↑", "· ok"); blank
    where neither optics nor FEC are read and no rule speaks."""
    said = None if r.group else cable_word(r.alarms, r.optics)
    if said is None:
        return Spec("")
    state, word = said
    return Spec(f"{GLYPHS[state]} {word}", base or GRID_STYLES[state])  # as its grid cell


class LinkTable(VirtualTable[LinkRow]):
    """The links table; ``show`` sets every row in the chosen order, and only the rows on
    screen are made into cells (tui/widgets/virtual_table.py)."""

    class ProblemsAbove(Message):
        """How many new problems sit above the view, not yet seen, changed."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self._cells, id=id)
        # Rows with something to say at the last show; of them, the ones that became so
        # since and sit above the view, not yet seen (the state line announces them).
        self._problems: set[str] = set()
        self.new_above: set[str] = set()
        self.sort_spec: SortSpec = SORTS[0]
        self.reversed = False  # the 'O' key: the sort column's other direction
        # What the cells of the last ``show`` were made with (a row scrolled into view
        # gets the cells a tick would have given it).
        self._spark: Callable[[LinkRow, str], str] | None = None
        self._delta = False
        self._thresholds: Mapping[str, float] = {}
        self._link_w = 13

    def _cells(self, r: LinkRow) -> dict[str, Spec]:
        return link_cells(r, self._spark, self._delta, self._thresholds, self._link_w)

    @property
    def descending(self) -> bool:
        """The direction rows are sorted in now: the column's own, or its reverse."""
        return self.sort_spec.descending != self.reversed

    def cycle_sort(self) -> SortSpec:
        """Next sort column (the 'o' key), in its natural direction."""
        i = SORTS.index(self.sort_spec) if self.sort_spec in SORTS else 0
        self.sort_spec = SORTS[(i + 1) % len(SORTS)]
        self.reversed = False
        return self.sort_spec

    def reverse_sort(self) -> bool:
        """The other direction (the 'O' key); returns whether it is descending now."""
        self.reversed = not self.reversed
        return self.descending

    def sort_by_column(self, column: str) -> SortSpec | None:
        """Sort by a clicked header (None when that column does not sort); a second click
        on the sorted column reverses it."""
        spec = SORT_BY_COLUMN.get(column)
        if spec is not None:
            self.reversed = not self.reversed if spec == self.sort_spec else False
            self.sort_spec = spec
        return spec

    def show(
        self,
        rows: Sequence[LinkRow],
        width: int,
        history: History | None,
        interval: float,
        delta: bool,
        thresholds: Mapping[str, float],
    ) -> None:
        """Show ``rows`` in the chosen order, coloured at ``thresholds`` (the state's)."""
        cols = link_columns(width, delta)
        # The sorted column's header carries the arrow.
        self.set_columns(
            cols,
            [
                sorted_label(c.label, c.width or len(c.label) + 2, self.descending)
                if c.key == self.sort_spec.key
                else c.label
                for c in cols
            ],
        )
        spark = None
        if history is not None and any(c.key == "rx" and (c.width or 0) > 6 for c in cols):
            span = SPARK_W * interval + interval / 2
            # Links of unknown speed share one scale (the busiest of them, with headroom,
            # and never under 1 Gb/s, the slowest Ethernet a host has): scaled each to its
            # own peak, an idle management port drew a full bar.
            shared = max(
                UNKNOWN_SPEED_FLOOR_BPS,
                1.25
                * max(
                    (
                        v
                        for r in rows
                        if not r.speed_gbps and not r.group
                        for side in BPS
                        if (h := history.get((r.host, r.lid, BPS[side]))) is not None
                        for v in h.last(SPARK_W, span)
                        if v is not None
                    ),
                    default=0.0,
                ),
            )

            def spark(r: LinkRow, side: str) -> str:
                s = history.get((r.host, r.lid, BPS[side]))
                if s is None:
                    return " " * SPARK_W
                vals = s.last(SPARK_W, span)
                # Scale to line rate, so a steady link is a steady mid-height line and
                # an idle one lies flat.
                top = r.speed_gbps * 1e9 if r.speed_gbps else shared
                return fmt.sparkline(vals, SPARK_W, top or None)

        spec, descending = self.sort_spec, self.descending
        if spec.value is None:
            by_host = host_order(rows)
            key = (lambda r: (-r.badness, by_host(r))) if spec.worst else by_host
            ordered = sorted(rows, key=key, reverse=descending)
        elif descending:
            # equal values keep host order, so a quiet fabric does not shuffle
            ordered = sorted(rows, key=host_order(rows))
            ordered.sort(key=spec.value, reverse=True)  # type: ignore[arg-type]
        else:
            ordered = sorted(rows, key=spec.value)  # type: ignore[arg-type]
        # Groups (tui/rows/groups.py) stay whole and in their order, the sort within each.
        ordered.sort(key=_group_rank)
        self._spark, self._delta, self._thresholds = spark, delta, thresholds
        self._link_w = next((c.width or 13) for c in cols if c.key == "link")
        keys = [r.key for r in ordered]
        self.set_rows(keys, ordered)
        problems = {k for k, r in zip(keys, ordered, strict=True) if _is_problem(r)}
        fresh = problems - self._problems
        self._problems = problems
        self._note_above(fresh)

    def _note_above(self, fresh: set[str] | frozenset[str] = frozenset()) -> None:
        """Keep ``new_above`` to the new problems still above the view."""
        top = int(self.scroll_y)
        above = set()
        for key in self.new_above | fresh:
            i = self.index_of(key)
            if key in self._problems and i is not None and i < top:
                above.add(key)
        if above != self.new_above:
            self.new_above = above
            self.post_message(self.ProblemsAbove(len(above)))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._note_above()  # scrolled up to it: seen

    def action_next_problem(self) -> None:
        """To the nearest new problem above the view; else the next problem row below the
        cursor, round to the top."""
        keys = self.row_keys()
        if self.new_above:
            self.move_cursor(row=max(self.get_row_index(k) for k in self.new_above))
            return
        n = len(keys)
        for step in range(1, n + 1):
            i = (self.cursor_row + step) % n
            if keys[i] in self._problems:
                self.move_cursor(row=i)
                return


def _is_problem(r: LinkRow) -> bool:
    """A row with something to say: a link, or a group none of whose links show."""
    return r.badness > 0 and (not r.group or r.hidden == r.folded)
