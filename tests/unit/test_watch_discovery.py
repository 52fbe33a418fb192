"""doctor and snapshot wait for a host's inference discovery before saying it has no server.

On a busy operator machine the first discovery round of a node can finish after its
frames: "no inference server on node1" was then said of the demo's node1, which runs one
(a flake of test_doctor under load). The watch now waits, within its timeout, until every
reporting host's servers were looked for and the poll's readings reached it.
"""

from __future__ import annotations

import asyncio

import pytest

from fabtop.commands.headless import watch
from fabtop.core.coverage import coverage
from fabtop.run.compose import fabric_state
from fabtop.run.demo import demo_config
from fabtop.sim.transport import DemoTransport


async def test_a_slow_discovery_is_waited_for_not_called_no_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = DemoTransport.http_get

    async def slow(self: DemoTransport, *args: object, **kw: object) -> tuple[int, bytes]:
        await asyncio.sleep(1.5)  # the node answers late: that is the condition under test
        return await real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(DemoTransport, "http_get", slow)
    config = demo_config(scenario="healthy")
    state = fabric_state(config)
    await watch(config, state, seconds=0.0, frames=1, timeout=30.0)
    node1 = state.hosts["node1"]
    assert node1.sample is not None and node1.sample.inference, "node1's server not read"
    cov = coverage(state, state.now(), state.interval)
    assert not any("no inference server on node1" in g for g in cov.gaps), cov.gaps
