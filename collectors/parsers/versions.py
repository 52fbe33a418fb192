"""Parse what a host's tools say about its software stack (issue 15) into versions.

Each parser takes one probe section's text and returns a :class:`VersionRead`: the version
as the tool printed it, or None with a note saying why it is unknown. They never raise.
Formats and where they come from (real captures in ``tests/fixtures/versions/``, see its
SOURCES.md):

- ``uname -r``: one line, the kernel release (``6.8.0-58-generic``).
- ``dpkg-query -W -f '${db:Status-Abbrev} ${Version}\\n' rdma-core``: ``ii  50.0-2ubuntu0.2``;
  the status letters are dpkg-query(1)'s (``ii`` installed, ``rc`` removed with its
  configuration files left). A package dpkg never knew: ``dpkg-query: no packages found
  matching rdma-core`` and exit status 1. (This format was captured on the test bed's own
  dpkg-query 1.21.22, the status letters are documented in dpkg-query(1).)
- ``rpm -q rdma-core``: ``rdma-core-36.0-1.1.x86_64`` (name-version-release.arch), or
  ``package rdma-core is not installed`` and exit status 1.
- ``ofed_info -s``: ``MLNX_OFED_LINUX-23.10-1.1.9.0:`` (MLNX_OFED) or
  ``OFED-internal-24.10-1.1.4.0.200:`` (DOCA-OFED): the release, then a colon.
- ``/proc/driver/nvidia/version``: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module
  515.76  <date>`` (proprietary module) or ``NVRM version: NVIDIA UNIX Open Kernel Module
  for x86_64  580.95.05  Release Build ...`` (open module); a ``GCC version:`` line after.
- the probe's NCCL scan (``collectors/probe.sh``, ``FAB_NCCL``; fabtop's own format,
  docs/PROBE.md): ``lib <path>`` for each distinct ``libnccl.so*`` file that a process
  maps (``/proc/<pid>/maps``, kernel Documentation/filesystems/proc.rst), then
  ``dist <name>.dist-info`` for the Python package beside a pip wheel's library, whose
  file name (``libnccl.so.2``) has no full version. Packaged NCCL is a file named
  ``libnccl.so.2.23.4`` (its symlink ``libnccl.so.2`` resolves to it in maps).
"""

from __future__ import annotations

import re

from collectors.numbers import parse_uint
from collectors.samples import VersionRead
from collectors.text import clean

_MAX_VERSION = 80  # longer is no version any of these tools prints
_MAX_LINES = 64  # the scan caps itself at 16 libraries; more is not its output
_MAX_NAME = 160  # a file name: libnccl.so.2.23.4, nvidia_nccl_cu12-2.21.5.dist-info

# "OFED-internal-24.10-1.1.4.0.200:" / "MLNX_OFED_LINUX-23.10-1.1.9.0:"
_OFED = re.compile(r"((?:MLNX_OFED_LINUX|OFED)[A-Za-z_-]*-[0-9][0-9A-Za-z.-]*?):?\s*\Z")
# The first number with a dot after the word "Module" (the open module puts "for <arch>"
# between the two).
_NVIDIA = re.compile(r"\bKernel Module\b(?:\s+for\s+\S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)\b")
_KERNEL = re.compile(r"[0-9]+\.[0-9]+[0-9A-Za-z._+~-]*\Z")
_VERSIONISH = re.compile(r"[0-9A-Za-z.+~:_-]+\Z")
_RPM_ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x", "noarch", "i686", "armv7hl")
# libnccl.so.2.23.4 -> 2.23.4 (a file name with the whole version)
_NCCL_FILE = re.compile(r"libnccl\.so\.([0-9]+\.[0-9]+\.[0-9]+)\Z")
# nvidia_nccl_cu12-2.21.5.dist-info -> 2.21.5
_MAJOR_MINOR = re.compile(r"([0-9]+)\.([0-9]+)")
_NCCL_DIST = re.compile(r"nvidia_nccl_cu[0-9]+-([0-9]+\.[0-9]+\.[0-9]+)[0-9A-Za-z.+]*\.dist-info\Z")


def _lines(text: str) -> list[str]:
    return [ln for ln in (clean(x).strip() for x in text.splitlines()[:_MAX_LINES]) if ln]


def _ok(v: str) -> bool:
    return 0 < len(v) <= _MAX_VERSION and bool(_VERSIONISH.match(v))


def unread(source: str, status: str, detail: str | None) -> VersionRead:
    """A version whose section did not say it: the tool is missing, timed out or failed."""
    why = status + (f" ({clean(detail, 120)})" if detail else "")
    if status == "missing":
        why = f"no {clean(detail, 120)}" if detail else "tool missing"
    return VersionRead(None, source, why)


def parse_uname_r(text: str) -> VersionRead:
    """``uname -r``."""
    lines = _lines(text)
    # the length first: "[0-9]+\\.[0-9]+[0-9A-Za-z...]*" tries every split of a long run of
    # digits (the square of the run)
    if lines and len(lines[0]) <= _MAX_VERSION and _KERNEL.match(lines[0]):
        return VersionRead(lines[0], "uname -r")
    return VersionRead(None, "uname -r", "no kernel release in the output")


