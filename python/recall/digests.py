"""File digests remembered by file identity (SPEC §10, cold start).

A model file is pinned and fingerprinted by its sha256; hashing the default model's 23 MB on
every start costs a cold `recall search` tens of milliseconds. `sha256_of(path)` hashes a file
once per identity (device, inode, size, modification and change times, as `os.stat` gives
them) and keeps the digest in the user's cache folder: `$RECALL_CACHE_DIR`, else
`$XDG_CACHE_HOME/recall`, else `~/.cache/recall`. A file rewritten, replaced or touched has
another identity and is hashed again. The cache is an optimisation only: one that cannot be
read or written is ignored, and the file is hashed.

Owns: the digest and its cache file. Does not own: what a digest is checked against (the
pins and fingerprints in `recall.models`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["cache_dir", "sha256_file", "sha256_of"]

#: The cache file's name, inside `cache_dir()`.
CACHE_FILE = "file-digests.json"
#: Entries kept: the newest written win (a few model files per installation).
MAX_ENTRIES = 64


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir() -> Path:
    """The folder recall caches in: `$RECALL_CACHE_DIR`, `$XDG_CACHE_HOME/recall` or
    `~/.cache/recall`."""
    explicit = os.environ.get("RECALL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "recall"


def _identity(path: Path) -> str:
    st = path.stat()
    parts = (path.resolve(), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return "|".join(str(p) for p in parts)


def _read(cache: Path) -> dict[str, str]:
    try:
        raw = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def _write(cache: Path, entries: dict[str, str]) -> None:
    """Replace the cache file atomically; a reader sees the old file or the new one."""
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".digests-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entries, f)
            os.replace(tmp, cache)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def sha256_of(path: Path, *, fresh: bool = False) -> str:
    """The sha256 of `path`, hashed once per file identity and remembered in the cache. With
    `fresh`, the cache is not believed: the file is hashed and its entry written again (a
    digest that disagrees with a pin is checked this way before the file is blamed)."""
    try:
        key = _identity(path)
    except OSError:
        return sha256_file(path)  # raises the error naming the file
    cache = cache_dir() / CACHE_FILE
    entries = _read(cache)
    known = None if fresh else entries.get(key)
    if known is not None:
        return known
    digest = sha256_file(path)
    # Still the same file after reading it: a file being written is not remembered.
    with contextlib.suppress(OSError):
        if _identity(path) == key:
            entries.pop(key, None)
            entries[key] = digest
            _write(cache, dict(list(entries.items())[-MAX_ENTRIES:]))
    return digest
