"""Parse the probe's ``systb_slow`` section: ``/sys/bus/thunderbolt/devices`` (Linux).

Lines are ``<relpath> <value>`` relative to ``<sysfs>/bus/thunderbolt/devices``, as the
probe's ``fab_tb`` lists them: ``<name> -`` for every entry of the bus, the router and
XDomain attributes (``0-0/unique_id``, ``0-1/rx_speed``), a service's ``key`` and its
netdev marker (``0-1.0/net/thunderbolt0 -``).

What each name is (kernel Documentation/ABI/testing/sysfs-bus-thunderbolt and
drivers/thunderbolt/{switch,xdomain}.c; torvalds/linux, intel/mainline-tracking):

- ``domainN``: the domain (not read here);
- ``<d>-0``: domain d's host router, this host: ``unique_id`` is the identity another
  host's XDomain reports for it (xdomain.c answers a UUID request with the root switch's
  UUID), ``generation`` the controller's (1-3 Thunderbolt; 4 every USB4 router, USB4 v2
  / Thunderbolt 5 included: switch.c ``tb_switch_get_generation``);
- ``<d>-<route>``: a device (dock, enclosure) or an XDomain, another host. An XDomain has
  no ``authorized`` (C. Kellner, "Thunderbolt Networking on Linux", 2018: "missing the
  authorized and key attributes"), a device has it;
- ``<xdomain>.<n>``: a service of that XDomain; ``thunderbolt-net`` registers its netdev
  on the service (drivers/net/thunderbolt/main.c ``SET_NETDEV_DEV(dev, &svc->dev)``),
  hence ``<xdomain>.<n>/net/<netdev>``.

Formats. Captured: a host router's attribute list (``ls /sys/bus/thunderbolt/devices/0-0/``
in intel/thunderbolt-utils#3), a ``unique_id`` (``e0376f00-0300-0100-ffff-ffffffffffff``,
kernel Documentation/admin-guide/thunderbolt.rst), a service's netdev path
(``.../domain0/0-0/0-1/0-1.0/net/thunderbolt0``). Only documented, never found captured
in public sources: ``rx_speed``/``tx_speed`` (``"%u.0 Gb/s"``, the lane speed: 10, 20, or
40 on USB4 v2) and ``rx_lanes``/``tx_lanes`` (1, 2, or 3 on an asymmetric USB4 v2 link),
from xdomain.c ``speed_show``/``rx_lanes_show``; values beyond those are kept when they
are plain numbers and said in a warning.

Every value is cleaned and bounded; a bad one costs that value, with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import parse_float, parse_hex, parse_uint
from collectors.samples import ThunderboltInfo, ThunderboltPeer
from collectors.text import clean
from collectors.warning_lines import WarningLines

MAX_WARNINGS = 20
MAX_PEERS = 64  # the probe reads at most 64 entries of the bus
_NAME_MAX = 64
_ROUTER = re.compile(r"([0-9]{1,3})-([0-9a-f]{1,16})")
_SERVICE = re.compile(r"([0-9]{1,3}-[0-9a-f]{1,16})\.([0-9]{1,4})")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SPEED = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,3})?) Gb/s")
_KNOWN_SPEEDS = (10.0, 20.0, 40.0)
_KNOWN_LANES = (1, 2, 3)


@dataclass(slots=True)
class TbParse:
    """What the section said: the host's Thunderbolt domain (None: no host router seen)."""

    info: ThunderboltInfo | None = None
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def parse_uid(value: str) -> str | None:
    """A unique_id / domain UUID, lower case; None when it is no UUID."""
    v = value.strip().lower()
    return v if _UUID.fullmatch(v) else None


def parse_lane_speed(value: str) -> tuple[float | None, str | None]:
    """``"20.0 Gb/s"`` -> 20.0 (per lane), and what was odd about it (None: nothing)."""
    m = _SPEED.fullmatch(value.strip())
    v = parse_float(m.group(1)) if m else None
    if v is None or v <= 0:
        return None, f"not a lane speed: {clean(value, 40)!r}"
    if v not in _KNOWN_SPEEDS:
        return v, f"lane speed {v:g} Gb/s is none the kernel names (10, 20, 40)"
    return v, None


