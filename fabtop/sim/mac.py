"""A simulated Mac Studio: the text the macOS probe (collectors/probe_darwin.zsh) prints.

Every section is rendered in the format of a public capture (tests/fixtures/darwin,
SOURCES.md), through the same parsers as a real Mac's: ``netstat -ibdn`` rows,
``system_profiler SPThunderboltDataType -json`` buses (the M3 Ultra Mac Studio capture's
bus objects, one per receptacle, with the demo's domain UUIDs of fabtop/sim/mac_ids.py),
``networksetup -listallhardwareports`` blocks, ``ifconfig`` blocks, ``ibv_devinfo`` device
blocks, ``rdma_ctl status`` and a ``macmon pipe`` line. Assembled, not captured: the
mapping ``Thunderbolt N`` -> ``en(N+1)`` follows exo's note that a Mac Studio's RDMA ports
are en2..en7 (exo-explore/exo#1390); ``ibv_devinfo -v``'s GID lines follow rdma-core's
format (documented only on macOS, see collectors/parsers/macos_rdma.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from collectors.frames import Frame, Section, render_frame
from fabtop.sim.mac_ids import CABLES, MAC_DOMAINS, MAC_MODEL, peers_of
from fabtop.sim.nic import PlainNetdev

if TYPE_CHECKING:
    from fabtop.sim.host import SimHost

RECEPTACLES = range(1, 7)
NETSTAT_HEADER = (
    "Name  Mtu   Network       Address            Ipkts Ierrs     Ibytes    Opkts Oerrs"
    "     Obytes  Coll Drop"
)
# The demo's Macs run their slow tools every 10 s (the probe's slow_ticks), so a change
# of address or bridge shows within an episode of the cycle; the default is a minute.
MAC_SLOW_S = 10.0
# Conditions an episode sets on a Mac (fabtop/sim/episodes.py, Mods.mac).
NO_IPV4, BRIDGE_LOOP, NO_DEVICE, TB4 = "no_ipv4", "bridge_loop", "no_device", "tb4"


def tb_dev(receptacle: int) -> str:
    """The BSD name of Thunderbolt receptacle N on a Mac Studio (en2..en7)."""
    return f"en{receptacle + 1}"


@dataclass(slots=True)
class MacState:
    """A Mac's netdevs and what the active episodes make of it."""

    name: str
    cables: tuple[tuple[str, int, str, int], ...] = CABLES
    tb: dict[int, PlainNetdev] = field(default_factory=dict)
    conditions: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.tb = {r: PlainNetdev(pkt=9000.0) for r in self.peers}

    @property
    def peers(self) -> dict[int, tuple[str, str]]:
        return peers_of(self.name, self.cables)

    def step(self, tokens: float, conditions: set[str]) -> None:
        self.conditions = frozenset(conditions)
        for r, d in self.tb.items():
            rate = 2.2e9 * tokens * (1.0 + 0.05 * r)
            d.apply(True, rate, rate * 0.97)

    def commit(self, dt: float) -> None:
        for d in self.tb.values():
            d.commit(dt)


def _ipv4(host: str, receptacle: int) -> str:
    return f"169.254.{10 + int(host[-1]) if host[-1].isdigit() else 10}.{receptacle}"


def netstat_text(host: SimHost, mac: MacState, frac: float) -> str:
    rows = [NETSTAT_HEADER]

    def row(name: str, mtu: int, link: int, addr: str, d: PlainNetdev) -> str:
        v = dict(d.netdev.items(frac))
        return (
            f"{name:<5} {mtu:<5} <Link#{link}>{'':<4}{addr:<17} {v['rx_packets']:>8} "
            f"{v['rx_errors']:>5} {v['rx_bytes']:>10} {v['tx_packets']:>8} "
            f"{v['tx_errors']:>5} {v['tx_bytes']:>10} {0:>5} {v['tx_dropped']:>3}"
        )

    rows.append(row("lo0", 16384, 1, "", host.lo))
    rows.append(row("en0", 1500, 4, "a8:66:7f:dd:ee:0" + host.name[-1], host.mgmt))
    for r, d in sorted(mac.tb.items()):
        rows.append(row(tb_dev(r), 1500, 10 + r, f"36:04:bf:40:05:0{r}", d))
    return "\n".join(rows)


