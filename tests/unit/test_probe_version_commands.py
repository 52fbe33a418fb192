"""The software-version commands (issue 15) are one fact in two probes: probe.sh's
FAB_NCCL and FAB_DPKGF and probe_fast.py's NCCL_SCAN and DPKG_FORMAT stay byte for byte
equal (the two probes must give the same samples from the same node)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

COLLECTORS = Path(__file__).resolve().parents[2] / "collectors"


def _sh_value(name: str) -> str:
    text = (COLLECTORS / "probe.sh").read_text()
    m = re.search(rf"\n{name}='([^']*)'\n", text)
    assert m is not None, name
    return m.group(1)


def _py_value(name: str) -> str:
    tree = ast.parse((COLLECTORS / "probe_fast.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError(name)


@pytest.mark.parametrize(("sh", "py"), [("FAB_NCCL", "NCCL_SCAN"), ("FAB_DPKGF", "DPKG_FORMAT")])
def test_both_probes_run_the_same_version_commands(sh: str, py: str) -> None:
    assert _sh_value(sh) == _py_value(py)


def test_node_paths_are_expanded_only_inside_double_quotes() -> None:
    scan = _sh_value("FAB_NCCL")
    # Every expansion of $p and $d (a path from the node) is quoted; the only unquoted
    # one is `case $p in`, which the shell never splits nor globs.
    for m in re.finditer(r"\$\{?[pd]\b", scan):
        before = scan[: m.start()]
        quoted = before.count('"') % 2 == 1
        assert quoted or before.endswith("case "), scan[m.start() - 20 : m.end() + 10]