def parse_lanes(value: str) -> tuple[int | None, str | None]:
    """``"2"`` -> 2, and what was odd about it (None: nothing)."""
    n = parse_uint(value.strip())
    if n is None or n == 0 or n > 8:
        return None, f"not a lane count: {clean(value, 40)!r}"
    if n not in _KNOWN_LANES:
        return n, f"{n} lanes is none the kernel names (1, 2, 3)"
    return n, None


def parse_systb(text: str) -> TbParse:
    """The host's Thunderbolt domain from a ``systb_slow`` section; never raises."""
    out = TbParse()
    attrs: dict[str, dict[str, str]] = {}
    net: dict[str, str] = {}  # xdomain -> the netdev on one of its services
    for line in text.splitlines():
        rel, _, value = line.partition(" ")
        parts = clean(rel, 512).split("/")
        if not parts or not parts[0] or len(parts[0]) > _NAME_MAX:
            continue
        name = parts[0]
        if len(parts) == 1:
            attrs.setdefault(name, {})
        elif len(parts) == 2:
            attrs.setdefault(name, {})[parts[1]] = clean(value, 256)
        elif len(parts) == 3 and parts[1] == "net":
            m = _SERVICE.fullmatch(name)
            if m and parts[2] and len(parts[2]) <= _NAME_MAX:
                net.setdefault(m.group(1), clean(parts[2], _NAME_MAX))
    hosts: list[tuple[int, str, dict[str, str]]] = []
    peers: list[ThunderboltPeer] = []
    for name in sorted(attrs):
        m = _ROUTER.fullmatch(name)
        if m is None:
            continue  # domainN, services, retimers (<device>:<port>.<index>)
        a = attrs[name]
        if parse_hex("0x" + m.group(2)) == 0:
            hosts.append((parse_uint(m.group(1)) or 0, name, a))
        elif "authorized" not in a and len(peers) < MAX_PEERS:
            peers.append(_peer(name, a, net.get(name), out.warnings))
    if not hosts:
        if peers:
            out.warnings.add("XDomains without a host router: this host's identity unknown")
            out.info = ThunderboltInfo(source="sysfs", peers=peers)
        return out
    uids: list[str] = []
    gens: list[int] = []
    for _, name, a in sorted(hosts):
        if "unique_id" in a:
            uid = parse_uid(a["unique_id"])
            if uid is None:
                out.warnings.add(f"{name}/unique_id: not a UUID: {a['unique_id'][:40]!r}")
            else:
                uids.append(uid)
        if "generation" in a:
            g = parse_uint(a["generation"])
            if g is None or not 1 <= g <= 9:
                out.warnings.add(f"{name}/generation: bad value {a['generation'][:20]!r}")
            else:
                gens.append(g)
    out.info = ThunderboltInfo(
        source="sysfs",
        self_uid=uids[0] if uids else None,
        generation=max(gens) if gens else None,
        peers=peers,
        domain_uids=tuple(uids) if len(uids) > 1 else (),
    )
    return out


def _peer(
    name: str, a: dict[str, str], netdev: str | None, warnings: WarningLines
) -> ThunderboltPeer:
    p = ThunderboltPeer(port=name, netdev=netdev)
    if "unique_id" in a:
        p.peer_uid = parse_uid(a["unique_id"])
        if p.peer_uid is None:
            warnings.add(f"{name}/unique_id: not a UUID: {a['unique_id'][:40]!r}")
    if a.get("device_name"):
        p.peer_name = clean(a["device_name"], _NAME_MAX)
    for key in ("rx_speed", "tx_speed"):
        if key in a:
            speed, why = parse_lane_speed(a[key])
            setattr(p, key[:2] + "_gbps_per_lane", speed)
            if why is not None:
                warnings.add(f"{name}/{key}: {why}")
    for key in ("rx_lanes", "tx_lanes"):
        if key in a:
            lanes, why = parse_lanes(a[key])
            setattr(p, key, lanes)
            if why is not None:
                warnings.add(f"{name}/{key}: {why}")
    return p
