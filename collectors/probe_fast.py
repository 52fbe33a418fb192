# fabtop fast probe: Python 3.6+, standard library only. probe.sh carries this file as a
# string and runs it with `python3 -c` when the node has a python3 (docs/PROBE.md, "The
# fast probe"); nothing is written on the node. It prints the same frames as the sh probe
# from the same tree, without a fork per tick: counter files are opened once and re-read
# with pread, a real /sys gives netdev statistics from one rtnetlink dump and ethtool
# statistics from the ETHTOOL_GSTATS ioctl. Slow sources (ethtool -i, mlnx_qos, dcb,
# amd-smi) still run as processes on slow ticks; nvidia-smi is one persistent process.
#
# It must stay valid Python 3.6 (tests/unit/test_probe_fast.py checks it with vermin):
# no dataclasses, no walrus, no `from __future__ import annotations`, typing generics.
#
# Between ticks it watches the lossless priorities of the ports it reads with ethtool
# statistics (the PFC watchdog, see Watchdog below) and sends a `@@fabtop-event` the
# moment a pfcwd-style storm condition holds.
import array
import binascii
import errno
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

NAME_RE = re.compile(r"[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]*\Z")
DIRS_RE = re.compile(r"[A-Za-z0-9_./:-]*\Z")
SYS_RE = re.compile(r"/[A-Za-z0-9_./-]*\Z")
FIELDS_RE = re.compile(r"[A-Za-z0-9_.]+(,[A-Za-z0-9_.]+)*\Z")
CLEAN_RE = re.compile(r"[^A-Za-z0-9_.:@/ =,()-]")
CTRL_RE = re.compile(rb"[\x00-\x1f\x7f]")
VALUE_MAX = 2048  # as the sh readers: a longer sysfs value is left out
PLAIN_ROW = re.compile(rb"(?:[0-9]{1,20}|-)(?: (?:[0-9]{1,20}|-))*")
FRAME_HARD_MAX = 16711680
# Software versions (issue 15; docs/PROBE.md), byte for byte probe.sh's FAB_NCCL and
# FAB_DPKGF: each distinct libnccl.so* file a readable process maps, and the dist-info
# beside a pip wheel's libnccl.so.2 (no version in its name); node paths are expanded
# only inside double quotes. It runs as a child (sh -c) under the per-section timeout,
# never in this process: reading a hung process's maps can block in the kernel.
NCCL_SCAN = """grep -s -h -o "/.*/libnccl\\.so[^/]*" /proc/[0-9]*/maps | sort -u | head -n 16 |
while IFS= read -r p; do
	printf "lib %s\\n" "$p"
	case $p in
	*" (deleted)") ;;
	*/nvidia/nccl/lib/libnccl.so.2)
		for d in "${p%/nvidia/nccl/lib/*}"/nvidia_nccl_cu*.dist-info; do
			if [ -d "$d" ]; then printf "dist %s\\n" "${d##*/}"; fi
		done ;;
	esac
done"""
DPKG_FORMAT = "${db:Status-Abbrev} ${Version}\\n"
WARN_MAX = 200
# A threshold's value as probe.py writes it: 0 to 16 integer digits, no leading zero, and
# at most 6 decimals (probe.sh's fab_decimal checks the same).
DECIMAL_RE = re.compile(r"(0|[1-9][0-9]{0,15})(\.[0-9]{1,6})?\Z")
# The watchdog's thresholds, named as the config's [thresholds] (fabtop/core/thresholds.py).
STORM_ARGS = ("storm_pause_ratio", "storm_flat_fraction", "storm_flat_bytes_per_s")
SEEN_MAX = 4096  # notes said once (names refused, odd files): bounded like every table


class Refused(Exception):
    pass


def die(msg: str) -> None:
    try:
        os.write(2, ("fabtop-probe: %s\n" % msg).encode())
    finally:
        os._exit(2)


def okname(n: str, limit: int) -> bool:
    return bool(NAME_RE.match(n)) and len(n) <= limit


def clean(s: str) -> str:
    return CLEAN_RE.sub("?", s)[:200]


class Args(object):
    def __init__(self, argv: List[str]) -> None:
        self.iv = 1000
        self.sys = "/sys"
        self.xpath = ""
        self.ifaces = []  # type: List[str]
        self.slow = 0
        self.to = 2.0
        self.gpu = "auto"
        self.maxf = 0
        self.scap = 8388608
        self.fcap = 15728640
        self.gf = (
            "index,uuid,name,temperature.gpu,utilization.gpu,utilization.memory,"
            "memory.used,memory.total,power.draw"
        )
        self.gfb = "index,name,temperature.gpu,utilization.gpu,memory.used,memory.total,power.draw"
        self.probe = "auto"
        self.hw_tick = None  # type: Optional[Set[str]]
        self.port_tick = None  # type: Optional[Set[str]]
        self.fw_sudo = False
        self.optics_sudo = False
        self.mlxlink = False  # mlxlink on optics rounds, one device a round (probe.sh MLX)
        self.optics_s = 30  # least seconds between optics rounds (probe.sh OPTS)
        # The watchdog's storm condition: the session sends the config's thresholds of
        # these names (STORM_ARGS); the constants only serve a run without them.
        self.storm_ratio = STORM_RATIO
        self.flat_frac = FLAT_FRACTION
        self.flat_bytes = FLAT_BYTES_PER_S
        for a in argv:
            key, sep, v = a.partition("=")
            if not sep:
                raise Refused("unknown argument")
            if key == "interval_ms":
                self.iv = self._int(v, 100, 60000, key)
            elif key == "sysfs":
                if not SYS_RE.match(v) or ".." in v:
                    raise Refused("bad sysfs")
                self.sys = v.rstrip("/") or "/"
            elif key == "path":
                if not DIRS_RE.match(v) or any(not d.startswith("/") for d in v.split(":") if v):
                    raise Refused("bad path")
                self.xpath = v
            elif key == "ifaces":
                names = v.split(",")
                if not all(okname(n, 64) for n in names):
                    raise Refused("bad ifaces")
                self.ifaces = names
            elif key == "slow_ticks":
                self.slow = self._int(v, 1, 100000, key)
            elif key == "timeout_s":
                if not re.match(r"[0-9]{1,3}(\.[0-9]{1,3})?\Z", v) or not 0 < float(v) <= 600:
                    raise Refused("bad timeout_s")
                self.to = float(v)
            elif key == "gpu":
                if v not in ("auto", "off"):
                    raise Refused("bad gpu")
                self.gpu = v
            elif key in ("gpu_fields", "gpu_fallback"):
                if not FIELDS_RE.match(v) or len(v) > 1500:
                    raise Refused("bad " + key)
                if key == "gpu_fields":
                    self.gf = v
                else:
                    self.gfb = v
            elif key == "max_frames":
                self.maxf = self._int(v, 0, 999999999, key, zero=True)
            elif key == "section_bytes":
                self.scap = self._int(v, 1, 99999999, key)
            elif key == "frame_bytes":
                self.fcap = self._int(v, 1, 99999999, key)
            elif key in ("ib_hw_tick", "ib_port_tick"):
                if not re.match(r"[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*\Z", v) or len(v) > 1500:
                    raise Refused("bad " + key)
                if key == "ib_hw_tick":
                    self.hw_tick = set(v.split(","))
                else:
                    self.port_tick = set(v.split(","))
            elif key in STORM_ARGS:
                # A decimal (DECIMAL_RE); a ratio or fraction within 0..1.
                if not DECIMAL_RE.match(v) or (key != "storm_flat_bytes_per_s" and float(v) > 1):
                    raise Refused("bad " + key)
                if key == "storm_pause_ratio":
                    self.storm_ratio = float(v)
                elif key == "storm_flat_fraction":
                    self.flat_frac = float(v)
                else:
                    self.flat_bytes = float(v)
            elif key == "optics_s":
                self.optics_s = self._int(v, 0, 86400, key, zero=True)
            elif key in ("fw_sudo", "optics_sudo", "mlxlink"):
                if v not in ("0", "1"):
                    raise Refused("bad " + key)
                setattr(self, key, v == "1")
            elif key == "probe":
                if v not in ("auto", "python", "sh"):
                    raise Refused("bad probe")
                self.probe = v
            else:
                raise Refused("unknown argument")
        if not 65536 <= self.fcap <= FRAME_HARD_MAX:
            raise Refused("bad frame_bytes")
        if not 4096 <= self.scap <= self.fcap:
            raise Refused("bad section_bytes")
        if not self.slow:
            self.slow = (60000 + self.iv - 1) // self.iv

    @staticmethod
    def _int(v: str, lo: int, hi: int, key: str, zero: bool = False) -> int:
        leading_zero = v.startswith("0") and not (zero and v == "0")
        if not re.match(r"[0-9]+\Z", v) or len(v) > 9 or leading_zero:
            raise Refused("bad " + key)
        n = int(v)
        if not lo <= n <= hi:
            raise Refused("bad " + key)
        return n


def esc(line: bytes) -> bytes:
    if len(line) > 65536:
        line = line[:65536]
    return b"@" + line if line.startswith(b"@@") else line


class Sections(object):
    """One frame's output, with the sh probe's byte caps (section_bytes, frame_bytes)."""

    def __init__(self, scap: int, fcap: int, gen: "Optional[Generation]" = None) -> None:
        self.scap = scap
        self.fcap = fcap
        self.out = []  # type: List[bytes]
        self.fb = 0
        self.gen = gen  # sees each section as written

    def add(self, kind: str, subj: str, rns: int, st: str, det: str, lines: List[bytes]) -> bool:
        """Append one section; False when a cap cut it."""
        kept = []  # type: List[bytes]
        sb = 0
        trunc = ""
        total = sum(map(len, lines)) + len(lines)
        if (
            total <= self.scap
            and self.fb + total <= self.fcap
            and not any(ln[:2] == b"@@" or len(ln) > 65536 for ln in lines)
        ):
            kept, sb, lines = list(lines), total, []  # the common case: nothing to cut
        for ln in lines:
            ln = esc(ln)
            n = len(ln) + 1
            if sb + n > self.scap:
                trunc = "section cap %d bytes" % self.scap
                break
            if self.fb + sb + n > self.fcap:
                trunc = "frame cap %d bytes" % self.fcap
                break
            kept.append(ln)
            sb += n
        if trunc:
            if st == "ok":  # a values section keeps its schema=N: the collector says the cut
                det = trunc + ("; " + det if det.startswith("schema=") else "")
            else:
                det = trunc + "; " + st + (" " + det if det else "")
            st = "truncated"
        head = "@@section %s %s %s %s%s" % (
            kind,
            subj,
            rns if rns else "-",
            st,
            " " + det if det else "",
        )
        self.out.append(head.encode())
        self.out.extend(kept)
        self.fb += sb
        if self.gen is not None:
            self.gen.section(kind, subj, det, kept)
        return not trunc


