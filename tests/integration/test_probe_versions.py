"""Software versions (issue 15) as both probes read them on a node: the real probe.sh and
probe_fast.py, tool shims answering with real captures (tests/fixtures/versions), and a
real process that maps an NCCL library (the scan reads the real /proc/<pid>/maps)."""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.probe import build_argv
from collectors.samples import SoftwareVersions
from fabtop.core.pipeline import Pipeline
from tests.integration.test_probe import (  # noqa: F401
    Probe,
    _args,
    _nvidia_shim,
    _start,
    _write_tool,
    bare_path,
    node,
    run_probe,
)

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "versions"
DPKG_FORMAT = "${db:Status-Abbrev} ${Version}\\n"  # what the probes must ask dpkg-query


def _shims(node: Path, fixtures_dir: Path) -> str:
    """dpkg-query, ofed_info, nvidia-smi and cat (for /proc/driver/nvidia/version) shims."""
    bindir = node / "bin"
    _write_tool(
        bindir,
        "dpkg-query",
        f"""
echo "$*" >> {node}/dpkg.log
[ "$1 $2 $4" = "-W -f rdma-core" ] && [ "$3" = '{DPKG_FORMAT}' ] || exit 2
echo "ii  2307mlnx47-1.2310119"
""",
    )
    ofed = CAPTURES / "ofed_info_s_mlnx_ofed_23.10_azure-hpc.txt"
    _write_tool(bindir, "ofed_info", f'[ "$1" = -s ] && cat "{ofed}"\n')
    nv = CAPTURES / "proc_driver_nvidia_version_open_580.95.05.txt"
    real_cat = shutil.which("cat")
    _write_tool(
        bindir,
        "cat",
        f"""
case "$*" in
/proc/driver/nvidia/version) exec {real_cat} "{nv}" ;;
*) exec {real_cat} "$@" ;;
esac
""",
    )
    return _nvidia_shim(node, fixtures_dir)


@pytest.fixture()
def nccl_process(tmp_path: Path) -> Iterator[None]:
    """A process mapping a pip wheel's libnccl.so.2 (its dist-info beside) and a packaged
    libnccl.so.2.23.4, as a serving process maps them."""
    site = tmp_path / "venv/lib/python3.12/site-packages"
    (site / "nvidia/nccl/lib").mkdir(parents=True)
    (site / "nvidia_nccl_cu12-2.21.5.dist-info").mkdir()
    pip_lib = site / "nvidia/nccl/lib/libnccl.so.2"
    sys_lib = tmp_path / "usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4"
    sys_lib.parent.mkdir(parents=True)
    for lib in (pip_lib, sys_lib):
        lib.write_bytes(b"\0" * mmap.PAGESIZE)
    code = (
        "import mmap, sys\n"
        "files = [open(p, 'rb') for p in sys.argv[1:]]\n"
        "maps = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in files]\n"
        "print('mapped', flush=True)\n"
        "sys.stdin.read()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(pip_lib), str(sys_lib)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "mapped"
    try:
        yield
    finally:
        p.kill()
        p.wait(timeout=5)


def _versions(frames: list[Frame]) -> SoftwareVersions | None:
    pipe = Pipeline()
    return [pipe.apply_frame("n1", f)[0] for f in frames][-1].versions


def _first(probe: Probe) -> list[Frame]:
    frames = probe.frames(2, deadline_s=15)
    assert len(frames) == 2 and probe.decoder.take_warnings() == []
    return frames


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_both_probes_read_every_version_from_the_node(
    impl: str, node: Path, fixtures_dir: Path, nccl_process: None, run_probe: list[Probe]
) -> None:
    fields = _shims(node, fixtures_dir)
    args = _args(
        node,
        probe=impl,
        gpu="auto",
        gpu_fields=tuple(fields.split(",")),
        timeout_s=5,
        slow_ticks=100000,
    )
    frames = _first(_start(run_probe, ["sh", "-s", "--", *build_argv(args)], node))
    assert frames[1].find("rdma_core") is None  # slow cadence: carried by the pipeline
    v = _versions(frames)
    assert v is not None and v.kernel is not None and v.kernel.value == os.uname().release
    assert v.rdma_core is not None
    assert (v.rdma_core.value, v.rdma_core.source) == ("2307mlnx47-1.2310119", "dpkg-query")
    assert v.ofed is not None and v.ofed.value == "MLNX_OFED_LINUX-23.10-1.1.9.0"
    assert v.nvidia_driver is not None and v.nvidia_driver.value == "580.95.05"
    assert v.nccl is not None and v.nccl.value == "2.21.5+2.23.4", v.nccl


def test_a_node_without_the_tools_says_each_version_unknown_and_why(
    node: Path, tmp_path: Path, run_probe: list[Probe]
) -> None:
    bare = bare_path(tmp_path / "bare")
    got = []
    for impl in ("sh", "python"):
        if impl == "python":
            (bare / "python3").symlink_to(sys.executable)
        args = replace(_args(node, probe=impl, gpu="auto"), path=())
        probe = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node, env_path=str(bare))
        got.append(_versions(_first(probe)))
    assert got[0] == got[1]
    v = got[0]
    assert v is not None and v.kernel is not None and v.kernel.value == os.uname().release
    assert v.rdma_core is not None and v.rdma_core.value is None
    assert v.rdma_core.note == "no dpkg-query or rpm"
    assert v.ofed is not None and (v.ofed.value, v.ofed.note) == (None, "no ofed_info")
    assert v.nvidia_driver is not None and v.nvidia_driver.note == "no nvidia-smi"
    assert v.nccl is not None and v.nccl.value is None


def test_rdma_core_not_installed_is_unknown_not_an_error_text(
    node: Path, run_probe: list[Probe]
) -> None:
    _write_tool(
        node / "bin",
        "dpkg-query",
        'echo "dpkg-query: no packages found matching rdma-core" >&2; exit 1\n',
    )
    args = _args(node, probe="sh", slow_ticks=100000)
    frames = _first(_start(run_probe, ["sh", "-s", "--", *build_argv(args)], node))
    sec = frames[0].find("rdma_core", "dpkg-query")
    assert sec is not None and (sec.status, sec.detail) == ("error", "rc=1")
    v = _versions(frames)
    assert v is not None and v.rdma_core is not None
    assert (v.rdma_core.value, v.rdma_core.note) == (None, "rdma-core not installed")
