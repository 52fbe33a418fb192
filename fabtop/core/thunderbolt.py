"""Thunderbolt cables across hosts: one link per cable, and what a link can do.

Pure: hosts' samples in, cables out. Each end of a Thunderbolt cable is seen by the host
it plugs into, which reports the far end's identity (:class:`ThunderboltPeer.peer_uid`:
the XDomain ``unique_id`` on Linux, the peer's domain UUID on macOS); a host's own
identity is its :class:`ThunderboltInfo` ``self_uid`` (and ``domain_uids``). A cable is
*proven* when both ends name each other. Otherwise it says why not: only one end is
seen (the far host is not monitored, or gave no identity), or the ends disagree (the far
host sees its cable going elsewhere: moved or wrong cable, or one end's slow-cadence
reading is older than the move). Where the bus gives no identity at all, two
Thunderbolt netdevs in the same IPv4 subnet (``LinkSample.addresses``) are paired as
*by address*: likely, never proven.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from collectors.samples import HostSample, LinkSample, ThunderboltInfo, ThunderboltPeer

PAIRED = "paired"  # both ends name each other
ONE_END = "one_end"  # the far end is not monitored, or gave no identity
MISMATCH = "mismatch"  # the far host is monitored and sees its cable go elsewhere
BY_ADDRESS = "by_address"  # no bus identity: two Thunderbolt netdevs in one IPv4 subnet

ARROW = "\u27f7"  # one cable, two ends
TIMES = "\u00d7"  # lane speed x lanes, as the issue writes it


@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable: the host, the port it plugs into and the netdev on it."""

    host: str
    port: str | None
    netdev: str | None
    peer: ThunderboltPeer | None = None  # what this end reports of the cable (None: by address)

    @property
    def label(self) -> str:
        """``host:netdev`` (else the port), as the cable line writes it."""
        return f"{self.host}:{self.netdev or self.port or '?'}"


@dataclass(frozen=True, slots=True)
class Cable:
    """One Thunderbolt cable as fabtop could establish it."""

    a: CableEnd
    b: CableEnd | None  # None: only one end seen
    status: str  # PAIRED | ONE_END | MISMATCH | BY_ADDRESS
    why: str  # for people: what was matched, or why the pair is not proven
    far_name: str | None = None  # the far end's name as the near end reports it (one end)

    @property
    def gbps_per_lane(self) -> float | None:
        """The slower lane speed any end reports, None when none does."""
        got = [
            v
            for p in self._peers()
            for v in (p.rx_gbps_per_lane, p.tx_gbps_per_lane)
            if v is not None
        ]
        return min(got) if got else None

    @property
    def lanes(self) -> int | None:
        """Lanes of the narrower direction any end reports, None when none does."""
        got = [v for p in self._peers() for v in (p.rx_lanes, p.tx_lanes) if v is not None]
        return min(got) if got else None

    @property
    def total_gbps(self) -> float | None:
        """Lane speed times lanes; else the total an end's tool reports (macOS gives no
        lanes); None when neither is known."""
        s, n = self.gbps_per_lane, self.lanes
        if s is not None and n is not None:
            return s * n
        totals = [t for p in self._peers() if (t := _link_gbps(p)) is not None]
        return min(totals) if totals else None

    def _peers(self) -> list[ThunderboltPeer]:
        ends = [self.a, self.b] if self.b is not None else [self.a]
        return [e.peer for e in ends if e.peer is not None]

    @property
    def speed_text(self) -> str:
        """``2 x 40 = 80 Gb/s`` (with the multiplication sign), or what is unknown."""
        if self.gbps_per_lane is None and self.lanes is None and self.total_gbps is not None:
            return f"{self.total_gbps:g} Gb/s (lanes not reported)"
        return speed_text(self.gbps_per_lane, self.lanes)

    @property
    def text(self) -> str:
        """``mac1:en3 <-> spark1:thunderbolt0  2 x 40 = 80 Gb/s`` and, unless proven, why."""
        far = self.b.label if self.b is not None else f"{self.far_name or '?'} (not monitored)"
        line = f"{self.a.label} {ARROW} {far}  {self.speed_text}"
        return line if self.status == PAIRED else f"{line}  [{self.why}]"


