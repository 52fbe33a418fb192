"""Parse ``ip -o addr show``: each netdev's IPv4/IPv6 addresses with their prefix.

One line per address (iproute2's ``-o``/``-oneline``: the address's continuation lines
folded behind a backslash), and with plain ``ip -o addr`` one line per link too, which
carries ``<FLAGS>`` and no ``inet``: those are passed over. Captured formats:
``tests/fixtures/ipaddr/SOURCES.md`` (a Vagrant README's ``ip -o -4 addr`` and a console
transcript's ``ip -o a``). Addresses come out as ``address/prefix`` text
(``10.0.11.252/24``), the form :func:`ipaddress.ip_interface` reads; a netdev name
``eth0@if24`` (a veth's peer index) is its name before the ``@``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from functools import partial

from collectors.text import clean
from collectors.warning_lines import WarningLines

MAX_NETDEVS = 512
MAX_ADDRS = 32  # per netdev: more is a host with aliases by the hundred, not a fabric port
MAX_WARNINGS = 20

# "<ifindex>: <name>[@<peer>]    inet[6] <address>/<prefix> ..."
_LINE_RE = re.compile(r"^[0-9]+:\s+([A-Za-z0-9_.:-]{1,64})(?:@\S*)?\s+(inet6?)\s+(\S+)")


@dataclass(slots=True)
class IpAddrResult:
    """The addresses per netdev, in the order the kernel listed them, and what was odd."""

    addresses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))


def parse_ip_addr(text: str) -> IpAddrResult:
    """Addresses per netdev from ``ip -o addr show`` text; never raises."""
    out = IpAddrResult()
    got: dict[str, list[str]] = {}
    for raw in text.splitlines():
        m = _LINE_RE.match(raw)
        if m is None:
            continue  # a link line, a blank, anything else ip might print
        name, family, word = m.groups()
        try:
            iface = ipaddress.ip_interface(word.split("%", 1)[0])
        except ValueError:
            out.warnings.add(f"ip addr: {clean(name, 64)}: not an address: {clean(word, 80)}")
            continue
        if (family == "inet6") != (iface.version == 6):
            out.warnings.add(f"ip addr: {clean(name, 64)}: {family} {clean(word, 80)}")
            continue
        addrs = got.get(name)
        if addrs is None:
            if len(got) >= MAX_NETDEVS:
                continue
            addrs = got[name] = []
        text_form = iface.with_prefixlen
        if text_form not in addrs and len(addrs) < MAX_ADDRS:
            addrs.append(text_form)
    out.addresses = {k: tuple(v) for k, v in got.items()}
    return out
