"""Read exo's cluster state (``GET /state`` on port 52415) into an :class:`InferenceSample`.

**Documented only, never captured**: no public capture of a whole ``/state`` body was
found. The keys are exo's own (repo exo-explore/exo, commit b5375f8):
``src/exo/api/main.py`` serves ``State`` (``src/exo/shared/types/state.py``) serialized
by alias (camelCase); tagged unions are one-key objects named for their class
(``src/exo/utils/pydantic_ext.py`` ``TaggedModel``): an instance is
``{"MlxRingInstance": {...}}``, a runner status ``{"RunnerReady": {...}}``, a shard
``{"PipelineShardMetadata": {...}}``. tests/fixtures/inference/SOURCES.md cites each.

What is kept: the nodes (``topology.nodes``, with ``nodeIdentities`` names and
``nodeMemory``), the model instances and, per runner, the node it is placed on
(``shardAssignments.nodeToRunner``), its layers and its status (``runners``). exo has no
token counter: per-request tokens/s go only to the client that asked (the
``/bench/chat/completions`` answer's ``generation_stats``, ``src/exo/api/main.py``
``_collect_text_generation_with_stats``; no ``/metrics`` route exists), so the sample's
``rate_unknown`` says so and no rate is ever made of it.

Polling it every interval costs exo nothing it does not already bear: its own macOS app
polls ``/state`` every 0.5 s (``app/EXO/EXO/Services/ClusterStateService.swift``
``startPolling(interval: 0.5)``).

The body is remote JSON: it is bounded before it is parsed (size, nesting depth), every
value is type-checked where it is read (a wrong type costs that value and adds a
warning), every string is cleaned of control characters and cut, and the lists kept are
bounded. Never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.parsers.json_body import bounded_json
from collectors.samples import ExoCluster, ExoInstance, ExoNode, ExoRunner, InferenceSample
from collectors.text import clean
from collectors.warning_lines import WarningLines

SERVER = "exo"
PORT = 52415  # exo's API port (src/exo/main.py: api_port default)
STATE_PATH = "/state"
RATE_UNKNOWN = (
    "exo has no token counter; each request's tokens/s goes only to the client "
    "that asked, and there is no /metrics"
)
# Said with every reading (doctor's notes, the host detail): the format is not proven.
UNVERIFIED = (
    "exo /state read as exo's source defines it (exo b5375f8); unverified: "
    "no captured body to check against"
)
MAX_NODES = 64
MAX_INSTANCES = 32
MAX_RUNNERS = 64
MAX_NAME = 120
MAX_WARNINGS = 10


class _Reader:
    """Typed reads from remote JSON: a wrong type is None plus one warning, never a raise."""

    def __init__(self) -> None:
        self.warnings = WarningLines(MAX_WARNINGS, width=200)

    def obj(self, v: object, where: str) -> Mapping[str, Any]:
        if v is None:
            return {}
        if isinstance(v, dict):
            return v
        self.warnings.add(f"/state {where}: not an object")
        return {}

    def text(self, v: object, where: str) -> str | None:
        if v is None:
            return None
        if isinstance(v, str):
            return clean(v, MAX_NAME)
        self.warnings.add(f"/state {where}: not a string")
        return None

    def count(self, v: object, where: str) -> int | None:
        # json_loads makes every integer an int of at most 20 digits, or None.
        if v is None:
            return None
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
        self.warnings.add(f"/state {where}: not a count")
        return None

    def tagged(self, v: object, where: str) -> tuple[str | None, Mapping[str, Any]]:
        """exo's one-key ``{"ClassName": {...}}`` form: (tag, body)."""
        if isinstance(v, dict) and len(v) == 1:
            ((tag, body),) = v.items()
            if isinstance(tag, str):
                return clean(tag, 40), self.obj(body, where)
        self.warnings.add(f"/state {where}: not a tagged value")
        return None, {}


