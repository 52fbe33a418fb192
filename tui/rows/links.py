"""Rows of the hosts and links tables and the top line, computed from FabricState.

Panels are functions over state: each screen turns these rows into cells, so the
numbers can be tested without a terminal. Every rate and counter a column reads is
named here, once, through :mod:`collectors.vocabulary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from collectors.samples import LinkSample, MetricValue, RateValue
from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.ber import corrected_count
from fabtop.core.coverage import Coverage, coverage
from fabtop.core.deltas import counts_since
from fabtop.core.findings import SEVERITIES, Finding
from fabtop.core.rates import LinkRates
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
    """One line of the links table."""

    host: str
    lid: str
    kind: str
    link_layer: str | None
    state: str | None
    speed_gbps: float | None
    rx_bps: float | None
    tx_bps: float | None
    line_ratio: float | None
    rdma_share: float | None
    loss_per_s: float | None
    pause_rx_per_s: float | None
    pause_tx_per_s: float | None
    pause_time_ratio: float | None  # worst priority, either direction
    ecn_per_s: float | None
    cnp_per_s: float | None
    temperature_c: float | None
    gap: bool
    live: bool
    # counts since the 'r' baseline (None: no baseline, or the counter reset since)
    d_loss: float | None = None
    d_pause_rx: float | None = None
    d_pause_tx: float | None = None
    d_ecn: float | None = None
    d_cnp: float | None = None
    # How bad it is, for worst first: 0 healthy; 1..3 its (or its host's) worst finding,
    # info to critical; a link down 2; a host not reporting 3.
    badness: int = 0
    # A group's summary row (tui/rows/groups.py): its key, its links, how many of them
    # have something to say, how many its view hides; host is then the group's label.
    group: str = ""
    folded: int = 0
    bad: int = 0
    hidden: int = 0
    # (the group's place, 0 for its summary row and 1 for its links): the table sorts by
    # this after its sort column, so groups stay whole and in order; (0, 0) ungrouped.
    rank: tuple[int, int] = (0, 0)
    # The rules of the link's own findings at warning and above (the grid's judgment), and
    # whether its module diagnostics or FEC are read: the cable column (issue 33).
    alarms: frozenset[str] = frozenset()
    optics: bool = False

    @property
    def key(self) -> str:
        """Row key: host and link id; a group's row: GROUP_MARK and the group's key."""
        return f"{GROUP_MARK}{self.group}" if self.group else f"{self.host}\x1f{self.lid}"

    def text(self) -> str:
        """What the filter matches against."""
        return f"{self.host} {self.lid} {self.kind} {self.link_layer or ''}".lower()


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


def link_row(
    hs: HostState, link: LinkSample, lr: LinkRates | None, live: bool, base: LinkSample | None
) -> LinkRow:
    """The row of one link from its sample, its rates and the baseline sample."""
    r: dict[str, RateValue] = lr.rates if lr is not None else {}
    rx, tx = r.get(Derived.RX_BPS), r.get(Derived.TX_BPS)
    rx_f = rx if isinstance(rx, float) else None
    tx_f = tx if isinstance(tx, float) else None
    line = None
    if link.rate_gbps and (rx_f is not None or tx_f is not None):
        line = max(rx_f or 0.0, tx_f or 0.0) / (link.rate_gbps * 1e9)
    share = r.get(Derived.RDMA_SHARE)
    ratio = None  # the worst priority's, either direction
    for n in PAUSE_RATIOS:
        v = peak(r.get(n))
        if v is not None and (ratio is None or v > ratio):
            ratio = v
    # Positional (1000 links a tick: keywords cost a sixth of the row); the names are
    # LinkRow's fields in order, and test_link_row_fields checks each lands in its own.
    row = LinkRow(
        hs.name,  # host
        link.id,  # lid
        link.kind,
        link.link_layer,
        link.state,
        link.rate_gbps,  # speed_gbps
        rx_f,  # rx_bps
        tx_f,  # tx_bps
        line,  # line_ratio
        share if isinstance(share, float) else None,  # rdma_share
        _rate_sum(r, LOSS_PER_S),
        _rate_sum(r, PAUSE_RX_PER_S),
        _rate_sum(r, PAUSE_TX_PER_S),
        ratio,  # pause_time_ratio
        _rate_sum(r, ECN_PER_S),
        _rate_sum(r, CNP_PER_S),
        link.temperature_c,
        lr is not None and lr.gap,  # gap
        live,
    )
    if base is not None:  # counts since the 'r' baseline (none taken: None)
        row.d_loss = counts_since(link, base, LOSS_METRICS)
        row.d_pause_rx = counts_since(link, base, PAUSE_RX_METRICS)
        row.d_pause_tx = counts_since(link, base, PAUSE_TX_METRICS)
        row.d_ecn = counts_since(link, base, ECN_METRICS)
        row.d_cnp = counts_since(link, base, CNP_METRICS)
    return row


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
    worst = 3 if not live else 2 if state in ("down", "disabled") else 0
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
    for hs in state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        live = effective_status(hs, now, state.interval) == UP
        base_sample = state.baseline.get(hs.name)
        rates = hs.rates.links if hs.rates is not None else {}
        for lid, link in s.links.items():
            # Virtual netdevs and empty receptacles (no cable: nothing to watch) only when
            # asked for.
            if not show_virtual and (
                link.kind == "virtual" or link.netdev == "lo" or link.state == "empty"
            ):
                continue
            base = base_sample.links.get(lid) if base_sample is not None else None
            row = link_row(hs, link, rates.get(lid), live, base)
            row.badness = _badness(found, hs.name, lid, link.state, live)
            row.alarms = alarms.get((hs.name, lid), NO_ALARMS)
            # something of its cable is read: the module, the FEC, or a corrected-bit count
            # (the BER) a driver gives without either
            row.optics = (
                link.module is not None or link.fec is not None or corrected_count(link) is not None
            )
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
