"""Inference server discovery: which ports are tried, what counts as a server, no stalls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

import pytest

from collectors.transport.base import HTTP_MAX_BODY, Transport
from fabtop.run.discovery import (
    DEFAULT_PORTS,
    NOT_A_SERVER_S,
    Discovery,
    candidate_urls,
    loopback_url,
    probe_ports,
    recognize,
)


class _Ports(Transport):
    """Answers /metrics per port: bytes (200), an int status, or 'hang'; else refused."""

    def __init__(self, answers: dict[int, bytes | int | str]) -> None:
        self.name = "n1"
        self.answers = answers

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
        a = self.answers.get(port)
        if a == "hang":
            await asyncio.sleep(3600)
        if isinstance(a, bytes):
            return 200, a
        if isinstance(a, int):
            return a, b"nope"
        raise self.error(f"connection refused: {host}:{port}")

    async def close(self) -> None:
        pass


def _vllm(fixtures_dir: Path) -> bytes:
    return (fixtures_dir / "llm_metrics" / "vllm_metrics_datadog.txt").read_bytes()


def test_configured_loopback_ports_are_not_probed_again() -> None:
    urls = candidate_urls(["http://localhost:8000/metrics", "http://10.0.0.5:8080/metrics"])
    assert loopback_url(8000) not in urls
    assert loopback_url(8080) in urls  # 8080 on another address is a different server
    assert len(urls) == len(DEFAULT_PORTS) - 1


def test_only_a_recognized_metrics_page_is_a_server(fixtures_dir: Path) -> None:
    url = loopback_url(8000)
    found = recognize(url, 200, _vllm(fixtures_dir))
    assert found is not None and found.server == "vllm"
    assert recognize(url, 200, b"# TYPE go_goroutines gauge\ngo_goroutines 7\n") is None
    assert recognize(url, 404, _vllm(fixtures_dir)) is None


async def test_probe_finds_server_and_a_hung_port_costs_one_timeout(fixtures_dir: Path) -> None:
    t = _Ports({8000: _vllm(fixtures_dir), 8080: 404, 3000: "hang"})
    started = time.monotonic()
    answers = await probe_ports(
        t, [loopback_url(p) for p in (8000, 8080, 3000, 30000)], timeout=0.3
    )
    assert time.monotonic() - started < 1.5
    d = Discovery()
    new = d.update(0.0, answers)
    assert new == [loopback_url(8000)] and d.urls() == [loopback_url(8000)]
    assert answers[loopback_url(8080)] is None and answers[loopback_url(3000)] is False


def test_rediscovery_timing_and_what_is_kept(fixtures_dir: Path) -> None:
    d = Discovery(configured=("http://127.0.0.1:9000/metrics",), interval_s=60.0)
    assert not d.due(0.0, connected=False)
    assert d.due(0.0, connected=True)
    found = recognize(loopback_url(8000), 200, _vllm(fixtures_dir))
    d.update(0.0, {loopback_url(8000): found})
    assert not d.due(30.0, True) and d.due(60.0, True)
    assert d.urls() == ["http://127.0.0.1:9000/metrics", loopback_url(8000)]
    d.update(60.0, {loopback_url(8000): False})  # the server is down: keep showing its error
    assert loopback_url(8000) in d.urls()
    d.update(120.0, {loopback_url(8000): None})  # something else took the port
    assert d.urls() == ["http://127.0.0.1:9000/metrics"]
    d.reconnected()
    assert d.due(121.0, True)


def test_a_port_that_is_no_server_is_not_fetched_and_parsed_every_round() -> None:
    exporter, vllm = loopback_url(8000), loopback_url(8001)
    d = Discovery(ports=(8000, 8001, 8080))
    assert d.to_probe(0.0) == [exporter, vllm, loopback_url(8080)]
    d.update(0.0, {exporter: None, vllm: False, loopback_url(8080): False})
    # A node_exporter answering on 8000 is left alone; closed ports are asked again.
    assert d.to_probe(60.0) == [vllm, loopback_url(8080)]
    assert d.to_probe(NOT_A_SERVER_S) == [exporter, vllm, loopback_url(8080)]
    d.reconnected()  # a rebooted node may run something else there
    assert exporter in d.to_probe(61.0)


def test_recognizing_a_huge_page_reads_only_its_head(fixtures_dir: Path) -> None:
    filler = b"".join(b'node_cpu_seconds_total{cpu="%d"} 1.0\n' % i for i in range(400_000))
    assert len(filler) > 14_000_000
    url = loopback_url(8000)
    started = time.process_time()
    assert recognize(url, 200, b"# TYPE node_cpu_seconds_total counter\n" + filler) is None
    found = recognize(url, 200, _vllm(fixtures_dir) + filler)
    assert time.process_time() - started < 1.0, "parsed the whole 15 MB"
    assert found is not None and found.server == "vllm"


async def test_probing_parses_off_the_event_loop(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from collectors.runner import OffLoop
    from fabtop.run import discovery

    threads: list[int] = []
    real = discovery.recognize

    def spy(url: str, status: int, body: bytes) -> object:
        threads.append(threading.get_ident())
        return real(url, status, body)

    monkeypatch.setattr(discovery, "recognize", spy)
    parser = OffLoop()
    try:
        answers = await probe_ports(
            _Ports({8000: _vllm(fixtures_dir)}),
            [loopback_url(8000)],
            timeout=1.0,
            parser=parser,
            key="n1",
        )
    finally:
        parser.close()
    found = answers[loopback_url(8000)]
    assert not isinstance(found, bool) and found is not None and found.server == "vllm"
    assert threads and threading.get_ident() not in threads
