"""The store file under concurrency and across versions (SPEC §1): readers never block on a
writer, a second writer fails with a clear error, a newer schema is refused.

File store only: SQLite's locks and schema versions. PostgreSQL's writer lock and namespace
upgrade are in `test_postgres.py`; the calls both answer are in `test_conformance.py`."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import recall
from recall import _core

from .conftest import EXAMPLES


def _indexed(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)
    return db


# The other writer runs in its own process: POSIX file locks are per process, so a second
# SQLite library inside this process would not contend with recall's bundled one.
_HOLD_WRITE = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("DELETE FROM edges")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


@contextmanager
def write_held(db: Path) -> Iterator[None]:
    """Another process holds an open, uncommitted write on `db`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_reader_is_not_blocked_by_an_open_write(tmp_path: Path) -> None:
    db = _indexed(tmp_path)
    with write_held(db), recall.open(db) as mem:
        stats = mem.stats()
    assert stats.documents == 10 and stats.edges_resolved == 1, "reads the last commit"


def test_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    db = _indexed(tmp_path)
    with (
        write_held(db),
        recall.open(db) as mem,
        pytest.raises(recall.StoreLockedError, match="another writer"),
    ):
        mem.index(EXAMPLES)  # waits for the busy timeout, then refuses
    with recall.open(db) as mem:
        assert mem.index(EXAMPLES).unchanged == 10, "the store is intact and writable again"


def test_schema_version_and_newer_store_refused(tmp_path: Path) -> None:
    db = _indexed(tmp_path)
    with recall.open(db) as mem:
        assert mem.stats().schema_version == _core.SCHEMA_VERSION
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {_core.SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(recall.StoreError, match="upgrade recall"):
        recall.open(db)


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("this is not sqlite " * 100)
    with pytest.raises(recall.StoreError, match="recall store"):
        recall.open(bogus)


def test_store_errors_share_one_root() -> None:
    for cls in (recall.StoreError, recall.StoreLockedError, recall.EmbedderMismatchError):
        assert issubclass(cls, recall.RecallError)
    assert issubclass(recall.UsageError, recall.RecallError)


def test_the_db_file_alone_is_the_whole_store(tmp_path: Path) -> None:
    db = _indexed(tmp_path)
    with recall.open(db) as mem:
        before = mem.stats()
    copy = tmp_path / "elsewhere" / "copy.db"
    copy.parent.mkdir()
    copy.write_bytes(db.read_bytes())  # the .db alone, no -wal or -shm beside it
    with recall.open(copy) as mem:
        after = mem.stats()
    assert after.to_dict() | {"path": before.path} == before.to_dict()


def test_a_new_store_has_16k_pages_and_an_older_file_keeps_its_own(tmp_path: Path) -> None:
    db = _indexed(tmp_path)
    page = lambda path: sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]  # noqa: E731
    assert page(db) == 16384
    # A store written with 4 KiB pages (as before) is read and written as it is.
    old = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA page_size=4096")
    con.execute(f"VACUUM INTO '{old}'")
    con.close()
    assert page(old) == 4096
    with recall.open(old) as mem:
        before = mem.stats().chunks
        mem.index(EXAMPLES, calibrate=False)
        assert mem.stats().chunks == before
        assert mem.search("log retention", mode="development").hits
    assert page(old) == 4096
