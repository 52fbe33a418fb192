"""Parse macOS RDMA state: ``ibv_devinfo -v`` (rdma_enX devices) and ``rdma_ctl status``.

``ibv_devinfo`` on macOS 26.2+ prints rdma-core's format (capture of a MacBook Pro with
three ``rdma_enX`` devices, ``transport: Thunderbolt (100)``, ``link_layer: Thunderbolt``:
tests/fixtures/darwin). The ``-v`` GID lines (``GID[  0]:  fe80:...``) are read in
rdma-core's format, as a Linux capture shows it (../shared/fixtures/infiniband); no
macOS capture of ``-v`` was found: that part is documented only, unverified.
``rdma_ctl status`` prints ``enabled`` or ``disabled`` (mlx issues #2944, #3777).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from collectors.numbers import parse_uint
from collectors.samples import GidEntry
from collectors.text import clean

_HCA_RE = re.compile(r"^hca_id:\s*([A-Za-z0-9_.:@-]{1,64})\s*$")
_PORT_RE = re.compile(r"^\s+port:\s*([0-9]{1,3})\s*$")
_KEY_RE = re.compile(r"[a-z_]{1,40}")
_GID_RE = re.compile(r"^\s+GID\[\s*([0-9]{1,5})\]:\s*([0-9A-Fa-f:.]{2,60})(?:,\s*(.{1,40}))?\s*$")
# rdma-core ibv_devinfo port_state_str
_STATES = {
    "PORT_ACTIVE": "up",
    "PORT_DOWN": "down",
    "PORT_INIT": "init",
    "PORT_ARMED": "armed",
    "PORT_ACTIVE_DEFER": "up",
}
MAX_DEVICES = 256
MAX_GIDS = 256
# ibv_devinfo -v's longest lines (a GID, a list of capability flags) are under 200
# characters: a longer line is none of its lines, and no pattern looks at it.
MAX_LINE = 1024


@dataclass(slots=True)
class RdmaPort:
    port: int
    state: str | None = None
    active_mtu: int | None = None
    link_layer: str | None = None
    gids: list[GidEntry] | None = None  # None: no GID lines (plain ibv_devinfo)


@dataclass(slots=True)
class RdmaDevice:
    name: str
    transport: str | None = None
    ports: dict[int, RdmaPort] = field(default_factory=dict)


@dataclass(slots=True)
class IbvResult:
    devices: dict[str, RdmaDevice] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    no_devices: bool = False  # the tool said it found none


def _gid_text(g: str) -> str | None:
    try:
        return ipaddress.IPv6Address(g).exploded
    except ValueError:
        return None


def parse_ibv_devinfo(text: str) -> IbvResult:
    out = IbvResult()
    dev: RdmaDevice | None = None
    port: RdmaPort | None = None
    for raw in text.splitlines():
        if len(raw) > MAX_LINE:
            continue
        if "No IB devices found" in raw:
            out.no_devices = True
            continue
        m = _HCA_RE.match(raw)
        if m:
            port = None
            dev = None
            if len(out.devices) < MAX_DEVICES:
                dev = out.devices.setdefault(m.group(1), RdmaDevice(m.group(1)))
            continue
        if dev is None:
            continue
        m = _PORT_RE.match(raw)
        if m and (n := parse_uint(m.group(1))) is not None:
            port = dev.ports.setdefault(n, RdmaPort(n))
            continue
        m = _GID_RE.match(raw)
        if m and port is not None:
            g = _gid_text(m.group(2))
            idx = parse_uint(m.group(1))
            if g is not None and idx is not None:
                if port.gids is None:
                    port.gids = []
                if len(port.gids) < MAX_GIDS:
                    typ = clean(m.group(3), 40) if m.group(3) else None
                    port.gids.append(GidEntry(index=idx, gid=g, type=typ))
            continue
        # "<indent><key>: <value>" (a pattern "(.*?)\\s*$" would try every blank of the
        # value against the line's end: the square of a long run of blanks)
        key, sep, val = raw.partition(":")
        if not (sep and raw[:1].isspace() and _KEY_RE.fullmatch(key := key.lstrip())):
            continue
        val = val.strip()
        if port is None:
            if key == "transport":
                dev.transport = clean(val, 40)
            continue
        if key == "state":
            word = val.split(" ", 1)[0]
            port.state = _STATES.get(word, clean(word, 20).lower() or None)
        elif key == "active_mtu":
            port.active_mtu = parse_uint(val.split(" ", 1)[0])
        elif key == "link_layer":
            port.link_layer = clean(val, 40)
    return out


def parse_rdma_ctl(text: str) -> str | None:
    """``enabled`` / ``disabled`` as ``rdma_ctl status`` says; None for anything else."""
    words = text.split()
    return words[0] if words and words[0] in ("enabled", "disabled") else None
