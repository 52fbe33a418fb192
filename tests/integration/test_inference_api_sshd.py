"""exo's /state and an mlx_lm.server through a real sshd: found, shown, rate unknown.

Real HTTP servers on the node's loopback (here: this machine's) serve the documented
bodies (tests/fixtures/inference/SOURCES.md); fabtop reaches them the way it reaches
/metrics, direct-tcpip over SSH, with the same caps and timeouts. Hostile bodies on two
configured URLs cost those readings only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collectors.text import has_control
from fabtop.config import Config, HostConfig, SshTarget
from fabtop.core.coverage import host_gaps
from fabtop.core.state import FabricState
from fabtop.run.session import Session
from tests.integration.httpd import QuietHandler, serve
from tests.integration.sshd import Sshd

pytestmark = pytest.mark.sshd

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "inference"
OSC = "\x1b]52;c;cGF5bG9hZA==\x07"


def _exo_body() -> bytes:
    doc = json.loads((FIX / "exo_state_two_studios_documented.json").read_text())
    (_, ident), *_ = doc["nodeIdentities"].items()
    ident["friendlyName"] = f"studio{OSC}-1"
    return json.dumps(doc).encode()


class _Exo(QuietHandler):
    """exo's API as FastAPI serves it: /state, and 404 JSON for what it has no route for."""

    def do_GET(self) -> None:
        if self.path == "/state":
            self.reply(_exo_body(), content_type="application/json")
        else:
            self.reply(b'{"detail":"Not Found"}', 404, "application/json")


class _MlxLm(QuietHandler):
    """mlx_lm.server's do_GET: /v1/models, /health, else 404 ``Not Found``."""

    def do_GET(self) -> None:
        if self.path.startswith("/v1/models"):
            self.reply(
                (FIX / "mlx_lm_v1_models_documented.json").read_bytes(),
                content_type="application/json",
            )
        elif self.path == "/health":
            self.reply(b'{"status": "ok"}', content_type="application/json")
        else:
            self.reply(b"Not Found", 404, "application/json")


class _Deep(QuietHandler):
    def do_GET(self) -> None:
        self.reply(
            b'{"topology": ' + b"[" * 5000 + b"]" * 5000 + b"}", content_type="application/json"
        )


class _Huge(QuietHandler):
    def do_GET(self) -> None:  # past the transport's 8 MiB cap on any page
        with contextlib.suppress(OSError):  # the reader stops at its cap and hangs up
            self.reply(
                b'{"pad": "' + b"x" * (9 * 1024 * 1024) + b'"}', content_type="application/json"
            )


@pytest.fixture
def ports() -> Iterator[tuple[int, int, int, int]]:
    with serve(_Exo) as exo, serve(_MlxLm) as mlx, serve(_Deep) as deep, serve(_Huge) as huge:
        yield exo, mlx, deep, huge


async def _run(
    sshd: Sshd, host: HostConfig, ready: Callable[[FabricState], bool], **kw: object
) -> FabricState:
    """Collect ``host`` until ``ready`` holds (30 s at most): a starved machine takes longer,
    it never gets fewer polls."""
    cfg = Config(hosts=[host], interval=0.5)
    state = FabricState(cfg.hosts)
    session = Session(cfg, state, transports={host.name: sshd.transport(name=host.name)}, **kw)  # type: ignore[arg-type]
    task = asyncio.create_task(session.run())
    try:
        end = time.monotonic() + 30
        while not ready(state) and time.monotonic() < end:
            await asyncio.sleep(0.05)
    finally:
        await session.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return state


async def test_exo_and_mlx_lm_through_sshd(sshd: Sshd, ports: tuple[int, int, int, int]) -> None:
    exo, mlx, deep, huge = ports
    deep_url = f"http://127.0.0.1:{deep}/state"
    huge_url = f"http://127.0.0.1:{huge}/state"
    host = HostConfig(
        "mac1", ssh=SshTarget(sshd.host, sshd.user, sshd.port), inference=(deep_url, huge_url)
    )
    exo_url = f"http://127.0.0.1:{exo}/state"
    mlx_url = f"http://127.0.0.1:{mlx}/v1/models"

    def ready(st: FabricState) -> bool:
        # every server read, and a frame after that (rates come with the next frame)
        h = st.hosts["mac1"]
        return (
            h.sample is not None
            and h.rates is not None
            and len(h.sample.inference) == 4
            and {exo_url, mlx_url} <= set(h.rates.inference)
        )

    state = await _run(sshd, host, ready, discovery_ports=(exo, mlx))
    hs = state.hosts["mac1"]
    assert hs.sample is not None and hs.rates is not None, hs.error
    by_url = {i.url: i for i in hs.sample.inference}
    assert list(by_url) == [deep_url, huge_url, exo_url, mlx_url]  # configured, then by port

    e = by_url[exo_url]
    assert (e.server, e.error, e.model) == (
        "exo",
        None,
        "mlx-community/Llama-3.3-70B-Instruct-4bit",
    )
    assert e.cluster is not None
    assert [n.name for n in e.cluster.nodes] == ["studio-1", "studio-2"]
    assert sorted(
        (r.start_layer, r.end_layer, r.status) for r in e.cluster.instances[0].runners
    ) == [(0, 40, "RunnerRunning"), (40, 80, "RunnerReady")]
    m = by_url[mlx_url]
    assert (m.server, m.error, m.model) == ("mlx_lm", None, "mlx-community/Qwen3-30B-A3B-4bit")

    # no rate, not even 0, for either; the reason is said, naming the server
    for url in (exo_url, mlx_url):
        assert set(hs.rates.inference[url].values()) == {None}, url
    gaps = host_gaps(hs)
    assert any(g.startswith("token rate unknown on mac1 (exo ") for g in gaps), gaps
    assert any(g.startswith("token rate unknown on mac1 (mlx_lm.server ") for g in gaps), gaps

    # hostile bodies: that reading's error, nothing else lost
    d, h = by_url[deep_url], by_url[huge_url]
    assert d.cluster is None and d.error is not None and "nested" in d.error
    assert h.cluster is None and h.error is not None and "limit" in h.error
    texts = [str(x) for i in hs.sample.inference for x in (i.model, i.error, i.rate_unknown)]
    texts += [n.name or "" for n in e.cluster.nodes] + list(hs.warnings)
    assert not any(has_control(t) for t in texts)
    assert "cGF5bG9hZA" not in repr(hs.sample.inference)
