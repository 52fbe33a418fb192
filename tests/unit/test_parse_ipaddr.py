"""``ip -o addr show`` -> addresses per netdev (the Linux side of LinkSample.addresses)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.parsers.ipaddr import MAX_ADDRS, parse_ip_addr

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ipaddr"


def test_ipv4_only_capture() -> None:
    r = parse_ip_addr((FIX / "ip_o_4_addr_vagrant_swarm.txt").read_text())
    assert r.warnings == []
    assert r.addresses["eth1"] == ("192.168.100.10/24",)
    assert r.addresses["docker_gwbridge"] == ("172.18.0.1/16",)
    assert list(r.addresses) == ["lo", "eth0", "eth1", "eth2", "docker0", "docker_gwbridge"]


def test_link_lines_are_passed_over_and_ipv6_kept() -> None:
    r = parse_ip_addr((FIX / "ip_o_a_cirros_tungstenfabric.txt").read_text())
    assert r.warnings == []
    assert r.addresses == {
        "lo": ("127.0.0.1/8", "::1/128"),
        "eth0": ("10.0.11.252/24", "fe80::526b:8dff:fe92:f2e7/64"),
    }


def test_testbed_capture_reads_as_ipaddress_does() -> None:
    text = (FIX / "ip_o_addr_show_veth_testbed.txt").read_text()
    r = parse_ip_addr(text)
    assert r.addresses["v0"] == ("10.9.0.1/30", "fd00:9::1/64", "fe80::b8a1:d6ff:fe46:d9c/64")
    for addrs in r.addresses.values():
        for a in addrs:
            assert str(ipaddress.ip_interface(a)) == a


def test_bad_lines_cost_their_address_only() -> None:
    text = (
        "2: eth0    inet 10.0.0.999/24 brd 10.0.0.255 scope global eth0\n"
        "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\n"
        "2: eth0    inet6 10.0.0.6/24 scope global eth0\n"
        "3: e\x1b]52;c;AAAA\x07vil    inet 10.1.0.1/24 scope global evil\n"
        "4: veth9f3a@if6:    inet 169.254.9.34/16 scope link veth9f3a\n"
    )
    r = parse_ip_addr(text)
    assert r.addresses["eth0"] == ("10.0.0.5/24",)
    assert len(r.warnings) == 2 and all("\x1b" not in w for w in r.warnings)
    assert all("\x1b" not in k and "\x07" not in k for k in r.addresses)
    assert r.addresses["veth9f3a"] == ("169.254.9.34/16",)


def test_addresses_per_netdev_are_bounded() -> None:
    text = "".join(
        f"2: eth0    inet 10.0.{i // 250}.{i % 250 + 1}/16 scope global eth0\n" for i in range(1000)
    )
    assert len(parse_ip_addr(text).addresses["eth0"]) == MAX_ADDRS


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_never_raises(text: str) -> None:
    r = parse_ip_addr(text)
    for name, addrs in r.addresses.items():
        assert name.isprintable() and all(ipaddress.ip_interface(a) for a in addrs)
