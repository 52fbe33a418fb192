"""The Prometheus mixin: recording rules, alerting rules and a Grafana dashboard for the
series ``fabtop export`` serves (docs/EXPORT.md), generated, never written by hand.

Recording rules are named ``level:metric:operations`` as node-mixin names them
(``host_link_priority:fabtop_link_tx_pause_time_ratio:rate1m``): per-link and
per-priority rates over :data:`RATE_WINDOW`, the sums the alerts compare, and the
"flat" limit of a link. The alerts mirror fabtop's own findings (their ``rule`` label is
the finding's rule name) with the thresholds the rules use: the defaults of
:mod:`fabtop.core.thresholds` with a config's ``[thresholds]`` over them, so an override
moves the alert. ``detect_s`` is each alert's ``for``, ``restore_s`` (``event_hold_s``
for an event such as a flap) its ``keep_firing_for`` (Prometheus 2.42 or newer).

The committed copy is ``deploy/prometheus/`` (made with the defaults; a test keeps it
up to date); ``fabtop export --write-rules DIR [-c FILE]`` writes one for a config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collectors.vocabulary import Metric
from fabtop.core.rules.ecn import ECN_SIGNALS
from fabtop.core.rules.gpu import HW_SLOWDOWN, SW_SLOWDOWN
from fabtop.core.rules.lossless import PRIO_DROPS, SEQUENCE_ERRORS
from fabtop.core.rules.pauses import BYTES_PRIO, OTHER_SIDE, SIDES
from fabtop.core.rules.pauses import PAUSE_RATIO as RATIOS
from fabtop.run.export import counter_name
from fabtop.run.outputs import OutputError, write_text

RULES_FILE = "fabtop-rules.yaml"
DASHBOARD_FILE = "fabtop-dashboard.json"
DEFAULT_JOB = "fabtop"  # the scrape job of the `fabtop export` shards
# Rates over one minute: four samples at a 15 s scrape interval (rate() needs two, and
# node-mixin's rule of thumb is four), still short enough that a storm is named in about
# a minute.
RATE_WINDOW = "1m"

# The hosts a shard served this long before it went down are named blind; after that its
# own FabtopShardDown alert says it alone (the dashboard's timeline spans an hour).
HOSTS_REMEMBERED = "1h"
L = "host_link"  # one series per link
P = "host_link_priority"  # one series per link and priority
PORT_BYTES = {"rx": Metric.RX_BYTES, "tx": Metric.TX_BYTES}
PAUSE_FRAMES = {"rx": Metric.RX_PAUSE, "tx": Metric.TX_PAUSE}
PAUSE_TIME = {"rx": Metric.RX_PAUSE_US, "tx": Metric.TX_PAUSE_US}
# Counters whose rate the alerts or the dashboard read.
RATES = (
    Metric.RX_BYTES,
    Metric.TX_BYTES,
    *ECN_SIGNALS,
    Metric.LINK_DOWN_EVENTS,
    *SEQUENCE_ERRORS,
    Metric.RX_DISCARDS,
    Metric.RX_OUT_OF_BUFFER,
    Metric.RX_PHY_ERRORS,
    *BYTES_PRIO.values(),
    *PAUSE_FRAMES.values(),
    *PRIO_DROPS,
)


def rate_name(m: Metric) -> str:
    """The recording rule holding counter ``m``'s rate over :data:`RATE_WINDOW`."""
    return f"{P if m.per_priority else L}:fabtop_link_{m}:rate{RATE_WINDOW}"


def _rate(m: Metric) -> str:
    return f"rate({counter_name(m)}_total[{RATE_WINDOW}])"


# Seconds paused per second: the share of the window paused, per priority.
PAUSE_RATIO = {side: f"{P}:fabtop_link_{r}:rate{RATE_WINDOW}" for side, r in RATIOS.items()}
BYTES = f"{L}:fabtop_link_bytes:rate{RATE_WINDOW}"  # rx + tx
ECN = f"{L}:fabtop_link_ecn_signals:rate{RATE_WINDOW}"
DROPS = f"{P}:fabtop_link_drops:rate{RATE_WINDOW}"
SEQUENCE = f"{L}:fabtop_link_sequence_errors:rate{RATE_WINDOW}"
FLAT = f"{L}:fabtop_link_flat_bytes_per_second:limit"
# A priority in a PFC storm (labels direction, measure), its pause ratio or frames/s.
STORM = f"{P}:fabtop_link_pfc_storm:rate{RATE_WINDOW}"
# Pausing hard with no ECN mark or CNP (label direction), its pauses a second.
NO_ECN = f"{L}:fabtop_link_pauses_without_ecn:rate{RATE_WINDOW}"
STORM_KINDS = tuple((side, by_ratio) for side in ("tx", "rx") for by_ratio in (True, False))


