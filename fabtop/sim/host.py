"""A simulated host: its devices' state per grid cell, and the probe frame it would print.

The text of each section (sysfs values, ethtool, mlnx_qos, nvidia-smi) is rendered by
:mod:`fabtop.sim.host_text`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from collectors.frames import Frame, Section, render_frame
from collectors.structured import StructuredEncoder
from fabtop.sim import firewall, host_text
from fabtop.sim.bench import CNP_PER_MARK, Bench, Endpoint, PortLoad
from fabtop.sim.episodes import OPTIC_HEALTHY_BER, Mods, PortMods
from fabtop.sim.exo import exo_state_text
from fabtop.sim.gpu import SimGpu
from fabtop.sim.inference import VllmServer, neighbour_share
from fabtop.sim.mac import MacState, mac_frame
from fabtop.sim.mac_ids import CABLES
from fabtop.sim.nic import IbPort, Mlx5Port, PlainNetdev, PortTraffic

if TYPE_CHECKING:
    from fabtop.sim.fabric import Fabric


@dataclass(slots=True)
class SimHostConfig:
    """One simulated host; every field can be overridden to build a single-fault fabric."""

    name: str
    roce_ports: int = 2
    link_gbps: int = 100
    mtu: int = 9000
    pfc_prios: tuple[int, ...] = (3,)
    rdma_prio: int = 3  # priority the RoCE traffic is classified to (DSCP 26 -> 3)
    trust: str = "dscp"
    ecn: bool = True  # DCQCN (roce_np / roce_rp enabled)
    global_pause: bool = False
    firmware: str = "22.39.2048"
    pcie_width: int = 16
    pcie_max_width: int = 16
    pcie_gts: float = 16.0
    pcie_max_gts: float = 16.0
    nic_temp_c: float = 55.0
    rdma_share: float = 0.97
    ib_port: bool = False  # a ConnectX-6 HDR port mlx5_{roce_ports}, back to back
    tb_link: bool = False  # thunderbolt0 (thunderbolt-net)
    gpu_profile: str = "h100"
    gpus: int = 2
    inference_url: str | None = None
    # exo's /state (issue 14), off unless asked for: ``--demo-scenario exo_cluster``.
    exo_url: str | None = None
    exo_peers: tuple[str, ...] = ()  # the other nodes of its exo cluster
    model: str = "meta-llama/Llama-3.1-70B-Instruct"
    kernel: str = "6.8.0-45-generic"
    # Software versions (issue 15; text in host_text.version_sections). None: not
    # installed (rdma-core), no ofed_info (OFED), no process with NCCL loaded (nccl).
    rdma_core: str | None = "2307mlnx47-1.2310119"
    ofed: str | None = "MLNX_OFED_LINUX-23.10-1.1.9.0"
    nvidia_driver: str = "580.95.05"
    nccl: str | None = "2.21.5"
    uptime_s: float = 86400.0 * 12
    reload_at: tuple[float, ...] = ()  # driver reloads: NIC counters restart from 0
    silent_after: float | None = None  # the host stops answering from this time on
    # A subnet manager runs on the IB fabric: the IB port goes ACTIVE with an SM LID.
    # Without one it stays INIT (physically LinkUp) with SM LID 0 and carries nothing.
    ib_sm: bool = True
    # The addresses of each RoCE netdev in the order they were added, each a GID pair
    # (RoCE v1, v2) after the two default link-local ones: "ipv4", or "ll6" (a second
    # link-local IPv6 address, as NetworkManager's stable-privacy mode adds one).
    roce_addrs: tuple[str, ...] = ("ipv4",)
    firewall: str = "docker"  # its nft ruleset: fabtop.sim.firewall.PROFILES, or nft JSON
    # Its Thunderbolt bus (with tb_link): own and far identities (fabtop.sim.tb_ids), how
    # the cable trained, and receive errors on thunderbolt0 (a bad cable).
    tb_self_uid: str | None = None
    tb_peer_uid: str | None = None
    tb_peer_name: str | None = None
    tb_gbps_per_lane: float = 20.0
    tb_lanes: int = 2
    tb_generation: int = 4
    tb_errors_per_s: float = 0.0
    # A Mac Studio (issue 14): prints the macOS probe's sections (fabtop/sim/mac.py).
    macos: bool = False
    mac_cables: tuple[tuple[str, int, str, int], ...] = CABLES

    def netdev(self, i: int) -> str:
        """Netdev name of RoCE port ``i`` (PCI bus 0x41, function i)."""
        return f"enp65s0f{i}np{i}"

    @property
    def roce_mtu(self) -> int:
        """Active RoCE MTU: the largest IB MTU that fits the netdev MTU and RoCE headers."""
        for m in (4096, 2048, 1024, 512):
            if self.mtu >= m + 100:
                return m
        return 256


# How far one direction of a link runs above the healthy rate and the other below it
# (the smallest and the largest share; each link draws its own from the seed).
FLOW_LEAD = (0.03, 0.08)
TX, RX = 0, 1  # the direction keys of SimHost._flow


def _add_test_load(tr: PortTraffic, load: PortLoad, cap: float, ecn: bool) -> None:
    """A test's traffic on a RoCE port: the production traffic yields what the test
    takes (the port's total stays under its capacity), the test's pauses and drops add
    to the episode's."""
    for side in ("tx", "rx"):
        test = getattr(load, f"rdma_{side}") + getattr(load, f"ip_{side}")
        ambient = getattr(tr, f"rdma_{side}") + getattr(tr, f"eth_{side}")
        keep = min(1.0, max(cap - test, 0.0) / ambient) if ambient > 0 else 1.0
        setattr(
            tr, f"rdma_{side}", getattr(tr, f"rdma_{side}") * keep + getattr(load, f"rdma_{side}")
        )
        setattr(tr, f"eth_{side}", getattr(tr, f"eth_{side}") * keep + getattr(load, f"ip_{side}"))
    tr.rx_pause_frac = max(tr.rx_pause_frac, load.rx_pause_frac)
    tr.rx_discard_frac = max(tr.rx_discard_frac, load.rx_discard_frac)
    tr.tx_retrans_frac = max(tr.tx_retrans_frac, load.tx_retrans_frac)
    if ecn and load.ecn_marked_pps > tr.ecn_marked_pps:
        tr.ecn_marked_pps = load.ecn_marked_pps
        tr.cnp_sent_pps = load.ecn_marked_pps * CNP_PER_MARK
    if ecn:
        tr.cnp_handled_pps = max(tr.cnp_handled_pps, load.cnp_handled_pps)


def _plus_test(
    bench: Bench, ep: Endpoint, g: float, dt: float, tx: float, rx: float, cap: float
) -> tuple[float, float]:
    """A plain netdev's (or IB port's) traffic in one cell with the test's added: the
    production traffic yields what the test takes."""
    load = bench.port_load(ep, g, dt)
    if load is None:
        return tx, rx
    out = []
    for ambient, test in ((tx, load.rdma_tx + load.ip_tx), (rx, load.rdma_rx + load.ip_rx)):
        keep = min(1.0, max(cap - test, 0.0) / ambient) if ambient > 0 else 1.0
        out.append(ambient * keep + test)
    return out[0], out[1]


def _taken(load: PortLoad | None, cap: float) -> float:
    """The share of a port's line (``cap`` bytes/s) the test's load takes, the busier
    direction's: what slows the host's inference server (sim/inference.py)."""
    if load is None or cap <= 0:
        return 0.0
    return max(load.rdma_rx + load.ip_rx, load.rdma_tx + load.ip_tx) / cap


def _mix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def noise(seed: int, *keys: int) -> float:
    """Deterministic noise in [-1, 1) from integer keys (splitmix64)."""
    h = seed
    for k in keys:
        h = _mix(h ^ (k & 0xFFFFFFFFFFFFFFFF))
    return (h >> 11) / float(1 << 52) - 1.0


class SimHost:
    """One host of a :class:`Fabric`; ``frame(t)`` is the text its probe would print."""

    def __init__(self, cfg: SimHostConfig, fabric: Fabric, index: int) -> None:
        self.cfg = cfg
        self.fabric = fabric
        self.index = index
        self.name = cfg.name
        self._slow_sent = False
        self.reset_state()

    def reset_state(self) -> None:
        """Every device back to its state at t=0 (the fabric replays from the start)."""
        cfg, index, seed = self.cfg, self.index, self.fabric.seed
        scale = 0.3 + 0.35 * (noise(seed, index, 1) + 1.0)
        # The PHY's corrected bits are listed on a fabric where an optic degrades.
        stat = any(ep.kind == "optic_degrade" for ep in self.fabric.episodes)
        self.ports = [
            Mlx5Port(
                cfg.pfc_prios,
                cfg.rdma_prio,
                cfg.roce_mtu,
                scale,
                cfg.global_pause,
                phy_statistical=stat,
            )
            for _ in range(cfg.roce_ports)
        ]
        self.port_up = [True] * cfg.roce_ports
        self.carrier_changes = [2] * cfg.roce_ports
        self.ib = IbPort(scale) if cfg.ib_port else None
        self.tb = PlainNetdev(pkt=9000.0) if cfg.tb_link else None
        self.mgmt = PlainNetdev(igb=True)
        self.lo = PlainNetdev(pkt=4000.0)
        self.gpus = [
            SimGpu(i, cfg.gpu_profile, _uuid(seed, index, i), _gpu_bus(cfg.gpu_profile, i))
            for i in range(cfg.gpus)
        ]
        self.server = VllmServer(cfg.inference_url, cfg.model, 0.0) if cfg.inference_url else None
        self.ecn_live = cfg.ecn
        self.nic_temp = [cfg.nic_temp_c] * cfg.roce_ports
        self.mac = MacState(cfg.name, cfg.mac_cables) if cfg.macos else None

    # --- simulation ---------------------------------------------------------------------------

    def restart_probe(self) -> None:
        """A new probe session: its first frame carries the slow sections again."""
        self._slow_sent = False

    def answers(self, t: float) -> bool:
        """False once the host has stopped answering."""
        return self.cfg.silent_after is None or t < self.cfg.silent_after

    def reload_driver(self) -> None:
        """Driver reload: every NIC counter restarts from 0, netdevs come back fresh."""
        for p in self.ports:
            p.zero()
        for d in (self.ib, self.tb, self.mgmt):
            if d is not None:
                d.zero()
        self.carrier_changes = [1] * len(self.ports)

    def step(self, g: float, dt: float, k: int, mods: Mods) -> None:
        """Set every device's state and counter growth for the cell [g, g + dt)."""
        cfg, seed, fab = self.cfg, self.fabric.seed, self.fabric
        if any(g <= r < g + dt for r in cfg.reload_at):
            self.reload_driver()
        tf = mods.token_factor
        self.ecn_live = cfg.ecn and cfg.name not in mods.ecn_off
        line = cfg.link_gbps * 1e9 / 8
        cap = line * 0.97 * self.pcie_share()
        bench = fab.bench
        busy = 0.0  # the largest share of a data port's line the test's loads take
        for i, port in enumerate(self.ports):
            pm = mods.ports.get((cfg.name, i)) or PortMods()
            load = bench.port_load(Endpoint(cfg.name, "roce", i), g, dt)
            busy = max(busy, _taken(load, cap))
            self.carrier_changes[i] += pm.carrier_changes
            port.eth.bump("link_down_events_phy", pm.link_down_events)
            port.eth.bump("tx_pause_storm_warning_events", pm.storm_warnings)
            if pm.retransmits:
                for name, n in (
                    ("local_ack_timeout_err", 3),
                    ("roce_adp_retrans", 7),
                    ("roce_adp_retrans_to", 1),
                    ("out_of_sequence", 2),
                    ("packet_seq_err", 1),
                ):
                    port.hw.bump(name, n * pm.retransmits)
            up = not pm.down
            self.port_up[i] = up
            base = fab.healthy_port_gbps * 1e9 / 8 * tf
            tx = min(base * self._flow(k, i, TX) * pm.tx_scale, cap * (1.0 - pm.rx_pause_frac))
            rx = min(base * self._flow(k, i, RX) * pm.rx_scale, cap)
            share = cfg.rdma_share
            ecn = self.ecn_live
            tr = PortTraffic(
                up=up,
                rdma_tx=tx * share,
                rdma_rx=rx * share,
                eth_tx=tx * (1.0 - share) + 40_000.0 * min(pm.tx_scale, 1.0),
                eth_rx=rx * (1.0 - share) + 40_000.0 * min(pm.rx_scale, 1.0),
                tx_pause_frac=pm.tx_pause_frac,
                rx_pause_frac=pm.rx_pause_frac,
                ecn_marked_pps=pm.ecn_marked_pps if ecn else 0.0,
                cnp_sent_pps=pm.cnp_sent_pps if ecn else 0.0,
                cnp_handled_pps=pm.cnp_handled_pps if ecn else 0.0,
                switch_drop_frac=pm.switch_drop_frac,
            )
            if load is not None and up:
                _add_test_load(tr, load, cap, ecn)
            port.apply(tr)
            if up:  # the PHY corrects bits at line rate, traffic or not
                ber = OPTIC_HEALTHY_BER if pm.pre_fec_ber is None else pm.pre_fec_ber
                port.eth.rate("rx_corrected_bits_phy", ber * cfg.link_gbps * 1e9)
            self.nic_temp[i] = cfg.nic_temp_c + 3.0 * min(tf, 1.0) + 0.4 * noise(seed, k, i, 7)
        if self.ib is not None:
            ib = 200e9 / 8 * 0.35 * tf
            busy = max(busy, _taken(bench.port_load(Endpoint(cfg.name, "ib"), g, dt), 200e9 / 8))
            ib_tx, ib_rx = _plus_test(
                bench,
                Endpoint(cfg.name, "ib"),
                g,
                dt,
                ib * self._flow(k, 11, TX),
                ib * self._flow(k, 11, RX),
                200e9 / 8,
            )
            self.ib.apply(cfg.ib_sm, ib_tx, ib_rx, 0.01 * tf)
        if self.tb is not None:
            tbr = 1.0e9 * tf
            tb_cap = cfg.tb_gbps_per_lane * cfg.tb_lanes * 1e9 / 8
            busy = max(busy, _taken(bench.port_load(Endpoint(cfg.name, "tb"), g, dt), tb_cap))
            tb_tx, tb_rx = _plus_test(
                bench,
                Endpoint(cfg.name, "tb"),
                g,
                dt,
                tbr * self._flow(k, 12, TX, 0.1),
                tbr * self._flow(k, 12, RX, 0.1),
                tb_cap,
            )
            self.tb.apply(True, tb_tx, tb_rx)
            if cfg.tb_errors_per_s:
                self.tb.netdev.rate("rx_errors", cfg.tb_errors_per_s)
        mg_tx, mg_rx = _plus_test(
            bench,
            Endpoint(cfg.name, "mgmt"),
            g,
            dt,
            60_000.0,
            150_000.0 * (1.0 + 0.2 * noise(seed, self.index, k, 13)),
            1e9 / 8,
        )
        self.mgmt.apply(True, mg_tx, mg_rx)
        lo_tx, lo_rx = _plus_test(bench, Endpoint(cfg.name, "lo"), g, dt, 2.0e6, 2.0e6, 5e9)
        self.lo.apply(True, lo_tx, lo_rx)
        if self.mac is not None:
            self.mac.step(tf, mods.mac.get(cfg.name, set()))
        for gpu in self.gpus:
            heat = mods.gpu_heat_c.get((cfg.name, gpu.index), 0.0)
            gpu.step(min(tf, 1.0), heat, noise(seed, self.index, k, 20 + gpu.index), dt)
        if self.server is not None:
            tokens = fab.healthy_tokens_per_s * tf * (1.0 + 0.03 * noise(seed, k, 99))
            tokens *= neighbour_share(busy)
            self.server.step(tokens, fab.healthy_tokens_per_s, dt)

    def pcie_share(self) -> float:
        """The share of the line rate the NIC's PCIe link can carry (1.0: all of it)."""
        cfg = self.cfg
        width = cfg.pcie_width / cfg.pcie_max_width
        return min(1.0, width * (cfg.pcie_gts / cfg.pcie_max_gts) * 1.6)

    def _flow(self, k: int, link: int, direction: int, jitter: float = 0.06) -> float:
        """How much of the healthy rate one direction of one link carries in cell ``k``.

        Each direction has its own flow mix: on every link one direction leads the other by
        a fixed share (a prefill node pushes KV cache one way, the ring all-reduce runs both),
        and each has its own jitter per cell, so received never mirrors sent exactly, as it
        does not on a real fabric.
        """
        seed = self.fabric.seed
        n = noise(seed, self.index, link, 31)
        lead = math.copysign(FLOW_LEAD[0] + (FLOW_LEAD[1] - FLOW_LEAD[0]) * abs(n), n)
        bias = 1.0 + lead if direction == TX else 1.0 - lead
        return bias * (1.0 + jitter * noise(seed, self.index, k, link, direction))

    def commit(self, dt: float) -> None:
        """Advance every counter to the end of the current cell."""
        for p in self.ports:
            p.commit(dt)
        for d in (self.ib, self.tb, self.mgmt, self.lo):
            if d is not None:
                d.commit(dt)
        if self.mac is not None:
            self.mac.commit(dt)

    def netdevs(self) -> list[str]:
        """Physical netdevs the probe runs ``ethtool`` on."""
        names = [self.cfg.netdev(i) for i in range(self.cfg.roce_ports)]
        if self.tb is not None:
            names.append("thunderbolt0")
        return [*names, "eno1"]

    def frame(
        self,
        t: float,
        interval: float | None = None,
        only: Sequence[str] | None = None,
        encoder: StructuredEncoder | None = None,
    ) -> str:
        """Wire text of this host's probe frame at simulation time ``t`` (see docs/PROBE.md).

        ``interval`` and ``only`` stand in for a second probe run with its own
        ``interval_ms`` and ``ifaces=`` (focus mode): its frames carry only those netdevs'
        ``ethtool -S`` and no slow or GPU sections. Counters grow linearly inside a grid
        cell, so any ``t`` at or after the latest grid time reads exact values.
        With an ``encoder`` (one per stream), counters go by position against schemas
        sent once, as the fast probe sends them.
        """
        if self.mac is not None:
            return mac_frame(self, self.mac, t, interval, only)
        fab = self.fabric
        fab.at(t)
        frac = t - fab.grid_t
        interval = interval or fab.interval_s
        seq = round(t / interval)
        clock_s = fab.base_epoch_s + t
        clock_ns = round(clock_s * 1e9)
        slow_every = max(1, round(fab.slow_every_s / interval)) if fab.slow_every_s else 1
        if only is None:
            slow = not self._slow_sent or seq % slow_every == 0
            self._slow_sent = True
        else:
            slow = False
        sections = [
            Section(
                "probe",
                None,
                clock_ns,
                "ok",
                None,
                f"interval_ms {int(interval * 1000)}\nslow {int(slow)}\nimpl sim",
            ),
            Section(
                "sysnet",
                None,
                clock_ns,
                "ok",
                None,
                "\n".join(f"{p} {v}" for p, v in host_text.sysnet_lines(self, frac)),
            ),
            Section(
                "sysib",
                None,
                clock_ns,
                "ok",
                None,
                "\n".join(f"{p} {v}" for p, v in host_text.sysib_lines(self, frac, False)),
            ),
        ]
        if slow and self.cfg.roce_ports:  # GID tables: slow, as the probes send them
            gid = [
                ln for i in range(self.cfg.roce_ports) for ln in host_text.roce_gid_lines(self, i)
            ]
            sections.append(
                Section(
                    "sysib_slow", None, clock_ns, "ok", None, "\n".join(f"{p} {v}" for p, v in gid)
                )
            )
        for nd in self.netdevs():
            if only is not None and nd not in only:
                continue
            status, detail, text = host_text.ethtool_s(self, nd, frac)
            sections.append(Section("ethtool_S", nd, clock_ns, status, detail, text))
        if slow:
            for nd in self.netdevs():
                text = host_text.ethtool_i(self.cfg, nd)
                sections.append(Section("ethtool_i", nd, clock_ns, "ok", None, text))
            qos = host_text.mlnx_qos(self.cfg)
            for i in range(self.cfg.roce_ports):
                sections.append(Section("mlnx_qos", self.cfg.netdev(i), clock_ns, "ok", None, qos))
            for kind, subject, status, detail, text in host_text.version_sections(self.cfg):
                sections.append(Section(kind, subject, clock_ns, status, detail, text))
            sections.append(firewall.section(self.cfg.firewall, clock_ns))
            sections.append(Section("ip_addr", None, clock_ns, "ok", None, host_text.ip_addr(self)))
            tb = host_text.systb_lines(self)
            if tb:
                sections.append(
                    Section(
                        "systb_slow",
                        None,
                        clock_ns,
                        "ok",
                        None,
                        "\n".join(f"{p} {v}" for p, v in tb),
                    )
                )
        if self.gpus and only is None:
            # A background reader: its latest line arrived a little before the tick.
            read_ns = clock_ns - 120_000_000
            text = host_text.gpu_text(self, read_ns / 1e9)
            sections.append(Section("gpu_nvidia", None, read_ns, "ok", None, text))
        uptime = self.cfg.uptime_s + t
        frame = Frame(seq, clock_ns, uptime, clock_s, sections)
        return render_frame(encoder.encode(frame) if encoder is not None else frame)

    def metrics_text(self) -> str:
        """``/metrics`` of this host's inference server (empty when it runs none)."""
        return self.server.metrics_text() if self.server is not None else ""

    def exo_text(self, t: float) -> str:
        """exo's ``/state`` as this host's exo answers it at ``t`` (its cluster: it, its peers)."""
        return exo_state_text([self.cfg.name, *self.cfg.exo_peers], t)


def _uuid(seed: int, host: int, gpu: int) -> str:
    h = f"{_mix(seed * 1000 + host * 16 + gpu):016x}{_mix(host * 7 + gpu + 1):016x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _gpu_bus(profile: str, i: int) -> str:
    bus = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)[i % 8] if profile == "h100" else 1 + i
    return f"00000000:{bus:02X}:00.0"
