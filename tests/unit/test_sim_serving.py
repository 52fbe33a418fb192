"""The demo's inference server under the test's load: a full data port of its host, on
any of its fabrics, costs it the share sim/inference.py says, and nothing else does."""

from __future__ import annotations

import pytest

from fabtop.sim.bench import Endpoint, Flow
from fabtop.sim.fabric import Fabric, demo_hosts
from fabtop.sim.inference import NEIGHBOUR_COST


def token_rates(src: Endpoint | None, dst: Endpoint | None) -> tuple[float, float]:
    """node1's server's token rate before and during a flow from ``src`` to ``dst``."""
    fab = Fabric(demo_hosts())  # healthy: no episode moves the token rate
    fab.at(4.0)
    server = fab.hosts["node1"].server
    assert server is not None
    before = server.rate
    if src is not None and dst is not None:
        fab.bench.add(Flow(src, dst, 4.0, 12.0, rdma=src.rdma))
    fab.at(8.0)
    return before, server.rate


@pytest.mark.parametrize("kind", ["roce", "ib"])
def test_a_full_port_of_the_server_host_costs_it_its_share(kind: str) -> None:
    before, during = token_rates(Endpoint("node2", kind), Endpoint("node1", kind))
    # The demo's own 3 % noise on top of the cost of a port filled by the test.
    assert during / before == pytest.approx(1.0 - NEIGHBOUR_COST, abs=0.07)


def test_a_load_between_other_hosts_leaves_the_server_alone() -> None:
    before, during = token_rates(Endpoint("node2", "roce"), Endpoint("node3", "roce"))
    quiet_before, quiet = token_rates(None, None)
    assert during / before == pytest.approx(quiet / quiet_before)
