"""An exo cluster as its ``/state`` says: nodes, model instances and where each runner sits.

Rendered in the host detail (and, one line per instance, under the inference table).
Every string came from the node: the parser cleaned and cut it; it is cleaned again here
on its way to the terminal, as every view does.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from collectors.samples import ExoCluster, ExoInstance, ExoRunner, InferenceSample
from collectors.text import clean
from tui import format as fmt

GIB = 1024**3
# Runner statuses that mean "serving or ready to" (exo src/exo/shared/types/worker/runners.py).
READY = frozenset({"RunnerReady", "RunnerRunning"})
FAILED = frozenset({"RunnerFailed", "RunnerShutdown", "RunnerShuttingDown"})


def _gib(v: int | None) -> str:
    return fmt.DASH if v is None else f"{v / GIB:.0f}"


def node_names(cluster: ExoCluster) -> dict[str, str]:
    """Node id -> the name to show: its friendly name, else the id's tail."""
    return {n.node_id: clean(n.name or f"…{n.node_id[-8:]}", 60) for n in cluster.nodes}


def _layers(r: ExoRunner) -> str:
    if r.start_layer is None or r.end_layer is None:
        return fmt.DASH
    of = f"/{r.n_layers}" if r.n_layers is not None else ""
    return f"{r.start_layer}-{r.end_layer}{of}"


def _status(r: ExoRunner) -> Text:
    s = r.status or "status unknown"
    style = "green" if s in READY else "bold red" if s in FAILED else "yellow"
    return Text(clean(s.removeprefix("Runner"), 40), style)


def placement_line(inst: ExoInstance, names: dict[str, str]) -> Text:
    """``Llama-3.3-70B (MlxRing): studio-1 0-40/80 Running · studio-2 40-80/80 Ready``."""
    line = Text()
    line.append(clean(inst.model or inst.instance_id, 80), "bold")
    if inst.kind:
        line.append(f" ({clean(inst.kind.removesuffix('Instance'), 40)})", "dim")
    line.append(": ")
    if not inst.runners:
        line.append("no runners", "yellow")
    for i, r in enumerate(inst.runners):
        if i:
            line.append(" · ", "dim")
        where = names.get(r.node_id or "", clean(r.node_id or "unplaced", 60))
        line.append(f"{where} {_layers(r)} ")
        line.append_text(_status(r))
    return line


def cluster_parts(inf: InferenceSample) -> list[RenderableType]:
    """The nodes table and one placement line per model instance."""
    cluster = inf.cluster
    if cluster is None:
        return []
    names = node_names(cluster)
    nodes = Table(
        box=None, show_header=True, header_style="bold", padding=(0, 2, 0, 0), expand=False
    )
    for col in ("node", "id", "chip", "RAM free/total GiB"):
        nodes.add_column(col, no_wrap=col != "id", overflow="fold")
    for n in cluster.nodes:
        nodes.add_row(
            Text(names[n.node_id]),
            Text(clean(n.node_id, 60), "dim"),
            Text(clean(n.chip or fmt.DASH, 40)),
            Text(f"{_gib(n.ram_available_bytes)}/{_gib(n.ram_total_bytes)}"),
        )
    out: list[RenderableType] = [nodes]
    if cluster.more_nodes:
        out.append(Text(f"... and {cluster.more_nodes} more nodes", "dim"))
    if not cluster.instances:
        out.append(Text("no model instance placed", "dim"))
    out.extend(placement_line(i, names) for i in cluster.instances)
    if cluster.more_instances:
        out.append(Text(f"... and {cluster.more_instances} more instances", "dim"))
    return out
