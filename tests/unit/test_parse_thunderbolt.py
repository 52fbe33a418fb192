"""The Linux Thunderbolt parser (collectors/parsers/thunderbolt.py) on assembled sysfs."""

from __future__ import annotations

from collectors.parsers.thunderbolt import parse_systb
from tests.unit.tb_sysfs import TbHost, Xd, systb_text

A = "d2030000-0072-6b0e-23a4-1c9b3f5e8a01"
B = "d2030000-0072-6b0e-23a4-1c9b3f5e8a02"


def test_host_router_xdomain_and_its_netdev() -> None:
    h = TbHost(A, xds=[Xd("1", B, "spark2", gbps=40.0, lanes=2)], dock=True)
    got = parse_systb(systb_text(h))
    assert got.warnings == []
    tb = got.info
    assert tb is not None and tb.source == "sysfs"
    assert (tb.self_uid, tb.generation, tb.domain_uids) == (A, 4, ())
    # the dock (authorized) is a device, not another host: one peer only
    assert len(tb.peers) == 1
    p = tb.peers[0]
    assert (p.port, p.netdev, p.peer_uid, p.peer_name) == ("0-1", "thunderbolt0", B, "spark2")
    assert (p.rx_gbps_per_lane, p.tx_gbps_per_lane, p.rx_lanes, p.tx_lanes) == (40, 40, 2, 2)
    assert p.total_gbps == 80.0
    # Linux says no receptacle maximum: left unknown, never made up
    assert (p.max_gbps_per_lane, p.max_lanes) == (None, None)


def test_bad_values_cost_that_value_only() -> None:
    text = systb_text(TbHost(A, xds=[Xd("1", B, "n2")]))
    text = (
        text.replace("0-1/rx_speed 20.0 Gb/s", "0-1/rx_speed fast\x1b[31m")
        .replace("0-1/tx_lanes 2", "0-1/tx_lanes 99999999999999999999999")
        .replace(f"0-1/unique_id {B}", "0-1/unique_id not-a-uuid")
        .replace("0-0/generation 4", "0-0/generation banana")
    )
    got = parse_systb(text)
    tb = got.info
    assert tb is not None and tb.self_uid == A and tb.generation is None
    p = tb.peers[0]
    assert p.rx_gbps_per_lane is None and p.tx_gbps_per_lane == 20.0
    assert p.tx_lanes is None and p.rx_lanes == 2 and p.peer_uid is None
    assert len(got.warnings) == 4
    assert all("\x1b" not in w for w in got.warnings)


def test_two_domains_give_every_identity_and_no_router_no_identity() -> None:
    text = systb_text(TbHost(A)) + "\n1-0 -\n1-0/unique_id " + B.upper() + "\n1-0/generation 4"
    tb = parse_systb(text).info
    assert tb is not None and tb.domain_uids == (A, B) and tb.self_uid == A
    assert parse_systb("").info is None
    assert parse_systb("domain0 -").info is None


def test_asymmetric_usb4_v2_lanes_are_kept() -> None:
    # USB4 v2 runs 3 lanes one way and 1 the other (xdomain.c rx_lanes_show)
    text = systb_text(TbHost(A, xds=[Xd("1", B, "n2", gbps=40.0)]))
    text = text.replace("0-1/rx_lanes 2", "0-1/rx_lanes 3")
    text = text.replace("0-1/tx_lanes 2", "0-1/tx_lanes 1")
    got = parse_systb(text)
    assert got.warnings == []
    p = got.info.peers[0] if got.info else None
    assert p is not None and (p.rx_lanes, p.tx_lanes) == (3, 1)
