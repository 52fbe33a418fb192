"""Parse the probe's ``sysnet`` and ``sysib`` sections: ``<relpath> <value>`` lines.

``relpath`` is relative to ``<sysfs>/class/net`` or ``<sysfs>/class/infiniband``; the value
is the file's content without its trailing newline and may hold spaces or be empty (a
file that could not be read). Counters that read ``N/A (no PMA)`` (iWARP and other
devices without a performance-management agent) are left out: absent, never zero.

Every path and value is cleaned of control characters as it is read; numbers go through
:mod:`collectors.numbers`, so a counter beyond 64 bits or a value of 5000 digits costs
that one value (with a warning), never the section.

An RDMA port's GID table (``gids/<N>``, ``gid_attrs/types/<N>``, ``gid_attrs/ndevs/<N>``)
comes on slow ticks, with a ``gids`` marker line that says it was read: ``-`` for the
whole table, ``capped`` when the probe sent only the first populated entries. Formats
from the kernel (torvalds/linux drivers/infiniband/core/sysfs.c, e04360a2):
``show_port_gid`` prints ``%pI6`` (eight groups of four hex digits) and an all-zero GID
for an empty entry; ``types`` and ``ndevs`` of an empty entry fail with EINVAL (nothing
to read); ``types`` is ``ib_cache_gid_type_str``: "IB/RoCE v1" or "RoCE v2" (cache.c).
``node_type`` prints "1: CA" (InfiniBand and RoCE) or "4: RNIC" (iWARP);
``sm_lid`` and ``lid`` print ``0x%x``; ``state`` "4: ACTIVE" (NOP, DOWN, INIT, ARMED,
ACTIVE, ACTIVE_DEFER), ``phys_state`` "5: LinkUp" (Sleep, Polling, Disabled,
PortConfigurationTraining, LinkUp, LinkErrorRecovery, Phy Test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from collectors.numbers import is_digits, parse_float, parse_hex, parse_int, parse_uint
from collectors.samples import PcieLink
from collectors.text import MAX_TEXT, clean
from collectors.warning_lines import SUPPRESSED, WarningLines

MAX_WARNINGS = 50
_MAX_LINE = 2 * MAX_TEXT  # a path and one sysfs file, which holds at most a page (4096 bytes)
_NO_PMA = "N/A (no PMA)"
# A counter line's value when the probe could not read the file (it says why in a warning:
# longer than a value may be, say): the counter is there, its value is not.
NOT_READ = "-"
_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")
# The lanes in the same file: "400 Gb/sec (4X NDR)" -> 4 (the kernel's ib_width_enum_to_int).
_WIDTH_RE = re.compile(r"^\s*[0-9.]+\s*Gb/sec\s*\(([0-9]{1,2})X\b")
_GTS_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s")
_TEMP_RE = re.compile(r"^device/hwmon/[^/]+/temp[0-9]+_input$")
_GID_RE = re.compile(r"^[0-9a-f]{4}(?::[0-9a-f]{4}){7}$")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"  # an empty GID table entry
GID_INDEX_MAX = 65535  # gid_tbl_len is an int; mlx5 has 256 entries per RoCE port
_GID_TYPE_MAX = 32  # "IB/RoCE v1", "RoCE v2", "Invalid GID type"


@dataclass(slots=True)
class NetdevRecord:
    """One ``class/net`` entry as the probe dumped it."""

    name: str
    statistics: dict[str, int] = field(default_factory=dict)
    # Statistics the probe listed but whose values were not read (unreadable, no number,
    # longer than a value may be): a metric summed from one of them is unknown.
    lost: set[str] = field(default_factory=set)
    mtu: int | None = None
    operstate: str | None = None
    speed_mbps: int | None = None  # -1 or unreadable (link down, virtual) -> None
    carrier_changes: int | None = None
    carrier_down_count: int | None = None
    type: int | None = None  # ARPHRD_*: 1 Ethernet, 32 InfiniBand (IPoIB), 772 loopback
    physical: bool = False  # a ``device`` entry exists
    pcie: PcieLink | None = None
    temperature_c: float | None = None  # hottest hwmon ``temp*_input`` of the device
    ecn_np_enabled: tuple[int, ...] | None = None
    ecn_rp_enabled: tuple[int, ...] | None = None
    attrs: dict[str, str] = field(default_factory=dict)  # every other file, raw text


@dataclass(slots=True)
class RdmaPortRecord:
    """One port of an RDMA device (``ports/<n>/...``)."""

    port: int
    state: str | None = None  # "4: ACTIVE" -> "ACTIVE"
    phys_state: str | None = None  # "5: LinkUp" -> "LinkUp"
    rate_gbps: float | None = None
    width: int | None = None  # lanes, from the same ``rate`` file ("(4X NDR)")
    link_layer: str | None = None  # "InfiniBand" | "Ethernet"
    lid: int | None = None
    sm_lid: int | None = None
    counters: dict[str, int] = field(default_factory=dict)
    counters_ext: dict[str, int] = field(default_factory=dict)
    hw_counters: dict[str, int] = field(default_factory=dict)
    # Counters (of the three dirs) listed but whose values were not read: see NetdevRecord.
    lost: set[str] = field(default_factory=set)
    # Counters the port says it does not have ("N/A (no PMA)"): no value, nothing lost.
    absent: set[str] = field(default_factory=set)
    netdevs: list[str] = field(default_factory=list)  # from gid_attrs/ndevs/*, in order
    # GID table: populated entries by index; None when the table was not read.
    gids: dict[int, str] | None = None
    gid_types: dict[int, str] = field(default_factory=dict)  # gid_attrs/types/<N>
    gid_ndevs: dict[int, str] = field(default_factory=dict)  # gid_attrs/ndevs/<N>
    gids_truncated: bool = False  # the probe sent only the first populated entries


@dataclass(slots=True)
class RdmaDeviceRecord:
    """One ``class/infiniband`` device."""

    name: str
    fw_ver: str | None = None
    hca_type: str | None = None
    board_id: str | None = None
    node_guid: str | None = None
    node_type: str | None = None  # "1: CA" -> "CA" (IB, RoCE); "RNIC" (iWARP)
    ports: dict[int, RdmaPortRecord] = field(default_factory=dict)
    netdevs: list[str] = field(default_factory=list)  # from device/net/<name>
    pcie: PcieLink | None = None
    temperature_c: float | None = None


@dataclass(slots=True)
class SysNet:
    """Parsed ``sysnet`` section."""

    netdevs: dict[str, NetdevRecord] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))


@dataclass(slots=True)
class SysIb:
    """Parsed ``sysib`` section."""

    devices: dict[str, RdmaDeviceRecord] = field(default_factory=dict)
    warnings: WarningLines = field(default_factory=partial(WarningLines, MAX_WARNINGS, SUPPRESSED))


@dataclass(slots=True)
class _DeviceBits:
    """PCIe link and hwmon temperatures found under a ``device/`` entry."""

    speed: float | None = None
    width: int | None = None
    max_speed: float | None = None
    max_width: int | None = None
    temps: list[float] = field(default_factory=list)

    def pcie(self) -> PcieLink | None:
        if self.speed is None and self.width is None and self.max_speed is None:
            return None
        return PcieLink(self.speed, self.width, self.max_speed, self.max_width)

    def temperature(self) -> float | None:
        return max(self.temps) if self.temps else None


def _int(text: str) -> int | None:
    """A decimal or ``0x`` hexadecimal attribute (``type``, ``mtu``, ``speed`` -1)."""
    t = text.strip()
    return parse_hex(t) if t[:2] in ("0x", "0X") else parse_int(t)


def _after_colon(text: str) -> str | None:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; a value without a number prefix is kept whole."""
    t = text.strip()
    if not t:
        return None
    head, sep, tail = t.partition(":")
    if sep and is_digits(head.strip()):
        return tail.strip() or None
    return t


