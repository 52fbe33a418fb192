"""Software-version parsers (issue 15) on real captures (tests/fixtures/versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.parsers.versions import (
    major_minor,
    parse_dpkg_query,
    parse_nccl_scan,
    parse_nvidia_version,
    parse_ofed_info_s,
    parse_rpm_q,
    parse_uname_r,
)

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "versions"


def _cap(name: str) -> str:
    return (CAPTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("ofed_info_s_mlnx_ofed_23.10_azure-hpc.txt", "MLNX_OFED_LINUX-23.10-1.1.9.0"),
        ("ofed_info_s_mlnx_ofed_5.1_rhel.txt", "MLNX_OFED_LINUX-5.1-0.6.6.0"),
        ("ofed_info_s_doca_ofed_24.10_ubuntu.txt", "OFED-internal-24.10-1.1.4.0.200"),
    ],
)
def test_ofed_release_without_its_colon(name: str, want: str) -> None:
    got = parse_ofed_info_s(_cap(name))
    assert (got.value, got.note) == (want, None)


def test_ofed_info_printing_something_else_is_unknown() -> None:
    got = parse_ofed_info_s("-bash: ofed_info: command not found\n")
    assert got.value is None and got.note


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("rpm_q_rdma_core_36_opensuse_linux-rdma.txt", "36.0-1.1"),
        ("rpm_q_rdma_core_17_el7_ompi-9957.txt", "17.2-3.el7"),
    ],
)
def test_rpm_version_release_without_name_and_arch(name: str, want: str) -> None:
    assert parse_rpm_q(_cap(name)).value == want


def test_rpm_not_installed_is_unknown_and_says_so() -> None:
    got = parse_rpm_q(_cap("rpm_q_rdma_core_not_installed.txt"))
    assert got.value is None and got.note == "rdma-core not installed"


def test_dpkg_installed_and_not() -> None:
    assert parse_dpkg_query(_cap("dpkg_query_status_version_dash_testbed.txt")).value == "0.5.12-2"
    got = parse_dpkg_query(_cap("dpkg_query_rdma_core_not_installed_testbed.txt"))
    assert got.value is None and got.note == "rdma-core not installed"
    # Removed, its configuration files left (dpkg-query(1) "rc"): not a version in use.
    got = parse_dpkg_query("rc  50.0-2ubuntu0.2\n")
    assert got.value is None and "not installed" in (got.note or "")


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("proc_driver_nvidia_version_open_580.95.05.txt", "580.95.05"),
        ("proc_driver_nvidia_version_proprietary_515.76.txt", "515.76"),
    ],
)
def test_nvidia_module_version_of_both_module_kinds(name: str, want: str) -> None:
    got = parse_nvidia_version(_cap(name))
    assert got.value == want
    assert got.value != "11.4.0"  # never the GCC line's version


def test_kernel_release_and_its_major_minor() -> None:
    got = parse_uname_r(_cap("uname_r_ubuntu_6.8.0-58.txt"))
    assert got.value == "6.8.0-58-generic"
    assert major_minor(got.value) == "6.8"
    assert major_minor("535.104.05") == "535.104"
    assert parse_uname_r("uname: not found\n").value is None


def test_nccl_packaged_file_name_gives_the_version() -> None:
    text = "lib /usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4\n"
    got = parse_nccl_scan(text)
    assert (got.value, got.note) == ("2.23.4", None)


def test_nccl_pip_wheel_version_comes_from_its_dist_info() -> None:
    text = (
        "lib /opt/venv/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2\n"
        "dist nvidia_nccl_cu12-2.21.5.dist-info\n"
    )
    assert parse_nccl_scan(text).value == "2.21.5"
    bare = parse_nccl_scan("lib /opt/venv/site-packages/nvidia/nccl/lib/libnccl.so.2\n")
    assert bare.value is None and "dist-info" in (bare.note or "")


def test_nccl_two_environments_on_one_host_and_none_loaded() -> None:
    text = (
        "lib /usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4\n"
        "lib /srv/a/site-packages/nvidia/nccl/lib/libnccl.so.2\n"
        "dist nvidia_nccl_cu12-2.21.5.dist-info\n"
    )
    assert parse_nccl_scan(text).value == "2.21.5+2.23.4"
    none = parse_nccl_scan("")
    assert none.value is None and "no readable process" in (none.note or "")
    gone = parse_nccl_scan("lib /usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4 (deleted)\n")
    assert gone.value is None and "replaced" in (gone.note or "")


def test_hostile_text_is_bounded_and_cleaned() -> None:
    evil = "\x1b[31m" + "9" * 5000 + "\n"
    for parse in (
        parse_uname_r,
        parse_dpkg_query,
        parse_rpm_q,
        parse_ofed_info_s,
        parse_nvidia_version,
        parse_nccl_scan,
    ):
        got = parse(evil)
        assert got.value is None or (len(got.value) <= 80 and "\x1b" not in got.value)
        assert "\x1b" not in (got.note or "")
