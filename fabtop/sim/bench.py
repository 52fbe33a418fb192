"""The load ``fabtop test`` puts on the simulated fabric, and the figures its tools report.

A tool run on a simulated node (:mod:`fabtop.sim.launcher`) is a :class:`Flow` between two
:class:`Endpoint` s over a window of simulation time aligned to the grid. The same function
(:meth:`Bench.rate`) gives a flow's goodput in every grid cell to both the tool's report
and the counters of both ends (:meth:`Bench.port_load`, read by ``SimHost.step``), so the
dashboard and the runner's evidence window see the bytes the tool said it moved.

The model, kept simple on purpose:

- an endpoint's goodput ceiling is its link rate (the port's negotiated rate, the PCIe
  link's limit as ``SimHost.step`` has it) times the protocol's payload share of a wire
  frame (:func:`payload_share`);
- bandwidth flows in the same cell share each end equally: k senders into one receiver
  get ``receiver / k`` each (full duplex: a port's sending and receiving are separate);
- the episodes of the cell bend it: a port held paused (PFC) moves data only while it is
  not, a stuck receiver stalls its peers, a switch that drops costs RC retransmissions,
  a port down carries nothing;
- an incast made by the test itself is paused by the switch where the receiver's RDMA
  priority is lossless (the senders' pause counters move, bandwidth is the receiver's),
  and dropped where it is not (discards and out-of-sequence on the receiver,
  retransmissions on the senders, bandwidth below the receiver's rate).

Deterministic: the flows persist across a replay of the fabric (it keeps its Bench), and
no figure depends on the wall clock.
"""

from __future__ import annotations

import contextlib
import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabtop.sim.addresses import mgmt_ipv4, roce_ipv4, tb_ipv4
from fabtop.sim.episodes import Mods, PortMods

if TYPE_CHECKING:
    from fabtop.sim.fabric import Fabric
    from fabtop.sim.host import SimHost

# Bytes a RoCE v2 frame carries beyond its payload on the wire: Ethernet 14, IPv4 20,
# UDP 8, BTH 12, ICRC 4, FCS 4, preamble and gap 20. At 4096 that is 98.0 % of the line:
# the 98.02 Gb/s of the 100 GbE capture (tests/fixtures/perftest).
ROCE_WIRE_OVERHEAD = 82
# InfiniBand: LRH 8, BTH 12, ICRC 4, VCRC 2 per packet, and about 1 % for link-level
# credits and management traffic (HDR ib_write_bw reports ~196 Gb/s of 200).
IB_WIRE_OVERHEAD = 26
IB_LINK_SHARE = 0.99
IB_HDR_GBPS = 200.0
IB_MTU = 4096
# TCP over Ethernet: IP 20 + TCP 32 (timestamps) in the MTU, Ethernet 38 around it.
TCP_HEADERS = 52
ETH_WIRE_OVERHEAD = 38
# thunderbolt-net moves IP through the host's DMA rings, not the lanes' full rate: TB4
# links run TCP at roughly half their 40 Gb/s.
TB_NET_SHARE = 0.55
MGMT_GBPS = 1.0  # eno1, igb
# iperf3 before 3.16 runs every stream in one thread: one core moves about 40 Gb/s of TCP.
IPERF3_THREAD_GBPS = 40.0
# A run's own spread: each flow moves between 99.6 % and 100 % of its share (CPU, PCIe).
RUN_SPREAD = 0.004
LO_GBPS = 40.0
# A switch that drops RDMA makes an RC sender go back N: goodput 1 / (1 + drop * window),
# the window being about a bandwidth-delay product of packets.
RC_WINDOW_PACKETS = 100
# An incast into a port whose RDMA priority has no PFC: the switch's egress buffer
# overflows; the share of packets lost grows with the senders past one.
LOSSY_INCAST_DROP = 0.003
TCP_INCAST_DROP = 0.0005
# ECN marks a switch puts on an incast toward a port, per sender past the first.
INCAST_MARKS_PPS = 60_000.0
CNP_PER_MARK = 0.35  # the receiver answers about a third of the marks (the episodes' ratio)
# How long the switch holds each sender of a lossless incast paused. Without ECN, PFC
# alone meters it: every sender waits while the others' share drains (1 - 1/k). With
# DCQCN the senders slow down on CNPs and the queue rarely reaches the pause threshold.
DCQCN_PAUSE_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One end of a test: a host's port. ``kind``: roce (index = port), ib, tb, mgmt, lo."""

    host: str
    kind: str
    index: int = 0

    @property
    def rdma(self) -> bool:
        return self.kind in ("roce", "ib")


