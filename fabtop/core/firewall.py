"""Would this host's packet filter let it in? The input path, evaluated as the kernel runs it.

Pure: a :class:`~collectors.ruleset.Ruleset` (from ``nft -j`` or ``iptables-save``) and
a question in, an :class:`Outcome` out. The kernel's order (nft(8), "CHAINS" and
"VERDICT STATEMENT"; the netfilter hooks): every base chain of the input hook whose
family sees the packet (``ip`` and ``inet`` for IPv4, ``ip6`` and ``inet`` for IPv6; a
``netdev`` ingress chain bound to the interface first), lowest priority first. An
``accept`` ends only that base chain, the packet goes on to the next one; ``drop`` or
``reject`` anywhere ends it for good; a base chain that runs out of rules applies its
policy. ``jump`` returns to the rule after it, ``goto`` does not (its chain's end
returns to the chain that jumped to the one holding the goto), ``return`` goes back one
level (from a base chain: its policy). The forward and output hooks never see a packet
for this host, so Docker's ``FORWARD`` policy of DROP counts for nothing here.
Pre-routing chains (raw, mangle, reverse-path filters) are not evaluated.

A question is symbolic where it says "any": a port range (the ephemeral ports NCCL
bootstraps on), or "any packet" on an interface whose every packet passes netfilter
(IP over Thunderbolt, soft-RoCE). The evaluator follows each rule both ways where the
packet may or may not match, narrowing what the packet can be (protocol, port ranges,
conntrack state, first SYN or not) so a branch no packet can take is dropped:

- ``drop``: some packet of the question is dropped whatever the rules it could not
  read do; the rule that drops it is quoted.
- ``accept``: every packet of the question is accepted.
- ``unknown``: neither can be said: a match the evaluator cannot decide (a rate limit,
  a mark, a source address it does not know...) stands between the packet and a drop;
  ``undecided`` names those rules ("could not evaluate rule X").

The question's facts: the packet comes in on the interface, from a peer that reached it
directly (no DNAT), as unicast to this host; a new TCP connection is its first SYN with
conntrack state ``new``; "any packet" is any protocol, port and valid conntrack state
(an ``invalid`` packet is no traffic anyone needs).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from ipaddress import IPv4Interface, IPv6Interface, ip_interface, ip_network

from collectors.ruleset import Chain, Match, PortRange, Rule, Ruleset

ALL_PORTS: tuple[PortRange, ...] = ((0, 65535),)
_VALID_CT = frozenset({"new", "established", "related", "untracked"})
_PKTTYPES = frozenset({"host", "broadcast", "multicast"})
_UNICAST = frozenset({"host"})
_MAX_STEPS = 50_000  # rule visits per question: a ruleset past it is "unknown (too complex)"
_MAX_DEPTH = 64  # jumps nested deeper than this are a loop (the kernel refuses them too)


@dataclass(frozen=True, slots=True)
class Question:
    """What arrives: on ``iface``, over ``family``; a new TCP connection to ``ports``
    (``proto="tcp"``), or any packet at all (``proto=None``)."""

    iface: str
    proto: str | None = "tcp"
    ports: tuple[PortRange, ...] = ALL_PORTS
    family: str = "ipv4"
    # The interface's own addresses with their prefix ("10.0.0.1/24"; LinkSample.addresses):
    # a packet's destination is one of them, and its source is a peer on one of their
    # subnets. Empty: unknown, and address matches stay undecided.
    addrs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one :class:`Question`."""

    verdict: str  # accept | drop | unknown
    rule: str | None = None  # the rule that drops (drop), or a drop it could not rule out
    undecided: tuple[str, ...] = ()  # rules it could not evaluate on the way (unknown)


@dataclass(frozen=True, slots=True)
class _Pkt:
    """What the packet can still be on one path through the rules."""

    iface: str
    family: str
    own: tuple[IPv4Interface | IPv6Interface, ...]  # the interface's addresses (this family)
    protos: frozenset[str] | None  # None: any protocol but those in ``not_protos``
    not_protos: frozenset[str]
    ports: tuple[PortRange, ...]
    ct: frozenset[str]
    syn: frozenset[bool]  # the connection's first SYN (True) or any other packet (False)
    pkttype: frozenset[str]


@dataclass(slots=True)
class _Sum:
    """What the paths below a point can end in."""

    sure: str | None = None  # a drop some packet meets whatever the undecided rules do
    maybe: str | None = None  # a drop some path reaches
    open: bool = True  # every path accepts
    undecided: list[str] = field(default_factory=list)


_ACCEPT = _Sum()


