"""An interrupted or killed index run leaves its vectors in the embedding journal beside the
store, and the next run embeds only what was not embedded before; a copied note takes the
stored vectors of the note it copies (`recall.embedding_journal`, `recall.indexing`)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import recall
import recall.indexing
from recall import HashingEmbedder
from recall.embedding_journal import Journal, journal_path
from recall.indexing import EMBED_BATCH, EMBED_SLICE

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
DIM = 64


@pytest.fixture(autouse=True)
def _even_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every embedder call of a run in this process takes `EMBED_SLICE` chunks, however fast
    the embedder: the counts below are in slices."""
    monkeypatch.setattr(recall.indexing, "SLICE_SECONDS", 0.0)


class Counting(HashingEmbedder):
    """The hashing embedder, counting the texts an index run sends it; a KeyboardInterrupt
    (Ctrl-C inside the embedder) on call `stop_at`. Queries are not counted."""

    def __init__(self, dim: int = DIM, stop_at: int | None = None) -> None:
        super().__init__(dim)
        self.calls = 0
        self.texts = 0
        self.stop_at = stop_at

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        self.texts += len(texts)
        return super().embed(texts)

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed(texts)


class SlowStop(Counting):
    """`Counting` whose stopping call first waits a moment, so that the run has queued the
    batch behind it by the time it raises."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.calls + 1 == self.stop_at:
            time.sleep(0.3)
        return super().embed(texts)


class Renamed(HashingEmbedder):
    """Another model of the same dimension: another fingerprint."""

    @property
    def fingerprint(self) -> str:
        return "another-model-64"


def _notes(root: Path, n: int, start: int = 0) -> Path:
    """`n` notes of two chunks each (a heading splits them)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        (root / f"note-{i:05d}.md").write_text(
            f"# Note {i}\n\nReplica {i} of the billing service fails over to region {i % 7}.\n\n"
            f"## Runbook\n\nOwner {i % 13} pages the on-call after three missed heartbeats.\n",
            encoding="utf-8",
        )
    return root


def _records(db: Path, embedder: HashingEmbedder) -> int:
    """Whole records in the store's journal (a cut last one is not counted)."""
    return len(Journal(journal_path(str(db)), embedder.dim, embedder.fingerprint))


def _contents(db: Path | str) -> dict[str, tuple[Any, ...]]:
    """Every document's title, content hash, chunks and vectors, by path."""
    out: dict[str, tuple[Any, ...]] = {}
    with recall.open(db, read_only=True) as mem:
        after = 0
        while page := mem._store.export(after, 256):
            for d in page:
                out[d["path"]] = (d["title"], d["content_hash"], d["chunks"], d["vectors"])
            after = page[-1]["id"]
    return out


def _hits(db: Path | str, query: str) -> list[tuple[str, float]]:
    with recall.open(db, read_only=True) as mem:
        hits = mem.search(query, k=5, mode="development").hits
    return [(h.provenance.file, h.score) for h in hits]


def _interrupted(db: Path, notes: Path, stop_at: int) -> Counting:
    embedder = Counting(stop_at=stop_at)
    with recall.open(db, embedder=embedder) as mem, pytest.raises(KeyboardInterrupt):
        mem.index(notes, now=T0)
    return embedder


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _notes(tmp_path_factory.mktemp("resume") / "notes", 1200)  # 2,400 chunks


