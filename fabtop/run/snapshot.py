"""The snapshot file, schema ``fabtop.snapshot/2`` (DESIGN §5), and its CSV/Prometheus forms.

Written through :mod:`fabtop.run.outputs`: atomically onto a regular file (a symlink's
target), directly to a device or FIFO, to stdout for ``-``. A full or read-only disk
gives one clear error and leaves no partial file behind. A number that is not finite
is null in JSON, an empty CSV cell and absent from the Prometheus text; every CSV cell
is guarded against spreadsheet formulas.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from collectors.optics import QUANTITIES, RX_POWER_MW, TX_POWER_MW, FecState, ModuleDiag, dbm
from collectors.samples import (
    FEC_SOURCE,
    GpuSample,
    InferenceSample,
    LinkSample,
    SoftwareVersions,
)
from collectors.text import clean, csv_cell
from collectors.vocabulary import InferenceRate, Metric
from fabtop.core.ber import BerNow
from fabtop.core.coverage import coverage
from fabtop.core.finding_log import Episode
from fabtop.core.findings import Finding
from fabtop.core.rates import LinkRates
from fabtop.core.rules import Evaluator, Judgement, NotJudged, link_ber
from fabtop.core.rules.cable import rx_margins
from fabtop.core.state import UP, FabricState, effective_status
from fabtop.core.thunderbolt import Cable, pair_cables
from fabtop.run.outputs import OutputError, write_text

SCHEMA = "fabtop.snapshot/2"
# What ``fabtop diff`` reads: /2 added a link's cable (module, fec, health, ber; issue 33),
# so a /1 file is a /2 file without them.
READ_SCHEMAS = ("fabtop.snapshot/1", SCHEMA)
# A metric's rate column in the CSV: the documents carry plain names, not members.
_RATE_OF: dict[str, str] = {m: m.per_s for m in Metric}
# An inference entry's rates, in the order the schema has always listed them.
_TOKEN_RATES = (InferenceRate.GENERATED_TOKENS_PER_S, InferenceRate.PROMPT_TOKENS_PER_S)
_LATENCIES = (
    InferenceRate.TTFT_P50_S,
    InferenceRate.TTFT_P99_S,
    InferenceRate.ITL_P50_S,
    InferenceRate.ITL_P99_S,
)


# The snapshot could not be written; the message names the file and the cause.
SnapshotError = OutputError


def _prio_keys(v: Any) -> Any:
    # JSON object keys are strings; priorities stay readable as "0".."7".
    if isinstance(v, dict):
        return {str(k): _prio_keys(x) for k, x in sorted(v.items())}
    return v


def json_safe(v: Any) -> Any:
    """``v`` with every non-finite float (NaN, ±Inf) made None, at any depth: JSON null."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_safe(x) for x in v]
    return v


MAX_DEPTH = 32  # a snapshot nests 6 deep, a recording's head 4: deeper is a crafted file


def clean_tree(v: Any, keep: frozenset[str] = frozenset(), depth: int = 0) -> Any:
    """A loaded JSON document with every string, keys too, through ``collectors.text.clean``.

    A value under a key in ``keep`` is raw text left for the parser it feeds (a /metrics
    body), which cleans what it parses. Raises ValueError past :data:`MAX_DEPTH` levels.
    """
    if isinstance(v, str):
        return clean(v)
    if depth >= MAX_DEPTH and isinstance(v, dict | list):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(v, dict):
        return {
            clean(str(k)): x if k in keep and isinstance(x, str) else clean_tree(x, keep, depth + 1)
            for k, x in v.items()
        }
    if isinstance(v, list):
        return [clean_tree(x, keep, depth + 1) for x in v]
    return v


def link_entry(
    link: LinkSample, rates: LinkRates | None, ber: BerNow | None = None
) -> dict[str, Any]:
    """One link in snapshot form; ``ber``: its pre-FEC BER as the cable rules measure it."""
    rate_map: dict[str, Any] = {}
    if rates is not None:
        rate_map = {k: json_safe(_prio_keys(v)) for k, v in sorted(rates.rates.items())}
    return {
        "id": link.id,
        "netdev": link.netdev,
        "rdma_device": link.rdma_device,
        "port": link.port,
        "kind": link.kind,
        "physical": link.physical,
        "link_layer": link.link_layer,
        "state": link.state,
        "rate_gbps": link.rate_gbps,
        "mtu": link.mtu,
        "driver": link.driver,
        "driver_version": link.driver_version,
        "firmware": link.firmware,
        "pcie": asdict(link.pcie) if link.pcie else None,
        "temperature_c": link.temperature_c,
        "qos": _qos(link),
        "saturated": list(link.saturated),
        "counters": {src: dict(sorted(c.items())) for src, c in sorted(link.counters.items())},
        "metrics": {k: _prio_keys(v) for k, v in sorted(link.metrics.items())},
        "rates": rate_map,
        "gap": bool(rates.gap) if rates else False,
        # The cable's own health (issue 33), null where not read, like pcie and qos.
        "module": module_entry(link.module) if link.module else None,
        "fec": fec_entry(link.fec, link.counters.get(FEC_SOURCE, {})) if link.fec else None,
        "health": [asdict(h) for h in link.health] if link.health is not None else None,
        "ber": ber_entry(ber) if ber else None,
    }


