"""RoCE addressing: the GID table of each RoCE port (sysfs ``gids`` and ``gid_attrs``).

RoCE v2 packets are UDP/IP: a queue pair can only use a GID that carries an IP address
(IPv4 as ``::ffff:a.b.c.d``, or a non-link-local IPv6 address) with type "RoCE v2". The
kernel adds such a pair of entries (RoCE v1 and v2) for each address of the netdev, after
the two default link-local ones (show_gids captures: tests/fixtures/rdma_gids).

- ``roce_no_ip_gid`` (warning): an up RoCE port with no RoCE v2 GID that carries an
  address: the netdev has no IP address (only the link-local GIDs are there), or its
  addresses have RoCE v1 GIDs only; RoCE v2 cannot work on it. Only said when the table
  was read whole (not read, or cut by the probe: unknown, never "fine" and never a
  fault). iWARP devices (node_type RNIC) have no RoCE GIDs; where the node type was not
  read, a table without any RoCE v2 entry could be one, and is not judged.
- ``gid_index_mismatch`` (info): the GID index that carries RoCE v2 with IPv4 differs
  across hosts. ``NCCL_IB_GID_INDEX`` and perftest's ``-x`` take one index: set the same
  everywhere, they pick a link-local or RoCE v1 GID on the odd hosts (multus-cni#1100:
  two pods at 5 and 7; an extra link-local IPv6 address moves IPv4 from 2/3 to 4/5 in
  the IBM nsdperf capture). Recent NCCL picks the GID itself when the variable is unset,
  hence info. One finding for the fabric; ``host`` is the odd host when there is one.

GIDs are read on slow ticks: these are state conditions, reported and cleared at once.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

from collectors.samples import GidEntry
from fabtop.core.findings import Finding
from fabtop.core.rules.config import _grouped, _odd_ones
from fabtop.core.rules.context import LinkTick, RuleContext, is_rdma_ethernet, link_up
from fabtop.core.rules.kinds import state_rule

ROCE_V2 = "RoCE v2"  # gid_attrs/types, kernel cache.c gid_type_str


def gid_text(g: GidEntry) -> str:
    """A GID as people read it: the IPv4 address, else the compressed IPv6 form."""
    try:
        addr = ipaddress.IPv6Address(g.gid)
    except ValueError:
        return g.gid
    return str(addr.ipv4_mapped) if addr.ipv4_mapped is not None else str(addr)


def _short_type(t: str | None) -> str:
    return {"IB/RoCE v1": "v1", ROCE_V2: "v2"}.get(t or "", t or "?")


def table_text(gids: tuple[GidEntry, ...], limit: int = 8) -> str:
    """``0 fe80::... v1, 1 fe80::... v2, ...`` as show_gids lists them."""
    shown = [f"{g.index} {gid_text(g)} {_short_type(g.type)}" for g in gids[:limit]]
    more = f" and {len(gids) - limit} more" if len(gids) > limit else ""
    return ", ".join(shown) + more if shown else "empty"


def ip_v2(g: GidEntry) -> bool:
    """A RoCE v2 GID that carries an IP address (IPv4-mapped or non-link-local IPv6)."""
    return g.type == ROCE_V2 and not g.link_local


def v2_ipv4_index(gids: tuple[GidEntry, ...]) -> int | None:
    """The lowest GID index with RoCE v2 and an IPv4 address (what NCCL_IB_GID_INDEX names)."""
    return next((g.index for g in gids if g.type == ROCE_V2 and g.ipv4_mapped), None)


def v2_address(gids: tuple[GidEntry, ...]) -> GidEntry | None:
    """The GID RoCE v2 traffic would use: the first with IPv4, else the first with IPv6."""
    ipv4 = next((g for g in gids if g.type == ROCE_V2 and g.ipv4_mapped), None)
    return ipv4 or next((g for g in gids if ip_v2(g)), None)


class GidFacts(NamedTuple):
    """What the rules ask of one GID table."""

    has_v2: bool  # any RoCE v2 entry (the default link-local one on a RoCE v2 device)
    has_ip_v2: bool  # a RoCE v2 entry with an address
    ipv4_index: int | None  # v2_ipv4_index


# A port's GID table is one tuple from frame to frame while its host's shape holds
# (collectors/assemble.py), so its facts are kept by identity: every pass asks them of
# every RoCE port. The entry holds the tuple, so its id cannot be reused while kept.
_FACTS: dict[int, tuple[tuple[GidEntry, ...], GidFacts]] = {}
_FACTS_MAX = 4096


def gid_facts(gids: tuple[GidEntry, ...]) -> GidFacts:
    """The facts of one GID table, worked out once per table."""
    hit = _FACTS.get(id(gids))
    if hit is not None and hit[0] is gids:
        return hit[1]
    facts = GidFacts(
        any(g.type == ROCE_V2 for g in gids), any(ip_v2(g) for g in gids), v2_ipv4_index(gids)
    )
    if len(_FACTS) >= _FACTS_MAX:
        _FACTS.clear()
    _FACTS[id(gids)] = (gids, facts)
    return facts


def _judged(lt: LinkTick) -> tuple[GidEntry, ...] | None:
    """The whole GID table of an up RoCE port, or None (not RoCE, down, unknown, cut)."""
    link = lt.link
    if link.gids is None or link.gids_truncated:
        return None
    if not is_rdma_ethernet(link) or not link_up(link.state):
        return None
    return link.gids


@state_rule("roce_no_ip_gid")
def roce_no_ip_gid(ctx: RuleContext) -> list[Finding]:
    """An up RoCE port without a RoCE v2 GID that carries an IP address."""
    out: list[Finding] = []
    for lt in ctx.links:
        gids = _judged(lt)
        found = _no_ip_gid(lt, gids) if gids is not None else None
        ctx.report(out, found, ("roce_no_ip_gid", lt.subject), lt.t)
    return out


def _no_ip_gid(lt: LinkTick, gids: tuple[GidEntry, ...]) -> Finding | None:
    link = lt.link
    if link.node_type == "RNIC":
        return None  # iWARP: no RoCE GIDs
    facts = gid_facts(gids)
    if facts.has_ip_v2 or not (facts.has_v2 or link.node_type == "CA"):
        return None  # fine, or (node type unknown, no RoCE v2 at all) maybe iWARP
    dev = f"{link.rdma_device}/{link.port}" if link.rdma_device else lt.name
    nd = link.netdev or "<netdev>"
    if any(not g.link_local for g in gids):  # addresses, as RoCE v1 GIDs only
        why = f"{dev} has addresses as RoCE v1 GIDs only"
        step = (
            f"show_gids {link.rdma_device or ''}: every entry with an address is v1, "
            "so the device runs RoCE v1 only; check its RoCE mode"
        )
    else:
        why = f"{dev} has only link-local GIDs: the netdev has no IP address"
        step = (
            f"ip addr show dev {nd}; give it an address (ip addr add <addr>/<len> dev "
            f"{nd}, or its network config), then show_gids {link.rdma_device or ''} or "
            f"rdma link show {dev}: a RoCE v2 GID with the address appears"
        )
    return Finding(
        rule="roce_no_ip_gid",
        severity="warning",
        subject=lt.subject,
        summary=(
            f"{lt.label}: RoCE v2 cannot work on this port: no RoCE v2 GID carries an IPv4 "
            f"or IPv6 address ({why})"
        ),
        evidence={"gids": table_text(gids), "netdev": link.netdev, "device": dev},
        next_step=f"on {lt.host}: {step}",
        host=lt.host,
        port=lt.ref,
    )


@state_rule("gid_index_mismatch")
def gid_index_mismatch(ctx: RuleContext) -> list[Finding]:
    """The GID index of RoCE v2 with IPv4 differs across hosts (info)."""
    per_host: dict[str, set[int]] = {}
    first: dict[str, LinkTick] = {}
    for lt in ctx.links:
        gids = _judged(lt)
        index = gid_facts(gids).ipv4_index if gids is not None else None
        if index is None:
            continue
        per_host.setdefault(lt.host, set()).add(index)
        first.setdefault(lt.host, lt)
    found = None
    if len(per_host) > 1:
        values: dict[str, int | str] = {
            h: "/".join(map(str, sorted(ix))) for h, ix in per_host.items()
        }
        odd = _odd_ones(values)
        if odd is not None:
            majority, hosts = odd
            shown = ", ".join(f"{h} ({values[h]})" for h in hosts[:4]) + (
                f" and {len(hosts) - 4} more" if len(hosts) > 4 else ""
            )
            lt = first[hosts[0]]
            found = Finding(
                rule="gid_index_mismatch",
                severity="info",
                subject="fabric",
                summary=(
                    f"the GID index of RoCE v2 with IPv4 differs across hosts: most use "
                    f"{majority}, but {shown}; one NCCL_IB_GID_INDEX or perftest -x for all "
                    "hosts picks the wrong GID on some"
                ),
                evidence={"values": _grouped(values), "majority": majority},
                next_step=(
                    f"on {hosts[0]}: show_gids {lt.link.rdma_device or ''} (what sits before "
                    "the IPv4 entries: another address, a macvlan); leave NCCL_IB_GID_INDEX "
                    "unset (recent NCCL picks a RoCE v2 IPv4 GID per host) or set it per "
                    "host, and give perftest each host's own -x"
                ),
                host=hosts[0] if len(hosts) == 1 else None,
            )
    out: list[Finding] = []
    ctx.report(out, found, ("gid_index_mismatch", "fabric"), ctx.now)
    return out
