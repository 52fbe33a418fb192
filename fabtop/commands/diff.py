"""``fabtop diff A B``: counter deltas between two points, most significant first.

``A``/``B`` are snapshot files (``fabtop.snapshot/2``, or ``/1`` from before the cable
data) or recording points (``run.fabrec@T``, the replayed state ``T`` seconds into the
recording). The delta rule itself (missing or reset: no delta) is
:mod:`fabtop.core.deltas`, shared with the dashboard's ``r`` baseline. A NIC's devlink
health reporters' error and recover counts are counters too; a cable's readings (the
pre-FEC BER, a lane's rx power, the module's temperature) are not: they are shown A → B.

A snapshot file is checked before it is used: every field the diff reads has its type
(one line naming the file and the field otherwise, never a traceback), and every string
in it goes through ``collectors.text.clean``, so a crafted host or counter name cannot
reach the terminal as an escape sequence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.numbers import finite, parse_float, parse_uint
from collectors.text import clean
from collectors.vocabulary import Metric, by_category
from fabtop.core.deltas import link_deltas
from fabtop.core.thresholds import DEFAULT_THRESHOLDS

CATEGORIES: tuple[tuple[str, tuple[Metric, ...]], ...] = by_category()
# Keyed by plain names: the metric names come back from snapshot JSON as strings.
_RANK: dict[str, int] = {m: i for i, (_, members) in enumerate(CATEGORIES) for m in members}
_CATEGORY: dict[str, str] = {m: cat for cat, members in CATEGORIES for m in members}
# A row that is no Metric (a health reporter's count) ranks with its category.
_CATEGORY_RANK: dict[str, int] = {cat: i for i, (cat, _) in enumerate(CATEGORIES)}


class DiffError(ValueError):
    """A diff input could not be read; one line naming it."""


@dataclass(slots=True)
class DeltaRow:
    """One counter's change on one host/link (and priority)."""

    host: str
    link: str
    metric: str
    priority: int | None
    delta: float
    rate_per_s: float | None
    category: str

    def key(self) -> tuple[int, float, str, str, str, int]:
        """Sort key: category, then largest change first."""
        return (
            _RANK.get(self.metric, _CATEGORY_RANK.get(self.category, len(CATEGORIES))),
            -self.delta,
            self.host,
            self.link,
            self.metric,
            -1 if self.priority is None else self.priority,
        )


@dataclass(slots=True)
class CableChange:
    """A cable reading on one host/link at A and at B (not a counter: no delta, a change)."""

    host: str
    link: str
    reading: str  # "pre-FEC BER", "rx power lane 2", "module temperature"
    before: float | None
    after: float | None
    change: float | None  # decades for the BER, dB for a power, °C for a temperature
    unit: str  # of before/after: "", "dBm", "°C"
    change_unit: str  # "decades", "dB", "°C"

    def cells(self) -> tuple[str, str, str]:
        """A, B and the change as the table shows them."""
        a, b = (self._cell(v) for v in (self.before, self.after))
        ch = "" if self.change is None else f"{self.change:+.2f} {self.change_unit}"
        return a, b, ch

    def _cell(self, v: float | None) -> str:
        if v is None:
            return "?"
        if v == -math.inf:
            return "dark"  # 0 mW: the tools' -inf dBm
        return f"{v:.1e}" if self.unit == "" else f"{v:.2f} {self.unit}"  # a BER: 2.1e-07


@dataclass(slots=True)
class NoData:
    """A host one side of the diff has nothing to compare for."""

    host: str
    side: str  # "A" or "B"
    why: str
    source: str = ""  # the file (or run.fabrec@T) of that side

    def line(self) -> str:
        """What the table says about it."""
        where = f" ({self.source})" if self.source else ""
        return f"{self.host}: no data in {self.side}{where}: {self.why}"


def _has_data(h: Mapping[str, Any]) -> bool:
    return any(ln.get("metrics") for ln in h.get("links", []))


def _why_no_data(h: Mapping[str, Any] | None) -> str:
    if h is None:
        return "host not in it"
    if h.get("error"):
        return str(h["error"])
    return "no counters" if h.get("reachable", True) else "host did not answer"


