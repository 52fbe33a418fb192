"""Remote JSON bodies (inference servers' APIs), bounded before they are parsed.

A body over ``MAX_BYTES`` is refused with one line before ``json.loads`` sees it, and one
nested deeper than ``MAX_DEPTH`` after (the C parser is linear and stops by itself at the
interpreter's recursion limit); numbers come out bounded and finite
(:func:`collectors.numbers.json_loads`). Never raises.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def json_depth(value: object, limit: int) -> int:
    """How deep ``value``'s arrays and objects nest, counting no further than ``limit + 1``.

    Level by level, without recursion (a hostile body cannot exhaust the stack here),
    stopping at the first level past ``limit``.
    """
    level: list[object] = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        nxt: list[object] = []
        for v in level:
            items: Iterable[object] = v.values() if isinstance(v, dict) else cast("list[object]", v)
            nxt += [x for x in items if x.__class__ in _CONTAINERS]
        level = nxt
    return depth


def bounded_json(body: str, what: str) -> tuple[Any, str | None]:
    """The parsed JSON of ``body``, or (None, why) when it is too big, too deep or not JSON."""
    if len(body) > MAX_BYTES:
        return None, f"{what}: body of {len(body)} bytes over the {MAX_BYTES}-byte limit"
    try:
        # The C parser itself stops at the interpreter's recursion limit (a ValueError).
        value = json_loads(body)
    except ValueError as e:
        return None, clean(f"{what}: not JSON ({e})", 200)
    if json_depth(value, MAX_DEPTH) > MAX_DEPTH:
        return None, f"{what}: JSON nested deeper than {MAX_DEPTH} levels"
    return value, None