def _kind_labels(side: str, by_ratio: bool) -> dict[str, str]:
    return {"direction": side, "measure": "pause_time" if by_ratio else "pause_frames"}


def number(x: float) -> str:
    """A threshold as a PromQL number literal."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def duration(seconds: float) -> str:
    """Seconds as a Prometheus duration ("2s", "500ms")."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _sum(names: list[str]) -> str:
    """The sum of recorded series that share their labels (any may be absent)."""
    return f'sum without () ({{__name__=~"{"|".join(names)}"}})'


def recording_rules(th: Mapping[str, float]) -> list[dict[str, Any]]:
    """Rates over :data:`RATE_WINDOW` and the sums and limits the alerts compare."""
    rules: list[dict[str, Any]] = [{"record": rate_name(m), "expr": _rate(m)} for m in RATES]
    rules += [{"record": PAUSE_RATIO[s], "expr": _rate(PAUSE_TIME[s])} for s in SIDES]
    rules += [
        {"record": BYTES, "expr": _sum([rate_name(m) for m in PORT_BYTES.values()])},
        {"record": ECN, "expr": _sum([rate_name(m) for m in ECN_SIGNALS])},
        {"record": DROPS, "expr": _sum([rate_name(m) for m in PRIO_DROPS])},
        {"record": SEQUENCE, "expr": _sum([rate_name(m) for m in SEQUENCE_ERRORS])},
        # What "flat" (not draining) means on a link: a share of its line rate, or a fixed
        # rate when it does not report its speed (fabtop/core/rules/pauses.py flat_limit).
        {
            "record": FLAT,
            "expr": (
                f"{number(th['storm_flat_fraction'])} * "
                "(fabtop_link_speed_bytes_per_second > 0)\n"
                f"or 0 * fabtop_link_up + {number(th['storm_flat_bytes_per_s'])}"
            ),
        },
    ]
    # Two measures and two sides, one record each (the labels tell them apart).
    rules += [
        {"record": STORM, "expr": _storm(side, r, th), "labels": _kind_labels(side, r)}
        for side, r in STORM_KINDS
    ]
    return rules + _ecn_records(th)


def _storm(side: str, by_ratio: bool, th: Mapping[str, float]) -> str:
    """A priority pausing hard on ``side`` while the other direction does not move.

    ``by_ratio``: by the share of time paused; else, on a NIC that counts pause frames but
    not their duration, by the frame rate (fabtop/core/rules/pfc_storm.py).
    """
    other = OTHER_SIDE[side]
    if by_ratio:
        hard = f"{PAUSE_RATIO[side]} >= {number(th['storm_pause_ratio'])}"
    else:
        hard = (
            f"{rate_name(PAUSE_FRAMES[side])} >= {number(th['storm_min_pause_per_s'])}\n"
            f"  unless on (host, link, priority) {PAUSE_RATIO[side]}"
        )
    prio_bytes = rate_name(BYTES_PRIO[other])
    # Moving: its priority's bytes, or the port's where the NIC has no per-priority ones.
    return (
        f"(\n  {hard}\n)\n"
        f"unless on (host, link, priority) ({prio_bytes} > on (host, link) group_left {FLAT})\n"
        f"unless on (host, link) (\n"
        f"  ({rate_name(PORT_BYTES[other])} > on (host, link) {FLAT})\n"
        f"  unless on (host, link) {prio_bytes}\n)"
    )


HERE = "{{ $labels.host }} {{ $labels.link }}"
PRIO = f"{HERE} prio {{{{ $labels.priority }}}}"
GPU = "{{ $labels.host }} GPU {{ $labels.gpu }}"


