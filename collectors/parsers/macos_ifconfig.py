"""Parse macOS ``ifconfig``: per interface its addresses, status and bridge members.

Format (tests/fixtures/darwin, SOURCES.md): ``<name>: flags=...<...> mtu N`` starts an
interface; indented lines follow: ``inet A netmask 0x.. [broadcast B]``, ``inet6
A%scope prefixlen N ...``, ``status: active|inactive``, and on a bridge ``member: enX
flags=...``. Addresses are kept without their ``%scope``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from collectors.text import clean

_HEAD_RE = re.compile(r"^([A-Za-z0-9_.:@-]{1,64}): flags=")
_NAME_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
MAX_IFACES = 1024
MAX_ADDRS = 64


@dataclass(slots=True)
class IfconfigIface:
    name: str
    addresses: list[str] = field(default_factory=list)
    status: str | None = None  # "active" | "inactive" as printed
    members: list[str] = field(default_factory=list)  # bridge members

    @property
    def ipv4(self) -> list[str]:
        return [a for a in self.addresses if ":" not in a]


@dataclass(slots=True)
class IfconfigResult:
    interfaces: dict[str, IfconfigIface] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _addr(word: str) -> str | None:
    word = word.split("%", 1)[0]
    try:
        return str(ipaddress.ip_address(word))
    except ValueError:
        return None


def parse_ifconfig(text: str) -> IfconfigResult:
    out = IfconfigResult()
    cur: IfconfigIface | None = None
    for raw in text.splitlines():
        m = _HEAD_RE.match(raw)
        if m:
            cur = None
            if len(out.interfaces) < MAX_IFACES:
                cur = out.interfaces.setdefault(m.group(1), IfconfigIface(m.group(1)))
            continue
        if cur is None or not raw[:1].isspace():
            continue
        parts = raw.split()
        if not parts:
            continue
        key = parts[0]
        if key in ("inet", "inet6") and len(parts) > 1:
            a = _addr(parts[1])
            if a is not None and a not in cur.addresses and len(cur.addresses) < MAX_ADDRS:
                cur.addresses.append(a)
        elif key == "status:" and len(parts) > 1:
            cur.status = clean(parts[1], 20)
        elif (
            key == "member:"
            and len(parts) > 1
            and _NAME_RE.fullmatch(parts[1])
            and len(cur.members) < MAX_ADDRS
        ):
            cur.members.append(parts[1])
    return out
