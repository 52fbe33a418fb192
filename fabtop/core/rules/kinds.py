"""The two kinds of health rule, declared on each rule where it is defined.

- A *state* rule judges what the hosts report of their configuration or state: PFC and
  trust configuration, MTU, firmware and software versions, PCIe width, the subnet
  manager, GIDs, the packet filter, a Mac's RDMA switch, a Thunderbolt cable's training.
  One reading is enough to judge it; where it waits live (``HOLDS``: a port that just
  came up sits in INIT until the subnet manager's next sweep), that wait is only so a
  passing moment is not named.
- A *window* rule judges rates over time: a storm, pauses, drops, ECN, a traffic share,
  a token-rate drop, a temperature held, a flap. It needs its ``window`` of rates (the
  thresholds named, summed; none named: one interval of rates) before it can say
  anything, and is not judged on less.

A snapshot judges the state rules on what it read, at once, and says which window rules
its span was too short for (:meth:`fabtop.core.rules.Evaluator.once`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

STATE: Literal["state"] = "state"
WINDOW: Literal["window"] = "window"

# The thresholds a state condition must hold for live before it is named: a one-shot
# judgement (a snapshot) sets them to 0.
HOLDS: tuple[str, ...] = ("detect_s",)


@dataclass(frozen=True, slots=True)
class RuleKind:
    """What kind of judgement a rule makes, and the rule names of its findings."""

    kind: Literal["state", "window"]
    # The rule names of its findings, which are also the names of its memory's tracks.
    names: tuple[str, ...]
    # WINDOW: the thresholds whose sum is the seconds of rates it needs (none: one interval).
    window: tuple[str, ...] = ()

    def needs_s(self, thresholds: Mapping[str, float]) -> float:
        """Seconds of rates the rule needs before it can judge (0: one interval of rates)."""
        return sum(thresholds[name] for name in self.window)


_KINDS: dict[Callable[..., object], RuleKind] = {}

R = TypeVar("R", bound=Callable[..., object])


def _declare(kind: RuleKind) -> Callable[[R], R]:
    def declare(rule: R) -> R:
        _KINDS[rule] = kind
        return rule

    return declare


def state_rule(*names: str) -> Callable[[R], R]:
    """Declare a state rule raising findings named ``names``."""
    return _declare(RuleKind(STATE, names))


def window_rule(*names: str, window: tuple[str, ...] = ("detect_s",)) -> Callable[[R], R]:
    """Declare a window rule raising findings named ``names``, needing ``window`` of rates."""
    return _declare(RuleKind(WINDOW, names, window=window))


def kind_of(rule: Callable[..., object]) -> RuleKind | None:
    """The kind ``rule`` was declared with (None: not declared, a test's own rule)."""
    return _KINDS.get(rule)
