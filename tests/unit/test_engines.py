"""The engines' command lines: argv words, each checked; hostile words refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collectors.engines import (
    GRACE_S,
    MAX_DURATION_S,
    PACKAGE_OF,
    EngineArgError,
    Iperf3Run,
    PerftestRun,
    SockperfRun,
    iperf3_argv,
    missing_tool_line,
    perftest_argv,
    sockperf_argv,
    version_argv,
)
from collectors.launch import launch_args

HOSTILE_NAMES = [
    "-d",
    "--help",
    "mlx5_0;reboot",
    "$(reboot)",
    "`id`",
    "a b",
    "mlx5_0\n",
    "x" * 65,
    "",
    "mlx5_0|sh",
    "../mlx5_0",
]
HOSTILE_ADDRESSES = [
    "-oProxyCommand=x",
    "10.0.0.1;ls",
    "host name",
    "",
    "a" * 300,
    "$(id)",
    "10.0.0.1 -x",
    "fe80::1%$(id)",  # ipaddress itself takes any scope text
    "fe80::1%a b",
    "-h.example",
]
BAD_NUMBERS: list[object] = [True, -1, 0, 10**9, 1.5, "5", None]


def _bw(**kw: object) -> PerftestRun:
    return replace(
        PerftestRun("ib_write_bw", "mlx5_0", 18515, server="10.0.0.2", gid_index=3), **kw
    )


def test_perftest_bw_client_argv() -> None:
    cmd = perftest_argv(_bw(bidir=True, qps=2, duration_s=5))
    assert cmd.limit_s == 5 + GRACE_S  # the launcher ends it then
    assert list(cmd.argv) == [
        "ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18515", "-x", "3", "-s", "65536",
        "-F", "-q", "2", "-D", "5", "--report_gbits", "-b", "10.0.0.2",
    ]  # fmt: skip


def test_perftest_latency_server_asks_for_every_sample() -> None:
    run = PerftestRun("ib_send_lat", "rocep1s0f1", 18516, size=2, iterations=100_000)
    cmd = perftest_argv(run)
    argv = list(cmd.argv)
    assert "-U" in argv and argv[argv.index("-n") + 1] == "100000"
    assert "-x" not in argv and "-q" not in argv  # IB: no GID index; latency: one QP
    assert argv[-1] == "-U"  # no peer address on the server side
    assert cmd.limit_s <= MAX_DURATION_S + GRACE_S


def test_every_word_is_a_plain_string_the_launcher_takes() -> None:
    for cmd in (
        perftest_argv(_bw()),
        iperf3_argv(Iperf3Run(5201, server="fe80::1", bind="fe80::2", bidir=True)),
        sockperf_argv(SockperfRun("10.0.0.2", 11111, server="10.0.0.2", log_dir="/tmp/fabtop-x")),
        version_argv("ib_write_lat"),
    ):
        assert all(isinstance(w, str) and w and "\n" not in w for w in cmd.argv)
        launch_args(cmd.argv, cmd.limit_s)  # LaunchError otherwise


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_device_names_are_refused(name: str) -> None:
    with pytest.raises(EngineArgError, match="RDMA device"):
        perftest_argv(_bw(device=name))


@pytest.mark.parametrize("address", HOSTILE_ADDRESSES)
def test_hostile_addresses_are_refused(address: str) -> None:
    with pytest.raises(EngineArgError, match="address"):
        perftest_argv(_bw(server=address))
    with pytest.raises(EngineArgError, match="address"):
        iperf3_argv(Iperf3Run(5201, server=address))
    with pytest.raises(EngineArgError, match="address"):
        iperf3_argv(Iperf3Run(5201, bind=address))
    with pytest.raises(EngineArgError, match="address"):
        sockperf_argv(SockperfRun(address, 11111))


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize("field", ["port", "ib_port", "gid_index", "size", "duration_s", "qps"])
def test_numbers_out_of_range_are_refused(field: str, value: object) -> None:
    if field == "gid_index" and (value is None or value == 0):
        return  # None: no GID index (IB); 0 is a valid index
    with pytest.raises(EngineArgError, match="within"):
        perftest_argv(_bw(**{field: value}))


def test_iterations_and_modes() -> None:
    lat = PerftestRun("ib_write_lat", "mlx5_0", 18515)
    for bad in (9, 2_000_001, True):
        with pytest.raises(EngineArgError, match="iterations"):
            perftest_argv(replace(lat, iterations=bad))
    with pytest.raises(EngineArgError, match="bandwidth tools"):
        perftest_argv(replace(lat, bidir=True))
    with pytest.raises(EngineArgError, match="tool must be"):
        perftest_argv(replace(lat, tool="sh"))
    with pytest.raises(EngineArgError, match="exclude"):
        iperf3_argv(Iperf3Run(5201, server="10.0.0.1", reverse=True, bidir=True))


@pytest.mark.parametrize(
    ("directory", "file"),
    [("/tmp/../etc", "x"), ("/etc", "x"), ("/tmp/a/b", "x"), ("/tmp/x", "-x"), ("/tmp/x", "a/b"),
     ("tmp/x", "x"), ("/tmp/x y", "x")],
)  # fmt: skip
def test_the_full_log_stays_in_a_temporary_directory(directory: str, file: str) -> None:
    run = SockperfRun("10.0.0.2", 11111, server="10.0.0.2", log_dir=directory, log_file=file)
    with pytest.raises(EngineArgError, match="full log"):
        sockperf_argv(run)


def test_iperf3_and_sockperf_argv() -> None:
    assert list(iperf3_argv(Iperf3Run(5201, duration_s=2)).argv) == [
        "iperf3",
        "-J",
        "-p",
        "5201",
        "-s",
        "-1",
    ]
    client = iperf3_argv(
        Iperf3Run(5201, server="10.0.0.2", bind="10.0.0.1", streams=4, reverse=True)
    )
    assert list(client.argv) == [
        "iperf3", "-J", "-p", "5201", "-B", "10.0.0.1", "-c", "10.0.0.2", "-t", "5", "-i", "1",
        "-P", "4", "-R",
    ]  # fmt: skip
    run = SockperfRun("10.0.0.2", 11111, server="10.0.0.2", log_dir="/tmp/fabtop-ab12", mps=1000)
    assert list(sockperf_argv(run).argv) == [
        "sockperf", "ping-pong", "-i", "10.0.0.2", "-p", "11111", "--tcp", "-t", "5", "-m", "64",
        "--mps=1000", "--full-log", "/tmp/fabtop-ab12/sockperf.csv",
    ]  # fmt: skip
    assert list(sockperf_argv(replace(run, server=None)).argv) == [
        "sockperf", "server", "-i", "10.0.0.2", "-p", "11111", "--tcp",
    ]  # fmt: skip


def test_missing_tool_names_the_package() -> None:
    assert missing_tool_line("node1", "ib_write_lat") == (
        "node1: ib_write_lat not found: install the perftest package (perftest)"
    )
    assert {PACKAGE_OF[t] for t in ("iperf3", "sockperf", "ib_read_lat")} == {
        "iperf3",
        "sockperf",
        "perftest",
    }


def test_a_scoped_ipv6_address_is_kept() -> None:
    argv = iperf3_argv(Iperf3Run(5201, server="fe80::2%thunderbolt0", bind="fe80::1%thunderbolt0"))
    assert "fe80::2%thunderbolt0" in argv.argv and "fe80::1%thunderbolt0" in argv.argv


def test_perftest_buffer_is_bounded_for_a_plan_to_check() -> None:
    assert _bw(size=2).buffer_bytes == 4096 * 2
    assert _bw(size=8 * 1024 * 1024, qps=64).buffer_bytes == 1024**3  # the most allowed


def test_version_argv() -> None:
    assert version_argv("ib_read_lat").argv == ("ib_read_lat", "--version")
    with pytest.raises(EngineArgError, match="tool must be"):
        version_argv("sh -c id")
