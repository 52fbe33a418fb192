"""One inference server's page, read by what the URL asks for.

``/state`` is exo's cluster state (:mod:`collectors.parsers.exo_state`), ``/v1/models``
an ``mlx_lm.server``'s model list (:mod:`collectors.parsers.mlx_lm`), anything else a
Prometheus ``/metrics`` page (:mod:`collectors.parsers.prometheus_text`). Live polls,
configured URLs and replays of recordings all go through here. Never raises.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from collectors.parsers.exo_state import STATE_PATH, parse_exo_state
from collectors.parsers.mlx_lm import MODELS_PATH, parse_mlx_lm_models
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.samples import InferenceSample


def url_path(url: str) -> str:
    """The path of ``url`` ("" when it cannot be split)."""
    try:
        return urlsplit(url).path
    except ValueError:
        return ""


def parse_inference_page(body: str, url: str) -> InferenceSample:
    """The reading of ``body``, fetched from ``url``, by the kind of page the path names."""
    path = url_path(url)
    if path == STATE_PATH:
        return parse_exo_state(body, url)
    if path == MODELS_PATH:
        return parse_mlx_lm_models(body, url)
    return parse_inference_metrics(body, url)
