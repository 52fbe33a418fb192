"""A rail: which of a host's ports a test pairs with which port of another host.

Defined once for every screen and plan. A port's rail is the config's (per host, per
interface) where given; otherwise its position, from 0, among the host's RDMA ports sorted
by name (``mlx5_2`` before ``mlx5_10``: names compared number by number), and on a host
with no RDMA port among its non-virtual netdevs. Rail-optimized clusters cable the n-th
NIC of every node to the n-th leaf switch, and drivers name NICs in PCI order, so the
position is the rail wherever nobody renamed a port; where the cabling differs, the
config says so. A port keeps its position while it is down: a dead port stays on its
rail, where a test finds it, instead of shifting every port after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from collectors.samples import HostSample, LinkSample
from collectors.text import natural

# (host, interface) -> rail, as the config gives it; the interface is a netdev
# (``enp65s0f0np0``), an RDMA device (``mlx5_0``) or an RDMA port (``mlx5_0/1``).
RailConfig = Mapping[tuple[str, str], int]


@dataclass(frozen=True, slots=True)
class RailPort:
    """One port of one host on one rail."""

    host: str
    link: str  # the link's id: its key in HostSample.links
    name: str  # what the operator reads and types: the netdev, else the RDMA device/port
    rail: int
    rdma: bool  # an RDMA port (perftest), else an IP path (iperf3, sockperf)
    configured: bool  # the rail came from the config, not from the port's position
    fabric: str = ""  # of FABRICS, for a port placed by position


@dataclass(slots=True)
class Rails:
    """Every rail of a fabric: its ports by rail, and what could not be placed."""

    ports: dict[int, list[RailPort]] = field(default_factory=dict)  # rail -> one port per host
    problems: list[str] = field(default_factory=list)  # one line each, naming host and port

    def port(self, host: str, rail: int) -> RailPort | None:
        """``host``'s port on ``rail`` (None: it has none there)."""
        return next((p for p in self.ports.get(rail, ()) if p.host == host), None)


# Every field of a LinkSample that placing a host's ports reads (host_rails, rails): the
# rails change only when one of these, a host's links, their order or the config does.
RAIL_FIELDS = ("id", "netdev", "rdma_device", "port", "link_layer", "state", "kind", "physical")

# The fabrics a rail never crosses, in the order their rails are numbered: a RoCE port
# cannot reach an InfiniBand one, nor a Mac's Thunderbolt bridge a switch port.
FABRICS = ("Ethernet", "InfiniBand", "Thunderbolt", "ip")


def fabric_of(link: LinkSample) -> str:
    """Which of :data:`FABRICS` a port is on (an RDMA port: its link layer)."""
    if link.rdma_device and link.link_layer in FABRICS:
        return link.link_layer
    return "Ethernet" if link.rdma_device else "ip"


def perftest_port(link: LinkSample) -> bool:
    """An RDMA port perftest runs on: InfiniBand or RoCE. A Mac's RDMA over Thunderbolt
    has no perftest: its path is tested over IP, as any netdev's."""
    return link.rdma_device is not None and fabric_of(link) in ("Ethernet", "InfiniBand")


def port_name(link: LinkSample) -> str:
    """A port as rails name it: the RDMA device/port for RDMA ports, else the netdev."""
    if link.rdma_device:
        return f"{link.rdma_device}/{link.port if link.port is not None else 1}"
    return link.netdev or link.id


def candidates(sample: HostSample) -> tuple[list[LinkSample], bool]:
    """The ports that take a position on a host, sorted by name, and whether they are RDMA
    ports: its RDMA ports, else (an IP-only host) its non-virtual netdevs but loopback."""
    # A Thunderbolt port with no cable in it ("empty") is no port of the fabric; a port
    # that is down keeps its place (its pairs fail, and say why).
    rdma = [ln for ln in sample.links.values() if ln.rdma_device and ln.state != "empty"]
    if rdma:
        return sorted(rdma, key=lambda ln: natural(port_name(ln))), True
    ip = [
        ln
        for ln in sample.links.values()
        if ln.kind != "virtual" and ln.physical and (ln.netdev or ln.id) != "lo"
    ]
    return sorted(ip, key=lambda ln: natural(port_name(ln))), False


