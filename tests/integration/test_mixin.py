"""The Prometheus mixin (fabtop/run/mixin.py) run by the real promtool: ``check rules`` on
the generated files, and ``test rules`` unit files (input series -> expected alerts) for
each alert, at, below and past its threshold, with the defaults and with an override."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fabtop.core.thresholds import DEFAULT_THRESHOLDS, effective
from fabtop.run.mixin import DASHBOARD_FILE, RULES_FILE, render, write_mixin
from tests.conftest import REPO, skip_or_fail

DEPLOY = REPO / "deploy" / "prometheus"
SCRAPE_S = 15  # the input series' step: a common scrape interval
SHARD = {"job": "fabtop", "instance": "shard1:9877"}
LINK = {**SHARD, "host": "node1", "link": "eth0"}
SPEED = 12.5e9  # 100 Gb/s in bytes per second


@pytest.fixture(scope="module")
def promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
    return str(tool)


def _promtool(promtool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60)


def _s(name: str, labels: Mapping[str, str], values: str) -> dict[str, str]:
    body = ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
    return {"series": f"{name}{{{body}}}", "values": values}


def _per_s(rate: float, n: int = 40) -> str:
    """A counter that grows ``rate`` a second, one sample per scrape (promtool notation)."""
    return f"0+{rate * SCRAPE_S:g}x{n}"


def _flat(value: float, n: int = 40) -> str:
    return f"{value:g}+0x{n}"


def _unit(
    promtool: str,
    tmp_path: Path,
    series: list[dict[str, str]],
    alerts: list[dict[str, Any]],
    thresholds: Mapping[str, float] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Write the rules for ``thresholds`` and one unit file; run ``promtool test rules``."""
    write_mixin(tmp_path, effective(thresholds))
    unit = {
        "rule_files": [RULES_FILE],
        "evaluation_interval": f"{SCRAPE_S}s",
        "tests": [{"interval": f"{SCRAPE_S}s", "input_series": series, "alert_rule_test": alerts}],
    }
    path = tmp_path / "unit.yaml"
    path.write_text(json.dumps(unit, indent=1))  # JSON is YAML
    return _promtool(promtool, "test", "rules", str(path))


