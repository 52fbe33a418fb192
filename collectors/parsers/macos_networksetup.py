"""Parse ``networksetup -listallhardwareports``: hardware port name -> BSD device.

Format (tests/fixtures/darwin, SOURCES.md): blocks of ``Hardware Port: <name>``,
``Device: <dev>``, ``Ethernet Address: <mac>``, then an optional ``VLAN Configurations``
table. The Thunderbolt ports are named ``Thunderbolt <N>`` and the bridge ``Thunderbolt
Bridge``. ``Thunderbolt <N>`` is receptacle N of system_profiler's
``receptacle_id_key`` (exo, src/exo/shared/types/thunderbolt.py, pairs them this way;
a measured pairing, not an Apple-documented one), and its RDMA device is ``rdma_<dev>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import parse_uint
from collectors.text import clean
from collectors.warning_lines import WarningLines

_DEV_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
_TB_RE = re.compile(r"Thunderbolt ([0-9]{1,3})")
MAX_PORTS = 512
MAX_WARNINGS = 20


@dataclass(slots=True)
class HardwarePorts:
    ports: dict[str, str] = field(default_factory=dict)  # device -> hardware port name
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS))

    def receptacle_of(self, dev: str) -> int | None:
        """The Thunderbolt receptacle number of a device named ``Thunderbolt N``."""
        m = _TB_RE.fullmatch(self.ports.get(dev, ""))
        return parse_uint(m.group(1)) if m else None

    def device_of_receptacle(self, n: int) -> str | None:
        return next((d for d, p in self.ports.items() if p == f"Thunderbolt {n}"), None)

    @property
    def thunderbolt(self) -> frozenset[str]:
        """Devices that are Thunderbolt ports (not the bridge)."""
        return frozenset(d for d, p in self.ports.items() if _TB_RE.fullmatch(p))


def parse_hardware_ports(text: str) -> HardwarePorts:
    out = HardwarePorts()
    port: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Hardware Port:"):
            port = clean(line.split(":", 1)[1].strip(), 100)
        elif line.startswith("Device:") and port is not None:
            dev = line.split(":", 1)[1].strip()
            if _DEV_RE.fullmatch(dev) and len(out.ports) < MAX_PORTS:
                out.ports[dev] = port
            else:
                out.warnings.add(f"refused device name {clean(dev, 40)!r}")
            port = None
        elif line.startswith("VLAN Configurations"):
            break
    return out
