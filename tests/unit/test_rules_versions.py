"""Software versions across hosts (issue 15), in the firmware/driver mismatch rule."""

from __future__ import annotations

from dataclasses import replace

from collectors.samples import SoftwareVersions, VersionRead
from fabtop.core.findings import Finding
from tests.unit.rules_support import Fabric

BASE = SoftwareVersions(
    kernel=VersionRead("6.8.0-45-generic", "uname -r"),
    rdma_core=VersionRead("2307mlnx47-1.2310119", "dpkg-query"),
    ofed=VersionRead("MLNX_OFED_LINUX-23.10-1.1.9.0", "ofed_info -s"),
    nvidia_driver=VersionRead("535.104.05", "/proc/driver/nvidia/version"),
    nccl=VersionRead("2.21.5", "mapped libnccl"),
)
HOSTS = ("node1", "node2", "node3", "node4")


def fabric(**odd: VersionRead | None) -> Fabric:
    """Four RoCE hosts on the same software; node3 differs in the fields given."""
    fab = Fabric()
    for h in HOSTS:
        fab.port(h)
        fab.versions[h] = replace(BASE, **odd) if h == "node3" else BASE
    return fab


def software(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.rule == "firmware_mismatch" and "compared" in f.evidence]


def test_same_software_everywhere_is_quiet() -> None:
    assert not software(fabric().run(2))


def test_kernel_patch_level_differences_are_quiet() -> None:
    fab = fabric(kernel=VersionRead("6.8.0-58-generic", "uname -r"))
    assert not software(fab.run(2))


def test_kernel_minor_difference_warns_naming_the_odd_host_and_both_versions() -> None:
    fab = fabric(kernel=VersionRead("6.5.0-35-generic", "uname -r"))
    (f,) = software(fab.run(2))
    assert (f.severity, f.subject) == ("warning", "fabric")
    assert "kernel" in f.summary and "node3 (6.5.0-35-generic)" in f.summary
    assert "most run 6.8" in f.summary and f.evidence["majority"] == "6.8"


def test_rdma_core_must_match_exactly() -> None:
    fab = fabric(rdma_core=VersionRead("2307mlnx47-1.2310036", "dpkg-query"))
    (f,) = software(fab.run(2))
    assert "rdma-core" in f.summary and "node3 (2307mlnx47-1.2310036)" in f.summary
    assert f.evidence["compared"] == "exact version"


def test_one_finding_per_differing_field() -> None:
    fab = fabric(
        rdma_core=VersionRead("50.0-2", "dpkg-query"),
        kernel=VersionRead("6.5.0-35-generic", "uname -r"),
        nccl=VersionRead("2.18.1", "mapped libnccl"),
    )
    names = sorted(f.summary.split(" differs")[0] for f in software(fab.run(2)))
    assert names == ["NCCL (loaded)", "kernel", "rdma-core"]


def test_nvidia_driver_respin_is_quiet_another_release_warns() -> None:
    assert not software(fabric(nvidia_driver=VersionRead("535.104.12", "proc")).run(2))
    (f,) = software(fabric(nvidia_driver=VersionRead("535.129.03", "proc")).run(2))
    assert "NVIDIA driver" in f.summary and "node3 (535.129.03)" in f.summary


def test_unknown_never_counts_as_a_mismatch_nor_as_agreeing() -> None:
    gone = VersionRead(None, "ofed_info -s", "no ofed_info")
    fab = fabric(ofed=gone)
    assert not software(fab.run(2))  # unknown is no mismatch...
    # ...and when the others disagree, the finding says who is unknown, not who agrees.
    fab.versions["node4"] = replace(
        BASE, ofed=VersionRead("MLNX_OFED_LINUX-5.8-1.1.2.1", "ofed_info -s")
    )
    fab.versions["node2"] = replace(
        BASE, ofed=VersionRead("MLNX_OFED_LINUX-5.8-1.1.2.1", "ofed_info -s")
    )
    (f,) = software(fab.run(1))
    assert "most run MLNX_OFED_LINUX-5.8-1.1.2.1, but node1 (" in f.summary
    assert f.evidence["unknown"] == "node3 (no ofed_info)"
    assert "node3" not in f.summary and "node3" not in str(f.evidence["values"])


def test_two_hosts_that_disagree_have_no_majority() -> None:
    fab = Fabric()
    for h in ("a", "b"):
        fab.port(h)
    fab.versions["a"] = BASE
    fab.versions["b"] = replace(BASE, rdma_core=VersionRead("50.0-2", "dpkg-query"))
    (f,) = software(fab.run(1))
    assert "no majority: a (2307mlnx47-1.2310119), b (50.0-2)" in f.summary
    assert f.evidence["majority"] is None


def test_mismatch_clears_once_aligned() -> None:
    fab = fabric(rdma_core=VersionRead("50.0-2", "dpkg-query"))
    assert software(fab.run(1))
    fab.versions["node3"] = BASE
    assert not software(fab.run(1))


def test_hosts_without_version_sections_say_nothing() -> None:
    fab = Fabric()
    for h in HOSTS:
        fab.port(h)
    assert not software(fab.run(2))
