"""exo's /state and mlx_lm.server's /v1/models: what is read, and what no body can do.

The bodies are documented, never captured (tests/fixtures/inference/SOURCES.md): built
from the servers' own source. A hostile body (huge, deep, control characters, wrong
types) costs only the values it spoils, never the reading or the host.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from collectors.parsers.exo_state import MAX_INSTANCES, parse_exo_state, recognize_exo
from collectors.parsers.exo_state import UNVERIFIED as EXO_UNVERIFIED
from collectors.parsers.inference_page import parse_inference_page
from collectors.parsers.json_body import MAX_BYTES, MAX_DEPTH
from collectors.parsers.mlx_lm import UNVERIFIED as MLX_UNVERIFIED
from collectors.parsers.mlx_lm import parse_mlx_lm_models, recognize_mlx_lm
from collectors.samples import InferenceSample
from collectors.text import has_control

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "inference"
EXO_URL = "http://127.0.0.1:52415/state"
MLX_URL = "http://127.0.0.1:8080/v1/models"
STUDIO1 = "12D3KooWJ8PmhQ7d9k2r5XtYVn4HqLm3sA1bC6eF7gH8iJ9kLmNo"
STUDIO2 = "12D3KooWQx7RtY2uV3wZ4aB5cD6eF7gH8iJ9kL1mN2oP3qR4sT5u"
MODEL = "mlx-community/Llama-3.3-70B-Instruct-4bit"


def exo_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIX / "exo_state_two_studios_documented.json").read_text())
    return doc


def mlx_text() -> str:
    return (FIX / "mlx_lm_v1_models_documented.json").read_text()


def _instance(doc: dict[str, Any]) -> dict[str, Any]:
    (inst,) = doc["instances"].values()
    body: dict[str, Any] = inst["MlxRingInstance"]
    return body


def _strings(v: object) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in (*_strings(k), *_strings(x))]
    if isinstance(v, list | tuple):
        return [s for x in v for s in _strings(x)]
    if hasattr(v, "__dataclass_fields__"):
        return [s for f in v.__dataclass_fields__ for s in _strings(getattr(v, f))]
    return []


# --- exo: the documented body ----------------------------------------------------------


def test_exo_state_gives_nodes_instances_and_placement() -> None:
    s = parse_exo_state(json.dumps(exo_doc()), EXO_URL)
    assert (s.server, s.error, s.warnings, s.model) == ("exo", None, [EXO_UNVERIFIED], MODEL)
    assert s.cluster is not None
    assert [(n.name, n.chip, n.ram_total_bytes) for n in s.cluster.nodes] == [
        ("studio-1", "Apple M3 Ultra", 256 * 1024**3),
        ("studio-2", "Apple M3 Ultra", 256 * 1024**3),
    ]
    (inst,) = s.cluster.instances
    assert (inst.kind, inst.model) == ("MlxRingInstance", MODEL)
    placed = {
        (r.node_id, r.start_layer, r.end_layer, r.n_layers, r.status, r.shard) for r in inst.runners
    }
    assert placed == {
        (STUDIO1, 0, 40, 80, "RunnerRunning", "PipelineShardMetadata"),
        (STUDIO2, 40, 80, 80, "RunnerReady", "PipelineShardMetadata"),
    }


def test_exo_has_no_token_counter_and_says_why() -> None:
    s = parse_exo_state(json.dumps(exo_doc()), EXO_URL)
    assert s.generated_tokens_total is None and s.prompt_tokens_total is None
    assert s.rate_unknown is not None
    assert s.rate_unknown.startswith("exo ") and "client that asked" in s.rate_unknown


def test_the_page_is_read_by_its_path() -> None:
    assert parse_inference_page(json.dumps(exo_doc()), EXO_URL).server == "exo"
    assert parse_inference_page(mlx_text(), MLX_URL).server == "mlx_lm"
    prom = parse_inference_page("vllm:generation_tokens_total 5\n", "http://h:8000/metrics")
    assert (prom.server, prom.generated_tokens_total, prom.rate_unknown) == ("vllm", 5.0, None)


# --- exo: hostile bodies -----------------------------------------------------------------


def test_a_huge_body_is_refused_before_it_is_parsed() -> None:
    body = json.dumps(exo_doc())
    huge = body[:-1] + ', "pad": "' + "x" * MAX_BYTES + '"}'
    s = parse_exo_state(huge, EXO_URL)
    assert s.cluster is None and s.error is not None and "limit" in s.error
    assert s.rate_unknown is not None  # still exo: unknown, not a number


def test_nesting_past_the_parser_is_refused() -> None:
    depth = 100_000
    body = json.dumps(exo_doc())[:-1] + ', "tasks2": ' + "[" * depth + "]" * depth + "}"
    s = parse_exo_state(body, EXO_URL)
    assert s.cluster is None and s.error is not None and "nested" in s.error


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500])
def test_one_value_nested_too_deep_costs_that_value_only(depth: int) -> None:
    # One field of no interest, nested deeper than any read: it was the whole reading.
    body = json.dumps(exo_doc())[:-1] + ', "tasks2": ' + "[" * depth + "]" * depth + "}"
    s = parse_exo_state(body, EXO_URL)
    assert s.error is None and s.cluster is not None and len(s.cluster.nodes) == 2
    assert s.cluster == parse_exo_state(json.dumps(exo_doc()), EXO_URL).cluster
    assert f"exo /state: 1 value(s) nested deeper than {MAX_DEPTH} levels left out" in s.warnings
    entry = {"id": "m", "object": "model", "created": 1, "x": [[[[1]]]]}
    deep = json.dumps({"object": "list", "data": [entry]})
    deep = deep.replace("[[[[1]]]]", "[" * depth + "]" * depth)
    m = parse_mlx_lm_models(deep, MLX_URL)
    assert m.model == "m" and any("nested deeper" in w for w in m.warnings)


def test_nesting_up_to_the_limit_is_read() -> None:
    n = MAX_DEPTH - 1  # the state object itself is the first level
    body = json.dumps(exo_doc())[:-1] + ', "x": ' + "[" * n + "]" * n + "}"
    s = parse_exo_state(body, EXO_URL)
    assert s.error is None and s.cluster is not None and len(s.cluster.nodes) == 2


def test_control_characters_never_reach_a_field() -> None:
    doc = exo_doc()
    osc = "\x1b]52;c;cGF5bG9hZA==\x07"
    doc["nodeIdentities"][STUDIO1]["friendlyName"] = f"studio{osc}-1\x9b31m"
    inst = _instance(doc)
    inst["shardAssignments"]["modelId"] = f"ev\x1b[2Jil{osc}"
    # an id with controls, as a key and as a value, consistently
    bad = f"r\x07{osc}1"
    r2t = inst["shardAssignments"]["runnerToShard"]
    rid = next(iter(r2t))
    r2t[bad] = r2t.pop(rid)
    inst["shardAssignments"]["nodeToRunner"][STUDIO1] = bad
    doc["runners"][bad] = doc["runners"].pop(rid)
    s = parse_exo_state(json.dumps(doc), EXO_URL)
    assert s.error is None
    assert not any(has_control(x) for x in _strings(s)), [x for x in _strings(s) if has_control(x)]
    assert "cGF5bG9hZA" not in repr(s)
    assert s.cluster is not None and s.cluster.nodes[0].name == "studio-1"
    runner = next(r for r in s.cluster.instances[0].runners if r.node_id == STUDIO1)
    assert (runner.runner_id, runner.status, runner.start_layer) == ("r1", "RunnerRunning", 0)


def test_a_wrong_type_costs_that_value_only() -> None:
    doc = exo_doc()
    doc["nodeIdentities"][STUDIO1]["friendlyName"] = {"a": 1}
    doc["nodeMemory"][STUDIO2]["ramTotal"]["inBytes"] = "lots"
    inst = _instance(doc)
    shard = inst["shardAssignments"]["runnerToShard"]
    first = next(iter(shard.values()))["PipelineShardMetadata"]
    first["startLayer"] = -3
    first["endLayer"] = True
    runner2 = next(k for k, v in doc["runners"].items() if "RunnerReady" in v)
    doc["runners"][runner2] = ["RunnerReady"]
    s = parse_exo_state(json.dumps(doc), EXO_URL)
    assert s.error is None and s.cluster is not None
    n1, n2 = s.cluster.nodes
    assert (n1.name, n1.chip, n2.ram_total_bytes, n2.name) == (
        None,
        "Apple M3 Ultra",
        None,
        "studio-2",
    )
    r1, r2 = s.cluster.instances[0].runners
    assert (r1.start_layer, r1.end_layer, r1.n_layers, r1.status) == (
        None,
        None,
        80,
        "RunnerRunning",
    )
    assert (r2.status, r2.start_layer) == (None, 40)
    assert s.warnings[0] == EXO_UNVERIFIED
    assert len(s.warnings) == 6, s.warnings
    assert all(w.startswith("/state ") for w in s.warnings[1:])


@pytest.mark.parametrize("number", ["1e400", "NaN", "-Infinity", "9" * 30, "-5", "1.5"])
def test_one_bad_node_costs_that_node_only(number: str) -> None:
    clean_reading = parse_exo_state(json.dumps(exo_doc()), EXO_URL)
    doc = exo_doc()
    doc["topology"]["nodes"].insert(1, {"id": "not a string"})
    doc["nodeMemory"][STUDIO1]["ramTotal"]["inBytes"] = "@NUMBER@"
    doc["nodeMemory"][STUDIO1]["ramAvailable"] = ["not", "an", "object"]
    doc["nodeIdentities"][STUDIO1]["chipId"] = 7
    s = parse_exo_state(json.dumps(doc).replace('"@NUMBER@"', number), EXO_URL)
    assert s.error is None and s.cluster is not None and clean_reading.cluster is not None
    n1, n2 = s.cluster.nodes
    assert (n1.ram_total_bytes, n1.ram_available_bytes, n1.chip) == (None, None, None)
    assert n1.name == clean_reading.cluster.nodes[0].name  # the rest of that node is read
    assert n2 == clean_reading.cluster.nodes[1]  # the other node untouched
    assert s.cluster.instances == clean_reading.cluster.instances
    assert s.model == clean_reading.model


@pytest.mark.parametrize(
    "body",
    [
        "[]",
        "null",
        "7",
        '"state"',
        "{",
        '{"topology": NaN}',
        "\x00\x1b[31m",
        '{"topology": [], "instances": [], "runners": 5, "nodeIdentities": "x"}',
        '{"instances": {"i": {"A": 1, "B": 2}}, "runners": {}, "topology": {"nodes": [1, null]}}',
        '{"instances": {"i": {"MlxRingInstance": {"shardAssignments": {"nodeToRunner": '
        '{"n": 5}, "runnerToShard": {"r": "x"}}}}}}',
    ],
)
def test_any_shape_is_a_reading_never_a_raise(body: str) -> None:
    s = parse_exo_state(body, EXO_URL)
    assert isinstance(s, InferenceSample) and s.server == "exo" and s.rate_unknown
    assert s.generated_tokens_total is None
    assert not any(has_control(x) for x in _strings(s))


def test_lists_kept_are_bounded() -> None:
    doc = exo_doc()
    ((iid, inst),) = doc["instances"].items()
    for i in range(MAX_INSTANCES + 40):
        doc["instances"][f"{iid}-{i}"] = copy.deepcopy(inst)
    s = parse_exo_state(json.dumps(doc), EXO_URL)
    assert s.cluster is not None
    assert len(s.cluster.instances) == MAX_INSTANCES
    assert s.cluster.more_instances == 41


def test_exo_is_recognized_only_by_its_state_shape() -> None:
    assert recognize_exo(json.dumps(exo_doc()), EXO_URL) is not None
    assert recognize_exo('{"detail":"Not Found"}', EXO_URL) is None
    assert recognize_exo(mlx_text(), EXO_URL) is None
    assert recognize_exo("# TYPE x counter\nx 1\n", EXO_URL) is None


# --- mlx_lm ------------------------------------------------------------------------------


def test_mlx_lm_models_and_unknown_rate() -> None:
    s = parse_mlx_lm_models(mlx_text(), MLX_URL)
    assert (s.server, s.model, s.error) == ("mlx_lm", "mlx-community/Qwen3-30B-A3B-4bit", None)
    assert s.rate_unknown is not None and s.rate_unknown.startswith("mlx_lm.server ")
    assert s.generated_tokens_total is None
    assert s.warnings == [MLX_UNVERIFIED]  # documented only: said with every reading


# llama.cpp's /v1/models entries carry owned_by and meta (see collectors/parsers/mlx_lm.py).
LLAMACPP_MODELS = json.dumps(
    {
        "object": "list",
        "data": [
            {
                "id": "qwen",
                "object": "model",
                "created": 1735142223,
                "owned_by": "llamacpp",
                "meta": {"n_vocab": 151936},
            }
        ],
    }
)


def test_mlx_lm_is_told_from_llama_cpp_on_8080() -> None:
    # mlx_lm: /metrics 404 and its own /v1/models shape
    assert recognize_mlx_lm(404, mlx_text(), MLX_URL) is not None
    # llama.cpp without --metrics answers 501; with it, its /metrics is read as Prometheus
    assert recognize_mlx_lm(501, mlx_text(), MLX_URL) is None
    # a 404 with llama.cpp's (or vLLM's, TGI's) model list is not mlx_lm either
    assert recognize_mlx_lm(404, LLAMACPP_MODELS, MLX_URL) is None
    # an empty list proves nothing
    assert recognize_mlx_lm(404, '{"object": "list", "data": []}', MLX_URL) is None
    assert recognize_mlx_lm(404, "Not Found", MLX_URL) is None


def test_mlx_lm_hostile_ids_are_cleaned_and_bounded() -> None:
    data = [
        {"id": f"m\x1b]0;t\x07{i}" + "x" * 500, "object": "model", "created": 1} for i in range(40)
    ] + [{"id": 7, "object": "model", "created": 1}]
    s = parse_mlx_lm_models(json.dumps({"object": "list", "data": data}), MLX_URL)
    assert s.model is not None and not has_control(s.model)
    assert s.model.endswith("and 25 more") and len(s.model) < 16 * 130
    s = parse_mlx_lm_models('{"object": "list", "data": [{"id": 7}]}', MLX_URL)
    assert s.model is None and s.warnings and s.rate_unknown
