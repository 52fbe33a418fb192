"""A packet filter on the RDMA path (issue 15; the cluster guide's "firewall blocks RDMA").

What a firewall can break, and what it cannot:

- Hardware RoCE (ConnectX) and InfiniBand move RDMA in the NIC: those packets never pass
  netfilter, so a rule on UDP 4791 does not touch them. Such a rule is left quiet (no
  finding at all): saying "RoCE blocked" would send people after the wrong cause.
- The TCP connection set-up around RDMA does pass netfilter, on the same interfaces:
  perftest's 18515, the rendezvous port (``MASTER_PORT``), NCCL's bootstrap on ephemeral
  ports (``[firewall] ports``, :mod:`fabtop.core.firewall_ports`). A new connection to
  one of them dropped or rejected on a RoCE or IPoIB netdev is a warning.
- IP over Thunderbolt (``thunderbolt-net``) and soft-RoCE (``rxe``; ``siw``, iWARP over
  TCP) are ordinary IP traffic: anything dropped there is a warning (the guide: take
  ``thunderbolt0`` out of firewalld/ufw).

The verdict comes from :func:`fabtop.core.firewall.evaluate` on the host's ruleset; the
rule that drops is quoted. What cannot be decided (a ruleset not read, a match the
evaluator does not know) is no finding: :func:`host_firewall` tells the host detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from collectors.parsers.firewall import firewall_text
from collectors.ruleset import Ruleset
from collectors.samples import HostSample, LinkSample
from fabtop.core.findings import Finding
from fabtop.core.firewall import Outcome, Question, evaluate
from fabtop.core.firewall_ports import port_text
from fabtop.core.rules.context import LinkTick, RuleContext
from fabtop.core.rules.kinds import state_rule

RULE = "firewall_blocks_rdma"
_SOFT_RDMA = ("rxe", "siw")  # soft-RoCE and soft-iWARP device names (rdma link add ...)


@dataclass(frozen=True, slots=True)
class IfaceCheck:
    """One fabric interface of a host and what its packet filter does there."""

    netdev: str
    kind: str  # "rdma" (TCP set-up ports only) | "tb" | "soft" (every packet)
    outcomes: tuple[tuple[str, Outcome], ...]  # (what was asked, the answer)
    link: str = ""  # the link (LinkSample.id) it carries

    @property
    def drops(self) -> list[tuple[str, Outcome]]:
        """The questions whose packets are dropped."""
        return [(w, o) for w, o in self.outcomes if o.verdict == "drop"]

    @property
    def unknown(self) -> list[tuple[str, Outcome]]:
        """The questions that could not be decided."""
        return [(w, o) for w, o in self.outcomes if o.verdict == "unknown"]


# What each ruleset decides, by what it says: nft prints each rule's counters, so a busy
# host's text (and its parsed object) is new every slow tick while its rules stay the
# same; the answers are kept by the rules themselves. Bounded: cleared when full.
_OUTCOMES: dict[tuple[int, Question], Outcome] = {}
_OUTCOMES_MAX = 4096
_PRINTS: WeakKeyDictionary[Ruleset, int] = WeakKeyDictionary()


def _fingerprint(rs: Ruleset) -> int:
    fp = _PRINTS.get(rs)
    if fp is None:
        fp = _PRINTS[rs] = hash(
            tuple(
                (c.key, c.hook, c.prio, c.policy, c.device, tuple(c.rules))
                for c in rs.chains.values()
            )
        )
    return fp


def _outcome(rs: Ruleset, q: Question) -> Outcome:
    key = (_fingerprint(rs), q)
    got = _OUTCOMES.get(key)
    if got is None:
        if len(_OUTCOMES) >= _OUTCOMES_MAX:
            _OUTCOMES.clear()
        got = _OUTCOMES[key] = evaluate(rs, q)
    return got


def fabric_kind(link: LinkSample) -> str | None:
    """How a link's netdev meets the packet filter (None: not a fabric interface)."""
    if not link.netdev:
        return None
    if link.kind == "tb":
        return "tb"
    if link.rdma_device:
        return "soft" if link.rdma_device.startswith(_SOFT_RDMA) else "rdma"
    return None


