"""Discovery of servers without counters: exo on 52415, mlx_lm.server (not llama.cpp) on 8080."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

from collectors.transport.base import HTTP_MAX_BODY, Transport
from fabtop.run.discovery import DEFAULT_PORTS, Discovery, loopback_url, probe_ports

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "inference"
EXO_STATE = (FIX / "exo_state_two_studios_documented.json").read_bytes()
MLX_MODELS = (FIX / "mlx_lm_v1_models_documented.json").read_bytes()
# llama.cpp without --metrics (ggml-org/llama.cpp tools/server/README.md: 501
# not_supported_error), and its /v1/models entries with owned_by/meta.
LLAMACPP_501 = json.dumps(
    {
        "error": {
            "code": 501,
            "type": "not_supported_error",
            "message": "This server does not support metrics endpoint.",
        }
    }
).encode()
LLAMACPP_MODELS = json.dumps(
    {
        "object": "list",
        "data": [
            {
                "id": "qwen",
                "object": "model",
                "created": 1,
                "owned_by": "llamacpp",
                "meta": {"n_vocab": 151936},
            }
        ],
    }
).encode()
NOT_FOUND = (404, b'{"detail":"Not Found"}')


class _Paths(Transport):
    """Answers per (port, path): (status, body) or 'hang'; a port not listed is refused."""

    def __init__(self, answers: dict[int, dict[str, tuple[int, bytes] | str]]) -> None:
        self.name = "mac1"
        self.answers = answers
        self.asked: list[tuple[int, str, int]] = []

    async def connect(self) -> None:
        pass

    async def stream(self, script: str, args: Sequence[str]) -> AsyncGenerator[bytes, None]:
        if False:
            yield b""

    async def run(self, argv: Sequence[str], timeout: float) -> tuple[int, bytes, bytes]:
        return 0, b"", b""

    async def http_get(
        self, host: str, port: int, path: str, timeout: float, *, max_bytes: int = HTTP_MAX_BODY
    ) -> tuple[int, bytes]:
        self.asked.append((port, path, max_bytes))
        if port not in self.answers:
            raise self.error(f"connection refused: {host}:{port}")
        a = self.answers[port].get(path, NOT_FOUND)
        if a == "hang":
            await asyncio.sleep(3600)
        assert not isinstance(a, str)
        return a

    async def close(self) -> None:
        pass


def test_exo_port_is_a_default() -> None:
    assert 52415 in DEFAULT_PORTS


async def test_exo_and_mlx_lm_are_found_and_their_pages_polled() -> None:
    t = _Paths(
        {
            52415: {"/state": (200, EXO_STATE)},  # FastAPI: /metrics is 404
            8080: {"/metrics": (404, b"Not Found"), "/v1/models": (200, MLX_MODELS)},
        }
    )
    disc = Discovery(ports=(8080, 52415))
    answers = await probe_ports(t, disc.to_probe(0.0), timeout=1.0)
    assert disc.update(0.0, answers) == [loopback_url(8080), loopback_url(52415)]
    assert disc.found == {loopback_url(8080): "mlx_lm", loopback_url(52415): "exo"}
    assert disc.urls() == ["http://127.0.0.1:8080/v1/models", "http://127.0.0.1:52415/state"]
    # the JSON pages are fetched with the JSON cap, not the 8 MiB /metrics one
    assert (52415, "/state", 4 * 1024 * 1024) in t.asked


async def test_llama_cpp_on_8080_is_not_taken_for_mlx_lm() -> None:
    t = _Paths({8080: {"/metrics": (501, LLAMACPP_501), "/v1/models": (200, MLX_MODELS)}})
    answers = await probe_ports(t, [loopback_url(8080)], timeout=1.0)
    assert answers == {loopback_url(8080): None}  # answered, no server we can read
    assert (8080, "/v1/models", 4 * 1024 * 1024) not in t.asked  # 501: not even asked
    t = _Paths({8080: {"/metrics": (404, b"Not Found"), "/v1/models": (200, LLAMACPP_MODELS)}})
    answers = await probe_ports(t, [loopback_url(8080)], timeout=1.0)
    assert answers == {loopback_url(8080): None}


async def test_a_hung_api_page_costs_the_ports_one_timeout() -> None:
    t = _Paths({52415: {"/state": "hang"}, 8080: {"/v1/models": "hang"}})
    started = time.monotonic()
    answers = await probe_ports(t, [loopback_url(52415), loopback_url(8080)], timeout=0.3)
    took = time.monotonic() - started
    assert answers == {loopback_url(52415): None, loopback_url(8080): None}
    assert took < 1.0, took


async def test_a_server_that_goes_away_stops_being_polled() -> None:
    t = _Paths({52415: {"/state": (200, EXO_STATE)}})
    disc = Discovery(ports=(52415,))
    disc.update(0.0, await probe_ports(t, disc.to_probe(0.0), timeout=1.0))
    assert disc.urls() == ["http://127.0.0.1:52415/state"]
    t.answers[52415] = {}  # something else answers there now
    disc.update(100.0, await probe_ports(t, disc.to_probe(100.0), timeout=1.0))
    assert disc.urls() == [] and disc.polled == {}
