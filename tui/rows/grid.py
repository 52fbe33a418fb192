"""The health grid's cells: one per host and rail, the worst thing known about each.

Built from the rows the overview already made (hosts, links, both narrowed by the filter
in force) and the findings of the state: no second pass over history. Rails are numbered
as ``fabtop test`` numbers them (:func:`fabtop.fabtest.rails.rails`); a link no rail holds
(a management port beside the RDMA ports) gets a line of its own per position on its host
("+1", "+2"...), so nothing the links table shows is missing from the grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

from collectors.samples import HostSample
from fabtop.core.findings import Finding
from fabtop.core.state import UP
from fabtop.fabtest.rails import RAIL_FIELDS, RailConfig, rails
from tui.rows.links import ALARMS, LINK_DOWN, HostRow, LinkRow

# Worst first: a cell shows the first that holds. A cell whose host does not report is
# blind whatever its last sample said (DESIGN §10: blind is not healthy, nor is it down).
DOWN, STORM, LOSS, HOT, CABLE, BLIND, FINDING, OK = (
    "down",
    "storm",
    "loss",
    "hot",
    "cable",
    "blind",
    "finding",
    "ok",
)
STATES = (DOWN, STORM, LOSS, HOT, CABLE, BLIND, FINDING, OK)
GLYPHS = {
    DOWN: "X",
    STORM: "S",
    LOSS: "L",
    HOT: "H",
    CABLE: "C",
    BLIND: "?",
    FINDING: "!",
    OK: "·",
}
# States the legend names only while a cell has one (the rest it always names).
RARE = frozenset({CABLE})
WORDS = {
    DOWN: "down",
    STORM: "PFC storm",
    LOSS: "loss",
    HOT: "hot",
    CABLE: "cable failing",
    BLIND: "no data",
    FINDING: "other finding",
    OK: "ok",
}
RANK = {s: i for i, s in enumerate(STATES)}

# Which rules put a cell in which state (any other warning or critical: FINDING).
RULE_STATES = {
    "pfc_storm": STORM,
    "pfc_stall": STORM,
    "lossless_drops": LOSS,
    "roce_out_of_sequence": LOSS,
    "link_flap": DOWN,
    "nic_temperature": HOT,
    "module_high_temp": HOT,
    "module_temp_high": HOT,
    # issue 33: the cable or optic says it is failing (fabtop.core.rules.cable)
    "cable_ber": CABLE,
    "ber_after_flap": CABLE,
    "fec_uncorrectable": CABLE,
    "link_integrity": CABLE,
    "optic_rx_low": CABLE,
    "optic_los": CABLE,
}
# The links table's cable column (issue 33): a word for what each rule about the cable or
# its optic says, beside the grid's glyph for the state the rule puts the link in.
CABLE_WORDS = {
    "cable_ber": "BER↑",
    "ber_after_flap": "flap↑",  # BER worse after a flap than before it
    "fec_uncorrectable": "FEC!",
    "link_integrity": "errors",
    "optic_rx_low": "rx low",
    "module_temp_high": "hot",
    "module_high_temp": "hot",
    "nic_health": "NIC!",
}


def cable_word(alarms: frozenset[str], optics: bool) -> tuple[str, str] | None:
    """The cable column of a link: (state, word) of its worst cable rule; (OK, "ok") where
    its optics, FEC or corrected bits are read and no such rule holds; None where none are."""
    said = [r for r in alarms if r in CABLE_WORDS]
    if not said:
        return (OK, "ok") if optics else None
    worst = min(said, key=lambda r: (RANK[RULE_STATES.get(r, FINDING)], r))
    return RULE_STATES.get(worst, FINDING), CABLE_WORDS[worst]


@dataclass(frozen=True, slots=True)
class Cell:
    """One host on one line (a rail, or a link no rail holds)."""

    host: str
    line: str  # "r0".., "+1".., or "host" when no host shown has a link
    link: str | None  # the link's id; None: the host itself (not reporting, no link rows)
    state: str  # of STATES
    why: str = ""  # the rules or the state that made it so ("pfc_storm", "link down")

    @property
    def glyph(self) -> str:
        return GLYPHS[self.state]

    def label(self) -> str:
        """What the grid says of its cursor: ``node3 r0 enp65s0f0np0: PFC storm (pfc_storm)``."""
        where = f"{self.host} {self.line}" + (f" {self.link}" if self.link else "")
        why = f" ({self.why})" if self.why else ""
        return f"{where}: {WORDS[self.state]}{why}"


@dataclass(frozen=True, slots=True)
class Grid:
    """Hosts as columns, lines (rails first) as rows; a missing key is an empty place."""

    hosts: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    cells: Mapping[tuple[str, str], Cell] = field(default_factory=dict)  # (line, host)

    def cell(self, line: str, host: str) -> Cell | None:
        return self.cells.get((line, host))

    def worst(self) -> Cell | None:
        """The worst cell, the first line and host among equals (None: empty, or all ok)."""
        best: Cell | None = None
        for line in self.lines:
            for host in self.hosts:
                c = self.cells.get((line, host))
                if c is not None and (best is None or RANK[c.state] < RANK[best.state]):
                    best = c
        return best if best is not None and best.state != OK else None

    def problems(self) -> list[Cell]:
        """Every cell that is not ok, worst first (then by line and host, as worst())."""
        lines = {ln: i for i, ln in enumerate(self.lines)}
        hosts = {h: i for i, h in enumerate(self.hosts)}
        bad = [c for c in self.cells.values() if c.state != OK]
        return sorted(bad, key=lambda c: (RANK[c.state], lines[c.line], hosts[c.host]))

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for c in self.cells.values():
            out[c.state] += 1
        return out


INDEXES_KEPT = 4
_rail_fields = attrgetter(*RAIL_FIELDS)


@dataclass
class GridMemo:
    """What the overview keeps between ticks to make its grid (one per screen, so two
    views never share it; without one, each call is the plain computation).

    ``indexes``: the rail indexes last made, with all they were made of: the config, each
    host's name and the RAIL_FIELDS of its links in order. A fabric's ports seldom move,
    yet two indexes are asked for each tick (the grid's hosts; grouped by rail, every
    host): the last INDEXES_KEPT are kept, the oldest forgotten first, so an index of
    ports that changed or went away goes. What they were made of is one flat list,
    compared as it is (no hash): its items are mostly the very names of the tick before.

    ``cells``: the grid's cells made last, by place. Most stay as they were tick after
    tick: such a cell is the one made before, not a new equal one, so the widget's check
    for a changed grid (Grid ==) finds it the same at once. Each grid replaces them all.
    """

    indexes: list[tuple[list[object], dict[tuple[str, str], int]]] = field(default_factory=list)
    cells: Mapping[tuple[str, str], Cell] = field(default_factory=dict)


def rail_index(
    samples: Mapping[str, HostSample],
    config: RailConfig | None = None,
    memo: GridMemo | None = None,
) -> Mapping[tuple[str, str], int]:
    """(host, link id) -> its rail, as ``fabtop test`` numbers rails (the grid's lines and
    the overview's rail groups); an index ``memo`` kept is given again while its ports
    are as they were."""
    cfg = dict(config or {})
    kept = memo.indexes if memo is not None else []
    made_of: list[object] = [len(cfg), *cfg.items()]
    for h, s in samples.items():
        made_of += (h, s.host, len(s.links))
        made_of += chain.from_iterable(map(_rail_fields, s.links.values()))
    for before, index in kept:
        if before == made_of:
            return index
    index = {(p.host, p.link): n for n, ps in rails(samples, cfg).ports.items() for p in ps}
    kept.append((made_of, index))
    del kept[:-INDEXES_KEPT]
    return index


def _rule_state(f: Finding) -> str | None:
    if f.severity not in ALARMS:
        return None
    return RULE_STATES.get(f.rule, FINDING)


def _by_place(findings: Sequence[Finding]) -> dict[tuple[str, str], list[Finding]]:
    """(host, link id) -> the port's findings of warning and above."""
    out: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if f.port is not None and _rule_state(f) is not None:
            out.setdefault(f.port.key, []).append(f)
    return out


def _judge(row: LinkRow, host_live: bool, found: Sequence[Finding]) -> tuple[str, str]:
    """The worst state of one link, and why."""
    if not host_live or not row.live:
        return BLIND, "not reporting"
    worst, why = OK, ""
    if row.state in LINK_DOWN:
        worst, why = DOWN, f"link {row.state}"
    for f in found:
        s = _rule_state(f) or FINDING
        if RANK[s] < RANK[worst]:
            worst, why = s, f.rule
        elif s == worst and f.rule not in why.split(", "):
            why = f"{why}, {f.rule}" if why else f.rule
    if RANK[LOSS] < RANK[worst] and row.loss_per_s:
        worst, why = LOSS, "drops or errors"
    return worst, why


def grid(
    hosts: Sequence[HostRow],
    links: Sequence[LinkRow],
    rail_of: Mapping[tuple[str, str], int],
    findings: Sequence[Finding],
    memo: GridMemo | None = None,
) -> Grid:
    """The grid of the hosts and links shown (both already narrowed by any filter), on the
    rails of ``rail_of`` (rail_index of every host, so a filter never renumbers them: the
    grid's r3 is the rail groups' and ``rail:3``'s); ``memo``: what the last grid of this
    view kept (GridMemo)."""
    before = memo.cells if memo is not None else {}
    found = _by_place(findings)
    said = {host for host, _ in found}  # most hosts have no finding: no lookup
    live = {h.name: h.status == UP for h in hosts}
    cells: dict[tuple[str, str], Cell] = {}
    names: dict[int, str] = {}  # rail -> its line's name, made once
    extra = 0
    others: dict[str, int] = {}
    for r in links:
        host, lid = r.host, r.lid
        on = rail_of.get((host, lid))
        if on is not None:
            line = names.get(on) or names.setdefault(on, f"r{on}")
        else:
            others[host] = n = others.get(host, 0) + 1
            extra = max(extra, n)
            line = f"+{n}"
        # Only the port's own findings: a GPU's or a server's (the host's) would paint
        # the whole column as a fabric problem; the findings panel lists those.
        here = found.get((host, lid), ()) if host in said else ()
        state, why = _judge(r, live.get(host, r.live), here)
        cell = before.get((line, host))
        if cell is None or cell.link != lid or cell.state != state or cell.why != why:
            cell = Cell(host, line, lid, state, why)
        cells[(line, host)] = cell
    lines = [names[n] for n in sorted(names)] + [f"+{k}" for k in range(1, extra + 1)]
    # A host that does not report and has no link to show (down before its first frame)
    # still has its place, blind on every line: Enter reads the host. One that reports but
    # whose links the filter hid has nothing to show.
    wanted = {r.host for r in links}
    bare = [h for h in hosts if h.name not in wanted and h.status != UP]
    bare_names = {h.name for h in bare}
    if bare and not lines:
        lines = ["host"]
    for h in bare:
        for line in lines:
            cells[(line, h.name)] = Cell(h.name, line, None, BLIND, h.status)
    order = tuple(h.name for h in hosts if h.name in wanted or h.name in bare_names)
    order += tuple(sorted(wanted - set(order)))  # links of a host the rows did not list
    if memo is not None:
        memo.cells = cells
    return Grid(order, tuple(lines), cells)
