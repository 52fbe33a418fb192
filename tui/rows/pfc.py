"""What the PFC screen shows, as plain data: pause matrix rows, who pauses whom, QoS side by side.

No widgets here: the screen and its tests read the same rows. How hard a port pauses
is the core's reading (:mod:`fabtop.core.rules.pauses`), at the state's thresholds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from collectors.samples import QosConfig, RateValue
from collectors.vocabulary import Derived, Metric
from fabtop.core.findings import PAUSED_PEERS, STUCK_RECEIVER, Finding, PortRef, port_ref
from fabtop.core.rules.pauses import PAUSE_PER_S, PAUSE_RATIO, PRIOS, SIDES, hard_pause, pause_level
from fabtop.core.state import FabricState

SEP = "\x1f"

# Findings about lossless traffic, ECN and the config they depend on.
PFC_RULES = frozenset(
    {
        "pfc_storm",
        "pfc_pressure",
        "pfc_stall",
        "pfc_disabled_prio",
        "pfc_mismatch",
        "trust_mismatch",
        "lossless_drops",
        "roce_out_of_sequence",
        "congestion_without_ecn",
        "mtu_mismatch",
        "roce_mtu_low",
        "firmware_mismatch",
    }
)


def _prio_map(v: RateValue | None) -> dict[int, float]:
    return dict(v) if isinstance(v, dict) else {}


@dataclass(slots=True)
class PauseRow:
    """One port in one direction: pause frames/s and pause time ratio per priority."""

    port: PortRef
    direction: str  # "rx" (being paused) | "tx" (sending pauses)
    per_s: dict[int, float] = field(default_factory=dict)
    ratio: dict[int, float] = field(default_factory=dict)
    pfc: tuple[int, ...] | None = None

    @property
    def host(self) -> str:
        """The host the port is on."""
        return self.port.host

    @property
    def link_id(self) -> str:
        """The port's link id."""
        return self.port.link

    @property
    def label(self) -> str:
        """``host/netdev``."""
        return self.port.label

    @property
    def key(self) -> str:
        """Stable row key."""
        return SEP.join((self.port.host, self.port.link, self.direction))

    def level(self, prio: int) -> float:
        """How hard this priority pauses, 0..1 (frames/s scaled when no duration counter)."""
        return pause_level(self.ratio.get(prio), self.per_s.get(prio))

    def peak(self) -> float:
        """How hard the hardest priority pauses (a priority with no reading: 0)."""
        return max((self.level(p) for p in {*self.ratio, *self.per_s}), default=0.0)

    def hard(self, prio: int, thresholds: Mapping[str, float]) -> bool:
        """Pausing hard on ``prio``, as the storm rule counts who pauses whom."""
        return hard_pause(self.ratio.get(prio), self.per_s.get(prio), thresholds)


# The pause counters read per priority: a port with none has no row in the matrix.
PRIO_PAUSES = tuple(m for m in Metric if m.per_priority and m.category == "pauses")


def pause_rows(state: FabricState) -> list[PauseRow]:
    """Every port that reports per-priority pause counters, rx then tx, in host order."""
    out: list[PauseRow] = []
    for host, hs in state.hosts.items():
        if hs.sample is None:
            continue
        for lid, link in hs.sample.links.items():
            lr = hs.rates.links.get(lid) if hs.rates is not None else None
            fresh = lr is not None and not lr.gap
            rates = lr.rates if lr is not None and fresh else {}
            if not any(isinstance(link.metrics.get(m), dict) for m in PRIO_PAUSES):
                continue
            ref = port_ref(host, link)
            for d in SIDES:
                out.append(
                    PauseRow(
                        ref,
                        d,
                        _prio_map(rates.get(PAUSE_PER_S[d])),
                        _prio_map(rates.get(PAUSE_RATIO[d])),
                        link.qos.pfc_enabled if link.qos else None,
                    )
                )
    # The hardest-pausing ports on top, so a storm is on screen even at 80x24; the
    # rest keep host order (sorted() is stable).
    # A port sending pauses (a congested or stuck receiver) outranks the ones it pauses.
    heat: dict[tuple[str, str], list[float]] = {}
    for r in out:
        h = heat.setdefault(r.port.key, [0.0, 0.0])
        i = 0 if r.direction == "tx" else 1
        h[i] = max(h[i], r.peak())
    return sorted(out, key=lambda r: [-round(v, 1) for v in heat[r.port.key]])


@dataclass(slots=True)
class PausePair:
    """A port sending pauses on ``prio`` (the congested receiver) and the ports it pauses."""

    prio: int
    sender: PortRef  # sends the pauses: the stuck or congested receiver
    sender_level: float  # its tx pause time ratio (or scaled frames/s)
    paused: tuple[PortRef, ...]  # ports receiving pauses on the same priority right now
    storm: bool  # backed by an active pfc_storm finding