def _passes(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stdout + run.stderr


def _storm_series(tx_pause_ratio: float, rx_prio3_bytes_per_s: float) -> list[dict[str, str]]:
    """node1 eth0 sends pauses on priority 3 for ``tx_pause_ratio`` of the time while it
    receives ``rx_prio3_bytes_per_s`` on that priority (and 5 GB/s on priority 0)."""
    p3, p0 = {**LINK, "priority": "3"}, {**LINK, "priority": "0"}
    return [
        _s("fabtop_link_speed_bytes_per_second", LINK, _flat(SPEED)),
        _s("fabtop_link_up", LINK, _flat(1)),
        _s("fabtop_link_tx_pause_seconds_total", p3, _per_s(tx_pause_ratio)),
        _s("fabtop_link_tx_pause_total", p3, _per_s(20000)),
        _s("fabtop_link_rx_bytes_prio_total", p3, _per_s(rx_prio3_bytes_per_s)),
        _s("fabtop_link_rx_bytes_prio_total", p0, _per_s(5e9)),
        _s("fabtop_link_rx_bytes_total", LINK, _per_s(5e9 + rx_prio3_bytes_per_s)),
    ]


STORM_TX = {
    **LINK,
    "priority": "3",
    "direction": "tx",
    "measure": "pause_time",
    "severity": "critical",
    "rule": "pfc_storm",
}


def _storm_alert(ratio_text: str) -> dict[str, Any]:
    return {
        "exp_labels": STORM_TX,
        "exp_annotations": {
            "summary": f"node1 eth0 prio 3: PFC storm: sent pauses {ratio_text} of the last 1m "
            "while its rx is flat (this host is the stuck receiver)",
            "next_step": "on node1: ethtool -S eth0 | grep -E 'prio3_(pause|discard|bytes)'; "
            "mlnx_qos -i eth0; find why it does not drain (hung consumer, PCIe, rx buffer) and "
            "check the switch's PFC watchdog on the port facing it",
        },
    }


def test_committed_rules_and_dashboard_are_up_to_date() -> None:
    for name, text in render(DEFAULT_THRESHOLDS).items():
        committed = DEPLOY / name
        assert committed.is_file(), f"{committed} missing: fabtop export --write-rules {DEPLOY}"
        assert committed.read_text() == text, (
            f"{committed} is stale: python -c 'from fabtop.run.mixin import write_mixin; "
            "from fabtop.core.thresholds import DEFAULT_THRESHOLDS as T; "
            f'write_mixin("{DEPLOY.relative_to(REPO)}", T)\''
        )


def test_promtool_checks_the_committed_rules(promtool: str) -> None:
    run = _promtool(promtool, "check", "rules", str(DEPLOY / RULES_FILE))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


def test_every_fabtop_series_the_rules_and_dashboard_read_is_exported() -> None:
    """No invented series: each fabtop_* name read is one docs/EXPORT.md lists."""
    documented = set(re.findall(r"`(fabtop_\w+)`", (REPO / "docs" / "EXPORT.md").read_text()))
    text = (DEPLOY / RULES_FILE).read_text() + (DEPLOY / DASHBOARD_FILE).read_text()
    read = set(re.findall(r"(?<![:\w])(fabtop_\w+)", text))
    missing = read - documented
    assert not missing, f"series not exported (docs/EXPORT.md): {sorted(missing)}"
    assert "fabtop_link_pfc_enabled" in read and "fabtop_gpu_thermal_slowdown" in read


def test_dashboard_queries_are_promql_over_the_rules(promtool: str, tmp_path: Path) -> None:
    """Every dashboard query parses (promtool checks it as a rule) and every recorded
    series it reads is one the rule file records."""
    board = json.loads((DEPLOY / DASHBOARD_FILE).read_text())
    exprs = [t["expr"].replace("$host", ".*") for p in board["panels"] for t in p["targets"]]
    titles = [p["title"] for p in board["panels"]]
    assert any("Throughput" in t for t in titles) and any("Findings" in t for t in titles)
    rules = {
        "groups": [
            {"name": "q", "rules": [{"record": f"q{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    (tmp_path / "q.yaml").write_text(json.dumps(rules))
    run = _promtool(promtool, "check", "rules", str(tmp_path / "q.yaml"))
    assert run.returncode == 0, run.stdout + run.stderr
    recorded = set(re.findall(r"record: \"([^\"]+)\"", (DEPLOY / RULES_FILE).read_text()))
    used = {n for e in exprs for n in re.findall(r"host_link\w*:\w+:\w+", e)}
    assert used and used <= recorded, used - recorded


def test_storm_above_the_threshold_fires_and_below_it_does_not(
    promtool: str, tmp_path: Path
) -> None:
    # 99.5 % paused, priority 3 flat (1 kB/s): a storm with the default 0.99.
    above = _unit(
        promtool,
        tmp_path / "above",
        _storm_series(0.995, 1e3),
        [
            {
                "eval_time": "5m",
                "alertname": "FabtopPfcStorm",
                "exp_alerts": [_storm_alert("99.5%")],
            },
            {"eval_time": "5m", "alertname": "FabtopCongestionWithoutEcn", "exp_alerts": []},
        ],
    )
    _passes(above)
    # 98 %: under the threshold.
    below = _unit(
        promtool,
        tmp_path / "below",
        _storm_series(0.98, 1e3),
        [{"eval_time": "5m", "alertname": "FabtopPfcStorm", "exp_alerts": []}],
    )
    _passes(below)
    # 99.5 % but priority 3 still moves 1 GB/s (8 % of line rate): not flat, no storm.
    moving = _unit(
        promtool,
        tmp_path / "moving",
        _storm_series(0.995, 1e9),
        [{"eval_time": "5m", "alertname": "FabtopPfcStorm", "exp_alerts": []}],
    )
    _passes(moving)


def test_a_storm_shorter_than_the_rate_window_fires_from_the_shards_finding(
    promtool: str, tmp_path: Path
) -> None:
    """30 s of storm: a minute's rate never reaches the ratio, the shard's finding (its
    rule, or the probe's 100 ms watchdog) names it, on a link id with a slash in it."""
    subject = "node1/mlx5_0/1/prio3"
    finding = {**SHARD, "rule": "pfc_storm", "severity": "critical", "subject": subject}
    labels = {**finding, "host": "node1", "link": "mlx5_0/1", "priority": "3"}
    alert = {
        "exp_labels": {**labels, "measure": "finding"},
        "exp_annotations": {
            "summary": "node1 mlx5_0/1 prio 3: PFC storm named by its shard (fabtop's rule or "
            "the probe's watchdog), before a 1m rate shows it",
            "next_step": "the shard's dashboard (or fabtop --from-prometheus): the finding names "
            "the stuck receiver and the paused peers; ethtool -S mlx5_0/1 | grep prio3_pause",
        },
    }
    # Reported for two scrapes, then gone (Prometheus marks a vanished series stale);
    # 30 s of pausing is half of the minute's rate: under storm_pause_ratio.
    series = [
        _s("fabtop_finding", finding, "_x8 1x2 stale"),
        _s(
            "fabtop_link_tx_pause_seconds_total",
            {**SHARD, "host": "node1", "link": "mlx5_0/1", "priority": "3"},
            "0x8 15 30 30x10",
        ),
    ]
    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "2m15s", "alertname": "FabtopPfcStorm", "exp_alerts": [alert]},
                {"eval_time": "4m", "alertname": "FabtopPfcStorm", "exp_alerts": []},
            ],
        )
    )


def test_an_override_moves_the_storm_threshold(promtool: str, tmp_path: Path) -> None:
    series = _storm_series(0.95, 1e3)
    fires = [
        {"eval_time": "5m", "alertname": "FabtopPfcStorm", "exp_alerts": [_storm_alert("95%")]}
    ]
    quiet = [{"eval_time": "5m", "alertname": "FabtopPfcStorm", "exp_alerts": []}]
    _passes(_unit(promtool, tmp_path / "default", series, quiet))
    _passes(_unit(promtool, tmp_path / "override", series, fires, {"storm_pause_ratio": 0.9}))
    # The fraction that makes a priority "flat" is a threshold too: at 0.1 of line rate,
    # 1 GB/s (8 %) is flat.
    moving = _storm_series(0.995, 1e9)
    _passes(
        _unit(
            promtool,
            tmp_path / "flat",
            moving,
            [
                {
                    "eval_time": "5m",
                    "alertname": "FabtopPfcStorm",
                    "exp_alerts": [_storm_alert("99.5%")],
                }
            ],
            {"storm_flat_fraction": 0.1},
        )
    )


def test_a_killed_shard_fires_named_by_its_shard_label_and_its_hosts_turn_blind(
    promtool: str, tmp_path: Path
) -> None:
    other = {"job": "fabtop", "instance": "shard2:9877"}
    old = {"job": "fabtop", "instance": "shard3:9877"}  # an exporter that names no shard
    named = {**SHARD, "shard": "rack1"}
    # shard1 (--shard rack1) answers for 2 minutes, then is killed: up 0, its series end
    # (stale); so is shard3, which never said a name.
    series = [
        _s("up", SHARD, "1x8 0x20"),
        _s("up", other, "1x28"),
        _s("up", old, "1x8 0x20"),
        _s("fabtop_shard_info", {**named, "version": "0.1"}, "1x8 stale"),
        _s("fabtop_shard_info", {**other, "shard": "rack2", "version": "0.1"}, "1x28"),
        _s("fabtop_host_up", {**named, "host": "node1"}, "1x8 stale"),
        _s("fabtop_host_up", {**named, "host": "node2"}, "1x8 stale"),
        _s("fabtop_host_up", {**other, "shard": "rack2", "host": "node3"}, "1x28"),
    ]
    step = "on the shard's machine: systemctl status of its fabtop export; curl http://{}/metrics"

    def down(labels: Mapping[str, str], shown: str) -> dict[str, Any]:
        return {
            "exp_labels": {**labels, "severity": "critical", "rule": "shard_down"},
            "exp_annotations": {
                "summary": f"fabtop shard {shown} is down: Prometheus cannot scrape it, so "
                "every host it owns is blind (never healthy)",
                "next_step": step.format(labels["instance"]),
            },
        }

    def blind(host: str) -> dict[str, Any]:
        return {
            "exp_labels": {**named, "host": host, "severity": "critical", "rule": "shard_down"},
            "exp_annotations": {
                "summary": f"{host} is blind: its shard rack1 (shard1:9877) is down",
                "next_step": step.format("shard1:9877"),
            },
        }

    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "1m", "alertname": "FabtopShardDown", "exp_alerts": []},
                {"eval_time": "1m", "alertname": "FabtopHostBlind", "exp_alerts": []},
                {
                    "eval_time": "4m",
                    "alertname": "FabtopShardDown",
                    "exp_alerts": [down(named, "rack1 (shard1:9877)"), down(old, "shard3:9877")],
                },
                {
                    "eval_time": "4m",
                    "alertname": "FabtopHostBlind",
                    "exp_alerts": [blind("node1"), blind("node2")],
                },
            ],
        )
    )


