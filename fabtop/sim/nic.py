"""Per-NIC counter state of a simulated host: what each port's traffic makes its counters do.

The counter names come from :mod:`fabtop.sim.counter_names` (each one from a capture or
from driver source); :class:`~fabtop.sim.counters.Counters` integrates them on the grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabtop.sim.counter_names import (
    IB_HW_CONG_COUNTERS,
    IB_HW_Q_COUNTERS,
    IB_PORT_COUNTERS,
    IGB_NAMES,
    NETDEV_STATS,
    mlx5_ethtool_names,
)
from fabtop.sim.counters import Counters

# Starting values (cumulative, a host that has been up a while): the capture's magnitudes.
_MLX5_CAPTURE_START = {
    "rx_bytes_phy": 6211329423080,
    "rx_packets_phy": 97052087562,
    "tx_bytes_phy": 357657403514,
    "tx_packets_phy": 5588396729,
    "rx_vport_unicast_bytes": 2461450188460,
    "rx_vport_unicast_packets": 38460159194,
    "tx_vport_unicast_bytes": 334959252764,
    "tx_vport_unicast_packets": 5582654212,
    "rx_steer_missed_packets": 1962570491,
    "rx_cache_reuse": 9369255040,
    "rx_packets": 333854100,
    "rx_bytes": 20031246044,
    "tx_packets": 25,
    "tx_bytes": 2070,
}


@dataclass(slots=True)
class PortTraffic:
    """What one RoCE/Ethernet port carries during one grid cell (bytes per second)."""

    up: bool = True
    rdma_tx: float = 0.0
    rdma_rx: float = 0.0
    eth_tx: float = 0.0
    eth_rx: float = 0.0
    tx_pause_frac: float = 0.0  # share of the cell this port held its peer paused
    rx_pause_frac: float = 0.0  # share of the cell the peer held this port paused
    ecn_marked_pps: float = 0.0  # CE-marked RoCE packets received
    cnp_sent_pps: float = 0.0
    cnp_handled_pps: float = 0.0
    switch_drop_frac: float = 0.0  # share of the RDMA packets toward this port lost in the switch
    # A test's incast into a port without PFC on its RDMA priority (fabtop.sim.bench):
    rx_discard_frac: float = 0.0  # share of arriving RDMA packets dropped for lack of buffer
    tx_retrans_frac: float = 0.0  # share of sent RDMA packets sent again


PAUSE_FRAMES_PER_S = 6000.0  # a fully paused 100G port refreshes XOFF about every 170 us
ETH_PKT = 1400.0
CNP_WIRE_BYTES = 78.0  # Eth+IP+UDP+BTH+16 reserved+ICRC+FCS
CNP_PRIO = 6  # ecn/roce_np/cnp_802p_prio in the sysfs fixture


class Mlx5Port:
    """One ConnectX port: its netdev counters, ``ethtool -S`` set and RDMA device counters."""

    __slots__ = (
        "eth",
        "global_pause",
        "hw",
        "ib",
        "lossless",
        "netdev",
        "pfc_prios",
        "rdma_prio",
        "roce_mtu",
    )

    def __init__(
        self,
        pfc_prios: Sequence[int],
        rdma_prio: int,
        roce_mtu: int,
        scale: float,
        global_pause: bool = False,
        channels: int = 4,
        phy_statistical: bool = False,
    ) -> None:
        self.pfc_prios = tuple(sorted(set(pfc_prios)))
        self.rdma_prio = rdma_prio
        self.lossless = rdma_prio in self.pfc_prios
        self.global_pause = global_pause
        self.roce_mtu = roce_mtu
        start = {k: int(v * scale) for k, v in _MLX5_CAPTURE_START.items()}
        start[f"rx_prio{rdma_prio}_bytes"] = start["rx_bytes_phy"] - start["rx_vport_unicast_bytes"]
        start[f"tx_prio{rdma_prio}_bytes"] = start["tx_bytes_phy"] - start["tx_vport_unicast_bytes"]
        start["rx_prio0_bytes"] = start["rx_vport_unicast_bytes"]
        start["tx_prio0_bytes"] = start["tx_vport_unicast_bytes"]
        start["rx_vport_rdma_unicast_bytes"] = start[f"rx_prio{rdma_prio}_bytes"]
        start["tx_vport_rdma_unicast_bytes"] = start[f"tx_prio{rdma_prio}_bytes"]
        names = mlx5_ethtool_names(
            self.pfc_prios, global_pause, channels, phy_statistical=phy_statistical
        )
        self.eth = Counters(names, start)
        # The kernel's netdev statistics are mlx5's software counters (mlx5e_get_stats).
        self.netdev = Counters(
            NETDEV_STATS,
            {k: start[k] for k in ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")},
        )
        self.ib = Counters(
            IB_PORT_COUNTERS,
            {
                "port_rcv_data": start["rx_vport_rdma_unicast_bytes"] // 4,
                "port_xmit_data": start["tx_vport_rdma_unicast_bytes"] // 4,
            },
        )
        self.hw = Counters(IB_HW_Q_COUNTERS + IB_HW_CONG_COUNTERS, {"lifespan": 10})

    def all_counters(self) -> tuple[Counters, ...]:
        """Every counter set of this port (for resets and commits)."""
        return (self.eth, self.netdev, self.ib, self.hw)

    def apply(self, tr: PortTraffic) -> None:
        """Set every counter's growth for one cell from the port's traffic."""
        for c in self.all_counters():
            c.clear_rates()
        if not tr.up:
            return
        e, nd, ib, hw = self.eth, self.netdev, self.ib, self.hw
        rp = self.rdma_prio
        rpkt = float(self.roce_mtu) + 62.0
        rdma_rx_pps, rdma_tx_pps = tr.rdma_rx / rpkt, tr.rdma_tx / rpkt
        eth_rx_pps, eth_tx_pps = tr.eth_rx / ETH_PKT, tr.eth_tx / ETH_PKT
        cnp_rx_pps, cnp_tx_pps = tr.cnp_handled_pps, tr.cnp_sent_pps
        # PFC frames: sent while this port holds its peer, received while it is held.
        pause_tx_fps = PAUSE_FRAMES_PER_S * tr.tx_pause_frac
        pause_rx_fps = PAUSE_FRAMES_PER_S * tr.rx_pause_frac
        # Kernel path (sw counters, netdev statistics): the non-RDMA traffic only.
        for c in (e, nd):
            c.rate("rx_bytes", tr.eth_rx)
            c.rate("rx_packets", eth_rx_pps)
            c.rate("tx_bytes", tr.eth_tx)
            c.rate("tx_packets", eth_tx_pps)
        mc = 0.2 if tr.eth_rx > 0 else 0.0  # LLDP and the like, on a receiving port
        nd.rate("multicast", mc)
        e.rate("rx_csum_unnecessary", eth_rx_pps * 0.98)
        e.rate("rx_cache_reuse", eth_rx_pps * 0.9)
        e.rate("ch_events", eth_rx_pps / 64)
        e.rate("ch_poll", eth_rx_pps / 8)
        e.rate("ch_arm", eth_rx_pps / 64)
        for ch in range(4):
            e.rate(f"rx{ch}_packets", eth_rx_pps / 4)
            e.rate(f"rx{ch}_bytes", tr.eth_rx / 4)
            e.rate(f"rx{ch}_csum_unnecessary", eth_rx_pps * 0.98 / 4)
            e.rate(f"rx{ch}_cache_reuse", eth_rx_pps * 0.9 / 4)
            e.rate(f"ch{ch}_events", eth_rx_pps / 256)
            e.rate(f"ch{ch}_poll", eth_rx_pps / 32)
            e.rate(f"ch{ch}_arm", eth_rx_pps / 256)
        e.rate("rx_vport_unicast_bytes", tr.eth_rx)
        e.rate("rx_vport_unicast_packets", eth_rx_pps)
        e.rate("tx_vport_unicast_bytes", tr.eth_tx)
        e.rate("tx_vport_unicast_packets", eth_tx_pps)
        e.rate("rx_vport_multicast_packets", mc)
        e.rate("rx_vport_multicast_bytes", mc * 90)
        e.rate("rx_vport_rdma_unicast_bytes", tr.rdma_rx)
        e.rate("rx_vport_rdma_unicast_packets", rdma_rx_pps)
        e.rate("tx_vport_rdma_unicast_bytes", tr.rdma_tx)
        e.rate("tx_vport_rdma_unicast_packets", rdma_tx_pps)
        rx_phy_pkts = eth_rx_pps + rdma_rx_pps + cnp_rx_pps + mc
        tx_phy_pkts = eth_tx_pps + rdma_tx_pps + cnp_tx_pps
        e.rate("rx_bytes_phy", tr.eth_rx + tr.rdma_rx + cnp_rx_pps * CNP_WIRE_BYTES + mc * 90)
        e.rate("rx_packets_phy", rx_phy_pkts)
        e.rate("tx_bytes_phy", tr.eth_tx + tr.rdma_tx + cnp_tx_pps * CNP_WIRE_BYTES)
        e.rate("tx_packets_phy", tx_phy_pkts)
        e.rate("rx_multicast_phy", mc)
        e.rate("tx_mac_control_phy", pause_tx_fps)
        e.rate("rx_mac_control_phy", pause_rx_fps)
        # RFC 2819 size histogram of received frames.
        e.rate("rx_65_to_127_bytes_phy", eth_rx_pps * 0.4 + cnp_rx_pps + mc)
        e.rate("rx_1024_to_1518_bytes_phy", eth_rx_pps * 0.6)
        big = (
            "rx_4096_to_8191_bytes_phy"
            if self.roce_mtu >= 4096
            else "rx_2048_to_4095_bytes_phy"
            if self.roce_mtu >= 2048
            else "rx_1024_to_1518_bytes_phy"
        )
        e.rate(big, rdma_rx_pps + (eth_rx_pps * 0.6 if big == "rx_1024_to_1518_bytes_phy" else 0))
        # Per-priority traffic: TCP on 0, RoCE on its priority, CNPs on the CNP priority.
        e.rate("rx_prio0_bytes", tr.eth_rx + mc * 90)
        e.rate("rx_prio0_packets", eth_rx_pps + mc)
        e.rate("tx_prio0_bytes", tr.eth_tx)
        e.rate("tx_prio0_packets", eth_tx_pps)
        e.rate(f"rx_prio{rp}_bytes", tr.rdma_rx + (tr.eth_rx + mc * 90 if rp == 0 else 0))
        e.rate(f"rx_prio{rp}_packets", rdma_rx_pps + (eth_rx_pps + mc if rp == 0 else 0))
        e.rate(f"tx_prio{rp}_bytes", tr.rdma_tx + (tr.eth_tx if rp == 0 else 0))
        e.rate(f"tx_prio{rp}_packets", rdma_tx_pps + (eth_tx_pps if rp == 0 else 0))
        e.rate(f"rx_prio{CNP_PRIO}_bytes", cnp_rx_pps * CNP_WIRE_BYTES)
        e.rate(f"rx_prio{CNP_PRIO}_packets", cnp_rx_pps)
        e.rate(f"tx_prio{CNP_PRIO}_bytes", cnp_tx_pps * CNP_WIRE_BYTES)
        e.rate(f"tx_prio{CNP_PRIO}_packets", cnp_tx_pps)
        e.rate(f"rx_prio{rp}_marked", tr.ecn_marked_pps)
        # Pause counters exist only on PFC priorities; a lossy RoCE priority drops instead.
        held = f"prio{rp}" if self.lossless else ("global" if self.global_pause else None)
        if held is not None:
            e.rate(f"tx_{held}_pause", pause_tx_fps)
            e.rate(f"tx_{held}_pause_duration", tr.tx_pause_frac * 1e6)
            e.rate(f"rx_{held}_pause", pause_rx_fps)
            e.rate(f"rx_{held}_pause_duration", tr.rx_pause_frac * 1e6)
            trans = 2000.0 * tr.rx_pause_frac * (1.0 - tr.rx_pause_frac) + 0.5 * pause_rx_fps / 600
            e.rate(f"rx_{held}_pause_transition", trans if tr.rx_pause_frac > 0 else 0.0)
            if held == "global":
                e.rate("tx_pause_ctrl_phy", pause_tx_fps)
                e.rate("rx_pause_ctrl_phy", pause_rx_fps)
        drops = rdma_rx_pps * tr.rx_discard_frac
        if held is None and tr.tx_pause_frac > 0:
            # No PFC on the RoCE priority: congestion shows up as discards.
            drops += rdma_rx_pps * 0.02 * tr.tx_pause_frac
        if drops > 0:
            e.rate(f"rx_prio{rp}_discards", drops)
            e.rate("rx_discards_phy", drops)
            e.rate(f"rx_prio{rp}_buf_discard", drops)
        # RDMA device: PMA data counters in 4-octet words; q and congestion counters.
        ib.rate("port_rcv_data", tr.rdma_rx / 4)
        ib.rate("port_xmit_data", tr.rdma_tx / 4)
        ib.rate("port_rcv_packets", rdma_rx_pps)
        ib.rate("port_xmit_packets", rdma_tx_pps)
        ib.rate("unicast_rcv_packets", rdma_rx_pps)
        ib.rate("unicast_xmit_packets", rdma_tx_pps)
        hw.rate("rx_write_requests", rdma_rx_pps / 16)
        hw.rate("rx_read_requests", rdma_rx_pps / 256)
        hw.rate("np_ecn_marked_roce_packets", tr.ecn_marked_pps)
        hw.rate("np_cnp_sent", cnp_tx_pps)
        hw.rate("rp_cnp_handled", cnp_rx_pps * 0.995)
        hw.rate("rp_cnp_ignored", cnp_rx_pps * 0.005)
        # Packets lost in the NIC (no PFC on the RoCE priority) or in the switch (none there)
        # reach the responder as gaps in the PSN sequence.
        lost = tr.switch_drop_frac + tr.rx_discard_frac
        retrans = rdma_tx_pps * tr.tx_retrans_frac
        if not self.lossless and tr.tx_pause_frac > 0:
            lost += 0.002 * tr.tx_pause_frac
            retrans += rdma_tx_pps * 0.0005
        if retrans > 0:
            hw.rate("roce_adp_retrans", retrans)
        if lost > 0:
            hw.rate("out_of_sequence", rdma_rx_pps * lost)
            hw.rate("packet_seq_err", rdma_rx_pps * lost / 4)

    def commit(self, dt: float) -> None:
        """Advance every counter set to the next grid point."""
        for c in self.all_counters():
            c.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        for c in self.all_counters():
            c.zero()


class IbPort:
    """One native InfiniBand port: ``counters/`` (PMA) and ``hw_counters/`` (q counters)."""

    __slots__ = ("hw", "ib")

    def __init__(self, scale: float) -> None:
        # Starting point: the mlx5_0 IB port of the procfs sysfs fixture, scaled.
        start = {
            "port_rcv_data": 18126345378,
            "port_xmit_data": 2880761508848,
            "port_rcv_packets": 541889824,
            "port_xmit_packets": 10907922116,
            "unicast_rcv_packets": 541889824,
            "unicast_xmit_packets": 10907922116,
        }
        self.ib = Counters(IB_PORT_COUNTERS, {k: int(v * scale) for k, v in start.items()})
        self.hw = Counters(
            IB_HW_Q_COUNTERS,
            {
                "lifespan": 10,
                "rx_read_requests": int(175528982 * scale),
                "rx_write_requests": int(742114 * scale),
            },
        )

    def apply(self, up: bool, tx: float, rx: float, wait_frac: float) -> None:
        """Set growth for one cell: bytes per second each way, share of time waiting for credit."""
        self.ib.clear_rates()
        self.hw.clear_rates()
        if not up:
            return
        mtu = 4096 + 30.0
        self.ib.rate("port_xmit_data", tx / 4)
        self.ib.rate("port_rcv_data", rx / 4)
        self.ib.rate("port_xmit_packets", tx / mtu)
        self.ib.rate("port_rcv_packets", rx / mtu)
        self.ib.rate("unicast_xmit_packets", tx / mtu)
        self.ib.rate("unicast_rcv_packets", rx / mtu)
        # port_xmit_wait counts ticks (HDR: about 1.6e8 per second) with data but no credit.
        self.ib.rate("port_xmit_wait", wait_frac * 1.6e8)
        self.hw.rate("rx_write_requests", rx / mtu / 16)
        self.hw.rate("rx_read_requests", rx / mtu / 256)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.ib.commit(dt)
        self.hw.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        self.ib.zero()
        self.hw.zero()


class PlainNetdev:
    """A netdev with kernel statistics only (thunderbolt-net, lo), or igb's ``ethtool -S`` too."""

    __slots__ = ("eth", "netdev", "pkt")

    def __init__(self, igb: bool = False, pkt: float = ETH_PKT) -> None:
        self.netdev = Counters(NETDEV_STATS)
        self.eth = Counters(IGB_NAMES) if igb else None
        self.pkt = pkt

    def apply(self, up: bool, tx: float, rx: float) -> None:
        """Set growth for one cell (bytes per second each way)."""
        sets = [self.netdev] + ([self.eth] if self.eth is not None else [])
        for c in sets:
            c.clear_rates()
            if not up:
                continue
            c.rate("rx_bytes", rx)
            c.rate("tx_bytes", tx)
            c.rate("rx_packets", rx / self.pkt)
            c.rate("tx_packets", tx / self.pkt)
            c.rate("rx_queue_0_packets", rx / self.pkt)
            c.rate("rx_queue_0_bytes", rx)
            c.rate("tx_queue_0_packets", tx / self.pkt)
            c.rate("tx_queue_0_bytes", tx)
            c.rate("multicast", 0.1)
            c.rate("rx_multicast", 0.1)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.netdev.commit(dt)
        if self.eth is not None:
            self.eth.commit(dt)

    def zero(self) -> None:
        """Driver reload."""
        self.netdev.zero()
        if self.eth is not None:
            self.eth.zero()
