"""A packet filter's ruleset as the evaluator needs it: base chains, rules, their matches.

Both readers fill it: :mod:`collectors.parsers.nftables` (``nft -j list ruleset``) and
:mod:`collectors.parsers.iptables` (``iptables-save``). Only what decides whether a packet
arriving on an interface is accepted is kept: every match is one of a few fields the
evaluator (``fabtop/core/firewall.py``) knows, or ``unknown`` with its readable text, which
the evaluator treats as "could be either". Named sets and verdict maps are resolved by
the readers (a verdict map becomes one rule per key: its keys are distinct, so at most one
of them matches, as in the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from collectors.warning_lines import SUPPRESSED, WarningLines

# A reader says each rule or line it could not read: thousands of them say no more
# than the first fifty.
MAX_WARNINGS = 50

# Fields a Match can test. Values, by field:
#   iifname   interface names; a trailing "*" is a wildcard (nft "eth*", iptables "eth+")
#   l4proto   protocol names as nft prints them ("tcp", "udp", "icmp", "ipv6-icmp", ...)
#   dport     (low, high) port ranges, inclusive
#   ct_state  conntrack states ("new", "established", "related", "invalid", "untracked")
#   ct_status conntrack status bits ("dnat", "snat", "confirmed", ...)
#   nfproto   "ipv4" | "ipv6"
#   saddr / daddr   networks as text ("10.0.0.0/8", "fe80::/64")
#   pkttype   "host" | "unicast" | "broadcast" | "multicast" | "other"
#   tcp_syn   ("syn",): the rule matches the first packet of a TCP connection only;
#             ("not-syn",): any TCP packet but that one
#   unknown   nothing: a match the evaluator cannot decide (``text`` says what it is)
FIELDS = (
    "iifname",
    "l4proto",
    "dport",
    "ct_state",
    "ct_status",
    "nfproto",
    "saddr",
    "daddr",
    "pkttype",
    "tcp_syn",
    "unknown",
)
PortRange = tuple[int, int]
TERMINAL = frozenset({"accept", "drop", "reject", "queue"})


@dataclass(frozen=True, slots=True)
class Match:
    """One test of a rule: ``field`` is (or with ``negate``, is not) one of ``values``."""

    field: str
    values: tuple[str, ...] | tuple[PortRange, ...] = ()
    negate: bool = False
    text: str = ""  # readable form, for "could not evaluate" and the quoted rule


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a rule does when all its matches hold."""

    kind: str  # accept | drop | reject | queue | jump | goto | return | continue
    target: str | None = None  # the chain of a jump or goto


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its matches (all must hold), its verdict (None: only counts or logs)."""

    matches: tuple[Match, ...]
    verdict: Verdict | None
    text: str  # readable form, quoted in findings (iptables: the saved line)
    handle: int | None = None


@dataclass(slots=True)
class Chain:
    """One chain; a base chain has a hook and a priority (and usually a policy)."""

    family: str  # ip | ip6 | inet | arp | bridge | netdev
    table: str
    name: str
    hook: str | None = None  # input | forward | output | prerouting | postrouting | ingress
    prio: int = 0
    policy: str | None = None  # accept | drop (None: not a base chain, or not said)
    type: str | None = None  # filter | nat | route
    device: str | None = None  # netdev ingress chains: the device they are bound to
    rules: list[Rule] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        """(family, table, name): how jumps find a chain (in the same family and table)."""
        return self.family, self.table, self.name


@dataclass(slots=True, eq=False, weakref_slot=True)
class Ruleset:
    """A host's whole ruleset as one reader saw it, with what it could not read.

    Compared by identity: a host's ruleset stays the same object while its text does
    (assemble's shape), so what was evaluated on it can be kept beside it (weakly).
    """

    source: str  # "nft" | "iptables"
    chains: dict[tuple[str, str, str], Chain] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))
    version: str | None = None  # the tool's version where it says (nft metainfo)

    def base_chains(self, hook: str) -> list[Chain]:
        """Base chains at ``hook``, in the order the kernel runs them (priority)."""
        return sorted((c for c in self.chains.values() if c.hook == hook), key=lambda c: c.prio)


@dataclass(slots=True)
class FirewallState:
    """What a host's probe could tell about its packet filter (slow cadence).

    ``status``: ``ok`` (ruleset read; ``ruleset`` holds it), ``needs root`` (the probe ran
    without the privilege to read it), ``truncated`` (larger than the section's byte cap:
    an incomplete ruleset is no ground for any conclusion), ``missing`` (no nft or
    iptables-save on the host), ``error`` (the tool failed: ``detail`` says how).
    """

    status: str
    tool: str | None = None  # "nft" | "iptables-save"
    detail: str | None = None
    ruleset: Ruleset | None = None

    @property
    def known(self) -> bool:
        """True when a whole ruleset was read."""
        return self.status == "ok" and self.ruleset is not None
