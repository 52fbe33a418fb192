"""Where a simulated Linux host sits on its networks: addresses, MACs, GUIDs.

One place for the numbering, read by the host's text (fabtop.sim.host_text) and by the
test load (fabtop.sim.bench), so ``ip addr``, the GID table and the tools agree. Hosts
are numbered by their index in the fabric; up to 254 of them keep the demo's one /24
per network (10.<port>.0.<index + 1>), a bigger fabric (``--demo-hosts``) numbers on
through the /16 with a /16 prefix, so every address, MAC and GUID stays unique and valid
for every host of the largest fabric the simulation builds.
"""

from __future__ import annotations

PER_24 = 254  # hosts per /24: .1 to .254 (never .0 or the broadcast address)
TB_NET = 254  # thunderbolt0's network: 10.254.0.0
MGMT_FIRST = 10  # eno1: 192.168.1.10 is the first host's


def _ipv4(a: int, b: int, third: int, n: int) -> str:
    """The ``n``-th address (from 0) of a.b.<third>.1 onward, 254 to a /24."""
    return f"{a}.{b}.{third + n // PER_24}.{n % PER_24 + 1}"


def roce_ipv4(port: int, index: int) -> str:
    """IPv4 address of RoCE port ``port`` of host ``index``: 10.<port>.0.<index + 1>."""
    return _ipv4(10, port, 0, index)


def tb_ipv4(index: int) -> str:
    """IPv4 address of thunderbolt0: 10.254.0.<index + 1>."""
    return _ipv4(10, TB_NET, 0, index)


def mgmt_ipv4(index: int) -> str:
    """IPv4 address of the management port eno1: 192.168.1.<10 + index>."""
    return _ipv4(192, 168, 1, MGMT_FIRST - 1 + index)


def prefix_len(hosts: int, first: int = 1) -> int:
    """The prefix length of a network of ``hosts`` hosts numbered from .``first``:
    24 while they fit one /24, else 16."""
    return 24 if first - 1 + hosts <= PER_24 else 16


def broadcast(address: str, prefix: int) -> str:
    """The broadcast address of ``address``'s network (/24 or /16)."""
    keep = address.split(".")[: prefix // 8]
    return ".".join([*keep, *["255"] * (4 - len(keep))])


def mac_lo_hi(index: int) -> tuple[int, int]:
    """The host's index as two bytes for MACs and GUIDs: (low, high)."""
    return index & 0xFF, index >> 8


def roce_mac(port: int, index: int) -> str:
    """MAC of RoCE port ``port`` (0c:42:a1 is Mellanox's OUI): 0c:42:a1:<index>:<port>:5e,
    the index's high bits added to the last byte."""
    lo, hi = mac_lo_hi(index)
    return f"0c:42:a1:{lo:02x}:{port:02x}:{0x5E + hi:02x}"


def roce_eui64(port: int, index: int) -> str:
    """The last 64 bits of the link-local address made from :func:`roce_mac` (EUI-64,
    universal/local bit flipped: 0c -> 0e), as four groups of four hex digits."""
    lo, hi = mac_lo_hi(index)
    return f"0e42:a1ff:fe{lo:02x}:{port:02x}{0x5E + hi:02x}"


def ipv4_mapped(address: str) -> str:
    """The last two groups of ``::ffff:a.b.c.d`` as a GID table writes them."""
    a, b, c, d = (int(x) for x in address.split("."))
    return f"{a:02x}{b:02x}:{c:02x}{d:02x}"