def evaluate(rs: Ruleset, q: Question) -> Outcome:
    """The fate of ``q``'s packets under ``rs``."""
    chains = [
        c for c in rs.base_chains("ingress") if c.family == "netdev" and c.device == q.iface
    ] + [c for c in rs.base_chains("input") if c.family in _FAMILIES[q.family]]
    chains.sort(key=lambda c: (c.hook != "ingress", c.prio))
    pkt = _Pkt(
        iface=q.iface,
        family=q.family,
        own=_own(q.addrs, 4 if q.family == "ipv4" else 6),
        protos=frozenset({q.proto}) if q.proto else None,
        not_protos=frozenset(),
        ports=_norm(q.ports),
        ct=frozenset({"new"}) if q.proto == "tcp" else _VALID_CT,
        syn=frozenset({True}) if q.proto == "tcp" else frozenset({True, False}),
        pkttype=frozenset({"host"}) if q.proto == "tcp" else _PKTTYPES,
    )
    w = _Walk(rs, chains)
    try:
        s = w.base(0, pkt)
    except RecursionError:  # matching paths nested past Python's stack: not decided
        return Outcome("unknown", None, ("ruleset too complex to evaluate",))
    undecided = tuple(dict.fromkeys(s.undecided))[:8]
    if w.steps > _MAX_STEPS:
        return Outcome("unknown", s.maybe, ("ruleset too complex to evaluate",))
    if s.sure is not None:
        return Outcome("drop", s.sure)
    if s.open:
        return Outcome("accept")
    return Outcome("unknown", s.maybe, undecided)


_FAMILIES = {"ipv4": ("ip", "inet"), "ipv6": ("ip6", "inet")}


class _Walk:
    def __init__(self, rs: Ruleset, bases: list[Chain]) -> None:
        self.rs = rs
        self.bases = bases
        self.steps = 0

    def base(self, bi: int, pkt: _Pkt) -> _Sum:
        """Base chain ``bi`` onwards (past the last one the packet is accepted)."""
        if bi >= len(self.bases):
            return _ACCEPT
        return self.walk(bi, ((self.bases[bi], 0),), pkt)

    def walk(self, bi: int, frames: tuple[tuple[Chain, int], ...], pkt: _Pkt) -> _Sum:
        """From rule ``frames[-1]`` of base chain ``bi`` on.

        The path of a packet that does not match a rule is followed in a loop, not by
        recursion (a chain of thousands of rules stays one level deep); a path that
        matches is evaluated on its own and joined with the rest at the end.
        """
        pending: list[tuple[_Sum, str | None]] = []  # (the matching path, rule if unsure)
        res = self._run(bi, frames, pkt, pending)
        for a, unsure in reversed(pending):
            res = _both(a, res, unsure)
        return res

    def _run(
        self,
        bi: int,
        frames: tuple[tuple[Chain, int], ...],
        pkt: _Pkt,
        pending: list[tuple[_Sum, str | None]],
    ) -> _Sum:
        while True:
            self.steps += 1
            if self.steps > _MAX_STEPS:
                return _Sum(None, None, False, ["ruleset too complex to evaluate"])
            chain, i = frames[-1]
            if i >= len(chain.rules):  # the chain ran out: back to its caller, or the policy
                frames = frames[:-1]
                if frames:
                    continue
                return self.policy(bi, pkt)
            rule = chain.rules[i]
            after = (*frames[:-1], (chain, i + 1))
            quote = _quote(chain, rule.text, rule.handle)
            skipped = None
            for k, m in enumerate(rule.matches):
                yes, no, unsure = _test(m, pkt)
                if yes is None:
                    skipped = no
                    break
                if no is not None:  # either way: the matching way now, the other below
                    a = self.matches(bi, after, yes, rule.matches, k + 1, rule, quote)
                    pending.append((a, quote if unsure else None))
                    skipped = no
                    break
                pkt = yes
            if skipped is not None:
                frames, pkt = after, skipped
                continue
            v = rule.verdict
            # The verdicts that go on in this chain or another are followed in the loop.
            if v is None or v.kind == "continue":
                frames = after
            elif v.kind == "return":
                frames = after[:-1]
                if not frames:
                    return self.policy(bi, pkt)
            elif (
                v.kind in ("jump", "goto")
                and len(after) < _MAX_DEPTH
                and (target := self.rs.chains.get((chain.family, chain.table, v.target or "")))
            ):
                frames = (*after, (target, 0)) if v.kind == "jump" else (*after[:-1], (target, 0))
            else:
                return self._apply(bi, after, pkt, rule, quote)

    def matches(
        self,
        bi: int,
        after: tuple[tuple[Chain, int], ...],
        pkt: _Pkt,
        ms: tuple[Match, ...],
        k: int,
        rule: Rule,
        quote: str,
    ) -> _Sum:
        """Matches ``ms[k:]`` of ``rule`` on a packet that matched those before."""
        for j in range(k, len(ms)):
            yes, no, unsure = _test(ms[j], pkt)
            if yes is None:
                return self.walk(bi, after, no) if no is not None else _Sum()
            if no is not None:
                a = self.matches(bi, after, yes, ms, j + 1, rule, quote)
                return _both(a, self.walk(bi, after, no), quote if unsure else None)
            pkt = yes
        return self._apply(bi, after, pkt, rule, quote)  # every match held

    def _apply(
        self, bi: int, after: tuple[tuple[Chain, int], ...], pkt: _Pkt, rule: Rule, quote: str
    ) -> _Sum:
        v = rule.verdict
        if v is None or v.kind == "continue":
            return self.walk(bi, after, pkt)
        if v.kind == "accept":
            return self.base(bi + 1, pkt)
        if v.kind in ("drop", "reject"):
            return _Sum(quote, quote, False)
        if v.kind == "return":
            return self.walk(bi, after[:-1], pkt) if len(after) > 1 else self.policy(bi, pkt)
        if v.kind in ("jump", "goto"):
            chain = after[-1][0]
            target = self.rs.chains.get((chain.family, chain.table, v.target or ""))
            if target is None or len(after) >= _MAX_DEPTH:
                return _Sum(None, quote, False, [quote])
            frames = (*after, (target, 0)) if v.kind == "jump" else (*after[:-1], (target, 0))
            return self.walk(bi, frames, pkt)
        return _Sum(None, quote, False, [quote])

    def policy(self, bi: int, pkt: _Pkt) -> _Sum:
        """Base chain ``bi`` ran out of rules: its policy decides."""
        base = self.bases[bi]
        if base.policy == "drop":
            q = f"{base.family} {base.table} {base.name}: policy drop"
            return _Sum(q, q, False)
        return self.base(bi + 1, pkt)