# docs/PROBE.md "Generation": sections whose text the collector reads anew every tick
# (collectors/gpu_sections.py GPU_KINDS, held equal by a test): their text moves nothing.
GEN_PER_TICK = ("gpu_nvidia", "gpu_amd")
# The probe section's lines that change from tick to tick and that no layout is built
# from (the collector reads impl and warning lines; docs/PROBE.md "probe lines").
GEN_TICK_NOTES = (b"interval_ms ", b"slow ", b"skipped_ticks ", b"ethtool_ioctls ", b"gen ")
# A NIC temperature (hwmon, millidegrees) in sysnet/sysib: the collector reads such a
# line every tick (collectors/layout.py _HWMON_LINE, the same pattern), so its value
# moves nothing; a line that is not plain stays part of the text.
GEN_TEMP_LINE = re.compile(
    rb"([!-.0-~]{1,64}/device/hwmon/[!-.0-~]{1,64}/temp[0-9]{1,4}_input) [0-9]{1,9}"
)


def temp_less(text: bytes) -> bytes:
    """Sysfs lines without their temperatures' values (GEN_TEMP_LINE): only the lines
    with a ``/hwmon/`` are looked at (a few per netdev among dozens)."""
    parts = []  # type: List[bytes]
    done = 0
    at = text.find(b"/hwmon/")
    while at >= 0:
        start = text.rfind(b"\n", 0, at) + 1
        end = text.find(b"\n", at)
        if end < 0:
            end = len(text)
        m = GEN_TEMP_LINE.fullmatch(text, start, end)
        if m is not None:
            parts.append(text[done : m.end(1)])
            done = end
        at = text.find(b"/hwmon/", end)
    if not parts:
        return text
    parts.append(text[done:])
    return b"".join(parts)


class Generation(object):
    """What the collector keys a host's layout on (docs/PROBE.md "Generation"): ``gen
    <run>.<n>`` in every probe section, where ``n`` moves whenever the text of a section
    differs from what was last sent under its kind and subject (a slow section's on its
    slow tick, a per-tick one's on any tick) and ``run`` names this probe's run (a new
    stream starts again from 1). Values by position move nothing: the collector reads
    them every tick, and sees their schema ids and every section's header itself.

    The last text of each section is kept whole (about one frame's text), not as a
    checksum: a change is never missed, and a comparison is one memcmp."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.n = 1
        self.moved = False
        self.last = {}  # type: Dict[Tuple[str, str], bytes]
        self.seen = set()  # type: Set[Tuple[str, str]]  # since the last slow frame

    def section(self, kind: str, subj: str, det: str, lines: List[bytes]) -> None:
        """One section as it is written (after its caps)."""
        if kind in GEN_PER_TICK or kind == "probe" or det.startswith("schema="):
            return
        if kind == "schema":  # names (re)defined or dropped: nothing to keep of them
            self.moved = True
            return
        text = b"\n".join(lines)
        self.see((kind, subj), temp_less(text) if kind in ("sysnet", "sysib") else text)

    def see(self, key: Tuple[str, str], text: bytes) -> None:
        self.seen.add(key)
        if self.last.get(key) != text:
            self.last[key] = text
            self.moved = True

    def declare(self, notes: List[bytes], slow: bool) -> bytes:
        """The frame's ``gen`` line, once its other sections and its probe ``notes`` are
        seen. A slow frame forgets what was not sent since the last one (a netdev gone)."""
        self.see(("probe", "-"), b"\n".join(n for n in notes if not n.startswith(GEN_TICK_NOTES)))
        if self.moved:
            self.n += 1
            self.moved = False
        if slow:
            for key in [k for k in self.last if k not in self.seen]:
                del self.last[key]
            self.seen = set()
        return b"gen %s.%d" % (self.run.encode(), self.n)


# ---------------------------------------------------------------- sysfs file table


class Entry(object):
    """One file (or marker) of the scan, as the sh probe's `<code> <kind> <rel>` lines."""

    __slots__ = ("code", "kind", "rel", "path", "fd", "netlink", "pre", "ctr")

    def __init__(self, code: str, kind: str, rel: str, path: str) -> None:
        self.code = code  # N fast file, S slow file, n/s fast/slow marker
        self.kind = kind  # sysnet | sysib
        self.rel = rel
        self.path = path
        self.fd = -1
        self.netlink = ""  # a real /sys netdev value taken from rtnetlink instead
        self.pre = rel.encode() + b" "  # the frame line's start, built once per scan
        parts = rel.split("/")
        # A counter file: sent by position (collectors/structured.py is_counter_path).
        self.ctr = (kind == "sysnet" and len(parts) == 3 and parts[1] == "statistics") or (
            kind == "sysib"
            and len(parts) == 5
            and parts[1] == "ports"
            and parts[3] in ("counters", "counters_ext", "hw_counters")
        )


def regular(p: str) -> bool:
    try:
        return (os.stat(p).st_mode & 0o170000) == 0o100000
    except OSError:
        return False


def exists(p: str) -> bool:
    return os.path.lexists(p)


