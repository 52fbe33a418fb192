"""Counter deltas between two points in time: ``fabtop diff A B`` and the dashboard's ``r``.

One delta rule for both: a counter missing at either end has no delta (None, never 0),
and a counter that went backwards was reset in between, so it has no honest delta
either. ``A``/``B`` are snapshot files (``fabtop.snapshot/1``) or recording points
(``run.fabrec@T``, the replayed state ``T`` seconds into the recording).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.samples import LinkSample
from collectors.vocabulary import by_category

CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = by_category()
_RANK = {name: i for i, (_, names) in enumerate(CATEGORIES) for name in names}
_CATEGORY = {name: cat for cat, names in CATEGORIES for name in names}


class DiffError(ValueError):
    """A diff input could not be read; one line naming it."""


def value_delta(cur: int | float | None, base: int | float | None) -> float | None:
    """``cur - base``, or None when either is missing or the counter was reset in between."""
    if cur is None or base is None or cur < base:
        return None
    return float(cur - base)


def metric_delta(cur: Any, base: Any) -> float | dict[int, float] | None:
    """Delta of one normalized metric: a number, or per priority (priorities in both ends)."""
    if isinstance(cur, Mapping) and isinstance(base, Mapping):
        b = {int(k): v for k, v in base.items()}
        out = {}
        for k, v in cur.items():
            d = value_delta(v, b.get(int(k)))
            if d is not None:
                out[int(k)] = d
        return out or None
    if isinstance(cur, int | float) and isinstance(base, int | float):
        return value_delta(cur, base)
    return None


def _total(v: Any) -> float | None:
    if isinstance(v, Mapping):
        return float(sum(v.values())) if v else None
    return float(v) if isinstance(v, int | float) else None


def counts_since(cur: LinkSample, base: LinkSample | None, names: Iterable[str]) -> float | None:
    """Sum of the deltas of ``names`` since ``base`` (the 'r' baseline); None on a reset."""
    if base is None:
        return None
    out, seen = 0.0, False
    for n in names:
        c, b = _total(cur.metrics.get(n)), _total(base.metrics.get(n))
        if c is None or b is None:
            continue
        if c < b:
            return None  # reset since the baseline: no honest delta
        out += c - b
        seen = True
    return out if seen else None


def link_deltas(cur: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """Every normalized metric's delta between two metric maps (missing or reset left out)."""
    out = {}
    for name, v in cur.items():
        d = metric_delta(v, base.get(name))
        if d is not None:
            out[name] = d
    return out


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
        return (_RANK.get(self.metric, len(CATEGORIES)), -self.delta, self.host, self.link,
                self.metric, -1 if self.priority is None else self.priority)


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
                    rows.append(DeltaRow(h["name"], link["id"], name, prio, val,
                                         val / dt if dt else None,
                                         _CATEGORY.get(name, "other")))
    return sorted(rows, key=DeltaRow.key)


def elapsed_s(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """Seconds between the two points on the hosts' own clocks (the largest per host)."""
    ta = {h["name"]: h.get("clock_ns") for h in a.get("hosts", [])}
    spans = [(h["clock_ns"] - ta[h["name"]]) / 1e9 for h in b.get("hosts", [])
             if h.get("clock_ns") and ta.get(h["name"])]
    return max(spans) if spans else None


def load_point(spec: str) -> dict[str, Any]:
    """A snapshot document from a snapshot file or ``run.fabrec@T`` (T seconds in)."""
    path, sep, at = spec.rpartition("@")
    if sep and path and Path(path).suffix == ".fabrec":
        try:
            t = float(at)
        except ValueError:
            raise DiffError(f"{spec}: '@{at}' is not a number of seconds") from None
        from fabtop.run import snapshot
        from fabtop.run.record import RecordError
        from fabtop.run.replay import Replay

        try:
            rp = Replay(path)
        except RecordError as e:
            raise DiffError(str(e)) from None
        rp.advance_to(t)
        return snapshot.build(rp.state, rp.config.interval)
    p = Path(spec)
    if p.suffix == ".fabrec":
        raise DiffError(f"{spec}: a recording needs a time: {spec}@SECONDS")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise DiffError(f"{spec}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise DiffError(f"{spec}: not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != "fabtop.snapshot/1":
        raise DiffError(f"{spec}: not a fabtop.snapshot/1 file")
    return doc


def _num(v: float) -> str:
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:g}"


def render_text(rows: list[DeltaRow], elapsed: float | None, top: int | None = None) -> str:
    """A table like ``pfcstat -c``, across the cluster."""
    shown = rows[:top] if top else rows
    head = f"counter deltas over {elapsed:.1f} s" if elapsed else "counter deltas"
    if not shown:
        return f"{head}: no counter changed\n"
    lines = [head, f"{'HOST':<14} {'LINK':<22} {'COUNTER':<26} {'PRIO':>4} "
                   f"{'DELTA':>12} {'PER S':>12}"]
    for r in shown:
        prio = "" if r.priority is None else str(r.priority)
        rate = _num(r.rate_per_s) if r.rate_per_s is not None else "-"
        lines.append(f"{r.host:<14} {r.link:<22} {r.metric:<26} {prio:>4} "
                     f"{_num(r.delta):>12} {rate:>12}")
    if top and len(rows) > top:
        lines.append(f"... {len(rows) - top} more (--top)")
    return "\n".join(lines) + "\n"


def render_json(rows: list[DeltaRow], elapsed: float | None, top: int | None = None) -> str:
    """The same rows as JSON."""
    shown = rows[:top] if top else rows
    return json.dumps({
        "schema": "fabtop.diff/1",
        "elapsed_s": elapsed,
        "deltas": [
            {"host": r.host, "link": r.link, "metric": r.metric, "priority": r.priority,
             "category": r.category, "delta": r.delta, "rate_per_s": r.rate_per_s}
            for r in shown
        ],
    }, indent=1) + "\n"


def diff_command(a: str, b: str, as_json: bool = False, top: int | None = None) -> str:
    """Text (or JSON) of the deltas from point ``a`` to point ``b``; raises DiffError."""
    da, db = load_point(a), load_point(b)
    rows = diff_docs(da, db)
    el = elapsed_s(da, db)
    return render_json(rows, el, top) if as_json else render_text(rows, el, top)