def _alert(
    name: str,
    rule: str,
    severity: str,
    expr: str,
    summary: str,
    next_step: str,
    for_s: float,
    keep_s: float,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration(for_s),
        "keep_firing_for": duration(keep_s),
        "labels": {"severity": severity, "rule": rule, **(labels or {})},
        "annotations": {"summary": summary, "next_step": next_step},
    }


def _storm_alerts(th: Mapping[str, float]) -> list[dict[str, Any]]:
    out = []
    for side, by_ratio in STORM_KINDS:
        how = (
            f"{{{{ $value | humanizePercentage }}}} of the last {RATE_WINDOW}"
            if by_ratio
            else f'at {{{{ printf "%.0f" $value }}}} pause frames/s over {RATE_WINDOW}'
        )
        if side == "tx":
            summary = (
                f"{PRIO}: PFC storm: sent pauses {how} while its rx is flat "
                "(this host is the stuck receiver)"
            )
            step = (
                "on {{ $labels.host }}: ethtool -S {{ $labels.link }} | grep -E "
                "'prio{{ $labels.priority }}_(pause|discard|bytes)'; mlnx_qos -i "
                "{{ $labels.link }}; find why it does not drain (hung consumer, PCIe, rx "
                "buffer) and check the switch's PFC watchdog on the port facing it"
            )
        else:
            summary = (
                f"{PRIO}: PFC storm: paused {how} while tx is flat (the stuck receiver "
                "is the port sending the pauses: a FabtopPfcStorm alert with direction tx, "
                "or beyond the switch)"
            )
            step = (
                "ethtool -S {{ $labels.link }} | grep prio{{ $labels.priority }}_pause; "
                "check the switch's PFC watchdog / the receiver on the far end"
            )
        # Two measures, two rules: promtool refuses rules alike in every label.
        kind = _kind_labels(side, by_ratio)
        selector = ", ".join(f'{k}="{v}"' for k, v in kind.items())
        out.append(
            _alert(
                "FabtopPfcStorm",
                "pfc_storm",
                "critical",
                f"{STORM}{{{selector}}}",
                summary,
                step,
                th["detect_s"],
                th["restore_s"],
                kind,
            )
        )
    # A storm shorter than the rate window, or one the probe's 100 ms watchdog named, is
    # in the shard's own findings only: alerted from there, with the finding's subject
    # (host/link/prioN) split into labels, unless the counters already show it.
    finding = 'fabtop_finding{rule="pfc_storm"} == 1'
    for label, pattern in (
        ("host", "([^/]+)/.*"),
        ("link", "[^/]+/(.+)/prio[0-7]"),
        ("priority", ".*/prio([0-7])"),
    ):
        finding = f'label_replace({finding}, "{label}", "$1", "subject", "{pattern}")'
    out.append(
        _alert(
            "FabtopPfcStorm",
            "pfc_storm",
            "critical",
            f"{finding}\nunless on (host, link, priority) {STORM}",
            f"{PRIO}: PFC storm named by its shard (fabtop's rule or the probe's watchdog), "
            f"before a {RATE_WINDOW} rate shows it",
            "the shard's dashboard (or fabtop --from-prometheus): the finding names the stuck "
            "receiver and the paused peers; ethtool -S {{ $labels.link }} | grep "
            "prio{{ $labels.priority }}_pause",
            0.0,  # the shard already held it detect_s, or its watchdog's window
            th["restore_s"],
            {"measure": "finding"},
        )
    )
    return out


def _ecn_records(th: Mapping[str, float]) -> list[dict[str, Any]]:
    """Links pausing at least ``ecn_pause_per_s`` with no ECN mark or CNP, per direction
    (tx: it sends the pauses, a congestion point; rx: it is paused, tx under the mark)."""
    need = number(th["ecn_pause_per_s"])
    pauses = {s: f"sum without (priority) ({rate_name(PAUSE_FRAMES[s])})" for s in SIDES}
    # Only where an ECN or CNP counter exists (zero, not "not counted"), traffic still
    # flows (not flat) and the port is not in a storm (fabtop/core/rules/ecn.py).
    rest = (
        f"and on (host, link) ({ECN} == 0)\n"
        f"unless on (host, link) ({BYTES} <= on (host, link) {FLAT})\n"
        f"unless on (host, link) {STORM}"
    )
    cond = {
        "tx": f"{pauses['tx']} >= {need}",
        "rx": f"({pauses['rx']} >= {need})\n  unless on (host, link) ({pauses['tx']} >= {need})",
    }
    return [
        {"record": NO_ECN, "expr": f"(\n  {cond[side]}\n)\n{rest}", "labels": {"direction": side}}
        for side in ("tx", "rx")
    ]