def _power(mw: float | None) -> dict[str, float | None]:
    """A power in mW and dBm; a dark lane (0 mW, the tools' -inf dBm) has a null dBm."""
    p = dbm(mw)
    return {"mw": mw, "dbm": round(p, 2) if p is not None and math.isfinite(p) else None}


def _round(v: float | None) -> float | None:
    return round(v, 2) if v is not None and math.isfinite(v) else None


def module_entry(m: ModuleDiag) -> dict[str, Any]:
    """A module's diagnostics: every reading null where the module does not measure it
    (``not_measured`` names those), its own limits null where it gives none (all-zero
    thresholds: not implemented), powers in mW and dBm."""
    margins = {lane: above for lane, _, above in rx_margins(m)}
    lanes = [
        {
            "lane": ln.lane,
            "bias_ma": ln.bias_ma,
            "tx_power": _power(ln.tx_power_mw),
            "rx_power": _power(ln.rx_power_mw),
            # dB above the module's low rx alarm (what optic_rx_low judges); null: no alarm
            # given, or a dark lane
            "rx_above_alarm_db": _round(margins.get(ln.lane)),
            "signals": list(ln.signals),  # loss of signal/lock, tx fault: latched in the module
        }
        for ln in m.lanes
    ]
    limits: dict[str, Any] = {}
    for q, lim in m.limits.items():
        limits[q] = asdict(lim)
        if q in (RX_POWER_MW, TX_POWER_MW):  # the same limits in dBm, as the tools print
            limits[q.replace("_mw", "_dbm")] = {k: _power(v)["dbm"] for k, v in asdict(lim).items()}
    return {
        "identifier": m.identifier,
        "vendor": m.vendor,
        "part": m.part,
        "serial": m.serial,
        "connector": m.connector,
        "temperature_c": m.temperature_c,
        "voltage_v": m.voltage_v,
        "rx_power_kind": m.rx_power_kind,
        "lanes": lanes,
        "limits": limits,
        "flags": list(m.flags),
        "signals_read": list(m.signals_read),  # flags the module reports at all ([]: none)
        "not_measured": _not_measured(m),
        "read_ns": m.read_ns,
    }


def _not_measured(m: ModuleDiag) -> list[str]:
    """The quantities the module reported on no lane (a DAC has no power, some no bias)."""
    said = {
        "temperature_c": m.temperature_c is not None,
        "voltage_v": m.voltage_v is not None,
        "bias_ma": any(ln.bias_ma is not None for ln in m.lanes),
        "tx_power_mw": any(ln.tx_power_mw is not None for ln in m.lanes),
        "rx_power_mw": any(ln.rx_power_mw is not None for ln in m.lanes),
    }
    return [q for q in QUANTITIES if not said[q]]


# How the FEC parser names a lane's count and a histogram bin in LinkSample.counters["fec"]
# (collectors/parsers/fec.py): "<name>_lane<N>", "hist_bin_<low>" and "hist_bin_<low>_lane<N>".
_FEC_LANE = re.compile(r"(.+)_lane([0-9]+)\Z")
_FEC_BIN = re.compile(r"hist_bin_([0-9]+)\Z")


