"""Files and folders that cannot be read, and file names that are not UTF-8 (SPEC §11).

What cannot be read is refused with a reason and keeps its indexed documents; it never counts
as removed. Tests run on real stores; where the process runs as root (which reads through
`chmod 000`), the one listing or opening call that would fail is made to fail for one path.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app

from .conftest import write_corpus

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
T1 = dt.datetime(2026, 2, 1, 12, 0, tzinfo=dt.timezone.utc)
T2 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)

NOTES = {
    "a.md": "# Alpha\n\nAlpha answers on port 8080.\n",
    "b.md": "# Beta\n\nBeta replaced alpha.\n",
    "sub/c.md": "# Gamma\n\nGamma notes.\n",
    "sub/deep/d.md": "# Delta\n\nDelta notes.\n",
    "sub/deep/e.txt": "plain memo about epsilon\n",
    "other/f.md": "# Phi\n\nPhi notes.\n",
}

#: b'caf\xe9.md' as Python names it on Linux (surrogateescape); not valid UTF-8.
LATIN1_NAME = os.fsdecode(b"caf\xe9.md")


def documents(db: Path) -> dict[str, tuple[object, ...]]:
    """Every stored document by path: id, hash, timestamps and its chunk texts."""
    con = sqlite3.connect(db)
    try:
        docs = con.execute(
            "SELECT d.path, d.id, d.content_hash, d.indexed_at, d.first_indexed_at, "
            "group_concat(c.text, '|') FROM documents d LEFT JOIN chunks c ON c.doc_id = d.id "
            "GROUP BY d.id"
        ).fetchall()
    finally:
        con.close()
    return {path: tuple(rest) for path, *rest in docs}


def _denied(path: object) -> OSError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


def fail_listing(
    monkeypatch: pytest.MonkeyPatch, folder: Path, error: Callable[[object], OSError] = _denied
) -> None:
    """`os.scandir(folder)` fails as it would for a folder without read permission."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, (str, os.PathLike)) and Path(path) == folder:
            raise error(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def fail_opening(monkeypatch: pytest.MonkeyPatch, files: Callable[[Path], bool]) -> None:
    """`os.open` of the files that match fails with EACCES, as for `chmod 000`."""
    real = os.open

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if isinstance(path, (str, os.PathLike)) and files(Path(path)):
            raise _denied(path)
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


@pytest.fixture
def indexed(tmp_path: Path, corpus: Path) -> Iterator[tuple[recall.Memory, Path]]:
    """A store holding NOTES, indexed once at T0."""
    write_corpus(corpus, NOTES)
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus, now=T0)
        assert report.ok and len(report.added) == len(NOTES)
        yield mem, tmp_path / "m.db"


# -- folders that cannot be listed ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "kept"),
    [
        ("sub", ["sub/c.md", "sub/deep/d.md", "sub/deep/e.txt"]),
        ("sub/deep", ["sub/deep/d.md", "sub/deep/e.txt"]),
    ],
)
def test_unreadable_folder_keeps_its_documents_and_is_refused(
    indexed: tuple[recall.Memory, Path],
    corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    folder: str,
    kept: list[str],
) -> None:
    mem, db = indexed
    before = documents(db)
    # The rest of the run goes on: an edit is picked up, a deletion is pruned.
    (corpus / "a.md").write_text("# Alpha\n\nAlpha moved to port 7070.\n")
    (corpus / "other" / "f.md").unlink()
    fail_listing(monkeypatch, corpus / folder)
    report = mem.index(corpus, now=T1)
    assert not report.ok
    assert [(r.path, r.reason) for r in report.refused] == [
        (folder + "/", "unreadable folder: Permission denied")
    ]
    assert report.updated == ["a.md"] and report.removed == ["other/f.md"]
    after = documents(db)
    assert {p: after[p] for p in kept} == {p: before[p] for p in kept}, "kept untouched"
    assert set(after) == set(NOTES) - {"other/f.md"}


