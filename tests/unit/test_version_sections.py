"""A frame's software-version sections -> HostSample.versions: what each status means."""

from __future__ import annotations

from collectors.assemble import assemble
from collectors.frames import Frame, Section


def _frame(*sections: Section) -> Frame:
    return Frame(1, 1_700_000_000_000_000_000, 100.0, 1_700_000_000.0, list(sections))


def test_ok_sections_give_versions_with_their_source() -> None:
    s = assemble(
        "n1",
        _frame(
            Section("uname_r", None, 1, "ok", None, "6.8.0-45-generic"),
            Section("rdma_core", "rpm", 1, "ok", None, "rdma-core-48.0-1.el9.x86_64"),
            Section("ofed_info", None, 1, "ok", None, "OFED-internal-25.10-1.7.1:"),
        ),
    )
    v = s.versions
    assert v is not None and v.kernel is not None and v.rdma_core is not None
    assert (v.rdma_core.value, v.rdma_core.source) == ("48.0-1.el9", "rpm")
    assert v.ofed is not None and v.ofed.value == "OFED-internal-25.10-1.7.1"
    assert v.nvidia_driver is None and v.nccl is None  # never sent: not read, not unknown


def test_each_way_of_not_reading_a_version_is_unknown_with_why() -> None:
    v = assemble(
        "n1",
        _frame(
            Section("uname_r", None, 1, "missing", "uname", ""),
            Section("rdma_core", None, 1, "missing", "dpkg-query or rpm", ""),
            Section("ofed_info", None, 1, "timeout", "after 2s", "MLNX_OFED_LINUX-23.10-1.1.9.0:"),
            Section(
                "nvidia_driver",
                None,
                1,
                "error",
                "rc=1",
                "cat: /proc/driver/nvidia/version: No such file or directory",
            ),
            Section("nccl", None, 1, "ok", None, ""),
        ),
    ).versions
    assert v is not None
    notes = {
        name: (getattr(v, name).value, getattr(v, name).note)
        for name in ("kernel", "rdma_core", "ofed", "nvidia_driver", "nccl")
    }
    assert notes == {
        "kernel": (None, "no uname"),
        "rdma_core": (None, "no dpkg-query or rpm"),
        "ofed": (None, "timeout (after 2s)"),  # even with text: a timed-out read is not trusted
        "nvidia_driver": (None, "error (rc=1)"),
        "nccl": (None, "no readable process has NCCL loaded"),
    }


def test_a_package_tool_that_says_not_installed_is_read_not_failed() -> None:
    v = assemble(
        "n1",
        _frame(
            Section("rdma_core", "rpm", 1, "error", "rc=1", "package rdma-core is not installed")
        ),
    ).versions
    assert v is not None and v.rdma_core is not None
    assert (v.rdma_core.value, v.rdma_core.note) == (None, "rdma-core not installed")


def test_a_frame_without_version_sections_has_no_versions() -> None:
    assert assemble("n1", _frame(Section("probe", None, 1, "ok", None, "impl sh"))).versions is None