def _ecn_alerts(th: Mapping[str, float]) -> list[dict[str, Any]]:
    tx, rx = f'{NO_ECN}{{direction="tx"}}', f'{NO_ECN}{{direction="rx"}}'
    # A paused port is named alone only when no congestion point is found anywhere: else
    # it is that point's victim, as fabtop's rule reports it.
    roles = {
        "tx": (tx, 'sends {{ printf "%.0f" $value }} pauses/s'),
        "rx": (f"{rx}\nunless on () {tx}", 'is paused {{ printf "%.0f" $value }} times/s'),
    }
    return [
        _alert(
            "FabtopCongestionWithoutEcn",
            "congestion_without_ecn",
            "warning",
            expr,
            f"{HERE}: congestion handled by PFC alone: it {role} over {RATE_WINDOW} with no "
            "ECN marks or CNPs (DCQCN/ECN looks off)",
            "on {{ $labels.host }}: grep . /sys/class/net/{{ $labels.link }}/ecn/roce_np/enable/* "
            "/sys/class/net/{{ $labels.link }}/ecn/roce_rp/enable/*; rdma statistic show link "
            "| grep -E 'ecn|cnp'; and ECN marking on the switch queue of the lossless priority",
            th["detect_s"],
            th["restore_s"],
            {"direction": side},
        )
        for side, (expr, role) in roles.items()
    ]


def _lossless_alerts(th: Mapping[str, float]) -> list[dict[str, Any]]:
    limit, restore = number(th["lossless_drops_per_s"]), th["restore_s"]
    hold = duration(th["event_hold_s"])
    lossless = "(fabtop_link_pfc_enabled == 1)"
    return [
        _alert(
            "FabtopLosslessDrops",
            "lossless_drops",
            "warning",
            f"{DROPS} > {limit}\nand on (host, link, priority) {lossless}",
            f'{PRIO}: {{{{ printf "%.1f" $value }}}} drops/s on a lossless priority (PFC is '
            "not protecting it end to end)",
            "ethtool -S {{ $labels.link }} | grep -E 'prio{{ $labels.priority }}_(discard|"
            "buf_discard|cong_discard|pause)'; mlnx_qos -i {{ $labels.link }}; check the "
            "switch buffer/headroom and PFC on this priority",
            0.0,
            restore,
        ),
        _alert(
            "FabtopRoceOutOfSequence",
            "roce_out_of_sequence",
            "warning",
            # Right after a flap the flap alert explains the loss, as fabtop's rule does.
            f"{SEQUENCE} > {limit}\nand on (host, link) {lossless}\n"
            f"unless on (host, link) (increase(fabtop_link_link_down_events_total[{hold}]) > 0)",
            f'{HERE}: RoCE saw {{{{ printf "%.1f" $value }}}} out-of-sequence packets/s '
            "although PFC is on: packets are being dropped",
            "rdma statistic show link; check that the traffic is marked with the lossless "
            "priority (trust mode, DSCP map); check PFC on the switch ports",
            0.0,
            restore,
        ),
        _alert(
            "FabtopPausesWithoutPfc",
            "pfc_disabled_prio",
            "warning",
            f"({rate_name(Metric.RX_PAUSE)} > 0 or {rate_name(Metric.TX_PAUSE)} > 0)\n"
            "and on (host, link, priority) (fabtop_link_pfc_enabled == 0)",
            f"{PRIO}: pause frames on a priority where PFC is off here: the peer or switch "
            "runs a different PFC map",
            "mlnx_qos -i {{ $labels.link }} (or dcb pfc show dev {{ $labels.link }}) here and "
            "on the switch port: PFC must be on the same priorities end to end",
            0.0,
            restore,
        ),
    ]


