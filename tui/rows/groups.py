"""The links table in groups that fold: by host, by rail (as ``fabtop test`` numbers
rails), or by rule (the finding's; links with nothing to say in one "healthy" group).

A group is one summary row ("rail 3: 64 links, 2 with findings, rx 5.1Tb/s") and its
links. A group shows all its links (OPEN), only those with something to say (FOLDED: how
every group starts past the fold size, so at 3 a.m. a storm is a row on screen, not a
count to open), or none (CLOSED). Groups come worst first, then in their natural order
(hosts and rails by number); within a group the table's sort holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from collectors.text import natural
from fabtop.core.findings import SEVERITIES, Finding
from tui import format as fmt
from tui.rows.links import LinkRow

HOST, RAIL, RULE = "host", "rail", "rule"
GROUPINGS = (HOST, RAIL, RULE)  # what the overview's key cycles through, then no groups
OPEN, FOLDED, CLOSED = "open", "folded", "closed"
HEALTHY = "healthy"  # the rule group of the links no finding names
# Links with something to say and no rule to name it (badness without a finding).
NO_DATA, LINK_DOWN, NO_RAIL = "no data", "link down", "no rail"
HOSTS_SAID = 4  # a rule group names this many hosts, then "…"


@dataclass(frozen=True, slots=True)
class Group:
    """One group: its key, what its row says, its links and how much is shown."""

    key: str  # "rail:3", "host:node17", "rule:pfc_storm"
    label: str  # "rail 3", "node17", "pfc_storm"
    links: tuple[LinkRow, ...]
    view: str  # OPEN, FOLDED or CLOSED

    @property
    def badness(self) -> int:
        return max((r.badness for r in self.links), default=0)

    @property
    def bad(self) -> int:
        """Links with something to say (a finding, down, a host not reporting)."""
        return sum(1 for r in self.links if r.badness)

    @property
    def hosts(self) -> list[str]:
        return sorted({r.host for r in self.links}, key=natural)

    def shown(self) -> list[LinkRow]:
        """The links its view shows."""
        if self.view == OPEN:
            return list(self.links)
        if self.view == FOLDED:
            return [r for r in self.links if r.badness]
        return []

    @property
    def whole(self) -> bool:
        """Every link of it is on screen (Enter then closes it, else opens it)."""
        return len(self.shown()) == len(self.links)

    def sentence(self, traffic: bool = True) -> str:
        """What a person needs of it, in one line (``traffic``: with its rx added up)."""
        n = len(self.links)
        links = f"{n} link{'s' if n != 1 else ''}"
        if self.key.startswith(f"{RULE}:") and self.label != HEALTHY:
            hosts = self.hosts
            named = ", ".join(hosts[:HOSTS_SAID]) + (", …" if len(hosts) > HOSTS_SAID else "")
            return f"{self.label}: {links} on {named}"
        out = f"{self.label}: {links}"
        if self.key.startswith(f"{RULE}:"):
            out += f" on {len(self.hosts)} host{'s' if len(self.hosts) != 1 else ''}"
        elif self.bad:
            out += f", {self.bad} with findings"
        rx = _total(r.rx_bps for r in self.links) if traffic else None
        return out + (f", rx {fmt.si(rx)}b/s" if rx is not None else "")


def _total(vals: Iterable[float | None]) -> float | None:
    got = [v for v in vals if v is not None]
    return sum(got) if got else None


RuleIndex = dict[tuple[str, str | None], dict[str, int]]


def rule_index(findings: Sequence[Finding]) -> RuleIndex:
    """(host, link id; None for the host itself) -> each rule found there and its worst
    severity (the index in SEVERITIES)."""
    out: RuleIndex = {}
    for f in findings:
        host = f.port.host if f.port is not None else f.host
        if host is None or f.severity not in SEVERITIES:
            continue
        at = out.setdefault((host, f.port.link if f.port is not None else None), {})
        at[f.rule] = max(at.get(f.rule, 0), SEVERITIES.index(f.severity))
    return out


def _rule_of(r: LinkRow, rules: RuleIndex) -> tuple[int, str]:
    """The group a link takes by rule: its worst rule (the link's own or its host's, as the
    filter's ``rule:`` reads them), else what is wrong without one, else healthy. With the
    severity, for the order of groups."""
    found = {**rules.get((r.host, None), {}), **rules.get((r.host, r.lid), {})}
    if found:
        sev = max(found.values())
        rule = min(name for name, s in found.items() if s == sev)  # among equals: by name
        return sev + 1, rule
    if r.badness == 3:
        return 4, NO_DATA
    if r.badness:
        return 4, LINK_DOWN
    return 0, HEALTHY


Place = tuple[tuple[int, int | str], ...]  # a group's place among equally bad ones


def _members(
    rows: Sequence[LinkRow],
    by: str,
    findings: Sequence[Finding],
    rail_of: Mapping[tuple[str, str], int],
) -> dict[str, tuple[str, Place, list[LinkRow]]]:
    """Group key -> its label, its place (as natural() orders names) and its links, the
    groups in the order their first link comes. A host's or a rail's label and place are
    made once, not once per link."""
    out: dict[str, tuple[str, Place, list[LinkRow]]] = {}
    if by == HOST:
        hosts: dict[str, list[LinkRow]] = {}
        for r in rows:
            hosts.setdefault(r.host, []).append(r)
        for host, rs in hosts.items():
            out[f"{HOST}:{host}"] = (host, natural(host), rs)
    elif by == RAIL:
        rails: dict[int | None, list[LinkRow]] = {}
        for r in rows:
            rails.setdefault(rail_of.get((r.host, r.lid)), []).append(r)
        for rail, rs in rails.items():
            if rail is None:
                out[f"{RAIL}:"] = (NO_RAIL, ((2, ""),), rs)  # no rail: last
            else:
                out[f"{RAIL}:{rail}"] = (f"rail {rail}", ((0, rail),), rs)
    else:
        rules = rule_index(findings)
        for r in rows:
            sev, label = _rule_of(r, rules)
            key = f"{RULE}:{label}"
            rs = out[key][2] if key in out else []
            rs.append(r)
            # A rule worst on one link at warning and on another at critical: the
            # group's last link says its severity.
            out[key] = (label, ((0, -sev), *natural(label)), rs)
    return out


def grouped(
    rows: Sequence[LinkRow],
    by: str,
    findings: Sequence[Finding],
    rail_of: Mapping[tuple[str, str], int],
    views: Mapping[str, str],
    start: str,
) -> tuple[list[LinkRow], list[Group]]:
    """The table's rows in groups ``by`` (of GROUPINGS): each group's row, then the links
    its view shows (``views`` by group key, else ``start``); and the groups, in order.

    The shown rows get their group's place (``rank``) in place: they are the tick's own."""
    places = []
    for key, (label, place, rs) in _members(rows, by, findings, rail_of).items():
        g = Group(key, label, tuple(rs), views.get(key, start))
        places.append((-g.badness, place, g))
    places.sort(key=lambda t: t[:2])  # worst first, then by place (stable among equals)
    groups = [g for _, _, g in places]
    out: list[LinkRow] = []
    for i, (bad, _, g) in enumerate(places):
        shown = g.shown()
        out.append(group_row(g, i, -bad, len(shown)))
        for r in shown:  # the rows are this tick's own (link_rows): marked in place
            r.rank = (i, 1)
        out += shown
    return out, groups


def group_row(g: Group, i: int, badness: int, shown: int) -> LinkRow:
    """The summary row of group ``g``, the ``i``-th: its links' traffic and counts added up
    (``badness``: the group's, ``shown``: how many of its links its view shows). Pauses,
    ECN and CNP are added up when read (LinkRow): most groups are off screen.

    One pass over the links for all the rest: 1000 links a tick."""
    rx: float | None = None
    tx: float | None = None
    loss: float | None = None
    temp: float | None = None
    live = True
    for r in g.links:
        if r.rx_bps is not None:
            rx = r.rx_bps if rx is None else rx + r.rx_bps
        if r.tx_bps is not None:
            tx = r.tx_bps if tx is None else tx + r.tx_bps
        if r.loss_per_s is not None:
            loss = r.loss_per_s if loss is None else loss + r.loss_per_s
        if r.temperature_c and (temp is None or r.temperature_c > temp):
            temp = r.temperature_c
        live = live and r.live
    return LinkRow(
        host=g.label,
        lid="",
        kind="group",
        link_layer=None,
        state=None,
        speed_gbps=None,
        rx_bps=rx,
        tx_bps=tx,
        temperature_c=temp,
        gap=False,
        live=live,
        loss_per_s=loss,
        badness=badness,
        group=g.key,
        members=g.links,
        bad=g.bad,
        hidden=len(g.links) - shown,
        rank=(i, 0),
    )