# A host's checks, kept while its ruleset and fabric interfaces stay the same: the ruleset
# is read once a minute and shared by the samples between, so the answers are worked out
# once, not on every frame (the rule runs after each). Keyed by the ruleset object's id,
# which the entry holds, so the id cannot be reused while the entry lives. Bounded.
_HOSTS: dict[int, tuple[object, tuple[object, ...], list[IfaceCheck]]] = {}
_HOSTS_MAX = 4096


def host_firewall(sample: HostSample, ports: tuple[tuple[int, int], ...]) -> list[IfaceCheck]:
    """Each fabric interface of ``sample`` with its packet filter's answers (empty when
    the ruleset was not read)."""
    fw = sample.firewall
    if fw is None or not fw.known or fw.ruleset is None:
        return []
    key = (
        ports,
        *(
            (lk.id, lk.netdev, lk.kind, lk.rdma_device, lk.gids, lk.addresses)
            for lk in sample.links.values()
            if fabric_kind(lk) is not None
        ),
    )
    got = _HOSTS.get(id(fw))
    if got is not None and got[0] is fw and got[1] == key:
        return got[2]
    out = _host_firewall(sample, fw.ruleset, ports)
    if len(_HOSTS) >= _HOSTS_MAX:
        _HOSTS.clear()
    _HOSTS[id(fw)] = (fw, key, out)
    return out


def _host_firewall(
    sample: HostSample, rs: Ruleset, ports: tuple[tuple[int, int], ...]
) -> list[IfaceCheck]:
    out: list[IfaceCheck] = []
    seen: set[str] = set()
    for link in sample.links.values():
        kind = fabric_kind(link)
        if kind is None or link.netdev is None:
            continue
        # The IP interfaces that carry the port: its netdev, and those its RoCE GIDs name
        # (a VLAN on it: gid_attrs/ndevs).
        names = [link.netdev, *(g.netdev for g in link.gids or () if g.netdev)]
        for nd in dict.fromkeys(names):
            if nd in seen:
                continue
            seen.add(nd)
            addrs = tuple(link.addresses or ()) if nd == link.netdev else ()
            fam = _family(addrs)
            if kind == "rdma":
                answers = tuple(
                    (
                        f"new TCP connections to {port_text(p)}",
                        _outcome(rs, Question(nd, "tcp", (p,), family=fam, addrs=addrs)),
                    )
                    for p in ports
                )
            else:
                answers = (
                    ("any packet", _outcome(rs, Question(nd, None, family=fam, addrs=addrs))),
                )
            out.append(IfaceCheck(nd, kind, answers, link.id))
    return out


def _family(addrs: tuple[str, ...]) -> str:
    """IPv6 for an interface with IPv6 addresses only (beyond its link-local one), else
    IPv4: RDMA set-up runs over IPv4 nearly everywhere."""
    v6 = [a for a in addrs if ":" in a and not a.lower().startswith("fe80")]
    return "ipv6" if v6 and not any("." in a and ":" not in a for a in addrs) else "ipv4"


_KIND_TEXT = {
    "rdma": "RDMA set-up ports",
    "tb": "IP over Thunderbolt, every packet",
    "soft": "soft-RoCE, every packet",
}


def firewall_lines(sample: HostSample, ports: tuple[tuple[int, int], ...]) -> list[str]:
    """What the host detail says of the packet filter: read or why not, then per fabric
    interface what it lets in (dropped, open, or what could not be evaluated)."""
    out = [firewall_text(sample.firewall)]
    for c in host_firewall(sample, ports):
        head = f"{c.netdev} ({_KIND_TEXT[c.kind]}): "
        if c.drops:
            what = ", ".join(w.removeprefix("new TCP connections to ") for w, _ in c.drops)
            if c.kind != "rdma":
                what = "some of its traffic"
            out.append(f"{head}dropped: {what} by {c.drops[0][1].rule}")
        elif c.unknown:
            rules = {u for _, o in c.unknown for u in o.undecided} or {"?"}
            out.append(f"{head}unknown: could not evaluate rule {'; '.join(sorted(rules)[:3])}")
        else:
            out.append(f"{head}open")
    return out


