"""Typed samples: what one probe frame says about one host.

Everything here holds raw cumulative counters stamped with the remote clock.
Rates are computed only by :mod:`fabtop.core.rates`. Missing is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

# A normalized metric is either one cumulative value or one per priority (0-7).
MetricValue: TypeAlias = int | dict[int, int]
# The counter source (LinkSample.counters) of raw counters read on slow ticks only (the
# probe's ib_hw_tick): kept apart, so a value carried between slow ticks is never taken
# for a counter that stopped, and no per-frame rate is made of it.
SLOW_SOURCE = "ib_hw_slow"
RateValue: TypeAlias = float | dict[int, float]


@dataclass(slots=True)
class PcieLink:
    """Current and maximum PCIe link of a NIC (sysfs ``current_link_*``/``max_link_*``)."""

    speed_gts: float | None = None
    width: int | None = None
    max_speed_gts: float | None = None
    max_width: int | None = None

    @property
    def degraded(self) -> bool:
        """True when the link trained below what both ends can do."""
        if self.width and self.max_width and self.width < self.max_width:
            return True
        return bool(
            self.speed_gts and self.max_speed_gts and self.speed_gts < self.max_speed_gts
        )


@dataclass(slots=True)
class LinkSample:
    """One link at one instant: a netdev, an RDMA port, or both when one sits on the other."""

    id: str
    netdev: str | None = None
    rdma_device: str | None = None
    port: int | None = None
    link_layer: str | None = None  # "Ethernet", "InfiniBand", or None for plain netdevs
    state: str | None = None  # normalized: "up", "down", "init", "polling", "disabled", ...
    rate_gbps: float | None = None
    mtu: int | None = None
    driver: str | None = None
    driver_version: str | None = None
    firmware: str | None = None
    pcie: PcieLink | None = None
    temperature_c: float | None = None
    physical: bool = False  # has a ``device`` entry in sysfs, or is an RDMA port
    kind: str = "netdev"  # netdev | roce | ib | tb (thunderbolt-net) | virtual
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # source -> raw -> value
    metrics: dict[str, MetricValue] = field(default_factory=dict)  # normalized cumulative
    saturated: list[str] = field(default_factory=list)  # raw names stuck at 2^32-1
    qos: QosConfig | None = None
    # Node time (ns) its counters were read: the section they came from (ethtool -S
    # first). The fast probe stamps each read; the sh probe stamps the tick's start.
    read_ns: int | None = None
    # The RDMA port's GID table (sysfs ``gids/N`` + ``gid_attrs``, or ``ibv_devinfo -v``):
    # None when it was not read, () when read and empty. Slow cadence.
    gids: tuple[GidEntry, ...] | None = None
    # IPv4/IPv6 addresses of the netdev (``ip -j addr``, ``ifconfig``): None when not read.
    addresses: tuple[str, ...] | None = None


@dataclass(slots=True, frozen=True)
class GidEntry:
    """One populated entry of an RDMA port's GID table."""

    index: int
    gid: str  # as the kernel prints it: fe80:0000:...; ::ffff:a.b.c.d style for IPv4-mapped
    type: str | None = None  # "RoCE v2", "IB/RoCE v1", or None where the source does not say
    netdev: str | None = None  # gid_attrs/ndevs/N

    @property
    def ipv4_mapped(self) -> bool:
        """True for a GID that carries an IPv4 address (``::ffff:a.b.c.d``)."""
        g = self.gid.replace(":", "").lower()
        return len(g) == 32 and g.startswith("0" * 20 + "ffff")

    @property
    def link_local(self) -> bool:
        """True for the ``fe80::`` GID every port has, whatever its addresses."""
        return self.gid.replace(":", "").lower().startswith("fe80" + "0" * 12)


@dataclass(slots=True)
class ThunderboltPeer:
    """One Thunderbolt cable as one host sees it: the far end and how the link trained.

    Linux: an XDomain under ``/sys/bus/thunderbolt/devices``; macOS: an entry of
    ``system_profiler SPThunderboltDataType -json`` with a peer. Per-lane speeds in Gb/s.
    """

    port: str | None = None  # the local receptacle or router port ("Receptacle 1", "0-1")
    netdev: str | None = None  # the local netdev that carries IP over it (thunderbolt0, en3)
    peer_uid: str | None = None  # the far end's identity: XDomain unique_id / peer domain UUID
    peer_name: str | None = None  # device_name / the peer's name as the tool prints it
    rx_gbps_per_lane: float | None = None
    tx_gbps_per_lane: float | None = None
    rx_lanes: int | None = None
    tx_lanes: int | None = None
    # What the receptacle can do, where the source says (to tell "trained below it").
    max_gbps_per_lane: float | None = None
    max_lanes: int | None = None
    # macOS (issue 14, additive): system_profiler gives one total speed and no lanes, and
    # each bus has its own domain UUID (the one the far end reports as peer_uid).
    self_uid: str | None = None  # this end's own identity where it is per port
    link_gbps: float | None = None  # current total link speed as the tool reports it
    max_link_gbps: float | None = None  # what the receptacle can do ("Up to 120 Gb/s")

    @property
    def total_gbps(self) -> float | None:
        """Lane speed times lanes of the slower direction, None when either is unknown
        (the tool's own total, ``link_gbps``, where it gives no lanes)."""
        tots = [
            s * n
            for s, n in (
                (self.rx_gbps_per_lane, self.rx_lanes),
                (self.tx_gbps_per_lane, self.tx_lanes),
            )
            if s is not None and n is not None
        ]
        return min(tots) if tots else self.link_gbps


