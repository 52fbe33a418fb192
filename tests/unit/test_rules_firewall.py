"""The firewall rule on hand-built hosts: which interfaces it asks about, and what it says."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from collectors.parsers.firewall import firewall_state
from collectors.ruleset import FirewallState
from collectors.samples import HostSample, LinkSample
from fabtop.config import ConfigError, config_from_dict
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS
from fabtop.core.history import History
from fabtop.core.rates import HostRates
from fabtop.core.rules import Evaluator
from fabtop.core.rules.firewall import firewall_blocks_rdma, firewall_lines

T0 = 1_700_000_000


@dataclass
class Host:
    name: str
    sample: HostSample | None
    status: str = "up"
    rates: HostRates | None = None


@dataclass(eq=False)
class State:
    hosts: dict[str, Host] = field(default_factory=dict)
    history: History = field(default_factory=History)


def iptables(*rules: str, policy: str = "ACCEPT") -> FirewallState:
    text = f"*filter\n:INPUT {policy} [0:0]\n" + "".join(f"-A INPUT {r}\n" for r in rules)
    return firewall_state("ok", None, text + "COMMIT\n")


def host(fw: FirewallState | None, t: int = 0) -> HostSample:
    links = {
        "mlx5_0/1": LinkSample(
            "mlx5_0/1",
            netdev="enp65s0f0np0",
            rdma_device="mlx5_0",
            port=1,
            link_layer="Ethernet",
            kind="roce",
            physical=True,
        ),
        "rxe0/1": LinkSample(
            "rxe0/1", netdev="eth1", rdma_device="rxe0", port=1, link_layer="Ethernet", kind="roce"
        ),
        "thunderbolt0": LinkSample("thunderbolt0", netdev="thunderbolt0", kind="tb"),
        "eno1": LinkSample("eno1", netdev="eno1", physical=True),
    }
    return HostSample("n1", t + 1, (T0 + t) * 10**9, 1000.0 + t, links=links, firewall=fw)


def run(
    *samples: HostSample,
    ports: tuple[tuple[int, int], ...] = DEFAULT_FIREWALL_PORTS,
) -> list[list[tuple[str, str]]]:
    """The (subject, summary) of each evaluation, one per sample in turn."""
    ev = Evaluator(rules=(firewall_blocks_rdma,), firewall_ports=ports)
    state = State()
    out = []
    for s in samples:
        state.hosts["n1"] = Host("n1", s)
        out.append([(f.subject, f.summary) for f in ev(state)])
    return out


def test_udp_4791_dropped_on_hardware_roce_is_quiet_but_soft_roce_is_not() -> None:
    (found,) = run(
        host(
            iptables(
                "-i enp65s0f0np0 -p udp -m udp --dport 4791 -j DROP",
                "-i eth1 -p udp -m udp --dport 4791 -j DROP",
            )
        )
    )
    subjects = [s for s, _ in found]
    assert subjects == ["n1/rxe0/1"]  # not n1/mlx5_0/1: ConnectX RoCE bypasses netfilter
    assert "soft-RoCE" in found[0][1] and "--dport 4791 -j DROP" in found[0][1]


def test_new_tcp_to_perftest_dropped_on_the_roce_netdev_names_port_and_rule() -> None:
    (found,) = run(host(iptables("-i enp65s0f0np0 -p tcp -m tcp --dport 18515 -j REJECT")))
    assert [s for s, _ in found] == ["n1/mlx5_0/1"]
    summary = found[0][1]
    assert "new TCP connections to 18515 " in summary
    assert summary.endswith(
        "ip filter INPUT: -A INPUT -i enp65s0f0np0 -p tcp -m tcp --dport 18515 -j REJECT"
    )


def test_thunderbolt_policy_drop_with_established_first_is_a_warning_and_clears_when_fixed() -> (
    None
):
    bad = iptables(
        "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", "-i eno1 -j ACCEPT", policy="DROP"
    )
    good = iptables(
        "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        "-i eno1 -j ACCEPT",
        "-i thunderbolt0 -j ACCEPT",
        "-i eth1 -j ACCEPT",
        "-i enp65s0f0np0 -p tcp -j ACCEPT",
        policy="DROP",
    )
    first, second = run(host(bad), host(good, 1))
    assert {s for s, _ in first} == {"n1/thunderbolt0", "n1/rxe0/1", "n1/mlx5_0/1"}
    tb = dict(first)["n1/thunderbolt0"]
    assert "IP over Thunderbolt" in tb and "policy drop" in tb
    assert second == []


def test_unknown_or_unread_rulesets_raise_nothing() -> None:
    limited = iptables("-m limit --limit 3/min -j ACCEPT", policy="DROP")
    needs_root = firewall_state("missing", "needs root", "")
    assert run(host(limited), host(needs_root, 1), host(None, 2)) == [[], [], []]


def test_only_the_configured_ports_are_asked_about() -> None:
    fw = iptables("-i enp65s0f0np0 -p tcp -m tcp --dport 18515 -j DROP")
    (found,) = run(host(fw), ports=((5000, 5000),))
    assert [s for s, _ in found] == []
    (found,) = run(host(fw))
    assert [s for s, _ in found] == ["n1/mlx5_0/1"]


def test_config_ports_and_per_host_sudo() -> None:
    cfg = config_from_dict(
        {
            "host": [{"name": "a", "firewall_sudo": True}, {"name": "b"}],
            "firewall": {"ports": [18515, "40000-40100"]},
        },
        "t.toml",
    )
    assert cfg.firewall_ports == ((18515, 18515), (40000, 40100))
    assert [h.firewall_sudo for h in cfg.hosts] == [True, False]
    assert config_from_dict({"host": [{"name": "a"}]}, "t").firewall_ports == DEFAULT_FIREWALL_PORTS
    for bad in ({"ports": ["x"]}, {"ports": [0]}, {"ports": []}, {"port": [1]}):
        with pytest.raises(ConfigError, match=r"\[firewall\]"):
            config_from_dict({"host": [{"name": "a"}], "firewall": bad}, "t")
    with pytest.raises(ConfigError, match="firewall_sudo"):
        config_from_dict({"host": [{"name": "a", "firewall_sudo": "yes"}]}, "t")


@pytest.mark.parametrize(
    ("profile", "why"), [("needs_root", "needs root"), ("truncated", "truncated")]
)
def test_an_unread_ruleset_is_said_on_the_host_and_in_the_calm_line(
    profile: str,
    why: str,
) -> None:
    from fabtop.core.coverage import coverage
    from fabtop.run.demo import demo_state
    from fabtop.sim import Fabric, demo_hosts

    hosts = demo_hosts()
    hosts[2].firewall = profile  # node3
    state, clock, _ = demo_state(until_s=3, fabric=Fabric(hosts), history_s=3)
    assert not [f for f in state.findings if f.rule == "firewall_blocks_rdma"]
    cov = coverage(state, clock.t, 1.0)
    assert f"firewall state unknown on node3 ({why})" in cov.gaps
    sample = state.hosts["node3"].sample
    assert sample is not None
    lines = firewall_lines(sample, DEFAULT_FIREWALL_PORTS)
    assert lines == [f"firewall state unknown ({why})"]


def test_host_lines_name_what_could_not_be_evaluated() -> None:
    s = host(iptables("-m limit --limit 3/min -j ACCEPT", policy="DROP"))
    lines = firewall_lines(s, ((18515, 18515),))
    assert lines[0] == "firewall read (iptables-save): 1 input base chain(s), 1 rule(s)"
    assert (
        "enp65s0f0np0 (RDMA set-up ports): unknown: could not evaluate rule ip filter "
        "INPUT: -A INPUT -m limit --limit 3/min -j ACCEPT" in lines
    )


def test_the_next_step_is_the_command_of_the_tool_that_owns_the_drop() -> None:
    ev = Evaluator(rules=(firewall_blocks_rdma,))
    state = State()
    state.hosts["n1"] = Host(
        "n1",
        host(
            iptables(
                "-i enp65s0f0np0 -p tcp -m tcp --dport 18515 -j DROP", "-i thunderbolt0 -j DROP"
            )
        ),
    )
    steps = {f.subject: f.next_step for f in ev(state)}
    assert steps["n1/mlx5_0/1"].startswith(
        "allow TCP 18515 in on enp65s0f0np0: iptables -I INPUT -i enp65s0f0np0 -p tcp -m "
        "multiport --dports 18515 -j ACCEPT"
    )
    assert steps["n1/thunderbolt0"].endswith("iptables -I INPUT -i thunderbolt0 -j ACCEPT")


def test_a_vlan_that_carries_the_port_s_roce_gids_is_asked_about_too() -> None:
    from collectors.samples import GidEntry

    s = host(iptables("-i enp65s0f0np0.100 -p tcp -m tcp --dport 18515 -j DROP"))
    s.links["mlx5_0/1"].gids = (
        GidEntry(0, "fe80:0000:0000:0000:0e42:a1ff:fe00:0000", "IB/RoCE v1", "enp65s0f0np0"),
        GidEntry(3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "enp65s0f0np0.100"),
    )
    (found,) = run(s)
    assert [sub for sub, _ in found] == ["n1/mlx5_0/1"]
    assert "new TCP connections on enp65s0f0np0.100 to 18515 " in found[0][1]
