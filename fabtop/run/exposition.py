"""A shard's scrape: the registry's families read at once, then written in the Prometheus
text format (0.0.4).

prometheus-client's ``generate_latest`` checks and escapes every label name of every
sample (a regular expression each) and formats each line through several ``format``
calls: most of 1.7 s of CPU for the 137 k series of a 128-host shard. :func:`render`
writes the same exposition from the same families with the per-family work done once a
family (metric and label names checked and escaped, one line template per label set)
and label values escaped once a scrape (a host's name is in a thousand series). The
bytes are generate_latest's (labels sorted, values in its number format), so what
Prometheus reads is the same: tests/unit/test_exposition.py compares both.

Nothing is kept between scrapes: each call starts from the families it is given.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import escape_label_name, escape_metric_name
from prometheus_client.registry import Collector

from fabtop.core.cpu import gc_paused

# prometheus-client's OpenMetrics types as the 0.0.4 format names them (as generate_latest
# munges them); a counter's and an info's samples carry the suffix in their names.
# (fabtop's families are gauges and counters without ``created``: no OpenMetrics-only
# _created/_gsum/_gcount samples, which generate_latest moves to families of their own.)
_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_SUFFIX = {"counter": "_total", "info": "_info"}
_INF, _NINF = float("inf"), float("-inf")


def _escape(v: str) -> str:
    """A label value inside its quotes (the format escapes these three, nothing else)."""
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    """A sample value as prometheus-client writes it (Go's ``%g``-like form above 1e6)."""
    x = float(v)
    if x - x != 0.0:  # not finite
        return "NaN" if x != x else "+Inf" if x == _INF else "-Inf"
    s = repr(x)
    dot = s.find(".")
    if x > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


def families_of(registry: Collector) -> list[Metric]:
    """Every family of ``registry``, with Python's cyclic garbage collector paused.

    A scrape builds a sample object per series (137 k for a 128-host shard) and frees
    them all once written; their allocation made the collector run some 600 times and
    walk the whole heap (the state and its history) twice: half the collection's CPU.
    """
    with gc_paused():
        return list(registry.collect())


def render(families: Iterable[Metric]) -> bytes:
    """The families' exposition, UTF-8: HELP and TYPE lines, then one line a sample."""
    out: list[str] = []
    values: dict[str, str] = {}  # label value -> escaped, for this scrape only
    for fam in families:
        mtype = fam.type
        name = escape_metric_name(fam.name + _SUFFIX.get(mtype, ""))
        doc = fam.documentation.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {_TYPES.get(mtype, mtype)}\n")
        # (sample name, label names in the sample's order) -> the line's head up to its
        # value ("name{a=\"%s\",b=\"%s\"} ", label names sorted) and the names in that order
        templates: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]] = {}
        for s in fam.samples:
            labels = s.labels
            key = (s.name, tuple(labels))
            t = templates.get(key)
            if t is None:
                keys = tuple(sorted(labels))
                pairs = ",".join(f'{escape_label_name(k)}="%s"' for k in keys)
                sname = escape_metric_name(s.name)  # [a-zA-Z0-9_:] only: no "%"
                t = templates[key] = (f"{sname}{{{pairs}}} " if pairs else f"{sname} ", keys)
            head, keys = t
            if keys:
                esc = []
                for k in keys:
                    v = labels[k]
                    e = values.get(v)
                    if e is None:
                        e = values[v] = _escape(v)
                    esc.append(e)
                head %= tuple(esc)
            if s.timestamp is not None:
                out.append(f"{head}{_number(s.value)} {int(float(s.timestamp) * 1000):d}\n")
            else:
                out.append(f"{head}{_number(s.value)}\n")
    return "".join(out).encode("utf-8")