def parse_dpkg_query(text: str) -> VersionRead:
    """``dpkg-query -W -f '${db:Status-Abbrev} ${Version}\\n' rdma-core``."""
    lines = _lines(text)
    for ln in lines:
        if "no packages found" in ln:
            return VersionRead(None, "dpkg-query", "rdma-core not installed")
        parts = ln.split()
        if len(parts) != 2:
            continue
        status, version = parts
        # "ii": installed; the second letter is the package's state (dpkg-query(1)).
        if len(status) >= 2 and status[1] != "i":
            return VersionRead(None, "dpkg-query", f"rdma-core not installed (dpkg {status})")
        if _ok(version):
            return VersionRead(version, "dpkg-query")
    return VersionRead(None, "dpkg-query", "no rdma-core version in the output")


def parse_rpm_q(text: str) -> VersionRead:
    """``rpm -q rdma-core``: name-version-release.arch; several lines when several arches."""
    found: list[str] = []
    for ln in _lines(text):
        if ln.endswith("is not installed"):
            return VersionRead(None, "rpm", "rdma-core not installed")
        if not ln.startswith("rdma-core-"):
            continue
        vr = ln[len("rdma-core-") :]
        head, dot, arch = vr.rpartition(".")
        if dot and arch in _RPM_ARCHES:
            vr = head
        if _ok(vr) and vr not in found:
            found.append(vr)
    if found:
        return VersionRead("+".join(sorted(found)), "rpm")
    return VersionRead(None, "rpm", "no rdma-core version in the output")


def parse_ofed_info_s(text: str) -> VersionRead:
    """``ofed_info -s``: the MLNX_OFED or DOCA-OFED release, without its colon."""
    for ln in _lines(text):
        m = _OFED.match(ln) if len(ln) <= _MAX_VERSION + 2 else None  # the colon, a blank
        if m and len(m.group(1)) <= _MAX_VERSION:
            return VersionRead(m.group(1), "ofed_info -s")
    return VersionRead(None, "ofed_info -s", "no OFED release in the output")


def parse_nvidia_version(text: str) -> VersionRead:
    """``/proc/driver/nvidia/version``: the kernel module's version."""
    for ln in _lines(text):
        if not ln.startswith("NVRM version:"):
            continue
        m = _NVIDIA.search(ln)
        if m:
            return VersionRead(m.group(1), "/proc/driver/nvidia/version")
    return VersionRead(None, "/proc/driver/nvidia/version", "no NVRM version line")


def parse_nccl_scan(text: str) -> VersionRead:
    """The probe's NCCL scan: the versions of NCCL that running processes have mapped.

    Several versions (two environments on one host) are joined with ``+``, sorted. A
    library whose version cannot be read (a pip wheel's ``libnccl.so.2`` without its
    dist-info, a file replaced since it was mapped) is said in the note.
    """
    versions: set[str] = set()
    unknown: list[str] = []
    libs = pip = dists = 0
    for ln in _lines(text):
        kind, _, rest = ln.partition(" ")
        name = rest.rsplit("/", 1)[-1]
        # No pattern looks at a longer name: "[0-9]+" runs before "[0-9A-Za-z.+]*" cost
        # the square of a long run of digits.
        fits = len(name) <= _MAX_NAME
        if kind == "dist":
            m = _NCCL_DIST.match(name) if fits else None
            if m:
                versions.add(m.group(1))
                dists += 1
            continue
        if kind != "lib":
            continue
        libs += 1
        if rest.endswith(" (deleted)"):
            unknown.append("a library replaced on disk since it was loaded")
        elif fits and (m := _NCCL_FILE.search(name)) is not None:
            versions.add(m.group(1))
        elif rest.endswith("/nvidia/nccl/lib/libnccl.so.2"):
            pip += 1  # a pip wheel's: its version is in the dist-info line
        else:
            unknown.append(f"{name[:60]} (no version in its name)")
    if pip and not dists:
        unknown.append("libnccl.so.2 of a pip wheel without its dist-info")
    note = "; ".join(dict.fromkeys(unknown)) or None
    if versions:
        return VersionRead("+".join(sorted(versions, key=_vkey)), "mapped libnccl", note)
    if libs == 0:
        return VersionRead(None, "mapped libnccl", "no readable process has NCCL loaded")
    return VersionRead(None, "mapped libnccl", note or "no version found")


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(n for x in v.split(".") if (n := parse_uint(x)) is not None)


def major_minor(version: str) -> str | None:
    """``6.8`` of ``6.8.0-58-generic``, ``535.104`` of ``535.104.05``; None without both."""
    m = _MAJOR_MINOR.match(version[:_MAX_VERSION])
    if m is None:
        return None
    major, minor = parse_uint(m.group(1)), parse_uint(m.group(2))
    return f"{major}.{minor}" if major is not None and minor is not None else None