def fec_entry(fec: FecState, counters: Mapping[str, int]) -> dict[str, Any]:
    """The FEC mode and its counts: totals, per lane where the driver gives them, the error
    histogram (bins by their lowest count of symbol errors per codeword) where it is read."""
    totals: dict[str, int] = {}
    lanes: dict[str, dict[str, int]] = {}
    for name, v in sorted(counters.items()):
        lane = _FEC_LANE.match(name)
        if lane:
            lanes.setdefault(lane.group(1), {})[lane.group(2)] = v
        else:
            totals[name] = v
    bins = {}
    for name, v in totals.items():
        b = _FEC_BIN.match(name)
        if b:
            bins[b.group(1)] = {"total": v, "lanes": _by_lane(lanes.pop(name, {}))}
    return {
        "configured": list(fec.configured),
        "active": fec.active,
        # the kernel's FEC statistics (struct ethtool_fec_stats), null where not given
        "corrected_blocks": totals.get("corrected_blocks"),
        "uncorrectable_blocks": totals.get("uncorrectable_blocks"),
        "corrected_bits": totals.get("corrected_bits"),
        "lanes": {k: _by_lane(v) for k, v in lanes.items()},  # {"corrected_blocks": {"0": 255}}
        "histogram": dict(sorted(bins.items(), key=lambda kv: int(kv[0])))
        if fec.histogram
        else None,
    }


def _by_lane(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))  # lane 10 after lane 9


def ber_entry(b: BerNow) -> dict[str, Any]:
    """A link's pre-FEC BER over the cable rules' window and its trend on the link's own
    baseline; ``counted_from`` names the numerator and the denominator."""
    return {
        "ber": b.ber,
        "before": b.before,
        "decades_per_h": b.decades_per_h,
        "counted_from": b.counted_from,
    }


def _qos(link: LinkSample) -> dict[str, Any] | None:
    if link.qos is None:
        return None
    q = asdict(link.qos)
    if q.get("dscp2prio"):
        q["dscp2prio"] = {str(k): v for k, v in q["dscp2prio"].items()}
    return q


def gpu_entry(g: GpuSample) -> dict[str, Any]:
    """One GPU in snapshot form (numeric fields stay numbers or null)."""
    d = asdict(g)
    d["throttle_reasons"] = list(g.throttle_reasons)
    return d


def versions_entry(v: SoftwareVersions | None) -> dict[str, Any] | None:
    """A host's software versions (issue 15): each field ``{"value", "source", "note"}``,
    ``value`` null when unknown (``note`` says why), the field null when never read."""
    if v is None:
        return None
    return {
        name: asdict(read) if read is not None else None
        for name, read in (
            ("kernel", v.kernel),
            ("rdma_core", v.rdma_core),
            ("ofed", v.ofed),
            ("nvidia_driver", v.nvidia_driver),
            ("nccl", v.nccl),
        )
    }


def finding_entry(f: Finding) -> dict[str, Any]:
    """One finding in snapshot form (also the format of ``doctor --json``).

    ``evidence`` keeps its flat text-and-numbers form (ports by ``host/netdev``);
    ``port`` and ``priority`` say what the finding is about as data.
    """
    port = f.port
    return {
        "rule": f.rule,
        "severity": f.severity,
        "subject": f.subject,
        "summary": f.summary,
        "evidence": json_safe(f.shown_evidence()),
        "next_step": f.next_step,
        "host": f.host,
        "since": f.since,
        "port": {"host": port.host, "link": port.link, "name": port.name} if port else None,
        "priority": f.priority,
    }


def inference_entry(inf: InferenceSample, rates: Mapping[str, float | None]) -> dict[str, Any]:
    """One inference server in snapshot form: its readings and the rates derived from them."""
    return {
        "url": inf.url,
        "server": inf.server,
        "model": inf.model,
        **{n: rates.get(n) for n in _TOKEN_RATES},
        "requests_running": inf.requests_running,
        "requests_waiting": inf.requests_waiting,
        **{n: rates.get(n) for n in _LATENCIES},
        "generated_tokens_total": inf.generated_tokens_total,
        "prompt_tokens_total": inf.prompt_tokens_total,
        "error": inf.error,
        # A server with no token counter (exo, mlx_lm): why its rates are null.
        "rate_unknown": inf.rate_unknown,
        # exo's cluster state: nodes, model instances, each runner's node and layers.
        "cluster": asdict(inf.cluster) if inf.cluster is not None else None,
    }


def episode_entry(ep: Episode) -> dict[str, Any]:
    """One finding episode (raise to clear, operator-axis unix times) in snapshot form."""
    return {
        "rule": ep.rule,
        "subject": ep.subject,
        "severity": ep.severity,
        "raised": ep.raised,
        "cleared": ep.cleared,
        "summary": ep.shown.summary,
    }


def cable_entry(c: Cable) -> dict[str, Any]:
    """One Thunderbolt cable (fabtop/core/thunderbolt.py): its ends, speed and proof."""
    ends = [c.a] + ([c.b] if c.b is not None else [])
    return {
        "text": c.text,
        "status": c.status,
        "why": c.why,
        "ends": [{"host": e.host, "port": e.port, "netdev": e.netdev} for e in ends],
        "far_name": c.far_name,
        "gbps_per_lane": c.gbps_per_lane,
        "lanes": c.lanes,
        "total_gbps": c.total_gbps,
    }


