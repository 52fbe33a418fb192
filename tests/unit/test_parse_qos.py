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
