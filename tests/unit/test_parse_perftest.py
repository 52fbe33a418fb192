"""perftest's text (and --out_json) output, on the real captures in tests/fixtures/perftest.

RDMA runs are verified on captures only: this kernel has no RDMA device (SOURCES.md
says where each capture comes from). The ``-U`` sample list and the ``--out_json`` file
are built here from perftest's source (``print_report_lat``, ``write_test_info_to_file``):
no public capture of either was found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.parsers.perftest import (
    MAX_ROWS,
    MAX_SAMPLES,
    parse_perftest,
    parse_perftest_json,
)

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "perftest"
GBPS_PER_MIB_S = 1024 * 1024 * 8 / 1e9


def _read(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_every_capture_is_documented_and_parses_without_raising() -> None:
    sources = (CAPTURES / "SOURCES.md").read_text()
    files = sorted(p.name for p in CAPTURES.glob("*.txt"))
    assert len(files) >= 4
    for name in files:
        assert f"`{name}`" in sources, name
        result = parse_perftest(_read(name))
        assert result.ok or result.error, name


def test_bidirectional_bw_all_sizes_gbits_amd_pollara() -> None:
    r = parse_perftest(_read("ib_write_bw_bidir_gbits_ionic_client.txt"))
    assert r.ok and r.complete and r.warnings == []
    assert (r.kind, r.unit) == ("bw", "Gb/sec")
    h = r.header
    assert (h.test, h.bidirectional) == ("RDMA_Write BW", True)
    assert (h.device, h.link_type, h.gid_index, h.mtu, h.qps) == ("ionic_1", "Ethernet", 1, 4096, 4)
    assert (h.transport, h.connection_type) == ("IB", "RC")
    assert h.fields["CPU freq"] == "3295[MHz]"
    assert [row.size_bytes for row in r.bw] == [2**i for i in range(1, 24)]
    last = r.bw[-1]
    assert (last.size_bytes, last.iterations) == (8388608, 20000)
    assert last.average_gbps == pytest.approx(777.79)
    assert last.peak_gbps == pytest.approx(778.53)
    assert last.msg_rate_mpps == pytest.approx(0.011590)


def test_bidirectional_bw_with_cpu_warning_between_title_and_row() -> None:
    r = parse_perftest(_read("ib_write_bw_bidir_gbits_mlx5_roce.txt"))
    assert r.ok and r.warnings == []
    assert r.header.bidirectional and r.header.gid_index == 4
    assert r.header.fields["Using Enhanced Reorder"] == "OFF"
    (row,) = r.bw
    assert (row.size_bytes, row.iterations) == (65536, 560845)
    assert row.average_gbps == pytest.approx(98.02)
    assert row.peak_gbps is None  # printed 0.00: "BW peak won't be measured in this run"


def test_mb_per_second_is_mebibytes_converted_to_gbits() -> None:
    r = parse_perftest(_read("ib_write_bw_mb_mlx5_ib_server.txt"))
    assert r.ok and r.unit == "MB/sec"
    assert (r.header.device, r.header.link_type, r.header.gid_index) == ("mlx5_0", "IB", None)
    assert r.header.fields["rdma_cm QPs"] == "OFF"  # a tab before its colon
    (row,) = r.bw
    # 23317.65 MB/sec is 195.6 Gb/s (just under a 200 Gb/s link): perftest's MB is 2^20 bytes
    assert row.average_gbps == pytest.approx(23317.65 * GBPS_PER_MIB_S)
    assert 195 < row.average_gbps < 196


def test_post_list_bw_issue273() -> None:
    r = parse_perftest(_read("ib_write_bw_post_list_gbits_issue273.txt"))
    assert r.ok and r.header.test == "RDMA_Write Post List BW"
    assert r.header.fields["PCIe relax order"] == "Unsupported"  # a header line, no error
    (row,) = r.bw
    assert (row.size_bytes, row.iterations, row.average_gbps) == (8, 224958464, 0.48)


def test_latency_all_sizes_with_interleaved_cpu_lines() -> None:
    r = parse_perftest(_read("ib_write_lat_all_sizes_mlx5_ib_client.txt"))
    assert r.ok and r.kind == "lat" and r.warnings == []
    assert r.header.test == "RDMA_Write Latency"
    assert len(r.lat) == 23
    first, last = r.lat[0], r.lat[-1]
    assert (first.size_bytes, first.iterations) == (2, 1000)
    assert (first.t_min_us, first.t_max_us, first.t_typical_us) == (1.79, 5.41, 1.87)
    assert (first.t_avg_us, first.t_stdev_us, first.p99_us, first.p999_us) == (
        1.88,
        0.18,
        2.03,
        5.41,
    )
    assert (last.size_bytes, last.t_typical_us, last.p999_us) == (8388608, 345.55, 447.02)


@pytest.mark.parametrize(
    ("name", "device", "typical", "p99", "mtu"),
    [
        ("ib_write_lat_rdma_cm_dgx_spark.txt", "rocep1s0f1", 1.47, 1.57, 1024),
        ("ib_read_lat_mlx4_client.txt", "mlx4_0", 1.79, 1.88, 2048),
    ],
)
def test_latency_single_size(name: str, device: str, typical: float, p99: float, mtu: int) -> None:
    r = parse_perftest(_read(name))
    assert r.ok and r.warnings == []
    assert (r.header.device, r.header.mtu) == (device, mtu)
    (row,) = r.lat
    assert (row.t_typical_us, row.p99_us) == (typical, p99)


def test_errors_are_typed_with_the_tools_own_line() -> None:
    r = parse_perftest(_read("ib_send_bw_device_not_found_rxe.txt"))
    assert not r.ok
    assert [(e.kind, e.line) for e in r.errors] == [
        ("device", "IB device rxe2 not found"),
        ("device", "Unable to find the Infiniband/RoCE device"),
    ]
    assert r.error == "perftest: device: IB device rxe2 not found"
    r = parse_perftest(_read("ib_write_bw_connect_failed_pr228.txt"))
    assert r.errors[0].kind == "connect"
    assert r.error == "perftest: connect: Couldn't connect to 192.168.125.211:18515"


# -U prints "#, usec" then one "N, value" line per iteration (print_report_lat, "%d, %g"),
# before the table's title is printed again and the summary row.
def _unsorted_run(samples: list[float]) -> str:
    head = _read("ib_write_lat_rdma_cm_dgx_spark.txt").split(" #bytes #iterations")[0]
    title = (
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
        "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n"
    )
    body = "#, usec\n" + "".join(f"{i + 1}, {v:g}\n" for i, v in enumerate(samples))
    row = " 2       1000          1.42           1.93         1.47                1.47"
    row += "             0.00            1.57                    1.93\n"
    rule = "-" * 87 + "\n"
    return head + title + body + rule + title + row + rule


def test_every_unsorted_sample_is_read_in_order() -> None:
    samples = [1.5 + (i % 7) / 100 for i in range(5000)] + [250.0]
    r = parse_perftest(_unsorted_run(samples))
    assert r.ok and r.warnings == []
    assert r.samples_us == pytest.approx(samples)
    assert len(r.lat) == 1  # the summary row, once


def test_samples_are_bounded() -> None:
    text = "#, usec\n" + "1, 1.5\n" * (MAX_SAMPLES + 10)
    r = parse_perftest(text)
    assert len(r.samples_us) == MAX_SAMPLES
    assert r.warnings == [f"more than {MAX_SAMPLES} samples: the rest were left out"]


def test_a_bad_sample_costs_that_sample() -> None:
    r = parse_perftest(_unsorted_run([1.5, 2.5]).replace("2, 2.5", "2, nan"))
    assert r.samples_us == [1.5]
    assert any("sample 2" in w for w in r.warnings)


def test_truncated_output_keeps_what_came_and_says_so() -> None:
    text = _read("ib_write_lat_all_sizes_mlx5_ib_client.txt")
    cut = text[: text.index(" 4096    1000")]
    r = parse_perftest(cut)
    assert [row.size_bytes for row in r.lat][-1] == 2048
    assert not r.complete
    assert r.warnings == ["the output ends inside the result table (cut short?)"]
    only_header = text[: text.index(" 2       1000")]
    r = parse_perftest(only_header)
    assert not r.ok and r.error == "perftest: no result table in the output"
    assert r.warnings == ["the result table has no rows (the run was cut short)"]


@pytest.mark.parametrize(
    "garbage",
    ["", "\x00\xff" * 1000, "#bytes\n" * 10_000, "x" * 100_000, " 2 1000 a b c d e f g\n"],
)
def test_garbage_gives_one_clear_line(garbage: str) -> None:
    r = parse_perftest(garbage)
    assert not r.ok
    assert r.error is not None and "\n" not in r.error and len(r.error) < 300


def test_rows_are_bounded() -> None:
    text = _read("ib_write_bw_mb_mlx5_ib_server.txt")
    row = " 8388608    5000             23326.82            23317.65\t\t   0.002915\n"
    r = parse_perftest(text.replace(row, row * (MAX_ROWS + 5)))
    assert len(r.bw) == MAX_ROWS
    assert any("rows" in w for w in r.warnings)


def test_control_characters_in_a_device_name_are_removed() -> None:
    text = _read("ib_write_lat_rdma_cm_dgx_spark.txt").replace("rocep1s0f1", "roce\x1b]0;x\x07p1")
    assert parse_perftest(text).header.device == "rocep1"


# write_test_info_to_file + write_report_lat_to_file / write_bw_report_to_file (6.29)
OUT_JSON_LAT = """{
"test_info": {
"test": "Write_Latency_Test",
"Dual_port": "OFF",
"Device": "mlx5_0",
"Number_of_qps": 1,
"Transport_type": "IB",
"Connection_type": "RC",
"Mtu": 4096,
"Link_type": "Ethernet",
"GID_index": 3
},
"results": {
"MsgSize": 2,
"n_iterations": 1000,
"t_min": 1.79,
"t_max": 5.41,
"t_typical": 1.87,
"t_avg": 1.88,
"t_stdev": 0.18,
"percentile_99": 2.03,
"percentile_99.9": 5.41
}
}
"""


def test_out_json_latency_and_bandwidth() -> None:
    r = parse_perftest_json(OUT_JSON_LAT)
    assert r.ok and r.kind == "lat"
    assert (r.header.device, r.header.gid_index, r.header.mtu) == ("mlx5_0", 3, 4096)
    (row,) = r.lat
    assert (row.t_typical_us, row.p99_us, row.p999_us) == (1.87, 2.03, 5.41)
    bw = OUT_JSON_LAT.replace('"Write_Latency_Test"', '"Write_Bidirectional_BW_Test"')
    bw = bw.split('"results"')[0] + (
        '"results": {\n"MsgSize": 65536,\n"n_iterations": 5000,\n"BW_peak": 0.00,\n'
        '"BW_average": 98.02,\n"MsgRate": 0.186950\n}\n}\n'
    )
    r = parse_perftest_json(bw)
    assert r.ok and r.kind == "bw" and r.header.bidirectional
    assert r.bw[0].average_gbps == 98.02


@pytest.mark.parametrize("bad", ["", "{", "[]", '{"results": 5}', "1" * 2_000_000])
def test_out_json_garbage_is_one_line(bad: str) -> None:
    r = parse_perftest_json(bad)
    assert not r.ok and r.error is not None and "\n" not in r.error


def test_older_and_other_table_layouts_from_the_source() -> None:
    """Layouts of other versions and flags, from the format strings of their commits:
    RESULT_FMT_LAT before 1ccb3fd (2016: three columns), RESULT_FMT_LAT_DUR (-D) and
    RESULT_FMT_QOS (--sl: a "#sl" column), and the 2024 MiB/sec title (1d202bb)."""
    old_lat = (
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
        " 2       1000          0.98           5.23         1.02\n" + "-" * 87 + "\n"
    )
    (row,) = parse_perftest(old_lat).lat
    assert (row.t_min_us, row.t_typical_us, row.t_avg_us, row.p99_us) == (0.98, 1.02, None, None)
    dur = " #bytes        #iterations       t_avg[usec]    tps average\n"
    dur += " 2       5000000   0.85   588235.29\n"
    (row,) = parse_perftest(dur).lat
    assert (row.t_avg_us, row.t_typical_us) == (0.85, None)
    qos = (
        " #bytes    #sl      #iterations    BW peak[MiB/sec]    BW average[MiB/sec]"
        "   MsgRate[Mpps]\n"
        " 65536    3           5000           11000.00            10000.00        0.160000\n"
    )
    r = parse_perftest(qos)
    assert r.unit == "MiB/sec"
    (bw,) = r.bw
    assert (bw.size_bytes, bw.iterations) == (65536, 5000)
    assert bw.average_gbps == pytest.approx(10000 * GBPS_PER_MIB_S)


def test_the_four_column_bw_table_before_2012() -> None:
    """RESULT_FMT before commit 5787613 (June 2012) had no MsgRate column."""
    old = (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]\n"
        " 65536      5000           3264.04            3263.85\n" + "-" * 87 + "\n"
    )
    (row,) = parse_perftest(old).bw
    assert (row.size_bytes, row.msg_rate_mpps) == (65536, None)
    assert row.average_gbps == pytest.approx(3263.85 * GBPS_PER_MIB_S)


@pytest.mark.parametrize(
    ("line", "kind"),
    [  # the tools' own lines (perftest_resources.c, perftest_communication.c, *_bw.c)
        (" Port number 1 state is Down", "port"),
        (" Error when trying to query port", "port"),
        (" Found Incompatibility issue with GID types.", "gid"),
        (" Unable to Connect the HCA's through the link", "connect"),
        ("ethernet_read_keys: Couldn't read remote address", "connect"),
        ("Couldn't listen to port 18515", "connect"),
        (" Multiple QPs only available on bw tests", "arguments"),
        ("Duration mode currently doesn't support running on all sizes.", "arguments"),
        ("Completion with error at client", "run"),
        (" Failed status 12: wr_id 0 syndrom 0x81", "run"),
        (" Couldn't create IB resources", "run"),
        (" Couldn't get context for the device", "device"),
    ],
)
def test_error_kinds(line: str, kind: str) -> None:
    r = parse_perftest(line + "\n")
    assert [(e.kind, e.line) for e in r.errors] == [(kind, line.strip())]


def test_informational_lines_are_no_errors() -> None:
    text = (
        " Invalid MTU - 9000 \n Please choose mtu from {256,512,1024,2048,4096}\n"
        " Will run with the port active mtu - 4096\n"
        "Requested SQ size might be too big. Try reducing TX depth and/or inline size.\n"
        "Using sampled CPU speed 3295 MHz over reported speed 5008 MHz\n"
    )
    text += _read("ib_write_lat_rdma_cm_dgx_spark.txt")
    r = parse_perftest(text)
    assert r.ok and r.errors == []


def test_the_version_line() -> None:
    """What -V/--version prints (perftest_parameters.c: printf("Version: %s\\n", ...))."""
    assert parse_perftest("Version: 6.29\n").header.version == "6.29"


@pytest.mark.parametrize(
    ("name", "device", "qps", "gbps"),
    [
        ("ib_write_bw_rdma_cm_gbits_bnxt_re.txt", "bnxt_re0", 3, 363.47),
        ("ib_write_bw_mb_irdma_roce.txt", "irdma1", 1, 1103.38 * GBPS_PER_MIB_S),
    ],
)
def test_bw_of_other_vendors(name: str, device: str, qps: int, gbps: float) -> None:
    r = parse_perftest(_read(name))
    assert r.ok and r.warnings == []
    assert (r.header.device, r.header.qps, r.header.link_type) == (device, qps, "Ethernet")
    (row,) = r.bw
    assert row.average_gbps == pytest.approx(gbps)