@pytest.fixture(scope="module")
def whole(notes: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store an uninterrupted run makes."""
    db = tmp_path_factory.mktemp("whole") / "whole.db"
    with recall.open(db, embedder=Counting()) as mem:
        report = mem.index(notes, now=T0)
    assert report.chunks == report.embedded == 2400 and report.reused == 0
    assert not journal_path(str(db)).exists()
    return db


@pytest.mark.parametrize("stop_at", [2, 4])
def test_a_rerun_embeds_only_what_the_interrupted_run_did_not(
    tmp_path: Path, notes: Path, whole: Path, stop_at: int
) -> None:
    db = tmp_path / "m.db"
    first = _interrupted(db, notes, stop_at)
    # Every embedder call finished before the interruption is journaled, and only those.
    assert first.texts == (stop_at - 1) * EMBED_SLICE
    assert _records(db, first) == first.texts
    assert not db.exists()  # a first run that failed leaves no store; its journal stays

    again = Counting()
    ticks: list[tuple[int, int, int, int]] = []
    with recall.open(db, embedder=again) as mem:
        report = mem.index(notes, now=T0, progress=lambda *t: ticks.append(t))
    assert again.texts == report.embedded == 2400 - first.texts
    assert report.reused == first.texts and report.chunks == 2400
    assert ticks[-1][2] == 2400, "the progress counts reused vectors as done"
    assert not journal_path(str(db)).exists(), "a committed run deletes its journal"
    assert _contents(db) == _contents(whole)
    assert _hits(db, "billing region 3 owner 5") == _hits(whole, "billing region 3 owner 5")


def test_an_interruption_from_the_progress_callback_keeps_the_finished_batches(
    tmp_path: Path, notes: Path, whole: Path
) -> None:
    db = tmp_path / "m.db"

    def stop(done: int, total: int, embedded: int) -> None:
        if embedded >= 2 * EMBED_BATCH:
            raise KeyboardInterrupt

    with recall.open(db, embedder=Counting()) as mem, pytest.raises(KeyboardInterrupt):
        mem.index(notes, now=T0, progress=stop)
    kept = _records(db, Counting())
    assert kept >= 2 * EMBED_BATCH and kept % EMBED_SLICE == 0
    again = Counting()
    with recall.open(db, embedder=again) as mem:
        report = mem.index(notes, now=T0)
    assert (again.texts, report.reused) == (2400 - kept, kept)
    assert _contents(db) == _contents(whole)


def test_no_batch_calls_the_embedder_once_the_run_has_stopped(tmp_path: Path, notes: Path) -> None:
    embedder = SlowStop(stop_at=3)
    with recall.open(tmp_path / "m.db", embedder=embedder) as mem, pytest.raises(KeyboardInterrupt):
        mem.index(notes, now=T0)
    for thread in threading.enumerate():
        if thread.name.startswith("recall-embed"):
            thread.join()
    assert (embedder.calls, embedder.texts) == (3, 2 * EMBED_SLICE)


def test_a_search_while_a_journal_exists_sees_the_last_commit(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "m.db"
    small = _notes(tmp_path / "small", 5, start=90_000)
    with recall.open(db, embedder=Counting()) as mem:
        mem.index(small, now=T0)
        before = (mem.stats().documents, mem.stats().generation)
    seen = _hits(db, "billing region 3 owner 5")
    _interrupted(db, notes, stop_at=3)
    assert _records(db, Counting()) == 2 * EMBED_SLICE
    with recall.open(db, read_only=True) as mem:
        assert (mem.stats().documents, mem.stats().generation) == before
    assert _hits(db, "billing region 3 owner 5") == seen
    assert all(file.startswith("note-9") for file, _ in seen)


def test_a_cut_last_record_is_ignored_and_the_next_records_follow_the_whole_ones(
    tmp_path: Path, notes: Path, whole: Path
) -> None:
    db = tmp_path / "m.db"
    _interrupted(db, notes, stop_at=3)
    journal = journal_path(str(db))
    record = 16 + 4 * DIM + 8  # digest, vector, checksum
    with open(journal, "r+b") as f:  # a kill in the middle of the last record
        f.truncate(journal.stat().st_size - record // 2)
    assert _records(db, Counting()) == 2 * EMBED_SLICE - 1
    # A run that appends after the cut one, and is interrupted in its turn: the cut record's
    # text is embedded again with the first batch's others, two calls, stopped in the third...
    second = Counting(stop_at=3)
    with recall.open(db, embedder=second) as mem, pytest.raises(KeyboardInterrupt):
        mem.index(notes, now=T0)
    # The batch queued behind the one that stopped does not embed, even once its thread ends.
    for thread in threading.enumerate():
        if thread.name.startswith("recall-embed"):
            thread.join()
    assert second.texts == 2 * EMBED_SLICE
    kept = 4 * EMBED_SLICE - 1
    assert _records(db, Counting()) == kept
    # ...leaves records the next run reads whole.
    third = Counting()
    with recall.open(db, embedder=third) as mem:
        report = mem.index(notes, now=T0)
    assert (third.texts, report.reused) == (2400 - kept, kept)
    assert _contents(db) == _contents(whole)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda journal: None,  # a journal of another model of the same dimension, as it was
        lambda journal: journal.write_bytes(b"not a journal\n" + b"\0" * 4096),
        lambda journal: journal.write_bytes(b""),
    ],
    ids=["other-fingerprint", "wrong-magic", "empty"],
)
def test_a_journal_of_another_embedder_or_format_is_discarded(
    tmp_path: Path, notes: Path, whole: Path, spoil: Callable[[Path], None]
) -> None:
    db = tmp_path / "m.db"
    journal = journal_path(str(db))

    def stop(done: int, total: int, embedded: int) -> None:
        if embedded >= EMBED_BATCH:
            raise KeyboardInterrupt

    with recall.open(db, embedder=Renamed(DIM)) as mem, pytest.raises(KeyboardInterrupt):
        mem.index(notes, now=T0, progress=stop)
    assert journal.stat().st_size > 16 * EMBED_BATCH
    spoil(journal)
    again = Counting()
    with recall.open(db, embedder=again) as mem:
        report = mem.index(notes, now=T0)
    assert (again.texts, report.reused) == (2400, 0)
    assert not journal.exists()
    assert _contents(db) == _contents(whole)


RECORD = 16 + 4 * DIM + 8


def _spoil_vectors(journal: Path, spoil: Callable[[np.ndarray], None]) -> None:
    """Rewrite the vectors of the journal's records in place (their checksums left as they are,
    unless `spoil` sets them), as damage on disk or a hostile hand would."""
    data = bytearray(journal.read_bytes())
    start = data.index(b"\n") + 1
    n = (len(data) - start) // RECORD
    vectors = (
        np.frombuffer(bytes(data[start : start + n * RECORD]), dtype=np.uint8)
        .reshape(n, RECORD)[:, 16 : 16 + 4 * DIM]
        .copy()
        .view("<f4")
    )
    spoil(vectors)
    for i in range(n):
        at = start + i * RECORD + 16
        data[at : at + 4 * DIM] = vectors[i].tobytes()
    journal.write_bytes(bytes(data))


def _swap(v: np.ndarray) -> None:
    v[[0, 1]] = v[[1, 0]]  # two records' vectors exchanged


def _flip(v: np.ndarray) -> None:
    raw = v[2].view(np.uint8)
    raw[5] ^= 0x40  # one bit of one vector


def _zero(v: np.ndarray) -> None:
    v[3] = 0.0


def _nan(v: np.ndarray) -> None:
    v[4, 7] = np.nan


def _huge(v: np.ndarray) -> None:
    v[5] *= 1e32


@pytest.mark.parametrize(
    ("spoil", "damaged"),
    [(_swap, 2), (_flip, 1), (_zero, 1), (_nan, 1), (_huge, 1)],
    ids=["swapped", "flipped", "zeroed", "nan", "huge"],
)
def test_damaged_journal_records_are_discarded_and_embedded_again(
    tmp_path: Path, notes: Path, whole: Path, spoil: Callable[[np.ndarray], None], damaged: int
) -> None:
    """SPEC §3, §11: nothing read back is used unchecked. A record whose checksum fails is
    embedded again; the store ends as an uninterrupted run makes it, and the report says so."""
    db = tmp_path / "m.db"
    _interrupted(db, notes, stop_at=3)
    journal = journal_path(str(db))
    _spoil_vectors(journal, spoil)
    again = Counting()
    with recall.open(db, embedder=again) as mem:
        report = mem.index(notes, now=T0)
    assert report.journal_discarded == damaged
    assert report.reused == 2 * EMBED_SLICE - damaged
    assert again.texts == 2400 - report.reused
    assert _contents(db) == _contents(whole)


def test_a_vector_that_is_not_finite_or_of_unit_length_is_discarded_even_with_its_checksum(
    tmp_path: Path,
) -> None:
    """The checks beyond the checksum: a record written whole but holding a vector no embedder
    makes (NaN, zero, far from unit length) is never used."""
    path = tmp_path / "m.db-embeddings"
    log = Journal(path, 4, "fp")
    unit = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    bad = np.array([[np.nan, 0, 0, 0], [0, 0, 0, 0], [3, 0, 0, 0]], dtype=np.float32)
    log.append([b"a" * 16, b"b" * 16], unit)
    log.append([b"c" * 16, b"d" * 16, b"e" * 16], bad)
    log.close()
    again = Journal(path, 4, "fp")
    assert again.discarded == 3 and len(again) == 2
    assert again.found(b"a" * 16) is not None and again.found(b"c" * 16) is None


def test_a_symlinked_journal_refuses_the_run_and_writes_nothing_through_it(
    tmp_path: Path, notes: Path
) -> None:
    db = tmp_path / "m.db"
    elsewhere = tmp_path / "elsewhere" / "file"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"keep me")
    journal_path(str(db)).symlink_to(elsewhere)
    with (
        recall.open(db, embedder=Counting()) as mem,
        pytest.raises(recall.StoreError, match="symbolic link"),
    ):
        mem.index(notes, now=T0)
    assert elsewhere.read_bytes() == b"keep me"
    assert journal_path(str(db)).is_symlink()


def test_a_journal_that_cannot_be_written_does_not_fail_the_run(
    tmp_path: Path, notes: Path, whole: Path
) -> None:
    db = tmp_path / "m.db"
    journal_path(str(db)).mkdir()  # neither readable as a file nor writable
    with recall.open(db, embedder=Counting()) as mem:
        report = mem.index(notes, now=T0)
    assert report.ok and report.embedded == 2400
    assert _contents(db) == _contents(whole)


def test_a_run_that_embeds_nothing_leaves_no_journal(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "m.db"
    small = _notes(tmp_path / "small", 3)
    with recall.open(db, embedder=Counting()) as mem:
        mem.index(small, now=T0)
        assert not journal_path(str(db)).exists()
        report = mem.index(small, now=T0)
    assert report.unchanged == 3 and report.embedded == report.reused == 0
    assert not journal_path(str(db)).exists()


def test_a_copied_note_is_not_embedded_again(tmp_path: Path, backend: Callable[[str], str]) -> None:
    notes = _notes(tmp_path / "notes", 3)
    (notes / "untitled.md").write_text("no heading: the file name is the title\n")
    db = backend("m.db")
    embedder = Counting()
    with recall.open(db, embedder=embedder) as mem:
        mem.index(notes, now=T0)
        embedder.texts = 0
        shutil.copy(notes / "note-00001.md", notes / "copy.md")
        elsewhere = _notes(tmp_path / "elsewhere", 0)
        shutil.copy(notes / "note-00002.md", elsewhere / "kept.md")
        shutil.copy(notes / "untitled.md", notes / "retitled.md")  # another title: embedded
        report = mem.index([notes, elsewhere], now=T0)
        assert sorted(report.added) == ["copy.md", "kept.md", "retitled.md"]
        assert (report.reused, report.embedded, embedder.texts) == (4, 1, 1)
        assert mem.stats().documents == 7
        hits = mem.search("Replica 1 of the billing service", k=10, mode="development").hits
        scores = {h.provenance.file: h.score for h in hits}
        assert scores["copy.md"] == scores["note-00001.md"]
    stored = _contents(db)
    assert stored["copy.md"][2:] == stored["note-00001.md"][2:]
    assert stored["kept.md"][2:] == stored["note-00002.md"][2:]


def test_a_copy_made_within_one_run_of_a_changed_note_keeps_the_right_vectors(
    tmp_path: Path,
) -> None:
    """The stored note changes in the same run its old content is copied: the copy takes the
    old vectors only if they still match its chunks; either way its vectors are its own."""
    notes = _notes(tmp_path / "notes", 2)
    db = tmp_path / "m.db"
    with recall.open(db, embedder=Counting()) as mem:
        mem.index(notes, now=T0)
        shutil.copy(notes / "note-00000.md", notes / "zz-copy.md")
        (notes / "note-00000.md").write_text("# Note 0\n\nRewritten entirely.\n")
        report = mem.index(notes, now=T0)
    assert report.chunks == report.embedded + report.reused == 3
    fresh = tmp_path / "fresh.db"
    with recall.open(fresh, embedder=Counting()) as mem:
        mem.index(notes, now=T0)
    assert _contents(db) == _contents(fresh)


# --- a real `recall index` process, killed or signalled -----------------------------------------

EMBEDDER = "hashing-512"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job starts with it ignored


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "recall.cli", *args]


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A large folder, and the store an uninterrupted `recall index` makes of it."""
    root = _notes(tmp_path_factory.mktemp("large") / "notes", 4000)
    db = tmp_path_factory.mktemp("whole") / "whole.db"
    done = subprocess.run(
        _cli("index", str(root), "--db", str(db), "--json"),
        capture_output=True,
        text=True,
        env={**os.environ, "RECALL_EMBEDDER": EMBEDDER},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return root, db


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(
    ("signals", "code"),
    [
        ([signal.SIGKILL], -signal.SIGKILL),
        ([signal.SIGINT], 130),
        ([signal.SIGTERM], 143),
        ([signal.SIGINT, signal.SIGINT], 130),
    ],
    ids=["kill-9", "sigint", "sigterm", "sigint-twice"],
)
def test_a_killed_or_stopped_index_process_is_resumed_by_the_next_run(
    tmp_path: Path, large: tuple[Path, Path], signals: list[int], code: int
) -> None:
    root, whole = large
    db = tmp_path / "m.db"
    journal = journal_path(str(db))
    embedder = recall.get_embedder(EMBEDDER)
    assert isinstance(embedder, HashingEmbedder)
    run = subprocess.Popen(
        _cli("index", str(root), "--db", str(db)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
        env={**os.environ, "RECALL_EMBEDDER": EMBEDDER},
    )
    deadline = time.monotonic() + 60
    while run.poll() is None and time.monotonic() < deadline:
        if journal.exists() and journal.stat().st_size > (16 + 4 * 512) * EMBED_BATCH:
            break  # past the first batch
        time.sleep(0.002)
    assert run.poll() is None, "the run ended before it could be stopped"
    for signum in signals:
        run.send_signal(signum)
        time.sleep(0.01)
    _, err = run.communicate(timeout=60)
    assert run.returncode == code, err
    assert "Traceback" not in err
    kept = _records(db, embedder)
    assert kept >= EMBED_BATCH

    again = subprocess.run(
        _cli("index", str(root), "--db", str(db), "--json"),
        capture_output=True,
        text=True,
        env={**os.environ, "RECALL_EMBEDDER": EMBEDDER},
        check=False,
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["reused"] == kept and report["embedded"] == 8000 - kept
    assert not journal.exists()
    assert _contents(db) == _contents(whole)