def test_unreadable_root_keeps_every_document(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a listing nothing is "gone": no prune, and no prune guard to trip either."""
    mem, db = indexed
    before = documents(db)
    fail_listing(monkeypatch, corpus)
    report = mem.index(corpus, now=T1)
    assert [(r.path, r.reason) for r in report.refused] == [
        (str(corpus) + "/", "unreadable folder: Permission denied")
    ]
    assert not report.removed and not report.added and not report.updated
    assert documents(db) == before


def test_root_that_cannot_be_reached_is_refused(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder above the root denies search: the root cannot even be looked at."""
    mem, db = indexed
    before = documents(db)
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, (str, os.PathLike)) and Path(path) == corpus:
            raise _denied(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    report = mem.index(corpus, now=T1)
    assert [(r.path, r.reason) for r in report.refused] == [
        (str(corpus), "unreadable: Permission denied")
    ]
    assert not report.removed and documents(db) == before


def test_io_error_while_listing_keeps_the_folder(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing that breaks off half way is no listing: nothing under the folder is pruned."""
    mem, db = indexed
    before = documents(db)
    real = os.scandir

    class HalfListing:
        def __init__(self, path: Any) -> None:
            self.inner = real(path)
            self.given = 0

        def __enter__(self) -> HalfListing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self) -> HalfListing:
            return self

        def __next__(self) -> os.DirEntry[str]:
            if self.given == 1:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            self.given += 1
            return next(self.inner)

    def scandir(path: Any = ".") -> Any:
        return HalfListing(path) if Path(path) == corpus / "sub" else real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = mem.index(corpus, now=T1)
    assert [(r.path, r.reason) for r in report.refused] == [
        ("sub/", "unreadable folder: Input/output error")
    ]
    assert not report.removed and documents(db) == before
    assert report.unchanged == 3


def test_listable_but_not_searchable_folder(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode r-- on a folder: its names can be listed, but no file or subfolder opened."""
    mem, db = indexed
    before = documents(db)
    sub = corpus / "sub"
    fail_listing(monkeypatch, sub / "deep")
    fail_opening(monkeypatch, lambda p: p.parent == sub)
    report = mem.index(corpus, now=T1)
    assert sorted((r.path, r.reason) for r in report.refused) == [
        ("sub/c.md", "unreadable: Permission denied"),
        ("sub/deep/", "unreadable folder: Permission denied"),
    ]
    assert not report.removed and documents(db) == before


def test_entry_of_unknown_kind_keeps_what_it_held(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the listing has no file types and `lstat` is denied, an entry may be a file or a
    folder: it is refused, and neither it nor anything under it is pruned."""
    mem, db = indexed
    before = documents(db)
    real = os.scandir

    class Untyped:
        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.name, self.path, self.entry = entry.name, entry.path, entry

        def is_symlink(self) -> bool:
            if self.name == "sub":
                raise _denied(self.path)
            return self.entry.is_symlink()

        def is_dir(self) -> bool:
            return self.entry.is_dir()

    class Listing:
        def __init__(self, path: Any) -> None:
            self.inner = real(path)

        def __enter__(self) -> Iterator[Untyped]:
            return (Untyped(e) for e in self.inner)

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

    monkeypatch.setattr(os, "scandir", lambda path=".": Listing(path))
    report = mem.index(corpus, now=T1)
    assert [(r.path, r.reason) for r in report.refused] == [
        ("sub", "unreadable: Permission denied")
    ]
    assert not report.removed and documents(db) == before


def test_mount_loop_is_skipped(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that is a (bind) mount of a folder above it is walked once, not forever."""
    write_corpus(corpus, {"a.md": "# a\n", "sub/b.md": "# b\n", "sub/loop/c.md": "# c\n"})
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, (str, os.PathLike)) and Path(path) == corpus / "sub" / "loop":
            path = corpus  # what the kernel answers for `mount --bind notes notes/sub/loop`
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus, now=T0)
    assert report.ok and sorted(report.added) == ["a.md", "sub/b.md"]
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("sub/loop/", "a mount of a folder above it (a loop)")
    ]