@dataclass(slots=True)
class ThunderboltInfo:
    """A host's Thunderbolt domain: its own identity and the cables it sees (slow cadence)."""

    source: str  # "sysfs" (Linux) | "system_profiler" (macOS)
    self_uid: str | None = None  # host router unique_id (Linux) / domain UUID (macOS)
    generation: int | None = None  # controller generation: 3, 4 (USB4/TB4), 5 (TB5)
    peers: list[ThunderboltPeer] = field(default_factory=list)


@dataclass(slots=True)
class MacosInfo:
    """What a macOS host says beyond its links (issue 14): RDMA switch, bridges, thermals."""

    rdma_ctl: str | None = None  # "enabled" | "disabled" (rdma_ctl status); None: unknown
    rdma_devices: tuple[str, ...] | None = None  # ibv_devinfo's devices; None: not read
    bridges: dict[str, tuple[str, ...]] = field(default_factory=dict)  # bridge0 -> members
    thunderbolt_ports: tuple[str, ...] = ()  # devices networksetup names "Thunderbolt N"
    thermal_source: str | None = None  # "macmon" | "pmset" | None (none read)
    thermal_pressure: str | None = None  # pmset: "nominal" | "throttled"; None: unknown
    cpu_speed_limit_pct: int | None = None
    cpu_temp_c: float | None = None
    # Sources whose format is documented only (no public capture): shown as unverified.
    unverified: tuple[str, ...] = ()


@dataclass(slots=True)
class QosConfig:
    """Lossless-traffic configuration of one port, from whichever tool the host has."""

    source: str = ""  # "mlnx_qos", "dcb", "sysfs", "ethtool" (inferred from counter names)
    trust: str | None = None  # "pcp" | "dscp"
    pfc_enabled: tuple[int, ...] | None = None
    dscp2prio: dict[int, int] | None = None
    ecn_np_enabled: tuple[int, ...] | None = None
    ecn_rp_enabled: tuple[int, ...] | None = None
    ets: dict[str, str] | None = None
    prio_buffer: dict[int, int] | None = None  # priority -> receive buffer (dcb buffer)
    buffer_size: dict[int, int] | None = None  # buffer -> bytes


@dataclass(slots=True)
class GpuSample:
    """One GPU at one instant."""

    index: int
    name: str | None = None
    bus_id: str | None = None
    uuid: str | None = None
    vendor: str = "nvidia"
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    fan_pct: float | None = None
    pcie_rx_kbps: float | None = None
    pcie_tx_kbps: float | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    throttle_reasons: tuple[str, ...] = ()


@dataclass(slots=True)
class InferenceSample:
    """One inference server's /metrics at one instant (cumulative counters kept raw)."""

    url: str
    server: str | None = None  # vllm | llamacpp | sglang | tgi
    model: str | None = None
    generated_tokens_total: float | None = None
    prompt_tokens_total: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    # histogram name -> (upper bounds, cumulative bucket counts, count, sum)
    histograms: dict[str, tuple[tuple[float, ...], tuple[float, ...], float, float]] = field(
        default_factory=dict
    )
    error: str | None = None
    # Values the page had but that could not be used (NaN, ±Inf, overflow), one line each;
    # the page itself was read (``error`` says when it was not).
    warnings: list[str] = field(default_factory=list)
    # Local monotonic seconds at which the server produced this reading (mid-request).
    # /metrics is polled apart from the frames, so rates divide by the time between two
    # readings, not between the frames that happened to carry them.
    read_s: float | None = None


@dataclass(slots=True)
class SectionStatus:
    """How one probe section fared: ``ok``, ``missing`` (tool absent), ``timeout``, ``error``."""

    kind: str
    subject: str | None
    status: str
    read_ns: int | None = None
    detail: str | None = None


@dataclass(slots=True)
class HostSample:
    """Everything one frame says about one host, stamped with the remote clock."""

    host: str
    seq: int
    clock_ns: int  # remote wall clock (date +%s%N) at the frame's start
    uptime_s: float  # remote /proc/uptime: never steps, catches wall-clock jumps
    links: dict[str, LinkSample] = field(default_factory=dict)
    gpus: list[GpuSample] = field(default_factory=list)
    gpu_read_ns: int | None = None
    inference: list[InferenceSample] = field(default_factory=list)
    sections: list[SectionStatus] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cpu_throttle_count: int | None = None
    # Thunderbolt domain (issue 14): None when the host has none or it was not read.
    thunderbolt: ThunderboltInfo | None = None
    # macOS hosts (issue 14): None on every other host.
    macos: MacosInfo | None = None
    # Which probe sent the frame: "sh", or "python <version> <executable>" (the fast one);
    # None when the frame does not say (older recordings, Prometheus sources).
    probe: str | None = None
