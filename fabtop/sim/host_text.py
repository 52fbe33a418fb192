"""What a simulated host's files and tools print: sysfs values, ethtool, mlnx_qos, nvidia-smi.

Each function reads a :class:`~fabtop.sim.host.SimHost` at ``frac`` seconds into the
current grid cell and returns text shaped like the real tool's (captures in
``../shared/fixtures``), for the probe frame and for the on-disk tree alike.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from collectors.parsers.nvidia_smi import QUERY_FIELDS
from fabtop.sim import addresses as addr

if TYPE_CHECKING:
    from fabtop.sim.host import SimHost, SimHostConfig

# The parser module owns the field list: the simulated nvidia-smi answers that query.
GPU_FIELDS: tuple[str, ...] = QUERY_FIELDS
ROCE_RATE = {
    100: "100 Gb/sec (4X EDR)",
    200: "200 Gb/sec (4X HDR)",
    50: "50 Gb/sec (2X HDR)",
    25: "25 Gb/sec (1X EDR)",
}


def sysnet_lines(host: SimHost, frac: float) -> list[tuple[str, str]]:
    """``(relpath, value)`` for every file the probe reads under class/net."""
    cfg = host.cfg
    out: list[tuple[str, str]] = []
    for i, port in enumerate(host.ports):
        d = cfg.netdev(i)
        up = host.port_up[i]
        downs = host.carrier_changes[i] // 2
        out += [
            (f"{d}/address", addr.roce_mac(i, host.index)),
            (f"{d}/operstate", "up" if up else "down"),
            (f"{d}/carrier", "1" if up else "0"),
            (f"{d}/carrier_changes", str(host.carrier_changes[i])),
            (f"{d}/carrier_up_count", str(host.carrier_changes[i] - downs)),
            (f"{d}/carrier_down_count", str(downs)),
            (f"{d}/mtu", str(cfg.mtu)),
        ]
        if up:  # the driver reports no speed without carrier
            out.append((f"{d}/speed", str(cfg.link_gbps * 1000)))
        out += [
            (f"{d}/device", "-"),
            (f"{d}/device/current_link_speed", f"{cfg.pcie_gts:.1f} GT/s PCIe"),
            (f"{d}/device/current_link_width", str(cfg.pcie_width)),
            (f"{d}/device/max_link_speed", f"{cfg.pcie_max_gts:.1f} GT/s PCIe"),
            (f"{d}/device/max_link_width", str(cfg.pcie_max_width)),
            (f"{d}/device/hwmon/hwmon{3 + i}/name", "mlx5"),
            (f"{d}/device/hwmon/hwmon{3 + i}/temp1_input", str(int(host.nic_temp[i]) * 1000)),
        ]
        en = "1" if host.ecn_live else "0"
        for p in range(8):
            out.append((f"{d}/ecn/roce_np/enable/{p}", en))
        for p in range(8):
            out.append((f"{d}/ecn/roce_rp/enable/{p}", en))
        out.append((f"{d}/ecn/roce_np/cnp_802p_prio", "6"))
        out += [(f"{d}/statistics/{n}", str(v)) for n, v in port.netdev.items(frac)]
    lo, hi = addr.mac_lo_hi(host.index)
    if host.tb is not None:
        d = "thunderbolt0"
        out += [
            (f"{d}/address", f"02:9c:{lo:02x}:{hi:02x}:00:01"),
            (f"{d}/operstate", "up"),
            (f"{d}/carrier", "1"),
            (f"{d}/carrier_changes", "2"),
            (f"{d}/mtu", "1500"),
            (f"{d}/device", "-"),
        ]
        out += [(f"{d}/statistics/{n}", str(v)) for n, v in host.tb.netdev.items(frac)]
    out += [
        ("eno1/address", f"3c:ec:ef:{lo:02x}:{0x10 + hi:02x}:01"),
        ("eno1/operstate", "up"),
        ("eno1/carrier", "1"),
        ("eno1/carrier_changes", "2"),
        ("eno1/mtu", "1500"),
        ("eno1/speed", "1000"),
        ("eno1/device", "-"),
        ("eno1/device/current_link_speed", "5.0 GT/s PCIe"),
        ("eno1/device/current_link_width", "1"),
    ]
    out += [(f"eno1/statistics/{n}", str(v)) for n, v in host.mgmt.netdev.items(frac)]
    out += [
        ("lo/address", "00:00:00:00:00:00"),
        ("lo/operstate", "unknown"),
        ("lo/carrier", "1"),
        ("lo/carrier_changes", "0"),
        ("lo/mtu", "65536"),
    ]
    out += [(f"lo/statistics/{n}", str(v)) for n, v in host.lo.netdev.items(frac)]
    return out


def sysib_lines(host: SimHost, frac: float, gids: bool = True) -> list[tuple[str, str]]:
    """``(relpath, value)`` for every file the probe reads under class/infiniband (the RoCE
    GID tables only with ``gids``: the probes send them at slow cadence, in sysib_slow)."""
    cfg = host.cfg
    out: list[tuple[str, str]] = []
    for i, port in enumerate(host.ports):
        dev, nd, up = f"mlx5_{i}", cfg.netdev(i), host.port_up[i]
        pp = f"{dev}/ports/1"
        out += [
            (f"{dev}/fw_ver", cfg.firmware),
            (f"{dev}/hca_type", "MT4125"),
            (f"{dev}/board_id", "MT_0000000359"),
            (f"{dev}/node_guid", f"0c42:a103:{host.index:04x}:{i:04x}"),
            (f"{dev}/node_type", "1: CA"),
            (f"{pp}/state", "4: ACTIVE" if up else "1: DOWN"),
            (f"{pp}/phys_state", "5: LinkUp" if up else "3: Disabled"),
            (f"{pp}/rate", ROCE_RATE.get(cfg.link_gbps, f"{cfg.link_gbps} Gb/sec (4X)")),
            (f"{pp}/link_layer", "Ethernet"),
            (f"{pp}/lid", "0x0"),  # RoCE has no LIDs and no subnet manager
            (f"{pp}/sm_lid", "0x0"),
        ]
        out += [(f"{pp}/counters/{n}", str(v)) for n, v in port.ib.items(frac)]
        out += [(f"{pp}/hw_counters/{n}", str(v)) for n, v in port.hw.items(frac)]
        out += [(f"{pp}/gid_attrs/ndevs/0", nd), (f"{dev}/device/net/{nd}", "-")]
        if gids:
            out += roce_gid_lines(host, i)
    if host.ib is not None:
        dev = f"mlx5_{cfg.roce_ports}"
        pp = f"{dev}/ports/1"
        out += [
            (f"{dev}/fw_ver", "20.39.2048"),
            (f"{dev}/hca_type", "MT4123"),
            (f"{dev}/board_id", "MT_0000000223"),
            (f"{dev}/node_guid", f"b83f:d203:{host.index:04x}:0a00"),
            (f"{dev}/node_type", "1: CA"),
            # Without a subnet manager the port trains (LinkUp) but is never configured:
            # INIT, no LID, SM LID 0 (sysfs formats: collectors/parsers/sysfs.py).
            (f"{pp}/state", "4: ACTIVE" if cfg.ib_sm else "2: INIT"),
            (f"{pp}/phys_state", "5: LinkUp"),
            (f"{pp}/rate", "200 Gb/sec (4X HDR)"),
            (f"{pp}/link_layer", "InfiniBand"),
            (f"{pp}/lid", f"0x{host.index + 1:x}" if cfg.ib_sm else "0x0"),
            (f"{pp}/sm_lid", "0x1" if cfg.ib_sm else "0x0"),  # node1 runs opensm: LID 1
            (f"{pp}/gids/0", f"fe80:0000:0000:0000:b83f:d203:{host.index:04x}:0a01"),
            (f"{pp}/gid_attrs/types/0", "IB/RoCE v1"),
            (f"{pp}/gids", "-"),
        ]
        out += [(f"{pp}/counters/{n}", str(v)) for n, v in host.ib.ib.items(frac)]
        out += [(f"{pp}/hw_counters/{n}", str(v)) for n, v in host.ib.hw.items(frac)]
    return out


def roce_gid_lines(host: SimHost, i: int) -> list[tuple[str, str]]:
    """The populated GID table of RoCE port ``i``, then the probe's marker line.

    Laid out as mlx5 fills it (show_gids captures in tests/fixtures/rdma_gids): the
    default link-local GID as RoCE v1 and v2 at 0 and 1, then a v1/v2 pair per address
    in the order the addresses were added; IPv4 as ``::ffff:a.b.c.d``.
    """
    pp, nd = f"mlx5_{i}/ports/1", host.cfg.netdev(i)
    # EUI-64 of the netdev's MAC (sysnet_lines: fabtop.sim.addresses.roce_mac)
    gids = [f"fe80:0000:0000:0000:{addr.roce_eui64(i, host.index)}"]
    for n, kind in enumerate(host.cfg.roce_addrs):
        if kind == "ipv4":  # 10.<port>.0.<host + 1>
            v4 = addr.ipv4_mapped(addr.roce_ipv4(i, host.index))
            gids.append(f"0000:0000:0000:0000:0000:ffff:{v4}")
        else:  # a stable-privacy link-local address: its own interface identifier
            gids.append(f"fe80:0000:0000:0000:5d1c:{n:02x}{i:02x}:a6b1:{host.index:04x}")
    out: list[tuple[str, str]] = []
    for k, gid in enumerate(gids):
        for v, kind in enumerate(("IB/RoCE v1", "RoCE v2")):
            idx = 2 * k + v
            out += [(f"{pp}/gids/{idx}", gid), (f"{pp}/gid_attrs/types/{idx}", kind)]
            if idx:  # ndevs/0 is written with the port's netdev above
                out.append((f"{pp}/gid_attrs/ndevs/{idx}", nd))
    out.append((f"{pp}/gids", "-"))
    return out


def ip_addr(host: SimHost) -> str:
    """``ip -o addr show`` (tests/fixtures/ipaddr: iproute2's one-line format).

    The same addresses the GID table carries (fabtop.sim.addresses): RoCE port ``i`` at
    10.<i>.0.<host + 1>/24 (and a stable-privacy link-local IPv6 per ``ll6``),
    thunderbolt0 at 10.254.0.<host + 1>/24, eno1 on the management network; /16
    networks past 254 hosts.
    """
    cfg, h = host.cfg, host.index
    hosts = len(host.fabric.configs)
    tail = "\\       valid_lft forever preferred_lft forever"
    lines = [
        f"1: lo    inet 127.0.0.1/8 scope host lo{tail}",
        f"1: lo    inet6 ::1/128 scope host {tail}",
    ]

    def inet(n: int, nd: str, address: str, prefix: int) -> str:
        brd = addr.broadcast(address, prefix)
        return f"{n}: {nd}    inet {address}/{prefix} brd {brd} scope global {nd}{tail}"

    for i in range(cfg.roce_ports):
        nd, n = cfg.netdev(i), i + 2
        for k, kind in enumerate(cfg.roce_addrs):
            if kind == "ipv4":
                lines.append(inet(n, nd, addr.roce_ipv4(i, h), addr.prefix_len(hosts)))
            else:
                sp = ipaddress.ip_interface(f"fe80::5d1c:{k:02x}{i:02x}:a6b1:{h:04x}/64")
                lines.append(
                    f"{n}: {nd}    inet6 {sp.with_prefixlen} scope link stable-privacy {tail}"
                )
        ll = ipaddress.ip_interface(f"fe80::{addr.roce_eui64(i, h)}/64")  # as ip prints
        lines.append(f"{n}: {nd}    inet6 {ll.with_prefixlen} scope link {tail}")
    n = cfg.roce_ports + 2
    if host.tb is not None:
        lines.append(inet(n, "thunderbolt0", addr.tb_ipv4(h), addr.prefix_len(hosts)))
        n += 1
    mgmt = addr.prefix_len(hosts, addr.MGMT_FIRST)
    lines.append(inet(n, "eno1", addr.mgmt_ipv4(h), mgmt))
    return "\n".join(lines)


def systb_lines(host: SimHost) -> list[tuple[str, str]]:
    """``(relpath, value)`` under bus/thunderbolt/devices, as the probe's ``fab_tb`` lists
    them: the host router (the attributes of the ``ls .../0-0/`` in intel/thunderbolt-utils#3),
    the XDomain of the far host (formats of drivers/thunderbolt/xdomain.c: ``"20.0 Gb/s"``
    per lane; vendor "Intel Corp." is what a Linux host announces, tb_xdomain_init) and
    its network service with thunderbolt0 on it. Empty without a Thunderbolt identity."""
    cfg = host.cfg
    if host.tb is None or cfg.tb_self_uid is None:
        return []
    out = [
        ("domain0", "-"),
        ("0-0", "-"),
        ("0-0/unique_id", cfg.tb_self_uid),
        ("0-0/generation", str(cfg.tb_generation)),
        ("0-0/authorized", "1"),
    ]
    if cfg.tb_peer_uid is not None:
        speed = f"{cfg.tb_gbps_per_lane:.1f} Gb/s"
        out += [
            ("0-1", "-"),
            ("0-1/unique_id", cfg.tb_peer_uid),
            ("0-1/device_name", cfg.tb_peer_name or ""),
            ("0-1/vendor_name", "Intel Corp."),
            ("0-1/rx_speed", speed),
            ("0-1/tx_speed", speed),
            ("0-1/rx_lanes", str(cfg.tb_lanes)),
            ("0-1/tx_lanes", str(cfg.tb_lanes)),
            ("0-1.0", "-"),
            ("0-1.0/key", "network"),
            ("0-1.0/net/thunderbolt0", "-"),
        ]
    return [(r, v) for r, v in out if v != ""]


def ethtool_s(host: SimHost, netdev: str, frac: float) -> tuple[str, str | None, str]:
    """``(status, detail, text)`` of ``ethtool -S netdev``."""
    for i, port in enumerate(host.ports):
        if netdev == host.cfg.netdev(i):
            return "ok", None, port.eth.ethtool_text(frac)
    if netdev == "eno1" and host.mgmt.eth is not None:
        return "ok", None, host.mgmt.eth.ethtool_text(frac)
    # thunderbolt-net registers no ethtool statistics: ethtool prints "no stats
    # available" on stderr and exits 94; stdout stays empty.
    return "error", "rc=94", ""


def ethtool_i(cfg: SimHostConfig, netdev: str) -> str:
    """``ethtool -i netdev`` output."""
    if netdev.startswith("enp65s0f"):
        fn = netdev[len("enp65s0f")]
        return _ethtool_i(
            "mlx5_core",
            cfg.kernel,
            f"{cfg.firmware} (MT_0000000359)",
            f"0000:41:00.{fn}",
            eeprom="no",
            regdump="no",
        )
    if netdev == "eno1":  # firmware string from the igb capture
        return _ethtool_i("igb", cfg.kernel, "1.67, 0x800010dd, 20.5.16", "0000:05:00.0")
    return _ethtool_i(
        "thunderbolt-net",
        cfg.kernel,
        "",
        "0-1.0",
        stats="no",
        test="no",
        eeprom="no",
        regdump="no",
        priv="no",
    )


def mlnx_qos(cfg: SimHostConfig) -> str:
    """``mlnx_qos -i <port>`` output, shaped like the capture in ../shared/fixtures/qos."""
    lines = ["DCBX mode: OS controlled", f"Priority trust state: {cfg.trust}"]
    if cfg.trust == "dscp":
        lines.append("dscp2prio mapping:")
        for p in range(8):
            codes = ",".join(f"{d:02d}" for d in range(p * 8 + 7, p * 8 - 1, -1))
            lines.append(f"        prio:{p} dscp:{codes},")
    lines += [
        "Cable len: 7",
        "PFC configuration:",
        "        priority    0   1   2   3   4   5   6   7",
        "        enabled     "
        + "   ".join("1" if p in cfg.pfc_prios else "0" for p in range(8))
        + "   ",
    ]
    tc_of = {0: 1, 1: 0}
    for tc in range(8):
        prio = next((p for p, t in tc_of.items() if t == tc), tc)
        lines += [f"tc: {tc} ratelimit: unlimited, tsa: vendor", f"         priority:  {prio}"]
    return "\n".join(lines)


def gpu_text(host: SimHost, clock_s: float) -> str:
    """The ``gpu_nvidia`` section: the field line, then one CSV row per GPU."""
    rows = [g.csv_row(GPU_FIELDS, clock_s) for g in host.gpus]
    return "\n".join(["# " + ",".join(GPU_FIELDS), *rows])


def _ethtool_i(
    driver: str,
    version: str,
    fw: str,
    bus: str,
    stats: str = "yes",
    test: str = "yes",
    eeprom: str = "yes",
    regdump: str = "yes",
    priv: str = "yes",
) -> str:
    return "\n".join(
        [
            f"driver: {driver}",
            f"version: {version}",
            f"firmware-version: {fw}",
            "expansion-rom-version: ",
            f"bus-info: {bus}",
            f"supports-statistics: {stats}",
            f"supports-test: {test}",
            f"supports-eeprom-access: {eeprom}",
            f"supports-register-dump: {regdump}",
            f"supports-priv-flags: {priv}",
        ]
    )


# /proc/driver/nvidia/version of the open kernel module, as captured
# (tests/fixtures/versions/proc_driver_nvidia_version_open_580.95.05.txt); the version
# is the host's.
_NVRM = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
    "(dvs-builder@U22-I3-B17-02-5)  Tue Sep 23 09:55:41 UTC 2025\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04.2) \n"
)
# Where a pip-installed vLLM keeps NCCL: the wheel's libnccl.so.2 and its dist-info.
_SITE = "/opt/vllm/lib/python3.12/site-packages"


def version_sections(
    cfg: SimHostConfig,
) -> list[tuple[str, str | None, str, str | None, str]]:
    """``(kind, subject, status, detail, text)`` of the software-version sections, shaped
    like the captures in tests/fixtures/versions (docs/PROBE.md, "Software versions")."""
    out: list[tuple[str, str | None, str, str | None, str]] = [
        ("uname_r", None, "ok", None, cfg.kernel),
    ]
    if cfg.rdma_core is None:
        out.append(
            (
                "rdma_core",
                "dpkg-query",
                "error",
                "rc=1",
                "dpkg-query: no packages found matching rdma-core",
            )
        )
    else:
        out.append(("rdma_core", "dpkg-query", "ok", None, f"ii  {cfg.rdma_core}"))
    if cfg.ofed is None:
        out.append(("ofed_info", None, "missing", "ofed_info", ""))
    else:
        out.append(("ofed_info", None, "ok", None, f"{cfg.ofed}:"))
    if cfg.gpus:
        out.append(("nvidia_driver", None, "ok", None, _NVRM.format(v=cfg.nvidia_driver)))
        scan = (
            ""
            if cfg.nccl is None
            else (
                f"lib {_SITE}/nvidia/nccl/lib/libnccl.so.2\n"
                f"dist nvidia_nccl_cu12-{cfg.nccl}.dist-info"
            )
        )
        out.append(("nccl", None, "ok", None, scan))
    return out