def speed_text(per_lane: float | None, lanes: int | None) -> str:
    """Lane speed times lanes = total, spelled out: ``2 x 20 = 40 Gb/s``."""
    if per_lane is None or lanes is None:
        return (
            "speed unknown"
            if per_lane is None and lanes is None
            else (f"{lanes} {TIMES} ? Gb/s" if per_lane is None else f"? {TIMES} {per_lane:g} Gb/s")
        )
    return f"{lanes} {TIMES} {per_lane:g} = {lanes * per_lane:g} Gb/s"


def _self_uid(p: ThunderboltPeer) -> str | None:
    """This end's own identity where the source gives one per port (macOS: one domain per
    bus; the darwin reader's additive ``ThunderboltPeer.self_uid``), lower case."""
    v = getattr(p, "self_uid", None)
    return v.lower() if isinstance(v, str) and v else None


def _link_gbps(p: ThunderboltPeer) -> float | None:
    """The total an end's tool reports where it gives no lanes (the darwin reader's
    additive ``ThunderboltPeer.link_gbps``), else lanes x lane speed."""
    v = getattr(p, "link_gbps", None)
    return float(v) if isinstance(v, int | float) else p.total_gbps


def identities(tb: ThunderboltInfo) -> tuple[str, ...]:
    """Every identity a peer may report for this host, lower case: Linux prints UUIDs in
    lower case (``%pUb``), system_profiler in upper case."""
    out = [u.lower() for u in tb.domain_uids] or ([tb.self_uid.lower()] if tb.self_uid else [])
    for p in tb.peers:
        uid = _self_uid(p)
        if uid is not None and uid not in out:
            out.append(uid)
    return tuple(out)


def pair_cables(samples: Mapping[str, HostSample | None]) -> list[Cable]:
    """One :class:`Cable` per cable the hosts report, proven pairs first."""
    tbs = {h: s.thunderbolt for h, s in samples.items() if s is not None and s.thunderbolt}
    owner: dict[str, str] = {}
    shared: set[str] = set()
    for host, tb in tbs.items():
        for uid in identities(tb):
            if uid in owner and owner[uid] != host:
                shared.add(uid)  # two hosts claim one identity: it proves nothing
            owner.setdefault(uid, host)
    cables: list[Cable] = []
    done: set[tuple[str, str]] = set()  # (host, port) ends already in a cable
    for host in sorted(tbs):
        tb = tbs[host]
        everything = set(identities(tb))
        for p in tb.peers:
            own = _self_uid(p)
            mine = {own} if own is not None else everything
            if (host, p.port or "") in done:
                continue
            end = CableEnd(host, p.port, p.netdev, p)
            done.add((host, p.port or ""))
            peer_uid = p.peer_uid.lower() if p.peer_uid else None
            if peer_uid is None:
                cables.append(
                    Cable(end, None, ONE_END, "the far end gave no identity", p.peer_name)
                )
                continue
            if peer_uid in shared:
                cables.append(
                    Cable(
                        end,
                        None,
                        ONE_END,
                        f"two monitored hosts claim identity {peer_uid}",
                        p.peer_name,
                    )
                )
                continue
            far = owner.get(peer_uid)
            if far is None:
                cables.append(
                    Cable(
                        end, None, ONE_END, f"peer {peer_uid} is not a monitored host", p.peer_name
                    )
                )
                continue
            back = [q for q in tbs[far].peers if (q.peer_uid or "").lower() in mine]
            if not back:
                elsewhere = sorted(
                    {
                        owner.get((q.peer_uid or "").lower(), q.peer_name or "?")
                        for q in tbs[far].peers
                    }
                )
                why = f"{far} sees no cable to {host}" + (
                    f" (its cables go to {', '.join(elsewhere)})" if elsewhere else ""
                )
                cables.append(Cable(end, CableEnd(far, None, None), MISMATCH, why))
                continue
            # Several cables between the same two hosts: take the far end not yet used.
            q = next((q for q in back if (far, q.port or "") not in done), back[0])
            done.add((far, q.port or ""))
            cables.append(
                Cable(end, CableEnd(far, q.port, q.netdev, q), PAIRED, "both ends name each other")
            )
    cables.extend(_by_address(samples, tbs))
    order = {PAIRED: 0, MISMATCH: 1, ONE_END: 2, BY_ADDRESS: 3}
    return sorted(cables, key=lambda c: (order.get(c.status, 9), c.a.host, c.a.port or ""))


def _tb_links(sample: HostSample) -> Iterable[LinkSample]:
    return (lk for lk in sample.links.values() if lk.kind == "tb")


