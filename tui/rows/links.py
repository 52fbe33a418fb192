"""Rows of the hosts and links tables and the top line, computed from FabricState.

Panels are functions over state: each screen turns these rows into cells, so the
numbers can be tested without a terminal. Every rate and counter a column reads is
named here, once, through :mod:`collectors.vocabulary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from collectors.samples import LinkSample, MetricValue, RateValue
from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.ber import corrected_count
from fabtop.core.coverage import Coverage, coverage
from fabtop.core.deltas import counts_since
from fabtop.core.findings import SEVERITIES, Finding
from fabtop.core.state import (
    CONNECTING,
    DOWN,
    FAILING,
    STALE,
    STATUSES,
    UP,
    FabricState,
    HostState,
    effective_status,
)

# The counters each column adds up: their rates, and their counts since the 'r' baseline.
LOSS_METRICS = (Metric.RX_DISCARDS, Metric.RX_OUT_OF_BUFFER, Metric.RX_PHY_ERRORS)
PAUSE_RX_METRICS = (Metric.RX_PAUSE, Metric.RX_PAUSE_GLOBAL)
PAUSE_TX_METRICS = (Metric.TX_PAUSE, Metric.TX_PAUSE_GLOBAL)
ECN_METRICS = (Metric.ECN_MARKED,)
CNP_METRICS = (Metric.CNP_SENT,)
PAUSE_RATIOS = (Derived.RX_PAUSE_TIME_RATIO, Derived.TX_PAUSE_TIME_RATIO)
TOKENS_RATE = InferenceRate.GENERATED_TOKENS_PER_S
STATUS_ORDER = {s: i for i, s in enumerate(STATUSES)}  # worst first
ALARMS = ("warning", "critical")  # severities the grid and the cable column judge by
NO_ALARMS: frozenset[str] = frozenset()
LINK_DOWN = ("down", "disabled")  # the links table's DOWN/DISA
NO_RATES: Mapping[str, RateValue] = MappingProxyType({})
GROUP_MARK = "\x1e"  # starts a group row's key (a link's is host \x1f link id)


def total(v: RateValue | MetricValue | None) -> float | None:
    """A per-priority value summed over priorities; a scalar as it is."""
    if v is None:
        return None
    if isinstance(v, dict):
        return float(sum(v.values())) if v else None
    return float(v)


def peak(v: RateValue | None) -> float | None:
    """The largest per-priority value (a scalar as it is)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return max(v.values()) if v else None
    return v


