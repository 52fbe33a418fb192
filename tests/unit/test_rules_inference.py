"""Token-rate drop shown together with the fabric event it coincides with."""

from __future__ import annotations

from collectors.samples import InferenceSample
from tests.unit.rules_support import Fabric, by_rule

URL = "http://127.0.0.1:8000/metrics"


class Server:
    def __init__(self, fab: Fabric, host: str) -> None:
        self.total = 0.0
        self.rate = 2400.0
        self.fab, self.host = fab, host
        self._put()

    def _put(self) -> None:
        self.fab.inference[self.host] = [
            InferenceSample(URL, server="vllm", generated_tokens_total=self.total)
        ]

    def tick(self) -> None:
        self.total += self.rate
        self._put()
        self.fab.tick()


def test_drop_is_marked_with_the_fabric_storm() -> None:
    fab = Fabric()
    p3 = fab.port("node3").traffic(60)
    srv = Server(fab, "node1")
    fab.port("node1").traffic(60)
    for _ in range(10):
        srv.tick()
    # node3 becomes a stuck receiver; the tokens collapse at the same time.
    p3.traffic(0).set(tx_pause_us={3: 998_000.0}, tx_pause={3: 6000.0})
    srv.rate = 100.0
    srv.tick()
    srv.tick()
    found = by_rule(fab.findings, "token_drop")
    assert [f.subject for f in found] == [f"node1/{URL}"]
    f = found[0]
    assert f.evidence["fabric_event"] == "node3/enp65s0f0np0/prio3"
    assert f.evidence["fabric_rule"] == "pfc_storm"
    assert "96%" in f.summary and "2400 -> 100" in f.summary


def test_drop_without_a_fabric_event_is_not_blamed_on_the_fabric() -> None:
    fab = Fabric()
    fab.port("node1").traffic(60)
    srv = Server(fab, "node1")
    for _ in range(10):
        srv.tick()
    srv.rate = 100.0  # fewer requests came in: nothing wrong with the fabric
    for _ in range(4):
        srv.tick()
    assert not by_rule(fab.findings, "token_drop")


def test_steady_tokens_during_a_fabric_event_are_not_a_drop() -> None:
    fab = Fabric()
    fab.port("node1", mtu=1500).traffic(60)
    srv = Server(fab, "node1")
    for _ in range(10):
        srv.tick()
    assert by_rule(fab.findings, "roce_mtu_low")
    assert not by_rule(fab.findings, "token_drop")
