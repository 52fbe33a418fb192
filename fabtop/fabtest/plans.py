"""The shapes of ``fabtop test``'s plans, as data: which hosts load which, round by round.

A plan is a list of rounds; the steps of one round run at once and no host takes two
roles on one rail in a round. Every rail runs its own steps in the same round (rails are
separate networks, and a collective loads them all at once), each on its own hosts: a
host with fewer ports sits out the rounds of the rails it lacks. Orders are
deterministic: the hosts as given, the rails by number.

- ``pairs``: every pair of hosts per rail, in rounds of disjoint pairs (the circle
  method), one direction in the first ``n - 1`` rounds and the other in the next; an odd
  host count gives one host a bye per round.
- ``bidir``: the same rounds, both directions of each pair at once.
- ``incast``: ``k`` senders into one receiver, the receiver rotating through every host
  (one receiver per round and rail); the senders are the ``k`` hosts after it (on a rail
  with fewer hosts, every other host).
- ``latency``: every pair once (latency is a round trip), with enough iterations for the
  percentiles fabtop reports (:data:`LATENCY_ITERATIONS`).
- ``loaded-latency``: per receiver, the latency pair alone, then the same pair while an
  incast of ``k`` other hosts runs into the same receiver.
- ``sizes``: one pair per rail (its first two hosts, the first sending), every rail at
  once, swept over message sizes (:mod:`fabtop.fabtest.sizes`).
- ``loss`` (opt-in: only when named): per rail, an incast into its first host during
  which the last sender's process is killed (:mod:`fabtop.fabtest.loss`).
- ``serving`` (opt-in, never a default): an inference server's windows, made from the
  servers found (:mod:`fabtop.fabtest.serving`), not by :func:`make_plan`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from fabtop.fabtest.rails import Rails

PLANS = ("pairs", "bidir", "incast", "latency", "loaded-latency", "sizes", "loss", "serving")
# Plans that run only when named, never as part of a set of plans: they lose a worker on
# purpose, or load a serving inference server.
OPT_IN = frozenset({"loss", "serving"})

# Step kinds: what a step measures and how it is judged.
PAIR, BIDIR, INCAST, LATENCY, LOADED = "pair", "bidir", "incast", "latency", "loaded"
SIZES = "sizes"  # a pair swept over message sizes
LOSS = "loss"  # an incast whose last sender is killed mid-run
SERVING = "serving"  # one window of an inference server's figures (Step.window)

# The percentiles fabtop reports from a latency step's raw samples.
PERCENTILES = (0.5, 0.99, 0.999)
# Samples beyond the highest percentile reported: with 10 of them, p99.9 is the 10th
# worst sample, not the worst one. perftest's default of 1000 iterations leaves p99.9 one
# sample from the maximum, so a single scheduling hiccup on either host decides it.
TAIL_SAMPLES = 10

# Senders into one receiver (incast, loaded-latency), when not told: 8 into 1 overloads
# the receiver's switch port 8 to 1, far past where PFC must pause and ECN must mark (any
# overload past 1:1 congests), so more senders add processes on the receiver (one engine
# server per sender), not information. Smaller fabrics use every other host.
INCAST_DEFAULT_K = 8
# At most this many: each sender needs its own server process and port on the receiver,
# and a 16th share of a 100 Gb/s port (6 Gb/s) is still well above the engines' noise.
INCAST_MAX_K = 16


class PlanError(ValueError):
    """A plan that cannot be made: unknown name, too few hosts, a k out of bounds."""


def iterations_for(q: float, beyond: int = TAIL_SAMPLES) -> int:
    """Latency iterations so that ``beyond`` samples lie past the ``q`` percentile
    (nearest rank): ``ceil(beyond / (1 - q))``; 10,000 for p99.9."""
    return math.ceil(round(beyond / (1.0 - q), 6))


LATENCY_ITERATIONS = iterations_for(max(PERCENTILES))


@dataclass(frozen=True, slots=True)
class Step:
    """One measurement: ``senders`` into ``receiver`` on ``rail``.

    ``pair`` and ``latency``: one sender; ``bidir``: one sender, both directions at once;
    ``incast``: k senders; ``loaded``: the latency pair ``senders[0] -> receiver`` measured
    while ``load`` (an incast's senders) sends into the same receiver.
    """

    kind: str
    rail: int
    senders: tuple[str, ...]
    receiver: str
    load: tuple[str, ...] = ()
    window: str = ""  # serving: baseline, incast, bidir or after

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host the step uses (senders, receiver, load)."""
        return (*self.senders, self.receiver, *self.load)

    @property
    def label(self) -> str:
        """How tables and reports name the step."""
        if self.kind == SERVING:
            beside = {"incast": f"{','.join(self.senders)} -> {self.receiver}"}
            beside["bidir"] = f"{','.join(self.senders)} <-> {self.receiver}"
            if self.window in beside:
                return f"{self.receiver} serving beside {self.window} {beside[self.window]}"
            return f"{self.receiver} serving, {self.window}"
        arrow = "<->" if self.kind == BIDIR else "->"
        src = ",".join(self.senders)
        text = f"{src} {arrow} {self.receiver} rail {self.rail}"
        if self.kind == LOSS:
            text += f", {self.senders[-1]} killed"
        return f"{text} under incast from {','.join(self.load)}" if self.load else text


@dataclass(frozen=True, slots=True)
class Round:
    """Steps that run at once."""

    index: int
    steps: tuple[Step, ...]


@dataclass(slots=True)
class Plan:
    """A plan's rounds, in order, and what the runner needs to run them."""

    name: str
    rounds: list[Round]
    iterations: int | None = None  # latency steps' iterations (None: no latency step)
    k: int | None = None  # senders per incast (None: no incast)
    problems: list[str] = field(default_factory=list)  # rails left out, one line each

    @property
    def steps(self) -> list[Step]:
        """Every step, round after round."""
        return [s for r in self.rounds for s in r.steps]


def circle_rounds(hosts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Every pair of ``hosts`` once, in ``n - 1`` rounds of disjoint pairs (``n`` rounds
    for an odd ``n``: each round one host has a bye). The circle method: the first host
    stays, the others turn one place per round."""
    if len(hosts) < 2:
        return []
    ring: list[str | None] = list(hosts)
    if len(ring) % 2:
        ring.append(None)  # the bye
    n = len(ring)
    out: list[list[tuple[str, str]]] = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        out.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def _rail_hosts(rails: Rails, plan: str, problems: list[str], need: int) -> dict[int, list[str]]:
    """Hosts per rail in the order given; rails with too few hosts for ``plan`` are said."""
    out: dict[int, list[str]] = {}
    for rail, ports in rails.ports.items():
        hosts = list(dict.fromkeys(p.host for p in ports))
        if len(hosts) < need:
            problems.append(
                f"rail {rail}: {plan} needs {need} hosts with a port on it, it has "
                f"{len(hosts)} ({', '.join(hosts) or 'none'})"
            )
            continue
        out[rail] = hosts
    return out


def _merge(per_rail: dict[int, list[list[Step]]]) -> list[Round]:
    """Round i of the plan: round i of every rail."""
    count = max((len(r) for r in per_rail.values()), default=0)
    rounds = []
    for i in range(count):
        steps = tuple(s for r in sorted(per_rail) if i < len(per_rail[r]) for s in per_rail[r][i])
        rounds.append(Round(i, steps))
    return rounds


def _k(k: int | None, others: int, plan: str) -> int:
    """Senders per incast: ``k`` checked, or the default, for ``others`` candidate senders
    on the largest rail (a smaller rail's incasts use every other host it has)."""
    if k is None:
        return min(INCAST_DEFAULT_K, others)
    top = min(INCAST_MAX_K, others)
    if not 1 <= k <= top:
        raise PlanError(f"{plan}: k must be 1..{top} with these hosts, not {k}")
    return k


def make_plan(name: str, rails: Rails, k: int | None = None) -> Plan:
    """The rounds of plan ``name`` over ``rails`` (:class:`PlanError` when it cannot run)."""
    if name not in PLANS:
        raise PlanError(f"unknown plan {name!r}: one of {', '.join(PLANS)}")
    if name == SERVING:
        raise PlanError("serving: made from the inference servers found (serving_plan)")
    problems: list[str] = []
    need = 3 if name in ("loaded-latency", "loss") else 2
    hosts = _rail_hosts(rails, name, problems, need)
    if not hosts:
        raise PlanError(
            f"{name}: no rail has {need} hosts to test" + (f" ({problems[0]})" if problems else "")
        )
    per_rail: dict[int, list[list[Step]]] = {}
    plan = Plan(name, [], problems=problems)
    if name in ("pairs", "bidir", "latency"):
        kind = {"pairs": PAIR, "bidir": BIDIR, "latency": LATENCY}[name]
        for rail, hs in hosts.items():
            there = [[Step(kind, rail, (a,), b) for a, b in rnd] for rnd in circle_rounds(hs)]
            back = [[Step(kind, rail, (s.receiver,), s.senders[0]) for s in rnd] for rnd in there]
            per_rail[rail] = there + back if name == "pairs" else there
        plan.iterations = LATENCY_ITERATIONS if name == "latency" else None
    elif name == "loss":
        from fabtop.fabtest.loss import loss_steps  # (it builds on this module)

        plan.k = _k(k, max(len(hs) for hs in hosts.values()) - 1, name)
        if plan.k < 2:
            raise PlanError(f"{name}: k must be at least 2 (one sender is lost, one goes on)")
        per_rail = {rail: [loss_steps(rail, hs, plan.k)] for rail, hs in hosts.items()}
    elif name == "incast":
        plan.k = _k(k, max(len(hs) for hs in hosts.values()) - 1, name)
        for rail, hs in hosts.items():
            n, kk = len(hs), min(plan.k, len(hs) - 1)
            per_rail[rail] = [
                [Step(INCAST, rail, tuple(hs[(i + j) % n] for j in range(1, kk + 1)), hs[i])]
                for i in range(n)
            ]
    elif name == "sizes":  # one pair per rail is enough: a size's curve is the path's
        per_rail = {rail: [[Step(SIZES, rail, (hs[0],), hs[1])]] for rail, hs in hosts.items()}
    else:  # loaded-latency: the latency sender is the host after the receiver
        plan.k = _k(k, max(len(hs) for hs in hosts.values()) - 2, name)
        plan.iterations = LATENCY_ITERATIONS
        for rail, hs in hosts.items():
            n, kk = len(hs), min(plan.k, len(hs) - 2)
            rounds: list[list[Step]] = []
            for i in range(n):
                sender = (hs[(i + 1) % n],)
                load = tuple(hs[(i + j) % n] for j in range(2, kk + 2))
                rounds.append([Step(LATENCY, rail, sender, hs[i])])
                rounds.append([Step(LOADED, rail, sender, hs[i], load)])
            per_rail[rail] = rounds
    plan.rounds = _merge(per_rail)
    return plan