def test_a_host_its_shard_cannot_read_is_blind(promtool: str, tmp_path: Path) -> None:
    series = [_s("up", SHARD, "1x20"), _s("fabtop_host_up", {**SHARD, "host": "node2"}, "1x4 0x16")]
    alert = {
        "exp_labels": {
            **SHARD,
            "host": "node2",
            "severity": "critical",
            "rule": "host_unreachable",
        },
        "exp_annotations": {
            "summary": "node2 is blind: its shard gets no usable frames from it (down, failing or "
            "stale): none of its links is watched",
            "next_step": "on the shard shard1:9877: fabtop doctor node2; its fabtop_finding "
            "series say why (host_unreachable, host_failing, host_stale)",
        },
    }
    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "30s", "alertname": "FabtopHostBlind", "exp_alerts": []},
                {"eval_time": "3m", "alertname": "FabtopHostBlind", "exp_alerts": [alert]},
            ],
        )
    )


def _roce_link(tx_pause_per_s: float, ecn_per_s: float) -> list[dict[str, str]]:
    """node1 eth0 moving 5 GB/s each way, sending ``tx_pause_per_s`` pauses on priority 3."""
    p3 = {**LINK, "priority": "3"}
    return [
        _s("fabtop_link_speed_bytes_per_second", LINK, _flat(SPEED)),
        _s("fabtop_link_up", LINK, _flat(1)),
        _s("fabtop_link_rx_bytes_total", LINK, _per_s(5e9)),
        _s("fabtop_link_tx_bytes_total", LINK, _per_s(5e9)),
        _s("fabtop_link_rx_bytes_prio_total", p3, _per_s(5e9)),
        _s("fabtop_link_tx_pause_total", p3, _per_s(tx_pause_per_s)),
        _s("fabtop_link_tx_pause_seconds_total", p3, _per_s(0.2)),
        _s("fabtop_link_ecn_marked_total", LINK, _per_s(ecn_per_s)),
        _s("fabtop_link_cnp_sent_total", LINK, _per_s(ecn_per_s)),
    ]


