"""Parse ``system_profiler SPThunderboltDataType -json``: each bus, its receptacle, its peer.

Format (real captures of a Thunderbolt 5 Mac Studio / MacBook Pro pair in
tests/fixtures/darwin, SOURCES.md): ``SPThunderboltDataType`` is a list of buses
(``thunderboltusb4_bus_N``), each with its own ``domain_uuid_key`` and a
``receptacle_1_tag`` (``receptacle_id_key``, ``receptacle_status_key``,
``current_speed_key``); a bus's ``_items`` are the devices behind it. A device with its
own ``domain_uuid_key`` is another host (a Mac, a Linux host over XDomain): that is the
peer, and its domain UUID is the one the other end reports as its own bus's. A device
without one (a drive, a dock) is no peer.

Speeds: ``current_speed_key`` reads ``80 Gb/s`` on a connected receptacle and ``Up to
120 Gb/s`` on an empty one; the tool gives no lane count or per-lane speed, so only the
total is kept (ThunderboltPeer.link_gbps). What the receptacles can do is the largest
``Up to`` speed of the host's buses (every receptacle of a Mac is the same kind).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from collectors.numbers import json_loads, parse_float, parse_uint
from collectors.samples import ThunderboltInfo, ThunderboltPeer
from collectors.text import clean
from collectors.warning_lines import WarningLines

_SPEED_RE = re.compile(r"(Up to )?([0-9]{1,4}(?:\.[0-9]{1,3})?) Gb/s")
_UUID_RE = re.compile(r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")
MAX_BUSES = 64
MAX_WARNINGS = 20
_SPEED_MAX = 64  # "Up to 120 Gb/s"


@dataclass(slots=True)
class TbBus:
    name: str
    domain_uuid: str | None = None
    receptacle: int | None = None
    connected: bool = False
    speed_gbps: float | None = None  # current_speed_key when connected
    up_to_gbps: float | None = None  # "Up to N Gb/s" of an empty receptacle
    peer_uid: str | None = None
    peer_name: str | None = None


@dataclass(slots=True)
class TbResult:
    buses: list[TbBus] = field(default_factory=list)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def _uuid(v: Any) -> str | None:
    return v.upper() if isinstance(v, str) and _UUID_RE.fullmatch(v) else None


def _speed(v: Any) -> tuple[float | None, bool]:
    if not isinstance(v, str):
        return None, False
    m = _SPEED_RE.fullmatch(v.strip()) if len(v) <= _SPEED_MAX else None
    if not m:
        return None, False
    return parse_float(m.group(2)), m.group(1) is not None


def parse_sp_thunderbolt(text: str) -> TbResult:
    out = TbResult()
    try:
        data = json_loads(text)
    except ValueError as exc:
        out.warnings.append(clean(f"not JSON: {str(exc)[:80]}"))
        return out
    buses = data.get("SPThunderboltDataType") if isinstance(data, dict) else None
    if not isinstance(buses, list):
        out.warnings.append("no SPThunderboltDataType list")
        return out
    for b in buses[:MAX_BUSES]:
        if not isinstance(b, dict):
            continue
        name = clean(str(b.get("_name", "?")), 64)
        bus = TbBus(name, domain_uuid=_uuid(b.get("domain_uuid_key")))
        tag = b.get("receptacle_1_tag")
        if isinstance(tag, dict):
            rid = tag.get("receptacle_id_key")
            # str.isdigit() takes "²", which int() refuses: the number reader's ASCII only
            n = parse_uint(rid) if isinstance(rid, str) else None
            if isinstance(rid, int) and not isinstance(rid, bool) and rid >= 0:
                n = rid
            if n is not None and n <= 999:
                bus.receptacle = n
            elif rid is not None:
                out.warnings.add(
                    f"{name}: receptacle_id_key {clean(str(rid), 20)!r} is no receptacle number"
                )
            bus.connected = tag.get("receptacle_status_key") == "receptacle_connected"
            speed, up_to = _speed(tag.get("current_speed_key"))
            if up_to:
                bus.up_to_gbps = speed
            elif speed is not None:
                bus.speed_gbps = speed
        items = b.get("_items")
        if isinstance(items, list):
            for it in items:
                if isinstance(it, dict) and _uuid(it.get("domain_uuid_key")):
                    bus.peer_uid = _uuid(it.get("domain_uuid_key"))
                    pname = it.get("_name")
                    bus.peer_name = clean(pname, 64) if isinstance(pname, str) else None
                    break
        out.buses.append(bus)
    return out


def thunderbolt_info(
    res: TbResult, netdev_of_receptacle: dict[int, str] | None = None
) -> ThunderboltInfo:
    """The host's Thunderbolt domain from its buses: one peer per bus with a host behind it.

    ``self_uid``: a Mac has one domain UUID per bus; the first bus with a peer gives it
    (ThunderboltPeer.self_uid holds each cabled bus's own, which is what the far end
    reports as ``peer_uid``).
    """
    caps = [b.up_to_gbps for b in res.buses if b.up_to_gbps is not None]
    cap = max(caps) if caps else None
    info = ThunderboltInfo(source="system_profiler")
    for b in res.buses:
        if b.peer_uid is None:
            continue
        port = f"Receptacle {b.receptacle}" if b.receptacle is not None else b.name
        info.peers.append(
            ThunderboltPeer(
                port=port,
                netdev=(netdev_of_receptacle or {}).get(b.receptacle or -1),
                peer_uid=b.peer_uid,
                peer_name=b.peer_name,
                self_uid=b.domain_uuid,
                link_gbps=b.speed_gbps if b.connected else None,
                max_link_gbps=cap,
            )
        )
    info.self_uid = next((p.self_uid for p in info.peers if p.self_uid), None)
    if info.self_uid is None:
        info.self_uid = next((b.domain_uuid for b in res.buses if b.domain_uuid), None)
    # 80/120 Gb/s exist only on Thunderbolt 5; 40 is Thunderbolt 3, 4 or USB4 alike.
    top = max([x for x in [cap, *(b.speed_gbps for b in res.buses)] if x is not None], default=None)
    if top is not None and top >= 80:
        info.generation = 5
    return info
