"""One vocabulary from rule to pixel: metric names are spelled in collectors/vocabulary.py only.

Two proofs. The source scan finds no string constant outside the declarations that spells
a normalized metric, its ``_per_s`` rate, a derived rate or an inference rate, so nothing
names a metric on its own. The rename test renames one member in a copy of the tree and
shows that the parsers, the rate engine, the exporter and the link rows stop importing,
each because of its own code: a renamed metric cannot silently leave one of them behind.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.vocabulary import Derived, InferenceRate, Metric

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("collectors", "fabtop", "tui")
VOCABULARY = Path("collectors/vocabulary.py")

NAMES: frozenset[str] = frozenset(
    str(n) for n in (*Metric, *(m.per_s for m in Metric), *Derived, *InferenceRate)
)

# The simulator writes raw tool output (``ethtool -S``, sysfs files) as the drivers spell
# it, and some raw names are also normalized ones (netdev's ``statistics/rx_bytes``).
# The simulator writes drivers' raw names; the fast probe runs on the node (it cannot
# import the vocabulary) and spells the kernel's rtnl_link_stats64 field names.
RAW_PACKAGES = ("fabtop/sim/", "collectors/probe_fast.py")
# normalize.py's tables read raw names through ``_s("raw", ...)``: those strings are the
# drivers' names, some of which (bnxt_en's and netdev's ``rx_bytes``) spell a normalized one.
# iperf3's parser reads its JSON keys through ``_i("retransmits")`` and the like: iperf3's
# names, one of which spells a normalized metric.
RAW_NAME_CALLS = {Path("collectors/normalize.py"): "_s", Path("collectors/parsers/iperf3.py"): "_i"}


def _sources() -> list[Path]:
    files = sorted(p.relative_to(REPO) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))
    return [p for p in files if p != VOCABULARY and not p.as_posix().startswith(RAW_PACKAGES)]


def _raw_name_constants(tree: ast.AST, func: str) -> set[int]:
    """ids of the string arguments of ``func(...)`` calls: raw driver names."""
    return {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func
        for arg in node.args
        if isinstance(arg, ast.Constant)
    }


def spelled_names(source: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of every string constant in ``source`` that spells a vocabulary name."""
    tree = ast.parse(source)
    func = RAW_NAME_CALLS.get(path)
    raw = _raw_name_constants(tree, func) if func else set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in NAMES
            and id(node) not in raw
        ):
            yield node.lineno, node.value


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.as_posix())
def test_no_module_spells_a_metric_name(path: Path) -> None:
    found = sorted(spelled_names((REPO / path).read_text(encoding="utf-8"), path))
    assert not found, f"{path} names metrics by string, use collectors.vocabulary: " + ", ".join(
        f"line {line} {name!r}" for line, name in found
    )


def test_the_scan_sees_what_it_must_and_exempts_only_raw_names() -> None:
    normalize = Path("collectors/normalize.py")
    assert list(spelled_names('x = {"rx_pause_us": 1}\n', Path("tui/x.py"))) == [(1, "rx_pause_us")]
    assert list(spelled_names('r.get("rdma_share")\n', normalize)) == [(1, "rdma_share")]
    assert not list(spelled_names('T = {Metric.RX_BYTES: (_s("rx_bytes"),)}\n', normalize))
    assert list(spelled_names('_s("rx_bytes")\n', Path("tui/x.py"))) == [(1, "rx_bytes")]
    assert {
        "rx_bytes",
        "rx_discards_per_s",
        "rx_bps",
        "tx_pause_time_ratio",
        "generated_tokens_per_s",
        "ttft_p99_s",
    } <= NAMES


# --- renaming a member breaks every user at import time ------------------------------

# Each module and a member it names at module level (its tables and column specs).
USERS: tuple[tuple[str, str], ...] = (
    ("collectors.normalize", "RX_PAUSE_US"),
    ("fabtop.core.rates", "RX_PAUSE_US"),
    ("fabtop.run.export", "RX_BYTES"),
    ("tui.rows.links", "RX_DISCARDS"),
)

# Imports ``target`` from the copy at ``root``; then, if given a renamed vocabulary,
# swaps it in and imports ``target`` once more, its dependencies still the originals:
# an AttributeError now comes from ``target``'s own code, not from something it imports.
PROBE = r"""
import importlib, importlib.util, json, sys, traceback
root, target, renamed = sys.argv[1:4]
sys.path.insert(0, root)
out = {"file": importlib.import_module(target).__file__}
if renamed:
    spec = importlib.util.spec_from_file_location("collectors.vocabulary", renamed)
    vocab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vocab)
    sys.modules["collectors.vocabulary"] = vocab
    sys.modules["collectors"].vocabulary = vocab
    del sys.modules[target]
    try:
        importlib.import_module(target)
    except AttributeError as e:
        own = [f.filename for f in traceback.extract_tb(e.__traceback__)
               if f.filename.startswith(root)]
        out["error"], out["raised_in"] = str(e), own[-1] if own else None
print(json.dumps(out))
"""


def _copy_tree(dest: Path) -> Path:
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _renamed(source: str, old: str) -> str:
    new_source, n = re.subn(rf"^(\s+){old} = ", rf"\g<1>{old}_RENAMED = ", source, flags=re.M)
    assert n == 1, f"{old} is not declared once in vocabulary.py"
    return new_source


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy_tree(tmp_path_factory.mktemp("tree"))


def test_the_unmodified_copy_imports_every_user(copy_root: Path) -> None:
    for target, _ in USERS:
        r = _python("-c", PROBE, str(copy_root), target, "")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["file"].startswith(str(copy_root))  # the copy, not REPO


@pytest.mark.parametrize(("target", "member"), USERS, ids=[t for t, _ in USERS])
def test_renaming_a_member_breaks_its_users_at_import(
    target: str, member: str, copy_root: Path, tmp_path: Path
) -> None:
    source = (copy_root / VOCABULARY).read_text(encoding="utf-8")
    renamed = tmp_path / "vocabulary.py"
    renamed.write_text(_renamed(source, member), encoding="utf-8")

    # The module's own tables name the member: it alone fails, its imports unchanged.
    r = _python("-c", PROBE, str(copy_root), target, str(renamed))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out.get("error") == member, out
    assert out["raised_in"] == str(copy_root / (target.replace(".", "/") + ".py")), out

    # And plainly: a tree whose vocabulary was renamed does not import the module.
    tree = _copy_tree(tmp_path / "renamed")
    (tree / VOCABULARY).write_text(renamed.read_text(encoding="utf-8"), encoding="utf-8")
    r = _python("-c", f"import sys; sys.path.insert(0, {str(tree)!r}); import {target}")
    assert r.returncode != 0
    assert f"AttributeError: {member}" in r.stderr, r.stderr