def listdir(d: str) -> List[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


class Scan(object):
    def __init__(self, probe: "Probe") -> None:
        self.p = probe
        self.entries = []  # type: List[Entry]
        self.ethtool = []  # type: List[str]
        self.physical = []  # type: List[str]  # netdevs with a device entry: optics
        self.cpu = []  # type: List[Tuple[str, str]]
        self.dirs = {}  # type: Dict[str, Tuple[int, int]]  # tree dirs -> (mtime_ns, inode)
        self.speed = {}  # type: Dict[str, Entry]  # netdev -> its speed file
        # Per kind, built once per scan: the per-tick text lines, the counters sent by
        # position (and their names), the slow-tick lines.
        self.tick = {}  # type: Dict[str, List[Entry]]
        self.ctr = {}  # type: Dict[str, List[Entry]]
        self.ctr_names = {}  # type: Dict[str, List[bytes]]
        self.slow = {}  # type: Dict[str, List[Entry]]
        self.reads = []  # type: List[Entry]
        self.reads_slow = []  # type: List[Entry]

    def index(self) -> None:
        # What a tick reads: the files read every tick, and on slow ticks the slow ones too.
        self.reads = [e for e in self.entries if e.code == "N"]
        self.reads_slow = [e for e in self.entries if e.code in ("N", "S")]
        for kind in ("sysnet", "sysib", "systb"):
            mine = [e for e in self.entries if e.kind == kind]
            self.tick[kind] = [e for e in mine if e.code == "n" or (e.code == "N" and not e.ctr)]
            self.ctr[kind] = [e for e in mine if e.code == "N" and e.ctr]
            self.ctr_names[kind] = [e.pre[:-1] for e in self.ctr[kind]]
            self.slow[kind] = [e for e in mine if e.code in ("s", "S")]

    def one(self, code: str, kind: str, rel: str, path: str) -> None:
        if regular(path):
            e = Entry(code, kind, rel, path)
            self.entries.append(e)
            if kind == "sysnet" and rel.endswith("/speed") and rel.count("/") == 1:
                self.speed[rel[:-6]] = e
        elif exists(path):
            self.p.once("-odd " + rel, "not a regular file, not read: " + rel)

    def files(self, code: str, kind: str, rel: str, d: str) -> None:
        for b in listdir(d):
            if not okname(b, 128):
                self.p.refuse("file", rel + "/" + b)
                continue
            if code in ("n", "s"):
                self.entries.append(Entry(code, kind, rel + "/" + b, d + "/" + b))
            else:
                self.one(code, kind, rel + "/" + b, d + "/" + b)

    def split(self, rel: str, d: str, tick: Optional[Set[str]]) -> None:
        """An RDMA port's counter files: the names of ``tick`` (ib_port_tick for counters/
        and counters_ext/, ib_hw_tick for hw_counters/) every tick, the others on slow
        ticks (each read is a PMA query or a firmware command on real hardware); without
        the argument, all per tick."""
        if tick is None:
            self.files("N", "sysib", rel, d)
            return
        for b in listdir(d):
            if not okname(b, 128):
                self.p.refuse("file", rel + "/" + b)
                continue
            self.one("N" if b in tick else "S", "sysib", rel + "/" + b, d + "/" + b)

    def run(self) -> None:
        sysroot = self.p.a.sys
        ifaces = self.p.a.ifaces
        net = sysroot + "/class/net"
        for n in listdir(net):
            d = net + "/" + n
            if not okname(n, 64):
                self.p.refuse("netdev", n)
                continue
            if ifaces and n not in ifaces:
                continue
            self.files("N", "sysnet", n + "/statistics", d + "/statistics")
            for f in (
                "mtu",
                "operstate",
                "speed",
                "carrier_changes",
                "carrier_up_count",
                "carrier_down_count",
            ):
                self.one("N", "sysnet", n + "/" + f, d + "/" + f)
            if exists(d + "/device"):
                self.entries.append(Entry("n", "sysnet", n + "/device", d + "/device"))
                for f in (
                    "current_link_speed",
                    "current_link_width",
                    "max_link_speed",
                    "max_link_width",
                ):
                    self.one("S", "sysnet", n + "/device/" + f, d + "/device/" + f)
                for hb in listdir(d + "/device/hwmon"):
                    h = d + "/device/hwmon/" + hb
                    if not hb.startswith("hwmon") or not regular(h + "/name"):
                        continue
                    if not okname(hb, 64):
                        continue
                    self.entries.append(
                        Entry("S", "sysnet", n + "/device/hwmon/%s/name" % hb, h + "/name")
                    )
                    for tb in listdir(h):
                        if (
                            tb.startswith("temp")
                            and tb.endswith("_input")
                            and regular(h + "/" + tb)
                            and okname(tb, 64)
                        ):
                            self.entries.append(
                                Entry(
                                    "N",
                                    "sysnet",
                                    n + "/device/hwmon/%s/%s" % (hb, tb),
                                    h + "/" + tb,
                                )
                            )
                self.ethtool.append(n)
                self.physical.append(n)
            elif ifaces:
                self.ethtool.append(n)
            for side in ("roce_np", "roce_rp"):
                self.files("S", "sysnet", n + "/ecn/%s/enable" % side, d + "/ecn/%s/enable" % side)
        ib = sysroot + "/class/infiniband"
        for n in listdir(ib):
            d = ib + "/" + n
            if not okname(n, 64):
                self.p.refuse("rdma", n)
                continue
            for f in ("fw_ver", "hca_type", "board_id", "node_guid", "node_type"):
                self.one("S", "sysib", n + "/" + f, d + "/" + f)
            for pn in listdir(d + "/ports"):
                p = d + "/ports/" + pn
                if not okname(pn, 16):
                    self.p.refuse("port", n + "/" + pn)
                    continue
                for f in ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid"):
                    self.one("N", "sysib", "%s/ports/%s/%s" % (n, pn, f), p + "/" + f)
                for c in ("counters", "counters_ext"):
                    self.split("%s/ports/%s/%s" % (n, pn, c), p + "/" + c, self.p.a.port_tick)
                self.split(
                    "%s/ports/%s/hw_counters" % (n, pn), p + "/hw_counters", self.p.a.hw_tick
                )
                self.files(
                    "S", "sysib", "%s/ports/%s/gid_attrs/ndevs" % (n, pn), p + "/gid_attrs/ndevs"
                )
                # The GID table (RoCE addressing), slow; the marker after it says it was read.
                self.files("S", "sysib", "%s/ports/%s/gids" % (n, pn), p + "/gids")
                self.files(
                    "S", "sysib", "%s/ports/%s/gid_attrs/types" % (n, pn), p + "/gid_attrs/types"
                )
                if exists(p + "/gids"):
                    self.entries.append(
                        Entry("s", "sysib", "%s/ports/%s/gids" % (n, pn), p + "/gids")
                    )
            self.files("s", "sysib", n + "/device/net", d + "/device/net")
        self.thunderbolt(sysroot + "/bus/thunderbolt/devices")
        cpus = sysroot + "/devices/system/cpu"
        for cb in listdir(cpus):
            c = cpus + "/" + cb + "/thermal_throttle"
            if not cb.startswith("cpu") or not exists(c) or not okname(cb, 16):
                continue
            for f in ("core_throttle_count", "package_throttle_count"):
                if regular(c + "/" + f):
                    self.cpu.append((f, c + "/" + f))

    def thunderbolt(self, tb: str) -> None:
        """bus/thunderbolt/devices at slow cadence, as the sh probe's fab_tb: identity and
        link of routers and XDomains, a service's key and its netdev; at most 64 entries.
        A switch's own ``key`` is its secure-connect secret: only services' keys are read."""
        n_seen = 0
        for n in listdir(tb):
            d = tb + "/" + n
            if not exists(d):
                continue
            if not okname(n, 64):
                self.p.refuse("thunderbolt", n)
                continue
            n_seen += 1
            if n_seen > 64:
                self.p.warn("thunderbolt: more than 64 devices, the rest not read")
                break
            self.entries.append(Entry("s", "systb", n, d))
            if "." in n:
                self.one("S", "systb", n + "/key", d + "/key")
                self.files("s", "systb", n + "/net", d + "/net")
                continue
            for f in TB_FILES:
                self.one("S", "systb", n + "/" + f, d + "/" + f)


# What is read of each Thunderbolt router or XDomain (the sh probe's fab_tb list).
TB_FILES = (
    "unique_id",
    "generation",
    "device_name",
    "vendor_name",
    "authorized",
    "rx_speed",
    "tx_speed",
    "rx_lanes",
    "tx_lanes",
)


class GidTable(object):
    """GID tables, as the sh probe's gid_keep: the kernel lists every entry (256 per
    mlx5 RoCE port) and an empty one reads as the zero GID while its types/ndevs fail;
    so only populated entries go out, the first GID_MAX of a port, a type only with its
    GID, and a port's gids marker says "capped" when entries were left out."""

    ZERO = b"0000:0000:0000:0000:0000:0000:0000:0000"

    def __init__(self) -> None:
        self.count = {}  # type: Dict[str, int]
        self.sent = set()  # type: Set[str]
        self.capped = set()  # type: Set[str]

    def keep(self, rel: str, v: bytes) -> bool:
        port, sep, index = rel.partition("/gids/")
        if sep:
            if v == self.ZERO:
                return False
            n = self.count[port] = self.count.get(port, 0) + 1
            if n > GID_MAX:
                self.capped.add(port)
                return False
            self.sent.add(port + "/" + index)
            return True
        port, sep, index = rel.partition("/gid_attrs/types/")
        if sep:
            return port + "/" + index in self.sent
        return True

    def mark(self, rel: str, probe: "Probe") -> bytes:
        if not rel.endswith("/gids") or rel[:-5] not in self.capped:
            return b"-"
        probe.warn(
            "GID table of %s: more than %d entries populated, the first %d sent"
            % (clean(rel[:-5]), GID_MAX, GID_MAX)
        )
        return b"capped"


GID_MAX = 64

# ---------------------------------------------------------------- kernel interfaces

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
ROW = 512  # values per line of a structured section
STATS_MAX = 200000  # names per netdev; more is a broken driver
B64_LINE = 4096  # base64 characters per line of a binary section (a multiple of 4)


def b64_rows(nums: Any) -> List[bytes]:
    """Unsigned 64-bit integers, little-endian, as base64 lines."""
    arr = array.array("Q", nums)
    if sys.byteorder != "little":
        arr.byteswap()
    text = binascii.b2a_base64(arr.tobytes(), newline=False)
    return [text[i : i + B64_LINE] for i in range(0, len(text), B64_LINE)]


def decimal_rows(nums: List[bytes]) -> List[bytes]:
    """Decimal values (bytes, ``-`` for one not read) in lines of at most ROW."""
    if len(nums) <= ROW:
        return [b" ".join(nums)]
    return [b" ".join(nums[i : i + ROW]) for i in range(0, len(nums), ROW)]


class Encoder(object):
    """Structured sections as this probe sends them (docs/PROBE.md "Structured
    sections"): a section's names once, in a ``schema`` section, again under a new id
    when they change, and its values by position in every frame, whole. The simulated
    hosts of the collector send theirs through this very class (collectors/structured.py).

    ``out`` is anything with the ``add(kind, subj, read_ns, status, detail, lines)`` of
    Sections (False: a cap cut it)."""

    def __init__(self) -> None:
        # (kind, subject) -> (schema id, names) as last sent.
        self.schemas = {}  # type: Dict[Tuple[str, str], Tuple[int, List[bytes]]]
        self.nsid = 0

    def values(
        self,
        out: Any,
        kind: str,
        subj: str,
        rns: int,
        names: List[bytes],
        rows: List[bytes],
        binary: bool = False,
    ) -> None:
        """One structured section: its schema when new or changed, then its values in
        ``rows`` (decimal_rows, or b64_rows with ``binary``: what the ethtool ioctl
        read, every value a number)."""
        key = (kind, subj)
        got = self.schemas.get(key)
        if got is None or (got[1] is not names and got[1] != names):
            self.nsid += 1
            got = (self.nsid, names)
            if out.add("schema", str(self.nsid), 0, "ok", "for=" + kind, names):
                self.schemas[key] = got
            else:
                self.schemas.pop(key, None)  # a cap cut it: sent again with the next frame
        det = "schema=%d enc=b64" % got[0] if binary else "schema=%d" % got[0]
        out.add(kind, subj, rns, "ok", det, rows or [b""])

    def forget_unsent(self, out: Any, live: List[Tuple[str, str]]) -> None:
        """Forget the structured sections this frame did not send (a netdev gone, pod
        veths and VFs coming and going for a week), here and, by a ``drop`` line, in the
        collector's decoder. A section that comes back is defined anew. Every structured
        section is sent every tick while it exists."""
        if len(self.schemas) <= len(live):
            return
        keep = set(live)
        for key in [k for k in self.schemas if k not in keep]:
            sid = self.schemas.pop(key)[0]
            out.add("schema", str(sid), 0, "ok", "drop", [])


class Ethtool(object):
    """ETHTOOL_GSTATS through SIOCETHTOOL: names once, values every read.

    The kernel copies as many values as the driver has when it answers, whatever
    n_stats the caller passed (net/ethtool/ioctl.c, ethtool_get_stats), and mlx5 adds
    names when PFC is switched on: so GSSET_INFO is asked before each read, the buffer
    keeps slack, and the names are read again whenever the count changed.
    """

    def __init__(self) -> None:
        import ctypes
        import fcntl

        self.ctypes = ctypes
        self.ioctl = fcntl.ioctl
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.names = {}  # type: Dict[str, List[bytes]]
        self.bufs = {}  # type: Dict[str, Any]
        self.calls = 0

    def _call(self, ifname: str, buf: Any) -> None:
        ifr = struct.pack("16sP", ifname.encode(), self.ctypes.addressof(buf))
        ifr += b"\0" * (40 - len(ifr))
        self.calls += 1
        self.ioctl(self.sock.fileno(), SIOCETHTOOL, bytearray(ifr), True)

    def count(self, ifname: str) -> int:
        buf = self.ctypes.create_string_buffer(
            struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0)
        )
        self._call(ifname, buf)
        _, _, mask, n = struct.unpack_from("=IIQI", buf.raw)
        if not mask & (1 << ETH_SS_STATS):
            raise OSError(errno.EOPNOTSUPP, "no statistics")
        return int(n)

    def _strings(self, ifname: str, n: int) -> List[bytes]:
        buf = self.ctypes.create_string_buffer(12 + (n + 64) * ETH_GSTRING_LEN)
        struct.pack_into("=III", buf, 0, ETHTOOL_GSTRINGS, ETH_SS_STATS, n)
        self._call(ifname, buf)
        got = struct.unpack_from("=I", buf.raw, 8)[0]
        raw = buf.raw
        out = []
        for i in range(min(got, n + 64)):
            s = raw[12 + i * ETH_GSTRING_LEN : 12 + (i + 1) * ETH_GSTRING_LEN]
            # A driver's name is bytes: a newline in one would start a line of the frame.
            out.append(CTRL_RE.sub(b"?", s.split(b"\0", 1)[0]))
        return out

    def read(self, ifname: str) -> Tuple[List[bytes], Tuple[int, ...]]:
        """(names, values) of one netdev; OSError when it has no statistics."""
        for _ in range(3):
            n = self.count(ifname)
            if not 0 <= n <= STATS_MAX:
                raise OSError(errno.EINVAL, "driver reports %d statistics" % n)
            names = self.names.get(ifname)
            if names is None or len(names) != n:
                names = self.names[ifname] = self._strings(ifname, n)
            cap = n + 64 + n // 4  # slack: the count may grow between the two calls
            buf = self.bufs.get(ifname)
            if buf is None or len(buf) < 8 + cap * 8:
                buf = self.bufs[ifname] = self.ctypes.create_string_buffer(8 + cap * 8)
            struct.pack_into("=II", buf, 0, ETHTOOL_GSTATS, n)
            self._call(ifname, buf)
            got = struct.unpack_from("=I", buf.raw, 4)[0]
            if got == len(names) and got <= cap:
                vals = array.array("Q")
                vals.frombytes(buf.raw[8 : 8 + got * 8])
                return names, tuple(vals)
            self.names.pop(ifname, None)  # the count moved: names again
        raise OSError(errno.EAGAIN, "statistics count keeps changing")