def cables(state: FabricState) -> list[Cable]:
    """The fabric's Thunderbolt cables, one per cable."""
    return pair_cables({name: hs.sample for name, hs in state.hosts.items()})


def judge(state: FabricState) -> Judgement:
    """The findings of the state as it is now, as a snapshot and doctor give them.

    The state is evaluated first (the last frames may have come after the last pass), then
    its rules judge once (:meth:`~fabtop.core.rules.Evaluator.once`): state rules on what
    was read, without a hold time; window rules as the live pass left them, and those
    the span was too short for named. A state without an Evaluator (a test's own hook)
    gets its live findings, and no span.
    """
    state.evaluate()
    rules = state.rules
    if isinstance(rules, Evaluator):
        return rules.once(state, state.findings)
    return Judgement(list(state.findings), [], None)


def not_judged_entry(n: NotJudged) -> dict[str, Any]:
    """A window rule the snapshot's span was too short for, in snapshot form."""
    return {"rule": n.rule, "needs_s": n.needs_s, "span_s": n.span_s}


def build(state: FabricState, interval_s: float, at: float | None = None) -> dict[str, Any]:
    """The snapshot document for the current state (evaluated first: :func:`judge`);
    ``at``: the unix time it shows, when not now (a past instant read from Prometheus)."""
    judged = judge(state)
    hosts: list[dict[str, Any]] = []
    now = state.now()
    for name, hs in state.hosts.items():
        s, r = hs.sample, hs.rates
        # A host gone silent is stale, never reachable: the status its finding reads.
        status = effective_status(hs, now, state.interval)
        links = []
        gpus: list[dict[str, Any]] = []
        inference: list[dict[str, Any]] = []
        if s is not None:
            for lid, link in s.links.items():
                ber = link_ber(state, name, lid)
                links.append(link_entry(link, r.links.get(lid) if r else None, ber))
            gpus = [gpu_entry(g) for g in s.gpus]
            for inf in s.inference:
                rr = (r.inference.get(inf.url) if r else None) or {}
                inference.append(inference_entry(inf, rr))
        hosts.append(
            {
                "name": name,
                "target": hs.target,
                "reachable": status == UP and s is not None,
                "error": hs.error,
                "status": status,
                "clock_ns": s.clock_ns if s else None,
                "interval_s": r.interval_s if r else None,
                "links": links,
                "gpus": gpus,
                "inference": inference,
                "versions": versions_entry(s.versions if s else None),
                "thunderbolt": asdict(s.thunderbolt) if s and s.thunderbolt else None,
                "sections": [asdict(x) for x in s.sections] if s else [],
                # The host's recent distinct warnings, not only this frame's: the probe
                # says some things (a refused interface name) once, on its first frame.
                "warnings": list(hs.warnings),
            }
        )
    cov = coverage(state, state.now(), interval_s)
    # One pass over the whole document: whatever field a non-finite value reached
    # (a GPU reading, a rate, a temperature), it is null, never a crash in to_json.
    doc: dict[str, Any] = json_safe(
        {
            "schema": SCHEMA,
            "taken_at": (datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC))
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
            "interval_s": interval_s,
            # Seconds the rates of every reporting host cover: a window rule needs its window.
            "span_s": judged.span_s,
            "hosts": hosts,
            "findings": [finding_entry(f) for f in judged.findings],
            # Window rules the span was too short for: no finding from them means nothing.
            "not_judged": [not_judged_entry(n) for n in judged.not_judged],
            "thunderbolt_cables": [cable_entry(c) for c in cables(state)],
            # What was seen and what whole sources are missing ("no RDMA device on node3"):
            # "no findings" only means something over what was seen.
            "coverage": {
                "hosts": cov.hosts,
                "reporting": list(cov.reporting),
                "not_reporting": list(cov.not_reporting),
                "gaps": list(cov.gaps),
            },
            "episodes": [episode_entry(ep) for ep in state.finding_log.episodes()],
        }
    )
    return doc


def to_json(doc: dict[str, Any]) -> str:
    """Stable, diff-friendly JSON."""
    return json.dumps(json_safe(doc), indent=1, sort_keys=False, allow_nan=False) + "\n"


