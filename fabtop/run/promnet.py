"""node_exporter's ``node_network_*`` series as the probe's ``sysnet`` lines: the fallback
every stock node_exporter gives (its ``netdev`` and ``netclass`` collectors, on by
default), where the ``ethtool`` collector (off by default) and ``infiniband`` are not.

Names and labels from node_exporter's source (1.5 to 1.9):
- ``collector/netdev_linux.go`` and ``netdev_common.go``: ``node_network_<key>_total
  {device}`` with the ``/proc/net/dev`` keys (``legacy()`` renames netlink's to them:
  ``receive_errs``, ``receive_drop``, ``transmit_errs``, ``transmit_drop``);
- ``collector/netclass_linux.go``: ``node_network_{up,mtu_bytes,speed_bytes,
  carrier_changes_total,protocol_type,address_assign_type}{device}`` from
  ``/sys/class/net/<device>/*`` (``speed_bytes`` is the sysfs Mb/s times 125000, -125000 when
  the kernel says -1) and ``node_network_info{device,operstate,...} 1``.

Each becomes the sysfs line the probe would have sent (``eth0/statistics/rx_bytes N``,
``eth0/mtu 9000``...), so parsing, the counter vocabulary, rates and rules are the live
path's. Where ``node_ethtool_*`` gives the same netdev, both go into the frame as the
probe sends both: the vocabulary prefers the ethtool statistic for a metric both have
(``rx_bytes_phy`` over ``statistics/rx_bytes``), so nothing is counted twice.

Which netdevs: the probe marks a netdev with a ``device`` entry (a NIC behind a bus) as
physical; node_exporter does not export that, so a netdev is taken as physical when it is
Ethernet or IPoIB (``protocol_type`` 1 or 32, ARPHRD_*) with a permanent address
(``address_assign_type`` 0, NET_ADDR_PERM in include/uapi/linux/netdevice.h): veths,
bridges, bonds, VLANs, macvlans and dummies have random, stolen or set addresses and are
virtual, as the probe shows them. The loopback is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from collectors.frames import Section

NET = "node_network_"

# The sysfs file under class/net/<device>/ the probe reads -> the node_network_<name>s
# that carry it, the closest first. node_exporter's netdev collector renames the kernel's
# fields as /proc/net/dev does (``legacy()``: ``receive_drop`` adds rx_missed_errors);
# ``--collector.netdev.enable-detailed-metrics`` and ``--collector.netclass.netlink``
# export them under the kernel's names, which are the sysfs files' own values.
STATISTICS: dict[str, tuple[str, ...]] = {
    "statistics/rx_bytes": ("receive_bytes_total",),
    "statistics/tx_bytes": ("transmit_bytes_total",),
    "statistics/rx_packets": ("receive_packets_total",),
    "statistics/tx_packets": ("transmit_packets_total",),
    "statistics/rx_errors": ("receive_errors_total", "receive_errs_total"),
    "statistics/tx_errors": ("transmit_errors_total", "transmit_errs_total"),
    "statistics/rx_dropped": ("receive_dropped_total", "receive_drop_total"),
    "statistics/tx_dropped": ("transmit_dropped_total", "transmit_drop_total"),
    "carrier_changes": ("carrier_changes_total",),
    "carrier_down_count": ("carrier_down_changes_total",),  # downs only: what flaps count
}
_COUNTERS = tuple(n for names in STATISTICS.values() for n in names)
# Gauges of netclass_linux.go read here (the rest describe nothing a rule or view uses).
GAUGES = ("up", "mtu_bytes", "speed_bytes", "protocol_type", "address_assign_type")
INFO = "node_network_info"
# The one query for this family: the names above only (a node has dozens of netdevs and
# node_exporter ~40 node_network_* series each).
QUERY = '{__name__=~"' + "|".join(re.escape(NET + n) for n in (*_COUNTERS, *GAUGES, "info")) + '"}'

# operstate values (net/core/net-sysfs.c operstates[]), by index: node_network_info's
# label, kept as a number beside the counters.
OPERSTATES = ("unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")
_OPERSTATE = "operstate"
_ARPHRD_ETHER, _ARPHRD_INFINIBAND, _ARPHRD_LOOPBACK = 1, 32, 772
_NET_ADDR_PERM = 0
_SPEED_MAX_BYTES = 2**53  # a speed in bytes/s: past this it is no speed

# What each missing family costs, in the words of the switch that brings it.
NEED_ETHTOOL = "node_exporter needs --collector.ethtool"
NEED_INFINIBAND = "node_exporter needs --collector.infiniband, on unless switched off"
NEED_DCGM = "GPU series need dcgm-exporter"


def place(
    net: dict[str, dict[str, float]],
    dev: str,
    name: str,
    labels: Mapping[str, object],
    value: float,
) -> str | None:
    """File one ``node_network_*`` value under its device (a name promsource checked);
    why not, when it cannot be."""
    if dev == "lo":
        return None  # the loopback carries nothing of the fabric
    metric = name.removeprefix(NET)
    if name == INFO:
        state = labels.get(_OPERSTATE)
        if state not in OPERSTATES:
            return "dropped (no known operstate label)"
        net.setdefault(dev, {})[_OPERSTATE] = OPERSTATES.index(str(state))
        return None
    if metric in _COUNTERS:
        if not 0 <= value <= 2**64 - 1:
            return "dropped (not a 64-bit counter)"
    elif metric not in GAUGES:
        return None  # a series of the family this fallback does not read
    elif not -_SPEED_MAX_BYTES <= value <= _SPEED_MAX_BYTES:
        return "dropped (out of range)"
    net.setdefault(dev, {})[metric] = value
    return None


def _physical(vals: Mapping[str, float]) -> bool:
    kind = vals.get("protocol_type")
    assign = vals.get("address_assign_type")
    return kind in (_ARPHRD_ETHER, _ARPHRD_INFINIBAND, None) and assign in (_NET_ADDR_PERM, None)


def _operstate(vals: Mapping[str, float]) -> str | None:
    state = vals.get(_OPERSTATE)
    if state is not None:
        return OPERSTATES[int(state)]
    up = vals.get("up")  # netclass's 1 for "up", 0 otherwise (no info series: older ones)
    return None if up is None else ("up" if up == 1 else "down")


def sysnet_lines(net: Mapping[str, Mapping[str, float]], physical: Iterable[str]) -> list[str]:
    """The ``sysnet`` lines of these netdevs; ``physical``: netdevs known to be (ethtool's)."""
    lines: list[str] = []
    marked = set(physical)
    for dev in sorted(marked | set(net)):
        vals = net.get(dev, {})
        if vals.get("protocol_type") == _ARPHRD_LOOPBACK:
            continue
        if dev in marked or (vals and _physical(vals)):
            lines.append(f"{dev}/device -")
        for file, names in STATISTICS.items():
            v = next((vals[n] for n in names if n in vals), None)
            if v is not None:
                lines.append(f"{dev}/{file} {int(v)}")
        state = _operstate(vals)
        if state is not None:
            lines.append(f"{dev}/operstate {state}")
        for metric, file in (("mtu_bytes", "mtu"), ("protocol_type", "type")):
            v = vals.get(metric)
            if v is not None and v >= 0:
                lines.append(f"{dev}/{file} {int(v)}")
        speed = vals.get("speed_bytes")
        if speed is not None and speed > 0:
            lines.append(f"{dev}/speed {round(speed * 8 / 1e6)}")  # sysfs's Mb/s
    return lines


def missing(
    net: Mapping[str, Mapping[str, float]], ethtool: bool, ib: bool, gpus: bool, read: int
) -> list[Section]:
    """Sections the probe would say are missing, for what this host's exporters lack.

    Said only where node_exporter's netdevs show the host: Ethernet netdevs without
    ethtool series (PFC pauses, ECN, discards per priority, the phy counters: a VM's or
    container's virtual NIC says it too, as the probe without ethtool does), an IPoIB
    netdev without InfiniBand port series, and no GPU series from any exporter (a node
    without GPUs says the same: the exporters cannot tell them apart)."""
    if not net:
        return []
    out: list[Section] = []
    kinds = {vals.get("protocol_type", _ARPHRD_ETHER) for vals in net.values()}
    if not ethtool and _ARPHRD_ETHER in kinds:
        out.append(Section("ethtool_S", None, read, "missing", NEED_ETHTOOL, ""))
    if not ib and _ARPHRD_INFINIBAND in kinds:
        out.append(Section("sysib", None, read, "missing", NEED_INFINIBAND, ""))
    if not gpus:
        out.append(Section("gpu_nvidia", None, read, "missing", NEED_DCGM, ""))
    return out