# rtnl_link_stats64 field names, in order: they are the sysfs statistics file names.
STATS64 = (
    "rx_packets",
    "tx_packets",
    "rx_bytes",
    "tx_bytes",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "multicast",
    "collisions",
    "rx_length_errors",
    "rx_over_errors",
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_fifo_errors",
    "rx_missed_errors",
    "tx_aborted_errors",
    "tx_carrier_errors",
    "tx_fifo_errors",
    "tx_heartbeat_errors",
    "tx_window_errors",
    "rx_compressed",
    "tx_compressed",
    "rx_nohandler",
    "rx_otherhost_dropped",
)
OPERSTATES = ("unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")
IFLA_IFNAME, IFLA_MTU, IFLA_OPERSTATE, IFLA_STATS64 = 3, 4, 16, 23
IFLA_CARRIER_CHANGES, IFLA_CARRIER_UP, IFLA_CARRIER_DOWN = 35, 47, 48


class Rtnl(object):
    """One RTM_GETLINK dump per tick: every netdev's statistics and link state."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
        self.sock.bind((0, 0))
        self.sock.settimeout(2.0)
        self.seq = 0

    def dump(self) -> Dict[str, Dict[str, bytes]]:
        self.seq += 1
        # nlmsghdr + ifinfomsg; RTM_GETLINK=18, NLM_F_REQUEST|NLM_F_DUMP=0x301
        msg = struct.pack("=IHHII", 32, 18, 0x301, self.seq, 0) + struct.pack(
            "=BxHiII", 0, 0, 0, 0, 0
        )
        self.sock.send(msg)
        out = {}  # type: Dict[str, Dict[str, bytes]]
        while True:
            data = self.sock.recv(1 << 17)
            off = 0
            while off + 16 <= len(data):
                ln, typ, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                if ln < 16 or off + ln > len(data):
                    return out
                if seq == self.seq:
                    if typ == 3:  # NLMSG_DONE
                        return out
                    if typ == 2:  # NLMSG_ERROR
                        raise OSError(errno.EIO, "rtnetlink error")
                    if typ == 16:  # RTM_NEWLINK
                        self._link(data, off + 32, off + ln, out)
                off += (ln + 3) & ~3

    @staticmethod
    def _link(data: bytes, off: int, end: int, out: Dict[str, Dict[str, bytes]]) -> None:
        vals = {}  # type: Dict[str, bytes]
        name = ""
        while off + 4 <= end:
            alen, atype = struct.unpack_from("=HH", data, off)
            if alen < 4:
                break
            body = data[off + 4 : off + alen]
            atype &= 0x3FFF
            if atype == IFLA_IFNAME:
                name = body.split(b"\0", 1)[0].decode("ascii", "replace")
            elif atype == IFLA_MTU and len(body) >= 4:
                vals["mtu"] = str(struct.unpack_from("=I", body)[0]).encode()
            elif atype == IFLA_OPERSTATE and len(body) >= 1:
                st = body[0]
                vals["operstate"] = (OPERSTATES[st] if st < len(OPERSTATES) else "unknown").encode()
            elif atype == IFLA_STATS64:
                n = min(len(body) // 8, len(STATS64))
                for i, v in enumerate(struct.unpack_from("=%dQ" % n, body)):
                    vals["statistics/" + STATS64[i]] = str(v).encode()
            elif atype == IFLA_CARRIER_CHANGES and len(body) >= 4:
                vals["carrier_changes"] = str(struct.unpack_from("=I", body)[0]).encode()
            elif atype == IFLA_CARRIER_UP and len(body) >= 4:
                vals["carrier_up_count"] = str(struct.unpack_from("=I", body)[0]).encode()
            elif atype == IFLA_CARRIER_DOWN and len(body) >= 4:
                vals["carrier_down_count"] = str(struct.unpack_from("=I", body)[0]).encode()
            off += (alen + 3) & ~3
        if name:
            out[name] = vals


def pause_counters(text: bytes) -> Tuple[List[bytes], Tuple[int, ...]]:
    """The per-priority pause and byte counters of `ethtool -S` text (for the watchdog)."""
    names = []  # type: List[bytes]
    vals = []  # type: List[int]
    for line in text.split(b"\n"):
        if b"prio" not in line:
            continue
        k, sep, v = line.partition(b":")
        k, v = k.strip(), v.strip()
        if (
            sep
            and v.isdigit()
            and len(v) <= 20
            and (k.endswith(b"_pause_duration") or k.endswith(b"_bytes"))
        ):
            names.append(k)
            vals.append(int(v))
    return names, tuple(vals)


# ---------------------------------------------------------------- reads with a deadline


class Reader(object):
    """Runs one tick's reads in a thread: a read stuck in the kernel costs one value.

    The main loop hands it the tick's reads (one handoff a tick: the tools of the tick run
    in the main loop meanwhile) and waits for it until the section timeout from the
    start; a reader still inside a file then is abandoned (a thread in the kernel cannot
    be stopped), the file is skipped from then on, and the next tick starts a new reader.
    """

    def __init__(self) -> None:
        self.go = threading.Event()
        self.done = threading.Event()
        self.job = None  # type: Any
        self.item = None  # type: Any
        self.t = threading.Thread(target=self._run)
        self.t.daemon = True
        self.t.start()

    def _run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            job = self.job
            if job is None:
                return
            try:
                job(self)
            except BaseException as e:
                self.error = "%s: %s" % (type(e).__name__, e)
            self.done.set()

    error = ""

    def start(self, job: Any) -> None:
        self.job = job
        self.item = None
        self.error = ""
        self.done.clear()
        self.go.set()

    def wait(self, timeout: float) -> bool:
        """Whether the job is done, waiting for it at most ``timeout`` seconds."""
        return self.done.wait(max(timeout, 0.0))

    def run(self, job: Any, timeout: float) -> bool:
        self.start(job)
        return self.wait(timeout)


def pread_value(e: Entry) -> Optional[bytes]:
    """The first line of one file, or None when it cannot be read (EINVAL, EIO, gone)."""
    for attempt in (0, 1):
        if e.fd < 0:
            try:
                e.fd = os.open(e.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                return None
            # O_NONBLOCK: a FIFO swapped in where a file was neither blocks nor is read.
            if (os.fstat(e.fd).st_mode & 0o170000) != 0o100000:
                close_fd(e)
                if Probe.current is not None:
                    Probe.current.skip.add(e.path)
                    Probe.current.once("-odd " + e.rel, "not a regular file, not read: " + e.rel)
                return None
        try:
            data = os.pread(e.fd, 4096, 0)
        except OSError as x:
            if x.errno in (errno.ENODEV, errno.ESTALE, errno.EBADF) and attempt == 0:
                close_fd(e)
                continue
            return None
        finally:
            if e.fd >= 0 and Probe.current is not None and not Probe.current.keep_open(e):
                close_fd(e)
        line = data.split(b"\n", 1)[0].replace(b"\0", b"")
        if len(line) > VALUE_MAX and Probe.current is not None:
            Probe.current.left_out(e.rel)
        if not line or len(line) > VALUE_MAX:
            return None
        return line
    return None


def close_fd(e: Entry) -> None:
    if e.fd >= 0:
        try:
            os.close(e.fd)
        except OSError:
            pass
        e.fd = -1


# ---------------------------------------------------------------- processes


class Job(object):
    def __init__(self, kind: str, subj: str, argv: List[str]) -> None:
        self.kind = kind
        self.subj = subj
        self.argv = argv
        self.proc = None  # type: Any
        self.buf = []  # type: List[bytes]
        self.size = 0
        self.trunc = ""
        self.rc = None  # type: Optional[int]
        self.timed_out = False
        self.to = 0.0  # its own time limit (0: the tick's, timeout_s)
        self.error = ""
        self.read_ns = 0
        self.mono = 0.0


def run_jobs(
    jobs: List[Job], timeout: float, scap: int, fcap: int, now_ns: Any, children: Set[Any]
) -> None:
    """Every tool of a tick at once, each killed past ``timeout``; output capped as read."""
    live = {}  # type: Dict[int, Job]
    for j in jobs:
        if Probe.current is not None and Probe.current.ending:
            j.error = "the probe is ending"
            continue
        try:
            j.proc = subprocess.Popen(
                j.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                close_fds=True,
            )
        except OSError as e:
            j.error = "cannot run: %s" % (e.strerror or e)
            continue
        children.add(j.proc)
        live[j.proc.stdout.fileno()] = j
        j.read_ns = now_ns()
        j.mono = time.monotonic()
    total = [0]
    end = time.monotonic() + timeout
    # poll, not select: a node's held sysfs files put the pipes past select's 1024.
    poller = select.poll()
    for fd in live:
        poller.register(fd, select.POLLIN)
    while live:
        left = end - time.monotonic()
        if left <= 0:
            break
        for fd, _ in poller.poll(int(left * 1000) + 1):
            j = live[fd]
            data = os.read(fd, 65536)
            if not data:
                del live[fd]
                poller.unregister(fd)
                continue
            if j.trunc:
                continue
            if j.size + len(data) > scap:
                j.trunc = "section cap %d bytes" % scap
                data = data[: max(0, scap - j.size)]
            if total[0] + len(data) > fcap:
                j.trunc = "frame cap %d bytes" % fcap
                data = data[: max(0, fcap - total[0])]
            j.buf.append(data)
            j.size += len(data)
            total[0] += len(data)
    for j in jobs:
        if j.proc is None:
            continue
        if j.proc.stdout.fileno() in live:
            j.timed_out = True
            try:
                j.proc.kill()
            except OSError:
                pass
        try:
            j.rc = j.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            j.rc = None
        j.proc.stdout.close()
        children.discard(j.proc)


def job_lines(j: Job) -> List[bytes]:
    """A tool's output as lines (its final newline not an empty last line)."""
    lines = b"".join(j.buf).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def truncated(j: Job, st: str, det: str) -> Tuple[str, str]:
    """A capped tool's status says the cap, then the status it would have had."""
    if not j.trunc:
        return st, det
    return "truncated", j.trunc + ("" if st == "ok" else "; " + st + (" " + det if det else ""))


OPTICS_KINDS = ("ethtool_m", "ethtool_fec", "devlink_health", "mlxlink")
# mlxlink (NVIDIA MFT, docs/PROBE.md "Optics"): ~0.8 s of firmware access a call on a
# ConnectX-7, so it runs beside the ticks with its own limit, never in a tick's shared one.
MLXLINK_TIMEOUT_S = 3
MLXLINK_CAP = 262144  # bytes kept of one answer (the capture's JSON: 4.7 KB)
BDF_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")  # a PCI function


def fec_argv(version: str) -> List[str]:
    """ethtool 5.10 added -I (--include-statistics): an older one is asked the mode only."""
    parts = (version.split(".") + ["0", "0"])[:2]
    if version and all(p.isdigit() for p in parts) and int(parts[0]) * 100 + int(parts[1]) < 510:
        return ["ethtool", "--show-fec"]
    return ["ethtool", "-I", "--show-fec"]