def _v4_nets(link: LinkSample) -> set[ipaddress.IPv4Network]:
    out: set[ipaddress.IPv4Network] = set()
    for a in link.addresses or ():
        try:
            iface = ipaddress.ip_interface(a)
        except ValueError:
            continue
        if isinstance(iface, ipaddress.IPv4Interface) and iface.network.prefixlen < 32:
            out.add(iface.network)
    return out


def _by_address(
    samples: Mapping[str, HostSample | None], tbs: Mapping[str, ThunderboltInfo]
) -> list[Cable]:
    """Thunderbolt netdevs of hosts without bus identities, paired by a shared IPv4 subnet
    (one candidate only)."""
    seen: dict[ipaddress.IPv4Network, list[tuple[str, str]]] = {}
    for host, s in sorted(samples.items()):
        if s is None or host in tbs:
            continue
        for link in _tb_links(s):
            for net in _v4_nets(link):
                seen.setdefault(net, []).append((host, link.netdev or link.id))
    out: list[Cable] = []
    for net, ends in seen.items():
        hosts = {h for h, _ in ends}
        if len(ends) == 2 and len(hosts) == 2:
            (h1, n1), (h2, n2) = ends
            out.append(
                Cable(
                    CableEnd(h1, None, n1),
                    CableEnd(h2, None, n2),
                    BY_ADDRESS,
                    f"same subnet {net}, no Thunderbolt identity: not proven",
                )
            )
    return out


# What a link can do, where the host's own source does not say (Linux): the kernel's
# controller generation (sysfs ``generation``: 1-3 Thunderbolt, 4 every USB4 router).
# Thunderbolt 3 and USB4 (Thunderbolt 4) links run 2 lanes of 20 Gb/s; a USB4 v2
# (Thunderbolt 5) router also says 4, and can run 40 Gb/s lanes, so on Linux "can do"
# is at least 2 x 20: a Thunderbolt 5 pair trained at 20 Gb/s per lane is not told from
# a Thunderbolt 4 one by this alone (the other end's receptacle, on macOS, can).
GENERATION_FLOOR: dict[int, tuple[float, int]] = {3: (20.0, 2), 4: (20.0, 2)}


def capability(tb: ThunderboltInfo, peer: ThunderboltPeer) -> tuple[float, int, str] | None:
    """``(gbps per lane, lanes, how it is known)`` of what ``peer``'s link can do."""
    if peer.max_gbps_per_lane is not None and peer.max_lanes is not None:
        return peer.max_gbps_per_lane, peer.max_lanes, f"the receptacle ({tb.source})"
    floor = GENERATION_FLOOR.get(tb.generation or 0)
    if floor is None:
        return None
    name = "USB4 / Thunderbolt 4 or 5" if tb.generation == 4 else "Thunderbolt 3"
    return floor[0], floor[1], f"controller generation {tb.generation} ({name})"


def below_capability(tb: ThunderboltInfo, peer: ThunderboltPeer) -> str | None:
    """Why ``peer``'s link runs below what it can do, None when it does not or unknown."""
    cap = capability(tb, peer)
    if cap is None:
        return None
    speeds = [v for v in (peer.rx_gbps_per_lane, peer.tx_gbps_per_lane) if v is not None]
    lanes = [v for v in (peer.rx_lanes, peer.tx_lanes) if v is not None]
    why = []
    # An asymmetric USB4 v2 link (3 lanes one way, 1 the other) is by design: 4 in all.
    if lanes and min(lanes) < cap[1] and sum(lanes) < 2 * cap[1]:
        why.append(f"{min(lanes)} lane(s) where {cap[1]} are possible")
    if speeds and min(speeds) < cap[0]:
        why.append(f"{min(speeds):g} Gb/s per lane where {cap[0]:g} is possible")
    return "; ".join(why) or None


def cables_of(cables: Iterable[Cable], host: str, netdev: str | None = None) -> list[Cable]:
    """The cables with an end on ``host`` (on ``netdev`` when given)."""
    return [
        c
        for c in cables
        for e in (c.a, c.b)
        if e is not None and e.host == host and (netdev is None or e.netdev == netdev)
    ]


def domain_line(tb: ThunderboltInfo) -> str:
    """A host's Thunderbolt domain in one line: source, identity, generation."""
    ids = ", ".join(identities(tb)) or "unknown"
    gen = f"generation {tb.generation}" if tb.generation is not None else "generation unknown"
    return f"{tb.source}: identity {ids}; {gen}; {len(tb.peers)} cable(s) seen"
