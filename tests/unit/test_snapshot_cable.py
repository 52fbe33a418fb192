"""A link's cable (issue 33) in the snapshot (``fabtop.snapshot/2``) and in ``fabtop diff``:
the module's readings and its own limits from real captures (tests/fixtures/optics), the
FEC per lane and its histogram, the health reporters, the pre-FEC BER the cable rules
measure; a /1 snapshot still diffs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from collectors.parsers.devlink_health import parse_devlink_health
from collectors.parsers.ethtool_module import parse_ethtool_module
from collectors.parsers.fec import parse_show_fec
from collectors.samples import FEC_SOURCE, HostSample, LinkSample
from fabtop.commands.diff import DiffError, cable_changes, compare, diff_docs, render_text
from fabtop.config import HostConfig
from fabtop.core.ber import FROM_BITS
from fabtop.core.rules import link_ber, make_evaluator
from fabtop.core.state import FabricState
from fabtop.run import snapshot

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optics"


def _read(name: str) -> str:
    return (CAPTURES / name).read_text()


def _entry(**kw: Any) -> dict[str, Any]:
    doc = snapshot.link_entry(LinkSample(id="eth0", netdev="eth0", **kw), None)
    back: dict[str, Any] = json.loads(snapshot.to_json({"l": doc}))["l"]  # strict JSON
    return back


def test_module_readings_limits_and_what_it_does_not_measure() -> None:
    # An AOC that reports OMA, a dark tx and all-zero thresholds (not implemented)
    aoc = parse_ethtool_module(_read("ethtool_m_qsfp28_aoc_oma_zero_thresholds_sonic.txt"))
    m = _entry(module=aoc.module)["module"]
    assert (m["identifier"], m["vendor"], m["part"]) == ("QSFP28", "Mellanox", "MFA1A00-C003")
    assert (m["temperature_c"], m["voltage_v"], m["rx_power_kind"]) == (32.67, 3.2803, "oma")
    lane = m["lanes"][0]
    assert lane["rx_power"] == {"mw": 0.7231, "dbm": -1.41}
    assert lane["tx_power"] == {"mw": 0.0, "dbm": None}  # dark: the tools' -inf dBm
    # no limit a value could cross, none made up: null, and no margin to an alarm
    assert all(v is None for lim in m["limits"].values() for v in lim.values())
    assert lane["rx_above_alarm_db"] is None
    assert m["not_measured"] == []

    # A 400G QSFP-DD with its own limits: powers in mW and dBm, margin to its low alarm
    dd = parse_ethtool_module(_read("ethtool_m_qsfpdd_cmis4_400g_xdr4_temp_warning_netdev.txt"))
    m = _entry(module=dd.module)["module"]
    assert m["limits"]["temperature_c"] == {
        "high_alarm": 75.0,
        "high_warning": 70.0,
        "low_warning": 0.0,  # a real limit of 0 °C stays
        "low_alarm": -5.0,
    }
    assert m["limits"]["rx_power_mw"]["low_alarm"] == 0.1288
    assert m["limits"]["rx_power_dbm"]["low_alarm"] == -8.9
    assert m["lanes"][1]["rx_power"]["dbm"] == 2.7
    assert m["lanes"][1]["rx_above_alarm_db"] == pytest.approx(11.6, abs=0.01)
    assert m["flags"] == ["temperature_c high warning"]

    # A DAC: no lane powers at all, and no module: null, as pcie and qos are
    mod = dd.module
    assert mod is not None
    mod.lanes, mod.voltage_v = (), None
    assert _entry(module=mod)["module"]["not_measured"] == [
        "voltage_v",
        "bias_ma",
        "tx_power_mw",
        "rx_power_mw",
    ]
    bare = _entry()
    assert (bare["module"], bare["fec"], bare["health"], bare["ber"]) == (None, None, None, None)


def test_a_lanes_loss_of_signal_and_lock_flags_and_which_the_module_reports() -> None:
    # the peer is down: every lane latched rx loss of signal and lock; tx flags read, clear
    los = parse_ethtool_module(_read("ethtool_m_qsfp28_aoc_los_peer_down_netdev.txt"))
    m = _entry(module=los.module)["module"]
    assert {"rx_los", "tx_los", "rx_lol", "tx_lol"} <= set(m["signals_read"])
    assert [sorted(ln["signals"]) for ln in m["lanes"]] == [["rx_lol", "rx_los"]] * 4


def test_fec_per_lane_histogram_and_health_reporters() -> None:
    text = parse_show_fec(_read("show_fec_per_lane_netdev.txt"))
    fec = _entry(fec=text.state, counters={FEC_SOURCE: text.counters})["fec"]
    assert (fec["corrected_blocks"], fec["uncorrectable_blocks"]) == (256, 145)
    assert fec["corrected_bits"] is None  # this driver does not count them: not 0
    assert fec["lanes"] == {
        "corrected_blocks": {"0": 255, "1": 1},
        "uncorrectable_blocks": {"0": 128, "1": 17},
    }
    assert fec["histogram"] is None  # ethtool 6.1 prints none: not "no errors"

    js = parse_show_fec(_read("show_fec_hist_json_netdev.json"))
    fec = _entry(fec=js.state, counters={FEC_SOURCE: js.counters})["fec"]
    assert fec["histogram"] == {
        "0": {"total": 445, "lanes": {"0": 125, "1": 120, "2": 100, "3": 100}},
        "1": {"total": 12, "lanes": {}},
        "4": {"total": 2, "lanes": {}},
    }
    assert fec["lanes"] == {}

    health = parse_devlink_health(_read("devlink_health_ice_e810_port_error_netdev.txt"))
    got = _entry(health=health.reporters)["health"]
    assert [(h["name"], h["state"], h["error"], h["recover"]) for h in got] == [
        ("fw", "healthy", 0, 0),
        ("port", "error", 1, 0),
    ]
    assert _entry(health=())["health"] == []  # read, and the device has none


def _degrading() -> tuple[FabricState, list[dict[str, Any]]]:
    """A 100 Gb/s link correcting a steady 1e-8 for two minutes, then a decade a minute more;
    snapshots at 120 s and 240 s."""
    state = FabricState([HostConfig("n1")], rules=make_evaluator())
    docs, bits = [], 0.0
    for i in range(25):
        t = 10.0 * i
        bits += 1e12 * 1e-8 * 10 ** (max(0.0, t - 120.0) / 60.0)  # 10 s at 100 Gb/s
        link = LinkSample(
            id="eth0",
            netdev="eth0",
            physical=True,
            state="up",
            rate_gbps=100.0,
            metrics={"phy_corrected_bits": int(bits)},
        )
        sample = HostSample("n1", i, int((1_700_000_000 + t) * 1e9), 1000.0 + t, {"eth0": link})
        state.apply_sample("n1", sample)
        if t in (120.0, 240.0):
            docs.append(snapshot.build(state, 1.0))
    return state, docs


def test_the_ber_is_the_one_the_cable_rules_measure_and_diff_shows_its_rise() -> None:
    state, (a, b) = _degrading()
    (link,) = b["hosts"][0]["links"]
    got = link_ber(state, "n1", "eth0")
    assert got is not None and got.ber is not None
    assert link["ber"] == {
        "ber": got.ber,
        "before": got.before,
        "decades_per_h": got.decades_per_h,
        "counted_from": FROM_BITS,  # corrected bits over negotiated rate x time up
    }
    assert link["ber"]["ber"] > 3e-7 and link["ber"]["before"] == pytest.approx(1e-8, rel=0.01)
    (finding,) = [f for f in b["findings"] if f["rule"] == "cable_ber"]
    assert finding["evidence"]["ber"] == link["ber"]["ber"]

    (ber,) = cable_changes(a, b)
    assert ber.reading == "pre-FEC BER" and ber.change == pytest.approx(
        math.log10(ber.after / ber.before)  # type: ignore[operator]
    )
    assert 1.4 < ber.change < 2.0  # type: ignore[operator]
    text = render_text(diff_docs(a, b), 120.0, cable=[ber])
    assert "pre-FEC BER" in text and "1.0e-08" in text and "decades" in text


def test_a_snapshot_1_still_diffs_and_a_bad_cable_field_is_one_line(tmp_path: Path) -> None:
    def doc(schema: str, link: dict[str, Any], at_s: int = 1) -> Path:
        p = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
        host = {"name": "n1", "clock_ns": (1_700_000_000 + at_s) * 10**9, "links": [link]}
        p.write_text(json.dumps({"schema": schema, "hosts": [host]}))
        return p

    old = doc("fabtop.snapshot/1", {"id": "eth0", "metrics": {"fec_corrected_blocks": 5}}, 0)
    lanes = [{"lane": 1, "rx_power": {"mw": 0.0, "dbm": None}}]
    new = doc(
        "fabtop.snapshot/2",
        {
            "id": "eth0",
            "metrics": {"fec_corrected_blocks": 9},
            "module": {"temperature_c": 40.0, "lanes": lanes},
            "health": [{"device": "pci/0000:04:00.0", "name": "tx", "error": 0, "recover": 1}],
        },
    )
    text, status = compare(str(old), str(new))
    assert status == 0 and "fec_corrected_blocks" in text and "cable readings" not in text

    lit = {"lane": 1, "rx_power": {"mw": 1.0, "dbm": 0.0}}
    a = doc("fabtop.snapshot/2", {"id": "eth0", "metrics": {}, "module": {"lanes": [lit]}}, 0)
    text, _ = compare(str(a), str(new))
    assert [ln.split()[-3:] for ln in text.splitlines() if "lane 1" in ln] == [
        ["0.00", "dBm", "dark"]  # a lane gone dark: the worst a lane can do
    ]
    # a crafted BER (negative, or 0 at one end) has no change in decades, and no crash
    neg = doc("fabtop.snapshot/2", {"id": "eth0", "metrics": {}, "ber": {"ber": -1.0}}, 0)
    pos = doc("fabtop.snapshot/2", {"id": "eth0", "metrics": {}, "ber": {"ber": 1e-9}})
    text, _ = compare(str(neg), str(pos))
    assert [ln.split()[-2:] for ln in text.splitlines() if "BER" in ln] == [["-1.0e+00", "1.0e-09"]]
    bad = doc("fabtop.snapshot/2", {"id": "eth0", "metrics": {}, "health": [{"name": 3}]})
    with pytest.raises(DiffError, match=r"field 'hosts\[0\]\.links\[0\]\.health\[0\]\.name'"):
        compare(str(old), str(bad))