def missing_data(
    a: Mapping[str, Any], b: Mapping[str, Any], source_a: str = "", source_b: str = ""
) -> tuple[list[NoData], int]:
    """Hosts with no counters on a side (a diff that cannot be taken), and how many had both."""
    ha = {h["name"]: h for h in a.get("hosts", [])}
    hb = {h["name"]: h for h in b.get("hosts", [])}
    out, both = [], 0
    for name in [*ha, *(n for n in hb if n not in ha)]:
        gaps = [
            NoData(name, side, _why_no_data(h), src)
            for side, h, src in (("A", ha.get(name), source_a), ("B", hb.get(name), source_b))
            if h is None or not _has_data(h)
        ]
        out.extend(gaps)
        both += not gaps
    return out, both


def diff_docs(a: Mapping[str, Any], b: Mapping[str, Any], zeros: bool = False) -> list[DeltaRow]:
    """Counter deltas from snapshot ``a`` to snapshot ``b``, most significant first."""
    base_hosts = {h["name"]: h for h in a.get("hosts", [])}
    rows: list[DeltaRow] = []
    for h in b.get("hosts", []):
        hb = base_hosts.get(h["name"])
        if hb is None:
            continue
        dt = None
        if h.get("clock_ns") and hb.get("clock_ns") and h["clock_ns"] > hb["clock_ns"]:
            dt = (h["clock_ns"] - hb["clock_ns"]) / 1e9
        base_links = {ln["id"]: ln for ln in hb.get("links", [])}
        for link in h.get("links", []):
            bl = base_links.get(link["id"])
            if bl is None:
                continue
            metrics = link_deltas(link.get("metrics", {}), bl.get("metrics", {}))
            health = link_deltas(_health_counts(link), _health_counts(bl))
            for name, d in [*metrics.items(), *health.items()]:
                items = d.items() if isinstance(d, dict) else [(None, d)]
                for prio, val in items:
                    if val == 0 and not zeros:
                        continue
                    rows.append(
                        DeltaRow(
                            h["name"],
                            link["id"],
                            name,
                            prio,
                            val,
                            val / dt if dt else None,
                            "errors" if name in health else _CATEGORY.get(name, "other"),
                        )
                    )
    return sorted(rows, key=DeltaRow.key)


def _health_counts(link: Mapping[str, Any]) -> dict[str, int]:
    """A link's devlink health reporters' cumulative counts, as counters:
    ``health_<reporter>_errors`` and ``_recover`` (``@<device>`` where a name repeats: a
    port's reporter beside its function's)."""
    reporters = link.get("health") or []
    names = [r.get("name") for r in reporters]
    out: dict[str, int] = {}
    for r in reporters:
        name = f"health_{r['name']}"
        if names.count(r["name"]) > 1:
            name += f"@{r['device']}"
        for key, field in (("errors", "error"), ("recover", "recover")):
            if isinstance(r.get(field), int):
                out[f"{name}_{key}"] = r[field]
    return out


# What diff calls a change of a cable reading: half the step the cable rules judge by
# (fabtop/core/thresholds.py), so a steady link's wander between reads stays out of the
# table (a healthy BER moves by a factor of two or three with temperature) and a move that
# eats half a margin is in it. A lane going dark or coming back is always a change.
_BER_STEP_DECADES = math.log10(DEFAULT_THRESHOLDS["ber_rise_factor"]) / 2
_RX_STEP_DB = DEFAULT_THRESHOLDS["optic_rx_margin_db"] / 2
_TEMP_STEP_C = DEFAULT_THRESHOLDS["module_temp_margin_c"] / 2