@dataclass(slots=True)
class Flow:
    """Data one run moves from ``src`` to ``dst`` over ``[start, end)`` (simulation s).

    ``fixed_bps`` (bytes/s) is a latency run's small load, which takes no share of a port;
    a bandwidth flow's rate is :meth:`Bench.rate`.
    """

    src: Endpoint
    dst: Endpoint
    start: float
    end: float
    rdma: bool
    fixed_bps: float | None = None
    spread: float = 1.0  # this run's own share of its ceiling (Bench.add draws it)

    def overlap(self, g: float, dt: float) -> float:
        """Seconds of the cell ``[g, g + dt)`` inside the flow's window."""
        return max(0.0, min(self.end, g + dt) - max(self.start, g))


@dataclass(slots=True)
class PortLoad:
    """What the test's flows add to one port in one cell (bytes/s and shares of time)."""

    rdma_tx: float = 0.0
    rdma_rx: float = 0.0
    ip_tx: float = 0.0
    ip_rx: float = 0.0
    rx_pause_frac: float = 0.0  # the switch held this (sending) port paused
    rx_discard_frac: float = 0.0  # share of arriving RDMA packets this port's path dropped
    tx_retrans_frac: float = 0.0  # share of sent RDMA packets sent again
    ecn_marked_pps: float = 0.0  # receiver: CE marks the switch put on the incast
    cnp_handled_pps: float = 0.0  # sender: its share of the receiver's CNPs


def payload_share(kind: str, mtu: int, rdma: bool) -> float:
    """Goodput per byte of line rate for a full-size frame of ``mtu`` bytes."""
    if kind == "ib":
        return IB_MTU / (IB_MTU + IB_WIRE_OVERHEAD) * IB_LINK_SHARE
    if rdma:
        return mtu / (mtu + ROCE_WIRE_OVERHEAD)
    return (mtu - TCP_HEADERS) / (mtu + ETH_WIRE_OVERHEAD)


def host_addresses(host: SimHost) -> dict[str, Endpoint]:
    """Every IPv4 address of a simulated Linux host, and the port it sits on (the same
    addresses ``host_text.ip_addr`` prints); the host's name is its management address."""
    cfg, h = host.cfg, host.index
    out: dict[str, Endpoint] = {"127.0.0.1": Endpoint(cfg.name, "lo")}
    if "ipv4" in cfg.roce_addrs:
        for i in range(cfg.roce_ports):
            out[roce_ipv4(i, h)] = Endpoint(cfg.name, "roce", i)
    if host.tb is not None:
        out[tb_ipv4(h)] = Endpoint(cfg.name, "tb")
    out[mgmt_ipv4(h)] = Endpoint(cfg.name, "mgmt")
    out[cfg.name] = Endpoint(cfg.name, "mgmt")
    return out


def endpoint_address(host: SimHost, ep: Endpoint) -> str:
    """The IPv4 address of ``ep`` on ``host`` (its management address when it has none)."""
    for addr, e in host_addresses(host).items():
        if e == ep and addr[0].isdigit():
            return addr
    return mgmt_ipv4(host.index)


