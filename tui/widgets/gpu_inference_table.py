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
)
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


def inference_rows(state: FabricState) -> list[tuple[str, dict[str, Text]]]:
    """A row per server, then the cluster total of the token rates."""
    rows: list[tuple[str, dict[str, Text]]] = []
    totals: dict[str, float | None] = {"gen": None, "prompt": None, "run": None, "wait": None}

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
            rows.append((f"{name}\x1f{inf.url}", {
                "host": Text(name),
                "url": Text(inf.url, "dim"),
                "server": Text(inf.server or fmt.DASH),
                "model": Text(inf.model or fmt.DASH),
                "gen": Text(fmt.si(gen), "bold", justify="right"),
                "prompt": Text(fmt.si(prompt), justify="right"),
                "run": Text(_count(inf.requests_running), justify="right"),
                "wait": Text(_count(waiting), "yellow" if waiting else "", justify="right"),
                **{col: Text(fmt.ms(r.get(rate)), justify="right") for col, rate in LATENCIES},
                "error": Text(inf.error or "", "bold red"),
            }))
    if rows:
        rows.append((TOTAL_KEY, {
            "host": Text("cluster", "bold"),
            "url": Text(f"{len(rows)} server{'s' if len(rows) != 1 else ''}", "dim"),
            "gen": Text(fmt.si(totals["gen"]), "bold", justify="right"),
            "prompt": Text(fmt.si(totals["prompt"]), "bold", justify="right"),
            "run": Text(_count(totals["run"]), justify="right"),
            "wait": Text(_count(totals["wait"]), justify="right"),
        }))
    return rows


class InferenceTable(FixedTable):
    """Every inference server of every host."""

    COLUMNS = COLUMNS

    def show(self, state: FabricState) -> None:
        """Sync with the state."""
        self.show_rows(inference_rows(state))
