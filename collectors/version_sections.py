"""A frame's software-version sections (issue 15) -> :class:`SoftwareVersions`.

The probes send one section per source on slow ticks (docs/PROBE.md, "Software
versions"): ``uname_r``, ``rdma_core`` (subject: the package tool that answered),
``ofed_info``, ``nvidia_driver`` and ``nccl``. A section that is not ``ok`` still says
something: ``missing`` names the absent tool, a failed ``dpkg-query``/``rpm`` prints that
rdma-core is not installed. Whatever it is, an unread version is None with its reason.
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.frames import Frame, Section, TextRead, read_now
from collectors.parsers.versions import (
    parse_dpkg_query,
    parse_nccl_scan,
    parse_nvidia_version,
    parse_ofed_info_s,
    parse_rpm_q,
    parse_uname_r,
    unread,
)
from collectors.samples import SoftwareVersions, VersionRead

VERSION_KINDS = ("uname_r", "rdma_core", "ofed_info", "nvidia_driver", "nccl")

_Parse = Callable[[str], VersionRead]
_PARSERS: dict[str, tuple[str, _Parse]] = {
    "uname_r": ("uname -r", parse_uname_r),
    "ofed_info": ("ofed_info -s", parse_ofed_info_s),
    "nvidia_driver": ("/proc/driver/nvidia/version", parse_nvidia_version),
    "nccl": ("mapped libnccl", parse_nccl_scan),
}
_PACKAGE_TOOLS: dict[str, _Parse] = {"dpkg-query": parse_dpkg_query, "rpm": parse_rpm_q}


def _read(sec: Section, read: TextRead) -> VersionRead:
    if sec.kind == "rdma_core":
        parse = _PACKAGE_TOOLS.get(sec.subject or "")
        source = sec.subject or "package manager"
    else:
        source, parse = _PARSERS[sec.kind]
    if parse is not None and sec.status == "ok":
        return read(parse, sec)
    if parse is not None and sec.kind == "rdma_core" and sec.status == "error":
        # dpkg-query and rpm exit 1 for a package they do not have: that is an answer.
        got = read(parse, sec)
        if got.note is not None and got.note.startswith("rdma-core not installed"):
            return got
    return unread(source, sec.status, sec.detail)  # missing, timed out, failed, cut


def versions_from_frame(frame: Frame, read: TextRead = read_now) -> SoftwareVersions | None:
    """The versions a frame's sections say; None when it has none of them.

    ``read``: how a section's text is parsed (the assembler keeps each carried one's).
    """
    got: dict[str, VersionRead] = {}
    for sec in frame.sections:
        if sec.kind in VERSION_KINDS and sec.schema is None and sec.kind not in got:
            got[sec.kind] = _read(sec, read)
    if not got:
        return None
    return SoftwareVersions(
        kernel=got.get("uname_r"),
        rdma_core=got.get("rdma_core"),
        ofed=got.get("ofed_info"),
        nvidia_driver=got.get("nvidia_driver"),
        nccl=got.get("nccl"),
    )
