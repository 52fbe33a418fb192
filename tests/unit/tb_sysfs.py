"""Linux Thunderbolt sysfs of hosts cabled together, for the parser, pairing and probe tests.

Assembled, not captured whole: no public capture holds both ends of one cable. Each
piece is from a public source:

- a host router's attributes: ``ls /sys/bus/thunderbolt/devices/0-0/`` lists
  ``authorized generation power subsystem uevent unique_id wakeup``
  (github.com/intel/thunderbolt-utils/issues/3);
- the ``unique_id`` form (``e0376f00-0300-0100-ffff-ffffffffffff``, lower-case hex):
  kernel Documentation/admin-guide/thunderbolt.rst;
- an XDomain has ``unique_id``/``device_name`` but no ``authorized``/``key`` (C. Kellner,
  christian.kellner.me/2018/05/24/thunderbolt-networking-on-linux/); its
  ``rx_speed``/``tx_speed`` read ``"%u.0 Gb/s"`` and ``rx_lanes``/``tx_lanes`` 1-3
  (drivers/thunderbolt/xdomain.c; documented, never found captured);
- the netdev on the XDomain's service: ``.../domain0/0-0/0-1/0-1.0/net/thunderbolt0``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Xd:
    """One XDomain: the far host as this host's bus sees it."""

    route: str  # "1", "3"
    peer_uid: str
    peer_name: str
    gbps: float = 20.0
    lanes: int = 2
    netdev: str | None = "thunderbolt0"


@dataclass
class TbHost:
    """One Linux host's Thunderbolt domain."""

    uid: str
    generation: int = 4
    xds: list[Xd] = field(default_factory=list)
    dock: bool = False  # a peripheral (authorized, with a secure-connect key) on 0-3


def files(h: TbHost) -> dict[str, str | None]:
    """``relpath -> value`` under one device tree (None: a directory)."""
    out: dict[str, str | None] = {
        "0-0": None,
        "0-0/unique_id": h.uid,
        "0-0/generation": str(h.generation),
        "0-0/authorized": "1",
    }
    for x in h.xds:
        d = f"0-{x.route}"
        speed = f"{x.gbps:.1f} Gb/s"
        out.update(
            {
                d: None,
                f"{d}/unique_id": x.peer_uid,
                f"{d}/device_name": x.peer_name,
                f"{d}/vendor_name": "Intel Corp.",
                f"{d}/device": "0x1",
                f"{d}/rx_speed": speed,
                f"{d}/tx_speed": speed,
                f"{d}/rx_lanes": str(x.lanes),
                f"{d}/tx_lanes": str(x.lanes),
                f"{d}.0": None,
                f"{d}.0/key": "network",
                f"{d}.0/prtcid": "1",
            }
        )
        if x.netdev:
            out[f"{d}.0/net/{x.netdev}"] = None
    if h.dock:
        out.update(
            {
                "0-3": None,
                "0-3/unique_id": "c0030000-00a2-8508-2219-f4d4d2c1a918",
                "0-3/device_name": "Core",
                "0-3/vendor_name": "Razer",
                "0-3/authorized": "1",
                "0-3/generation": "3",
                "0-3/rx_speed": "20.0 Gb/s",
                "0-3/rx_lanes": "2",
                "0-3/key": "SECRET-KEY-NEVER-READ",
            }
        )
    return out


def systb_text(h: TbHost) -> str:
    """The ``systb_slow`` section the probe sends for this host."""
    lines = ["domain0 -"]
    for rel, v in files(h).items():
        if rel.endswith("/key") and rel.startswith("0-3"):
            continue  # a switch's own key is never read
        lines.append(f"{rel} {'-' if v is None else v}")
    return "\n".join(lines)


def write(h: TbHost, sysroot: Path) -> None:
    """The tree as the kernel lays it out: devices under the NHI, bus entries as links."""
    nhi = sysroot / "devices/pci0000:00/0000:00:0d.2/domain0"
    nhi.mkdir(parents=True, exist_ok=True)
    (nhi / "security").write_text("user\n")
    bus = sysroot / "bus/thunderbolt/devices"
    bus.mkdir(parents=True, exist_ok=True)
    places: dict[str, Path] = {}
    for rel, v in files(h).items():
        name, _, attr = rel.partition("/")
        if name not in places:
            # 0-0 under domain0, 0-1 under 0-0, 0-1.0 under 0-1 (the kernel's parents)
            parent = (
                nhi
                if name == "0-0"
                else (places[name.rsplit(".", 1)[0]] if "." in name else places["0-0"])
            )
            places[name] = parent / name
            places[name].mkdir(parents=True, exist_ok=True)
            link = bus / name
            if not link.exists():
                link.symlink_to(os.path.relpath(places[name], bus))
        if attr:
            p = places[name] / attr
            if v is None:
                p.mkdir(parents=True, exist_ok=True)
            else:
                p.write_text(v + "\n")
    dom = bus / "domain0"
    if not dom.exists():
        dom.symlink_to(os.path.relpath(nhi, bus))
