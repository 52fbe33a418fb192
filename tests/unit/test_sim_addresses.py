"""The simulated hosts' addresses (fabtop/sim/addresses.py): valid and unique for every
host of the largest fabric the simulation builds, and the same in ip addr, the GID
table and sysfs."""

from __future__ import annotations

import ipaddress
import re

from collectors.assemble import assemble
from collectors.frames import FrameDecoder
from fabtop.sim import Fabric, SimHostConfig

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def test_every_address_is_valid_and_unique_up_to_the_largest_fabric() -> None:
    """Host 255 and past it got 10.0.0.256, a three-digit MAC byte, a 2-byte field of 3."""
    fab = Fabric([SimHostConfig(f"n{i}", roce_ports=2, gpus=0) for i in range(1024)])
    picked = [0, 1, 253, 254, 255, 256, 511, 1023]
    v4: dict[str, str] = {}
    seen: set[str] = set()
    nets: dict[str, set[ipaddress.IPv4Network]] = {}
    for i in picked:
        name = f"n{i}"
        frames = FrameDecoder().feed(fab.hosts[name].frame(1.0).encode())
        sample = assemble(name, frames[0])
        assert sample.warnings == [], (name, sample.warnings)
        sysnet = frames[0].find("sysnet")
        assert sysnet is not None
        for line in sysnet.text.splitlines():
            path, value = line.split(" ", 1)
            if path.endswith("/address") and not path.startswith("lo/"):
                assert _MAC.match(value), (name, line)
                assert value not in seen, (name, line)
                seen.add(value)
        for lid, ln in sample.links.items():
            if lid == "lo":
                continue
            for a in ln.addresses or ():
                iface = ipaddress.ip_interface(a)
                assert str(iface.ip) not in seen, (name, lid, a)
                seen.add(str(iface.ip))
                if iface.version == 4:
                    v4[f"{name}/{ln.netdev}"] = str(iface.ip)
                    nets.setdefault(ln.netdev or "", set()).add(iface.network)  # type: ignore[arg-type]
            for g in ln.gids or ():
                ipaddress.ip_address(g.gid)  # a GID is a valid IPv6 address
                if g.ipv4_mapped:  # the RoCE v2 GID carries the port's own IPv4 address
                    mapped = ipaddress.IPv6Address(g.gid).ipv4_mapped
                    assert str(mapped) == v4[f"{name}/{ln.netdev}"], (name, lid, g.gid)
    assert len(v4) == 3 * len(picked)  # 2 RoCE ports and eno1 each
    # every port of one network shares one subnet across the fabric (a peer is reachable)
    assert all(len(n) == 1 for n in nets.values()), nets
