"""The cable-health parsers (issue 33) on real captures (tests/fixtures/optics/SOURCES.md):
``ethtool -m``, ``ethtool -I --show-fec`` (text and JSON) and ``devlink health show``."""

from __future__ import annotations

from pathlib import Path

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.optics import (
    BIAS_MA,
    RX_LOL,
    RX_LOS,
    RX_POWER_MW,
    SIGNALS,
    TEMPERATURE_C,
    TX_EQ_FAULT,
    TX_LOL,
    TX_LOS,
    TX_POWER_MW,
    Limits,
    dbm,
)
from collectors.parsers.devlink_health import parse_devlink_health
from collectors.parsers.ethtool_module import parse_ethtool_module
from collectors.parsers.fec import parse_show_fec

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optics"


def _text(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_an_aoc_with_oma_rx_dark_tx_and_all_zero_thresholds_has_no_limits() -> None:
    r = parse_ethtool_module(_text("ethtool_m_qsfp28_aoc_oma_zero_thresholds_sonic.txt"))
    m = r.module
    assert r.warnings == [] and m is not None
    assert (m.identifier, m.vendor, m.part) == ("QSFP28", "Mellanox", "MFA1A00-C003")
    assert (m.temperature_c, m.voltage_v) == (32.67, 3.2803)
    assert m.rx_power_kind == "oma"
    assert [ln.lane for ln in m.lanes] == [1, 2, 3, 4]
    assert [ln.rx_power_mw for ln in m.lanes] == [0.7231, 0.7231, 0.889, 1.0711]
    # -inf dBm: dark, 0.0 mW, not an error and not missing
    assert {ln.tx_power_mw for ln in m.lanes} == {0.0}
    assert dbm(m.lanes[0].tx_power_mw) == float("-inf")
    assert {ln.bias_ma for ln in m.lanes} == {6.75}
    # Every threshold 0.000: not implemented, so no limit a value could cross
    assert m.limits and all(lim == Limits() for lim in m.limits.values())
    assert m.flags == ()


def test_a_dark_sfp_keeps_its_real_limits_and_raised_flags() -> None:
    r = parse_ethtool_module(_text("ethtool_m_sfp_xgspon_dark_rx_netdev.txt"))
    m = r.module
    assert r.warnings == [] and m is not None
    assert (m.identifier, m.connector, m.rx_power_kind) == ("SFP", "SC", "average")
    assert len(m.lanes) == 1 and m.lanes[0].rx_power_mw == 0.0 and m.lanes[0].lane == 1
    assert m.limits[RX_POWER_MW] == Limits(0.1995, 0.1584, 0.0014, 0.0011)
    assert m.limits[TEMPERATURE_C] == Limits(90.0, 85.0, -45.0, -50.0)
    # A zero low limit of a bias or a power is none (0 mW is -inf dBm)
    assert m.limits[BIAS_MA] == Limits(60.0, 55.0, None, None)
    assert m.limits[TX_POWER_MW].low_alarm == 1.5848
    assert "rx_power_mw low alarm" in m.flags and "temperature_c high alarm" not in m.flags


def test_a_dac_without_diagnostics_reads_no_temperature_rather_than_zero() -> None:
    m = parse_ethtool_module(_text("ethtool_m_qsfpdd_dac_mlxsw_netdev.txt")).module
    assert m is not None
    assert (m.identifier, m.serial) == ("QSFP-DD", "MT2019VS04757")
    assert (m.temperature_c, m.voltage_v, m.lanes, m.limits) == (None, None, (), {})


def test_module_errors_and_garbage_are_a_warning_not_an_exception() -> None:
    r = parse_ethtool_module("netlink error: Operation not supported\n")
    assert r.module is None and r.warnings == [
        "no module diagnostics in the output: 'netlink error: Operation not supported'"
    ]
    bad = parse_ethtool_module("Module temperature : hot degrees C\nIdentifier : 0x11 (QSFP28)\n")
    assert bad.module is not None and bad.module.temperature_c is None
    assert bad.warnings == ["module temperature: bad value 'hot degrees C'"]


def test_fec_totals_and_per_lane_counters() -> None:
    r = parse_show_fec(_text("show_fec_per_lane_netdev.txt"))
    assert r.warnings == [] and r.state is not None
    assert (r.state.configured, r.state.active, r.state.histogram) == ((), None, False)
    assert r.counters == {
        "corrected_blocks": 256,
        "corrected_blocks_lane0": 255,
        "corrected_blocks_lane1": 1,
        "uncorrectable_blocks": 145,
        "uncorrectable_blocks_lane0": 128,
        "uncorrectable_blocks_lane1": 17,
    }
    ice = parse_show_fec(_text("show_fec_ice_e810_netdev.txt"))
    assert ice.state is not None and ice.state.active == "RS"
    assert ice.state.configured == ("Auto", "RS", "BaseR")


def test_fec_histogram_reads_alike_from_text_and_json() -> None:
    text = parse_show_fec(_text("show_fec_hist_netdev.txt"))
    js = parse_show_fec(_text("show_fec_hist_json_netdev.json"))
    assert text.warnings == js.warnings == []
    assert text.state == js.state and text.state is not None and text.state.histogram is True
    assert text.counters == js.counters
    assert js.counters["hist_bin_0"] == 445 and js.counters["hist_bin_0_lane1"] == 120
    assert (js.counters["hist_bin_1"], js.counters["hist_bin_4"]) == (12, 2)


def test_devlink_health_device_and_port_reporters() -> None:
    r = parse_devlink_health(_text("devlink_health_port_reporters_netdev.txt"))
    assert r.warnings == [] and r.reporters is not None
    assert [(h.device, h.name, h.state, h.error, h.recover) for h in r.reporters] == [
        ("pci/0000:00:0a.0", "fw", "healthy", 0, 0),
        ("pci/0000:00:0a.0/1", "tx", "healthy", 0, 0),
    ]
    assert r.reporters[1].auto_recover is True


def test_devlink_health_reporter_in_error_with_its_words_over_two_lines() -> None:
    r = parse_devlink_health(_text("devlink_health_ice_e810_port_error_netdev.txt"))
    assert r.reporters is not None
    port = r.reporters[1]
    assert (port.name, port.state, port.error, port.recover) == ("port", "error", 1, 0)
    assert port.last_dump == "2024-03-17 09:29:29"


def test_devlink_refusal_is_a_warning() -> None:
    r = parse_devlink_health("kernel answers: Permission denied\n")
    assert r.reporters is None and r.warnings[0].startswith("no devlink health reporters")


def test_phy_and_fec_counters_reach_the_normalized_vocabulary() -> None:
    from collectors.normalize import FEC_MAP, apply_map, normalize_ethtool, normalize_ib
    from collectors.vocabulary import Metric

    fec = parse_show_fec(_text("show_fec_per_lane_netdev.txt")).counters
    assert apply_map(FEC_MAP, fec) == {
        Metric.FEC_CORRECTED_BLOCKS: 256,
        Metric.FEC_UNCORRECTABLE_BLOCKS: 145,
    }
    # mlx5's pre-FEC corrected bits (en_stats.c), per tick in ethtool -S
    mlx5 = normalize_ethtool({"rx_corrected_bits_phy": 7, "rx_err_lane_0_phy": 7}, "mlx5_core")
    assert mlx5 == {Metric.PHY_CORRECTED_BITS: 7}
    ib = normalize_ib({"link_error_recovery": 3, "local_link_integrity_errors": 1}, {})
    assert ib == {Metric.LINK_ERROR_RECOVERIES: 3, Metric.LINK_INTEGRITY_ERRORS: 1}


def test_devlink_health_json_reads_as_its_text() -> None:
    # No public capture of `devlink -j health show` was found: the reporters of the text
    # capture in the shape iproute2's pr_out_health prints them with -j.
    js = (
        '{"health":{"pci/0000:00:0a.0":[{"reporter":"fw","state":"healthy","error":0,'
        '"recover":0,"auto_dump":true}],"pci/0000:00:0a.0/1":[{"reporter":"tx",'
        '"state":"healthy","error":0,"recover":0,"grace_period":500,"auto_recover":true,'
        '"auto_dump":true}]}}'
    )
    text = parse_devlink_health(_text("devlink_health_port_reporters_netdev.txt"))
    assert parse_devlink_health(js) == text


def _sec(
    kind: str, subject: str | None, text: str, status: str = "ok", detail: str | None = None
) -> Section:
    return Section(kind, subject, 1_700_000_000_000_000_000, status, detail, text)


def test_a_link_takes_its_own_pci_functions_reporters_and_a_refusal_says_why() -> None:
    sysnet = "eth0/mtu 1500\neth0/device -\neth1/mtu 1500\neth1/device -\n"
    frame = Frame(
        7,
        1_700_000_000_000_000_000,
        100.0,
        1_700_000_000.0,
        [
            _sec("sysnet", None, sysnet),
            _sec("ethtool_i", "eth0", "driver: mlx5_core\nbus-info: 0000:00:0a.0\n"),
            _sec("ethtool_i", "eth1", "driver: mlx5_core\nbus-info: 0000:00:0b.0\n"),
            _sec("ethtool_m", "eth0", "netlink error: Operation not permitted", "error", "rc=1"),
            _sec("ethtool_m", "eth1", "", "error", "backoff"),
            _sec("devlink_health", None, _text("devlink_health_port_reporters_netdev.txt")),
        ],
    )
    sample = assemble("n1", frame)
    eth0, eth1 = sample.links["eth0"], sample.links["eth1"]
    assert eth0.module is None
    assert eth0.health is not None and [(h.device, h.name) for h in eth0.health] == [
        ("pci/0000:00:0a.0", "fw"),
        ("pci/0000:00:0a.0/1", "tx"),  # its port's reporter too
    ]
    assert eth1.health == ()  # read, and its function has none
    assert (
        "n1: ethtool_m eth0: error (rc=1): netlink error: Operation not permitted; "
        "needs CAP_NET_ADMIN: log in as root, or set optics_sudo on the host" in sample.warnings
    )
    # a port in back-off was said on the round that failed: its quiet rounds say nothing
    assert not any("eth1" in w for w in sample.warnings), sample.warnings


def test_a_cmis_qsfp_dd_with_dark_lanes_and_its_own_temperature_warning() -> None:
    r = parse_ethtool_module(_text("ethtool_m_qsfpdd_cmis4_400g_xdr4_temp_warning_netdev.txt"))
    m = r.module
    assert r.warnings == [] and m is not None
    assert (m.identifier, m.part, m.connector) == ("QSFP-DD", "QDD-400G-XDR4", "MPO Parallel Optic")
    assert (m.temperature_c, m.voltage_v, m.rx_power_kind) == (70.49, 3.2186, "average")
    assert [ln.lane for ln in m.lanes] == list(range(1, 9))
    assert [ln.rx_power_mw for ln in m.lanes[4:]] == [0.0] * 4  # unused lanes: dark
    assert m.lanes[3].bias_ma == 110.1 and m.lanes[0].tx_power_mw == 1.5975
    # 0.00 degrees C is a real low warning limit here (the other limits are set)
    assert m.limits[TEMPERATURE_C] == Limits(75.0, 70.0, 0.0, -5.0)
    assert m.limits[RX_POWER_MW] == Limits(3.5481, 2.8184, 0.2042, 0.1288)
    assert m.flags == ("temperature_c high warning",)


def test_loss_of_signal_and_lock_flags_per_lane() -> None:
    # SFF-8636 AOC, its peer down: every lane lost rx signal and lock; the others "None"
    r = parse_ethtool_module(_text("ethtool_m_qsfp28_aoc_los_peer_down_netdev.txt"))
    m = r.module
    assert r.warnings == [] and m is not None
    assert m.signals_read == (RX_LOS, TX_LOS, RX_LOL, TX_LOL, TX_EQ_FAULT)
    assert [(ln.lane, ln.signals) for ln in m.lanes] == [
        (n, (RX_LOS, RX_LOL)) for n in (1, 2, 3, 4)
    ]
    assert {ln.rx_power_mw for ln in m.lanes} == {None}  # flags only: no power invented
    # CMIS with two banks (16 lanes), the port itself down: "[ Yes, ..., No, ... ]" per lane
    m = parse_ethtool_module(_text("ethtool_m_qsfpdd_16_lanes_los_port_down_netdev.txt")).module
    assert m is not None and len(m.lanes) == 16
    assert m.lanes[7].signals == (RX_LOS, TX_LOS, RX_LOL, TX_LOL)
    assert m.lanes[8].signals == (RX_LOS,)
    # A lit SR4 whose CDRs lost lock (latched) with rx power at about 0 dBm on every lane
    m = parse_ethtool_module(_text("ethtool_m_qsfp28_sr4_lol_lit_qsfpinfo_opae.txt")).module
    assert m is not None and m.part == "FTLC9551REPM"
    assert [ln.signals for ln in m.lanes] == [(RX_LOL, TX_LOL)] * 4
    assert m.lanes[1].rx_power_mw == 0.921 and RX_LOS in m.signals_read
    # "None" is read and clear; a module that prints no such line knows nothing of them
    m = parse_ethtool_module(
        _text("ethtool_m_qsfpdd_cmis4_400g_xdr4_temp_warning_netdev.txt")
    ).module
    assert m is not None and len(m.signals_read) == 5
    assert all(ln.signals == () for ln in m.lanes)
    m = parse_ethtool_module(_text("ethtool_m_sfp_xgspon_dark_rx_netdev.txt")).module
    assert m is not None and m.signals_read == ()


def test_a_bad_signal_line_costs_that_flag_and_is_said() -> None:
    text = "Identifier : 0x11 (QSFP28)\nRx loss of signal : [ Yes, Maybe ]\nTx fault : None\n"
    r = parse_ethtool_module(text)
    assert r.module is not None and r.module.signals_read == ("tx_fault",)
    assert r.module.lanes == ()
    assert r.warnings == ["rx loss of signal: bad value '[ Yes, Maybe ]'"]
    assert set(SIGNALS) >= set(r.module.signals_read)


def test_mlxlink_json_module_flags_and_physical_counters() -> None:
    from collectors.parsers.mlxlink import parse_mlxlink_json

    r = parse_mlxlink_json(_text("mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json"))
    m = r.module
    assert r.warnings == [] and m is not None
    assert (m.identifier, m.part, m.temperature_c, m.voltage_v) == (
        "OSFP",
        "OSFP-400G-DR4",
        61.0,
        3.2355,
    )
    assert [ln.lane for ln in m.lanes] == [1, 2, 3, 4] and m.rx_power_kind == "average"
    rx = [dbm(ln.rx_power_mw) for ln in m.lanes]
    assert [round(p, 3) for p in rx if p is not None] == [3.583, 3.253, 3.233, 2.658]
    assert m.limits == {}  # "[-9.914..6.999]": alarm or warning, the tool does not say
    assert set(m.signals_read) == set(SIGNALS) and all(ln.signals == () for ln in m.lanes)
    # the corrected bits per lane since the last clear, and the firmware's own BERs
    assert r.counters["raw_physical_errors_lane1"] == 15132549
    assert r.counters["link_down_counter"] == 0 and r.since_clear_s == 2718.1 * 60
    assert (r.raw_ber, r.raw_ber_lanes[1], r.fec) == (5e-10, 1e-9, "Standard_RS-FEC - (544,514)")


def test_mlxlink_refusals_and_missing_values_are_said_not_zero() -> None:
    from collectors.parsers.mlxlink import parse_mlxlink_json

    doc = _text("mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json")
    failed = parse_mlxlink_json('{"status": {"code": 1, "message": "No such device"}}')
    assert failed.module is None and failed.warnings == ["mlxlink status 1: No such device"]
    assert parse_mlxlink_json("-E- Failed to open device").warnings == [
        "not mlxlink JSON: '-E- Failed to open device'"
    ]
    na = parse_mlxlink_json(doc.replace('"61 [-10..80]"', '"N/A"').replace('"2718.1"', '"x"'))
    assert na.module is not None and na.module.temperature_c is None
    assert na.since_clear_s is None and na.warnings == [
        "Time Since Last Clear [Min]: bad value 'x'"
    ]
    flagged = doc.replace(
        '"Rx LOS [per lane]" :\n\t\t\t\t{\n\t\t\t\t\t"values" :\n\t\t\t\t\t[\n\t\t\t\t\t\t"0"',
        '"Rx LOS [per lane]" :\n\t\t\t\t{\n\t\t\t\t\t"values" :\n\t\t\t\t\t[\n\t\t\t\t\t\t"1"',
    )
    m = parse_mlxlink_json(flagged).module
    assert m is not None and m.lanes[0].signals == (RX_LOS,)


def test_mlxlink_fills_the_module_of_its_pci_function_where_ethtool_m_has_none() -> None:
    """mlxlink's section is named by the PCI function it asked (probe.sh, probe_fast.py):
    it goes to the link whose ethtool -i bus-info is that function. ethtool -m wins where
    it answered (it carries the module's own limits); the tool's own refusal is said."""
    doc = _text("mlxlink_json_mft_4.34.1_cx7_400g_dr4_exporter.json")
    sfp = _text("ethtool_m_sfp_xgspon_dark_rx_netdev.txt")
    refused = '{"status": {"code": 1, "message": "Failed to open device"}}\n'
    sysnet = "".join(f"eth{i}/mtu 1500\neth{i}/device -\n" for i in range(3))
    frame = Frame(
        7,
        1_700_000_000_000_000_000,
        100.0,
        1_700_000_000.0,
        [
            _sec("sysnet", None, sysnet),
            *(
                _sec("ethtool_i", f"eth{i}", f"driver: mlx5_core\nbus-info: 0000:00:0{i}.0\n")
                for i in range(3)
            ),
            _sec("ethtool_m", "eth0", "netlink error: Operation not supported", "error", "rc=1"),
            _sec("ethtool_m", "eth1", sfp),
            _sec("mlxlink", "0000:00:00.0", doc),
            _sec("mlxlink", "0000:00:01.0", doc),
            _sec("mlxlink", "0000:00:02.0", refused, "error", "rc=1"),
        ],
    )
    sample = assemble("n1", frame)
    links = sample.links
    m0, m1 = links["eth0"].module, links["eth1"].module
    assert m0 is not None and (m0.identifier, m0.part, len(m0.lanes)) == (
        "OSFP",
        "OSFP-400G-DR4",
        4,
    )
    assert m1 is not None and m1.part == "SFP+ONU-XGSPON" and m1.limits  # ethtool -m's
    assert links["eth2"].module is None
    said = [w for w in sample.warnings if "mlxlink" in w]
    assert said == ["n1: mlxlink 0000:00:02.0: mlxlink status 1: Failed to open device"]