# -- files that cannot be read ---------------------------------------------------------------------


def test_file_unreadable_at_read_time_keeps_its_version(
    indexed: tuple[recall.Memory, Path], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, db = indexed
    before = documents(db)
    (corpus / "b.md").write_text("# Beta\n\nan edit that cannot be read yet\n")
    fail_opening(monkeypatch, lambda p: p == corpus / "b.md")
    report = mem.index(corpus, now=T1)
    assert [(r.path, r.reason) for r in report.refused] == [
        ("b.md", "unreadable: Permission denied")
    ]
    assert not report.updated and not report.removed
    assert documents(db)["b.md"] == before["b.md"]


def test_file_gone_between_listing_and_reading_is_kept_until_the_next_run(
    indexed: tuple[recall.Memory, Path], corpus: Path
) -> None:
    """Not read is not removed: the next run, which no longer lists it, removes it."""
    mem, db = indexed
    before = documents(db)

    def delete_b(done: int, total: int, chunks: int) -> None:
        if done == 1:  # a.md has been read; b.md, listed, is read next
            (corpus / "b.md").unlink()

    report = mem.index(corpus, now=T1, progress=delete_b)
    assert [(r.path, r.reason) for r in report.refused] == [
        ("b.md", "unreadable: No such file or directory")
    ]
    assert not report.removed and documents(db)["b.md"] == before["b.md"]
    report = mem.index(corpus, now=T2)
    assert report.ok and report.removed == ["b.md"]


def test_symlink_loop_and_fifo_do_not_stop_the_run(tmp_path: Path, corpus: Path) -> None:
    write_corpus(corpus, {"a.md": "# a\n", "sub/b.md": "# b\n"})
    (corpus / "loop.md").symlink_to("loop.md")
    (corpus / "ping").symlink_to("pong")
    (corpus / "pong").symlink_to("ping")
    (corpus / "sub" / "up").symlink_to("..")
    os.mkfifo(corpus / "pipe.md")
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus, now=T0)
        second = mem.index(corpus, now=T1)
    assert sorted(report.added) == ["a.md", "sub/b.md"]
    assert [(r.path, r.reason) for r in report.refused] == [
        ("loop.md", "unreadable: Too many levels of symbolic links")
    ]
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons == {
        "pipe.md": "not a regular file",
        "sub/up/": "symlinked folder inside the corpus (its target is indexed directly)",
    }
    assert second.unchanged == 2 and not second.added and not second.removed