def _names(link: LinkSample) -> set[str]:
    """Every name the config may give ``link`` by."""
    out = {link.id}
    if link.netdev:
        out.add(link.netdev)
    if link.rdma_device:
        out |= {link.rdma_device, port_name(link)}
    return out


def host_rails(
    sample: HostSample, config: RailConfig | None = None
) -> tuple[list[RailPort], list[str]]:
    """The rail of each of one host's ports, and the problems (one line each).

    A host the config names takes its rails from the config only (a partial map with the
    rest by position would let a configured port and a positional one meet on one rail).
    """
    host = sample.host
    wanted = {iface: rail for (h, iface), rail in (config or {}).items() if h == host}
    problems: list[str] = []
    out: list[RailPort] = []
    if wanted:
        for iface, rail in sorted(wanted.items(), key=lambda kv: (kv[1], kv[0])):
            link = next((ln for ln in sample.links.values() if iface in _names(ln)), None)
            if link is None:
                problems.append(
                    f"{host}: rail {rail}: the config names {iface!r}, which the host does not have"
                )
                continue
            taken = next((p for p in out if p.rail == rail), None)
            if taken is not None:
                problems.append(
                    f"{host}: rail {rail}: the config puts both {taken.name!r} and {iface!r} on it"
                )
                continue
            again = next((p for p in out if p.link == link.id), None)
            if again is not None:  # one port named twice (its netdev and its RDMA device)
                said = f"{iface!r} is {again.name!r}, already on rail {again.rail}"
                problems.append(f"{host}: rail {rail}: {said}")
                continue
            out.append(RailPort(host, link.id, port_name(link), rail, perftest_port(link), True))
        return out, problems
    links, _rdma = candidates(sample)
    if not links:
        problems.append(
            f"{host}: no RDMA port and no physical netdev to test (give its interfaces a "
            "rail in the config)"
        )
    # By position within each fabric (renumbered fabric after fabric by rails()).
    seen: dict[str, int] = {}
    for ln in links:
        fab = fabric_of(ln)
        pos = seen[fab] = seen.get(fab, -1) + 1
        out.append(RailPort(host, ln.id, port_name(ln), pos, perftest_port(ln), False, fab))
    return out, problems


def rails(samples: Mapping[str, HostSample], config: RailConfig | None = None) -> Rails:
    """Every host's ports by rail (hosts in the order given), with every problem said."""
    known = set(samples)
    out = Rails()
    for host, rail in sorted({(h, r) for (h, _), r in (config or {}).items() if h not in known}):
        out.problems.append(f"{host}: rail {rail}: the config names a host that is not tested")
    placed: list[RailPort] = []
    for sample in samples.values():
        ports, problems = host_rails(sample, config)
        out.problems += problems
        placed += ports
    # Ports placed by position: each fabric's rails after the previous fabric's, so two
    # fabrics never share a rail (the first fabric's meet the config's of the same number).
    base = 0
    for fab in FABRICS:
        mine = [p for p in placed if not p.configured and p.fabric == fab]
        for p in mine:
            # The first fabric's rails are its positions: the port as placed (no copy).
            out.ports.setdefault(base + p.rail, []).append(
                replace(p, rail=base + p.rail) if base else p
            )
        base += max((p.rail + 1 for p in mine), default=0)
    for p in placed:
        if p.configured:
            out.ports.setdefault(p.rail, []).append(p)
    out.ports = dict(sorted(out.ports.items()))
    for rail, ports in out.ports.items():
        if len({p.rdma for p in ports}) > 1:
            # perftest cannot talk to iperf3: such a pair has no engine in common. The
            # rail is tested over RDMA; the IP-only ports are left out, and said.
            ip = ", ".join(f"{p.host}/{p.name}" for p in ports if not p.rdma)
            out.problems.append(
                f"rail {rail}: {ip} only over IP, the others over RDMA: left out of the "
                "rail (give them a rail of their own in the config)"
            )
            out.ports[rail] = [p for p in ports if p.rdma]
    return out
