"""mlnx_qos and dcb pfc parsers on the captures in ../shared/fixtures/qos."""

from __future__ import annotations

from pathlib import Path

from collectors.parsers.qos import parse_dcb_pfc, parse_mlnx_qos


def test_mlnx_qos_trust_dscp_pfc3(fixtures_dir: Path) -> None:
    res = parse_mlnx_qos(
        (fixtures_dir / "qos/mlnx_qos_trust_dscp_pfc3_os_controlled_att-netarbiter.txt").read_text()
    )
    cfg = res.config
    assert res.warnings == []
    assert cfg.source == "mlnx_qos"
    assert cfg.trust == "dscp"
    assert cfg.pfc_enabled == (3,)
    assert cfg.dscp2prio is not None and len(cfg.dscp2prio) == 64
    # the capture maps DSCP 24..31 (incl. the usual RoCE DSCP 26) to priority 3
    assert {d for d, p in cfg.dscp2prio.items() if p == 3} == set(range(24, 32))
    assert cfg.dscp2prio[26] == 3
    assert cfg.ets is not None
    assert cfg.ets["tc0.tsa"] == "vendor"
    assert cfg.ets["tc0.priorities"] == "1"
    assert cfg.ets["tc1.priorities"] == "0"
    assert res.dcbx_mode == "OS controlled"
    assert res.cable_len == 7


def test_mlnx_qos_unsupported_features_warn(fixtures_dir: Path) -> None:
    res = parse_mlnx_qos(
        (fixtures_dir / "qos/mlnx_qos_i_vlan_unsupported_cx5_lkml-rdma.txt").read_text()
    )
    assert len(res.warnings) == 4
    assert all("not supported" in w for w in res.warnings)
    cfg = res.config
    assert (cfg.trust, cfg.pfc_enabled, cfg.dscp2prio, cfg.ets) == (None, None, None, None)


def test_dcb_pfc_show(fixtures_dir: Path) -> None:
    res = parse_dcb_pfc(
        (fixtures_dir / "qos/dcb_pfc_show_mlxsw_spectrum_commitmsg_iproute2.txt").read_text()
    )
    assert res.warnings == []
    assert res.pfc_cap == 8
    assert res.macsec_bypass is True
    assert res.delay == 0
    assert res.config.source == "dcb"
    assert res.config.pfc_enabled == (1, 7)
    assert res.requests[1] == 217 and res.requests[7] == 28
    assert res.indications[1] == 179 and res.indications[7] == 18
    assert set(res.requests) == set(range(8))


def test_dcb_pfc_single_line_prio_pfc() -> None:
    # same object printed on one line with the newer "prio-pfc" keyword
    res = parse_dcb_pfc("pfc-cap 8 macsec-bypass off delay 4096 prio-pfc 0:off 3:on 5:on\n")
    assert res.config.pfc_enabled == (3, 5)
    assert (res.macsec_bypass, res.delay) == (False, 4096)


def test_dcb_pfc_garbage_warns() -> None:
    res = parse_dcb_pfc("Error: Device does not support DCB\n")
    assert res.warnings
    assert res.config.pfc_enabled is None


# --- dcb apptrust / app / ets / buffer ------------------------------------------------------
# No capture from real hardware: these texts are the examples in iproute2's man pages
# dcb-app(8), dcb-ets(8), dcb-buffer(8) and the commit message adding dcb apptrust.


def test_dcb_apptrust_order_names_the_trusted_field() -> None:
    from collectors.parsers.qos import parse_dcb_apptrust

    res = parse_dcb_apptrust("order: ethtype stream-port pcp\n")
    assert res.order == ("ethtype", "stream-port", "pcp") and res.trust == "pcp"
    assert parse_dcb_apptrust("order: dscp pcp").trust == "dscp"
    bad = parse_dcb_apptrust("Error: no such device\n")
    assert bad.trust is None and bad.warnings


def test_dcb_app_dscp_names_and_numbers() -> None:
    from collectors.parsers.qos import parse_dcb_app

    named = parse_dcb_app("dscp-prio 0:0 CS3:2 CS3:3 CS6:6\n")  # without -N
    numeric = parse_dcb_app("dscp-prio 0:0 24:2 24:3 48:6\n")  # dcb -N
    assert named.dscp2prio == numeric.dscp2prio == {0: 0, 24: 3, 48: 6}
    assert parse_dcb_app("dscp-prio AF41:4 EF:5").dscp2prio == {34: 4, 46: 5}
    junk = parse_dcb_app("dscp-prio 99:1 XX:2 3:9")
    assert junk.dscp2prio == {} and len(junk.warnings) == 3


def test_dcb_ets_in_the_mlnx_qos_key_style() -> None:
    from collectors.parsers.qos import parse_dcb_ets

    res = parse_dcb_ets(
        "prio-tc 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7\n"
        "tc-tsa 0:ets 1:ets 2:ets 3:strict 4:strict 5:strict 6:strict 7:strict\n"
        "tc-bw 0:33 1:33 2:34 3:0 4:0 5:0 6:0 7:0\n"
    )
    assert res.warnings == []
    assert res.ets["tc2.tsa"] == "ets" and res.ets["tc2.bw"] == "34"
    assert res.ets["tc3.tsa"] == "strict" and res.ets["tc3.priorities"] == "3"


def test_dcb_buffer_sizes_in_bytes() -> None:
    from collectors.parsers.qos import parse_dcb_buffer

    res = parse_dcb_buffer(
        "prio-buffer 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7\n"
        "buffer-size 0:10Kb 1:10Kb 2:10Kb 3:10Kb 4:10Kb 5:10Kb 6:1Mb 7:10Kb\n"
        "total-size 1222Kb\n"
    )
    assert res.warnings == []
    assert res.prio_buffer[6] == 6
    assert res.buffer_size[6] == 1024 * 1024 and res.buffer_size[0] == 10 * 1024
    assert res.total_size == 1222 * 1024


def test_dcb_fills_qos_when_mlnx_qos_is_absent(fixtures_dir: Path) -> None:
    from collectors.assemble import assemble
    from collectors.frames import Frame, Section

    ns = 1_700_000_000_000_000_000
    pfc = (fixtures_dir / "qos/dcb_pfc_show_mlxsw_spectrum_commitmsg_iproute2.txt").read_text()
    secs = [
        Section("sysnet", None, ns, "ok", None, "eth0/operstate up\neth0/mtu 9000\neth0/device -"),
        Section("dcb_pfc", "eth0", ns, "ok", None, pfc),
        Section("dcb_apptrust", "eth0", ns, "ok", None, "order: dscp pcp"),
        Section("dcb_app", "eth0", ns, "ok", None, "dscp-prio 0:0 CS3:3 CS6:6"),
        Section("dcb_ets", "eth0", ns, "ok", None, "prio-tc 0:0 3:3\ntc-tsa 0:ets 3:strict"),
    ]
    qos = assemble("h", Frame(1, ns, 1.0, ns / 1e9, secs)).links["eth0"].qos
    assert qos is not None and qos.source == "dcb"
    assert qos.pfc_enabled == (1, 7) and qos.trust == "dscp"
    assert qos.dscp2prio == {0: 0, 24: 3, 48: 6}
    assert qos.ets is not None and qos.ets["tc3.tsa"] == "strict"
