"""Path confinement: every path a tool call names stays inside the corpus roots.

Owns: a path argument checked against the roots (no `..`, an absolute path inside a root once
symlinks are resolved), the root that holds a path `index` names, the folder `remember` writes
into (plain relative folder names, no hidden ones), and opening that folder so that what was
opened is checked again, not only the name that was given (a folder swapped for a symlink after
the check leads nowhere else). Does not own: the arguments' other checks (`arguments`) or what
is written in the folder (`remember`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from recall.mcp_server.arguments import MAX_FOLDER_PARTS, bad, shown
from recall.walk import within

__all__ = ["confined", "note_folder", "opened_folder", "real", "root_of"]

_FOLDER_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def confined(tool: str, name: str, value: str, roots: Sequence[Path]) -> Path:
    """`value` as a path that cannot leave the corpus roots: no `..`, and an absolute path
    (symlinks resolved) must lie inside a root."""
    if "\x00" in value:
        raise bad(tool, f"{name} holds a NUL character")
    path = Path(value)
    if ".." in path.parts:
        raise bad(tool, f"{name} {shown(value)} contains '..'; paths stay in the corpus")
    if path.is_absolute() and not any(within(real(path), r) for r in roots):
        listed = ", ".join(str(r) for r in roots) or "none configured"
        raise bad(tool, f"{name} {shown(value)} is outside the corpus roots ({listed})")
    return path


def root_of(tool: str, value: str, roots: Sequence[Path]) -> Path:
    """The corpus root that holds `value` (absolute, or relative to a root)."""
    path = confined(tool, "path", value, roots)
    candidates = [path] if path.is_absolute() else [r / path for r in roots]
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        resolved = real(candidate)
        root = next((r for r in roots if within(resolved, r)), None)
        if root is None:
            raise bad(tool, f"path {shown(value)} leads outside the corpus roots")
        return root
    raise bad(tool, f"path {shown(value)} does not exist in any corpus root")


def note_folder(value: str | None, root: Path) -> Path:
    """The folder `remember` writes into: `root`, or the relative folder `value` names in it."""
    if value is None:
        return root
    parts = [p for p in value.strip().replace("\\", "/").split("/") if p]
    if value.strip().startswith("/") or not parts or len(parts) > MAX_FOLDER_PARTS:
        raise bad("remember", f"folder {shown(value)} must be a relative folder name")
    for part in parts:
        if not _FOLDER_PART.fullmatch(part) or part == "..":
            raise bad(
                "remember",
                f"folder part {shown(part)} may hold letters, digits, '.', '_' and '-' and "
                "must not start with '.' (hidden folders are not indexed)",
            )
    folder = root.joinpath(*parts)
    if not within(real(folder), root):
        raise bad("remember", f"folder {shown(value)} leads outside the corpus root")
    return folder


@contextlib.contextmanager
def opened_folder(folder: Path, root: Path) -> Iterator[tuple[Path, int]]:
    """`folder` opened as a directory, with the real path of what was opened; refused unless
    that lies inside `root`."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        where = _fd_path(fd, folder)
        if where is None or not within(where, root):
            raise bad("remember", f"folder {shown(str(folder))} leads outside the corpus root")
        yield where, fd
    finally:
        os.close(fd)


def _fd_path(fd: int, folder: Path) -> Path | None:
    """The real path of the directory open as `fd`: from the descriptor itself where the
    system tells it (Linux, macOS), else `folder` resolved, when it is the same directory."""
    with contextlib.suppress(OSError):
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    try:
        import fcntl

        raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))
        return Path(os.fsdecode(raw.split(b"\0", 1)[0]))
    except (ImportError, OSError):
        pass
    resolved = real(folder)
    opened, named = os.fstat(fd), os.stat(resolved)
    return resolved if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino) else None