def _flap_alerts(th: Mapping[str, float]) -> list[dict[str, Any]]:
    went = f"increase(fabtop_link_link_down_events_total[{RATE_WINDOW}]) > 0"
    hold = th["event_hold_s"]
    step = (
        "ip -s link show dev {{ $labels.link }}; dmesg | grep -i '{{ $labels.link }}.*link'; "
        "check the cable/transceiver (ethtool -m) and the switch port's log"
    )
    what = (
        f'{HERE}: link went down {{{{ printf "%.0f" $value }}}} time(s) in the last {RATE_WINDOW}'
    )
    tail = f"; shown for {number(hold)} s after the last one"
    return [
        _alert(
            "FabtopLinkFlap",
            "link_flap",
            "critical",
            f"{went}\nand on (host, link) (fabtop_link_up == 0)",
            f"{what} and is down now{tail}",
            step,
            0.0,
            hold,
        ),
        _alert(
            "FabtopLinkFlap",
            "link_flap",
            "warning",
            f"{went}\nunless on (host, link) (fabtop_link_up == 0)",
            f"{what}, up again now{tail}",
            step,
            0.0,
            hold,
        ),
    ]


def shards(job: str) -> str:
    """The selector of the shards' scrape targets (the job name quoted as PromQL quotes)."""
    return f"up{{job={json.dumps(job)}}}"


def shard_down(job: str) -> str:
    """The shards that are down, each with its ``shard`` label (``--shard``) from the
    ``fabtop_shard_info`` it served last: a shard is named as its operator named it, not
    by its address. One that never said (an older fabtop) keeps its target's labels; of
    two names in the remembered hour, one is taken (a target matches one series)."""
    down = f"({shards(job)} == 0)"
    named = (
        "topk by (job, instance) (1, max by (job, instance, shard) "
        f"(last_over_time(fabtop_shard_info[{HOSTS_REMEMBERED}])))"
    )
    return (
        f"{down}\n  * on (job, instance) group_left (shard) {named}\nor on (job, instance) {down}"
    )


# A shard as an alert names it: its --shard name where it has one, else its address.
SHARD_NAME = (
    "{{ if $labels.shard }}{{ $labels.shard }} ({{ $labels.instance }})"
    "{{ else }}{{ $labels.instance }}{{ end }}"
)


def _blind_alerts(th: Mapping[str, float], job: str) -> list[dict[str, Any]]:
    detect, restore = th["detect_s"], th["restore_s"]
    return [
        _alert(
            "FabtopHostBlind",
            "host_unreachable",
            "critical",
            "fabtop_host_up == 0",
            "{{ $labels.host }} is blind: its shard gets no usable frames from it (down, "
            "failing or stale): none of its links is watched",
            "on the shard {{ $labels.instance }}: fabtop doctor {{ $labels.host }}; its "
            "fabtop_finding series say why (host_unreachable, host_failing, host_stale)",
            detect,
            restore,
        ),
        # A shard that is down says nothing of its hosts any more: the ones it served in
        # the last HOSTS_REMEMBERED are blind too, each named (never healthy by silence).
        _alert(
            "FabtopHostBlind",
            "shard_down",
            "critical",
            f"last_over_time(fabtop_host_up[{HOSTS_REMEMBERED}])\n"
            f"and on (job, instance) ({shards(job)} == 0)",
            f"{{{{ $labels.host }}}} is blind: its shard {SHARD_NAME} is down",
            "on the shard's machine: systemctl status of its fabtop export; curl "
            "http://{{ $labels.instance }}/metrics",
            detect,
            restore,
        ),
        _alert(
            "FabtopShardDown",
            "shard_down",
            "critical",
            shard_down(job),
            f"fabtop shard {SHARD_NAME} is down: Prometheus cannot scrape it, so every "
            "host it owns is blind (never healthy)",
            "on the shard's machine: systemctl status of its fabtop export; curl "
            "http://{{ $labels.instance }}/metrics",
            detect,
            restore,
        ),
        _alert(
            "FabtopSourceDown",
            "source_unreachable",
            "critical",
            "fabtop_source_up == 0",
            "{{ $labels.instance }}: the Prometheus source {{ $labels.source }} does not "
            "answer: the hosts it feeds are blind",
            "curl {{ $labels.source }}/-/ready from the exporter's machine",
            detect,
            restore,
        ),
    ]


