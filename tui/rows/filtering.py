"""The overview's rows narrowed by a filter (:mod:`fabtop.run.link_filter`): the facts each
link is judged on (its host's state, the findings on it or its host, its rail)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabtop.core.findings import SEVERITIES, Finding
from fabtop.core.state import FabricState, effective_status
from fabtop.fabtest.rails import rails
from fabtop.run.link_filter import LinkFacts, LinkFilter
from tui.rows.links import HostRow, LinkRow

RailConfig = Mapping[tuple[str, str], int]


def _worst(a: str | None, b: str) -> str:
    if a is None or SEVERITIES.index(b) > SEVERITIES.index(a):
        return b
    return a


def _findings(findings: Sequence[Finding]) -> dict[tuple[str, str | None], tuple[set[str], str]]:
    """(host, link id or None for the host) -> the rules found there and the worst severity."""
    out: dict[tuple[str, str | None], tuple[set[str], str]] = {}
    for f in findings:
        host = f.port.host if f.port is not None else f.host
        if host is None or f.severity not in SEVERITIES:
            continue
        key = (host, f.port.link if f.port is not None else None)
        rules, sev = out.get(key, (set(), f.severity))
        rules.add(f.rule)
        out[key] = (rules, _worst(sev, f.severity))
    return out


def narrowed(
    flt: LinkFilter,
    state: FabricState,
    hosts: Sequence[HostRow],
    links: Sequence[LinkRow],
    now: float,
    rail_config: RailConfig | None = None,
) -> tuple[list[HostRow], list[LinkRow]]:
    """The hosts and links ``flt`` shows: a link when the filter holds for it; a host when
    it holds for one of its links, or for the host itself (a host down has no link rows)."""
    if not flt:
        return list(hosts), list(links)
    found = _findings(state.findings) if flt.needs_findings() else {}
    rail_of: dict[tuple[str, str], int] = {}
    if flt.needs_rails():
        samples = {n: hs.sample for n, hs in state.hosts.items() if hs.sample is not None}
        for rail, ports in rails(samples, dict(rail_config or {})).ports.items():
            for p in ports:
                rail_of[(p.host, p.link)] = rail
    status = {n: effective_status(hs, now, state.interval) for n, hs in state.hosts.items()}

    def facts(host: str, link: str, row: LinkRow | None) -> LinkFacts:
        rules, sev = found.get((host, None), (set(), None))
        if row is not None:
            more, worse = found.get((host, link), (set(), None))
            rules = rules | more
            sev = _worst(sev, worse) if worse is not None else sev
        return LinkFacts(
            host=host,
            link=link,
            kind=row.kind if row is not None else "",
            link_layer=row.link_layer if row is not None else None,
            state=row.state if row is not None else None,
            host_state=status.get(host),
            rail=rail_of.get((host, link)),
            rules=frozenset(rules),
            severity=sev,
        )

    shown = [r for r in links if flt.holds(facts(r.host, r.lid, r))]
    with_links = {r.host for r in shown}
    kept = [h for h in hosts if h.name in with_links or flt.holds(facts(h.name, "", None))]
    return kept, shown
