"""One link per cable (fabtop/core/thunderbolt.py) on two- and three-node meshes.

The pairs are assembled: no public capture holds both ends of one cable. Linux ends are
the sysfs of tests/unit/tb_sysfs.py through the real parser; a Mac end is built as the
darwin parser will give it, with the values of a public capture: a Mac Studio's
``system_profiler SPThunderboltDataType`` (github.com/darrylmorley/whatcable/issues/52):
"Device Name: Mac Studio", "Domain UUID: 344AB0F8-B1FE-406D-BCDB-004BB08FC1D1" (its
JSON key is ``domain_uuid_key``, as ml-explore/mlx's thunderbolt config script reads
it). That capture shows one bus; the Mac's second bus identity below is assembled.
"""

from __future__ import annotations

from collectors.parsers.thunderbolt import parse_systb
from collectors.samples import HostSample, LinkSample, ThunderboltInfo, ThunderboltPeer
from fabtop.core.thunderbolt import BY_ADDRESS, MISMATCH, ONE_END, PAIRED, pair_cables
from tests.unit.tb_sysfs import TbHost, Xd, systb_text

A = "d2030000-0072-6b0e-23a4-1c9b3f5e8a01"
B = "d2030000-0072-6b0e-23a4-1c9b3f5e8a02"
C = "d2030000-0072-6b0e-23a4-1c9b3f5e8a03"
MAC = "344AB0F8-B1FE-406D-BCDB-004BB08FC1D1"  # whatcable#52, Mac Studio, bus 5
MAC_BUS2 = "344AB0F8-B1FE-406D-BCDB-004BB08FC1D2"  # assembled: the Mac's other bus


def linux(name: str, h: TbHost) -> HostSample:
    s = HostSample(name, 1, 0, 0.0)
    s.thunderbolt = parse_systb(systb_text(h)).info
    return s


def mac(name: str, peers: list[ThunderboltPeer]) -> HostSample:
    s = HostSample(name, 1, 0, 0.0)
    s.thunderbolt = ThunderboltInfo(
        "system_profiler", self_uid=MAC, peers=peers, domain_uids=(MAC, MAC_BUS2)
    )
    return s


def test_linux_to_linux_pair_is_one_cable_with_lanes_spelled_out() -> None:
    cables = pair_cables(
        {
            "spark1": linux("spark1", TbHost(A, xds=[Xd("1", B, "spark2", gbps=40.0)])),
            "spark2": linux("spark2", TbHost(B, xds=[Xd("1", A, "spark1", gbps=40.0)])),
        }
    )
    assert len(cables) == 1
    c = cables[0]
    assert c.status == PAIRED
    assert c.text == "spark1:thunderbolt0 \u27f7 spark2:thunderbolt0  2 \u00d7 40 = 80 Gb/s"


def test_three_node_mesh_with_a_mac_pairs_every_cable() -> None:
    samples = {
        "spark1": linux(
            "spark1",
            TbHost(
                A,
                xds=[
                    Xd("1", B, "spark2"),
                    Xd("3", MAC.lower(), "Mac Studio", 40.0, netdev="thunderbolt1"),
                ],
            ),
        ),
        "spark2": linux(
            "spark2",
            TbHost(
                B,
                xds=[
                    Xd("1", A, "spark1"),
                    Xd("3", MAC_BUS2.lower(), "Mac Studio", 40.0, netdev="thunderbolt1"),
                ],
            ),
        ),
        # macOS prints UUIDs in upper case; Linux in lower case
        "mac1": mac(
            "mac1",
            [
                ThunderboltPeer("Receptacle 1", "en2", A.upper(), "spark1", 40.0, 40.0, 2, 2),
                ThunderboltPeer("Receptacle 2", "en3", B.upper(), "spark2", 40.0, 40.0, 2, 2),
            ],
        ),
    }
    cables = pair_cables(samples)
    assert [c.status for c in cables] == [PAIRED] * 3
    lines = sorted(c.text for c in cables)
    assert lines == [
        "mac1:en2 \u27f7 spark1:thunderbolt1  2 \u00d7 40 = 80 Gb/s",
        "mac1:en3 \u27f7 spark2:thunderbolt1  2 \u00d7 40 = 80 Gb/s",
        "spark1:thunderbolt0 \u27f7 spark2:thunderbolt0  2 \u00d7 20 = 40 Gb/s",
    ]


