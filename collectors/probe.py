"""The probe script (package data) and its validated argument list.

The script is sent on stdin to ``exec sh -s -- ARGS`` (over SSH or as a local subprocess)
and stdin stays open after it: the probe ends everything it started when stdin reaches
EOF (docs/PROBE.md, "Lifetime"). The arguments are ``key=value`` words checked here and
checked again by the script.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from collectors.frames import MAX_FRAME_BYTES
from collectors.normalize import IB_HW_TICK, IB_PORT_TICK
from collectors.parsers.nvidia_smi import FALLBACK_FIELDS, QUERY_FIELDS

_SBIN: tuple[str, ...] = ("/usr/local/sbin", "/usr/sbin", "/sbin")
NAME_RE = re.compile(r"[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]{0,63}")
_DIR_RE = re.compile(r"/[A-Za-z0-9_./-]*")
_FIELD_RE = re.compile(r"[A-Za-z0-9_.]{1,64}")
_HW_NAME_RE = re.compile(r"[A-Za-z0-9_]{1,64}|-")
_TIMEOUT_RE = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3})?")
# A threshold's value on the wire: 0 to 16 integer digits, no leading zero, at most 6
# decimals (the probes check the same: probe.sh fab_decimal, probe_fast.py DECIMAL_RE).
_DECIMAL_RE = re.compile(r"(0|[1-9][0-9]{0,15})(\.[0-9]{1,6})?")
# The thresholds the fast probe's PFC watchdog judges a storm by (fabtop/core/thresholds.py
# has their defaults and reasons): sent under the same names, so the probe's events and
# the frames' rules fire at the same numbers. The first two are shares (0..1).
STORM_THRESHOLDS = ("storm_pause_ratio", "storm_flat_fraction", "storm_flat_bytes_per_s")

# Content bytes the probe keeps per section: 100k ethtool -S counters (about 4.5 MB) fit,
# one tool printing without end does not fill the frame. Past it the section says
# `truncated` and the rest of the frame ships.
SECTION_BYTES = 8 * 1024 * 1024
# Content bytes per frame: the decoder drops a frame over MAX_FRAME_BYTES; the probe
# section and the headers need some room of their own.
FRAME_BYTES = MAX_FRAME_BYTES - 1024 * 1024
_FRAME_BYTES_MAX = MAX_FRAME_BYTES - 64 * 1024  # the script refuses more


class ProbeArgError(ValueError):
    """An argument the probe would refuse."""


@dataclass(frozen=True, slots=True)
class ProbeArgs:
    """What the probe reads on one host, and how often."""

    interval_ms: int = 1000
    sysfs: str = "/sys"
    path: tuple[str, ...] = _SBIN
    interfaces: tuple[str, ...] = ()
    slow_ticks: int | None = None  # None: 60 s worth of ticks
    timeout_s: float = 2.0
    gpu: str = "auto"
    max_frames: int = 0
    gpu_fields: tuple[str, ...] = QUERY_FIELDS
    gpu_fallback: tuple[str, ...] = FALLBACK_FIELDS
    section_bytes: int = SECTION_BYTES
    frame_bytes: int = FRAME_BYTES
    probe: str = "auto"  # auto | python (the fast probe) | sh
    # hw_counters/ files read on every tick; the others on slow ticks. None: every file on
    # every tick (as probes before this argument did).
    ib_hw_tick: tuple[str, ...] | None = None
    # The same for an RDMA port's counters/ and counters_ext/ files.
    ib_port_tick: tuple[str, ...] | None = None
    # The watchdog's storm thresholds (STORM_THRESHOLDS); None: the probe's own defaults.
    storm_pause_ratio: float | None = None
    storm_flat_fraction: float | None = None
    storm_flat_bytes_per_s: float | None = None
    # Read the packet filter through ``sudo -n`` when the SSH user is not root (off by
    # default: a sudo that asks for a password fails, and is logged, once a minute).
    fw_sudo: bool = False
    # Read module EEPROMs (``ethtool -m``: CAP_NET_ADMIN) through ``sudo -n`` when the SSH
    # user is not root (off: without root the probe does not ask, and says so once a round).
    optics_sudo: bool = False
    # Also run NVIDIA MFT's ``mlxlink -d <pci> -m -c --json`` (read-only flags) on optics
    # rounds, one device a round, where it is installed (off: ~0.8 s of firmware access).
    mlxlink: bool = False
    # Least seconds between optics rounds (ethtool -m, --show-fec, devlink health show on
    # slow ticks); None: the probe's own 30.
    optics_s: int | None = None

    @staticmethod
    def path_default() -> tuple[str, ...]:
        """Where ethtool, dcb and mlnx_qos usually live (not on a plain user's PATH)."""
        return _SBIN


PROBE_KINDS = ("auto", "python", "sh")


# What probe.sh carries to the node, each file's text on its own ``NAME=`` line (single-
# quoted, so nothing is written on the node): the fast probe, the macOS probe, the sh
# probe's awk program.
CARRIED: tuple[tuple[str, str], ...] = (
    ("FAB_PY", "probe_fast.py"),
    ("FAB_ZSH", "probe_darwin.zsh"),
    ("FAB_AWK", "probe.awk"),
)


def _package_text(name: str) -> str:
    return importlib.resources.files("collectors").joinpath(name).read_text("utf-8")


def fast_probe_source() -> str:
    """The fast probe's Python source (collectors/probe_fast.py), as it is sent."""
    return _package_text("probe_fast.py")


@functools.cache
def probe_script() -> str:
    """The script sent to every host: probe.sh with the files of ``CARRIED`` in it.

    Which probe runs is decided on the node (probe.sh: ``fab_darwin``, then the
    ``probe=`` argument in ``fab_python``): a host without python3 runs the sh probe,
    probe.sh and its awk, from the same bytes.
    """
    lines = _package_text("probe.sh").split("\n")
    for var, name in CARRIED:
        at = [i for i, line in enumerate(lines) if line == f"{var}="]
        if len(at) != 1:
            raise RuntimeError(f"probe.sh needs one line {var}= to carry {name}")
        lines[at[0]] = var + "='" + _package_text(name).replace("'", "'\\''") + "'"
    return _package_text("lifetime.sh") + "\n".join(lines)


def check_dir(d: str, what: str) -> None:
    """An absolute directory of the probe's charset, no ".." (ProbeArgError otherwise):
    what the probe and the launcher put in front of a node's PATH."""
    if not _DIR_RE.fullmatch(d) or ".." in d.split("/"):
        raise ProbeArgError(f"{what} must be an absolute path of [A-Za-z0-9_./-]: {d!r}")


def _format_timeout(t: float) -> str:
    text = f"{t:.3f}".rstrip("0").rstrip(".")
    if not _TIMEOUT_RE.fullmatch(text) or not 0.1 <= t <= 600:
        raise ProbeArgError(f"timeout_s must be within 0.1..600: {t!r}")
    return text


def _fields(fields: tuple[str, ...], what: str) -> str:
    if not fields or not all(_FIELD_RE.fullmatch(f) for f in fields):
        raise ProbeArgError(f"{what} must be names of [A-Za-z0-9_.]: {fields!r}")
    joined = ",".join(fields)
    if len(joined) > 1500:
        raise ProbeArgError(f"{what} too long")
    return joined


def _threshold(name: str, v: float) -> str:
    """A watchdog threshold as the probes read it (six decimals at most)."""
    share = name != "storm_flat_bytes_per_s"
    text = ""
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
        text = f"{v:.6f}".rstrip("0").rstrip(".")
    if not _DECIMAL_RE.fullmatch(text) or (share and float(text) > 1):
        bound = "0..1" if share else "0..9999999999999999"
        raise ProbeArgError(f"{name} must be a number within {bound}: {v!r}")
    return text


def _tick_names(key: str, names: tuple[str, ...]) -> str:
    names = names or ("-",)  # "-": none per tick
    if not all(_HW_NAME_RE.fullmatch(n) for n in names) or len(",".join(names)) > 1500:
        raise ProbeArgError(f"{key} must be names of [A-Za-z0-9_]: {names!r}")
    return f"{key}={','.join(names)}"


def build_argv(args: ProbeArgs) -> list[str]:
    """Validate ``args`` and return the script's argument words (``key=value``)."""
    if isinstance(args.interval_ms, bool) or not 100 <= args.interval_ms <= 60000:
        raise ProbeArgError(f"interval_ms must be within 100..60000: {args.interval_ms!r}")
    check_dir(args.sysfs, "sysfs")
    for d in args.path:
        check_dir(d, "path entry")
    for name in args.interfaces:
        if not NAME_RE.fullmatch(name):
            raise ProbeArgError(f"interface name refused: {name!r}")
    if args.slow_ticks is not None and not 1 <= args.slow_ticks <= 100000:
        raise ProbeArgError(f"slow_ticks must be within 1..100000: {args.slow_ticks!r}")
    if args.gpu not in ("auto", "off"):
        raise ProbeArgError(f"gpu must be auto or off: {args.gpu!r}")
    if args.probe not in PROBE_KINDS:
        raise ProbeArgError(f"probe must be one of {', '.join(PROBE_KINDS)}: {args.probe!r}")
    if not 0 <= args.max_frames <= 999_999_999:
        raise ProbeArgError(f"max_frames must be within 0..999999999: {args.max_frames!r}")
    if not 65536 <= args.frame_bytes <= _FRAME_BYTES_MAX:
        raise ProbeArgError(
            f"frame_bytes must be within 65536..{_FRAME_BYTES_MAX}: {args.frame_bytes!r}"
        )
    if not 4096 <= args.section_bytes <= args.frame_bytes:
        raise ProbeArgError(
            f"section_bytes must be within 4096..frame_bytes ({args.frame_bytes}): "
            f"{args.section_bytes!r}"
        )
    if args.optics_s is not None and (
        isinstance(args.optics_s, bool) or not 0 <= args.optics_s <= 86400
    ):
        raise ProbeArgError(f"optics_s must be within 0..86400: {args.optics_s!r}")
    slow = args.slow_ticks or max(1, -(-60000 // args.interval_ms))
    argv = [
        f"interval_ms={args.interval_ms}",
        f"sysfs={args.sysfs}",
        f"path={':'.join(args.path)}",
        f"slow_ticks={slow}",
        f"timeout_s={_format_timeout(args.timeout_s)}",
        f"gpu={args.gpu}",
        f"max_frames={args.max_frames}",
        f"gpu_fields={_fields(args.gpu_fields, 'gpu_fields')}",
        f"gpu_fallback={_fields(args.gpu_fallback, 'gpu_fallback')}",
        f"section_bytes={args.section_bytes}",
        f"frame_bytes={args.frame_bytes}",
        f"probe={args.probe}",
    ]
    if args.interfaces:
        argv.append(f"ifaces={','.join(args.interfaces)}")
    if args.fw_sudo:
        argv.append("fw_sudo=1")
    if args.optics_sudo:
        argv.append("optics_sudo=1")
    if args.mlxlink:
        argv.append("mlxlink=1")
    if args.optics_s is not None:
        argv.append(f"optics_s={args.optics_s}")
    if args.ib_hw_tick is not None:
        argv.append(_tick_names("ib_hw_tick", args.ib_hw_tick))
    if args.ib_port_tick is not None:
        argv.append(_tick_names("ib_port_tick", args.ib_port_tick))
    for name in STORM_THRESHOLDS:
        v = getattr(args, name)
        if v is not None:
            argv.append(f"{name}={_threshold(name, v)}")
    return argv


def probe_args(
    *,
    interval_ms: int = 1000,
    sysfs: str = "/sys",
    path: Sequence[str] | None = None,
    interfaces: Sequence[str] | None = None,
    max_frames: int = 0,
    gpu: str = "auto",
    timeout_s: float | None = None,
    slow_ticks: int | None = None,
    probe: str = "auto",
    ib_hw_tick: Sequence[str] | None = IB_HW_TICK,
    ib_port_tick: Sequence[str] | None = IB_PORT_TICK,
    fw_sudo: bool = False,
    optics_sudo: bool = False,
    mlxlink: bool = False,
    thresholds: Mapping[str, float] | None = None,
) -> list[str]:
    """Validated argument words; the host's ``path`` dirs come before the sbin defaults.

    A hung tool is killed after ``timeout_s``: by default 80 % of the interval (at most
    2 s), so a frame with a hung tool still ships within its own tick. ``ib_hw_tick``,
    ``ib_port_tick``: the RDMA ``hw_counters`` and port counters a metric reads, on every
    tick; the rest on slow ticks. ``thresholds``: the fabric's effective thresholds; the
    watchdog's (STORM_THRESHOLDS) go to the probe, which judges storms by them.
    """
    th = thresholds or {}
    if timeout_s is None:
        timeout_s = round(min(2.0, max(0.1, 0.8 * interval_ms / 1000)), 2)
    dirs = list(dict.fromkeys([*(path or ()), *ProbeArgs.path_default()]))
    return build_argv(
        ProbeArgs(
            interval_ms=interval_ms,
            sysfs=sysfs,
            path=tuple(dirs),
            interfaces=tuple(interfaces or ()),
            slow_ticks=slow_ticks,
            timeout_s=timeout_s,
            gpu=gpu,
            max_frames=max_frames,
            probe=probe,
            ib_hw_tick=tuple(ib_hw_tick) if ib_hw_tick is not None else None,
            ib_port_tick=tuple(ib_port_tick) if ib_port_tick is not None else None,
            fw_sudo=fw_sudo,
            optics_sudo=optics_sudo,
            mlxlink=mlxlink,
            storm_pause_ratio=th.get("storm_pause_ratio"),
            storm_flat_fraction=th.get("storm_flat_fraction"),
            storm_flat_bytes_per_s=th.get("storm_flat_bytes_per_s"),
        )
    )


def local_command(args: ProbeArgs, shell: str = "sh") -> list[str]:
    """argv of a local run (start it in a new session); the script goes to its stdin."""
    return [shell, "-s", "--", *build_argv(args)]


def remote_command(args: ProbeArgs) -> str:
    """The command line for an SSH exec channel; the script goes to its stdin.

    The user's login shell runs it (bash, dash, zsh, tcsh, fish): one short line of
    words every one of them reads alike. ``exec`` keeps the pid sshd made a session
    leader, so the probe leads its process group.
    """
    return "exec sh -s -- " + " ".join(shlex.quote(a) for a in build_argv(args))
