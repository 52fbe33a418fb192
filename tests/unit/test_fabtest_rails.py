"""Rails: a port's position among its host's RDMA ports, or its configured rail."""

from __future__ import annotations

from collectors.samples import HostSample, LinkSample
from fabtop.fabtest.rails import host_rails, rails


def rdma(dev: str, netdev: str | None = None) -> LinkSample:
    return LinkSample(id=netdev or dev, netdev=netdev, rdma_device=dev, port=1, kind="roce")


def nic(name: str, physical: bool = True) -> LinkSample:
    return LinkSample(
        id=name, netdev=name, physical=physical, kind="netdev" if physical else "virtual"
    )


def host(name: str, *links: LinkSample) -> HostSample:
    return HostSample(name, 1, 0, 0.0, links={ln.id: ln for ln in links})


def test_default_rail_is_the_position_among_rdma_ports_sorted_by_name() -> None:
    h = host("n1", rdma("mlx5_10"), rdma("mlx5_2"), rdma("mlx5_0", "ens1np0"), nic("eno1"))
    ports, problems = host_rails(h)
    assert problems == []
    # mlx5_2 before mlx5_10 (numbers compared as numbers); eno1 has no RDMA: not a rail.
    assert [(p.name, p.rail, p.link, p.rdma) for p in ports] == [
        ("mlx5_0/1", 0, "ens1np0", True),
        ("mlx5_2/1", 1, "mlx5_2", True),
        ("mlx5_10/1", 2, "mlx5_10", True),
    ]


def test_a_down_port_keeps_its_rail() -> None:
    down = rdma("mlx5_0")
    down.state = "down"
    ports, _ = host_rails(host("n1", down, rdma("mlx5_1")))
    assert [(p.name, p.rail) for p in ports] == [("mlx5_0/1", 0), ("mlx5_1/1", 1)]


def test_ip_only_hosts_use_their_non_virtual_netdevs() -> None:
    h = host(
        "mac1", nic("veth0", physical=False), nic("lo", physical=False), nic("en10"), nic("en2")
    )
    ports, problems = host_rails(h)
    assert [(p.name, p.rail, p.rdma) for p in ports] == [("en2", 0, False), ("en10", 1, False)]
    assert problems == []
    none, problems = host_rails(host("ns1", nic("veth0", physical=False)))
    assert none == [] and problems == [
        "ns1: no RDMA port and no physical netdev to test "
        "(give its interfaces a rail in the config)"
    ]


def test_configured_rails_win_and_are_the_only_ones_on_that_host() -> None:
    h = host(
        "n1", rdma("mlx5_0", "ens1np0"), rdma("mlx5_1", "ens2np0"), nic("veth0", physical=False)
    )
    cfg = {("n1", "ens2np0"): 0, ("n1", "veth0"): 3, ("n2", "mlx5_0"): 1}
    ports, problems = host_rails(h, cfg)
    assert problems == []
    assert [(p.name, p.rail, p.configured) for p in ports] == [
        ("mlx5_1/1", 0, True),
        ("veth0", 3, True),
    ]
    # A configured interface the host lacks, two on one rail: one line each, naming both.
    _, problems = host_rails(h, {("n1", "ens9"): 0, ("n1", "mlx5_0"): 1, ("n1", "mlx5_1/1"): 1})
    assert problems == [
        "n1: rail 0: the config names 'ens9', which the host does not have",
        "n1: rail 1: the config puts both 'mlx5_0/1' and 'mlx5_1/1' on it",
    ]
    _, problems = host_rails(h, {("n1", "ens1np0"): 0, ("n1", "mlx5_0"): 2})
    assert problems == ["n1: rail 2: 'mlx5_0' is 'mlx5_0/1', already on rail 0"]


def test_fabric_rails_say_unknown_hosts_and_mixed_rails() -> None:
    hosts = {
        "a": host("a", rdma("mlx5_0")),
        "b": host("b", rdma("mlx5_0")),
        "c": host("c", nic("en0")),
    }
    r = rails(hosts, {("zz", "eth0"): 2})
    # An IP-only host's ports are rails of their own fabric, numbered after the RDMA ones:
    # a RoCE port and a plain netdev never meet on one rail by position.
    assert [p.host for p in r.ports[0]] == ["a", "b"]
    assert [p.host for p in r.ports[1]] == ["c"]
    assert r.port("b", 0) is not None and r.port("b", 1) is None
    assert r.problems == ["zz: rail 2: the config names a host that is not tested"]
    # Put there by the config, the IP port is left out of the RDMA rail, and said.
    r = rails(hosts, {("c", "en0"): 0})
    assert [p.host for p in r.ports[0]] == ["a", "b"]
    assert r.problems == [
        "rail 0: c/en0 only over IP, the others over RDMA: left out of the rail (give them "
        "a rail of their own in the config)"
    ]
