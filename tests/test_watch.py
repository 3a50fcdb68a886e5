"""The live index (SPEC §8.3): notes written, edited and deleted while searches run are
followed within a second, every search answers, and the store ends equal to a fresh index."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import recall
from recall.watch import Batch, watch

pytest.importorskip("watchfiles")


def note(i: int, words: str) -> str:
    return f"# Note {i}\n\n{words} number{i}\n"


def documents(db: Path) -> set[tuple[str, str]]:
    """(path, content hash) of every document, read through recall's own SQLite. Not the host's
    `sqlite3`: a second SQLite library in this process drops the process's POSIX locks on the
    file when it closes, and the watch's and the searcher's connections then fail with "disk
    I/O error" (SQLite's documented hazard of two copies of the library in one process)."""
    with recall.open(db, read_only=True) as mem:
        store = mem._store
        return {
            (path, digest)
            for source, _ in store.sources()
            for path, digest, *_ in store.known_documents(source)
        }


def wait_for(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("the watch did not catch up in time")


def test_watch_follows_writes_edits_and_deletes_while_searches_run(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(5):
        (notes / f"n{i}.md").write_text(note(i, "alpha beta"), encoding="utf-8")
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(notes).ok
    stop, ready = threading.Event(), threading.Event()
    batches: list[Batch] = []
    follower = threading.Thread(
        target=watch,
        args=(str(db), [notes]),
        kwargs={"on_batch": batches.append, "stop": stop, "ready": ready},
        daemon=True,
    )
    follower.start()
    assert ready.wait(10)
    searches, failures = 0, []
    done = threading.Event()

    def search_loop() -> None:
        nonlocal searches
        with recall.open(db) as reader:
            while not done.is_set():
                try:
                    reader.search("alpha number3", mode="development")
                    searches += 1
                except Exception as err:  # noqa: BLE001 - every failure is the finding
                    failures.append(err)

    searcher = threading.Thread(target=search_loop, daemon=True)
    searcher.start()
    try:
        # Write: a new note is searchable within a second or so.
        started = time.monotonic()
        (notes / "new.md").write_text(note(99, "gamma delta"), encoding="utf-8")
        wait_for(lambda: any(p == "new.md" for p, _ in documents(db)))
        assert time.monotonic() - started < 5
        # Edit and delete.
        (notes / "n1.md").write_text(note(1, "edited words"), encoding="utf-8")
        (notes / "n2.md").unlink()
        sub = notes / "sub"
        sub.mkdir()
        (sub / "deep.md").write_text(note(7, "deep note"), encoding="utf-8")
        wait_for(
            lambda: (
                {p for p, _ in documents(db)}
                == {"n0.md", "n1.md", "n3.md", "n4.md", "new.md", "sub/deep.md"}
            )
        )
    finally:
        done.set()
        searcher.join(10)
        stop.set()
        follower.join(10)
    assert not failures, failures
    assert searches > 0
    assert all(b.error is None for b in batches), batches
    # The store equals a fresh index of the final folder.
    fresh = tmp_path / "fresh.db"
    with recall.open(fresh, embedder="hashing-512") as mem:
        mem.index(notes)
    assert documents(db) == documents(fresh)
    with recall.open(db) as a, recall.open(fresh) as b:
        assert (a.stats().documents, a.stats().chunks) == (b.stats().documents, b.stats().chunks)


def test_recall_watch_cli_indexes_a_new_note(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(note(1, "alpha"), encoding="utf-8")
    db = tmp_path / "m.db"
    env = {**os.environ, "RECALL_EMBEDDER": "hashing-512"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "recall.cli", "watch", str(notes), "--db", str(db), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the initial run
        assert '"added": ["a.md"]' in first, first
        (notes / "b.md").write_text(note(2, "beta"), encoding="utf-8")
        second = proc.stdout.readline()
        assert '"added": ["b.md"]' in second, second
    finally:
        proc.terminate()
        proc.wait(10)


def test_watch_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(recall.UsageError, match="not a folder"):
        watch(str(tmp_path / "m.db"), [tmp_path / "nope"])


def test_watch_declares_a_note_again_when_only_its_metadata_file_changes(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    kep = notes / "keps" / "281-dynamic-config"
    kep.mkdir(parents=True)
    (kep / "README.md").write_text("# KEP-281: Dynamic config\n\nConfig maps.\n", "utf-8")
    (kep / "kep.yaml").write_text("kep-number: 281\nstatus: implemented\n", "utf-8")
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(notes).ok
    before = documents(db)
    stop, ready = threading.Event(), threading.Event()
    follower = threading.Thread(
        target=watch,
        args=(str(db), [notes]),
        kwargs={"stop": stop, "ready": ready},
        daemon=True,
    )
    follower.start()
    assert ready.wait(10)
    try:
        (kep / "kep.yaml").write_text("kep-number: 281\nstatus: withdrawn\n", "utf-8")
        wait_for(lambda: documents(db) != before)
    finally:
        stop.set()
        follower.join(10)
    with recall.open(db) as mem:
        retired = mem.explain("config maps", "keps/281-dynamic-config/README.md")["retired"]
        assert retired is not None and retired["state"] == "withdrawn"
