"""Where a command writes its output: one place for every output path (DESIGN §5).

Every command that writes a file (``snapshot -o``, ``record -o``, the dashboard's
``--record`` and its snapshot key) goes through here, so each kind of path is handled
the same way everywhere:

- ``-`` is stdout.
- A regular file, a symlink to one, or a name that does not exist yet: the file at the end
  of the links is written. For a whole document (:func:`write_text`) that is a temp file
  in the *target's* directory, fsync, then a rename onto the target: the link stays a
  link, and a full or read-only disk leaves the old file whole and no temp file behind.
- A device, FIFO or socket (``/dev/null``, a pipe a job reads): written directly, never
  renamed onto. A rename there would, as root, replace ``/dev/null`` with a regular file.
- A directory, a symlink loop, a path that cannot be reached: one line naming the path.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

STDOUT = "-"


class OutputError(OSError):
    """An output could not be written; the message is one line naming the path and the cause."""


def _fail(path: str | Path, what: str, e: OSError | str) -> OutputError:
    why = e if isinstance(e, str) else (e.strerror or str(e))
    return OutputError(f"{path}: cannot write {what}: {why}")


def resolve(path: str | Path, what: str = "output") -> tuple[Path, os.stat_result | None]:
    """The file ``path`` names after every symlink, and its status (None when it does not exist).

    Raises OutputError for a loop of links, a directory, or a path that cannot be looked up.
    """
    p = Path(path)
    try:
        st: os.stat_result | None = os.stat(p)  # follows links; ELOOP for a loop
    except FileNotFoundError:
        st = None  # a new file, or a link to one not yet created: the link's target is made
    except OSError as e:
        raise _fail(path, what, e) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _fail(path, what, "is a directory")
    # realpath of a dangling link is where its target would be; of a new name, itself.
    return Path(os.path.realpath(p)), st


def write_text(path: str | Path, text: str, what: str = "output") -> None:
    """Write a whole document to ``path`` (``-``: stdout); raises OutputError with one line."""
    if str(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target, st = resolve(path, what)
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            # A device or FIFO: written in place. A FIFO's open waits for its reader.
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            return
    except OSError as e:
        raise _fail(path, what, e) from None
    _replace(path, target, st, text.encode("utf-8"), what)


def _replace(
    shown: str | Path, target: Path, st: os.stat_result | None, data: bytes, what: str
) -> None:
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            if st is not None:
                # Replacing a file keeps what a plain write would have kept: mode and owner.
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, st.st_uid, st.st_gid)
            else:
                # mkstemp makes the file 0600; a new file gets the mode a plain write gives.
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
        except OSError:
            os.close(fd)
            raise
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise _fail(shown, what, e) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def open_stream(path: str | Path, what: str = "output") -> BinaryIO:
    """A binary file to append records to as they come (``-``: a copy of stdout).

    A stream is written in place, never renamed: a recording is readable while it grows
    and crash-safe record by record (see :mod:`fabtop.run.record`). Through a symlink the
    target is written; a device or FIFO is opened as it is. Raises OutputError.
    """
    if str(path) == STDOUT:
        if os.isatty(sys.stdout.fileno()):
            raise OutputError(
                f"{STDOUT}: will not write a binary {what} to a terminal; pipe it or give -o FILE"
            )
        sys.stdout.flush()
        # A duplicate: closing the recording does not close the process's stdout.
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    target, _ = resolve(path, what)
    try:
        return open(target, "wb")  # the caller owns and closes it
    except OSError as e:
        raise _fail(path, what, e) from None
