"""A simulated exo cluster's ``GET /state`` (issue 14: token rate on Mac clusters).

The keys are exo's own, as in tests/fixtures/inference/exo_state_two_studios_documented.json
(documented from exo-explore/exo b5375f8, never captured: see its SOURCES.md). One
pipeline-sharded model over the cluster's nodes; the first runner is ``RunnerRunning``
while a request is served and ``RunnerReady`` between them. exo exposes no token counter,
so nothing here counts tokens.
"""

from __future__ import annotations

import json
from typing import Any

EXO_DEMO_URL = "http://127.0.0.1:52415/state"
MODEL = "mlx-community/Llama-3.3-70B-Instruct-4bit"
N_LAYERS = 80
GIB = 1024**3


def _id(prefix: str, i: int) -> str:
    return f"{prefix}{i:04x}-5e6f-4a7b-9c8d-e0f1a2b3c4d5"


def _node_id(name: str) -> str:
    # libp2p peer ids start 12D3KooW; the rest only has to be stable per name.
    return "12D3KooW" + "".join(f"{ord(c):02x}" for c in name).ljust(44, "A")[:44]


def exo_state(names: list[str], t: float) -> dict[str, Any]:
    """exo's ``State`` (by alias) for a cluster of ``names`` serving one model at time ``t``."""
    nodes = [_node_id(n) for n in names]
    runners = [_id("6f1c", i) for i in range(len(names))]
    per = N_LAYERS // max(1, len(names))
    shards: dict[str, Any] = {}
    for i, rid in enumerate(runners):
        end = N_LAYERS if i == len(runners) - 1 else (i + 1) * per
        shards[rid] = {
            "PipelineShardMetadata": {
                "modelCard": {"modelId": MODEL, "nLayers": N_LAYERS},
                "deviceRank": i,
                "worldSize": len(names),
                "immediateException": False,
                "shouldTimeout": None,
                "startLayer": i * per,
                "endLayer": end,
                "nLayers": N_LAYERS,
            }
        }
    serving = int(t // 10) % 2 == 0
    status: dict[str, Any] = {
        rid: {"RunnerRunning" if serving and i == 0 else "RunnerReady": {}}
        for i, rid in enumerate(runners)
    }
    instance = _id("c0ff", 0)
    return {
        "instances": {
            instance: {
                "MlxRingInstance": {
                    "instanceId": instance,
                    "shardAssignments": {
                        "modelId": MODEL,
                        "runnerToShard": shards,
                        "nodeToRunner": dict(zip(nodes, runners, strict=True)),
                    },
                    "hostsByNode": {
                        n: [{"ip": f"169.254.10.{i + 1}", "port": 52416}]
                        for i, n in enumerate(nodes)
                    },
                    "ephemeralPort": 52416,
                }
            }
        },
        "runners": status,
        "downloads": {},
        "tasks": {},
        "lastSeen": {},
        "topology": {"nodes": nodes, "connections": {}},
        "lastEventAppliedIdx": int(t),
        "nodeIdentities": {
            n: {
                "modelId": "Mac Studio",
                "chipId": "Apple M3 Ultra",
                "friendlyName": name,
                "osVersion": "26.2",
                "osBuildVersion": "25C56",
            }
            for n, name in zip(nodes, names, strict=True)
        },
        "nodeMemory": {
            n: {
                "ramTotal": {"inBytes": 256 * GIB},
                "ramAvailable": {"inBytes": (206 - 4 * i) * GIB},
                "swapTotal": {"inBytes": 0},
                "swapAvailable": {"inBytes": 0},
            }
            for i, n in enumerate(nodes)
        },
        "nodeDisk": {},
        "nodeSystem": {},
        "nodeNetwork": {},
        "nodeThunderbolt": {},
        "nodeThunderboltBridge": {},
        "nodeRdmaCtl": {},
        "nodeBackends": {},
        "thunderboltBridgeCycles": [],
        "instanceLinks": {},
        "prefillServerPorts": {},
        "customModelCards": {},
    }


def exo_state_text(names: list[str], t: float) -> str:
    """The body exo sends (compact JSON, as FastAPI writes it)."""
    return json.dumps(exo_state(names, t), separators=(",", ":"))