def _nodes(r: _Reader, state: Mapping[str, Any], cluster: ExoCluster) -> None:
    topo = r.obj(state.get("topology"), "topology")
    ids = topo.get("nodes")
    if not isinstance(ids, list):
        if ids is not None:
            r.warnings.add("/state topology.nodes: not a list")
        ids = []
    idents = r.obj(state.get("nodeIdentities"), "nodeIdentities")
    memory = r.obj(state.get("nodeMemory"), "nodeMemory")
    for raw in ids:
        if len(cluster.nodes) >= MAX_NODES:
            cluster.more_nodes += 1
            continue
        if not isinstance(raw, str):
            r.warnings.add("/state topology.nodes: a node id that is not a string")
            continue
        node = ExoNode(clean(raw, MAX_NAME))
        ident = r.obj(idents.get(raw), "nodeIdentities entry")
        node.name = r.text(ident.get("friendlyName"), "friendlyName")
        node.chip = r.text(ident.get("chipId"), "chipId")
        mem = r.obj(memory.get(raw), "nodeMemory entry")
        node.ram_total_bytes = r.count(
            r.obj(mem.get("ramTotal"), "ramTotal").get("inBytes"), "ramTotal.inBytes"
        )
        node.ram_available_bytes = r.count(
            r.obj(mem.get("ramAvailable"), "ramAvailable").get("inBytes"), "ramAvailable.inBytes"
        )
        cluster.nodes.append(node)


def _runner(
    r: _Reader, rid: str, shard: object, node: str | None, statuses: Mapping[str, Any]
) -> ExoRunner:
    runner = ExoRunner(clean(rid, MAX_NAME), node_id=node)
    runner.shard, body = r.tagged(shard, "runnerToShard entry")
    runner.start_layer = r.count(body.get("startLayer"), "startLayer")
    runner.end_layer = r.count(body.get("endLayer"), "endLayer")
    runner.n_layers = r.count(body.get("nLayers"), "nLayers")
    runner.device_rank = r.count(body.get("deviceRank"), "deviceRank")
    runner.world_size = r.count(body.get("worldSize"), "worldSize")
    if rid in statuses:
        runner.status, _ = r.tagged(statuses[rid], "runners entry")
    return runner


def _instances(r: _Reader, state: Mapping[str, Any], cluster: ExoCluster) -> None:
    statuses = r.obj(state.get("runners"), "runners")
    for iid, raw in r.obj(state.get("instances"), "instances").items():
        if len(cluster.instances) >= MAX_INSTANCES:
            cluster.more_instances += 1
            continue
        kind, body = r.tagged(raw, "instances entry")
        inst = ExoInstance(clean(str(iid), MAX_NAME), kind=kind)
        sa = r.obj(body.get("shardAssignments"), "shardAssignments")
        inst.model = r.text(sa.get("modelId"), "modelId")
        # nodeToRunner is node -> runner; the placement is read the other way round.
        node_of: dict[str, str] = {}
        for node, rid in r.obj(sa.get("nodeToRunner"), "nodeToRunner").items():
            if isinstance(rid, str):
                node_of[rid] = clean(str(node), MAX_NAME)
            else:
                r.warnings.add("/state nodeToRunner: a runner id that is not a string")
        for rid, shard in list(r.obj(sa.get("runnerToShard"), "runnerToShard").items()):
            if len(inst.runners) >= MAX_RUNNERS:
                break
            inst.runners.append(_runner(r, str(rid), shard, node_of.get(str(rid)), statuses))
        cluster.instances.append(inst)


def parse_exo_state(body: str, url: str) -> InferenceSample:
    """The cluster an exo ``/state`` body describes; an unreadable body is the sample's error."""
    cut: list[str] = []
    state, error = bounded_json(body, "exo /state", cut)
    if error is not None:
        return InferenceSample(url=url, server=SERVER, rate_unknown=RATE_UNKNOWN, error=error)
    sample = _from_state(state, url)
    sample.warnings += cut
    return sample


def _from_state(state: object, url: str) -> InferenceSample:
    sample = InferenceSample(url=url, server=SERVER, rate_unknown=RATE_UNKNOWN)
    if not isinstance(state, dict):
        sample.error = "exo /state: not a JSON object"
        return sample
    r = _Reader()
    cluster = ExoCluster()
    _nodes(r, state, cluster)
    _instances(r, state, cluster)
    sample.cluster = cluster
    models = sorted({i.model for i in cluster.instances if i.model})
    sample.model = clean(", ".join(models), MAX_NAME * 2) if models else None
    sample.warnings = [UNVERIFIED, *r.warnings]
    return sample


def looks_like_exo(state: object) -> bool:
    """Whether parsed JSON has the shape of exo's ``State`` (its topology and instances)."""
    return (
        isinstance(state, dict)
        and isinstance(state.get("topology"), dict)
        and isinstance(state.get("instances"), dict)
        and "runners" in state
    )


def recognize_exo(body: str, url: str) -> InferenceSample | None:
    """The reading when ``body`` is exo's ``/state``, else None (discovery)."""
    cut: list[str] = []
    state, error = bounded_json(body, "exo /state", cut)
    if error is not None or not looks_like_exo(state):
        return None
    sample = _from_state(state, url)
    sample.warnings += cut
    return sample