def test_congestion_without_ecn(promtool: str, tmp_path: Path) -> None:
    alert = {
        "exp_labels": {
            **LINK,
            "direction": "tx",
            "severity": "warning",
            "rule": "congestion_without_ecn",
        },
        "exp_annotations": {
            "summary": "node1 eth0: congestion handled by PFC alone: it sends 200 pauses/s over "
            "1m with no ECN marks or CNPs (DCQCN/ECN looks off)",
            "next_step": "on node1: grep . /sys/class/net/eth0/ecn/roce_np/enable/* "
            "/sys/class/net/eth0/ecn/roce_rp/enable/*; rdma statistic show link | grep -E "
            "'ecn|cnp'; and ECN marking on the switch queue of the lossless priority",
        },
    }
    name = "FabtopCongestionWithoutEcn"
    _passes(
        _unit(
            promtool,
            tmp_path / "off",
            _roce_link(200, 0),
            [{"eval_time": "5m", "alertname": name, "exp_alerts": [alert]}],
        )
    )
    # ECN marks flowing: DCQCN works.
    _passes(
        _unit(
            promtool,
            tmp_path / "on",
            _roce_link(200, 50),
            [{"eval_time": "5m", "alertname": name, "exp_alerts": []}],
        )
    )
    # 50 pauses/s is under ecn_pause_per_s (100); with it at 20, they are enough.
    few = _roce_link(50, 0)
    _passes(
        _unit(
            promtool,
            tmp_path / "few",
            few,
            [{"eval_time": "5m", "alertname": name, "exp_alerts": []}],
        )
    )
    alert["exp_annotations"]["summary"] = alert["exp_annotations"]["summary"].replace("200", "50")
    _passes(
        _unit(
            promtool,
            tmp_path / "lower",
            few,
            [{"eval_time": "5m", "alertname": name, "exp_alerts": [alert]}],
            {"ecn_pause_per_s": 20},
        )
    )