def _heat_alerts(th: Mapping[str, float]) -> list[dict[str, Any]]:
    detect, restore = th["detect_s"], th["restore_s"]
    warn, crit = number(th["nic_temp_warn_c"]), number(th["nic_temp_crit_c"])
    gpu_step = (
        "nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i {{ $labels.gpu }}; "
        "check fans, inlet temperature and the server's airflow"
    )
    nic = (
        f'{HERE}: NIC at {{{{ printf "%.0f" $value }}}} °C (warning at {warn}, critical at {crit})'
    )
    nic_step = "sensors (the NIC's hwmon entry); check the chassis fans and the airflow"
    return [
        *(
            _alert(
                "FabtopGpuThermalSlowdown",
                "gpu_thermal_slowdown",
                severity,
                f"fabtop_gpu_thermal_slowdown == {level}",
                f"{GPU}: {kind} thermal slowdown: it is slowing the whole job",
                gpu_step,
                detect,
                restore,
            )
            for level, kind, severity in (
                (SW_SLOWDOWN, "software", "warning"),
                (HW_SLOWDOWN, "hardware", "critical"),
            )
        ),
        _alert(
            "FabtopGpuHot",
            "gpu_hot",
            "warning",
            f"fabtop_gpu_temperature_celsius >= {number(th['gpu_temp_warn_c'])}\nor "
            f"fabtop_gpu_memory_temperature_celsius >= {number(th['gpu_mem_temp_warn_c'])}",
            f'{GPU} is hot: {{{{ printf "%.0f" $value }}}} °C (core warning at '
            f"{number(th['gpu_temp_warn_c'])}, memory at {number(th['gpu_mem_temp_warn_c'])})",
            "nvidia-smi -q -d TEMPERATURE -i {{ $labels.gpu }}; check fans and airflow",
            detect,
            restore,
        ),
        _alert(
            "FabtopNicTemperature",
            "nic_temperature",
            "warning",
            f"fabtop_link_temperature_celsius >= {warn} < {crit}",
            f"{nic}: check airflow before it throttles or shuts the port down",
            nic_step,
            detect,
            restore,
        ),
        _alert(
            "FabtopNicTemperature",
            "nic_temperature",
            "critical",
            f"fabtop_link_temperature_celsius >= {crit}",
            f"{nic}: check airflow before it throttles or shuts the port down",
            nic_step,
            detect,
            restore,
        ),
    ]


def alerting_rules(th: Mapping[str, float], job: str = DEFAULT_JOB) -> list[dict[str, Any]]:
    """The alerts, one per fabtop finding they mirror (a storm: one per side and measure)."""
    return [
        *_storm_alerts(th),
        *_ecn_alerts(th),
        *_lossless_alerts(th),
        *_flap_alerts(th),
        *_blind_alerts(th, job),
        *_heat_alerts(th),
    ]


def rule_groups(th: Mapping[str, float], job: str = DEFAULT_JOB) -> dict[str, Any]:
    """The rule file's document: one group of recording rules, one of alerts."""
    return {
        "groups": [
            {"name": "fabtop.rules", "rules": recording_rules(th)},
            {"name": "fabtop.alerts", "rules": alerting_rules(th, job)},
        ]
    }


def to_yaml(doc: Any, indent: int = 0) -> str:
    """YAML for the rule file's plain shapes: mappings, lists, strings and numbers.

    Strings are JSON-quoted (a JSON string is a YAML double-quoted scalar), or literal
    blocks when they span lines; no library needed for this much.
    """
    pad = " " * indent
    if isinstance(doc, dict):
        out = []
        for k, v in doc.items():
            if isinstance(v, dict | list) and v:
                out.append(f"{pad}{k}:\n{to_yaml(v, indent + 2)}")
            else:
                out.append(f"{pad}{k}: {_scalar(v, indent + 2)}")
        return "\n".join(out)
    if isinstance(doc, list):
        out = []
        for item in doc:
            body = to_yaml(item, indent + 2)
            out.append(f"{pad}- {body[indent + 2 :]}")
        return "\n".join(out)
    return f"{pad}{_scalar(doc, indent)}"


def _scalar(v: Any, indent: int) -> str:
    if isinstance(v, str) and "\n" in v:
        pad = " " * indent
        return "|-\n" + "\n".join(f"{pad}{line}" if line else "" for line in v.split("\n"))
    if isinstance(v, dict | list):
        return json.dumps(v)  # empty
    return json.dumps(v, ensure_ascii=False)