def _without_permission_bypass(tmp_path: Path) -> list[str] | None:
    """A command prefix under which `chmod 000` really denies, or None where none exists."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    prefixes: list[list[str]] = [[]]
    if shutil.which("setpriv"):
        drop = "-dac_override,-dac_read_search"
        prefixes.append(["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"])
    try:
        for prefix in prefixes:
            tried = subprocess.run(
                [*prefix, sys.executable, "-c", f"open({str(probe)!r}).read()"],
                capture_output=True,
            )
            if tried.returncode != 0 and b"PermissionError" in tried.stderr:
                return prefix
        return None
    finally:
        probe.unlink()


def test_real_permissions_end_to_end(tmp_path: Path, corpus: Path) -> None:
    """The CLI in a process that `chmod` really stops (root drops its bypass capabilities)."""
    prefix = _without_permission_bypass(tmp_path)
    if prefix is None:
        pytest.skip("no way to run without the permission bypass here")
    write_corpus(corpus, NOTES)
    db = tmp_path / "m.db"
    env = {**os.environ, "RECALL_EMBEDDER": "hashing-512"}

    def index() -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "recall.cli", "index", str(corpus)]
            + ["--db", str(db), "--json"],
            capture_output=True,
            text=True,
            env=env,
        )
        return done.returncode, json.loads(done.stdout)

    assert index()[0] == 0
    before = documents(db)
    (corpus / "sub" / "deep").chmod(0)  # cannot be listed
    (corpus / "other").chmod(0o600)  # names listed, nothing inside opened
    (corpus / "b.md").chmod(0)
    try:
        code, report = index()
    finally:
        for path, mode in (("sub/deep", 0o755), ("other", 0o755), ("b.md", 0o644)):
            (corpus / path).chmod(mode)
    assert code == 1 and not report["removed"]
    assert sorted((r["path"], r["reason"]) for r in report["refused"]) == [
        ("b.md", "unreadable: Permission denied"),
        ("other/f.md", "unreadable: Permission denied"),
        ("sub/deep/", "unreadable folder: Permission denied"),
    ]
    assert documents(db) == before
    code, report = index()
    assert code == 0 and report["unchanged"] == len(NOTES)


# -- file names that are not UTF-8 ---------------------------------------------------------------


def test_non_utf8_names_are_skipped_with_escapes_and_the_run_goes_on(
    tmp_path: Path, corpus: Path
) -> None:
    write_corpus(corpus, {"a.md": "# a\n", "sub/b.md": "# b\n"})
    (corpus / LATIN1_NAME).write_text("# café\n")
    (corpus / os.fsdecode(b"dossier-\xe9t\xe9")).mkdir()
    (corpus / os.fsdecode(b"dossier-\xe9t\xe9") / "c.md").write_text("# c\n")
    (corpus / os.fsdecode(b"\xff.png")).write_bytes(b"\x89PNG")  # not a note: ignored
    (corpus / "sub" / "escape.md").symlink_to(tmp_path / os.fsdecode(b"l\xe0-bas.md"))
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus, now=T0)
        rows = documents(tmp_path / "m.db")
        second = mem.index(corpus, now=T1)
    assert report.ok and sorted(report.added) == ["a.md", "sub/b.md"]
    assert {s.path: s.reason for s in report.skipped} == {
        "caf\\xe9.md": "file name is not valid UTF-8 (rename it to index it)",
        "dossier-\\xe9t\\xe9/": "folder name is not valid UTF-8 (rename it to index its notes)",
        "sub/escape.md": f"symlink leaves the corpus root (points to {tmp_path}/l\\xe0-bas.md)",
    }
    # No flapping: the second run finds everything unchanged and writes nothing.
    assert second.unchanged == 2 and second.embedded == 0
    assert not second.added and not second.updated and not second.removed
    assert second.skipped == report.skipped
    assert documents(tmp_path / "m.db") == rows


def test_non_utf8_root_or_file_argument_is_refused(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"notes-\xe9")
    write_corpus(root, {"a.md": "# a\n"})
    named = tmp_path / LATIN1_NAME
    named.write_text("# café\n")
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index([root, named], now=T0)
        assert mem.stats().documents == 0
    assert [(r.path, r.reason) for r in report.refused] == [
        (f"{tmp_path}/notes-\\xe9", "folder name is not valid UTF-8 (rename it to index it)"),
        (f"{tmp_path}/caf\\xe9.md", "file name is not valid UTF-8 (rename it to index it)"),
    ]


def test_cli_json_names_the_non_utf8_file_and_stays_stable(tmp_path: Path, corpus: Path) -> None:
    write_corpus(corpus, {"a.md": "# a\n", "b.md": "# b\n"})
    (corpus / LATIN1_NAME).write_text("# café\n")
    runner = CliRunner()
    args = ["index", str(corpus), "--db", str(tmp_path / "m.db"), "--json"]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)
    human = runner.invoke(app, args[:-1])
    assert first.exit_code == second.exit_code == human.exit_code == 0, first.output
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["added"] == ["a.md", "b.md"] and one["generation"] == 1
    assert one["skipped"] == [
        {"path": "caf\\xe9.md", "reason": "file name is not valid UTF-8 (rename it to index it)"}
    ]
    assert (two["added"], two["updated"], two["removed"], two["unchanged"]) == ([], [], [], 2)
    assert two["skipped"] == one["skipped"] and two["generation"] == 2
    assert "caf\\xe9.md: file name is not valid UTF-8" in human.stdout
