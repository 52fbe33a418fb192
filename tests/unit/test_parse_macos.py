"""macOS parsers on the public captures of tests/fixtures/darwin (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.assemble import assemble
from collectors.frames import FrameDecoder
from collectors.parsers.macos_ifconfig import parse_ifconfig
from collectors.parsers.macos_netstat import netdev_statistics, parse_netstat_ibdn
from collectors.parsers.macos_networksetup import parse_hardware_ports
from collectors.parsers.macos_rdma import parse_ibv_devinfo, parse_rdma_ctl
from collectors.parsers.macos_thermal import parse_macmon, parse_pmset_therm
from collectors.parsers.macos_thunderbolt import parse_sp_thunderbolt, thunderbolt_info

DARWIN = Path(__file__).resolve().parents[1] / "fixtures" / "darwin"
STUDIO = "system_profiler_SPThunderboltDataType_json_macstudio_m3ultra_tb5_omlx.json"
MACBOOK = "system_profiler_SPThunderboltDataType_json_macbookpro_m5max_tb5_omlx.json"


def _read(name: str) -> str:
    return (DARWIN / name).read_text()


def test_netstat_reads_link_rows_only() -> None:
    r = parse_netstat_ibdn(_read("netstat_ibdn_gopsutil.txt"))
    assert sorted(r.interfaces) == ["en0", "gif0", "lo0", "stf0"]
    en0 = r.interfaces["en0"]
    assert en0.counters == {
        "Ipkts": 5708989,
        "Ierrs": 0,
        "Ibytes": 7295722068,
        "Opkts": 3494252,
        "Oerrs": 0,
        "Obytes": 379533492,
        "Coll": 0,
        "Drop": 230,
    }
    assert en0.mtu == 1500 and en0.up
    assert not r.interfaces["gif0"].up
    assert netdev_statistics(en0.counters)["tx_dropped"] == 230
    assert r.warnings == []


def test_netstat_rows_without_a_hardware_address() -> None:
    r = parse_netstat_ibdn(_read("netstat_ibdn_no_hwaddr_rows_apexcore.txt"))
    # utun6 has no Address column: read from the end of the row, Ibytes is Ibytes.
    assert r.interfaces["utun6"].counters["Ibytes"] == 15510528
    assert r.interfaces["utun6"].counters["Opkts"] == 234567
    assert r.interfaces["en0"].counters["Obytes"] == 45013007856


def test_netstat_cut_names_and_bad_values_cost_only_themselves() -> None:
    text = _read("netstat_ibdn_gopsutil.txt") + (
        "utun8 1500  <Link#88>                          286     0      27175        0     0"
        "          0     0   0\n"
        "utun8 1500  <Link#90>                          286     0      29554        0     0"
        "          0     0   0\n"
        "en9;x 1500  <Link#91>                          1     0      1        0     0"
        "          0     0   0\n"
        "en7   1500  <Link#92>                          99999999999999999999999 0 1 0 0 0 0 0\n"
    )
    r = parse_netstat_ibdn(text)
    assert "utun8" not in r.interfaces  # a cut name repeats: kept for neither
    assert not any(";" in n for n in r.interfaces)
    en7 = r.interfaces["en7"].counters
    assert "Ipkts" not in en7 and en7["Ibytes"] == 1
    assert len(r.warnings) == 3  # one per bad row
    assert r.interfaces["en0"].counters["Ibytes"] == 7295722068


def test_thunderbolt_pair_each_end_names_the_other() -> None:
    studio = thunderbolt_info(parse_sp_thunderbolt(_read(STUDIO)), {2: "en2"})
    book = thunderbolt_info(parse_sp_thunderbolt(_read(MACBOOK)), {1: "en1"})
    [s], [b] = studio.peers, book.peers  # the Studio's OWC drive is no peer
    assert s.peer_uid == b.self_uid == "817DCFA4-B481-4100-80FC-91C7AA969F0B"
    assert b.peer_uid == s.self_uid == "28CA4C30-A263-4C55-B302-953416D0B209"
    assert (s.port, s.netdev, s.peer_name) == ("Receptacle 2", "en2", "MacBook Pro")
    assert (b.port, b.netdev, b.peer_name) == ("Receptacle 1", "en1", "Mac Studio")
    assert s.link_gbps == b.link_gbps == 80.0
    assert s.max_link_gbps == b.max_link_gbps == 120.0
    assert studio.generation == book.generation == 5
    assert studio.self_uid == s.self_uid and book.self_uid == b.self_uid


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"SPThunderboltDataType": 3}',
        '{"SPThunderboltDataType": [{"receptacle_1_tag": 1}]}',
    ],
)
def test_thunderbolt_bad_input_never_raises(text: str) -> None:
    info = thunderbolt_info(parse_sp_thunderbolt(text))
    assert info.peers == []


def test_hardware_ports() -> None:
    hp = parse_hardware_ports(_read("networksetup_listallhardwareports_macbookpro_osaurus.txt"))
    assert hp.thunderbolt == {"en1", "en6", "en2"}
    assert hp.device_of_receptacle(2) == "en6"
    assert hp.receptacle_of("en2") == 3
    assert hp.ports["bridge0"] == "Thunderbolt Bridge"
    hp2 = parse_hardware_ports(_read("networksetup_listallhardwareports_nonocast_issue129.txt"))
    assert hp2.thunderbolt == {"en1", "en2"} and hp2.ports["en5"] == "iPhone USB"


def test_ifconfig_bridge_members_and_addresses() -> None:
    r = parse_ifconfig(_read("ifconfig_bridge0_3members_macmini_mlx1903.txt"))
    b = r.interfaces["bridge0"]
    assert b.members == ["en2", "en3", "en4"]
    assert b.addresses == ["fe80::1442:a0bf:3f10:95ba", "10.25.0.1"]
    assert b.status == "active"
    r2 = parse_ifconfig(_read("ifconfig_tb_ports_no_ipv4_macmini_exo1390.txt"))
    assert r2.interfaces["en2"].addresses == [] and r2.interfaces["en2"].status == "inactive"
    assert r2.interfaces["en8"].ipv4 == ["169.254.138.233"]


def test_ibv_devinfo_and_rdma_ctl() -> None:
    r = parse_ibv_devinfo(_read("ibv_devinfo_macbookpro_3port_down_osaurus.txt"))
    assert sorted(r.devices) == ["rdma_en1", "rdma_en2", "rdma_en6"]
    p = r.devices["rdma_en6"].ports[1]
    assert (p.state, p.active_mtu, p.link_layer, p.gids) == ("down", 4096, "Thunderbolt", None)
    assert r.devices["rdma_en6"].transport == "Thunderbolt (100)"
    assert parse_rdma_ctl(_read("rdma_ctl_status_enabled_mlx2944.txt")) == "enabled"
    assert parse_rdma_ctl("disabled\n") == "disabled"
    assert parse_rdma_ctl("rdma_ctl: command not found") is None
    assert parse_ibv_devinfo("No IB devices found\n").no_devices


def test_ibv_devinfo_gid_lines_in_rdma_core_format() -> None:
    """Documented only on macOS: the Linux capture's GID line format (rdma-core)."""
    text = (
        "hca_id:\trdma_en3\n\ttransport:\t\t\tThunderbolt (100)\n\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tThunderbolt\n"
        "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:347c:94ff:fecd:45c4\n"
        "\t\t\tGID[  1]:\t\t0000:0000:0000:0000:0000:ffff:a9fe:0a01\n"
    )
    p = parse_ibv_devinfo(text).devices["rdma_en3"].ports[1]
    assert p.state == "up"
    assert p.gids is not None and [g.ipv4_mapped for g in p.gids] == [False, True]
    assert p.gids[0].link_local