def test_wrong_cable_the_far_host_sees_its_cable_go_elsewhere() -> None:
    # node1 says its cable goes to node2; node2's only cable goes to node3 (the cable
    # was moved, or node1's slow reading predates the move): not a proven pair.
    cables = pair_cables(
        {
            "node1": linux("node1", TbHost(A, xds=[Xd("1", B, "node2")])),
            "node2": linux("node2", TbHost(B, xds=[Xd("1", C, "node3")])),
            "node3": linux("node3", TbHost(C, xds=[Xd("1", B, "node2")])),
        }
    )
    by = {c.a.host: c for c in cables}
    assert by["node2"].status == PAIRED and by["node2"].b is not None
    assert by["node2"].b.host == "node3"
    bad = by["node1"]
    assert bad.status == MISMATCH
    assert bad.why == "node2 sees no cable to node1 (its cables go to node3)"
    assert bad.text.endswith("[node2 sees no cable to node1 (its cables go to node3)]")


def test_one_end_seen_and_a_peer_not_monitored_say_so() -> None:
    cables = pair_cables(
        {
            "spark1": linux("spark1", TbHost(A, xds=[Xd("1", MAC.lower(), "Mac Studio", 40.0)])),
            "down": None,
        }
    )
    assert len(cables) == 1 and cables[0].status == ONE_END
    assert cables[0].text == (
        "spark1:thunderbolt0 \u27f7 Mac Studio (not monitored)  2 \u00d7 40 = 80 Gb/s"
        f"  [peer {MAC.lower()} is not a monitored host]"
    )


def test_no_bus_identity_pairs_by_subnet_and_says_it_is_not_proven() -> None:
    def host(name: str, addr: str) -> HostSample:
        s = HostSample(name, 1, 0, 0.0)
        s.links["thunderbolt0"] = LinkSample(
            "thunderbolt0", netdev="thunderbolt0", kind="tb", addresses=(addr, "fe80::1/64")
        )
        return s

    cables = pair_cables(
        {
            "a": host("a", "10.9.0.1/30"),
            "b": host("b", "10.9.0.2/30"),
            "c": host("c", "10.9.1.1/30"),
        }
    )
    assert [c.status for c in cables] == [BY_ADDRESS]
    assert "not proven" in cables[0].why and cables[0].b is not None


def test_the_snapshot_carries_each_hosts_domain_and_one_entry_per_cable() -> None:
    from fabtop.run import snapshot
    from fabtop.run.demo import demo_state

    state, _, _ = demo_state(until_s=3.0)
    doc = snapshot.build(state, 1.0)
    tb = {h["name"]: h["thunderbolt"] for h in doc["hosts"]}
    assert tb["node1"] is None  # no bus read: null, never an empty "healthy" domain
    assert tb["node3"]["self_uid"] == "d2030000-0072-6b0e-23a4-1c9b3f5e8a01"
    assert tb["node3"]["peers"][0]["netdev"] == "thunderbolt0"
    cables = {c["text"].split(" ")[0]: c for c in doc["thunderbolt_cables"]}
    assert sorted(cables) == ["mac1:en3", "mac1:en4", "node3:thunderbolt0"]  # one per cable
    cable = cables["node3:thunderbolt0"]
    assert (cable["status"], cable["lanes"], cable["gbps_per_lane"]) == ("paired", 2, 20.0)
    # the DGX Spark's cable: a Linux end and a Mac end, paired by identity
    spark = cables["mac1:en4"]
    assert spark["status"] == "paired" and spark["text"].endswith("2 \u00d7 40 = 80 Gb/s")