@dataclass(slots=True)
class Bench:
    """The test load of one fabric: its flows, its listening servers, the nodes' files."""

    fabric: Fabric
    flows: list[Flow] = field(default_factory=list)
    # (host, tool family, TCP port) -> a server waiting for its client (launcher.Listener)
    listeners: dict[tuple[str, str, int], object] = field(default_factory=dict)
    # host -> temporary directories fabtop made there, and the files in them
    dirs: dict[str, set[str]] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    _mods: tuple[float, Mods] | None = None

    # --- addresses and ceilings ------------------------------------------------------------

    def resolve(self, address: str, here: str) -> Endpoint | None:
        """The port an address (or host name) of the fabric belongs to, as seen from the
        host ``here`` (its loopback is its own)."""
        with contextlib.suppress(ValueError):  # a host name stays as it is
            address = str(ipaddress.ip_address(address))
        if address in ("127.0.0.1", "localhost"):
            return Endpoint(here, "lo")
        for host in self.fabric.hosts.values():
            ep = None if host.cfg.macos else host_addresses(host).get(address)
            if ep is not None:
                return ep
        return None

    def local_route(self, host: SimHost, dst: Endpoint) -> Endpoint:
        """The local port a host sends to ``dst`` from: the same network, else eno1."""
        if dst.host == host.name:
            return Endpoint(host.name, "lo")
        mine = {(e.kind, e.index): e for e in host_addresses(host).values()}
        same = mine.get((dst.kind, dst.index))
        return same if same is not None and dst.kind != "lo" else Endpoint(host.name, "mgmt")

    def ceiling(self, ep: Endpoint, rdma: bool) -> float:
        """Goodput ceiling of ``ep`` alone, bytes per second."""
        host = self.fabric.hosts[ep.host]
        cfg = host.cfg
        if ep.kind == "roce":
            line = cfg.link_gbps * 1e9 / 8 * host.pcie_share()
            return line * payload_share("roce", cfg.roce_mtu if rdma else cfg.mtu, rdma)
        if ep.kind == "ib":
            return IB_HDR_GBPS * 1e9 / 8 * payload_share("ib", IB_MTU, True)
        if ep.kind == "tb":
            gbps = cfg.tb_gbps_per_lane * cfg.tb_lanes * TB_NET_SHARE
            return gbps * 1e9 / 8 * payload_share("tb", 9000, False)
        if ep.kind == "mgmt":
            return MGMT_GBPS * 1e9 / 8 * payload_share("mgmt", 1500, False)
        return LO_GBPS * 1e9 / 8

    def port_mtu(self, ep: Endpoint) -> int:
        """The RDMA path MTU of a port (its active MTU)."""
        return IB_MTU if ep.kind == "ib" else self.fabric.hosts[ep.host].cfg.roce_mtu

    def ecn_live(self, ep: Endpoint, g: float) -> bool:
        """DCQCN runs on the port's host in the cell at ``g``."""
        return ep.kind == "roce" and ep.host not in self.mods(g).ecn_off

    def lossless(self, ep: Endpoint) -> bool:
        """True when the port's RDMA priority has PFC (IB is lossless by credits)."""
        if ep.kind != "roce":
            return ep.kind == "ib"
        return self.fabric.hosts[ep.host].ports[ep.index].lossless

    # --- the episodes, per cell -------------------------------------------------------------

    def mods(self, g: float) -> Mods:
        """The episodes' modifiers of the cell at ``g`` (the last one asked is kept)."""
        if self._mods is None or self._mods[0] != g:
            self._mods = (g, self.fabric.mods_at(g))
        return self._mods[1]

    def _pm(self, ep: Endpoint, mods: Mods) -> PortMods:
        if ep.kind != "roce":
            return PortMods()
        return mods.ports.get((ep.host, ep.index)) or PortMods()

    def down(self, ep: Endpoint, g: float) -> bool:
        """The port carries nothing in the cell at ``g`` (down, or IB without a subnet
        manager)."""
        if ep.kind == "ib":
            return not self.fabric.hosts[ep.host].cfg.ib_sm
        return self._pm(ep, self.mods(g)).down

    # --- rates -----------------------------------------------------------------------------

    def active(self, g: float, dt: float) -> list[Flow]:
        """The bandwidth flows that run in the cell at ``g``."""
        return [f for f in self.flows if f.fixed_bps is None and f.overlap(g, dt) > 0]

    def rate(self, flow: Flow, g: float, dt: float) -> float:
        """Goodput of ``flow`` in the cell at ``g``, bytes per second."""
        if flow.fixed_bps is not None:
            return flow.fixed_bps
        if self.down(flow.src, g) or self.down(flow.dst, g):
            return 0.0
        active = self.active(g, dt)
        n_out = sum(1 for f in active if f.src == flow.src) or 1
        n_in = sum(1 for f in active if f.dst == flow.dst) or 1
        rate = min(
            self.ceiling(flow.src, flow.rdma) / n_out, self.ceiling(flow.dst, flow.rdma) / n_in
        )
        if not flow.rdma:
            rate = min(rate, IPERF3_THREAD_GBPS * 1e9 / 8)
        return rate * flow.spread * self.episode_share(flow, g) * self.loss_share(flow, n_in)

    def episode_share(self, flow: Flow, g: float) -> float:
        """How much of its share a flow moves while the cell's episodes pause its ends.

        RC data flows one way and acknowledgements the other: a pause on either path
        (the sender held, the receiver holding the switch) stalls it; a switch that drops
        toward the receiver costs retransmissions.
        """
        mods = self.mods(g)
        s, d = self._pm(flow.src, mods), self._pm(flow.dst, mods)
        data = 1.0 - max(s.rx_pause_frac, d.tx_pause_frac)
        acks = 1.0 - max(d.rx_pause_frac, s.tx_pause_frac)
        share = max(data, 0.0) * max(acks, 0.0)
        if d.switch_drop_frac > 0:
            share /= 1.0 + d.switch_drop_frac * RC_WINDOW_PACKETS
        return share

    def loss_share(self, flow: Flow, n_in: int) -> float:
        """What an incast the test makes itself costs: nothing where PFC holds the
        senders, RC go-back-N where the receiver's priority is lossy."""
        if n_in < 2 or not flow.rdma or self.lossless(flow.dst):
            return 1.0
        return 1.0 / (1.0 + self.incast_drop(flow, n_in) * RC_WINDOW_PACKETS)

    def incast_drop(self, flow: Flow, n_in: int) -> float:
        """Share of packets an incast of ``n_in`` senders loses toward ``flow.dst``."""
        if n_in < 2:
            return 0.0
        if not flow.rdma:
            return TCP_INCAST_DROP * (n_in - 1)
        return 0.0 if self.lossless(flow.dst) else LOSSY_INCAST_DROP * (n_in - 1)

    def moved(self, flow: Flow, start: float, end: float) -> float:
        """Bytes ``flow`` moved over ``[start, end)`` (cell by cell)."""
        from fabtop.sim.fabric import GRID_S

        total = 0.0
        g = int(start / GRID_S + 1e-9) * GRID_S
        while g < end - 1e-9:
            span = max(0.0, min(end, g + GRID_S, flow.end) - max(start, g, flow.start))
            if span > 0:
                total += self.rate(flow, g, GRID_S) * span
            g += GRID_S
        return total

    def add(self, flow: Flow) -> Flow:
        """Put ``flow`` on the fabric (its window starts at a grid point not yet reached)."""
        from fabtop.sim.host import noise  # host.py imports this module

        n = noise(self.fabric.seed, len(self.flows), round(flow.start * 1000), 77)
        flow.spread = 1.0 - RUN_SPREAD * abs(n)
        self.flows.append(flow)
        return flow

    def cut(self, flow: Flow, now: float) -> None:
        """The run was ended early: no cell after the current one carries the flow."""
        from fabtop.sim.fabric import GRID_S

        flow.end = min(flow.end, max(flow.start, self.fabric.grid_t + GRID_S, now))

    # --- what the counters see --------------------------------------------------------------

    def port_load(self, ep: Endpoint, g: float, dt: float) -> PortLoad | None:
        """The test load on one port in the cell at ``g`` (None: no test touches it)."""
        if not self.flows:
            return None
        load: PortLoad | None = None
        active = self.active(g, dt)
        for f in self.flows:
            span = f.overlap(g, dt)
            if span <= 0 or ep not in (f.src, f.dst):
                continue
            load = load or PortLoad()
            bps = self.rate(f, g, dt) * span / dt
            n_in = sum(1 for a in active if a.dst == f.dst) if f.fixed_bps is None else 1
            drop = self.incast_drop(f, n_in)
            if f.src == ep:
                if f.rdma:
                    load.rdma_tx += bps * (1.0 + drop)
                else:
                    load.ip_tx += bps * (1.0 + drop)
                if n_in > 1 and f.rdma and self.lossless(f.dst):
                    # The switch pauses each sender while the others' share drains.
                    dcqcn = self.ecn_live(f.src, g) and self.ecn_live(f.dst, g)
                    held = (1.0 - 1.0 / n_in) * (DCQCN_PAUSE_SHARE if dcqcn else 1.0)
                    load.rx_pause_frac = max(load.rx_pause_frac, held)
                if n_in > 1 and f.rdma and self.ecn_live(f.dst, g):
                    marks = INCAST_MARKS_PPS * (n_in - 1) * CNP_PER_MARK / n_in
                    load.cnp_handled_pps = max(load.cnp_handled_pps, marks)
                load.tx_retrans_frac = max(load.tx_retrans_frac, drop if f.rdma else 0.0)
            if f.dst == ep:
                if f.rdma:
                    load.rdma_rx += bps
                else:
                    load.ip_rx += bps
                if f.rdma and n_in > 1:
                    load.rx_discard_frac = max(load.rx_discard_frac, drop)
                    load.ecn_marked_pps = max(load.ecn_marked_pps, INCAST_MARKS_PPS * (n_in - 1))
        return load