def test_macmon_and_pmset() -> None:
    m = parse_macmon(_read("macmon_pipe_m3pro_macmonbar.json"))
    assert (m.cpu_temp_c, m.gpu_temp_c, m.gpu_util_pct, m.chip) == (
        pytest.approx(43.73614),
        pytest.approx(36.95167),
        pytest.approx(2.15),
        "Apple M3 Pro",
    )
    assert parse_pmset_therm(_read("pmset_g_therm_nominal_go_test.txt")) == ("nominal", 100)
    assert parse_pmset_therm(_read("pmset_g_therm_speed_limited_machealthkit.txt")) == (
        "throttled",
        62,
    )
    assert parse_pmset_therm("something else\n") == (None, None)  # unknown, never nominal
    assert parse_macmon('{"temp": {"cpu_temp_avg": NaN}}').cpu_temp_c is None
    assert parse_macmon("garbage").warnings


def test_darwin_frame_with_garbage_sections_costs_only_them() -> None:
    frame_text = (
        "@@fabtop-frame 1 1700000000000000000 100.0 1700000000.000\n"
        "@@section netstat_i - 1700000000000000000 ok\n"
        + _read("netstat_ibdn_gopsutil.txt")
        + "@@section sp_thunderbolt - 1700000000000000000 ok\n{not json\n"
        "@@section ifconfig - 1700000000000000000 ok\n\x1b[31mbridge0: flags=1 mtu 1\n"
        "@@section probe - 1700000000000000000 ok\nimpl zsh-darwin 5.9\n@@end 1\n"
    )
    [frame] = FrameDecoder().feed(frame_text.encode())
    s = assemble("mac1", frame)
    assert s.links["en0"].metrics["rx_bytes"] == 7295722068
    assert s.thunderbolt is not None and s.thunderbolt.peers == []
    assert any("sp_thunderbolt" in w for w in s.warnings)
    assert s.probe == "zsh-darwin 5.9"
