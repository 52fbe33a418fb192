"""Remote JSON bodies (inference servers' APIs), bounded before they are parsed.

A body over ``MAX_BYTES`` is refused with one line before ``json.loads`` sees it; one the
C parser cannot read (nested past the interpreter's recursion limit included) is refused
after. Within that, a value nested deeper than ``MAX_DEPTH`` costs that value alone: it
is cut (None in its place), said in one warning, and the rest is read. Numbers come out
bounded and finite (:func:`collectors.numbers.json_loads`). Never raises.
"""

from __future__ import annotations

from typing import Any, cast

from collectors.numbers import json_loads
from collectors.text import clean

# exo's state of a few Macs is tens of kB; a cluster downloading a model lists each file's
# progress. The transport already stops at 8 MiB; this is what is parsed.
MAX_BYTES = 4 * 1024 * 1024
# The deepest path read is instances/<id>/<Tag>/shardAssignments/runnerToShard/<id>/<Tag>/
# modelCard/...: about 10 levels; a model card or a download's file tree a few more.
MAX_DEPTH = 48
_CONTAINERS = (dict, list)


def prune(value: object, limit: int) -> int:
    """Cut the arrays and objects of ``value`` nested past ``limit`` levels (None in their
    place); return how many were cut. Level by level, without recursion: a hostile body
    cannot exhaust the stack here."""
    level: list[object] = [value] if isinstance(value, _CONTAINERS) else []
    depth, cut = 1, 0
    while level:
        nxt: list[object] = []
        for v in level:
            if isinstance(v, dict):
                deep = [k for k, x in v.items() if x.__class__ in _CONTAINERS]
                for k in deep:
                    if depth < limit:
                        nxt.append(v[k])
                    else:
                        v[k] = None
                        cut += 1
            else:
                items = cast("list[object]", v)
                for i, x in enumerate(items):
                    if x.__class__ in _CONTAINERS:
                        if depth < limit:
                            nxt.append(x)
                        else:
                            items[i] = None
                            cut += 1
        level = nxt
        depth += 1
    return cut


def bounded_json(body: str, what: str, warnings: list[str] | None = None) -> tuple[Any, str | None]:
    """The parsed JSON of ``body``, or (None, why) when it is too big or not JSON.

    Values nested past ``MAX_DEPTH`` are cut, said in a line added to ``warnings``.
    """
    if len(body) > MAX_BYTES:
        return None, f"{what}: body of {len(body)} bytes over the {MAX_BYTES}-byte limit"
    try:
        # The C parser itself stops at the interpreter's recursion limit (a ValueError).
        value = json_loads(body)
    except ValueError as e:
        return None, clean(f"{what}: not JSON ({e})", 200)
    cut = prune(value, MAX_DEPTH)
    if cut and warnings is not None:
        warnings.append(f"{what}: {cut} value(s) nested deeper than {MAX_DEPTH} levels left out")
    return value, None
