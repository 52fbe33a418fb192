"""Plan shapes of ``fabtop test``: circle-method rounds, incast rotation, latency iterations."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, permutations

import pytest

from collectors.samples import HostSample, LinkSample
from fabtop.fabtest.plans import (
    BIDIR,
    INCAST,
    LATENCY,
    LATENCY_ITERATIONS,
    LOADED,
    PAIR,
    Plan,
    PlanError,
    circle_rounds,
    iterations_for,
    make_plan,
)
from fabtop.fabtest.rails import Rails, rails


def fabric(n: int, ports: int = 1) -> Rails:
    """``n`` hosts with ``ports`` RDMA ports each."""
    samples = {}
    for i in range(n):
        links = {
            f"mlx5_{p}": LinkSample(id=f"mlx5_{p}", rdma_device=f"mlx5_{p}", port=1, kind="roce")
            for p in range(ports)
        }
        samples[f"h{i:02d}"] = HostSample(f"h{i:02d}", 1, 0, 0.0, links=links)
    return rails(samples)


def no_host_twice_per_rail(plan: Plan) -> None:
    for rnd in plan.rounds:
        for rail in {s.rail for s in rnd.steps}:
            used = [h for s in rnd.steps if s.rail == rail for h in s.hosts]
            assert len(used) == len(set(used)), (rnd.index, rail, used)


@pytest.mark.parametrize("n", range(2, 65))
def test_circle_rounds_pair_every_host_once_per_round_and_every_pair_once(n: int) -> None:
    hosts = [f"h{i}" for i in range(n)]
    rounds = circle_rounds(hosts)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    for rnd in rounds:
        used = [h for pair in rnd for h in pair]
        assert len(used) == len(set(used))
        # An even count pairs everyone; an odd one leaves exactly one host out (the bye).
        assert len(used) == n - n % 2
    assert Counter(frozenset(p) for rnd in rounds for p in rnd) == Counter(
        frozenset(p) for p in combinations(hosts, 2)
    )


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 17, 64])
def test_pairs_runs_every_ordered_pair_exactly_once_one_direction_then_the_other(n: int) -> None:
    plan = make_plan("pairs", fabric(n))
    assert all(s.kind == PAIR for s in plan.steps)
    directed = Counter((s.senders[0], s.receiver) for s in plan.steps)
    hosts = [f"h{i:02d}" for i in range(n)]
    assert directed == Counter(permutations(hosts, 2))
    no_host_twice_per_rail(plan)
    half = len(plan.rounds) // 2
    there = [(s.senders[0], s.receiver) for r in plan.rounds[:half] for s in r.steps]
    back = [(s.receiver, s.senders[0]) for r in plan.rounds[half:] for s in r.steps]
    assert there == back  # the second half is the first, turned around


@pytest.mark.parametrize("n", [2, 3, 6, 9])
def test_bidir_runs_each_pair_once_both_ways_at_once(n: int) -> None:
    plan = make_plan("bidir", fabric(n))
    assert all(s.kind == BIDIR for s in plan.steps)
    pairs = Counter(frozenset((s.senders[0], s.receiver)) for s in plan.steps)
    assert set(pairs.values()) == {1}
    assert len(pairs) == n * (n - 1) // 2
    no_host_twice_per_rail(plan)


def test_rails_run_side_by_side_in_a_round_each_on_its_own_hosts() -> None:
    # Four hosts with two ports, a fifth with one: rail 0 has 5 hosts (a bye each round),
    # rail 1 has 4.
    samples = {f"h{i:02d}": _sample(f"h{i:02d}", 2) for i in range(4)}
    plan = make_plan("pairs", rails({**samples, "h99": _sample("h99", 1)}))
    assert {s.rail for s in plan.rounds[0].steps} == {0, 1}
    rail0 = Counter((s.senders[0], s.receiver) for s in plan.steps if s.rail == 0)
    rail1 = Counter((s.senders[0], s.receiver) for s in plan.steps if s.rail == 1)
    assert len(rail0) == 5 * 4 and set(rail0.values()) == {1}
    assert len(rail1) == 4 * 3 and "h99" not in {h for pair in rail1 for h in pair}
    no_host_twice_per_rail(plan)


def _sample(host: str, ports: int) -> HostSample:
    links = {
        f"mlx5_{p}": LinkSample(id=f"mlx5_{p}", rdma_device=f"mlx5_{p}", port=1, kind="roce")
        for p in range(ports)
    }
    return HostSample(host, 1, 0, 0.0, links=links)


def _one(host: str, link: LinkSample) -> HostSample:
    return HostSample(host, 1, 0, 0.0, links={link.id: link})


@pytest.mark.parametrize("n", [2, 3, 5, 12])
def test_incast_rotates_the_receiver_through_every_host(n: int) -> None:
    plan = make_plan("incast", fabric(n))
    assert plan.k == min(8, n - 1)
    steps = plan.steps
    assert all(s.kind == INCAST for s in steps)
    assert [s.receiver for s in steps] == [f"h{i:02d}" for i in range(n)]
    for s in steps:
        assert len(s.senders) == plan.k and s.receiver not in s.senders
        assert len(set(s.senders)) == len(s.senders)
    no_host_twice_per_rail(plan)


def test_incast_k_is_bounded_and_said() -> None:
    assert make_plan("incast", fabric(6), k=2).k == 2
    with pytest.raises(PlanError, match=r"k must be 1\.\.5 "):
        make_plan("incast", fabric(6), k=6)
    with pytest.raises(PlanError, match=r"k must be 1\.\.16 "):
        make_plan("incast", fabric(40), k=17)
    with pytest.raises(PlanError, match="k must be"):
        make_plan("incast", fabric(6), k=0)


def test_latency_asks_for_enough_iterations_for_p999() -> None:
    # Nearest rank: 10 samples lie beyond p99.9 of 10,000; perftest's 1000 leaves one.
    assert iterations_for(0.999) == LATENCY_ITERATIONS == 10_000
    assert iterations_for(0.99) == 1000
    plan = make_plan("latency", fabric(5))
    assert plan.iterations == LATENCY_ITERATIONS
    assert all(s.kind == LATENCY for s in plan.steps)
    pairs = Counter(frozenset((s.senders[0], s.receiver)) for s in plan.steps)
    assert len(pairs) == 10 and set(pairs.values()) == {1}


@pytest.mark.parametrize("n", [3, 4, 7])
def test_loaded_latency_measures_each_receiver_alone_then_under_an_incast(n: int) -> None:
    plan = make_plan("loaded-latency", fabric(n))
    assert plan.k == min(8, n - 2)
    rounds = plan.rounds
    assert len(rounds) == 2 * n
    for alone, loaded in zip(rounds[::2], rounds[1::2], strict=True):
        (a,) = alone.steps
        (b,) = loaded.steps
        assert a.kind == LATENCY and b.kind == LOADED
        assert (a.senders, a.receiver) == (b.senders, b.receiver)
        assert len(b.load) == plan.k and not set(b.load) & {b.receiver, *b.senders}
    assert sorted(r.steps[0].receiver for r in rounds[::2]) == [f"h{i:02d}" for i in range(n)]
    no_host_twice_per_rail(plan)


def test_plans_are_deterministic() -> None:
    for name in ("pairs", "bidir", "incast", "latency", "loaded-latency"):
        assert make_plan(name, fabric(7, 2)).rounds == make_plan(name, fabric(7, 2)).rounds


def test_plans_that_cannot_run_say_why() -> None:
    with pytest.raises(PlanError, match="unknown plan 'pair'"):
        make_plan("pair", fabric(3))
    with pytest.raises(PlanError, match="needs 2 hosts"):
        make_plan("pairs", fabric(1))
    with pytest.raises(PlanError, match="needs 3 hosts"):
        make_plan("loaded-latency", fabric(2))


def test_a_rail_with_fewer_hosts_incasts_from_all_it_has() -> None:
    big = {f"h{i}": _sample(f"h{i}", 2 if i < 3 else 1) for i in range(6)}
    plan = make_plan("incast", rails(big), k=4)
    assert plan.k == 4
    assert {len(s.senders) for s in plan.steps if s.rail == 0} == {4}
    assert {len(s.senders) for s in plan.steps if s.rail == 1} == {2}  # h0..h2 only
    no_host_twice_per_rail(plan)


def test_fewer_than_two_hosts_make_no_rounds_and_steps_name_themselves() -> None:
    assert circle_rounds([]) == [] and circle_rounds(["a"]) == []
    loaded = make_plan("loaded-latency", fabric(3)).rounds[1].steps[0]
    assert loaded.label == "h01 -> h00 rail 0 under incast from h02"
    assert make_plan("bidir", fabric(2)).steps[0].label == "h00 <-> h01 rail 0"
