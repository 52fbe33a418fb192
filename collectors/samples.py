"""Typed samples: what one probe frame says about one host.

Everything here holds raw cumulative counters stamped with the remote clock.
Rates are computed only by :mod:`fabtop.core.rates`. Missing is ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from collectors.optics import FecState, HealthReporter, ModuleDiag
from collectors.ruleset import FirewallState

# A normalized metric is either one cumulative value or one per priority (0-7).
MetricValue: TypeAlias = int | dict[int, int]
# The counter sources (LinkSample.counters) of an RDMA port's hw_counters and port
# counters read on slow ticks only (the probe's ib_hw_tick, ib_port_tick): kept apart, so
# a value carried between slow ticks is never taken for a counter that stopped, and no
# per-frame rate is made of it.
SLOW_SOURCE = "ib_hw_slow"
PORT_SLOW_SOURCE = "ib_port_slow"
# The FEC counters of ``ethtool -I --show-fec``, read on optics rounds (issue 33) and carried
# between them: no per-frame rate of its raw counters either (their normalized ones get
# rates between two reads: fabtop/core/rates.py, collectors/normalize.py SLOW_METRICS).
FEC_SOURCE = "fec"
# mlxlink's physical counters (opt-in, one device per optics round: collectors/parsers/
# mlxlink.py), carried between its reads likewise.
MLXLINK_SOURCE = "mlxlink"
SLOW_SOURCES = frozenset({SLOW_SOURCE, PORT_SLOW_SOURCE, FEC_SOURCE, MLXLINK_SOURCE})
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
        return bool(self.speed_gts and self.max_speed_gts and self.speed_gts < self.max_speed_gts)


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
    # Node time (ns) its slow-cadence normalized counters (SLOW_METRICS: the FEC's, on optics
    # rounds) were read, carried with them between rounds: their rates span two such reads.
    slow_read_ns: int | None = None
    # Node time (ns) mlxlink read the corrected bits it brings (collectors/normalize.py
    # MLXLINK_MAP: only where ethtool -S counts none), carried between its reads; None: the
    # link's corrected bits, if any, are ethtool's, read with the frame.
    mlxlink_read_ns: int | None = None
    # The RDMA port's GID table (sysfs ``gids/N`` + ``gid_attrs``, or ``ibv_devinfo -v``):
    # None when it was not read, () when read and empty. Slow cadence.
    gids: tuple[GidEntry, ...] | None = None
    # IPv4/IPv6 addresses of the netdev (``ip -j addr``, ``ifconfig``): None when not read.
    addresses: tuple[str, ...] | None = None
    # An RDMA port's own states and its subnet manager, as sysfs ``ports/N/state``,
    # ``phys_state`` and ``sm_lid`` say (``state`` above may be the netdev's operstate).
    # None when not read. ``port_state``: "ACTIVE", "INIT", "ARMED", "DOWN", ...
    port_state: str | None = None
    phys_state: str | None = None  # "LinkUp", "Polling", "Disabled", ...
    sm_lid: int | None = None  # 0 on RoCE ports by design; on InfiniBand: no SM reached it
    # True when the probe sent only the first populated entries of a long GID table
    # (``gids`` is then incomplete: what it lacks cannot be said missing).
    gids_truncated: bool = False
    # The RDMA device's sysfs node_type: "CA" (InfiniBand, RoCE), "RNIC" (iWARP); None
    # when not read. iWARP has no RoCE GIDs to judge.
    node_type: str | None = None
    # An RDMA port's lanes as its sysfs ``rate`` says ("400 Gb/sec (4X NDR)" -> 4); None
    # when not read or not said (netdevs, Prometheus sources).
    width: int | None = None
    # The cable's own health (issue 33; slow cadence, collectors/optics.py): None when not
    # read (no module, a DAC without diagnostics, a tool missing or refused).
    module: ModuleDiag | None = None
    fec: FecState | None = None
    # The NIC's devlink health reporters that belong to this port's device: None when not
    # read, () when read and the device has none.
    health: tuple[HealthReporter, ...] | None = None


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
    # Every identity of the host where it has more than one domain (two controllers on
    # Linux, one bus per receptacle group on macOS): a peer may report any of them.
    # self_uid is the first; () when the source gave one identity only.
    domain_uids: tuple[str, ...] = ()


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
class ExoRunner:
    """One runner of an exo model instance: the node it runs on, its layers, its status."""

    runner_id: str
    node_id: str | None = None
    status: str | None = None  # exo's runner status tag: RunnerReady, RunnerRunning, ...
    shard: str | None = None  # PipelineShardMetadata | TensorShardMetadata | ...
    start_layer: int | None = None
    end_layer: int | None = None  # exclusive
    n_layers: int | None = None
    device_rank: int | None = None
    world_size: int | None = None


@dataclass(slots=True)
class ExoInstance:
    """One model instance of an exo cluster and where its runners are placed."""

    instance_id: str
    kind: str | None = None  # MlxRingInstance | MlxJacclInstance
    model: str | None = None
    runners: list[ExoRunner] = field(default_factory=list)


@dataclass(slots=True)
class ExoNode:
    """One node of an exo cluster as the cluster state names it."""

    node_id: str
    name: str | None = None  # friendlyName
    chip: str | None = None  # chipId
    ram_total_bytes: int | None = None
    ram_available_bytes: int | None = None


@dataclass(slots=True)
class ExoCluster:
    """What exo's ``GET /state`` says: nodes, model instances and their runners' placement."""

    nodes: list[ExoNode] = field(default_factory=list)
    instances: list[ExoInstance] = field(default_factory=list)
    # Instances and nodes the state held beyond what is kept (a bounded view).
    more_nodes: int = 0
    more_instances: int = 0


# One latency histogram of an inference server: (upper bounds, +Inf last when the server
# wrote it; cumulative bucket counts; count; sum). The parser fills it, the core's
# inference rates read it.
Histogram: TypeAlias = tuple[tuple[float, ...], tuple[float, ...], float, float]


@dataclass(slots=True)
class InferenceSample:
    """One inference server's /metrics at one instant (cumulative counters kept raw)."""

    url: str
    server: str | None = None  # vllm | llamacpp | sglang | tgi | exo | mlx_lm
    model: str | None = None
    generated_tokens_total: float | None = None
    prompt_tokens_total: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    preemptions_total: float | None = None  # vLLM's num_preemptions_total (others: None)
    histograms: dict[str, Histogram] = field(default_factory=dict)  # by histogram name
    error: str | None = None
    # Values the page had but that could not be used (NaN, ±Inf, overflow), one line each;
    # the page itself was read (``error`` says when it was not).
    warnings: list[str] = field(default_factory=list)
    # Local monotonic seconds at which the server produced this reading (mid-request).
    # /metrics is polled apart from the frames, so rates divide by the time between two
    # readings, not between the frames that happened to carry them.
    read_s: float | None = None
    # Why no token rate can be had from this server (it exposes no counter a passive
    # monitor can read), one line naming the server; None for servers with counters.
    rate_unknown: str | None = None
    # An exo cluster's state (server "exo"); None for every other server.
    cluster: ExoCluster | None = None