def _both(a: _Sum, b: _Sum, unsure: str | None) -> _Sum:
    """Two paths: the packet may take either (``unsure`` None), or a rule the evaluator
    cannot decide chooses (``unsure``: that rule)."""
    if unsure is None:
        sure = a.sure or b.sure
    else:
        # both ways some packet is dropped: quote the way that does not need the rule
        sure = b.sure if a.sure is not None and b.sure is not None else None
    out = _Sum(sure, a.maybe or b.maybe, a.open and b.open, [*a.undecided, *b.undecided])
    if unsure is not None and _shape(a) != _shape(b):
        out.undecided.append(unsure)  # the outcome hangs on this rule
    return out


def _shape(s: _Sum) -> tuple[bool, bool, bool]:
    return s.open, s.sure is None, s.maybe is None


def _quote(chain: Chain, text: str, handle: int | None) -> str:
    h = f" (handle {handle})" if handle is not None else ""
    return f"{chain.family} {chain.table} {chain.name}: {text}{h}"


# --- one match on what the packet can be: (when it holds, when not, undecidable) --------


def _test(m: Match, p: _Pkt) -> tuple[_Pkt | None, _Pkt | None, bool]:
    f = m.field
    if f == "iifname":
        hit = any(_name_match(str(v), p.iface) for v in m.values)
        return _fixed(hit != m.negate, p)
    if f == "nfproto":
        return _fixed((p.family in m.values) != m.negate, p)
    if f == "ct_status":
        # A peer connecting straight to this host: no NAT on the connection.
        if set(map(str, m.values)) <= {"dnat", "snat"}:
            return _fixed(m.negate, p)
        return p, p, True
    if f == "l4proto":
        return _split_proto(m, p)
    if f == "dport":
        vals = _norm(tuple(v for v in m.values if isinstance(v, tuple)))
        inside, outside = _cut(p.ports, vals), _minus(p.ports, vals)
        if m.negate:
            inside, outside = outside, inside
        return (
            replace(p, ports=inside) if inside else None,
            replace(p, ports=outside) if outside else None,
            False,
        )
    if f == "ct_state":
        states = frozenset(map(str, m.values))
        yes, no = p.ct & states, p.ct - states
        if m.negate:
            yes, no = no, yes
        return (replace(p, ct=yes) if yes else None, replace(p, ct=no) if no else None, False)
    if f == "tcp_syn":
        want = frozenset({not m.negate})
        sy, sn = p.syn & want, p.syn - want
        return (replace(p, syn=sy) if sy else None, replace(p, syn=sn) if sn else None, False)
    if f == "pkttype":
        kinds = frozenset("host" if v == "unicast" else str(v) for v in m.values)
        ky, kn = p.pkttype & kinds, p.pkttype - kinds
        if m.negate:
            ky, kn = kn, ky
        return (
            replace(p, pkttype=ky) if ky else None,
            replace(p, pkttype=kn) if kn else None,
            False,
        )
    if f in ("saddr", "daddr"):
        placed = _address(m, p, f == "daddr")
        if placed is not None:
            return _fixed(placed != m.negate, p)
    return p, p, True  # addresses it cannot place, marks, limits, anything else: either way