def pause_pairs(
    rows: Sequence[PauseRow], findings: Iterable[Finding], thresholds: Mapping[str, float]
) -> list[PausePair]:
    """Who pauses whom: pfc_storm evidence first, then what the live rates show."""
    out: list[PausePair] = []
    seen: set[tuple[int, tuple[str, str]]] = set()
    for f in findings:
        stuck = f.ref(STUCK_RECEIVER)
        if f.rule != "pfc_storm" or f.priority is None or stuck is None:
            continue
        if (f.priority, stuck.key) in seen:
            continue
        seen.add((f.priority, stuck.key))
        level = f.number(Derived.TX_PAUSE_TIME_RATIO)
        out.append(
            PausePair(
                f.priority, stuck, level if level is not None else 1.0, f.refs(PAUSED_PEERS), True
            )
        )
    for prio in PRIOS:
        senders = [r for r in rows if r.direction == "tx" and r.hard(prio, thresholds)]
        receivers = [r.port for r in rows if r.direction == "rx" and r.hard(prio, thresholds)]
        for s in sorted(senders, key=lambda r: -r.level(prio)):
            if (prio, s.port.key) in seen:
                continue
            seen.add((prio, s.port.key))
            paused = tuple(x for x in receivers if x != s.port)
            out.append(PausePair(prio, s.port, s.level(prio), paused, False))
    return out


QOS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trust", "trust"),
    ("pfc", "PFC prio"),
    ("ecn_np", "ECN np"),
    ("ecn_rp", "ECN rp"),
    ("dscp", "DSCP→prio"),
    ("mtu", "MTU"),
    ("fw", "firmware"),
    ("driver", "driver"),
)


def prio_list(prios: tuple[int, ...] | None) -> str:
    """``3`` / ``0-7`` / ``none`` / ``-`` (not reported)."""
    if prios is None:
        return "-"
    if not prios:
        return "none"
    if list(prios) == list(range(prios[0], prios[-1] + 1)) and len(prios) > 2:
        return f"{prios[0]}-{prios[-1]}"
    return ",".join(map(str, prios))


def _dscp(q: QosConfig | None) -> str:
    # The lossless priority's DSCP codes are what a mismatch would break; show their count
    # per priority compactly: "26→3" style would not fit, so the priorities that own codes.
    if q is None or not q.dscp2prio:
        return "-"
    codes = q.dscp2prio
    # The default: DSCP d goes to priority d >> 3, every priority named with its eight.
    if all(p == d >> 3 for d, p in codes.items()) and len(codes) == 8 * len({*codes.values()}):
        return "dscp/8"
    by_prio: dict[int, list[int]] = {}
    for d, p in codes.items():
        by_prio.setdefault(p, []).append(d)
    return ";".join(
        f"{p}:{min(ds)}-{max(ds)}" if len(ds) > 1 else f"{p}:{ds[0]}"
        for p, ds in sorted(by_prio.items())
    )


def _firmware(fw: str | None) -> str:
    return fw.split(" ")[0] if fw else "-"


@dataclass(slots=True)
class QosRow:
    """One RDMA port's lossless config; ``odd`` names cells that differ from its peers."""

    key: str
    label: str
    kind: str
    cells: dict[str, str]
    odd: set[str] = field(default_factory=set)


def qos_rows(state: FabricState) -> list[QosRow]:
    """The QoS config of every RDMA port side by side, mismatches against the majority marked."""
    rows: list[QosRow] = []
    for host, hs in state.hosts.items():
        if hs.sample is None:
            continue
        for lid, link in hs.sample.links.items():
            if link.kind not in ("roce", "ib") and link.qos is None:
                continue
            q = link.qos
            driver = link.driver or "-"
            if link.driver_version:
                driver += f" {link.driver_version}"
            rows.append(
                QosRow(
                    SEP.join((host, lid)),
                    port_ref(host, link).label,
                    link.kind,
                    {
                        "trust": (q.trust if q and q.trust else "-"),
                        "pfc": prio_list(q.pfc_enabled if q else None),
                        "ecn_np": prio_list(q.ecn_np_enabled if q else None),
                        "ecn_rp": prio_list(q.ecn_rp_enabled if q else None),
                        "dscp": _dscp(q),
                        "mtu": str(link.mtu) if link.mtu is not None else "-",
                        "fw": _firmware(link.firmware),
                        "driver": driver,
                    },
                )
            )
    # Compare like with like: an IB HCA's firmware line is not a RoCE NIC's.
    for kind in {r.kind for r in rows}:
        group = [r for r in rows if r.kind == kind]
        if len(group) < 2:
            continue
        for col, _ in QOS_COLUMNS:
            counts = Counter(r.cells[col] for r in group if r.cells[col] != "-")
            if len(counts) < 2:
                continue
            majority = counts.most_common(1)[0][0]
            for r in group:
                if r.cells[col] not in ("-", majority):
                    r.odd.add(col)
    return sorted(rows, key=lambda r: not r.odd)  # mismatches first, else host order


def pfc_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The findings the PFC screen lists, worst first (as the state keeps them)."""
    return [f for f in findings if f.rule in PFC_RULES]
