"""Imports point one way: ``tui -> fabtop -> collectors`` (DESIGN.md §1, STYLE.md rule 1).

Read from the source, not from what happens to be imported at run time, so a
function-local import, one under ``TYPE_CHECKING``, ``importlib.import_module("...")`` and
``runpy.run_module("...")`` all count, with no exception: the console script's entry is
``tui.main``, above both. Inside ``fabtop/`` the rooms are layered too: the commands over
the running machinery (and ``fabtop test`` over it) over the configuration, the simulator
and the pure core.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("collectors", "fabtop", "tui")

# module prefix -> prefixes it may import from the three packages (first match wins)
ALLOWED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("collectors", ("collectors",)),
    ("fabtop.core", ("fabtop.core", "collectors")),
    ("fabtop.sim", ("fabtop.sim", "collectors")),
    ("fabtop.config", ("fabtop.config", "fabtop.core", "collectors")),
    ("fabtop.run", ("fabtop.run", "fabtop.config", "fabtop.sim", "fabtop.core", "collectors")),
    # fabtop test: the plans and verdicts over the running machinery (the runner reads the
    # monitoring session's state and the snapshot's finding entries).
    (
        "fabtop.fabtest",
        ("fabtop.fabtest", "fabtop.run", "fabtop.config", "fabtop.core", "collectors"),
    ),
    ("fabtop.commands", ("fabtop", "collectors")),
    ("fabtop", ("fabtop", "collectors")),
    ("tui", ("tui", "fabtop", "collectors")),
)
# Third-party or standard modules a layer must not import at all.
FORBIDDEN_EXTERNAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("collectors", ("textual",)),
    ("fabtop.core", ("textual", "asyncio", "asyncssh", "subprocess", "socket")),
    ("fabtop", ("textual",)),
)


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(source: str, module: str) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, with its line: top-level, local, lazy by name."""
    package = module if module.endswith("__init__") else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - node.level + 1]
                base = ".".join([*up, base]) if base else ".".join(up)
            yield node.lineno, base
            for alias in node.names:  # ``from fabtop import snapshot`` names a module
                yield node.lineno, f"{base}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and _called(node.func) in ("import_module", "run_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # "pkg.module:Class" strings that a registry imports later
            head = node.value.partition(":")[0]
            if ":" in node.value and head.split(".")[0] in PACKAGES and " " not in head:
                yield node.lineno, head


def _called(func: ast.expr) -> str:
    """The name a call calls: ``importlib.import_module`` and ``import_module`` alike."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(module: str, source: str) -> list[str]:
    """Imports of ``module`` that point the wrong way."""
    allowed = next(ok for prefix, ok in ALLOWED if _under(module, prefix))
    banned = [b for prefix, bs in FORBIDDEN_EXTERNAL if _under(module, prefix) for b in bs]
    out = []
    for line, target in imports_of(source, module):
        top = target.split(".")[0]
        if top in PACKAGES and not any(_under(target, ok) for ok in allowed):
            # ``from fabtop import __version__`` in fabtop: its own package, not a room
            dunder = target.count(".") == 1 and target.split(".")[1].startswith("__")
            if top == module.split(".")[0] and (target == top or dunder):
                continue
            out.append(f"{module}:{line} imports {target}")
        if any(_under(target, b) for b in banned):
            out.append(f"{module}:{line} imports {target}")
    return out


def all_modules() -> Iterator[tuple[str, Path]]:
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield module_name(path), path


def test_every_import_points_down() -> None:
    found = [v for mod, path in all_modules() for v in violations(mod, path.read_text())]
    assert not found, "imports pointing the wrong way:\n" + "\n".join(found)


def test_the_check_sees_every_kind_of_upward_import() -> None:
    # The same checker, on sources that import upward in each way it must notice.
    local = "def f():\n    from fabtop.core.state import FabricState\n"
    assert violations("collectors.assemble", local) == [
        "collectors.assemble:2 imports fabtop.core.state",
        "collectors.assemble:2 imports fabtop.core.state.FabricState",
    ]
    lazy = "import importlib\nm = importlib.import_module('tui.app')\n"
    assert violations("fabtop.run.session", lazy) == ["fabtop.run.session:2 imports tui.app"]
    registry = "SCREENS = {'1': 'tui.screens.overview:OverviewScreen'}\n"
    assert violations("fabtop.core.rules", registry)
    sideways = "from fabtop.run.session import Session\n"
    assert violations("fabtop.core.state", sideways)
    assert violations("fabtop.sim.host", "from fabtop.core import state\n")
    assert violations("fabtop.core.rates", "import asyncio\n")
    assert violations("fabtop.run.session", "from textual.app import App\n")
    relative = "from ..run import session\n"
    assert violations("fabtop.core.state", relative)
    run = "import runpy\nrunpy.run_module('tui', run_name='__main__')\n"
    assert violations("fabtop.__main__", run) == ["fabtop.__main__:2 imports tui"]
    assert violations("fabtop.__main__", "__import__('tui.main')\n")
    assert violations("collectors.text", "import fabtop\n")  # a package above, bare
    assert violations("fabtop.run.session", "from tui import __main__\n")
    # no exception for the command line: it hands the dashboard up to the entry, tui.main
    assert violations("fabtop.commands.cli", "def main():\n    from tui.app import run_dashboard\n")
    # and what is allowed stays quiet
    assert not violations("tui.main", "from fabtop.commands import cli\n")
    assert not violations("tui.app", "from fabtop.run.session import Session\n")
    assert not violations("fabtop.run.session", "from fabtop.core.state import FabricState\n")


def test_every_module_is_under_a_layer() -> None:
    for mod, _ in all_modules():
        assert any(_under(mod, prefix) for prefix, _ in ALLOWED), mod
