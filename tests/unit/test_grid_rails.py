"""The grid's rails and cells are made again only when what they are made of changed.

rail_index keeps in a GridMemo the indexes it made, by the value of everything rails()
reads; grid() keeps there the cells it made. Each answer must be the one the plain
computation gives, after any change to the hosts, their links or the rail config.
"""

from __future__ import annotations

from typing import Any

import tui.rows.grid as grid_rows
from collectors.samples import HostSample, LinkSample
from fabtop.core.findings import Finding, PortRef
from fabtop.core.state import UP
from fabtop.fabtest.rails import RAIL_FIELDS, RailConfig, rails
from tui.rows.grid import INDEXES_KEPT, GridMemo, grid, rail_index
from tui.rows.links import HostRow, LinkRow


def rdma(dev: str, netdev: str | None = None, layer: str = "Ethernet") -> LinkSample:
    return LinkSample(
        id=netdev or dev, netdev=netdev, rdma_device=dev, port=1, link_layer=layer, kind="roce"
    )


def host(name: str, *links: LinkSample) -> HostSample:
    return HostSample(name, 1, 0, 0.0, links={ln.id: ln for ln in links})


def plain(samples: dict[str, HostSample], config: RailConfig | None) -> dict[tuple[str, str], int]:
    """The index without anything kept: rails() itself."""
    return {
        (p.host, p.link): n
        for n, ps in rails(samples, dict(config or {})).ports.items()
        for p in ps
    }


def test_rail_index_is_what_rails_says_after_every_change() -> None:
    samples = {
        f"n{i}": host(f"n{i}", *(rdma(f"mlx5_{k}", f"ens{k}np0") for k in range(4)))
        for i in range(1, 4)
    }
    config: dict[tuple[str, str], int] = {}
    said: list[dict[tuple[str, str], int]] = []
    memo = GridMemo()

    def check() -> None:
        got = dict(rail_index(samples, config, memo))
        assert got == plain(samples, config)
        assert got not in said  # each change below moves some port: a kept index is stale
        said.append(got)

    check()
    del samples["n3"]  # a host forgotten
    check()
    n1 = samples["n1"].links
    n1["ens9np0"] = rdma("mlx5_9", "ens9np0")  # a link added
    check()
    del samples["n2"].links["ens1np0"]  # a link removed
    check()
    n1["ens0np0"].state = "empty"  # changed in place: a port with no cable takes no rail
    check()
    n1["ens2np0"].link_layer = "InfiniBand"  # to another fabric: rails after Ethernet's
    check()
    n1["ens3np0"].rdma_device = "mlx5_10"  # renamed: now after mlx5_9
    check()
    config[("n2", "ens3np0")] = 0  # the config places n2's ports
    check()
    config[("n2", "ens3np0")] = 5  # and moves one
    check()
    samples["n2"] = host("n2", rdma("mlx5_0", "ens0np0"), rdma("mlx5_3", "ens7np0"))
    check()  # the same host name, other ports: the one the config names is gone


def test_rail_index_keeps_only_the_last_few() -> None:
    memo = GridMemo()
    for i in range(3 * INDEXES_KEPT):
        samples = {"n1": host("n1", *(rdma(f"mlx5_{k}") for k in range(i + 1)))}
        assert len(rail_index(samples, None, memo)) == i + 1
    assert len(memo.indexes) <= INDEXES_KEPT


def test_rails_reads_no_field_of_a_link_but_rail_fields() -> None:
    """rail_index's key names RAIL_FIELDS: a field rails() reads beyond them would let a
    changed port keep its old rail."""
    read: set[str] = set()

    class Watched(LinkSample):
        def __getattribute__(self, name: str) -> Any:
            if not name.startswith("__"):
                read.add(name)
            return super().__getattribute__(name)

    def watched(dev: str, netdev: str | None, layer: str | None, kind: str) -> LinkSample:
        return Watched(
            id=netdev or dev, netdev=netdev, rdma_device=dev or None, port=1,
            link_layer=layer, kind=kind, physical=True,
        )  # fmt: skip

    samples = {
        "a": host("a", watched("mlx5_0", "ens0", "Ethernet", "roce"),
                  watched("", "eno1", None, "netdev")),
        "b": host("b", watched("mlx5_0", None, "InfiniBand", "ib")),
        "c": host("c", watched("", "eth0", None, "netdev"), watched("", "lo", None, "virtual")),
    }  # fmt: skip
    rails(samples)
    rails(samples, {("a", "ens0"): 0, ("a", "mlx5_0/1"): 1, ("b", "mlx5_0"): 0})
    assert read and read <= set(RAIL_FIELDS)


def row(h: str, lid: str, **kw: Any) -> LinkRow:
    base: dict[str, Any] = dict.fromkeys(
        ("link_layer", "speed_gbps", "rx_bps", "tx_bps", "temperature_c")
    )  # fmt: skip
    return LinkRow(
        **(base | {"host": h, "lid": lid, "kind": "roce", "state": "up"} | kw), gap=False, live=True
    )


def test_grid_cells_are_those_made_afresh_after_every_change() -> None:
    names = ["n1", "n2", "n3"]
    samples = {n: host(n, *(rdma(f"mlx5_{k}", f"ens{k}np0") for k in range(3))) for n in names}
    hosts = [HostRow(n, n, UP, 1.0, None, 3, 0, None, None) for n in names]
    links = [row(n, f"ens{k}np0") for n in names[:2] for k in range(3)]
    found: list[Finding] = []
    config: dict[tuple[str, str], int] = {}
    seen: list[grid_rows.Grid] = []
    memo = GridMemo()

    def check() -> None:
        rail_of = rail_index(samples, config, memo)
        got = grid(hosts, links, rail_of, found, memo)
        assert got == grid(hosts, links, rail_index(samples, config), found)  # the plain way
        assert got not in seen  # each change below changes some cell
        seen.append(got)

    check()
    links[1].state = "down"
    check()
    links[2].loss_per_s = 5.0
    check()
    storm = Finding("pfc_storm", "critical", "n2/ens0np0", "storm", host="n2",
                    port=PortRef("n2", "ens0np0", "ens0np0"))  # fmt: skip
    found.append(storm)
    check()
    links[3].live = False
    check()
    hosts[2].status = "down"  # n3, no link shown: blind on every line
    check()
    config.update({("n1", "ens0np0"): 2, ("n1", "ens1np0"): 1, ("n1", "ens2np0"): 0})
    check()
    del links[4]
    check()
