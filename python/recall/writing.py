"""Files recall writes for the user (a calibration export, an evaluation report, a fixed note):
whole or not at all.

Owns: writing a file through a temporary name beside it, fsynced, then renamed over the target,
so that a full disk, a crash or a kill leaves the old file (or none), never a half-written one;
the temporary names (`.NAME.PID.TOKEN.tmp`, hidden, so never indexed as notes) and the sweep
that removes those a killed writer left, the next time the same name is written. Does not own:
what is written, or the store file (SQLite's own journal keeps that whole).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat

__all__ = ["sweep", "temporary", "write_whole"]


def temporary(name: str) -> str:
    """A hidden name, beside `name`, for a file that will become `name`: it carries the writing
    process's id, so a later writer can tell the leftover of one that was killed."""
    return f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def sweep(folder: str | os.PathLike[str], name: str, *, dir_fd: int | None = None) -> list[str]:
    """Remove what writers of `name` killed before they finished left in `folder` (their
    temporary file and, for a store, SQLite's files beside it): only names `temporary` makes,
    and only when the process they name is gone. Returns the names removed."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)\.[0-9a-f]{{8}}\.tmp(?:-[a-z]+)?")
    try:
        names = os.listdir(dir_fd if dir_fd is not None else os.fspath(folder) or ".")
    except OSError:
        return []
    removed = []
    for entry in names:
        match = pattern.fullmatch(entry)
        if match is None or _alive(int(match.group(1))):
            continue
        try:
            if dir_fd is not None:
                os.unlink(entry, dir_fd=dir_fd)
            else:
                os.unlink(os.path.join(folder, entry))
        except OSError:
            continue
        removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (on Windows, where signal 0 is not a probe, always)."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True


def write_whole(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace or create `path` with `data` atomically; an existing file keeps its mode.
    OSError as the system raised it; the temporary file is removed."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    sweep(folder, name)
    tmp = os.path.join(folder, temporary(name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            # Made 0600; a new file gets what the umask gives an ordinary one.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
