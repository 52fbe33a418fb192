"""The core and the collectors never import Textual (STYLE.md rule 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
import importlib, pkgutil, sys
failed = []
for pkg in ("fabtop", "collectors"):
    mod = importlib.import_module(pkg)
    for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
        try:
            importlib.import_module(info.name)
        except Exception as e:
            failed.append(f"{info.name}: {e!r}")
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print("FAILED", *failed, sep="\\n") if failed else None
print("TEXTUAL", *loaded[:5])
"""


def test_core_and_collectors_do_not_import_textual() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "FAILED" not in out.stdout, out.stdout
    last = out.stdout.strip().splitlines()[-1]
    assert last == "TEXTUAL", f"textual imported by fabtop/collectors: {last}"


def test_the_check_sees_textual_when_it_is_imported() -> None:
    # The same probe notices a UI module pulling in textual, so the test above can fail.
    out = subprocess.run(
        [sys.executable, "-c", "import tui.app, sys; print('textual' in sys.modules)"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert out.stdout.strip() == "True", out.stderr