def _bus(host: str, r: int, peer: tuple[str, str] | None, tb4: bool) -> dict[str, object]:
    """One bus object as the Mac Studio capture prints it (connected, or empty)."""
    speed = "40 Gb/s" if tb4 else "80 Gb/s"
    bus: dict[str, object] = {
        "_name": f"thunderboltusb4_bus_{r - 1}",
        "device_name_key": "Mac Studio",
        "domain_uuid_key": MAC_DOMAINS[host][r],
        "receptacle_1_tag": {
            "current_speed_key": speed if peer else ("Up to 40 Gb/s" if tb4 else "Up to 120 Gb/s"),
            "link_status_key": "0x2" if peer else "0x100",
            "receptacle_id_key": str(r),
            "receptacle_status_key": (
                "receptacle_connected" if peer else "receptacle_no_devices_connected"
            ),
        },
        "route_string_key": "0",
        "switch_uid_key": f"0x05AC714E4ABE981{r - 1}",
        "vendor_name_key": "Apple Inc.",
    }
    if peer is not None:
        far, uid = peer
        bus["_items"] = [
            {
                "_name": "Mac Studio",
                "device_id_key": "0xA",
                "device_name_key": MAC_MODEL.get(far, "Mac15,14"),
                "domain_uuid_key": uid,
                "services_title": [
                    {
                        "_name": "service_ip",
                        "protocol_id_key": 1,
                        "protocol_revision_key": 1,
                        "protocol_version_key": 1,
                        "service_uuid_key": "F013163E-D041-44F6-B752-5236E1FEC7CD",
                    }
                ],
                "vendor_id_key": "0x0A27",
                "vendor_name_key": "Apple Inc.",
            }
        ]
    return dict(sorted(bus.items()))


def sp_thunderbolt_text(host: str, mac: MacState) -> str:
    peers = mac.peers
    buses = [_bus(host, r, peers.get(r), TB4 in mac.conditions) for r in reversed(RECEPTACLES)]
    return json.dumps({"SPThunderboltDataType": buses}, indent=2, separators=(",", " : "))


def hwports_text() -> str:
    blocks = [("Ethernet", "en0", "a8:66:7f:dd:ee:ff"), ("Wi-Fi", "en1", "8c:85:90:90:6d:26")]
    blocks += [(f"Thunderbolt {r}", tb_dev(r), f"36:04:bf:40:05:0{r}") for r in RECEPTACLES]
    blocks.append(("Thunderbolt Bridge", "bridge0", "36:04:bf:40:05:00"))
    out = [f"Hardware Port: {p}\nDevice: {d}\nEthernet Address: {a}\n" for p, d, a in blocks]
    return "\n".join(out) + "\nVLAN Configurations\n==================="


def ifconfig_text(host: str, mac: MacState) -> str:
    out = [
        "lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384",
        "\toptions=1203<RXCSUM,TXCSUM,TXSTATUS,SW_TIMESTAMP>",
        "\tinet 127.0.0.1 netmask 0xff000000",
        "\tinet6 ::1 prefixlen 128 ",
        "en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500",
        "\toptions=400<CHANNEL_IO>",
        f"\tinet 10.0.0.{20 + int(host[-1])} netmask 0xffffff00 broadcast 10.0.0.255",
        "\tmedia: autoselect",
        "\tstatus: active",
    ]
    cabled = set(mac.peers)
    for r in RECEPTACLES:
        d = tb_dev(r)
        up = r in cabled
        flags = (
            "8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST>"
            if up
            else "8822<BROADCAST,SMART,SIMPLEX,MULTICAST>"
        )
        out += [
            f"{d}: flags={flags} mtu 1500",
            "\toptions=460<TSO4,TSO6,CHANNEL_IO>",
            f"\tether 36:04:bf:40:05:0{r}",
        ]
        if up:
            out.append(
                f"\tinet6 fe80::3404:bfff:fe40:50{r}%{d} prefixlen 64 secured scopeid 0x{r + 10:x} "
            )
            if not (NO_IPV4 in mac.conditions and r == min(cabled)):
                out.append(f"\tinet {_ipv4(host, r)} netmask 0xffff0000 broadcast 169.254.255.255")
        out += ["\tmedia: autoselect <full-duplex>", f"\tstatus: {'active' if up else 'inactive'}"]
    members = [tb_dev(r) for r in sorted(cabled)] if BRIDGE_LOOP in mac.conditions else []
    out += [
        "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500",
        "\toptions=63<RXCSUM,TXCSUM,TSO4,TSO6>",
        "\tether 36:04:bf:40:05:00",
        "\tConfiguration:",
        "\t\tid 0:0:0:0:0:0 priority 0 hellotime 0 fwddelay 0",
        "\t\tmaxage 0 holdcnt 0 proto stp maxaddr 100 timeout 1200",
        "\t\troot id 0:0:0:0:0:0 priority 0 ifcost 0 port 0",
        "\t\tipfilter disabled flags 0x0",
    ]
    for i, m in enumerate(members):
        out += [
            f"\tmember: {m} flags=3<LEARNING,DISCOVER>",
            f"\t        ifmaxaddr 0 port {11 + i} priority 0 path cost 0",
        ]
    out += [
        "\tnd6 options=201<PERFORMNUD,DAD>",
        "\tmedia: <unknown type>",
        f"\tstatus: {'active' if members else 'inactive'}",
    ]
    return "\n".join(out)


