"""Links table: throughput with sparklines, line-rate share, RDMA share, loss, pauses, ECN."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from fabtop.history import History
from tui import format as fmt
from tui.views import LinkRow
from tui.widgets.keyed_table import Column, KeyedTable

DIM = "grey50"
SPARK_W = 5
# A pause-time ratio above this is a storm in the making (the rules decide the finding).
STORM_RATIO = 0.5


@dataclass(slots=True, frozen=True)
class SortSpec:
    """A sortable column: label in the footer, key function, descending or not."""

    key: str
    label: str
    value: Callable[[LinkRow], object]
    descending: bool = True


# Within a host, fabric links first: RDMA, then Thunderbolt, then the rest.
KIND_RANK = {"roce": 0, "ib": 1, "tb": 2, "netdev": 3, "virtual": 4}


def _num(v: float | None) -> float:
    return -1.0 if v is None else v


SORTS: tuple[SortSpec, ...] = (
    SortSpec("host", "host", lambda r: (r.host, KIND_RANK.get(r.kind, 5), r.lid), False),
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
SORT_BY_COLUMN = {s.key: s for s in SORTS} | {"link": SORTS[0]}


def link_columns(width: int, delta: bool) -> list[Column]:
    """The columns that fit ``width`` (80 columns keep the essentials)."""
    wide = width >= 116
    num_w = 5 + (1 + SPARK_W) if wide else 6
    cols = [Column("host", "Host", 8, False),
            Column("link", "Link", 13 if wide else 10, False)]
    if wide:
        cols.append(Column("type", "Type", 9, False))
    cols += [Column("state", "St", 4, False),
             Column("rx", "RX Gb/s" if wide else "RX G/s", num_w),
             Column("tx", "TX Gb/s" if wide else "TX G/s", num_w),
             Column("line", "%L", 4)]
    if wide:
        cols.append(Column("rdma", "RDMA", 4))
    # Loss, pauses, ECN and CNP are per second, or counts since 'r' in delta mode.
    d = "Δ" if delta else ""
    cols += [Column("loss", f"{d}Loss", 5), Column("prx", f"{d}PauRx", 5),
             Column("ptx", f"{d}PauTx", 5), Column("ecn", f"{d}ECN", 5)]
    if width >= 100:
        cols.append(Column("cnp", f"{d}CNP", 5))
    if width >= 128:
        cols.append(Column("temp", "Temp", 4))
    return cols


def _kind(r: LinkRow) -> str:
    return {"roce": "RoCE", "ib": "IB", "tb": "TB", "virtual": "virt",
            "netdev": "eth"}.get(r.kind, r.kind[:4])


def _state(r: LinkRow) -> Text:
    s = r.state or fmt.DASH
    if s in ("up", "active"):
        return Text("up", "green" if r.live else DIM)
    if s in ("down", "disabled"):
        return Text(s[:4].upper(), "bold red")
    return Text(s[:4], "yellow")


def _bad(v: float | None, style: str, base: str) -> Text:
    return Text(fmt.si(v), style=style if v and base != DIM else base, justify="right")


def link_cells(r: LinkRow, spark: Callable[[LinkRow, str], str] | None, delta: bool,
               link_w: int = 13) -> dict[str, Text]:
    """The cells of one link row."""
    base = "" if r.live else DIM
    cells: dict[str, Text] = {
        "host": Text(r.host, base or "bold", no_wrap=True, overflow="ellipsis"),
        "link": Text(fmt.middle(r.lid, link_w), base, no_wrap=True),
        "type": Text(f"{_kind(r):<4} {fmt.speed(r.speed_gbps):>4}", base),
        "state": _state(r),
    }
    for side, bps in (("rx", r.rx_bps), ("tx", r.tx_bps)):
        t = Text(justify="right", no_wrap=True)
        if spark is not None:
            t.append(spark(r, side), "cyan" if not base else DIM)
            t.append(" ")
        if r.gap:
            t.append(" gap ", "bold magenta" if not base else DIM)
        else:
            t.append(fmt.gbps(bps).rjust(5), base or "bold")
        cells[side] = t
    line = r.line_ratio
    cells["line"] = Text(fmt.pct(line), justify="right",
                         style=base or ("bold" if line is not None and line >= 0.8 else ""))
    share = r.rdma_share
    cells["rdma"] = Text(fmt.pct(share), justify="right", style=base)
    storm = r.pause_time_ratio is not None and r.pause_time_ratio >= STORM_RATIO
    pause_style = "bold white on red" if storm else "yellow"
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
    tstyle = base or ("bold red" if temp and temp >= 90 else "yellow" if temp and temp >= 80
                      else "")
    cells["temp"] = Text(fmt.celsius(temp), tstyle, justify="right")
    return cells


class LinkTable(KeyedTable):
    """The links table; ``show`` syncs it with fresh rows in the chosen order."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort_spec: SortSpec = SORTS[0]

    def cycle_sort(self) -> SortSpec:
        """Next sort column (the 'o' key)."""
        i = SORTS.index(self.sort_spec) if self.sort_spec in SORTS else 0
        self.sort_spec = SORTS[(i + 1) % len(SORTS)]
        return self.sort_spec

    def sort_by_column(self, column: str) -> SortSpec | None:
        """Sort by a clicked header (None when that column does not sort)."""
        spec = SORT_BY_COLUMN.get(column)
        if spec is not None:
            self.sort_spec = spec
        return spec

    def show(self, rows: Sequence[LinkRow], width: int, history: History | None,
             interval: float, delta: bool) -> None:
        """Sync the table to ``rows``."""
        cols = link_columns(width, delta)
        self.set_columns(cols)
        spark = None
        if history is not None and any(c.key == "rx" and (c.width or 0) > 6 for c in cols):
            span = SPARK_W * interval + interval / 2

            def spark(r: LinkRow, side: str) -> str:
                s = history.get((r.host, r.lid, f"{side}_bps"))
                if s is None:
                    return " " * SPARK_W
                _, vals = s.points(span)
                # Scale to line rate, so a steady link is a steady mid-height line and
                # an idle one lies flat; without a known speed, leave headroom over the peak.
                if r.speed_gbps:
                    return fmt.sparkline(vals, SPARK_W, r.speed_gbps * 1e9)
                peak = max((v for v in vals[-SPARK_W:] if v is not None), default=0.0)
                return fmt.sparkline(vals, SPARK_W, peak * 1.25 or None)

        spec = self.sort_spec
        ordered = sorted(rows, key=spec.value, reverse=spec.descending)  # type: ignore[arg-type]
        if spec.descending and spec.key != "host":
            # equal values keep host order, so a quiet fabric does not shuffle
            ordered = sorted(rows, key=SORTS[0].value)  # type: ignore[arg-type]
            ordered.sort(key=spec.value, reverse=True)  # type: ignore[arg-type]
        link_w = next((c.width or 13) for c in cols if c.key == "link")
        self.sync([(r.key, link_cells(r, spark, delta, link_w)) for r in ordered])
