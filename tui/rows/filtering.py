"""The overview's rows narrowed by a filter (:mod:`fabtop.run.link_filter`): the facts each
link is judged on (its host's state, the findings on it or its host, its rail)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabtop.core.findings import SEVERITIES
from fabtop.core.state import FabricState, effective_status
from fabtop.run.link_filter import LinkFacts, LinkFilter
from tui.rows.links import HostRow, LinkRow, finding_index


def narrowed(
    flt: LinkFilter,
    state: FabricState,
    hosts: Sequence[HostRow],
    links: Sequence[LinkRow],
    now: float,
    rail_of: Mapping[tuple[str, str], int],
) -> tuple[list[HostRow], list[LinkRow]]:
    """The hosts and links ``flt`` shows: a link when the filter holds for it; a host when
    it holds for one of its links, or for the host itself (a host down has no link rows).
    ``rail_of``: each port's rail (tui.rows.grid.rail_index), what ``rail:`` reads."""
    if not flt:
        return list(hosts), list(links)
    found = finding_index(state.findings) if flt.needs_findings() else {}
    status = {n: effective_status(hs, now, state.interval) for n, hs in state.hosts.items()}

    def facts(host: str, link: str, row: LinkRow | None) -> LinkFacts:
        got = [found[k] for k in ((host, None), (host, link)) if k in found and (row or not k[1])]
        rules = frozenset().union(*(r for r, _ in got))
        sev = max((s for _, s in got), key=SEVERITIES.index, default=None)
        return LinkFacts(
            host=host,
            link=link,
            kind=row.kind if row is not None else "",
            link_layer=row.link_layer if row is not None else None,
            state=row.state if row is not None else None,
            host_state=status.get(host),
            rail=rail_of.get((host, link)),
            rules=rules,
            severity=sev,
        )

    shown = [r for r in links if flt.holds(facts(r.host, r.lid, r))]
    with_links = {r.host for r in shown}
    kept = [h for h in hosts if h.name in with_links or flt.holds(facts(h.name, "", None))]
    return kept, shown