def cable_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[CableChange]:
    """What a cable's readings did from ``a`` to ``b`` on each link both read them: the
    pre-FEC BER (in decades), each lane's rx power (in dB), the module's temperature, where
    they moved by at least half the cable rules' step; the largest change first in a link."""
    base = {(h["name"], ln["id"]): ln for h in a.get("hosts", []) for ln in h.get("links", [])}
    out: list[CableChange] = []
    for h in b.get("hosts", []):
        for link in h.get("links", []):
            old = base.get((h["name"], link["id"]))
            if old is None:
                continue
            where = (h["name"], link["id"])
            ber_a, ber_b = (_get(x, "ber", "ber") for x in (old, link))
            if ber_a is not None and ber_b is not None and ber_a != ber_b:
                # a zero at either end (nothing corrected in a window) has no decades
                decades = math.log10(ber_b / ber_a) if ber_a > 0 and ber_b > 0 else None
                if decades is None or abs(decades) >= _BER_STEP_DECADES:
                    out.append(
                        CableChange(*where, "pre-FEC BER", ber_a, ber_b, decades, "", "decades")
                    )
            t_a, t_b = (_get(x, "module", "temperature_c") for x in (old, link))
            if t_a is not None and t_b is not None and abs(t_b - t_a) >= _TEMP_STEP_C:
                out.append(
                    CableChange(*where, "module temperature", t_a, t_b, t_b - t_a, "°C", "°C")
                )
            lanes_a = _rx_dbm(old)
            moved = []
            for lane, p_b in _rx_dbm(link).items():
                p_a = lanes_a.get(lane)
                if p_a is None or p_b is None or p_a == p_b:
                    continue
                ch = p_b - p_a if math.isfinite(p_a) and math.isfinite(p_b) else None
                if ch is None or abs(ch) >= _RX_STEP_DB:
                    moved.append(
                        CableChange(*where, f"rx power lane {lane}", p_a, p_b, ch, "dBm", "dB")
                    )
            # a lane gone dark (no change in dB) first, then the largest change
            out.extend(
                sorted(moved, key=lambda c: -math.inf if c.change is None else -abs(c.change))
            )
    return out


def _get(link: Mapping[str, Any], part: str, field: str) -> float | None:
    got = link.get(part)
    v = got.get(field) if isinstance(got, dict) else None
    return float(v) if isinstance(v, int | float) and _count(v) else None


def _rx_dbm(link: Mapping[str, Any]) -> dict[int, float | None]:
    """Each lane's rx power in dBm: -inf for a dark lane (0 mW), None not measured."""
    mod = link.get("module")
    lanes = mod.get("lanes", []) if isinstance(mod, dict) else []
    out: dict[int, float | None] = {}
    for ln in lanes:
        dark = _get(ln, "rx_power", "mw") == 0.0
        out[ln["lane"]] = -math.inf if dark else _get(ln, "rx_power", "dbm")
    return out


