"""Warning lines are bounded where a parser makes them (collectors/warning_lines.py).

The type keeps its first ``limit`` lines and, where asked, one line saying the rest were
left out. The class test feeds every parser thousands of lines (or JSON entries) it
cannot use, built from its own captures, and checks that no warning list it returns
grows with them: the old nvidia-smi, amd-smi, iptables and nft readers made one line per
bad row, entry or rule, with no bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.parsers.nftables import parse_nft_json
from collectors.warning_lines import SUPPRESSED, WarningLines
from tests.unit.remote_inputs import PARSERS, call, captures, is_json

# The largest bound a parser keeps (50) plus its last line and the few one-off lines a
# parser says beside the bounded ones; far below the thousands of rows fed.
MOST = 60
ROWS = 2000
FIREWALL = Path(__file__).resolve().parents[1] / "fixtures" / "firewall"


def test_keeps_the_first_lines_up_to_the_limit() -> None:
    w = WarningLines(3)
    for i in range(10):
        w.add(f"line {i}")
    assert w == ["line 0", "line 1", "line 2"]


def test_says_once_that_more_were_left_out() -> None:
    w = WarningLines(2, SUPPRESSED)
    for i in range(10):
        w.add(f"line {i}")
    assert w == ["line 0", "line 1", SUPPRESSED]


def test_width_cleans_and_cuts_each_line() -> None:
    w = WarningLines(5, width=8)
    w.add("bad \x1b[31mred\x1b[0m value")
    assert w == ["bad red…"]


def _bad_rows(text: str) -> Iterator[tuple[str, str]]:
    """``text`` made of thousands of rows a parser cannot use (label, text)."""
    yield "garbage lines", "garbage line !\n" * ROWS
    if is_json(text):
        doc = json.loads(text)
        if isinstance(doc, list):
            yield "JSON list of non-objects", json.dumps([*doc, *[1] * ROWS])
            yield "JSON entries repeated", json.dumps(doc * (ROWS // max(len(doc), 1)))
        elif isinstance(doc, dict):
            many = {f"k{i}": 1 for i in range(ROWS)}
            yield "JSON object of bad keys", json.dumps({**doc, **many})
            lists = {k: [*v, *[1] * ROWS] for k, v in doc.items() if isinstance(v, list)}
            if lists:
                yield "JSON lists of non-objects", json.dumps({**doc, **lists})
                lists = {k: v * (ROWS // max(len(v), 1)) for k, v in lists.items()}
                yield "JSON list entries repeated", json.dumps({**doc, **lists})
        return
    lines = [line for line in text.splitlines() if line.strip()]
    repeat = max(1, ROWS // max(len(lines), 1))
    yield "each line damaged", "\n".join(f"{line} zz!" for line in lines * repeat)
    yield "each digit a letter", "\n".join(line.replace("1", "q") for line in lines * repeat)
    yield "long lines", "\n".join(f"{line} {'x' * 5000}" for line in (lines * ROWS)[:200])
    if len(lines) > 1:  # a header, then one data row over and over
        yield "header, one row repeated", "\n".join([lines[0], *[f"{lines[1]}, x"] * ROWS])


def _warning_lists(result: Any) -> Iterator[list[str]]:
    if isinstance(result, tuple):
        for part in result:
            yield from _warning_lists(part)
    elif isinstance(result, list) and all(isinstance(x, str) for x in result):
        yield result
    elif isinstance(getattr(result, "warnings", None), list):
        yield result.warnings


@pytest.mark.parametrize(("name", "fn"), PARSERS, ids=[n for n, _ in PARSERS])
def test_warnings_do_not_grow_with_bad_rows(name: str, fn: Callable[..., Any]) -> None:
    for text in captures(name)[:2]:
        for label, bad in _bad_rows(text):
            for warnings in _warning_lists(call(fn, bad)):
                assert len(warnings) <= MOST, f"{name}, {label}: {len(warnings)} warning lines"


def test_nft_ingress_chains_without_device_say_so_boundedly() -> None:
    # custom.json's ingress chain has no "dev" (nft 1.0.6): each copy of it is one line
    doc = json.loads((FIREWALL / "custom.json").read_text())
    doc["nftables"] = doc["nftables"] * 500  # 6,000 rules: under the bound that skips all
    rs, warnings = parse_nft_json(json.dumps(doc))
    assert rs is not None and len(warnings) <= MOST
    assert warnings[0].endswith("ingress chain without its device in nft's JSON, not evaluated")
    assert warnings[-1] == SUPPRESSED
