"""The input path as the kernel runs it, on real-shaped rulesets (tests/fixtures/firewall).

Each ruleset is the JSON nft 1.0.6 printed for a ruleset from a public source
(SOURCES.md there), or an iptables-save capture: the answers are what a connection
would meet on a host running it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.parsers.iptables import parse_iptables_save
from collectors.parsers.nftables import parse_nft_json
from collectors.ruleset import Ruleset
from fabtop.core.firewall import Question, evaluate

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "firewall"
RDMA_PORT = ((18515, 18515),)
EPHEMERAL = ((32768, 60999),)


def nft(name: str) -> Ruleset:
    rs, warnings = parse_nft_json((FIX / f"{name}.json").read_text())
    assert rs is not None and all("ingress chain" in w for w in warnings)
    return rs


def ipt(name: str) -> Ruleset:
    rs, warnings = parse_iptables_save((FIX / f"{name}_iptables_save.txt").read_text())
    assert not warnings
    return rs


def tcp(iface: str, ports: tuple[tuple[int, int], ...] = RDMA_PORT) -> Question:
    return Question(iface, "tcp", ports)


def test_firewalld_public_zone_rejects_perftest_and_quotes_its_final_reject() -> None:
    out = evaluate(nft("firewalld"), tcp("enp65s0f0np0"))
    assert out.verdict == "drop"
    assert out.rule is not None and "filter_INPUT" in out.rule and "reject" in out.rule


def test_firewalld_public_zone_lets_ssh_in() -> None:
    assert evaluate(nft("firewalld"), tcp("enp65s0f0np0", ((22, 22),))).verdict == "accept"


def test_firewalld_trusted_zone_on_thunderbolt_accepts_every_packet() -> None:
    # filter_INPUT_ZONES: iifname "thunderbolt0" goto filter_IN_trusted (ends in accept)
    assert evaluate(nft("firewalld"), Question("thunderbolt0", None)).verdict == "accept"


def test_firewalld_default_zone_drops_on_an_interface_it_does_not_name() -> None:
    out = evaluate(nft("firewalld"), Question("thunderbolt1", None))
    assert out.verdict == "drop" and "reject" in (out.rule or "")


def test_docker_forward_policy_drop_does_not_count_for_the_input_path() -> None:
    rs = nft("docker")
    assert any(c.policy == "drop" and c.hook == "forward" for c in rs.chains.values())
    assert evaluate(rs, tcp("enp65s0f0np0")).verdict == "accept"
    assert evaluate(rs, Question("thunderbolt0", None)).verdict == "accept"


def test_rhel8_reject_after_ssh_drops_the_ephemeral_range() -> None:
    out = evaluate(nft("rhel8"), tcp("enp65s0f0np0", EPHEMERAL))
    assert out.verdict == "drop" and "host-prohibited" in (out.rule or "")


def test_arch_default_rejects_by_rate_limited_rule_or_policy_either_way() -> None:
    # pkttype host limit rate 5/second reject: over the limit the policy drops anyway,
    # so the packet is dropped whatever the limit does; the quote is the sure one
    rs = nft("arch")
    out = evaluate(rs, tcp("enp65s0f0np0"))
    assert (out.verdict, out.rule) == ("drop", "inet filter input: policy drop")
    assert evaluate(rs, tcp("enp65s0f0np0", ((22, 22),))).verdict == "accept"


def test_named_sets_and_interface_sets_accept_before_the_policy_drop() -> None:
    rs = nft("custom")  # iifname @fabric_ifs tcp dport @rdma_tcp accept, policy drop
    assert evaluate(rs, tcp("enp65s0f1np1")).verdict == "accept"
    assert evaluate(rs, tcp("enp65s0f1np1", EPHEMERAL)).verdict == "accept"


def test_wildcard_interface_and_negated_port_set_drop_quote_the_comment() -> None:
    out = evaluate(nft("custom"), tcp("eth3"))  # iifname "eth*" tcp dport != {22, 80} drop
    assert out.verdict == "drop"
    assert "only ssh and web on eth" in (out.rule or "")


def test_a_range_is_dropped_when_only_part_of_it_is() -> None:
    rs = _rules(
        "*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp -m tcp --dport 1000:1999 -j ACCEPT\nCOMMIT\n"
    )
    assert evaluate(rs, tcp("eth0", ((1500, 1600),))).verdict == "accept"
    assert evaluate(rs, tcp("eth0", ((1500, 2500),))).verdict == "drop"


def test_matches_it_cannot_decide_give_unknown_naming_them() -> None:
    out = evaluate(nft("custom"), tcp("eno1", ((22, 22),)))
    assert out.verdict == "unknown"
    assert any("limit" in u for u in out.undecided)
    assert any("mark" in u for u in out.undecided)


def test_verdict_map_drop_of_udp_4791_is_a_drop_of_udp_only() -> None:
    rs = nft("custom")  # udp dport vmap @port_verdicts {22: accept, 4791: drop}
    out = evaluate(rs, Question("enp65s0f0np0", "udp", ((4791, 4791),)))
    assert out.verdict == "drop" and "4791" in (out.rule or "")
    assert evaluate(rs, tcp("enp65s0f0np0", ((4791, 4791),))).verdict != "drop"


def test_ufw_policy_drop_blocks_perftest_but_not_its_allowed_interface() -> None:
    rs = ipt("ufw")  # ufw-user-input: -i thunderbolt0 -j ACCEPT; INPUT policy DROP
    out = evaluate(rs, tcp("enp65s0f0np0"))
    assert out.verdict == "drop" and out.rule == "ip filter INPUT: policy drop"
    assert evaluate(rs, Question("thunderbolt0", None)).verdict == "accept"
    assert evaluate(rs, tcp("enp65s0f0np0", ((22, 22),))).verdict == "accept"


def test_algo_iptables_capture_accepts_ssh_and_drops_the_rest_by_policy() -> None:
    rs = ipt("algo")
    assert [c.table for c in rs.base_chains("input")] == ["mangle", "filter", "nat"]
    assert evaluate(rs, tcp("eth0", ((22, 22),))).verdict == "accept"
    assert evaluate(rs, tcp("eth0")).rule == "ip filter INPUT: policy drop"


def _rules(text: str) -> Ruleset:
    rs, warnings = parse_iptables_save(text)
    assert not warnings
    return rs


def test_an_accept_before_the_drop_keeps_the_port_open() -> None:
    head = "*filter\n:INPUT ACCEPT [0:0]\n"
    drop = "-A INPUT -i eth+ -p tcp -m tcp --dport 18515 -j DROP\n"
    accept = "-A INPUT -i eth1 -p tcp -m tcp --dport 18515 -j ACCEPT\n"
    assert evaluate(_rules(head + drop + "COMMIT\n"), tcp("eth1")).verdict == "drop"
    assert evaluate(_rules(head + accept + drop + "COMMIT\n"), tcp("eth1")).verdict == "accept"
    # the wildcard is eth+, not eth1 only: another eth port is still dropped
    assert evaluate(_rules(head + accept + drop + "COMMIT\n"), tcp("eth2")).verdict == "drop"


def test_accept_ends_only_its_base_chain_a_later_one_still_drops() -> None:
    text = (
        "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n"
        "*security\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 18515 -j REJECT\nCOMMIT\n"
    )
    out = evaluate(_rules(text), tcp("eth0"))
    assert out.verdict == "drop" and "security" in (out.rule or "")


@pytest.mark.parametrize(("jump", "verdict"), [("-j", "accept"), ("-g", "drop")])
def test_goto_does_not_come_back_jump_does(jump: str, verdict: str) -> None:
    # the user chain returns; after a jump the packet meets ACCEPT, after a goto the
    # chain that did the goto is left: INPUT's policy (DROP) decides
    text = (
        "*filter\n:INPUT DROP [0:0]\n:sub - [0:0]\n"
        f"-A INPUT {jump} sub\n-A INPUT -j ACCEPT\n-A sub -p udp -j RETURN\nCOMMIT\n"
    )
    assert evaluate(_rules(text), tcp("eth0")).verdict == verdict


def test_established_first_is_no_accept_for_a_new_connection() -> None:
    text = (
        "*filter\n:INPUT DROP [0:0]\n"
        "-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\nCOMMIT\n"
    )
    assert evaluate(_rules(text), tcp("eth0")).verdict == "drop"
    # and for "any packet": established ones pass, new ones do not: some are dropped
    assert evaluate(_rules(text), Question("thunderbolt0", None)).verdict == "drop"


def test_invalid_only_drop_is_no_drop_of_traffic() -> None:
    text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m conntrack --ctstate INVALID -j DROP\nCOMMIT\n"
    assert evaluate(_rules(text), Question("thunderbolt0", None)).verdict == "accept"


def test_a_jump_loop_is_unknown_not_a_crash() -> None:
    text = "*filter\n:INPUT ACCEPT [0:0]\n:a - [0:0]\n-A INPUT -j a\n-A a -j a\nCOMMIT\n"
    assert evaluate(_rules(text), tcp("eth0")).verdict == "unknown"


def test_source_and_destination_matches_are_decided_from_the_interface_s_subnet() -> None:
    rs = _rules(
        "*filter\n:INPUT DROP [0:0]\n-A INPUT -s 10.0.0.0/8 -p tcp -j ACCEPT\n"
        "-A INPUT -d 192.168.7.1/32 -j ACCEPT\nCOMMIT\n"
    )
    # unknown peers: the source match could go either way
    assert evaluate(rs, tcp("eth0")).verdict == "unknown"
    # the fabric subnet lies inside 10/8: its peers are accepted
    assert (
        evaluate(rs, Question("eth0", "tcp", RDMA_PORT, addrs=("10.1.2.3/24",))).verdict == "accept"
    )
    # a subnet outside it: dropped by the policy (and the own address is not 192.168.7.1)
    out = evaluate(rs, Question("eth0", "tcp", RDMA_PORT, addrs=("172.16.0.5/24",)))
    assert (out.verdict, out.rule) == ("drop", "ip filter INPUT: policy drop")
    # the destination is this interface's own address
    assert (
        evaluate(rs, Question("eth0", "tcp", RDMA_PORT, addrs=("192.168.7.1/24",))).verdict
        == "accept"
    )
    # a subnet that straddles the match: undecided
    assert (
        evaluate(rs, Question("eth0", "tcp", RDMA_PORT, addrs=("10.0.0.1/4",))).verdict == "unknown"
    )


def test_thousands_of_rules_are_walked_without_running_out_of_stack() -> None:
    # each port rule splits "any packet" in two; the path that goes on is a loop, not a
    # recursion (Python's stack ends near 1000 frames)
    ports = "".join(
        f"-A INPUT -p tcp -m tcp --dport {1000 + 2 * i} -j ACCEPT\n" for i in range(3000)
    )
    rs = _rules("*filter\n:INPUT DROP [0:0]\n" + ports + "COMMIT\n")
    out = evaluate(rs, Question("thunderbolt0", None))
    assert (out.verdict, out.rule) == ("drop", "ip filter INPUT: policy drop")
    assert evaluate(rs, tcp("eth0", ((5998, 5998),))).verdict == "accept"
    assert evaluate(rs, tcp("eth0", ((5998, 5999),))).verdict == "drop"


def test_kube_firewall_s_loopback_guard_is_no_drop_on_a_fabric_interface() -> None:
    # kube-proxy's KUBE-FIREWALL: drops what comes for 127.0.0.0/8 from elsewhere
    rs = _rules(
        "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n"
        "-A INPUT -j KUBE-FIREWALL\n"
        "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "
        '"block incoming localnet connections" -m conntrack ! --ctstate '
        "RELATED,ESTABLISHED,DNAT -j DROP\nCOMMIT\n"
    )
    assert evaluate(rs, tcp("enp65s0f0np0")).verdict == "accept"


def test_an_ipv6_only_interface_is_judged_by_the_ip6_chains() -> None:
    rs, _ = parse_nft_json(
        json.dumps(
            {
                "nftables": [
                    {
                        "chain": {
                            "family": "ip6",
                            "table": "f",
                            "name": "in",
                            "handle": 1,
                            "type": "filter",
                            "hook": "input",
                            "prio": 0,
                            "policy": "drop",
                        }
                    }
                ]
            }
        )
    )
    assert rs is not None
    assert evaluate(rs, tcp("eth0")).verdict == "accept"
    six = Question("eth0", "tcp", RDMA_PORT, family="ipv6", addrs=("fd00::1/64",))
    assert evaluate(rs, six).verdict == "drop"