def elapsed_s(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """Seconds between the two points on the hosts' own clocks (the largest per host)."""
    ta = {h["name"]: h.get("clock_ns") for h in a.get("hosts", [])}
    spans = [
        (h["clock_ns"] - ta[h["name"]]) / 1e9
        for h in b.get("hosts", [])
        if h.get("clock_ns") and ta.get(h["name"])
    ]
    return max(spans) if spans else None


def load_point(spec: str) -> dict[str, Any]:
    """A snapshot document from a snapshot file or ``run.fabrec@T`` (T seconds in).

    Raises DiffError, one line naming the input (and the field, for a malformed file).
    """
    kind, doc = load_input(spec)
    if kind != "snapshot":
        raise DiffError(f"{spec}: a {kind}, not a snapshot")
    return doc


def load_input(spec: str) -> tuple[str, dict[str, Any]]:
    """What a diff compares: ``run.fabrec@T`` (a snapshot of the replayed state T seconds
    in) or a file (:func:`load_file`); its kind and document. Raises DiffError."""
    path, sep, at = spec.rpartition("@")
    if sep and path and Path(path).suffix == ".fabrec":
        t = parse_float(at)
        if t is None or t < 0:
            raise DiffError(f"{spec}: '@{at}' is not a number of seconds")
        from fabtop.run import snapshot
        from fabtop.run.record import RecordError
        from fabtop.run.replay import Replay

        try:
            rp = Replay(path)
        except RecordError as e:
            raise DiffError(str(e)) from None
        if t > rp.duration:
            # The replay would stop at the end and diff that instead: say so rather than
            # answer for a time the recording does not hold.
            why = f": {rp.torn}" if rp.torn else ""
            raise DiffError(f"{spec}: past the end: {path} holds {rp.duration:.1f} s{why}")
        try:
            rp.advance_to(t)
        except RecordError as e:
            raise DiffError(str(e)) from None
        return "snapshot", snapshot.build(rp.state, rp.config.interval)
    return load_file(spec)


def _formats() -> dict[str, tuple[str, ...]]:
    """The formats a diff reads, by kind, newest last (imported here: each costs a diff's
    start)."""
    from fabtop.fabtest.report import FORMAT
    from fabtop.run.snapshot import READ_SCHEMAS

    return {"snapshot": READ_SCHEMAS, "test report": (FORMAT,)}


def _known() -> str:
    return " or ".join(names[-1] for names in _formats().values())


def load_file(spec: str) -> tuple[str, dict[str, Any]]:
    """A snapshot (``fabtop.snapshot/2``, or ``/1``) or test report (``fabtop.test/1``) file, told
    apart by its own format field, checked and with every string cleaned: its kind
    (``snapshot``, ``test report``) and the document. Raises DiffError, one line naming
    the file (and the field)."""
    p = Path(spec)
    if p.suffix == ".fabrec":
        raise DiffError(f"{spec}: a recording needs a time: {spec}@SECONDS")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise DiffError(f"{spec}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise DiffError(f"{spec}: not JSON: not UTF-8 text") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise DiffError(f"{spec}: not a {_known()} file: nested too deeply") from None
    except json.JSONDecodeError as e:
        # A report cut short (a full disk, a copy stopped) fails at its very end: say so.
        end = not text[e.pos :].strip() or e.msg.startswith("Unterminated")
        cut = " (it ends early: cut short?)" if end else ""
        raise DiffError(f"{spec}: not JSON{cut}: {e}") from None
    except ValueError as e:
        raise DiffError(f"{spec}: not JSON: {e}") from None
    kind, said = _kind(doc)
    if kind is None:
        raise DiffError(f"{spec}: not a {_known()} file")
    read = _formats()[kind]
    if said not in read:
        raise DiffError(f"{spec}: a {said} file: this fabtop reads {' and '.join(read)}")
    from fabtop.run.snapshot import clean_tree

    try:
        doc = clean_tree(doc)
    except ValueError as e:
        raise DiffError(f"{spec}: not a {said} file: {e}") from None
    if kind == "test report":
        from fabtop.commands.testdiff import ReportError, check_report

        try:
            check_report(doc)
        except ReportError as e:
            raise DiffError(f"{spec}: {e}") from None
    else:
        check_doc(doc, spec)
    return kind, doc


def _kind(doc: Any) -> tuple[str | None, str]:
    """What the document says it is (a snapshot's ``schema``, a report's ``format``):
    its kind and that name with its version, which the caller checks."""
    if isinstance(doc, dict):
        for key, family, kind in (
            ("schema", "fabtop.snapshot/", "snapshot"),
            ("format", "fabtop.test/", "test report"),
        ):
            v = doc.get(key)
            if isinstance(v, str) and v.startswith(family):
                return kind, clean(v, 40)
    return None, ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_kind(v: Any) -> str:
    """What a bad value is, for an error line (never the value itself)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    return "a list" if isinstance(v, list) else "an object"


def _count(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and finite(v) is not None


def check_doc(doc: Mapping[str, Any], spec: str) -> None:
    """Every field a diff reads has the type ``fabtop snapshot`` writes; raises DiffError."""

    def bad(field: str, want: str, v: Any) -> DiffError:
        return DiffError(f"{spec}: field '{field}' must be {want}, not {json_kind(v)}")

    hosts = doc.get("hosts", [])
    if not isinstance(hosts, list):
        raise bad("hosts", "a list", hosts)
    for i, h in enumerate(hosts):
        w = f"hosts[{i}]"
        if not isinstance(h, dict):
            raise bad(w, "an object", h)
        if not isinstance(h.get("name"), str) or not h["name"]:
            raise bad(f"{w}.name", "a host name", h.get("name"))
        clock = h.get("clock_ns")
        if clock is not None and (not isinstance(clock, int) or isinstance(clock, bool)):
            raise bad(f"{w}.clock_ns", "an integer or null", clock)
        if h.get("error") is not None and not isinstance(h["error"], str):
            raise bad(f"{w}.error", "a string or null", h["error"])
        links = h.get("links", [])
        if not isinstance(links, list):
            raise bad(f"{w}.links", "a list", links)
        for j, link in enumerate(links):
            lw = f"{w}.links[{j}]"
            if not isinstance(link, dict):
                raise bad(lw, "an object", link)
            if not isinstance(link.get("id"), str) or not link["id"]:
                raise bad(f"{lw}.id", "a link id", link.get("id"))
            metrics = link.get("metrics", {})
            if not isinstance(metrics, dict):
                raise bad(f"{lw}.metrics", "an object", metrics)
            for name, v in metrics.items():
                mw = f"{lw}.metrics.{name}"
                if v is None or _count(v):
                    continue
                if not isinstance(v, dict):
                    raise bad(mw, "a number, null or an object of priorities", v)
                for prio, pv in v.items():
                    p = parse_uint(prio) if len(prio) == 1 else None  # ASCII only ("²")
                    if p is None or p >= 8:
                        raise DiffError(f"{spec}: field '{mw}': priority {prio!r} is not 0..7")
                    if pv is not None and not _count(pv):
                        raise bad(f"{mw}.{prio}", "a number or null", pv)
            _check_cable(link, lw, bad)


def _check_cable(
    link: Mapping[str, Any], lw: str, bad: Callable[[str, str, Any], DiffError]
) -> None:
    """The cable fields a diff reads (module, ber, health: snapshot/2) have their types."""

    def number(v: Any, field: str) -> None:
        if v is not None and not _count(v):
            raise bad(field, "a number or null", v)

    def obj(v: Any, field: str) -> dict[str, Any]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise bad(field, "an object or null", v)
        return v

    number(obj(link.get("ber"), f"{lw}.ber").get("ber"), f"{lw}.ber.ber")
    mod = obj(link.get("module"), f"{lw}.module")
    number(mod.get("temperature_c"), f"{lw}.module.temperature_c")
    lanes = mod.get("lanes", [])
    if not isinstance(lanes, list):
        raise bad(f"{lw}.module.lanes", "a list", lanes)
    for k, lane in enumerate(lanes):
        w = f"{lw}.module.lanes[{k}]"
        if not isinstance(lane, dict):
            raise bad(w, "an object", lane)
        n = lane.get("lane")
        if not isinstance(n, int) or isinstance(n, bool):
            raise bad(f"{w}.lane", "a lane number", n)
        rx = obj(lane.get("rx_power"), f"{w}.rx_power")
        for unit in ("mw", "dbm"):
            number(rx.get(unit), f"{w}.rx_power.{unit}")
    health = link.get("health") or []
    if not isinstance(health, list):
        raise bad(f"{lw}.health", "a list or null", health)
    for k, rep in enumerate(health):
        w = f"{lw}.health[{k}]"
        if not isinstance(rep, dict):
            raise bad(w, "an object", rep)
        for key in ("name", "device"):
            if not isinstance(rep.get(key), str):
                raise bad(f"{w}.{key}", "a string", rep.get(key))
        for key in ("error", "recover"):
            number(rep.get(key), f"{w}.{key}")


def _num(v: float) -> str:
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:g}"


def render_text(
    rows: list[DeltaRow],
    elapsed: float | None,
    top: int | None = None,
    missing: list[NoData] | None = None,
    compared: int = 1,
    cable: list[CableChange] | None = None,
) -> str:
    """A table like ``pfcstat -c``, across the cluster; hosts without data said first, the
    cable readings that changed last."""
    shown = rows[:top] if top else rows
    head = f"counter deltas over {elapsed:.1f} s" if elapsed else "counter deltas"
    lines = [m.line() for m in missing or []]
    if not shown:
        # "No counter changed" would claim what was never seen: say which side is empty.
        tail = "no counter changed"
        if lines:
            tail = "no counter changed on the other hosts" if compared else "nothing to compare"
        lines.append(f"{head}: {tail}")
    else:
        lines += [
            head,
            f"{'HOST':<14} {'LINK':<22} {'COUNTER':<26} {'PRIO':>4} {'DELTA':>12} {'PER S':>12}",
        ]
        for r in shown:
            prio = "" if r.priority is None else str(r.priority)
            rate = _num(r.rate_per_s) if r.rate_per_s is not None else "-"
            lines.append(
                f"{r.host:<14} {r.link:<22} {r.metric:<26} {prio:>4} {_num(r.delta):>12} {rate:>12}"
            )
        if top and len(rows) > top:
            lines.append(f"... {len(rows) - top} more (--top)")
    if cable:
        lines += [
            "cable readings, A → B",
            f"{'HOST':<14} {'LINK':<22} {'READING':<20} {'A':>11} {'B':>11} {'CHANGE':>14}",
        ]
        for c in cable:
            a, b, ch = c.cells()
            lines.append(f"{c.host:<14} {c.link:<22} {c.reading:<20} {a:>11} {b:>11} {ch:>14}")
    return "\n".join(lines) + "\n"


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def render_json(
    rows: list[DeltaRow],
    elapsed: float | None,
    top: int | None = None,
    missing: list[NoData] | None = None,
    cable: list[CableChange] | None = None,
) -> str:
    """The same rows as JSON (``no_data``: the hosts one side has nothing for; ``cable``:
    the cable readings that changed, a dark lane's power null)."""
    shown = rows[:top] if top else rows
    return (
        json.dumps(
            {
                "schema": "fabtop.diff/1",
                "elapsed_s": elapsed,
                "no_data": [
                    {"host": m.host, "side": m.side, "source": m.source, "why": m.why}
                    for m in missing or []
                ],
                "deltas": [
                    {
                        "host": r.host,
                        "link": r.link,
                        "metric": r.metric,
                        "priority": r.priority,
                        "category": r.category,
                        "delta": r.delta,
                        "rate_per_s": r.rate_per_s,
                    }
                    for r in shown
                ],
                "cable": [
                    {
                        "host": c.host,
                        "link": c.link,
                        "reading": c.reading,
                        "a": _finite(c.before),
                        "b": _finite(c.after),
                        "unit": c.unit,
                        "change": _finite(c.change),
                        "change_unit": c.change_unit,
                    }
                    for c in cable or []
                ],
            },
            indent=1,
        )
        + "\n"
    )


def _recording_point(spec: str) -> tuple[str, float] | None:
    path, sep, at = spec.rpartition("@")
    t = parse_float(at) if sep and path and Path(path).suffix == ".fabrec" else None
    return (path, t) if t is not None else None


def _check_order(a: str, b: str) -> None:
    """Two points of one recording: B must not come before A."""
    pa, pb = _recording_point(a), _recording_point(b)
    if pa and pb and Path(pa[0]).resolve() == Path(pb[0]).resolve() and pb[1] < pa[1]:
        raise DiffError(f"B ({b}) is before A ({a}): give the earlier point first")


def compare(a: str, b: str, as_json: bool = False, top: int | None = None) -> tuple[str, int]:
    """``fabtop diff``: text (or JSON) and exit status of two snapshots (or recording
    points; status 0) or two test reports (:mod:`fabtop.commands.testdiff`: 1 when a
    verdict got worse). Raises DiffError: an input that cannot be read, or one of each."""
    (ka, da), (kb, db) = load_input(a), load_input(b)
    if ka != kb:
        raise DiffError(f"{a} is a {ka} and {b} a {kb}: diff compares two of a kind")
    if ka == "test report":
        from fabtop.commands import testdiff

        d = testdiff.diff_reports(da, db)
        render = testdiff.render_json if as_json else testdiff.render_text
        return render(d, a, b, top), d.status
    return _snapshots(a, b, da, db, as_json, top), 0


def diff_command(a: str, b: str, as_json: bool = False, top: int | None = None) -> str:
    """Text (or JSON) of ``fabtop diff A B`` (:func:`compare`); raises DiffError."""
    return compare(a, b, as_json, top)[0]


def _snapshots(
    a: str, b: str, da: dict[str, Any], db: dict[str, Any], as_json: bool, top: int | None
) -> str:
    """The deltas from point ``a`` to point ``b``; raises DiffError."""
    _check_order(a, b)
    rows = diff_docs(da, db)
    el = elapsed_s(da, db)
    if el is not None and el < 0:
        # Every delta would read as a counter reset; the points were given the wrong way round.
        raise DiffError(f"B ({b}) is {-el:.1f} s before A ({a}): give the earlier point first")
    missing, compared = missing_data(da, db, a, b)
    cable = cable_changes(da, db)
    if as_json:
        return render_json(rows, el, top, missing, cable)
    return render_text(rows, el, top, missing, compared, cable)