def _pfc_map(lossless: int) -> list[dict[str, str]]:
    return [
        _s(
            "fabtop_link_pfc_enabled",
            {**LINK, "priority": str(p)},
            _flat(1 if p == lossless else 0),
        )
        for p in range(8)
    ]


def test_drops_on_the_lossless_priority_and_pauses_where_pfc_is_off(
    promtool: str, tmp_path: Path
) -> None:
    series = [
        *_pfc_map(3),
        # Drops on lossless 3 and on lossy 0: only 3 is a finding.
        _s("fabtop_link_rx_buf_discard_total", {**LINK, "priority": "3"}, _per_s(2)),
        _s("fabtop_link_rx_discards_prio_total", {**LINK, "priority": "0"}, _per_s(100)),
        # Pauses received on priority 5, where PFC is off here.
        _s("fabtop_link_rx_pause_total", {**LINK, "priority": "5"}, _per_s(10)),
    ]
    drops = {
        "exp_labels": {**LINK, "priority": "3", "severity": "warning", "rule": "lossless_drops"},
        "exp_annotations": {
            "summary": "node1 eth0 prio 3: 2.0 drops/s on a lossless priority (PFC is not "
            "protecting it end to end)",
            "next_step": "ethtool -S eth0 | grep -E 'prio3_(discard|buf_discard|cong_discard|"
            "pause)'; mlnx_qos -i eth0; check the switch buffer/headroom and PFC on this priority",
        },
    }
    no_pfc = {
        "exp_labels": {**LINK, "priority": "5", "severity": "warning", "rule": "pfc_disabled_prio"},
        "exp_annotations": {
            "summary": "node1 eth0 prio 5: pause frames on a priority where PFC is off here: the "
            "peer or switch runs a different PFC map",
            "next_step": "mlnx_qos -i eth0 (or dcb pfc show dev eth0) here and on the switch "
            "port: PFC must be on the same priorities end to end",
        },
    }
    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "5m", "alertname": "FabtopLosslessDrops", "exp_alerts": [drops]},
                {"eval_time": "5m", "alertname": "FabtopPausesWithoutPfc", "exp_alerts": [no_pfc]},
            ],
        )
    )


