"""Files recall writes for the user (a calibration export, an evaluation report, a fixed note):
whole or not at all.

Owns: writing a file through a temporary name beside it, fsynced, then renamed over the target,
so that a full disk, a crash or a kill leaves the old file (or none), never a half-written one.
Does not own: what is written, or the store file (SQLite's own journal keeps that whole).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["write_whole"]


def write_whole(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace or create `path` with `data` atomically; an existing file keeps its mode.
    OSError as the system raised it; the temporary file is removed."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            # mkstemp makes 0600; a new file gets what the umask gives an ordinary one.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