@dataclass(slots=True)
class SectionStatus:
    """How one probe section fared: ``ok``, ``missing`` (tool absent), ``timeout``, ``error``."""

    kind: str
    subject: str | None
    status: str
    read_ns: int | None = None
    detail: str | None = None


@dataclass(slots=True, frozen=True)
class VersionRead:
    """One software version as a host's tool reported it (issue 15), or why it is unknown.

    ``value`` None is unknown, never "fine": ``note`` says why (the tool is missing, it
    timed out, the package is not installed, no process has the library loaded).
    """

    value: str | None  # as the source printed it, cleaned and bounded
    source: str  # where it was read: "uname -r", "dpkg-query", "rpm", "ofed_info -s", ...
    note: str | None = None


@dataclass(slots=True, frozen=True)
class SoftwareVersions:
    """The software stack of one host, read at slow cadence (issue 15).

    A field is None when its section never came (a recording older than these sections,
    ``gpu=off`` for the NVIDIA fields); the NIC driver and firmware stay per link
    (:attr:`LinkSample.driver_version`, :attr:`LinkSample.firmware`).
    """

    kernel: VersionRead | None = None  # uname -r
    rdma_core: VersionRead | None = None  # the rdma-core package (dpkg-query or rpm)
    ofed: VersionRead | None = None  # MLNX_OFED / DOCA-OFED (ofed_info -s)
    nvidia_driver: VersionRead | None = None  # /proc/driver/nvidia/version
    nccl: VersionRead | None = None  # the NCCL that running processes have mapped


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
    # Node time (ns) it was read: on slow ticks, carried between (its rate spans two reads).
    cpu_throttle_read_ns: int | None = None
    # The last statuses of ``sections``: those of the slow sections carried into the
    # frame, the very objects of the sample before while those sections stayed the same
    # (shared: read, never changed). None: not known to be carried.
    carried_sections: list[SectionStatus] | None = field(default=None, repr=False, compare=False)
    # Thunderbolt domain (issue 14): None when the host has none or it was not read.
    thunderbolt: ThunderboltInfo | None = None
    # macOS hosts (issue 14): None on every other host.
    macos: MacosInfo | None = None
    # Which probe sent the frame: "sh", or "python <version> <executable>" (the fast one);
    # None when the frame does not say (older recordings, Prometheus sources).
    probe: str | None = None
    # Software versions (issue 15): None when no version section came (older recordings).
    versions: SoftwareVersions | None = None
    # The packet filter's ruleset, or why it was not read (issue 15; slow cadence): None
    # when the frame has no firewall section (older probes, recordings, Prometheus).
    firewall: FirewallState | None = None

    def share_names(self, one: Callable[[str], str]) -> None:
        """Put ``one(name)`` for each name of its links: their keys, ids, netdevs, RDMA
        devices, link layers and states (fabtop.core.pipeline.Names: the one object of
        that text, tick after tick)."""
        for link in self.links.values():
            link.id = one(link.id)
            if link.netdev is not None:
                link.netdev = one(link.netdev)
            if link.rdma_device is not None:
                link.rdma_device = one(link.rdma_device)
            if link.link_layer is not None:
                link.link_layer = one(link.link_layer)
            if link.state is not None:
                link.state = one(link.state)
        self.links = {one(k): v for k, v in self.links.items()}