def test_a_link_flap_is_shown_for_the_event_hold(promtool: str, tmp_path: Path) -> None:
    # One link-down event between 2m and 2m15s; the link is up again.
    series = [
        _s("fabtop_link_up", LINK, _flat(1)),
        _s("fabtop_link_link_down_events_total", LINK, "3x8 4x40"),
    ]
    flap = {
        "exp_labels": {**LINK, "severity": "warning", "rule": "link_flap"},
        "exp_annotations": {
            "summary": "node1 eth0: link went down 1 time(s) in the last 1m, up again now; shown "
            "for 120 s after the last one",
            "next_step": "ip -s link show dev eth0; dmesg | grep -i 'eth0.*link'; check the "
            "cable/transceiver (ethtool -m) and the switch port's log",
        },
    }
    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "1m", "alertname": "FabtopLinkFlap", "exp_alerts": []},
                {"eval_time": "2m30s", "alertname": "FabtopLinkFlap", "exp_alerts": [flap]},
                # The event left the 1m window at about 3m15s; shown 120 s after it, as
                # it was last seen.
                {"eval_time": "4m30s", "alertname": "FabtopLinkFlap", "exp_alerts": [flap]},
                {"eval_time": "6m", "alertname": "FabtopLinkFlap", "exp_alerts": []},
            ],
        )
    )


def test_gpu_thermal_slowdown(promtool: str, tmp_path: Path) -> None:
    gpu = {**SHARD, "host": "node4", "gpu": "1"}
    series = [_s("fabtop_gpu_thermal_slowdown", gpu, "0x4 2x20")]
    alert = {
        "exp_labels": {**gpu, "severity": "critical", "rule": "gpu_thermal_slowdown"},
        "exp_annotations": {
            "summary": "node4 GPU 1: hardware thermal slowdown: it is slowing the whole job",
            "next_step": "nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i 1; check fans, inlet "
            "temperature and the server's airflow",
        },
    }
    _passes(
        _unit(
            promtool,
            tmp_path,
            series,
            [
                {"eval_time": "45s", "alertname": "FabtopGpuThermalSlowdown", "exp_alerts": []},
                {"eval_time": "3m", "alertname": "FabtopGpuThermalSlowdown", "exp_alerts": [alert]},
            ],
        )
    )