@state_rule(RULE)
def firewall_blocks_rdma(ctx: RuleContext) -> list[Finding]:
    """New TCP connections to the RDMA set-up ports dropped on a RoCE/IPoIB netdev, or
    anything dropped on IP over Thunderbolt or soft-RoCE."""
    judged: set[str] = set()  # hosts whose packet filter was read
    dropping: dict[tuple[str, str], IfaceCheck] = {}  # (host, link): the first check that drops
    for hs in ctx.state.hosts.values():
        s = hs.sample
        if s is None or s.firewall is None:
            continue
        judged.add(hs.name)
        for c in host_firewall(s, ctx.firewall_ports):
            if c.drops:
                dropping.setdefault((hs.name, c.link), c)
    out: list[Finding] = []
    for lt in ctx.links:
        if lt.host in judged:
            check = dropping.get((lt.host, lt.link.id))
            found = _finding(lt, check) if check is not None else None
            ctx.report(out, found, (RULE, lt.subject), lt.t)
    return out


def _allow(rule: str, netdev: str, ports: str | None) -> str:
    """The command that lets it in, for the tool that owns the rule that drops."""
    fam, _, rest = rule.partition(" ")
    table, _, rest = rest.partition(" ")
    chain = rest.partition(":")[0]
    if table == "firewalld" or chain.startswith(("IN_", "INPUT_ZONES")):
        return f"firewall-cmd --zone=trusted --change-interface={netdev}"
    if chain.startswith("ufw"):
        if ports is None:
            return f"ufw allow in on {netdev}"
        return "; ".join(
            f"ufw allow in on {netdev} to any port {p.replace('-', ':')} proto tcp"
            for p in ports.split(", ")
        )
    nft_ports = "" if ports is None else f" tcp dport {{ {ports} }}"
    if rule.startswith(("ip filter ", "ip6 filter ")) and chain.isupper():
        ipt = "" if ports is None else f" -p tcp -m multiport --dports {ports.replace('-', ':')}"
        return f"iptables -I {chain} -i {netdev}{ipt.replace(', ', ',')} -j ACCEPT"
    return f'nft insert rule {fam} {table} {chain} iifname "{netdev}"{nft_ports} accept'


def _finding(lt: LinkTick, c: IfaceCheck) -> Finding | None:
    drops = c.drops
    if not drops:
        return None
    rule = drops[0][1].rule or "?"
    where = "" if c.netdev == lt.link.netdev else f" on {c.netdev}"  # a VLAN of the port
    if c.kind == "rdma":
        ports = ", ".join(w.removeprefix("new TCP connections to ") for w, _ in drops)
        summary = (
            f"{lt.label}: the firewall drops new TCP connections{where} to {ports} "
            f"(RDMA connection set-up: perftest, rendezvous, NCCL bootstrap): {rule}"
        )
        step = (
            f"allow TCP {ports} in on {c.netdev}: {_allow(rule, c.netdev, ports)}; "
            "RDMA itself (UDP 4791) bypasses netfilter on this NIC"
        )
        evidence: dict[str, str | int | float | None] = {
            "rule": rule,
            "ports": ports,
            "interface": c.netdev,
        }
    else:
        what = "IP over Thunderbolt" if c.kind == "tb" else "soft-RoCE (all of it passes netfilter)"
        summary = f"{lt.label}: the firewall drops traffic{where} on {what}: {rule}"
        step = (
            f"take {c.netdev} out of the firewall, as the cluster guide says: "
            f"{_allow(rule, c.netdev, None)}"
        )
        evidence = {"rule": rule, "interface": c.netdev}
    return Finding(
        rule=RULE,
        severity="warning",
        subject=lt.subject,
        summary=summary,
        evidence=dict(evidence),
        next_step=step,
        host=lt.host,
        port=lt.ref,
    )
