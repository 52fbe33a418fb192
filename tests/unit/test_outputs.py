"""The one writer of output paths: regular files atomically, links kept, devices and FIFOs
written in place, loops and directories one line (fabtop/run/outputs.py, DESIGN §5)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fabtop.run.outputs import OutputError, open_stream, write_text
from tests.conftest import REPO, skip_or_fail


def _char_device(path: Path) -> Path:
    """A private copy of /dev/null's node (1,3): a device a bug could replace, not the real one."""
    if os.geteuid() != 0:
        skip_or_fail("needs root to make a device node")
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError as e:
        skip_or_fail(f"cannot make a device node: {e}")
    return path


def test_regular_file_is_replaced_whole_keeping_its_mode(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text("old contents\n")
    p.chmod(0o640)
    write_text(p, "new\n", "snapshot")
    assert p.read_text() == "new\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o640  # as a plain write would have kept it
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]  # no temp file left


def test_through_a_symlink_the_link_stays_and_its_target_is_written(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "snap.json"
    target.write_text("old\n")
    link = tmp_path / "links" / "latest.json"
    link.symlink_to(target)
    write_text(link, "new\n", "snapshot")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    # The temp file went to the target's directory (a rename across filesystems would fail).
    assert sorted(x.name for x in (tmp_path / "real").iterdir()) == ["snap.json"]
    assert sorted(x.name for x in (tmp_path / "links").iterdir()) == ["latest.json"]


def test_a_dangling_link_gets_its_target_created(tmp_path: Path) -> None:
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "new.json")
    write_text(link, "{}\n")
    assert link.is_symlink() and (tmp_path / "new.json").read_text() == "{}\n"


def test_a_device_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    dev = _char_device(tmp_path / "null")
    link = tmp_path / "to-null"
    link.symlink_to(dev)
    write_text(dev, "x" * 10000, "snapshot")
    write_text(link, "y\n", "snapshot")
    assert stat.S_ISCHR(dev.stat().st_mode) and dev.stat().st_rdev == os.makedev(1, 3)
    assert link.is_symlink()
    with open_stream(dev, "recording") as f:
        f.write(b"z")
    assert stat.S_ISCHR(dev.stat().st_mode)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["null", "to-null"]


def test_a_fifo_is_written_in_place_for_its_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    write_text(fifo, "line 1\nline 2\n", "snapshot")
    reader.join(10)
    assert got == [b"line 1\nline 2\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_symlink_loop_and_a_directory_are_one_line_each(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    for writer in (lambda: write_text(a, "x", "snapshot"), lambda: open_stream(a, "recording")):
        with pytest.raises(OutputError) as e:
            writer()
        assert str(e.value).startswith(f"{a}: cannot write ")
        assert "symbolic links" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(OutputError, match=r": cannot write snapshot: is a directory$"):
        write_text(tmp_path, "x", "snapshot")
    with pytest.raises(OutputError, match="No such file or directory"):
        write_text(tmp_path / "missing" / "s.json", "x", "snapshot")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a", "b"]


def test_dash_is_stdout_for_text_and_for_a_stream() -> None:
    code = (
        "import sys\n"
        "from fabtop.run.outputs import open_stream, write_text\n"
        "write_text('-', 'text\\n')\n"
        "with open_stream('-') as f:\n"
        "    f.write(b'\\x00binary')\n"
        "print('still open', file=sys.stdout)\n"  # closing the stream left stdout open
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"text\n\x00binarystill open\n"
