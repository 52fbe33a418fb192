"""`make bench`: run every benchmark script in turn and print all their figures.

Each script stays standalone (``.venv/bin/python benchmarks/X.py``); this only runs
them one after another with the same interpreter and prints the machine first.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = (
    "collector_cost",
    "probe_cost",
    "node_exporter_compare",
    "fanout",
    "tui_refresh",
    "history_memory",
    "storm_detection",
)
SKIP = {"run_all", "soak"}  # soak runs for an hour: docs/SOAK.md


def machine() -> str:
    """nproc and the CPU model, for the record."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPUs, {model}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def main() -> int:
    scripts = [HERE / f"{n}.py" for n in ORDER if (HERE / f"{n}.py").exists()]
    scripts += sorted(p for p in HERE.glob("*.py") if p.stem not in SKIP and p not in scripts)
    print(f"machine: {machine()}", flush=True)
    failed = []
    for s in scripts:
        print(f"\n== {s.name}", flush=True)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, str(s)], cwd=HERE.parent)
        print(f"   ({s.name}: {time.monotonic() - t0:.0f} s, exit {r.returncode})", flush=True)
        if r.returncode != 0:
            failed.append(s.name)
    if failed:
        print(f"\nbenchmarks that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