def _cell(v: Any) -> str:
    """One CSV cell: a finite number as itself, missing or non-finite empty, text guarded."""
    if v is None or isinstance(v, bool):
        return ""
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return csv_cell(str(v))


def to_csv(doc: dict[str, Any]) -> str:
    """One row per host/link/metric (per priority where it has them)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["host", "link", "kind", "name", "priority", "value", "rate_per_s"])
    for h in doc["hosts"]:
        for link in h["links"]:
            for kind, table in (("metric", link["metrics"]), ("counter", None)):
                if table is None:
                    continue
                for name, val in table.items():
                    rate = link["rates"].get(_RATE_OF.get(name))
                    if isinstance(val, dict):
                        for p, v in val.items():
                            rp = rate.get(p) if isinstance(rate, dict) else None
                            w.writerow(map(_cell, [h["name"], link["id"], kind, name, p, v, rp]))
                    else:
                        w.writerow(map(_cell, [h["name"], link["id"], kind, name, "", val, rate]))
            for src, counters in link["counters"].items():
                for name, val in counters.items():
                    w.writerow(map(_cell, [h["name"], link["id"], f"raw:{src}", name, "", val, ""]))
    # What the JSON says of the fabric's health, in the same columns: a finding's severity
    # as its value, a window rule not judged with the seconds it needs, and the span.
    for f in doc.get("findings", ()):
        where = [f.get("host"), (f.get("port") or {}).get("link")]
        w.writerow(map(_cell, [*where, "finding", f["rule"], f.get("priority"), f["severity"], ""]))
    for n in doc.get("not_judged", ()):
        w.writerow(map(_cell, ["", "", "not_judged", n["rule"], "", n["needs_s"], ""]))
    if doc.get("span_s") is not None:
        w.writerow(map(_cell, ["", "", "snapshot", "span_s", "", doc["span_s"], ""]))
    return out.getvalue()


def _prom_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_prom(doc: dict[str, Any]) -> str:
    """Prometheus text exposition of the normalized metrics (node_exporter textfile style)."""
    groups: dict[str, tuple[str, list[str]]] = {}  # metric -> (type, sample lines)

    def emit(
        name: str,
        labels: dict[str, str],
        value: Any,
        kind: str = "counter",
        prefix: str = "fabtop_link_",
    ) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return  # missing: no sample
        value = float(value)
        if not math.isfinite(value):
            return  # a value that cannot be is absent, never NaN in a time series
        metric = prefix + "".join(c if c.isascii() and c.isalnum() else "_" for c in name)
        lab = ",".join(f'{k}="{_prom_label(v)}"' for k, v in labels.items())
        series = f"{metric}{{{lab}}}" if lab else metric
        groups.setdefault(metric, (kind, []))[1].append(f"{series} {value}")

    for h in doc["hosts"]:
        emit("up", {"host": h["name"]}, 1.0 if h["reachable"] else 0.0, "gauge", "fabtop_host_")
        for link in h["links"]:
            base = {"host": h["name"], "link": link["id"]}
            for name, val in link["metrics"].items():
                if isinstance(val, dict):
                    for p, v in val.items():
                        emit(name + "_total", {**base, "priority": p}, v)
                else:
                    emit(name + "_total", base, val)
    # The findings as the exporter serves them (one series per label set), the window
    # rules not judged with the seconds each needs, and the span the rates cover.
    seen: set[tuple[str, str, str]] = set()
    for f in doc.get("findings", ()):
        labels = {"rule": f["rule"], "severity": f["severity"], "subject": f["subject"]}
        key = (f["rule"], f["severity"], f["subject"])
        if key not in seen:
            seen.add(key)
            emit("finding", labels, 1.0, "gauge", "fabtop_")
    for n in doc.get("not_judged", ()):
        emit("not_judged_needs_seconds", {"rule": n["rule"]}, n["needs_s"], "gauge", "fabtop_")
    emit("snapshot_span_seconds", {}, doc.get("span_s"), "gauge", "fabtop_")
    out: list[str] = []
    for metric, (kind, samples) in groups.items():
        out.append(f"# TYPE {metric} {kind}")
        out.extend(samples)
    return "\n".join(out) + "\n"


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (see :mod:`fabtop.run.outputs`); raise SnapshotError."""
    write_text(path, text, "snapshot")


def render(doc: dict[str, Any], fmt: str) -> str:
    """The document in ``json``, ``csv`` or ``prom`` form."""
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        return to_csv(doc)
    if fmt == "prom":
        return to_prom(doc)
    raise ValueError(f"unknown format {fmt!r} (json, csv, prom)")
