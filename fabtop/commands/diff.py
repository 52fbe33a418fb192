"""``fabtop diff A B``: counter deltas between two points, most significant first.

``A``/``B`` are snapshot files (``fabtop.snapshot/1``) or recording points
(``run.fabrec@T``, the replayed state ``T`` seconds into the recording). The delta rule
itself (missing or reset: no delta) is :mod:`fabtop.core.deltas`, shared with the
dashboard's ``r`` baseline.

A snapshot file is checked before it is used: every field the diff reads has its type
(one line naming the file and the field otherwise, never a traceback), and every string
in it goes through ``collectors.text.clean``, so a crafted host or counter name cannot
reach the terminal as an escape sequence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.numbers import finite, parse_float, parse_uint
from collectors.text import clean
from collectors.vocabulary import Metric, by_category
from fabtop.core.deltas import link_deltas

CATEGORIES: tuple[tuple[str, tuple[Metric, ...]], ...] = by_category()
# Keyed by plain names: the metric names come back from snapshot JSON as strings.
_RANK: dict[str, int] = {m: i for i, (_, members) in enumerate(CATEGORIES) for m in members}
_CATEGORY: dict[str, str] = {m: cat for cat, members in CATEGORIES for m in members}


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
            _RANK.get(self.metric, len(CATEGORIES)),
            -self.delta,
            self.host,
            self.link,
            self.metric,
            -1 if self.priority is None else self.priority,
        )


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
            for name, d in link_deltas(link.get("metrics", {}), bl.get("metrics", {})).items():
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
                            _CATEGORY.get(name, "other"),
                        )
                    )
    return sorted(rows, key=DeltaRow.key)


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


def _formats() -> dict[str, str]:
    """The formats a diff reads, by kind (imported here: each costs a diff's start)."""
    from fabtop.fabtest.report import FORMAT
    from fabtop.run.snapshot import SCHEMA

    return {"snapshot": SCHEMA, "test report": FORMAT}


def _known() -> str:
    return " or ".join(_formats().values())


def load_file(spec: str) -> tuple[str, dict[str, Any]]:
    """A snapshot (``fabtop.snapshot/1``) or test report (``fabtop.test/1``) file, told
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
    want = _formats()[kind]
    if said != want:
        raise DiffError(f"{spec}: a {said} file: this fabtop reads {want}")
    from fabtop.run.snapshot import clean_tree

    try:
        doc = clean_tree(doc)
    except ValueError as e:
        raise DiffError(f"{spec}: not a {want} file: {e}") from None
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
) -> str:
    """A table like ``pfcstat -c``, across the cluster; hosts without data said first."""
    shown = rows[:top] if top else rows
    head = f"counter deltas over {elapsed:.1f} s" if elapsed else "counter deltas"
    notes = [m.line() for m in missing or []]
    if not shown:
        if not notes:
            return f"{head}: no counter changed\n"
        # "No counter changed" would claim what was never seen: say which side is empty.
        tail = "no counter changed on the other hosts" if compared else "nothing to compare"
        return "\n".join([*notes, f"{head}: {tail}"]) + "\n"
    lines = [
        *notes,
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
    return "\n".join(lines) + "\n"


def render_json(
    rows: list[DeltaRow],
    elapsed: float | None,
    top: int | None = None,
    missing: list[NoData] | None = None,
) -> str:
    """The same rows as JSON (``no_data``: the hosts one side has nothing for)."""
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
    if as_json:
        return render_json(rows, el, top, missing)
    return render_text(rows, el, top, missing, compared)
