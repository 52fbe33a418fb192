"""Inference servers table: one row per server, token rates and latencies, cluster total."""

from __future__ import annotations

from rich.text import Text

from collectors.vocabulary import InferenceRate
from fabtop.core.state import FabricState
from tui import format as fmt
from tui.widgets.keyed_table import Column, FixedTable

# The generated tokens/s is the screen's answer and is never dropped; at narrow widths
# the tail latencies, the prompt rate and the URL go first (highest ``drop``).
COLUMNS = (
    Column("host", "Host", None, False, flex=True, min_width=8),
    Column("url", "URL", None, False, flex=True, min_width=20, drop=11),  # config, not news
    Column("server", "Server", None, False, drop=5),
    Column("model", "Model", None, False, flex=True, min_width=16, drop=3),
    Column("gen", "gen tok/s", 5),
    Column("prompt", "prompt tok/s", 5, short="prompt/s", drop=7),
    Column("run", "run", 3, drop=2),
    Column("wait", "wait", 4),
    Column("ttft50", "TTFT p50", 5, drop=4),
    Column("ttft99", "TTFT p99", 5, drop=9),
    Column("itl50", "ITL p50", 5, drop=8),
    Column("itl99", "ITL p99", 5, drop=10),
    Column("error", "Error", None, False, flex=True, min_width=12, hide_empty=True),
    # Why a server's token rate is unknown (exo, mlx_lm: no counter to read).
    Column("note", "Note", None, False, flex=True, min_width=12, hide_empty=True),
)
UNKNOWN = "unknown"  # a rate no counter gives: never 0, never a dash that reads as "none"
# Latency columns and the rate each shows.
LATENCIES: tuple[tuple[str, str], ...] = (
    ("ttft50", InferenceRate.TTFT_P50_S),
    ("ttft99", InferenceRate.TTFT_P99_S),
    ("itl50", InferenceRate.ITL_P50_S),
    ("itl99", InferenceRate.ITL_P99_S),
)
TOTAL_KEY = "\x1fcluster"


def _count(v: float | None) -> str:
    return fmt.DASH if v is None else f"{v:.0f}"


def _rate(v: float | None, unknown: str | None, style: str) -> Text:
    """A server's token rate; "unknown" where the server has no counter to read."""
    if unknown is not None:
        return Text(UNKNOWN, "yellow", justify="right")
    return Text(fmt.si(v), style, justify="right")


def _total(v: float | None, unknown: int) -> Text:
    """The cluster's rate: the known servers' sum, "+?" when some servers' rates are unknown."""
    if not unknown:
        return Text(fmt.si(v), "bold", justify="right")
    if v is None:
        return Text(UNKNOWN, "bold yellow", justify="right")
    return Text(f"{fmt.si(v)}+?", "bold yellow", justify="right")


def inference_rows(state: FabricState) -> list[tuple[str, dict[str, Text]]]:
    """A row per server, then the cluster total of the token rates."""
    rows: list[tuple[str, dict[str, Text]]] = []
    totals: dict[str, float | None] = {"gen": None, "prompt": None, "run": None, "wait": None}
    unknown = 0  # servers whose token rate cannot be read: the total leaves them out, and says so

    def add(k: str, v: float | None) -> None:
        if v is not None:
            totals[k] = (totals[k] or 0.0) + v

    for name, hs in state.hosts.items():
        s = hs.sample
        if s is None:
            continue
        rates = hs.rates.inference if hs.rates is not None else {}
        for inf in s.inference:
            r = rates.get(inf.url) or {}
            gen = r.get(InferenceRate.GENERATED_TOKENS_PER_S)
            prompt = r.get(InferenceRate.PROMPT_TOKENS_PER_S)
            add("gen", gen)
            add("prompt", prompt)
            add("run", inf.requests_running)
            add("wait", inf.requests_waiting)
            waiting = inf.requests_waiting
            why = inf.rate_unknown
            unknown += why is not None
            rows.append(
                (
                    f"{name}\x1f{inf.url}",
                    {
                        "host": Text(name),
                        "url": Text(inf.url, "dim"),
                        "server": Text(inf.server or fmt.DASH),
                        "model": Text(inf.model or fmt.DASH),
                        "gen": _rate(gen, why, "bold"),
                        "prompt": _rate(prompt, why, ""),
                        "run": Text(_count(inf.requests_running), justify="right"),
                        "wait": Text(_count(waiting), "yellow" if waiting else "", justify="right"),
                        **{
                            col: Text(fmt.ms(r.get(rate)), justify="right")
                            for col, rate in LATENCIES
                        },
                        "error": Text(inf.error or "", "bold red"),
                        "note": Text(f"token rate unknown: {why}" if why else "", "yellow"),
                    },
                )
            )
    if rows:
        rows.append(
            (
                TOTAL_KEY,
                {
                    "host": Text("cluster", "bold"),
                    "url": Text(f"{len(rows)} server{'s' if len(rows) != 1 else ''}", "dim"),
                    "gen": _total(totals["gen"], unknown),
                    "prompt": _total(totals["prompt"], unknown),
                    "run": Text(_count(totals["run"]), justify="right"),
                    "wait": Text(_count(totals["wait"]), justify="right"),
                },
            )
        )
    return rows


class InferenceTable(FixedTable):
    """Every inference server of every host."""

    COLUMNS = COLUMNS

    def show(self, state: FabricState) -> None:
        """Sync with the state."""
        self.show_rows(inference_rows(state))
