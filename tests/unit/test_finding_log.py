"""Finding history in the core: a PFC storm raised and cleared, times on the data's axis."""

from __future__ import annotations

import copy

from collectors.samples import HostSample
from fabtop.config import HostConfig
from fabtop.core.finding_log import CLEARED, RAISED, FindingLog
from fabtop.core.findings import Finding
from fabtop.core.rules import Evaluator
from fabtop.core.state import FabricState
from fabtop.run.demo import ManualClock
from tests.unit.rules_support import T0, Fabric
from tests.unit.test_rules_pfc import end_storm, start_storm, storm_fabric

ROOT = "node3/enp65s0f0np0/prio3"


class StateFed:
    """The rules' test fabric fed through a real FabricState (its evaluate, its log)."""

    def __init__(self, fab: Fabric) -> None:
        self.fab = fab
        self.clock = ManualClock()
        self.state = FabricState(
            [HostConfig(name=h) for h in fab.hosts], rules=Evaluator(), clock=self.clock
        )

    def tick(self, n: int = 1) -> None:
        fab = self.fab
        for _ in range(n):
            fab.seq += 1
            fab.t += 1.0
            self.clock.t += 1.0
            for p in fab.ports.values():
                p.grow(1.0)
            for name in fab.hosts:
                links = {nd: p.sample() for (h, nd), p in fab.ports.items() if h == name}
                sample = HostSample(
                    host=name,
                    seq=fab.seq,
                    clock_ns=round(fab.t * 1e9),
                    uptime_s=fab.t - T0 + 1000.0,
                    links=copy.deepcopy(links),
                )
                self.state.apply_sample(name, sample)


def test_a_storm_is_one_episode_raised_at_its_start_and_cleared_when_gone() -> None:
    fed = StateFed(storm_fabric())
    fed.tick(3)
    assert fed.state.finding_log.episodes() == []
    start_storm(fed.fab)
    storm_began = fed.fab.t  # the first interval of the storm starts here
    fed.tick(6)
    log = fed.state.finding_log
    (ep,) = [e for e in log.episodes() if e.subject == ROOT]
    assert ep.rule == "pfc_storm" and ep.severity == "critical" and ep.active
    # raised when the condition began (the finding's since), not when it was confirmed
    assert ep.raised == storm_began == ep.finding.since
    end_storm(fed.fab)
    fed.tick(10)
    assert not any(f.subject == ROOT for f in fed.state.findings)
    (ep,) = [e for e in log.episodes() if e.subject == ROOT]
    assert not ep.active and ep.cleared is not None
    # cleared at the first evaluation it was absent from: restore_s (4 s) of quiet
    assert storm_began + 6 + 3 <= ep.cleared <= storm_began + 6 + 6
    # A cleared episode reads as the finding did while its condition held, not with the
    # restore hold's "clears in N s" that its last version carried.
    assert "clears in" in ep.finding.summary
    assert "clears in" not in ep.last_seen.summary and "PFC storm" in ep.last_seen.summary
    # on the history's axis: the charts have points at both ends
    times, _ = fed.state.history.series(("node3", "enp65s0f0np0", "rx_bps")).points(3600)
    assert min(times) <= ep.raised and ep.cleared <= max(times)

    # The same storm again later: a new episode, the old one kept.
    start_storm(fed.fab)
    fed.tick(4)
    eps = [e for e in log.episodes() if e.subject == ROOT]
    assert len(eps) == 2 and not eps[0].active and eps[1].active
    assert eps[1].raised > eps[0].cleared  # type: ignore[operator]


def test_transitions_severity_and_bounds() -> None:
    log = FindingLog(max_cleared=3)
    warn = Finding("pfc_pressure", "warning", "n1/p", "pressure")
    crit = Finding("pfc_pressure", "critical", "n1/p", "worse", since=95.0)
    assert [(k, e.raised) for k, e in log.update([warn], 100.0)] == [(RAISED, 100.0)]
    assert log.update([crit], 101.0) == []  # the same episode, now worse
    (ep,) = log.episodes()
    assert ep.severity == "critical" and ep.finding is crit and ep.raised == 100.0
    assert log.update([Finding("pfc_pressure", "warning", "n1/p", "less")], 102.0) == []
    assert log.episodes()[0].severity == "critical"  # the worst seen stays
    ((kind, gone),) = log.update([], 103.0)
    assert kind == CLEARED and gone.cleared == 103.0
    # A long-active finding is never dropped by the ring; cleared ones go oldest first.
    keep = Finding("mtu_mismatch", "warning", "fabric", "mtu")
    for i in range(10):
        f = Finding("link_flap", "warning", f"n{i}/p", "flap")
        log.update([keep, f], 200.0 + 2 * i)
        log.update([keep], 201.0 + 2 * i)
    eps = log.episodes()
    assert len(eps) == 4 and eps[0].rule == "mtu_mismatch" and eps[0].active
    assert [e.subject for e in eps[1:]] == ["n7/p", "n8/p", "n9/p"]
