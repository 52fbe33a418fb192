"""no_subnet_manager, roce_no_ip_gid and gid_index_mismatch on hand-fed ports.

Port states and SM LIDs are the combinations real ports report (the ibstat captures in
../shared/fixtures/infiniband, named at each use); GID tables are the real show_gids
captures in tests/fixtures/rdma_gids.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from collectors.samples import GidEntry
from tests.unit.gid_captures import table
from tests.unit.rules_support import Fabric, by_rule

NCCL1131 = "show_gids_mlx5_ipv4_at_3_nccl1131.txt"  # IPv4 RoCE v2 at index 3
NSDPERF = "show_gids_cx6_second_linklocal_ipv4_at_5_nsdperf.txt"  # ... at index 5
ULA = "show_gids_rocep_ipv6_ula_v2_only_mooncake1617.txt"  # IPv6 only, RoCE v2 only


def _ib(
    fab: Fabric,
    host: str,
    state: str,
    phys: str,
    sm_lid: int | None,
    link_layer: str | None = "InfiniBand",
    nd: str = "ibp65s0",
) -> None:
    fab.port(
        host,
        nd,
        kind="ib",
        rdma_device="mlx5_2",
        pfc=None,
        trust=None,
        fields={
            "link_layer": link_layer,
            "port_state": state,
            "phys_state": phys,
            "sm_lid": sm_lid,
            "state": state.lower(),
        },
    )


def _roce(fab: Fabric, host: str, gids: tuple[GidEntry, ...] | None, **kw: object) -> None:
    fab.port(
        host,
        fields={"gids": gids, "port_state": "ACTIVE", "phys_state": "LinkUp", "sm_lid": 0, **kw},
    )


# --- no_subnet_manager --------------------------------------------------------------------


def test_ib_ports_stuck_in_init_are_one_critical_finding_for_the_fabric() -> None:
    fab = Fabric()
    for h in ("node1", "node2"):
        _ib(fab, h, "INIT", "LinkUp", 0)  # no SM: trained, never configured
    assert by_rule(fab.tick(), "no_subnet_manager") == []  # a port just up waits a sweep
    found = by_rule(fab.run(3), "no_subnet_manager")
    assert len(found) == 1
    f = found[0]
    assert (f.severity, f.subject, f.host) == ("critical", "fabric", None)
    assert "no subnet manager is running on this fabric" in f.summary
    ev = f.shown_evidence()
    assert ev["hosts"] == "node1, node2"
    assert ev["ports"] == "node1/ibp65s0, node2/ibp65s0"
    assert "INIT/LinkUp sm_lid 0x0" in str(ev["state"])
    assert "opensm" in f.next_step and "sminfo" in f.next_step and "umad" in f.next_step


def test_armed_or_sm_lid_0_on_a_linked_ib_port_fires_too() -> None:
    for state, sm in (("ARMED", 0), ("ACTIVE", 0)):
        fab = Fabric()
        _ib(fab, "node1", state, "LinkUp", sm)
        f = by_rule(fab.run(4), "no_subnet_manager")
        assert len(f) == 1 and f[0].host == "node1" and f[0].port is not None, state


def test_quiet_on_roce_sm_lid_0_an_active_ib_port_and_ports_not_linked() -> None:
    fab = Fabric()
    # ibstat_mlx5_cx5_cx6dx_roce_4ports: Active, LinkUp, SM lid 0, Link layer Ethernet
    _ib(fab, "node1", "ACTIVE", "LinkUp", 0, link_layer="Ethernet", nd="enp1s0f0")
    # ibstat_mlx5_cx6_ib_4ports_down_disabled: Active/LinkUp/SM lid 1, Down/LinkUp/SM lid 1
    _ib(fab, "node2", "ACTIVE", "LinkUp", 1)
    _ib(fab, "node2", "DOWN", "LinkUp", 1, nd="ibp66s0")
    # ibstat_mlx4_cx3_vpi_ib_polling: Down/Polling/SM lid 0 (no peer: a cabling matter)
    _ib(fab, "node3", "DOWN", "Polling", 0)
    _ib(fab, "node4", "INIT", "LinkUp", 0, link_layer=None)  # link layer unknown
    assert by_rule(fab.run(5), "no_subnet_manager") == []


def test_ports_an_sm_does_not_reach_beside_managed_ones_name_the_other_fabric() -> None:
    fab = Fabric()
    _ib(fab, "node1", "ACTIVE", "LinkUp", 1)
    _ib(fab, "node2", "ACTIVE", "LinkUp", 1)
    _ib(fab, "node2", "INIT", "LinkUp", 0, nd="ibp66s0")  # the second rail: no SM there
    f = by_rule(fab.run(4), "no_subnet_manager")
    assert len(f) == 1 and f[0].host == "node2" and f[0].port is not None
    assert f[0].port.name == "ibp66s0"
    assert "no subnet manager reaches" in f[0].summary and "LID 0x1" in f[0].summary


def test_a_disabled_port_with_an_old_sm_lid_does_not_count_as_managed() -> None:
    fab = Fabric()
    # rdma-core#847's ibstat: Down/Disabled keeps "SM lid: 13" from before
    _ib(fab, "node1", "DOWN", "Disabled", 13)
    _ib(fab, "node2", "INIT", "LinkUp", 0)
    f = by_rule(fab.run(4), "no_subnet_manager")
    assert len(f) == 1 and "no subnet manager is running on this fabric" in f[0].summary


def test_the_finding_clears_once_the_sm_configured_the_ports() -> None:
    fab = Fabric()
    _ib(fab, "node1", "INIT", "LinkUp", 0)
    assert by_rule(fab.run(4), "no_subnet_manager")
    fab.ports[("node1", "ibp65s0")].fields.update(port_state="ACTIVE", state="active", sm_lid=1)
    assert by_rule(fab.run(8), "no_subnet_manager") == []


# --- roce_no_ip_gid -----------------------------------------------------------------------


def test_a_roce_port_with_only_link_local_gids_cannot_run_roce_v2() -> None:
    fab = Fabric()
    before_ip = table(NCCL1131, "mlx5_0")[:2]  # the port before its IPv4 address came
    _roce(fab, "node1", before_ip)
    f = by_rule(fab.tick(), "roce_no_ip_gid")
    assert len(f) == 1
    assert (f[0].severity, f[0].host, f[0].subject) == ("warning", "node1", "node1/enp65s0f0np0")
    assert "RoCE v2 cannot work on this port" in f[0].summary
    assert f[0].shown_evidence()["gids"] == (
        "0 fe80::a288:c2ff:fe5b:3ec v1, 1 fe80::a288:c2ff:fe5b:3ec v2"
    )
    assert "ip addr" in f[0].next_step and "show_gids" in f[0].next_step


def test_quiet_with_an_ipv4_or_ipv6_gid_unknown_cut_down_or_without_roce_v2() -> None:
    v1_only = tuple(replace(g, type="IB/RoCE v1") for g in table(NCCL1131, "mlx5_0")[:2])
    cases = {
        "ipv4": {"gids": table(NCCL1131, "mlx5_0")},
        "ipv6": {"gids": table(ULA, "rocep105s0")},
        "unknown": {"gids": None},  # the slow section not read yet: never "fine", never a fault
        "cut": {"gids": table(NCCL1131, "mlx5_0")[:2], "gids_truncated": True},
        "down": {"gids": table(NCCL1131, "mlx5_0")[:2], "state": "down"},
        "no_v2": {"gids": v1_only},  # iWARP or RoCE v1 only: node type not read
        "iwarp": {"gids": v1_only, "node_type": "RNIC"},  # no RoCE GIDs to judge
    }
    for name, fields in cases.items():
        fab = Fabric()
        _roce(fab, "node1", **fields)  # type: ignore[arg-type]
        assert by_rule(fab.run(3), "roce_no_ip_gid") == [], name


def test_a_roce_device_whose_addresses_are_roce_v1_only_cannot_run_roce_v2_either() -> None:
    v1 = tuple(replace(g, type="IB/RoCE v1") for g in table(NCCL1131, "mlx5_0"))
    for gids, why in ((v1, "RoCE v1 GIDs only"), (v1[:2], "only link-local GIDs")):
        fab = Fabric()
        _roce(fab, "node1", gids, node_type="CA")  # sysfs node_type "1: CA": not iWARP
        f = by_rule(fab.tick(), "roce_no_ip_gid")
        assert len(f) == 1 and why in f[0].summary, why


# --- gid_index_mismatch -------------------------------------------------------------------


def test_the_roce_v2_ipv4_gid_index_differing_across_hosts_is_info_naming_the_host() -> None:
    fab = Fabric()
    for h in ("node1", "node2", "node4"):
        _roce(fab, h, table(NCCL1131, "mlx5_0"))
    _roce(fab, "node3", table(NSDPERF, "mlx5_0"))  # a second link-local address first
    f = by_rule(fab.tick(), "gid_index_mismatch")
    assert len(f) == 1
    assert (f[0].severity, f[0].subject, f[0].host) == ("info", "fabric", "node3")
    assert f[0].shown_evidence()["values"] == "3: node1, node2, node4; 5: node3"
    assert "NCCL_IB_GID_INDEX" in f[0].summary and "-x" in f[0].next_step


def test_two_pods_at_5_and_7_and_a_fabric_that_agrees() -> None:
    fab = Fabric()
    _roce(fab, "pod-a", table("show_gids_pod_a_ipv4_at_5_multus1100.txt", "mlx5_4"))
    _roce(fab, "pod-b", table("show_gids_pod_b_ipv4_at_7_multus1100.txt", "mlx5_4"))
    f = by_rule(fab.tick(), "gid_index_mismatch")
    assert len(f) == 1 and f[0].shown_evidence()["values"] == "5: pod-a; 7: pod-b"
    same = Fabric()
    for h in ("node1", "node2"):
        _roce(same, h, table(NCCL1131, "mlx5_1"))
    _roce(same, "node3", None)  # unknown: no index to compare
    assert by_rule(same.run(2), "gid_index_mismatch") == []


# --- every port of the real ibstat captures -------------------------------------------------

# ibstat prints the numbers of sysfs state/phys_state by name (infiniband-diags): back to
# the kernel's forms (sysfs.c state_name, phys_state_to_str).
_STATE = {"Down": "DOWN", "Initializing": "INIT", "Armed": "ARMED", "Active": "ACTIVE"}


def _ibstat_ports(text: str) -> list[dict[str, object]]:
    ports: list[dict[str, object]] = []
    for raw in text.splitlines():
        key, _, value = raw.strip().partition(": ")
        if raw.strip().startswith("Port ") and raw.strip().endswith(":"):
            ports.append({})
        elif ports and key == "State":
            ports[-1]["port_state"] = _STATE[value]
        elif ports and key == "Physical state":
            ports[-1]["phys_state"] = value
        elif ports and key == "SM lid":
            ports[-1]["sm_lid"] = int(value)
        elif ports and key == "Link layer":
            ports[-1]["link_layer"] = value
    return ports


def test_no_port_of_the_real_ibstat_captures_fires_until_one_is_left_without_an_sm(
    fixtures_dir: Path,
) -> None:
    ports = [
        p
        for f in sorted((fixtures_dir / "infiniband").glob("ibstat_*.txt"))
        for p in _ibstat_ports(f.read_text())
    ]
    assert len(ports) > 80
    assert {p.get("link_layer") for p in ports} >= {"Ethernet", "InfiniBand"}
    assert any(p["link_layer"] == "Ethernet" and p["sm_lid"] == 0 for p in ports)
    fab = Fabric()
    for i, p in enumerate(ports):
        fab.port(
            f"h{i // 8}",
            f"p{i % 8}",
            pfc=None,
            trust=None,
            fields={**p, "state": str(p["port_state"]).lower()},
        )
    assert by_rule(fab.run(4), "no_subnet_manager") == []
    # one IB port the SM never reached: a real Active port, as it reads without an SM
    i = next(
        i
        for i, p in enumerate(ports)
        if p["link_layer"] == "InfiniBand" and p["port_state"] == "ACTIVE"
    )
    fab.ports[(f"h{i // 8}", f"p{i % 8}")].fields.update(port_state="INIT", sm_lid=0)
    f = by_rule(fab.run(4), "no_subnet_manager")
    assert len(f) == 1 and f[0].host == f"h{i // 8}" and "no subnet manager reaches" in f[0].summary