def ethtool_version() -> str:
    """``ethtool --version``'s number ("6.1"), once per run; "" when it says none."""
    try:
        out = subprocess.run(
            ["ethtool", "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    v = out.decode("ascii", "replace").strip()
    v = v[len("ethtool version ") :] if v.startswith("ethtool version ") else ""
    return v if re.match(r"[0-9.]{1,16}\Z", v) else ""


# ---------------------------------------------------------------- GPU reader


class Gpu(object):
    """One persistent nvidia-smi -lms, restarted with backoff like the sh supervisor."""

    def __init__(self, probe: "Probe") -> None:
        self.p = probe
        self.fields = probe.a.gf
        self.lock = threading.Lock()
        self.lines = {}  # type: Dict[str, Tuple[bytes, int, int]]  # key -> (line, tick, ns)
        self.order = []  # type: List[str]
        self.key = 0
        self.batch = -1
        self._set_fields(self.fields)
        t = threading.Thread(target=self._supervise)
        t.daemon = True
        t.start()

    def _set_fields(self, f: str) -> None:
        self.fields = f
        self.key = 0
        for i, name in enumerate(f.split(",")):
            if name in ("index", "uuid", "pci.bus_id"):
                self.key = i + 1
                break
        self.lines = {}
        self.order = []

    def _supervise(self) -> None:
        f = self.p.a.gf
        tried = False
        back = 1
        while not self.p.ending:
            t0 = time.monotonic()
            try:
                proc = subprocess.Popen(
                    [
                        "nvidia-smi",
                        "--query-gpu=" + f,
                        "--format=csv,noheader,nounits",
                        "-lms",
                        str(self.p.a.iv),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    close_fds=True,
                )
            except OSError:
                proc = None
            if proc is not None:
                self.p.children.add(proc)
                with self.lock:
                    if f != self.fields:
                        self._set_fields(f)
                for raw in proc.stdout or ():
                    self._line(raw.rstrip(b"\r\n")[:65536])
                rc = proc.wait()
                self.p.children.discard(proc)
                self.p.warn("nvidia-smi exited rc=%d" % rc)
            else:
                rc = 127
            ran = time.monotonic() - t0
            if rc != 0 and not tried and ran < 10 and f != self.p.a.gfb:
                f = self.p.a.gfb
                tried = True
                continue
            if ran > 120:
                back = 1
            time.sleep(back)
            back = min(back * 2, 60)

    def _line(self, line: bytes) -> None:
        tn = self.p.tn
        with self.lock:
            if self.key:
                parts = line.split(b",")
                k = (
                    parts[self.key - 1].strip().decode("ascii", "replace")
                    if len(parts) >= self.key
                    else ""
                )
            else:
                if self.batch != tn:
                    self.lines = {}
                    self.order = []
                    self.batch = tn
                k = str(len(self.order) + 1)
            if k not in self.lines:
                if len(self.order) >= 64:
                    return
                self.order.append(k)
            self.lines[k] = (line, tn, self.p.wall_ns())

    def section(self, out: Sections) -> None:
        with self.lock:
            tn = self.p.tn
            items = [self.lines[k] for k in self.order]
            fields = self.fields
        newest = max((t for _, t, _ in items), default=-1)
        st = "ok" if newest >= 0 and tn - newest < 3 else "stale"
        lines = [("# " + fields).encode()]
        rns = 0
        for line, t, ns in items:
            if st == "ok" and tn - t >= 3:
                continue
            if st == "stale" and t != newest:
                continue
            lines.append(line)
            rns = max(rns, ns)
        out.add("gpu_nvidia", "-", rns, st, "" if items else "no line yet", lines)


# ---------------------------------------------------------------- the probe


def which(tool: str) -> bool:
    for d in os.environ.get("PATH", "").split(":"):
        if d and os.access(os.path.join(d, tool), os.X_OK):
            return True
    return False


class Probe(object):
    current = None  # type: Optional[Probe]

    def __init__(self, a: Args) -> None:
        Probe.current = self
        self.a = a
        self.ending = False  # set once by end(): nothing new starts after it
        self.hot = set()  # type: Set[str]  # tree dirs that changed last tick
        self.real = a.sys == "/sys"
        self.children = set()  # type: Set[Any]
        self.warnings = []  # type: List[str]
        self.seen = set()  # type: Set[str]
        self.skip = set()  # type: Set[str]
        self.tn = 0
        self.seq = 0
        self.skipped = 0
        self.mono0 = time.monotonic()
        self.wall0 = time.time()
        self.have = set(
            t
            for t in (
                "ethtool",
                "mlnx_qos",
                "dcb",
                "nvidia-smi",
                "amd-smi",
                "rocm-smi",
                "dpkg-query",
                "rpm",
                "ofed_info",
                "ip",
                "devlink",
                "mlxlink",
                "timeout",
            )
            if which(t)
        )
        # Optics rounds (docs/PROBE.md "Optics", as probe.sh's optics()): when the last
        # began (monotonic), how many, and per (kind, subject) of a failed read the round
        # it may run again; the FEC sections say which ethtool printed them.
        self.olast = None  # type: Optional[float]
        self.oround = 0
        self.oskip = {}  # type: Dict[Tuple[str, str], int]
        self.opt = False
        self.obackoff = []  # type: List[Tuple[str, str]]
        self.ethv = ethtool_version() if "ethtool" in self.have else ""
        # Software versions (issue 15): the same commands as probe.sh's (a test holds
        # NCCL_SCAN and DPKG_FORMAT equal to its FAB_NCCL and FAB_DPKGF).
        self.nccl_scan = NCCL_SCAN
        self.dpkg_format = DPKG_FORMAT
        # The packet filter (slow cadence), as the sh probe reads it: nft's JSON, else
        # iptables-save; root (or sudo -n where configured) or a "needs root" section.
        self.fw = next((t for t in ("nft", "iptables-save") if which(t)), "")
        self.fw_run = 1 if os.geteuid() == 0 else (2 if a.fw_sudo else 0)
        # Module EEPROMs (ethtool -m) need CAP_NET_ADMIN alike (probe.sh's OMR).
        self.om_run = 1 if os.geteuid() == 0 else (2 if a.optics_sudo else 0)
        # mlxlink (needs root, as ethtool -m): the read under way (its job and the thread
        # that runs it), whose turn is next, and the latest section of each PCI function,
        # all of them sent again with each new one (one device a round: the collector
        # keeps only the sections a round brings).
        self.mlx_job = None  # type: Optional[Tuple[Job, threading.Thread]]
        self.mlx_turn = 0
        self.mlx_last = {}  # type: Dict[str, Tuple[str, str, int, List[bytes]]]
        self.mlx_new = False
        self.gkind = "off"
        if a.gpu == "auto":
            self.gkind = next(
                (k for k in ("nvidia-smi", "amd-smi", "rocm-smi") if k in self.have), "none"
            )
        self.scan = None  # type: Optional[Scan]
        self.fd_budget = self._raise_nofile()
        self.eth = None  # type: Optional[Ethtool]
        self.rtnl = None  # type: Optional[Rtnl]
        if self.real:
            try:
                self.eth = Ethtool()
            except (OSError, ImportError) as e:
                self.warn("ethtool ioctl unavailable (%s): ethtool -S runs as a process" % e)
            try:
                self.rtnl = Rtnl()
            except OSError as e:
                self.warn("rtnetlink unavailable (%s): netdev files are read" % e)
        self.reader = Reader()
        self.gpu = Gpu(self) if self.gkind == "nvidia-smi" else None
        self.uptime_fd = -1
        self.out_lock = threading.Lock()
        self.end_lock = threading.Lock()
        self.wd = Watchdog(self)
        self.enc = Encoder()  # structured sections' schemas
        self.gen = Generation(binascii.hexlify(os.urandom(6)).decode())
        py = "%d.%d.%d" % sys.version_info[:3]
        self.impl = "python %s %s" % (py, clean(sys.executable or "python3"))

    # -- clocks
    def wall_ns(self, mono: Optional[float] = None) -> int:
        m = time.monotonic() if mono is None else mono
        return int((self.wall0 + (m - self.mono0)) * 1e9)

    def uptime(self) -> str:
        try:
            if self.uptime_fd < 0:
                self.uptime_fd = os.open("/proc/uptime", os.O_RDONLY)
            return os.pread(self.uptime_fd, 64, 0).split()[0].decode()
        except (OSError, IndexError):
            return "0"

    # -- notes
    def warn(self, s: str) -> None:
        if len(self.warnings) < WARN_MAX:
            self.warnings.append(clean(s))

    def once(self, key: str, s: str) -> None:
        if key not in self.seen:
            self.seen.add(key)
            self.warn(s)

    def left_out(self, rel: str) -> None:
        """A value too long to be one: said every tick it is left out (as probe.sh says)."""
        self.warn("value of %s left out: longer than %d bytes" % (rel, VALUE_MAX))

    def refuse(self, what: str, name: str) -> None:
        if "\n" in name:
            name = "(a name containing a newline)"
        self.once(what + " " + name, "refused %s name: %s" % (what, name))

    # -- files
    def _raise_nofile(self) -> int:
        try:
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            want = hard if hard != resource.RLIM_INFINITY else 1 << 20
            want = min(want, 1 << 20)
            if want > soft:
                try:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
                    soft = want
                except (OSError, ValueError):
                    pass
            return max(0, soft - 64)  # room for sockets, pipes and tools
        except ImportError:
            return 960

    def keep_open(self, e: Entry) -> bool:
        # A tree's slow files are opened for each (slow) read: only the directories of the
        # files read every tick are watched for files replaced by rename (_follow_tree).
        return e.fd >= 0 and (e.fd < self.fd_budget + 64) and (self.real or e.code != "S")

    def rescan(self) -> None:
        old = self.scan
        s = Scan(self)
        s.run()
        keep = {}  # type: Dict[str, Entry]
        if old is not None:
            for e in old.entries:
                keep[e.path] = e
        for e in s.entries:
            o = keep.pop(e.path, None)
            if o is not None and o.fd >= 0:
                e.fd = o.fd
                o.fd = -1
        for o in keep.values():
            close_fd(o)
        if self.real and self.rtnl is not None:
            for e in s.entries:
                rel = e.rel.split("/", 1)
                if (
                    e.kind == "sysnet"
                    and len(rel) == 2
                    and (
                        rel[1]
                        in (
                            "mtu",
                            "operstate",
                            "carrier_changes",
                            "carrier_up_count",
                            "carrier_down_count",
                        )
                        or rel[1].startswith("statistics/")
                    )
                ):
                    e.netlink = rel[1]
                    close_fd(e)
        need = sum(1 for e in s.entries if e.code in ("N", "S") and not e.netlink)
        if need > self.fd_budget:
            self.once(
                "-nofile",
                "open-file limit %d: %d of %d files are opened again on "
                "each read" % (self.fd_budget + 64, need - self.fd_budget, need),
            )
        if not self.real:
            s.dirs = {}
            for e in s.entries:
                if e.code == "S":
                    close_fd(e)  # read anew on slow ticks (keep_open)
                    continue
                d = os.path.dirname(e.path)
                if e.code == "N" and d not in s.dirs:
                    s.dirs[d] = self._mtime(d)
        s.index()
        self.scan = s
        self._forget_netdevs(s)

    def _forget_netdevs(self, s: Scan) -> None:
        """Tables keyed by netdev names keep only the netdevs of this scan: a week of pod
        veths coming and going must not grow the probe (the node's memory is the model's)."""
        have = set(s.ethtool)
        tables = [self.wd.last, self.wd.took, self.wd.fast_until]  # type: List[Dict[str, Any]]
        if self.eth is not None:
            tables += [self.eth.names, self.eth.bufs]
        for t in tables:
            for n in [n for n in t if n not in have]:
                del t[n]
        for k in [k for k in self.wd.storm if k[0] not in have]:
            del self.wd.storm[k]
        paths = set(e.path for e in s.entries)
        paths.update(p for _, p in s.cpu)
        self.skip &= paths
        if len(self.seen) > SEEN_MAX:  # once-only notes: said again after a reset at worst
            self.seen = set()

    @staticmethod
    def _mtime(d: str) -> Tuple[int, int]:
        try:
            st = os.stat(d)
            return (getattr(st, "st_mtime_ns", int(st.st_mtime * 1e9)), st.st_ino)
        except OSError:
            return (-1, -1)

    def _follow_tree(self, s: Scan) -> None:
        """A replayed or synced tree replaces files (rename): reopen those of a changed dir
        (of the dirs holding files read every tick; slow files are opened for each read).

        A directory's mtime moves in coarse steps (a jiffy): renames that land after this
        check within the same step leave it unchanged, so a changed directory is opened
        again on the next tick too.
        """
        changed = set(self.hot)
        self.hot = set()
        for d, m in s.dirs.items():
            now = self._mtime(d)
            if now != m:
                s.dirs[d] = now
                changed.add(d)
                self.hot.add(d)
        if changed:
            for e in s.entries:
                if e.fd >= 0 and os.path.dirname(e.path) in changed:
                    close_fd(e)

    # -- one tick
    def tick(self, slow: bool) -> bytes:
        self.tn += 1
        t_mono = time.monotonic()
        clock_ns = int(time.time() * 1e9)
        self.wall0, self.mono0 = clock_ns / 1e9, t_mono  # wall stamps follow a clock step
        up = self.uptime()
        if slow or self.scan is None:
            self.rescan()
        s = self.scan
        assert s is not None
        if not self.real and not slow:
            self._follow_tree(s)
        jobs = []  # type: List[Job]
        use_ioctl = self.eth is not None
        for n in s.ethtool:
            if not use_ioctl and "ethtool" in self.have:
                jobs.append(Job("ethtool_S", n, ["ethtool", "-S", n]))
            if not slow:
                continue
            if "ethtool" in self.have:
                jobs.append(Job("ethtool_i", n, ["ethtool", "-i", n]))
            if "mlnx_qos" in self.have:
                jobs.append(Job("mlnx_qos", n, ["mlnx_qos", "-i", n]))
            if "dcb" in self.have:
                for k in ("pfc", "apptrust", "app", "ets", "buffer"):
                    jobs.append(Job("dcb_" + k, n, ["dcb", k, "show", "dev", n]))
        self.opt = slow and (self.olast is None or t_mono - self.olast >= self.a.optics_s)
        self.obackoff = []
        if self.opt:
            jobs.extend(self.optics_jobs(t_mono, s.physical))
        if slow:
            jobs.extend(self.version_jobs())
            if "ip" in self.have:  # netdev addresses, as probe.sh reads them
                jobs.append(Job("ip_addr", "-", ["ip", "-o", "addr", "show"]))
        if slow and self.gkind == "amd-smi":
            jobs.append(Job("gpu_amd", "-", ["amd-smi", "metric", "--json"]))
        elif slow and self.gkind == "rocm-smi":
            jobs.append(
                Job(
                    "gpu_amd",
                    "-",
                    [
                        "rocm-smi",
                        "--showuse",
                        "--showtemp",
                        "--showpower",
                        "--showmeminfo",
                        "vram",
                        "--json",
                    ],
                )
            )
        if slow and self.fw and self.fw_run:
            cmd = ["nft", "-j", "list", "ruleset"] if self.fw == "nft" else ["iptables-save"]
            sudo = ["sudo", "-n"] if self.fw_run == 2 else []
            jobs.append(Job("firewall", "-", sudo + cmd))
        vals = {}  # type: Dict[str, bytes]
        eth = {}  # type: Dict[str, Any]
        times = {}  # type: Dict[str, int]
        cpu = {}  # type: Dict[str, int]

        pread = os.pread

        def reads(r: Reader) -> None:
            nl = {}  # type: Dict[str, Dict[str, bytes]]
            if self.rtnl is not None and self.real:
                r.item = "rtnetlink dump"
                try:
                    nl = self.rtnl.dump()
                except OSError as x:
                    self.once("-rtnl", "rtnetlink dump failed (%s): netdev files are read" % x)
            m0 = time.monotonic()
            skip = self.skip
            for e in s.reads_slow if slow else s.reads:
                if skip and e.path in skip:
                    continue
                if e.netlink:
                    dev = e.rel.split("/", 1)[0]
                    v = nl.get(dev, {}).get(e.netlink)
                    if v is not None:
                        vals[e.rel] = v
                        continue
                r.item = e.path
                if e.fd >= 0:  # the common case, inline: a held file read again
                    try:
                        data = pread(e.fd, 4096, 0)
                    except OSError:
                        data = None  # ENODEV/ESTALE and the rest: pread_value decides
                    if data is not None:
                        line = data.partition(b"\n")[0]
                        if b"\0" in line:
                            line = line.replace(b"\0", b"")
                        if line and len(line) <= VALUE_MAX:
                            vals[e.rel] = line
                        elif line:
                            self.left_out(e.rel)
                        continue
                v = pread_value(e)
                if v is not None:
                    vals[e.rel] = v
            times["sys"] = self.wall_ns((m0 + time.monotonic()) / 2)
            if slow:
                for base, path in s.cpu:
                    if path in self.skip:
                        continue
                    r.item = path
                    ent = Entry("C", "cpu", base, path)
                    v = pread_value(ent)
                    close_fd(ent)
                    if v is not None and v.isdigit():
                        cpu[base] = cpu.get(base, 0) + int(v)
            if use_ioctl and self.eth is not None:
                for n in s.ethtool:
                    r.item = "ethtool ioctl " + n
                    m = time.monotonic()
                    try:
                        eth[n] = self.eth.read(n)
                    except OSError as x:
                        eth[n] = x
                    took = time.monotonic() - m
                    times["eth " + n] = self.wall_ns(m)
                    self.wd.seen(n, m, eth[n], took)
            r.item = None

        # One handoff a tick: the reader reads (each read under the deadline) while this
        # thread runs the tick's tools, if any, and collects them.
        go = time.monotonic()
        self.reader.start(reads)
        if jobs:
            run_jobs(jobs, self.a.to, self.a.scap, self.a.fcap, self.wall_ns, self.children)
        if not self.reader.wait(go + self.a.to - time.monotonic()):
            stuck = self.reader.item
            self.reader.job = None
            self.reader = Reader()
            if isinstance(stuck, str) and stuck.startswith("/"):
                self.skip.add(stuck)
                self.warn(
                    "sysfs read blocked for %gs, skipped from now on: %s"
                    % (
                        self.a.to,
                        stuck[len(self.a.sys) + 1 :] if stuck.startswith(self.a.sys) else stuck,
                    )
                )
            else:
                self.warn(
                    "sysfs reads not done after %gs: values missing from this frame" % self.a.to
                )
            # What it read so far; the abandoned reader may still write to its own.
            vals, eth, times, cpu = dict(vals), dict(eth), dict(times), dict(cpu)
        if self.reader.error:
            self.warn("read error: " + self.reader.error)
        if jobs and not use_ioctl:
            # A tree's ethtool -S comes from a process: the watchdog gets its numbers
            # once a tick (no fast reads: the tree changes at its writer's pace).
            for j in jobs:
                if j.kind == "ethtool_S" and j.rc == 0 and not j.trunc:
                    self.wd.seen(j.subj, j.mono, pause_counters(b"".join(j.buf)))
        self.mlx_collect()
        return self.frame(clock_ns, up, slow, s, vals, eth, times, cpu, jobs)

    def optics_jobs(self, mono: float, netdevs: List[str]) -> List[Job]:
        """An optics round: the cable's own health, never more often than optics_s; a read
        that failed is not asked again for 15 rounds (mlx5 ACCESS_REG failures)."""
        self.olast = mono
        self.oround += 1
        self.oskip = dict((k, r) for k, r in self.oskip.items() if r > self.oround)
        want = []  # type: List[Job]
        if "ethtool" in self.have:
            sudo = ["sudo", "-n"] if self.om_run == 2 else []
            for n in netdevs:
                # Without root or sudo -n, one section says so (frame(): "needs root").
                if self.om_run:
                    want.append(Job("ethtool_m", n, sudo + ["ethtool", "-m", n]))
                want.append(Job("ethtool_fec", n, fec_argv(self.ethv) + [n]))
        # Only `show`: a health dump can deadlock during PCI error recovery.
        if "devlink" in self.have:
            want.append(Job("devlink_health", "-", ["devlink", "health", "show"]))
        if self.a.mlxlink:
            self.mlx_start(netdevs)
        # While a read backs off, a section says so (the collector would otherwise forget
        # the port's last one: the round brought its kind).
        self.obackoff = [(j.kind, j.subj) for j in want if (j.kind, j.subj) in self.oskip]
        return [j for j in want if (j.kind, j.subj) not in self.oskip]

    def mlx_start(self, netdevs: List[str]) -> None:
        """mlxlink for the next PCI function of the physical netdevs, one a round, in a
        thread of its own: the frames go on meanwhile, and it is ended at its limit."""
        devs = []  # type: List[str]
        for n in netdevs:
            d = os.path.basename(
                os.path.realpath(os.path.join(self.a.sys, "class/net", n, "device"))
            )
            if BDF_RE.match(d) and d not in devs:
                devs.append(d)
        self.mlx_last = dict((d, v) for d, v in self.mlx_last.items() if d in devs)
        turn = [d for d in devs if ("mlxlink", d) not in self.oskip]
        if not turn or self.mlx_job is not None or "mlxlink" not in self.have or not self.om_run:
            return
        d = turn[self.mlx_turn % len(turn)]
        self.mlx_turn += 1
        # Read-only flags only: -m (module) -c (counters); never --pc, which clears them.
        argv = ["mlxlink", "-d", d, "-m", "-c", "--json"]
        if self.om_run == 2:
            argv = ["sudo", "-n"] + argv
        j = Job("mlxlink", d, argv)
        j.to = MLXLINK_TIMEOUT_S
        limit = float(MLXLINK_TIMEOUT_S)
        if "timeout" in self.have:  # TERM first (sudo passes it on), KILL 1 s later
            j.argv = ["timeout", "-k", "1", str(MLXLINK_TIMEOUT_S)] + argv
            limit += 2
        cap = min(MLXLINK_CAP, self.a.scap)
        t = threading.Thread(
            target=run_jobs, args=([j], limit, cap, self.a.fcap, self.wall_ns, self.children)
        )
        t.daemon = True
        self.mlx_job = (j, t)
        t.start()

    def mlx_collect(self) -> None:
        """The mlxlink read, once it is done (or was ended at its limit)."""
        if self.mlx_job is None or self.mlx_job[1].is_alive():
            return
        j = self.mlx_job[0]
        self.mlx_job = None
        st, det = self.job_status(j)
        if st != "ok":
            self.oskip[(j.kind, j.subj)] = self.oround + 16
        st, det = truncated(j, st, det)
        self.mlx_last[j.subj] = (st, det, j.read_ns, job_lines(j))
        self.mlx_new = True

    def job_status(self, j: Job) -> Tuple[str, str]:
        """A tool's section status and detail."""
        to = j.to or self.a.to
        if j.error:
            return "error", clean(j.error)
        if j.timed_out or (j.to and j.argv[0] == "timeout" and j.rc in (124, 137, 143)):
            return "timeout", "after %gs" % to
        if j.rc is None:
            return "error", "no exit status"
        if j.rc == 0:
            return "ok", ""
        return "error", "rc=%d" % j.rc

    def version_jobs(self) -> List[Job]:
        """Software versions (as probe.sh's slow jobs; uname -r is read in-process below)."""
        jobs = []  # type: List[Job]
        if "dpkg-query" in self.have and self.dpkg_format:
            jobs.append(
                Job(
                    "rdma_core",
                    "dpkg-query",
                    ["dpkg-query", "-W", "-f", self.dpkg_format, "rdma-core"],
                )
            )
        elif "rpm" in self.have:
            jobs.append(Job("rdma_core", "rpm", ["rpm", "-q", "rdma-core"]))
        if "ofed_info" in self.have:
            jobs.append(Job("ofed_info", "-", ["ofed_info", "-s"]))
        if self.gkind == "nvidia-smi":
            jobs.append(Job("nvidia_driver", "-", ["cat", "/proc/driver/nvidia/version"]))
            if self.nccl_scan:
                jobs.append(Job("nccl", "-", ["sh", "-c", self.nccl_scan]))
        return jobs

    def frame(
        self,
        clock_ns: int,
        up: str,
        slow: bool,
        s: Scan,
        vals: Dict[str, bytes],
        eth: Dict[str, Any],
        times: Dict[str, int],
        cpu: Dict[str, int],
        jobs: List[Job],
    ) -> bytes:
        self.seq += 1
        out = Sections(self.a.scap, self.a.fcap, self.gen)
        rns = times.get("sys", clock_ns)
        for kind in ("sysnet", "sysib"):
            lines = []  # type: List[bytes]
            for e in s.tick[kind]:
                if e.code == "N":
                    v = vals.get(e.rel)
                    if v is not None:
                        lines.append(e.pre + v)
                else:
                    lines.append(e.pre + b"-")
            ctr = s.ctr[kind]
            rows = []  # type: List[bytes]
            if ctr:
                nums = [vals.get(e.rel, b"-") for e in ctr]
                row = b" ".join(nums)
                if (
                    len(nums) > ROW
                    or PLAIN_ROW.fullmatch(row) is None
                    or row.count(b" ") != len(nums) - 1
                ):
                    # Rare: a value that is no number (N/A, garbage) goes as "-", and its
                    # line goes in the text, where the parser says what it held.
                    for i, e in enumerate(ctr):
                        v = nums[i]
                        if v != b"-" and not (v.isdigit() and len(v) <= 20):
                            nums[i] = b"-"
                            lines.append(e.pre + v)
                    rows = decimal_rows(nums)
                else:
                    rows = [row]
            out.add(kind, "-", rns, "ok", "", lines)
            if ctr:
                self.enc.values(out, kind + "_counters", "-", rns, s.ctr_names[kind], rows)
            if slow:
                lines = []
                gt = GidTable()
                for e in s.slow[kind]:
                    if e.code == "s":
                        lines.append(e.rel.encode() + b" " + gt.mark(e.rel, self))
                    elif e.code == "S" and e.rel in vals and gt.keep(e.rel, vals[e.rel]):
                        lines.append(e.rel.encode() + b" " + vals[e.rel])
                out.add(kind + "_slow", "-", rns, "ok", "", lines)
        if slow and s.slow.get("systb"):  # all slow: only the slow section (see fab_tb)
            lines = []
            for e in s.slow["systb"]:
                if e.code == "s":
                    lines.append(e.rel.encode() + b" -")
                elif e.rel in vals:
                    lines.append(e.rel.encode() + b" " + vals[e.rel])
            out.add("systb_slow", "-", rns, "ok", "", lines)
        if slow and s.cpu:
            order = []  # type: List[str]
            for base, _ in s.cpu:
                if base not in order:
                    order.append(base)
            out.add(
                "cputhrottle",
                "-",
                rns,
                "ok",
                "",
                [
                    b"devices/system/cpu/cpu*/thermal_throttle/%s %d" % (b.encode(), cpu[b])
                    for b in order
                    if b in cpu
                ],
            )
        for n in s.ethtool:
            if n in eth:
                got = eth[n]
                t = times.get("eth " + n, clock_ns)
                if isinstance(got, tuple):
                    self.enc.values(out, "ethtool_S", n, t, got[0], b64_rows(got[1]), True)
                else:
                    out.add(
                        "ethtool_S", n, t, "error", "ioctl: " + clean(got.strerror or str(got)), []
                    )
        self.enc.forget_unsent(
            out,
            [(k + "_counters", "-") for k in ("sysnet", "sysib") if s.ctr.get(k)]
            + [("ethtool_S", n) for n in s.ethtool if isinstance(eth.get(n), tuple)],
        )
        for j in jobs:
            st, det = self.job_status(j)
            if j.kind == "gpu_amd":
                det = (det + " " if det else "") + "tool=" + self.gkind
            if st != "ok" and j.kind in OPTICS_KINDS:  # backs off; its section says why
                self.oskip[(j.kind, j.subj)] = self.oround + 16
            if j.kind == "ethtool_fec" and self.ethv:
                det = (det + " " if det else "") + "ethtool=" + self.ethv
            lines = job_lines(j)
            if j.kind == "firewall":  # nft's one-line JSON in pieces, as the sh probe sends it
                lines = [ln[k : k + 60000] for ln in lines for k in range(0, len(ln) or 1, 60000)]
            st, det = truncated(j, st, det)
            out.add(j.kind, j.subj, j.read_ns or clock_ns, st, det, lines)
        for kind, subj in self.obackoff:
            out.add(kind, subj, clock_ns, "error", "backoff", [])
        if self.mlx_new:  # every function's latest, the new one among them
            self.mlx_new = False
            for d in sorted(self.mlx_last):
                st, det, rns, lines = self.mlx_last[d]
                out.add("mlxlink", d, rns or clock_ns, st, det, lines)
        if slow:
            if "ethtool" not in self.have:
                if self.eth is None:
                    out.add("ethtool_S", "-", clock_ns, "missing", "ethtool", [])
                out.add("ethtool_i", "-", clock_ns, "missing", "ethtool", [])
            if "mlnx_qos" not in self.have:
                out.add("mlnx_qos", "-", clock_ns, "missing", "mlnx_qos", [])
            if "dcb" not in self.have:
                out.add("dcb_pfc", "-", clock_ns, "missing", "dcb", [])
            if self.gkind == "none":
                out.add(
                    "gpu_nvidia", "-", clock_ns, "missing", "no nvidia-smi, amd-smi or rocm-smi", []
                )
            out.add("uname_r", "-", clock_ns, "ok", "", [os.uname()[2].encode()])
            if "ip" not in self.have:
                out.add("ip_addr", "-", clock_ns, "missing", "ip", [])
            if not self.have & {"dpkg-query", "rpm"}:
                out.add("rdma_core", "-", clock_ns, "missing", "dpkg-query or rpm", [])
            if "ofed_info" not in self.have:
                out.add("ofed_info", "-", clock_ns, "missing", "ofed_info", [])
            if self.gkind == "none":
                out.add("nvidia_driver", "-", clock_ns, "missing", "nvidia-smi", [])
                out.add("nccl", "-", clock_ns, "missing", "nvidia-smi", [])
            if self.opt and "devlink" not in self.have:
                out.add("devlink_health", "-", clock_ns, "missing", "devlink", [])
            if self.opt and s.physical and "ethtool" in self.have and not self.om_run:
                out.add("ethtool_m", "-", clock_ns, "missing", "needs root", [])
            if self.opt and s.physical and self.a.mlxlink and "mlxlink" not in self.have:
                out.add("mlxlink", "-", clock_ns, "missing", "mlxlink", [])
            elif self.opt and s.physical and self.a.mlxlink and not self.om_run:
                out.add("mlxlink", "-", clock_ns, "missing", "needs root", [])
            if not self.fw:
                out.add("firewall", "-", clock_ns, "missing", "no nft or iptables-save", [])
            elif not self.fw_run:
                out.add("firewall", "-", clock_ns, "missing", "needs root", [])
            for p in sorted(self.skip):
                self.warn("sysfs file skipped (its read blocked): " + p)
        if self.gpu is not None:
            self.gpu.section(out)
        notes = [
            b"interval_ms %d" % self.a.iv,
            b"slow %d" % (1 if slow else 0),
            ("impl " + self.impl).encode(),
        ]
        if self.skipped:
            notes.append(b"skipped_ticks %d" % self.skipped)
            self.skipped = 0
        if self.eth is not None:
            notes.append(b"ethtool_ioctls %d" % self.eth.calls)
        w, self.warnings = self.warnings, []
        notes.extend(("warning " + x).encode() for x in w)
        notes.append(self.gen.declare(notes, slow))
        out.add("probe", "-", clock_ns, "ok", "", notes)
        head = "@@fabtop-frame %d %d %s %d.%03d" % (
            self.seq,
            clock_ns,
            up,
            clock_ns // 10**9,
            (clock_ns // 10**6) % 1000,
        )
        return b"\n".join([head.encode()] + out.out + [b"@@end %d" % self.seq, b""])

    # -- output and lifetime
    def write(self, data: bytes) -> None:
        with self.out_lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(1, view)
                except InterruptedError:
                    continue
                except OSError:
                    self.end(0)
                view = view[n:]

    def end(self, rc: int) -> None:
        """End everything the probe started (TERM, KILL after 1 s), then exit with ``rc``.

        When it leads its process group it TERMs the group, as the sh probe does, so a
        tool's own children go too; its own TERM reaches the handler, which sees it is
        already ending. Without the group it ends only the children it started: a group
        kill would hit whoever started it. Children still there after 1 s are KILLed.
        """
        self.ending = True
        with self.end_lock:
            kids = list(self.children)
            if os.getpgrp() == os.getpid():
                try:
                    os.killpg(0, signal.SIGTERM)
                except OSError:
                    pass
            else:
                for c in kids:
                    try:
                        c.terminate()
                    except OSError:
                        pass
            t_end = time.monotonic() + 1.0
            while time.monotonic() < t_end and any(c.poll() is None for c in kids):
                time.sleep(0.02)
            # Whatever is left, and whatever started meanwhile (no new process starts
            # once ``ending`` is set, but one may have been on its way).
            for c in set(kids) | set(self.children):
                if c.poll() is None:
                    try:
                        c.kill()
                    except OSError:
                        pass
            os._exit(rc)

    def _on_term(self, *_: Any) -> None:
        if not self.ending:  # our own group TERM, from end(): already on the way out
            self.end(143)

    def watch_stdin(self) -> None:
        def run() -> None:
            try:
                while os.read(0, 65536):
                    pass
            except OSError:
                pass
            self.end(0)

        t = threading.Thread(target=run)
        t.daemon = True
        t.start()

    def main(self) -> None:
        signal.signal(signal.SIGTERM, self._on_term)
        self.watch_stdin()
        iv = self.a.iv / 1000.0
        left = 0
        deadline = time.monotonic()
        while True:
            slow = left <= 0
            if slow:
                left = self.a.slow
            left -= 1
            data = self.tick(slow)
            self.write(data)
            if self.a.maxf and self.seq >= self.a.maxf:
                self.end(0)
            deadline += iv
            now = time.monotonic()
            if deadline <= now:
                missed = int((now - deadline) / iv)
                if missed:
                    self.skipped += missed
                deadline = now if now - deadline > iv else deadline
            # Between ticks: the watchdog's fast reads, and a keepalive each second so
            # a closed channel fails a write soon even at a 60 s interval.
            last_ka = now
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                nxt = min(deadline, self.wd.next_read(), last_ka + 1.0)
                if nxt > now:
                    time.sleep(nxt - now)
                now = time.monotonic()
                if now >= self.wd.next_read() and now < deadline:
                    if not self.reader.run(self.wd.sample, self.a.to):
                        self.reader.job = None
                        self.reader = Reader()
                        self.warn("watchdog read blocked for %gs" % self.a.to)
                if now - last_ka >= 1.0 and now < deadline:
                    self.write(b"\n")
                    last_ka = now


# ---------------------------------------------------------------- PFC watchdog

FAST_S = 0.1  # sampling period of a port whose lossless priorities show pause activity
# The storm condition of a run without the storm_* arguments (Args): the defaults of the
# thresholds of the same names (fabtop/core/thresholds.py; a test holds them equal).
STORM_RATIO = 0.99  # pfcwd: paused for 99 % of the window
FLAT_BYTES_PER_S = 1e6  # "the priority's tx is flat" when the link speed is unknown
FLAT_FRACTION = 0.02  # ... or under 2 % of the line rate
# A window shorter than this is not judged (the next one is, from the same baseline): a
# tick's read lands next to a fast read, and a few ms apart the read times swamp it.
MIN_WINDOW_S = FAST_S / 2


class Watchdog(object):
    """pfcwd in the probe: per-priority pause duration and bytes, sampled adaptively.

    Every tick reads each port's statistics anyway (the tick's ethtool read feeds it); a
    port whose `[rt]x_prioN_pause_duration` moved is sampled every FAST_S until a whole
    tick passes without pause activity. A storm is a priority paused for at least
    storm_pause_ratio of the window between two samples while the bytes it should be
    moving stay flat (under storm_flat_fraction of the line rate, storm_flat_bytes_per_s
    without a speed): the thresholds the frames are judged by, sent as arguments (Args).
    The event is written the moment that holds, and again while it holds
    (at most once a tick), and a `clear` when it stops.
    """

    def __init__(self, probe: Probe) -> None:
        self.p = probe
        self.last = {}  # type: Dict[str, Tuple[float, Dict[bytes, int]]]
        self.took = {}  # type: Dict[str, float]  # how long the baseline's read took
        self.fast_until = {}  # type: Dict[str, float]
        self.storm = {}  # type: Dict[Tuple[str, int, str], float]  # -> last event sent
        self.next_t = float("inf")
        self.event_seq = 0

    def next_read(self) -> float:
        if not self.fast_until or self.p.eth is None:
            return float("inf")
        return self.next_t

    def seen(self, n: str, mono: float, got: Any, took: float = 0.0) -> None:
        """One reading of a port's statistics (a tick's, or the watchdog's own).

        ``mono``: when the read started; ``took``: how long it ran. The driver takes the
        counters somewhere inside it (mlx5: ~40 firmware commands, prio N's PPCNT partway).
        """
        ev = self._seen(n, mono, got, took)
        if ev:
            self.p.write(ev)

    def _seen(self, n: str, mono: float, got: Any, took: float) -> Optional[bytes]:
        if not isinstance(got, tuple):
            return None
        names, vals = got
        cur = {}  # type: Dict[bytes, int]
        for k, v in zip(names, vals):
            if b"prio" in k and (k.endswith(b"_pause_duration") or k.endswith(b"_bytes")):
                cur[k] = v
        if not cur:
            return None
        prev = self.last.get(n)
        if prev is not None and mono - prev[0] < MIN_WINDOW_S:
            return None  # keep the baseline: the next reading is judged over a whole window
        slack = self.took.get(n, 0.0)
        self.last[n] = (mono, cur)
        self.took[n] = max(took, 0.0)
        if prev is None:
            return None
        return self._judge(n, prev, mono, cur, slack, self.took[n])

    def _judge(
        self,
        n: str,
        prev: Tuple[float, Dict[bytes, int]],
        mono: float,
        cur: Dict[bytes, int],
        slack: float,
        took: float,
    ) -> Optional[bytes]:
        t0, old = prev
        dt = mono - t0
        if dt <= 0:
            return None
        # Both reads are stamped at their start and the counters taken somewhere inside
        # them: the true window is up to `slack` (the baseline read's length) shorter than
        # the stamps say, and a 99.5 % storm over 100 ms can read 95 %. A storm is judged
        # on the shortest window the reads allow (so a real one always passes); the ratio
        # said is the middle estimate.
        short = max(dt - slack, dt / 2)
        mid = dt + (took - slack) / 2
        active = False
        lines = []  # type: List[bytes]
        speed = self._speed(n)
        a = self.p.a
        flat = a.flat_bytes if speed is None else a.flat_frac * speed
        for p in range(8):
            for side, other in (("rx", "tx"), ("tx", "rx")):
                dk = b"%s_prio%d_pause_duration" % (side.encode(), p)
                if dk not in cur or dk not in old:
                    continue
                d = cur[dk] - old[dk]
                if d <= 0:
                    continue
                active = True
                ratio = min(d / 1e6 / mid, 1.0)
                stormy = d / 1e6 >= a.storm_ratio * short
                bk = b"%s_prio%d_bytes" % (other.encode(), p)
                moved = (cur[bk] - old[bk]) / dt if bk in cur and bk in old else None
                key = (n, p, side)
                if stormy and (moved is None or moved <= flat):
                    last = self.storm.get(key)
                    if last is None or mono - last >= self.p.a.iv / 1000.0:
                        self.storm[key] = mono
                        lines.append(
                            b"storm %s %d %s %.4f %s %d"
                            % (
                                n.encode(),
                                p,
                                side.encode(),
                                ratio,
                                (b"%.0f" % moved) if moved is not None else b"-",
                                int(dt * 1e6),
                            )
                        )
                elif key in self.storm and not stormy:
                    del self.storm[key]
                    lines.append(b"clear %s %d %s %.4f" % (n.encode(), p, side.encode(), ratio))
        if active:
            self.fast_until[n] = mono + max(self.p.a.iv / 1000.0, FAST_S) + FAST_S
            self.next_t = min(self.next_t, mono + FAST_S)
        else:
            for key in [k for k in self.storm if k[0] == n]:
                del self.storm[key]
                lines.append(b"clear %s %d %s 0" % (n.encode(), key[1], key[2].encode()))
        if not lines:
            return None
        return self._event(mono, lines)

    def _speed(self, n: str) -> Optional[float]:
        s = self.p.scan
        if s is None:
            return None
        e = s.speed.get(n)  # looked up, not searched: this runs on every fast read
        if e is not None and e.fd >= 0:
            v = pread_value(e)
            if v is not None and v.isdigit() and int(v) > 0:
                return int(v) * 1e6 / 8
        return None

    def _event(self, mono: float, lines: List[bytes]) -> bytes:
        self.event_seq += 1
        ns = self.p.wall_ns(mono)
        head = "@@fabtop-event %d %d %s %d.%03d" % (
            self.event_seq,
            ns,
            self.p.uptime(),
            ns // 10**9,
            (ns // 10**6) % 1000,
        )
        body = [head.encode(), b"@@section pfcwd - %d ok window_ms=%d" % (ns, FAST_S * 1000)]
        body.extend(lines)
        body.append(b"@@end %d" % self.event_seq)
        body.append(b"")
        return b"\n".join(body)

    def sample(self, r: Reader) -> None:
        """The fast read (in the reader thread, under its deadline): fast ports only."""
        now = time.monotonic()
        eth = self.p.eth
        self.next_t = float("inf")
        if eth is None:
            return
        for n in list(self.fast_until):
            if now > self.fast_until[n]:
                del self.fast_until[n]
                continue
            r.item = "ethtool ioctl " + n
            m = time.monotonic()
            try:
                got = eth.read(n)
            except OSError:
                continue
            self.seen(n, m, got, time.monotonic() - m)
        r.item = None
        if self.fast_until:
            self.next_t = now + FAST_S


def main(argv: List[str]) -> None:
    try:
        a = Args(argv)
    except Refused as e:
        die(str(e))
        return
    if a.xpath:
        os.environ["PATH"] = a.xpath + ":" + os.environ.get("PATH", "")
    os.environ["LC_ALL"] = "C"
    # A write to a closed pipe raises (Python ignores SIGPIPE): Probe.write then ends us.
    Probe(a).main()


if __name__ in ("__main__", "__fabtop_probe__"):
    main(sys.argv[1:])
