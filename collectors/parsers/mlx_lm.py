"""Recognize ``mlx_lm.server`` by its ``GET /v1/models`` and read the models it lists.

**Documented only, never captured**: no public capture of the body was found. Its shape
is the server's own (repo ml-explore/mlx-lm, commit d78bf58, ``mlx_lm/server.py``):
``handle_models_request`` writes ``{"object": "list", "data": [...]}``, each entry
``{"id", "object": "model", "created"}`` and nothing else; ``do_GET`` serves only
``/v1/models`` and ``/health`` and answers every other path, ``/metrics`` included, 404.
So it has no counter a passive monitor can read: its token rate is unknown, said once
per server, never made up.

Each ``/v1/models`` request scans the node's Hugging Face cache (``scan_cache_dir``),
a directory walk: the poll is one per interval, never concurrent (the session waits for
each poll to finish before the next).

Telling it from llama.cpp, which also listens on 8080 by default: llama.cpp answers
``/metrics`` 200 (with ``--metrics``, read as Prometheus text) or 501
``not_supported_error`` (without; ggml-org/llama.cpp ``tools/server/README.md``), never
404, and its ``/v1/models`` entries carry ``"owned_by": "llamacpp"`` and ``meta``; vLLM,
SGLang and TGI also answer ``/metrics``. So a port is taken for mlx_lm only when its
``/metrics`` was 404 and every entry of its ``/v1/models`` has exactly mlx_lm's keys.
"""

from __future__ import annotations

from collectors.parsers.json_body import bounded_json
from collectors.samples import InferenceSample
from collectors.text import clean

SERVER = "mlx_lm"
MODELS_PATH = "/v1/models"
RATE_UNKNOWN = (
    "mlx_lm.server has no token counter; it serves only /v1/models, /health "
    "and completions, no /metrics"
)
# Said with every reading (doctor's notes, the host detail): the format is not proven.
UNVERIFIED = (
    "mlx_lm /v1/models read as mlx_lm's server.py writes it (mlx-lm d78bf58); "
    "unverified: no captured body to check against"
)
_ENTRY_KEYS = frozenset({"id", "object", "created"})
MAX_MODELS = 16
MAX_NAME = 120


def _models(doc: object) -> list[object] | None:
    """The ``data`` list of an OpenAI-style model list, or None when it is not one."""
    if not isinstance(doc, dict) or doc.get("object") != "list":
        return None
    data = doc.get("data")
    return data if isinstance(data, list) else None


def looks_like_mlx_lm(doc: object) -> bool:
    """Every entry has exactly mlx_lm's keys, as ``object: model`` (an empty list is not proof)."""
    data = _models(doc)
    return bool(data) and all(
        isinstance(e, dict) and set(e) == _ENTRY_KEYS and e.get("object") == "model"
        for e in data or ()
    )


def parse_mlx_lm_models(body: str, url: str) -> InferenceSample:
    """The models an ``mlx_lm.server`` lists; its token rate is unknown by construction."""
    sample = InferenceSample(url=url, server=SERVER, rate_unknown=RATE_UNKNOWN)
    doc, error = bounded_json(body, "mlx_lm /v1/models", sample.warnings)
    if error is not None:
        sample.error = error
        return sample
    data = _models(doc)
    if data is None:
        sample.error = "mlx_lm /v1/models: not an OpenAI model list"
        return sample
    ids = [
        clean(e["id"], MAX_NAME)
        for e in data[:MAX_MODELS]
        if isinstance(e, dict) and isinstance(e.get("id"), str)
    ]
    if len(ids) < min(len(data), MAX_MODELS):
        sample.warnings.append("/v1/models: an entry without a string id left out")
    more = f" and {len(data) - MAX_MODELS} more" if len(data) > MAX_MODELS else ""
    sample.model = ", ".join(ids) + more if ids else None
    sample.warnings.insert(0, UNVERIFIED)
    return sample


def recognize_mlx_lm(metrics_status: int, body: str, url: str) -> InferenceSample | None:
    """The reading when a port whose ``/metrics`` said ``metrics_status`` is mlx_lm, else None."""
    if metrics_status != 404:
        return None
    doc, error = bounded_json(body, "mlx_lm /v1/models")
    if error is not None or not looks_like_mlx_lm(doc):
        return None
    return parse_mlx_lm_models(body, url)