def _panel(
    title: str, unit: str, targets: list[tuple[str, str]], pos: tuple[int, int], **extra: Any
) -> dict[str, Any]:
    x, y = pos
    return {
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit, **extra}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def dashboard(th: Mapping[str, float], job: str = DEFAULT_JOB) -> dict[str, Any]:
    """A small Grafana dashboard over the recording rules: throughput, pauses, ECN, loss
    per link, and the findings and blind hosts."""
    h = '{host=~"$host"}'
    link = "{{host}} {{link}}"
    prio = "{{host}} {{link}} prio {{priority}}"
    storm = {
        "thresholds": {
            "mode": "absolute",
            "steps": [
                {"color": "green", "value": None},
                {"color": "orange", "value": th["pressure_pause_ratio"]},
                {"color": "red", "value": th["storm_pause_ratio"]},
            ],
        },
        "custom": {"thresholdsStyle": {"mode": "line"}},
    }
    panels = [
        _panel(
            "Throughput per link",
            "bps",
            [
                (f"8 * {rate_name(Metric.RX_BYTES)}{h}", f"{link} rx"),
                (f"8 * {rate_name(Metric.TX_BYTES)}{h}", f"{link} tx"),
            ],
            (0, 0),
        ),
        _panel(
            "PFC pause time per priority (share of the time paused)",
            "percentunit",
            [
                (f"{PAUSE_RATIO['tx']}{h} > 0", f"{prio} sends pauses"),
                (f"{PAUSE_RATIO['rx']}{h} > 0", f"{prio} is paused"),
            ],
            (12, 0),
            **storm,
        ),
        _panel(
            "ECN marks and CNPs per link",
            "pps",
            [(f"{rate_name(m)}{h}", f"{link} {m}") for m in ECN_SIGNALS],
            (0, 8),
        ),
        _panel(
            "Loss per link",
            "pps",
            [
                (f"{DROPS}{h} > 0", f"{prio} drops"),
                (f"{SEQUENCE}{h}", f"{link} out of sequence"),
                (f"{rate_name(Metric.RX_DISCARDS)}{h}", f"{link} rx discards"),
                (f"{rate_name(Metric.RX_OUT_OF_BUFFER)}{h}", f"{link} out of buffer"),
                (f"{rate_name(Metric.RX_PHY_ERRORS)}{h}", f"{link} phy errors"),
            ],
            (12, 8),
        ),
        {
            "type": "table",
            "title": "Findings (fabtop's own, from the shards) and blind hosts and shards",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 10, "w": 24, "x": 0, "y": 16},
            "targets": [
                {"refId": "A", "expr": "fabtop_finding == 1", "instant": True, "format": "table"},
                {"refId": "B", "expr": "fabtop_host_up == 0", "instant": True, "format": "table"},
                {
                    "refId": "C",
                    "expr": f"{shards(job)} == 0",
                    "instant": True,
                    "format": "table",
                },
            ],
        },
    ]
    return {
        "title": "fabtop: fabric",
        "uid": "fabtop-fabric",
        "tags": ["fabtop"],
        "timezone": "utc",
        "refresh": "30s",
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus"},
                {
                    "name": "host",
                    "type": "query",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "query": "label_values(fabtop_host_up, host)",
                    "refresh": 2,
                    "multi": True,
                    "includeAll": True,
                    "current": {"text": "All", "value": "$__all"},
                },
            ]
        },
        "panels": panels,
    }


def render(th: Mapping[str, float], job: str = DEFAULT_JOB) -> dict[str, str]:
    """File name -> text of each generated file."""
    head = (
        "# Generated by fabtop (fabtop/run/mixin.py): fabtop export --write-rules DIR [-c FILE].\n"
        "# Do not edit by hand: change the thresholds in the config's [thresholds] instead.\n"
    )
    return {
        RULES_FILE: head + to_yaml(rule_groups(th, job)) + "\n",
        DASHBOARD_FILE: json.dumps(dashboard(th, job), indent=2, ensure_ascii=False) + "\n",
    }


def write_mixin(out_dir: str | Path, th: Mapping[str, float], job: str = DEFAULT_JOB) -> list[Path]:
    """Write the rule file and the dashboard into ``out_dir`` (made if missing)."""
    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{d}: cannot make the directory: {e.strerror or e}") from e
    written = []
    for name, text in render(th, job).items():
        write_text(d / name, text, what="mixin")
        written.append(d / name)
    return written