def test_write_rules_from_a_config_with_overrides(tmp_path: Path, promtool: str) -> None:
    """``fabtop export --write-rules DIR -c FILE``: the config's [thresholds] reach the rules."""
    cfg = tmp_path / "fabtop.toml"
    cfg.write_text('[thresholds]\nstorm_pause_ratio = 0.9\n\n[[host]]\nname = "node1"\n')
    out = tmp_path / "rules"
    run = subprocess.run(
        [sys.executable, "-m", "tui", "export", "--write-rules", str(out), "-c", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    text = (out / RULES_FILE).read_text()
    assert "fabtop_link_tx_pause_time_ratio:rate1m >= 0.9\n" in text
    assert ">= 0.99" not in text
    assert _promtool(promtool, "check", "rules", str(out / RULES_FILE)).returncode == 0
    # The shards' job, quoted as PromQL quotes a string, whatever it holds.
    job = subprocess.run(
        [sys.executable, "-m", "tui", "export", "--write-rules", str(out), "--job", 'x"y'],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert job.returncode == 0, job.stderr
    assert 'up{job="x\\"y"} == 0' in (out / RULES_FILE).read_text()
    assert _promtool(promtool, "check", "rules", str(out / RULES_FILE)).returncode == 0
    # A directory that cannot be made: one line naming it, exit 2.
    bad = subprocess.run(
        [sys.executable, "-m", "tui", "export", "--write-rules", str(cfg / "x")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and str(cfg) in bad.stderr


# fabtop's finding rule -> the alert that mirrors it (those a fault of the demo raises).
MIRRORS = {
    "pfc_storm": "FabtopPfcStorm",
    "congestion_without_ecn": "FabtopCongestionWithoutEcn",
    "lossless_drops": "FabtopLosslessDrops",
    "pfc_disabled_prio": "FabtopPausesWithoutPfc",
    "gpu_thermal_slowdown": "FabtopGpuThermalSlowdown",
    "gpu_hot": "FabtopGpuHot",
    "nic_temperature": "FabtopNicTemperature",
    "host_unreachable": "FabtopHostBlind",
    "host_stale": "FabtopHostBlind",
    "host_failing": "FabtopHostBlind",
    "roce_out_of_sequence": "FabtopRoceOutOfSequence",
}


def _exported(
    scenario: str, steps: int, silent: tuple[str, ...] = ()
) -> tuple[dict[str, list[float | None]], list[Any]]:
    """The simulated fabric with ``scenario`` as a shard would serve it, one scrape each
    SCRAPE_S of its time (series -> values), and fabtop's own findings at the end.
    ``silent``: hosts that stop sending frames half way."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from fabtop.config import HostConfig
    from fabtop.core.rules import make_evaluator
    from fabtop.core.state import FabricState
    from fabtop.run.demo import ManualClock, feed_until, scenario_fabric
    from fabtop.run.export import registry_for

    fab = scenario_fabric(scenario)
    clock = ManualClock()
    state = FabricState(
        [HostConfig(name=n) for n in fab.hosts], rules=make_evaluator(), clock=clock, interval=1.0
    )
    series: dict[str, list[float | None]] = {}
    for i in range(steps):
        quiet = silent if i > steps // 2 else ()
        feed_until(
            fab, state, clock, (i - 1) * SCRAPE_S + 1 if i else 0.0, i * SCRAPE_S, 1.0, quiet
        )
        text = generate_latest(registry_for(state)).decode()
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                labels = {k: v for k, v in s.labels.items() if v} | SHARD  # "" is no label
                key = _s(s.name, labels, "")["series"]
                series.setdefault(key, [None] * steps)[i] = s.value
    return series, list(state.findings)


def _expected_alert(rule: str, subject: str) -> str:
    host, *rest = subject.split("/")
    labels = {"alertname": MIRRORS[rule], "host": host}
    for part in rest:
        if part.startswith("prio"):
            labels["priority"] = part.removeprefix("prio")
        elif part.startswith("gpu"):
            labels["gpu"] = part.removeprefix("gpu")
        else:
            labels["link"] = part
    return _s("", dict(sorted(labels.items())), "")["series"]


@pytest.mark.parametrize(
    ("scenario", "silent", "raises"),
    [
        ("pfc_storm", (), True),
        ("no_ecn", (), True),
        ("switch_no_pfc", (), True),
        ("incast", (), False),  # heavy pausing that still moves: no storm, no alert
        ("healthy", (), False),
        ("healthy", ("node2",), True),  # a host that goes silent: blind
    ],
)
def test_the_alerts_on_a_simulated_fabric_are_fabtops_findings(
    promtool: str, tmp_path: Path, scenario: str, silent: tuple[str, ...], raises: bool
) -> None:
    """The real exporter's series for a fabric with one fault, three minutes of 15 s
    scrapes: the alerts firing at the end are, one for one, fabtop's own findings."""
    steps = 13
    series, findings = _exported(scenario, steps, silent)
    expected = sorted({_expected_alert(f.rule, f.subject) for f in findings if f.rule in MIRRORS})
    assert bool(expected) == raises, (scenario, silent, expected)
    write_mixin(tmp_path, DEFAULT_THRESHOLDS)
    unit = {
        "rule_files": [RULES_FILE],
        "evaluation_interval": f"{SCRAPE_S}s",
        "tests": [
            {
                "interval": f"{SCRAPE_S}s",
                "input_series": [
                    {"series": k, "values": " ".join("_" if v is None else repr(v) for v in vs)}
                    for k, vs in series.items()
                ],
                "promql_expr_test": [
                    {
                        "expr": "count by (alertname, host, link, priority, gpu) "
                        '(ALERTS{alertstate="firing"})',
                        "eval_time": f"{(steps - 1) * SCRAPE_S}s",
                        "exp_samples": [{"labels": e, "value": 1} for e in expected],
                    }
                ],
            }
        ],
    }
    (tmp_path / "unit.yaml").write_text(json.dumps(unit, indent=1))
    _passes(_promtool(promtool, "test", "rules", str(tmp_path / "unit.yaml")))