def _sum_present(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _rate_sum(rates: dict[str, RateValue], names: tuple[str, ...]) -> float | None:
    """The rates ``names``, each summed over priorities, then added up (None: none read).

    Every link's row takes five of these each tick: one loop, no lists (1000 links)."""
    out: float | None = None
    for n in names:
        v = rates.get(n)
        if v is None:
            continue
        if isinstance(v, dict):
            if not v:
                continue
            v = float(sum(v.values()))
        out = v if out is None else out + v
    return None if out is None else float(out)


def _per_s(metrics: tuple[Metric, ...]) -> tuple[str, ...]:
    return tuple(m.per_s for m in metrics)


# The rate names each column adds up, spelled once.
LOSS_PER_S = _per_s(LOSS_METRICS)
PAUSE_RX_PER_S = _per_s(PAUSE_RX_METRICS)
PAUSE_TX_PER_S = _per_s(PAUSE_TX_METRICS)
ECN_PER_S = _per_s(ECN_METRICS)
CNP_PER_S = _per_s(CNP_METRICS)


@dataclass(slots=True)
class HostRow:
    """One line of the hosts table."""

    name: str
    target: str
    status: str
    age_s: float | None
    rtt_s: float | None
    links: int
    gpus: int
    tokens_per_s: float | None
    error: str | None

    @property
    def live(self) -> bool:
        """False when the host's numbers are old (stale, down, failing, not yet connected)."""
        return self.status == UP


@dataclass(slots=True)
class LinkRow:
    """One line of the links table.

    A row is made for every link each tick (the order, the groups, the grid and the filter
    read every one), but only the fifty rows on screen show all their numbers. So what is
    read straight off the sample is a field (and loss, which the grid judges every link
    by), and the other columns worked out from the link's rates (pauses, ECN, CNP,
    shares; the counts since 'r'; whether its cable is read) are properties, worked out
    when read: at 1000 links, working them out for every row was two thirds of making the
    rows (issue 32). A group's summary row adds them up over its links (``members``),
    also when read.

    They are read from the host's state (``source``), not from a reference to this tick's
    rates: a row kept that long would keep the tick's rates alive into the next refresh,
    and freeing 1000 links' rates there costs more than working out their numbers did. A
    row is drawn the tick it is made; one scrolled into view later shows its host's
    latest rates.
    """

    host: str
    lid: str
    kind: str
    link_layer: str | None
    state: str | None
    speed_gbps: float | None
    rx_bps: float | None
    tx_bps: float | None
    temperature_c: float | None
    gap: bool
    live: bool
    # Loss is worked out for every row: the grid judges every link by it.
    loss_per_s: float | None = None
    source: HostState | None = None  # the link's host: its rates and sample, when read
    base: LinkSample | None = None  # its sample at the 'r' baseline (none taken: None)
    # How bad it is, for worst first: 0 healthy; 1..3 its (or its host's) worst finding,
    # info to critical; a link down 2; a host not reporting 3.
    badness: int = 0
    # A group's summary row (tui/rows/groups.py): its key, its links, how many of them
    # have something to say, how many its view hides; host is then the group's label.
    group: str = ""
    members: tuple[LinkRow, ...] = ()
    bad: int = 0
    hidden: int = 0
    # (the group's place, 0 for its summary row and 1 for its links): the table sorts by
    # this after its sort column, so groups stay whole and in order; (0, 0) ungrouped.
    rank: tuple[int, int] = (0, 0)
    # The rules of the link's own findings at warning and above (the grid's judgment and
    # the cable column, issue 33).
    alarms: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        """Row key: host and link id; a group's row: GROUP_MARK and the group's key."""
        return f"{GROUP_MARK}{self.group}" if self.group else f"{self.host}\x1f{self.lid}"

    def text(self) -> str:
        """What the filter matches against."""
        return f"{self.host} {self.lid} {self.kind} {self.link_layer or ''}".lower()

    @property
    def folded(self) -> int:
        """A group's row: how many links it holds."""
        return len(self.members)

    @property
    def line_ratio(self) -> float | None:
        """The busier direction's share of line rate."""
        rx, tx = self.rx_bps, self.tx_bps
        if self.group or not self.speed_gbps or (rx is None and tx is None):
            return None
        return max(rx or 0.0, tx or 0.0) / (self.speed_gbps * 1e9)

    @property
    def rates(self) -> Mapping[str, RateValue]:
        """The link's rates, as its host has them now (none read: empty)."""
        hr = self.source.rates if self.source is not None else None
        lr = hr.links.get(self.lid) if hr is not None else None
        return lr.rates if lr is not None else NO_RATES

    @property
    def sample(self) -> LinkSample | None:
        """The link's sample, as its host has it now."""
        s = self.source.sample if self.source is not None else None
        return s.links.get(self.lid) if s is not None else None

    @property
    def rdma_share(self) -> float | None:
        share = self.rates.get(Derived.RDMA_SHARE)
        return share if isinstance(share, float) else None

    def _per_s(self, names: tuple[str, ...]) -> float | None:
        if self.group:
            return _sum_present([_rate_sum(r.rates, names) for r in self.members])
        return _rate_sum(self.rates, names)

    @property
    def pause_rx_per_s(self) -> float | None:
        return self._per_s(PAUSE_RX_PER_S)

    @property
    def pause_tx_per_s(self) -> float | None:
        return self._per_s(PAUSE_TX_PER_S)

    @property
    def ecn_per_s(self) -> float | None:
        return self._per_s(ECN_PER_S)

    @property
    def cnp_per_s(self) -> float | None:
        return self._per_s(CNP_PER_S)

    @property
    def pause_time_ratio(self) -> float | None:
        """The worst priority's share of time paused, either direction."""
        ratio = None
        for n in PAUSE_RATIOS:
            v = peak(self.rates.get(n))
            if v is not None and (ratio is None or v > ratio):
                ratio = v
        return ratio

    def _since(self, metrics: tuple[Metric, ...]) -> float | None:
        """Counts since the 'r' baseline (none taken, or the counter reset since: None)."""
        link = self.sample
        if link is None or self.base is None:
            return None
        return counts_since(link, self.base, metrics)

    @property
    def d_loss(self) -> float | None:
        return self._since(LOSS_METRICS)

    @property
    def d_pause_rx(self) -> float | None:
        return self._since(PAUSE_RX_METRICS)

    @property
    def d_pause_tx(self) -> float | None:
        return self._since(PAUSE_TX_METRICS)

    @property
    def d_ecn(self) -> float | None:
        return self._since(ECN_METRICS)

    @property
    def d_cnp(self) -> float | None:
        return self._since(CNP_METRICS)

    @property
    def optics(self) -> bool:
        """Something of its cable is read: the module, the FEC, or a corrected-bit count
        (the BER) a driver gives without either."""
        link = self.sample
        if link is None:
            return False
        return link.module is not None or link.fec is not None or corrected_count(link) is not None


def host_tokens(hs: HostState) -> float | None:
    """Generated tokens per second over the host's inference servers."""
    if hs.rates is None:
        return None
    return _sum_present([v.get(TOKENS_RATE) for v in hs.rates.inference.values()])


def host_rows(state: FabricState, now: float, interval: float) -> list[HostRow]:
    """Every host, in config order."""
    rows = []
    for hs in state.hosts.values():
        s = hs.sample
        rows.append(
            HostRow(
                name=hs.name,
                target=hs.target,
                status=effective_status(hs, now, state.interval),
                age_s=hs.age_s(now),
                rtt_s=hs.rtt_s,
                links=len(s.links) if s else 0,
                gpus=len(s.gpus) if s else 0,
                tokens_per_s=host_tokens(hs),
                error=hs.error,
            )
        )
    return rows


def link_row(hs: HostState, link: LinkSample, live: bool, base: LinkSample | None) -> LinkRow:
    """The row of one link of ``hs`` from its sample, its rates and the baseline sample."""
    lr = hs.rates.links.get(link.id) if hs.rates is not None else None
    r = lr.rates if lr is not None else NO_RATES
    rx, tx = r.get(Derived.RX_BPS), r.get(Derived.TX_BPS)
    # Positional (1000 links a tick: keywords cost a sixth of the row); the names are
    # LinkRow's fields in order, and test_link_row_fields checks each lands in its own.
    return LinkRow(
        hs.name,  # host
        link.id,  # lid
        link.kind,
        link.link_layer,
        link.state,
        link.rate_gbps,  # speed_gbps
        rx if isinstance(rx, float) else None,  # rx_bps
        tx if isinstance(tx, float) else None,  # tx_bps
        link.temperature_c,
        lr is not None and lr.gap,  # gap
        live,
        _rate_sum(r, LOSS_PER_S),  # loss_per_s
        hs,  # source
        base,
    )


Found = dict[tuple[str, str | None], tuple[frozenset[str], str]]


def finding_index(findings: Sequence[Finding]) -> Found:
    """(host, link id; None for the host itself) -> the rules found there and the worst
    severity: what the filter, worst first and the grid read."""
    out: dict[tuple[str, str | None], tuple[set[str], str]] = {}
    for f in findings:
        host = f.port.host if f.port is not None else f.host
        if host is None or f.severity not in SEVERITIES:
            continue
        key = (host, f.port.link if f.port is not None else None)
        rules, sev = out.get(key, (set(), f.severity))
        rules.add(f.rule)
        out[key] = (rules, max(sev, f.severity, key=SEVERITIES.index))
    return {k: (frozenset(r), s) for k, (r, s) in out.items()}


def alarm_index(findings: Sequence[Finding]) -> dict[tuple[str, str], frozenset[str]]:
    """(host, link id) -> the rules of that port's findings at warning and above."""
    out: dict[tuple[str, str], set[str]] = {}
    for f in findings:
        if f.port is not None and f.severity in ALARMS:
            out.setdefault(f.port.key, set()).add(f.rule)
    return {k: frozenset(v) for k, v in out.items()}


def _badness(found: Found, host: str, lid: str, state: str | None, live: bool) -> int:
    worst = 3 if not live else 2 if state in LINK_DOWN else 0
    for key in ((host, lid), (host, None)):
        got = found.get(key)
        if got is not None:
            worst = max(worst, SEVERITIES.index(got[1]) + 1)
    return worst


def link_rows(
    state: FabricState, now: float, interval: float, show_virtual: bool = False
) -> list[LinkRow]:
    """Every link of every host that has a sample (virtual netdevs and empty Thunderbolt
    receptacles only when asked)."""
    rows = []
    found = finding_index(state.findings)
    alarms = alarm_index(state.findings)
    # Most hosts have no finding: their links skip the lookups.
    said = {host for host, _ in found}
    for hs in state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        live = effective_status(hs, now, state.interval) == UP
        base_sample = state.baseline.get(hs.name)
        judged = hs.name in said
        for lid, link in s.links.items():
            # Virtual netdevs and empty receptacles (no cable: nothing to watch) only when
            # asked for.
            if not show_virtual and (
                link.kind == "virtual" or link.netdev == "lo" or link.state == "empty"
            ):
                continue
            base = base_sample.links.get(lid) if base_sample is not None else None
            row = link_row(hs, link, live, base)
            if judged:
                row.badness = _badness(found, hs.name, lid, link.state, live)
                row.alarms = alarms.get((hs.name, lid), NO_ALARMS)
            elif not live or link.state in LINK_DOWN:
                row.badness = 3 if not live else 2
            rows.append(row)
    return rows


@dataclass(slots=True)
class Summary:
    """The top line: cluster token rate, host counts, findings by severity, what is seen."""

    tokens_per_s: float | None
    hosts: dict[str, int]
    findings: dict[str, int]
    inference_servers: int
    coverage: Coverage  # which hosts report: "no findings" holds only over what was seen
    # Servers whose token rate cannot be read (exo, mlx_lm): the sum leaves them out.
    tokens_unknown: int = 0


def summary(state: FabricState, now: float, interval: float) -> Summary:
    """Counts and the cluster token rate (sum over every inference server)."""
    hosts: Counter[str] = Counter()
    tokens: list[float | None] = []
    servers = 0
    for hs in state.hosts.values():
        hosts[effective_status(hs, now, state.interval)] += 1
        if hs.rates is not None:
            for v in hs.rates.inference.values():
                servers += 1
                tokens.append(v.get(TOKENS_RATE))
        elif hs.sample is not None:
            servers += len(hs.sample.inference)
    findings = Counter(f.severity for f in state.findings)
    unknown = sum(
        1
        for hs in state.hosts.values()
        if hs.sample is not None
        for i in hs.sample.inference
        if i.rate_unknown is not None
    )
    return Summary(
        tokens_per_s=_sum_present(tokens),
        hosts={s: hosts.get(s, 0) for s in (UP, STALE, CONNECTING, FAILING, DOWN)},
        findings={s: findings.get(s, 0) for s in reversed(SEVERITIES)},
        inference_servers=servers,
        coverage=coverage(state, now, state.interval),
        tokens_unknown=unknown,
    )
