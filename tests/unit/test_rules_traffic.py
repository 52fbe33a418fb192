"""RDMA share near zero on a busy port: the collective library fell back to TCP."""

from __future__ import annotations

from tests.unit.rules_support import Fabric, by_rule


def test_tcp_fallback_fires_within_two_ticks_and_restores() -> None:
    fab = Fabric()
    p = fab.port("node3").traffic(40)
    fab.run(2)
    p.traffic(40, rdma_share=0.01)
    assert not by_rule(fab.tick(), "rdma_fallback")
    found = by_rule(fab.tick(), "rdma_fallback")
    assert [f.subject for f in found] == ["node3/enp65s0f0np0"]
    assert "1.0% is RDMA" in found[0].summary and "NCCL_DEBUG=INFO" in found[0].next_step
    p.traffic(40)
    fab.run(4)
    assert not by_rule(fab.findings, "rdma_fallback")


def test_idle_port_with_only_tcp_is_fine() -> None:
    fab = Fabric()
    fab.port("node3").traffic(0.05, rdma_share=0.0)  # ssh and metrics: 50 Mb/s
    assert not by_rule(fab.run(5), "rdma_fallback")


def test_healthy_rdma_traffic_is_fine() -> None:
    fab = Fabric()
    fab.port("node3").traffic(95)
    assert not by_rule(fab.run(5), "rdma_fallback")
