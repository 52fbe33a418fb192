"""``fabtop diff A B``: counter deltas between two points, most significant first.

``A``/``B`` are snapshot files (``fabtop.snapshot/1``) or recording points
(``run.fabrec@T``, the replayed state ``T`` seconds into the recording). The delta rule
itself (missing or reset: no delta) is :mod:`fabtop.core.deltas`, shared with the
dashboard's ``r`` baseline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