def parse_ib_rate(text: str) -> float | None:
    """``"25 Gb/sec (1X EDR)"`` -> 25.0."""
    m = _RATE_RE.match(text)
    return parse_float(m.group(1)) if m else None


def parse_ib_width(text: str) -> int | None:
    """``"400 Gb/sec (4X NDR)"`` -> 4 lanes; None when the file names no width."""
    m = _WIDTH_RE.match(text)
    return (int(m.group(1)) or None) if m else None


def parse_pcie_speed(text: str) -> float | None:
    """``"16.0 GT/s PCIe"`` or ``"8 GT/s"`` -> GT/s as float; ``"Unknown"`` -> None."""
    m = _GTS_RE.match(text)
    return parse_float(m.group(1)) if m else None


def _split_lines(text: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = clean(raw.rstrip("\r"), _MAX_LINE)
        if not line.strip():
            continue
        path, _, value = line.partition(" ")
        pairs.append((path, value.strip()))
    return pairs


def _device_bit(
    bits: _DeviceBits, rel: str, value: str, warnings: WarningLines, where: str
) -> bool:
    """Take PCIe/hwmon files below ``device/``; True when ``rel`` was one of them."""
    if rel == "device/current_link_speed":
        bits.speed = parse_pcie_speed(value)
    elif rel == "device/max_link_speed":
        bits.max_speed = parse_pcie_speed(value)
    elif rel == "device/current_link_width":
        bits.width = _int(value) or None  # width 0 means the link is not trained
    elif rel == "device/max_link_width":
        bits.max_width = _int(value) or None
    elif _TEMP_RE.match(rel):
        milli = _int(value)
        if milli is None:
            if value:
                warnings.add(f"{where}/{rel}: bad temperature {value[:40]!r}")
        else:
            bits.temps.append(milli / 1000.0)
    else:
        return False
    return True


def _enabled_prios(flags: dict[int, bool]) -> tuple[int, ...] | None:
    return tuple(sorted(p for p, on in flags.items() if on)) if flags else None


def parse_sysnet(text: str) -> SysNet:
    """Parse a ``sysnet`` section into one record per netdev."""
    out = SysNet()
    bits: dict[str, _DeviceBits] = {}
    ecn: dict[tuple[str, str], dict[int, bool]] = {}
    for path, value in _split_lines(text):
        name, slash, rel = path.partition("/")
        if not slash or not name or not rel:
            out.warnings.add(f"unparsed line: {path[:80]!r}")
            continue
        rec = out.netdevs.get(name)
        if rec is None:
            rec = out.netdevs[name] = NetdevRecord(name)
            bits[name] = _DeviceBits()
        if rel.startswith("statistics/"):
            num = parse_uint(value)
            if num is None:
                rec.lost.add(rel[len("statistics/") :])
                if value and value != NOT_READ:
                    out.warnings.add(f"{name}/{rel}: bad value {value[:40]!r}")
            else:
                rec.statistics[rel[len("statistics/") :]] = num
        elif rel == "device" or rel.startswith("device/"):
            rec.physical = True
            _device_bit(bits[name], rel, value, out.warnings, name)
        elif rel.startswith("ecn/roce_np/enable/") or rel.startswith("ecn/roce_rp/enable/"):
            role = rel.split("/")[1]
            prio = _int(rel.rsplit("/", 1)[1])
            flag = _int(value)
            if prio is not None and 0 <= prio <= 7 and flag is not None:
                ecn.setdefault((name, role), {})[prio] = flag != 0
        elif rel == "mtu":
            rec.mtu = _int(value)
        elif rel == "operstate":
            rec.operstate = value or None
        elif rel == "speed":
            speed = _int(value)
            rec.speed_mbps = speed if speed is not None and speed > 0 else None
        elif rel == "carrier_changes":
            rec.carrier_changes = parse_uint(value)
        elif rel == "carrier_down_count":
            rec.carrier_down_count = parse_uint(value)
        elif rel == "type":
            rec.type = _int(value)
        else:
            rec.attrs[rel] = value
    for name, rec in out.netdevs.items():
        rec.pcie = bits[name].pcie()
        rec.temperature_c = bits[name].temperature()
        rec.ecn_np_enabled = _enabled_prios(ecn.get((name, "roce_np"), {}))
        rec.ecn_rp_enabled = _enabled_prios(ecn.get((name, "roce_rp"), {}))
    return out


_COUNTER_DIRS = ("counters", "counters_ext", "hw_counters")


def _port_line(
    port: RdmaPortRecord, rel: str, value: str, warnings: WarningLines, where: str
) -> None:
    group, _, leaf = rel.partition("/")
    if group in _COUNTER_DIRS and leaf and "/" not in leaf:
        num = parse_uint(value)
        if num is not None:
            target = {"counters": port.counters, "counters_ext": port.counters_ext}.get(
                group, port.hw_counters
            )
            target[leaf] = num
        elif value == _NO_PMA:  # the port has no such counter
            port.absent.add(leaf)
        else:
            port.lost.add(leaf)
            if value and value != NOT_READ:
                warnings.add(f"{where}/{rel}: bad value {value[:40]!r}")
    elif group == "gid_attrs" and leaf.startswith("ndevs/"):
        if value and value not in port.netdevs:
            port.netdevs.append(value)
        index = _gid_index(leaf[len("ndevs/") :])
        if value and index is not None:
            port.gid_ndevs[index] = value
    elif group == "gid_attrs" and leaf.startswith("types/"):
        index = _gid_index(leaf[len("types/") :])
        if value and index is not None:
            port.gid_types[index] = value[:_GID_TYPE_MAX]
    elif rel == "gids":  # the probe's marker: the table was read
        if port.gids is None:
            port.gids = {}
        if value == "capped":
            port.gids_truncated = True
    elif group == "gids" and leaf:
        if port.gids is None:
            port.gids = {}
        index = _gid_index(leaf)
        gid = value.lower()
        if index is None or not _GID_RE.match(gid):
            warnings.add(f"{where}/{rel}: bad GID {value[:48]!r}")
        elif gid != ZERO_GID:
            port.gids[index] = gid
    elif rel == "state":
        port.state = _after_colon(value)
    elif rel == "phys_state":
        port.phys_state = _after_colon(value)
    elif rel == "rate":
        port.rate_gbps = parse_ib_rate(value)
        port.width = parse_ib_width(value)
    elif rel == "link_layer":
        port.link_layer = value or None
    elif rel == "lid":
        port.lid = _int(value)
    elif rel == "sm_lid":
        port.sm_lid = _int(value)


def _gid_index(text: str) -> int | None:
    n = parse_uint(text)
    return n if n is not None and n <= GID_INDEX_MAX else None


def parse_sysib(text: str) -> SysIb:
    """Parse a ``sysib`` section into RDMA devices and their ports."""
    out = SysIb()
    bits: dict[str, _DeviceBits] = {}
    for path, value in _split_lines(text):
        name, slash, rel = path.partition("/")
        if not slash or not name or not rel:
            out.warnings.add(f"unparsed line: {path[:80]!r}")
            continue
        dev = out.devices.get(name)
        if dev is None:
            dev = out.devices[name] = RdmaDeviceRecord(name)
            bits[name] = _DeviceBits()
        if rel.startswith("ports/"):
            parts = rel.split("/", 2)
            num = parse_uint(parts[1]) if len(parts) > 1 else None
            if num is None or len(parts) < 3:
                out.warnings.add(f"unparsed line: {path[:80]!r}")
                continue
            port = dev.ports.get(num)
            if port is None:
                port = dev.ports[num] = RdmaPortRecord(num)
            _port_line(port, parts[2], value, out.warnings, f"{name}/ports/{num}")
        elif rel.startswith("device/net/"):
            ndev = rel[len("device/net/") :].split("/", 1)[0]
            if ndev and ndev not in dev.netdevs:
                dev.netdevs.append(ndev)
        elif rel.startswith("device/"):
            _device_bit(bits[name], rel, value, out.warnings, name)
        elif rel in ("fw_ver", "hca_type", "board_id", "node_guid"):
            setattr(dev, rel, value or None)
        elif rel == "node_type":
            dev.node_type = _after_colon(value)
    for name, dev in out.devices.items():
        dev.pcie = bits[name].pcie()
        dev.temperature_c = bits[name].temperature()
    return out


def parse_kv_dump(text: str) -> tuple[dict[str, str], list[str]]:
    """Generic ``<relpath> <value>`` dump (e.g. ``cputhrottle``) into a dict."""
    values: dict[str, str] = {}
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    for path, value in _split_lines(text):
        if not path:
            warnings.add("line without a path")
            continue
        values[path] = value
    return values, warnings


# --- counters sent by position (collectors/structured.py) ------------------------------


@dataclass(slots=True, frozen=True)
class CounterRun:
    """Consecutive positions of a structured counter section that fill one dict."""

    owner: str  # the netdev, or the RDMA device
    port: int | None  # the RDMA port; None for a netdev
    group: str  # statistics | counters | counters_ext | hw_counters
    start: int
    end: int
    leaves: tuple[str, ...]


def counter_runs(kind: str, names: tuple[str, ...]) -> tuple[tuple[CounterRun, ...], list[str]]:
    """Where each position of a ``sysnet_counters``/``sysib_counters`` schema goes.

    Built once per schema; a name that fits no counter file is left unplaced and said.
    """
    runs: list[CounterRun] = []
    warnings = WarningLines(MAX_WARNINGS, SUPPRESSED)
    cur: tuple[str, int | None, str] | None = None
    start = 0
    leaves: list[str] = []

    def close(end: int) -> None:
        if cur is not None and leaves:
            runs.append(CounterRun(cur[0], cur[1], cur[2], start, end, tuple(leaves)))

    for i, name in enumerate(names):
        parts = name.split("/")
        key: tuple[str, int | None, str] | None = None
        if kind == "sysnet_counters" and len(parts) == 3 and parts[1] == "statistics":
            key = (parts[0], None, "statistics")
        elif kind == "sysib_counters" and len(parts) == 5 and parts[1] == "ports":
            port = parse_uint(parts[2])
            if port is not None and parts[3] in _COUNTER_DIRS:
                key = (parts[0], port, parts[3])
        if key is None or not parts[0] or not parts[-1]:
            warnings.add(f"counter name not placed: {name[:80]!r}")
            close(i)
            cur, leaves = None, []
            continue
        if key != cur:
            close(i)
            cur, start, leaves = key, i, []
        leaves.append(parts[-1])
    close(len(names))
    return tuple(runs), warnings


def _run_values(
    run: CounterRun, vals: list[int | None], lost: set[str], absent: set[str] | None = None
) -> dict[str, int]:
    """The run's counters that were read; the names of those that were not go in ``lost``,
    but for those the text says the device does not have (``absent``)."""
    chunk = vals[run.start : run.end]
    if None in chunk:
        lost.update(
            k
            for k, v in zip(run.leaves, chunk, strict=True)
            if v is None and not (absent and k in absent)
        )
        return {k: v for k, v in zip(run.leaves, chunk, strict=True) if v is not None}
    return dict(zip(run.leaves, chunk, strict=True))  # type: ignore[arg-type]


def apply_sysnet_counters(
    netdevs: dict[str, NetdevRecord], runs: tuple[CounterRun, ...], vals: list[int | None]
) -> None:
    """Put one tick of ``sysnet_counters`` values into the netdevs' statistics."""
    for run in runs:
        rec = netdevs.get(run.owner)
        if rec is None:
            rec = netdevs[run.owner] = NetdevRecord(run.owner)
        rec.statistics.update(_run_values(run, vals, rec.lost))


def apply_sysib_counters(
    devices: dict[str, RdmaDeviceRecord], runs: tuple[CounterRun, ...], vals: list[int | None]
) -> None:
    """Put one tick of ``sysib_counters`` values into the ports' counter dicts."""
    for run in runs:
        dev = devices.get(run.owner)
        if dev is None:
            dev = devices[run.owner] = RdmaDeviceRecord(run.owner)
        assert run.port is not None
        port = dev.ports.get(run.port)
        if port is None:
            port = dev.ports[run.port] = RdmaPortRecord(run.port)
        target = {"counters": port.counters, "counters_ext": port.counters_ext}.get(
            run.group, port.hw_counters
        )
        target.update(_run_values(run, vals, port.lost, port.absent))
