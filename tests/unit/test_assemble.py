"""Frame -> HostSample on frames built from the real captures in ../shared/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import Frame, FrameDecoder, Section, render_frame
from collectors.parsers.ethtool import parse_ethtool_stats
from tests.unit.test_parse_sysfs import sysfs_dump

MLX5_S = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"


def _sec(kind: str, subject: str | None, text: str, status: str = "ok") -> Section:
    return Section(kind, subject, 1_700_000_000_000_000_000, status, None, text)


def _frame(*sections: Section) -> Frame:
    return Frame(7, 1_700_000_000_000_000_000, 12345.5, 1_700_000_000.0, list(sections))


@pytest.fixture(scope="module")
def procfs(fixtures_dir: Path) -> Path:
    return fixtures_dir / "sysfs/prometheus_procfs/sys/class"


@pytest.fixture(scope="module")
def roce_frame(fixtures_dir: Path, procfs: Path) -> Frame:
    """eth0 (procfs tree) behind mlx5_0 port 1, with the mlx5 ethtool -S capture.

    The archived mlx5_0 is an IB-mode ConnectX-4 with no netdev link; the two lines a RoCE
    port adds in sysfs (its Ethernet link layer and its GID's netdev) are grafted on.
    """
    sysib = sysfs_dump(procfs / "infiniband").replace(
        "mlx5_0/ports/1/link_layer InfiniBand", "mlx5_0/ports/1/link_layer Ethernet"
    )
    sysib += "mlx5_0/ports/1/gid_attrs/ndevs/0 eth0\n"
    return _frame(
        _sec("sysnet", None, sysfs_dump(procfs / "net")),
        _sec("sysib", None, sysib),
        _sec("ethtool_S", "eth0", (fixtures_dir / MLX5_S).read_text()),
        _sec("ethtool_i", "eth0", "", status="missing"),
    )


def test_roce_port_merges_netdev_and_rdma(
    fixtures_dir: Path, procfs: Path, roce_frame: Frame
) -> None:
    sample = assemble("gpu1", roce_frame)
    assert (sample.seq, sample.clock_ns, sample.uptime_s) == (7, roce_frame.clock_ns, 12345.5)
    link = sample.links["eth0"]
    assert "mlx5_0/1" not in sample.links
    assert (link.kind, link.rdma_device, link.port, link.netdev) == ("roce", "mlx5_0", 1, "eth0")
    raw = parse_ethtool_stats((fixtures_dir / MLX5_S).read_text()).counters
    assert link.counters["ethtool"] == raw
    ib_dir = procfs / "infiniband/mlx5_0/ports/1"
    assert link.counters["ib_port"]["port_rcv_data"] == int(
        (ib_dir / "counters/port_rcv_data").read_text()
    )
    assert link.counters["ib_hw"]["roce_adp_retrans"] == 99
    # ethtool's port counter wins over the RDMA port's, which wins over the netdev's
    assert link.metrics["rx_bytes"] == raw["rx_bytes_phy"]
    assert link.metrics["rx_bytes"] != 4 * link.counters["ib_port"]["port_rcv_data"]
    assert link.metrics["xmit_wait"] == 0  # only the RDMA port knows it
    assert link.metrics["retransmits"] == 99
    # the capture has no link_down_events_phy: IB link_downed (0) beats carrier_down_count (1)
    assert link.metrics["link_down_events"] == 0
    assert link.state == "up"
    assert link.mtu == 1500
    assert link.rate_gbps == 1.0  # netdev speed 1000 Mb/s
    assert link.firmware == "14.28.2006"  # no ethtool -i: the RDMA device's fw_ver
    assert link.driver is None


def test_roce_qos_from_names_and_sysfs_ecn(roce_frame: Frame) -> None:
    qos = assemble("gpu1", roce_frame).links["eth0"].qos
    assert qos is not None
    assert qos.source == "ethtool"
    assert qos.pfc_enabled == ()  # mlx5 per-priority bytes present, no pause names
    assert qos.ecn_np_enabled == (0, 1, 3, 4, 6, 7)
    assert qos.ecn_rp_enabled == (0, 1, 3, 4, 6)


def test_mlnx_qos_section_wins(fixtures_dir: Path, roce_frame: Frame) -> None:
    text = (
        fixtures_dir / "qos/mlnx_qos_trust_dscp_pfc3_os_controlled_att-netarbiter.txt"
    ).read_text()
    frame = _frame(*roce_frame.sections, _sec("mlnx_qos", "eth0", text))
    qos = assemble("gpu1", frame).links["eth0"].qos
    assert qos is not None
    assert (qos.source, qos.trust, qos.pfc_enabled) == ("mlnx_qos", "dscp", (3,))
    assert qos.ecn_np_enabled == (0, 1, 3, 4, 6, 7)


def test_dcb_pfc_section_used_without_mlnx_qos(fixtures_dir: Path, roce_frame: Frame) -> None:
    text = (fixtures_dir / "qos/dcb_pfc_show_mlxsw_spectrum_commitmsg_iproute2.txt").read_text()
    frame = _frame(*roce_frame.sections, _sec("dcb_pfc", "eth0", text))
    qos = assemble("gpu1", frame).links["eth0"].qos
    assert qos is not None and (qos.source, qos.pfc_enabled) == ("dcb", (1, 7))


def test_dcb_buffer_and_failed_dcb_tools(fixtures_dir: Path, roce_frame: Frame) -> None:
    # dcb-buffer(8) example text (no real capture exists); a dcb that failed is one warning.
    buf = (
        "prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0\n"
        "buffer-size 0:10Kb 1:1Mb 2:0b 3:0b 4:0b 5:0b 6:0b 7:0b\n"
    )
    failed = Section(
        "dcb_ets", "eth0", 1, "error", "rc=1", "Attribute read: Operation not supported"
    )
    frame = _frame(*roce_frame.sections, _sec("dcb_buffer", "eth0", buf), failed)
    sample = assemble("gpu1", frame)
    qos = sample.links["eth0"].qos
    assert qos is not None and qos.prio_buffer is not None and qos.buffer_size is not None
    assert qos.prio_buffer[3] == 1 and qos.buffer_size[1] == 1024 * 1024
    assert qos.ets is None
    assert [w for w in sample.warnings if "dcb_ets" in w] == [
        "gpu1: dcb_ets eth0: error (rc=1): Attribute read: Operation not supported"
    ]


def test_ib_ports_without_netdev(fixtures_dir: Path) -> None:
    root = fixtures_dir / "sysfs/prometheus_node_exporter/sys/class/infiniband"
    sample = assemble("ib1", _frame(_sec("sysib", None, sysfs_dump(root))))
    assert set(sample.links) == {"mlx4_0/1", "mlx4_0/2", "i40iw0/1"}
    p1 = sample.links["mlx4_0/1"]
    assert (p1.kind, p1.netdev, p1.state, p1.rate_gbps) == ("ib", None, "active", 40.0)
    assert p1.metrics["rx_bytes"] == 4 * 4631917  # counters_ext port_rcv_data_64
    assert p1.saturated == ["port_xmit_wait"]
    assert p1.firmware == "2.31.5050"
    iw = sample.links["i40iw0/1"]
    assert "ib_port" not in iw.counters  # every counter read "N/A (no PMA)"
    assert "rx_bytes" not in iw.metrics
    assert sample.warnings == []


def test_plain_virtual_and_thunderbolt_netdevs(fixtures_dir: Path, procfs: Path) -> None:
    sysnet = sysfs_dump(procfs / "net") + "\n".join(
        [
            "lo/mtu 65536",
            "lo/operstate unknown",
            "lo/statistics/rx_bytes 42",
            "thunderbolt0/device -",
            "thunderbolt0/operstate up",
        ]
    )
    info = (fixtures_dir / "ethtool/ethtool_i_e1000e_node_exporter.txt").read_text()
    frame = _frame(
        _sec("sysnet", None, sysnet),
        _sec("ethtool_i", "eth0", info),
        _sec("ethtool_i", "thunderbolt0", "driver: thunderbolt-net\n"),
    )
    sample = assemble("mac1", frame)
    assert sample.links["lo"].kind == "virtual"
    assert sample.links["lo"].metrics["rx_bytes"] == 42
    assert sample.links["lo"].counters["netdev"] == {"rx_bytes": 42}
    assert sample.links["thunderbolt0"].kind == "tb"
    eth0 = sample.links["eth0"]
    assert (eth0.kind, eth0.driver, eth0.firmware) == ("netdev", "e1000e", "0.5-4")
    assert eth0.qos is not None and eth0.qos.source == "sysfs"  # only sysfs ECN is known


def test_warnings_prefixed_and_sections_recorded(fixtures_dir: Path, roce_frame: Frame) -> None:
    bad = (fixtures_dir / MLX5_S).read_text() + "\n     rx_foo: oops\n"
    frame = _frame(
        *[s for s in roce_frame.sections if s.kind != "ethtool_S"],
        _sec("ethtool_S", "eth0", bad),
        _sec("probe", None, "interval_ms 1000\nwarning interface name 'a b' refused"),
        _sec("mlnx_qos", "eth0", "", status="missing"),
    )
    sample = assemble("gpu1", frame)
    assert "gpu1: ethtool_S eth0: bad value for rx_foo: 'oops'" in sample.warnings
    assert "gpu1: probe: interface name 'a b' refused" in sample.warnings
    assert ("mlnx_qos", "eth0", "missing") in [
        (s.kind, s.subject, s.status) for s in sample.sections
    ]
    assert sample.links["eth0"].counters["ethtool"]["rx_bytes_phy"] == 6211329423080


def test_wire_round_trip(roce_frame: Frame) -> None:
    """What the decoder yields from the wire assembles the same as the frame itself."""
    (decoded,) = FrameDecoder().feed(render_frame(roce_frame).encode())
    a, b = assemble("gpu1", roce_frame), assemble("gpu1", decoded)
    assert a.links["eth0"].metrics == b.links["eth0"].metrics
    assert a.links["eth0"].counters == b.links["eth0"].counters


def test_empty_and_garbage_frames() -> None:
    assert assemble("h", _frame()).links == {}
    sample = assemble(
        "h",
        _frame(
            _sec("sysnet", None, "\x00\x01 garbage\nnoslash"),
            _sec("sysib", None, "x/ports/zz/state 1"),
            _sec("ethtool_S", "ghost", "a: b"),
        ),
    )
    assert "ghost" not in sample.links  # ethtool text alone does not make a link
    assert all(w.startswith("h: ") for w in sample.warnings)
    assert sample.warnings


def _boom(*_: object) -> object:
    raise RuntimeError("parser bug \x1b]52;c;cGF5bG9hZA==\x07here")


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("parse_sysnet", "sysnet"),
        ("parse_sysib", "sysib"),
        ("parse_ethtool_stats", "ethtool_S eth0"),
        ("ethtool_plan", "link eth0"),
        ("parse_kv_dump", "cputhrottle"),
        ("gpus_from_frame", "gpu"),
    ],
)
def test_a_parser_that_raises_costs_its_section_only(
    monkeypatch: pytest.MonkeyPatch, roce_frame: Frame, target: str, kind: str
) -> None:
    frame = _frame(*roce_frame.sections, _sec("cputhrottle", None, "cpu0/x 3"))
    whole = assemble("gpu1", frame)
    where = "layout" if target == "gpus_from_frame" else "assemble"  # read every tick
    monkeypatch.setattr(f"collectors.{where}.{target}", _boom)
    # The host's shape is kept (parsers run when it is built): this frame builds a new one.
    monkeypatch.setattr("collectors.layout._SHAPES", {})
    sample = assemble("gpu1", frame)
    errors = [w for w in sample.warnings if "RuntimeError" in w]
    assert errors == [f"gpu1: {kind}: error: RuntimeError: parser bug here"]
    assert sample.links or kind == "sysnet"  # the other sections still made their links
    if kind != "sysnet" and kind != "sysib":
        assert set(sample.links) == set(whole.links)
    if kind == "cputhrottle":
        assert whole.cpu_throttle_count == 3 and sample.cpu_throttle_count is None
        assert sample.links["eth0"].metrics == whole.links["eth0"].metrics


def test_remote_section_headers_and_notes_are_cleaned(roce_frame: Frame) -> None:
    osc = "\x1b]0;owned\x07"
    frame = _frame(
        *roce_frame.sections,
        Section("dcb_ets", "eth0", 1, "error", f"rc=1{osc}", f"bad{osc} thing\x9b31m"),
        _sec("probe", None, f"warning name{osc} refused\x07"),
        Section(f"odd{osc}", f"eth{osc}9", 1, f"ok{osc}", None, "x"),
    )
    sample = assemble("gpu1", frame)
    assert "gpu1: dcb_ets eth0: error (rc=1): bad thing" in sample.warnings
    assert "gpu1: probe: name refused" in sample.warnings
    assert ("odd", "eth9", "ok") in [(s.kind, s.subject, s.status) for s in sample.sections]
    assert not any("\x1b" in w or "owned" in w for w in sample.warnings)


def test_huge_cpu_throttle_count_is_one_warning() -> None:
    sample = assemble("h", _frame(_sec("cputhrottle", None, f"cpu0/a {'9' * 5000}\ncpu1/a 2")))
    assert sample.cpu_throttle_count == 2
    assert len(sample.warnings) == 1 and "cpu0/a: bad value" in sample.warnings[0]


def test_warnings_of_one_frame_are_bounded() -> None:
    bad = "\n".join(f"     rx_{i}: x" for i in range(60))
    sections = [_sec("ethtool_S", f"eth{i}", bad) for i in range(20)]
    sample = assemble("h", _frame(*sections))
    assert len(sample.warnings) == 201
    assert sample.warnings[-1] == "h: further warnings of this frame suppressed"


def test_the_parse_memo_is_bounded_in_bytes_whatever_a_host_sends() -> None:
    """The sysfs text is memoized (it repeats once counters go by position); a host whose
    text changes every tick, at the section cap, must not grow the collector's memory."""
    from collectors import layout as asm

    for i in range(40):
        alias = "x" * 1900
        body = "\n".join(f"eth{i}_{k}/ifalias {alias}" for k in range(500))  # ~0.97 MB
        text = (
            f"@@fabtop-frame {i + 1} 1 1.00 1.000\n@@section sysnet - 1 ok\n{body}\n@@end {i + 1}\n"
        )
        (frame,) = FrameDecoder().feed(text.encode())
        sample = assemble("n1", frame)
        assert len(sample.links) == 500
        assert asm._memo_bytes <= asm._MEMO_BYTES_MAX
        assert sum(len(k[1]) for k in asm._MEMO) <= asm._MEMO_BYTES_MAX