def ibv_devinfo_text(host: str, mac: MacState) -> str:
    if NO_DEVICE in mac.conditions:
        return "No IB devices found"
    cabled = set(mac.peers)
    blocks = []
    for r in RECEPTACLES:
        up = r in cabled
        lines = [
            f"hca_id:\trdma_{tb_dev(r)}",
            "\ttransport:\t\t\tThunderbolt (100)",
            f"\tnode_guid:\t\t\t0000:0000:0000:000{r}",
            "\tsys_image_guid:\t\t\t0000:0000:0000:0001",
            "\tvendor_id:\t\t\t0x0000",
            "\tvendor_part_id:\t\t\t0",
            "\thw_ver:\t\t\t\t0x0",
            "\tphys_port_cnt:\t\t\t1",
            "\t\tport:\t1",
            f"\t\t\tstate:\t\t\t{'PORT_ACTIVE (4)' if up else 'PORT_DOWN (1)'}",
            "\t\t\tmax_mtu:\t\t4096 (5)",
            "\t\t\tactive_mtu:\t\t4096 (5)",
            f"\t\t\tsm_lid:\t\t\t{r}",
            f"\t\t\tport_lid:\t\t{r}",
            "\t\t\tport_lmc:\t\t0x00",
            "\t\t\tlink_layer:\t\tThunderbolt",
        ]
        if up:
            lines.append(f"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:3404:bfff:fe40:050{r}")
            if not (NO_IPV4 in mac.conditions and r == min(cabled)):
                a, b, c, d = (int(x) for x in _ipv4(host, r).split("."))
                lines.append(
                    f"\t\t\tGID[  1]:\t\t0000:0000:0000:0000:0000:ffff:"
                    f"{a:02x}{b:02x}:{c:02x}{d:02x}"
                )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# One `macmon pipe` sample (the M3 Pro capture's fields), temperatures following the load.
def macmon_text(host: SimHost, load: float) -> str:
    return json.dumps(
        {
            "timestamp": "2026-01-01T00:00:00.000000+00:00",
            "temp": {
                "cpu_temp_avg": round(43.7 + 12 * load, 3),
                "gpu_temp_avg": round(37.0 + 25 * load, 3),
            },
            "memory": {
                "ram_total": 549755813888,
                "ram_usage": 412316860416,
                "swap_total": 0,
                "swap_usage": 0,
            },
            "ecpu_usage": [1181, 0.08],
            "pcpu_usage": [1974, 0.12],
            "cpu_usage_pct": 0.1,
            "gpu_usage": [1398, round(0.9 * load, 4)],
            "cpu_power": 4.2,
            "gpu_power": round(40.0 * load + 3.0, 2),
            "ane_power": 0.0,
            "all_power": 60.0,
            "sys_power": 120.0,
            "ram_power": 2.0,
            "gpu_ram_power": 0.1,
            "soc": {
                "mac_model": MAC_MODEL.get(host.name, "Mac15,14"),
                "chip_name": "Apple M3 Ultra",
                "memory_gb": 512,
                "ecpu_cores": 8,
                "pcpu_cores": 24,
                "ecpu_label": "E",
                "pcpu_label": "P",
                "gpu_cores": 80,
            },
        },
        separators=(",", ":"),
    )


def mac_frame(
    host: SimHost, mac: MacState, t: float, interval: float | None, only: Sequence[str] | None
) -> str:
    """Wire text of a Mac's probe frame at ``t`` (the zsh probe's sections)."""
    fab = host.fabric
    fab.at(t)
    frac = t - fab.grid_t
    interval = interval or fab.interval_s
    seq = round(t / interval)
    clock_s = fab.base_epoch_s + t
    ns = round(clock_s * 1e9)
    slow_every = max(1, round(min(fab.slow_every_s or MAC_SLOW_S, MAC_SLOW_S) / interval))
    slow = only is None and (not host._slow_sent or seq % slow_every == 0)
    if only is None:
        host._slow_sent = True
    secs = [Section("netstat_i", None, ns, "ok", None, netstat_text(host, mac, frac))]
    if only is None:
        secs.append(
            Section(
                "macmon",
                None,
                ns - 80_000_000,
                "ok",
                None,
                macmon_text(host, min(fab.token_factor, 1.0)),
            )
        )
    if slow:
        for kind, text in (
            ("ibv_devinfo", ibv_devinfo_text(host.name, mac)),
            ("rdma_ctl", "enabled"),
            ("sp_thunderbolt", sp_thunderbolt_text(host.name, mac)),
            ("hwports", hwports_text()),
            ("ifconfig", ifconfig_text(host.name, mac)),
        ):
            secs.append(Section(kind, None, ns - 300_000_000, "ok", None, text))
    secs.append(
        Section(
            "probe",
            None,
            ns,
            "ok",
            None,
            f"impl sim-darwin\ninterval_ms {int(interval * 1000)}\nslow {int(slow)}",
        )
    )
    frame = Frame(seq, ns, host.cfg.uptime_s + t, clock_s, secs)
    return render_frame(frame)
