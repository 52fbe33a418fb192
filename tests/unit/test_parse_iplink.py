"""ip -j link/stats and /proc/net/dev parsers on the captures in ../shared/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from collectors.parsers.iplink import parse_ip_link_json, parse_proc_net_dev


def test_ip_s_s_j_link_show(fixtures_dir: Path) -> None:
    path = fixtures_dir / "iplink/ip_s_s_j_link_show_veth_netns_netdev-list.json"
    res = parse_ip_link_json(path.read_text())
    assert res.warnings == []
    assert set(res.links) == {"lo", "veth2"}
    veth = res.links["veth2"]
    raw = next(x for x in json.loads(path.read_text()) if x["ifname"] == "veth2")
    assert veth.stats["rx_bytes"] == raw["stats64"]["rx"]["bytes"]
    assert veth.stats["rx_otherhost"] == 10
    assert veth.stats["tx_carrier_changes"] == 2
    assert (veth.mtu, veth.operstate, veth.ifindex) == (1500, "UP", 2)
    assert "UP" in veth.flags


def test_ip_j_stats_show_indented(fixtures_dir: Path) -> None:
    res = parse_ip_link_json(
        (
            fixtures_dir / "iplink/ip_j_stats_show_group_link_swp1_commitmsg_iproute2.json"
        ).read_text()
    )
    swp1 = res.links["swp1"]
    assert swp1.stats["rx_bytes"] == 47048
    assert swp1.stats["tx_packets"] == 355
    assert swp1.mtu is None  # the stats group says nothing about MTU


def test_text_output_is_reported_not_raised(fixtures_dir: Path) -> None:
    res = parse_ip_link_json(
        (fixtures_dir / "iplink/ip_s_s_link_show_i40e_xxv710_iwl.txt").read_text()
    )
    assert res.links == {}
    assert res.warnings


def test_proc_net_dev_docker_host(fixtures_dir: Path) -> None:
    res = parse_proc_net_dev(
        (fixtures_dir / "procnet/proc_net_dev_docker_host_prometheus-procfs.txt").read_text()
    )
    assert res.warnings == []
    assert set(res.interfaces) == {"vethf345468", "lo", "docker0", "eth0"}
    eth0 = res.interfaces["eth0"]
    assert (eth0["rx_bytes"], eth0["rx_packets"]) == (874354587, 1036395)
    assert (eth0["tx_bytes"], eth0["tx_packets"]) == (563352563, 732147)
    assert len(eth0) == 16


def test_proc_net_dev_vmware(fixtures_dir: Path) -> None:
    res = parse_proc_net_dev(
        (fixtures_dir / "procnet/proc_net_dev_vmware_ens33_jc.txt").read_text()
    )
    assert res.interfaces["ens33"]["tx_packets"] == 121425


def test_proc_net_dev_wrapped_timestamped_capture(fixtures_dir: Path) -> None:
    res = parse_proc_net_dev(
        (
            fixtures_dir / "procnet/proc_net_dev_ice_e810_counter_spikes_timestamped_iwl.txt"
        ).read_text()
    )
    # four samples of eth2, hard-wrapped by mail: the last one is kept, the repeats warned
    eth2 = res.interfaces["eth2"]
    assert eth2["rx_bytes"] == 450845520538932
    assert eth2["tx_bytes"] == 689316465134429
    assert eth2["rx_multicast"] == 71230993
    assert sum("more than once" in w for w in res.warnings) == 3