def _own(addrs: tuple[str, ...], version: int) -> tuple[IPv4Interface | IPv6Interface, ...]:
    out = []
    for a in addrs:
        try:
            i = ip_interface(a)
        except ValueError:
            continue
        if i.version == version:
            out.append(i)
    return tuple(out)


def _address(m: Match, p: _Pkt, dest: bool) -> bool | None:
    """Whether an address match holds for this packet: None when it depends on which
    address (the source: which peer of the subnet) or a value does not read."""
    try:
        nets = [ip_network(str(v), strict=False) for v in m.values]
    except ValueError:
        return None
    version = 4 if p.family == "ipv4" else 6
    nets = [n for n in nets if n.version == version]
    if (
        dest
        and p.iface != "lo"
        and nets
        and all(n.is_loopback or (n.is_multicast and p.pkttype == _UNICAST) for n in nets)
    ):
        return False  # a unicast packet on a real interface is for no loopback or group
    if not p.own:
        return None
    if dest:  # one of this interface's own addresses
        hits = {any(i.ip in n for n in nets) for i in p.own}
    else:  # a peer on one of its subnets (a host route says nothing of the peers)
        subnets = [i.network for i in p.own if i.network.num_addresses > 2]
        if not subnets:
            return None
        hits = set()
        for s in subnets:
            if any(s.subnet_of(n) for n in nets):  # type: ignore[arg-type]
                hits.add(True)
            elif not any(s.overlaps(n) for n in nets):
                hits.add(False)
            else:
                return None
    return hits.pop() if len(hits) == 1 else None


def _fixed(hit: bool, p: _Pkt) -> tuple[_Pkt | None, _Pkt | None, bool]:
    return (p, None, False) if hit else (None, p, False)


def _name_match(pattern: str, name: str) -> bool:
    """An interface name pattern: a trailing ``*`` (nft) matches any rest of the name."""
    if pattern.endswith("*") and not pattern.endswith("\\*"):
        return name.startswith(pattern[:-1])
    return name == pattern.replace("\\*", "*")


def _split_proto(m: Match, p: _Pkt) -> tuple[_Pkt | None, _Pkt | None, bool]:
    vals = frozenset(map(str, m.values))
    if p.protos is not None:
        yes_set, no_set = p.protos & vals, p.protos - vals
        if m.negate:
            yes_set, no_set = no_set, yes_set
        return (
            replace(p, protos=yes_set) if yes_set else None,
            replace(p, protos=no_set) if no_set else None,
            False,
        )
    inside = replace(p, protos=vals - p.not_protos) if vals - p.not_protos else None
    outside = replace(p, not_protos=p.not_protos | vals)
    if m.negate:
        return outside, inside, False
    return inside, outside, False


def _norm(ranges: tuple[PortRange, ...]) -> tuple[PortRange, ...]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def _cut(a: tuple[PortRange, ...], b: tuple[PortRange, ...]) -> tuple[PortRange, ...]:
    """The ports of ``a`` inside ``b`` (both sorted and disjoint, as _norm makes them).

    Found by bisection: after a thousand port rules a packet's port set has a thousand
    holes, and each rule after that looks at it again.
    """
    out: list[PortRange] = []
    for y0, y1 in b:
        i = bisect_left(a, y0, key=_hi)  # the first range ending at or after y0
        j = bisect_right(a, y1, lo=i, key=_lo)  # the first starting after y1
        if j - i == 1:
            out.append((max(a[i][0], y0), min(a[i][1], y1)))
        elif j > i:  # only the two ends can stick out of y
            out.append((max(a[i][0], y0), a[i][1]))
            out.extend(a[i + 1 : j - 1])
            out.append((a[j - 1][0], min(a[j - 1][1], y1)))
    return tuple(out)


def _minus(a: tuple[PortRange, ...], b: tuple[PortRange, ...]) -> tuple[PortRange, ...]:
    """The ports of ``a`` outside ``b``."""
    gaps: list[PortRange] = []
    nxt = 0
    for y0, y1 in b:
        if y0 > nxt:
            gaps.append((nxt, y0 - 1))
        nxt = y1 + 1
    if nxt <= 65535:
        gaps.append((nxt, 65535))
    return _cut(a, tuple(gaps))


def _lo(r: PortRange) -> int:
    return r[0]


def _hi(r: PortRange) -> int:
    return r[1]
