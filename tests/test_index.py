"""Index runs against a real store: incremental detection, refusals, pruning, lineage. A test
of what the run writes runs on every backend (`backend`) and reads the store back through the
store contract; the walk's own rules, a file's legacy schema and the file's folder are file-store
only."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
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
from recall.backends import locate

from .conftest import EXAMPLES, write_corpus

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
T1 = dt.datetime(2026, 2, 1, 12, 0, tzinfo=dt.timezone.utc)


class CountingEmbedder:
    """A real hashing embedder that counts the texts it is asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        self.inner = HashingEmbedder(dim)
        self.calls = 0
        self.texts = 0

    name = property(lambda self: self.inner.name)
    dim = property(lambda self: self.inner.dim)
    fingerprint = property(lambda self: self.inner.fingerprint)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


def stored(db: str) -> dict[str, dict[str, Any]]:
    """Every document as the store gives it back (the contract's export), by path."""
    store = locate(db).open(read_only=True)
    assert store is not None
    try:
        return {d["path"]: d for d in store.export(after=0, limit=10_000)}
    finally:
        store.close()


NOTES = {
    "a.md": "---\nvalid_from: 2026-01-01\n---\n# Alpha\n\nAlpha answers on port 8080.\n",
    "b.md": "---\nsupersedes: a.md\n---\n# Beta\n\nBeta replaced alpha; it answers on 9090.\n",
    "sub/c.md": "# Gamma\n\nGamma notes.\n",
    "d.txt": "plain text memo about deltas\n",
}


def test_fresh_index_writes_everything(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    with recall.open(db) as mem:
        report = mem.index(corpus, now=T0)
        stats = mem.stats()
    assert sorted(report.added) == ["a.md", "b.md", "d.txt", "sub/c.md"]
    assert report.ok and report.generation == 1
    assert report.embedded == report.chunks == stats.chunks == stats.vectors == 4
    assert stats.documents == 4 and stats.edges_resolved == 1
    assert stats.embedder == os.environ["RECALL_EMBEDDER"] == "hashing-512"
    assert stats.newest_indexed_at == "2026-01-01T12:00:00.000000Z"
    docs = {p: (d["key"], d["valid_from"], d["first_indexed_at"]) for p, d in stored(db).items()}
    assert docs["a.md"] == ("a", "2026-01-01", "2026-01-01T12:00:00.000000Z")
    assert docs["sub/c.md"] == ("c", None, "2026-01-01T12:00:00.000000Z")


def test_unchanged_reindex_embeds_nothing(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    counter = CountingEmbedder()
    with recall.open(db, embedder=counter) as mem:
        mem.index(corpus, now=T0)
        first = counter.texts
        report = mem.index(corpus, now=T1)
    assert first == 4
    assert counter.texts == first, "an unchanged re-index must not embed anything"
    assert report.embedded == 0 and report.unchanged == 4
    assert not report.added and not report.updated and not report.removed
    assert report.generation == 2


def test_edit_replaces_and_keeps_first_indexed_at(
    backend: Callable[[str], str], corpus: Path
) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    counter = CountingEmbedder()
    with recall.open(db, embedder=counter) as mem:
        mem.index(corpus, now=T0)
        (corpus / "a.md").write_text("# Alpha\n\nAlpha moved to port 7070.\n\nSecond para.\n")
        report = mem.index(corpus, now=T1)
    assert report.updated == ["a.md"] and report.unchanged == 3
    assert report.embedded == counter.texts - 4 == 1
    a = stored(db)["a.md"]
    assert a["first_indexed_at"] == "2026-01-01T12:00:00.000000Z"
    assert a["indexed_at"] == "2026-02-01T12:00:00.000000Z"
    assert a["valid_from"] is None, (
        "the edit removed the frontmatter; the stored window must follow"
    )
    texts = [chunk[1] for chunk in a["chunks"]]
    assert any("7070" in t for t in texts) and not any("8080" in t for t in texts)


def test_churn_counts_chunks_rewritten_removed_and_forgotten(
    backend: Callable[[str], str], corpus: Path
) -> None:
    # SPEC §7: the count a calibration's staleness is measured by, the same on every backend.
    notes = {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBee.\n", "c.md": "# C\n\nSea.\n"}
    write_corpus(corpus, notes)
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=T0)
        assert mem.stats().chunk_churn == 3  # three new chunks
        two = "# A\n\nOne paragraph about alpha.\n\n## Second\n\nAnother section on alpha.\n"
        (corpus / "a.md").write_text(two, encoding="utf-8")
        (corpus / "b.md").rename(corpus / "moved-b.md")
        report = mem.index(corpus, now=T1)
        assert report.moved == [("b.md", "moved-b.md")] and report.updated == ["a.md"]
        assert mem.stats().chunk_churn == 3 + 2  # one chunk became two; a move keeps its rows
        (corpus / "c.md").unlink()
        mem.index(corpus, now=T1)
        assert mem.stats().chunk_churn == 3 + 2 + 1
        mem.forget(corpus / "a.md", apply=True, now=T1)
        assert mem.stats().chunk_churn == 3 + 2 + 1 + 2
        mem.index(corpus, now=T1)  # skips the forgotten note: nothing changes
        assert mem.stats().chunk_churn == 8


def test_deleted_file_disappears(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    with recall.open(db) as mem:
        mem.index(corpus, now=T0)
        (corpus / "sub" / "c.md").unlink()
        report = mem.index(corpus, now=T1)
        stats = mem.stats()
    assert report.removed == ["sub/c.md"]
    assert stats.documents == 3 and stats.chunks == stats.vectors == 3
    assert "sub/c.md" not in stored(db)


def test_malformed_date_refuses_only_that_file(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, {**NOTES, "bad.md": "---\nvalid_until: 2026-02-30\n---\nbody\n"})
    with recall.open(db) as mem:
        report = mem.index(corpus, now=T0)
    assert not report.ok
    assert [r.path for r in report.refused] == ["bad.md"]
    reason = report.refused[0].reason
    assert "valid_until" in reason and "2026-02-30" in reason
    assert sorted(report.added) == ["a.md", "b.md", "d.txt", "sub/c.md"]


def test_frontmatter_yaml_cannot_read_refuses_the_file_and_makes_no_edge(
    backend: Callable[[str], str], corpus: Path
) -> None:
    db = backend("m.db")
    write_corpus(
        corpus,
        {
            **NOTES,
            "title.md": "---\ntitle: [unclosed\n---\nbody\n",
            "colon.md": "---\nsupersedes: : :\n---\nbody\n",
            "folded.md": "---\nsupersedes: [a.md,\n  b.md]\n---\nbody\n",
        },
    )
    with recall.open(db) as mem:
        report = mem.index(corpus, now=T0)
        stats = mem.stats()
    reasons = {r.path: r.reason for r in report.refused}
    assert set(reasons) == {"title.md", "colon.md"}
    assert (
        "line 2, title: '[unclosed'" in reasons["title.md"]
        and "unclosed '['" in reasons["title.md"]
    )
    assert "line 2, supersedes: ': :'" in reasons["colon.md"]
    assert "folded.md" in report.added
    targets = sorted({e[0] for d in stored(db).values() for e in d["edges"]})
    assert targets == ["a.md", "b.md"] and stats.documents == 5


def test_refused_edit_keeps_previous_version(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    with recall.open(db) as mem:
        mem.index(corpus, now=T0)
        (corpus / "a.md").write_text("---\nvalid_from: 2026-1-1\n---\nnew text\n")
        report = mem.index(corpus, now=T1)
        assert [r.path for r in report.refused] == ["a.md"]
        assert not report.removed
        assert mem.stats().documents == 4


def test_empty_window_is_indexed_and_recorded(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(
        corpus, {"w.md": "---\nvalid_from: 2026-05-01\nvalid_until: 2026-04-01\n---\nbody\n"}
    )
    with recall.open(db) as mem:
        report = mem.index(corpus, now=T0)
        assert report.ok and mem.stats().metadata_errors == 1
    assert "empty validity window" in str(stored(db)["w.md"]["metadata_error"])


def test_skips_are_reported_with_reasons(tmp_path: Path, corpus: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# outside\n")
    write_corpus(
        corpus,
        {
            "ok.md": "# fine\n",
            ".hidden/secret.md": "# hidden\n",
            "nul.md": b"abc\x00def",
            "latin1.md": "caf\xe9".encode("latin-1"),
            "image.png": b"\x89PNG",
        },
    )
    (corpus / "escape.md").symlink_to(outside)
    # A sibling whose name extends the root's (`notes-evil` beside `notes`) is outside it too.
    sibling = corpus.parent / f"{corpus.name}-evil"
    sibling.mkdir()
    (sibling / "secret.md").write_text("# secret\n")
    (corpus / "sibling.md").symlink_to(sibling / "secret.md")
    with recall.open(tmp_path / "m.db") as mem:
        report = mem.index(corpus, now=T0)
    reasons = {s.path: s.reason for s in report.skipped}
    assert report.added == ["ok.md"] and report.ok
    assert reasons[".hidden/"] == "hidden folder"
    assert "NUL" in reasons["nul.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "leaves the corpus root" in reasons["escape.md"]
    assert "leaves the corpus root" in reasons["sibling.md"]
    assert "image.png" not in reasons


def test_oversized_file_is_skipped(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall.indexing, "MAX_FILE_BYTES", 100)
    write_corpus(corpus, {"big.md": "x" * 101, "small.md": "# s\n"})
    with recall.open(tmp_path / "m.db") as mem:
        report = mem.index(corpus, now=T0)
    assert report.added == ["small.md"]
    assert [s.path for s in report.skipped] == ["big.md"] and "cap" in report.skipped[0].reason


def test_prune_guard(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, {f"n{i}.md": f"# note {i}\n" for i in range(6)})
    with recall.open(db) as mem:
        mem.index(corpus, now=T0)
        for i in range(4):
            (corpus / f"n{i}.md").unlink()
        with pytest.raises(recall.PruneRefusedError, match="--allow-prune"):
            mem.index(corpus, now=T1)
        assert mem.stats().documents == 6, "a refused prune must write nothing"
        report = mem.index(corpus, now=T1, allow_prune=True)
        assert len(report.removed) == 4 and mem.stats().documents == 2


def test_other_embedder_is_refused(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    with recall.open(db, embedder="hashing-64") as mem:
        mem.index(corpus, now=T0)
    with recall.open(db) as mem:
        assert mem.embedder.name == "hashing-64", "an existing store keeps its embedder"
    with (
        recall.open(db, embedder="hashing-128") as mem,
        pytest.raises(recall.EmbedderMismatchError, match="hashing-64"),
    ):
        mem.index(corpus, now=T1)


def test_unknown_embedder_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(recall.EmbedderError, match="unknown embedder"):
        recall.get_embedder("word2vec")
    with recall.open(tmp_path / "m.db") as mem, pytest.raises(recall.UsageError, match="exist"):
        mem.index(tmp_path / "nope")


def test_single_file_argument(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, NOTES)
    with recall.open(db) as mem:
        report = mem.index(corpus / "b.md", now=T0)
        assert report.added == ["b.md"] and mem.stats().documents == 1


def test_naive_now_is_utc(backend: Callable[[str], str], corpus: Path) -> None:
    db = backend("m.db")
    write_corpus(corpus, {"a.md": "# a\n"})
    with recall.open(db) as mem:
        mem.index(corpus, now=dt.datetime(2026, 3, 4, 5, 6, 7))
        assert mem.stats().last_run_at == "2026-03-04T05:06:07.000000Z"


def test_examples_corpus_edges(backend: Callable[[str], str]) -> None:
    db = backend("m.db")
    with recall.open(db) as mem:
        report = mem.index(EXAMPLES, now=T0)
        stats = mem.stats()
    assert report.ok and stats.documents == 10
    assert (stats.edges_resolved, stats.edges_dangling, stats.edges_ambiguous) == (1, 1, 1)


def test_closed_store_raises_store_error(backend: Callable[[str], str]) -> None:
    db = backend("m.db")
    mem = recall.open(db)
    mem.close()
    with pytest.raises(recall.StoreError, match="closed"):
        mem.stats()


def test_missing_folder_for_db(tmp_path: Path) -> None:
    with pytest.raises(recall.StoreError, match="does not exist"):
        recall.open(tmp_path / "no" / "such" / "m.db")


def test_pipelined_batches_store_each_chunk_with_its_own_vector(
    backend: Callable[[str], str], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches embedded on the worker while later files are read land on the right chunks."""
    db = backend("m.db")
    monkeypatch.setattr(recall.indexing, "EMBED_BATCH", 3)
    notes = {f"n{i:02}.md": f"# Note {i}\nbody{i} word{i * 7} term{i % 5}" for i in range(23)}
    write_corpus(corpus, notes)
    ticks: list[tuple[int, ...]] = []
    with recall.open(db) as mem:
        report = mem.index(corpus, now=T0, progress=lambda *t: ticks.append(t))
        embedder = mem.embedder
    assert len(report.added) == 23 == report.chunks == report.embedded
    # After each file, and while the run waits for the worker: (files done, files, chunks
    # embedded, chunks read), every count only growing, ending with all embedded.
    assert sorted({t[:2] for t in ticks}) == [(i, 23) for i in range(1, 24)]
    for k in (0, 2, 3):
        assert [t[k] for t in ticks] == sorted(t[k] for t in ticks), f"count {k} only grows"
    assert all(t[2] <= t[3] for t in ticks), "never more embedded than read"
    assert ticks[-1] == (23, 23, 23, 23)
    # A callable of three arguments gets the first three.
    three: list[tuple[int, int, int]] = []
    with recall.open(backend("m2.db")) as mem:
        mem.index(
            corpus, now=T0, progress=lambda done, total, chunks: three.append((done, total, chunks))
        )
    assert three[-1] == (23, 23, 23)
    docs = stored(db).values()
    assert sum(len(d["chunks"]) for d in docs) == 23
    for d in docs:
        vectors = np.frombuffer(d["vectors"], dtype="<f4").reshape(len(d["chunks"]), -1)
        for chunk, got in zip(d["chunks"], vectors):
            want = embedder.embed([f"{d['title']}\n{chunk[1]}"])[0]
            np.testing.assert_allclose(got, want, atol=1e-6)


def test_the_progress_moves_while_a_small_runs_only_batch_is_embedded(
    backend: Callable[[str], str], corpus: Path
) -> None:
    """A run of fewer chunks than a batch is embedded a slice at a time, and the progress is
    told while it is: the count of embedded chunks climbs after every file is read, not only
    at the end (a model takes seconds over a batch)."""

    calls: list[int] = []

    class Slow(HashingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            calls.append(len(texts))
            time.sleep(0.3)  # a model's pace; the worker releases the GIL as onnxruntime does
            return super().embed(texts)

    total = recall.indexing.EMBED_SLICE * 2 + 7
    write_corpus(corpus, {f"n{i:03}.md": f"# Note {i}\nbody{i} term{i % 7}" for i in range(total)})
    ticks: list[tuple[int, ...]] = []
    with recall.open(backend("m.db"), embedder=Slow(64)) as mem:
        report = mem.index(corpus, now=T0, progress=lambda *t: ticks.append(t), calibrate=False)
    assert report.embedded == total < recall.indexing.EMBED_BATCH
    assert calls == [recall.indexing.EMBED_SLICE] * 2 + [7]
    # Every file read, the embedded count is told at each slice's end, not only the last.
    told = sorted({t[2] for t in ticks if t[0] == total})
    assert told[-1] == total
    assert {recall.indexing.EMBED_SLICE, 2 * recall.indexing.EMBED_SLICE} <= set(told)


def test_a_fast_embedder_takes_a_batch_in_one_call_after_the_first_slice(
    backend: Callable[[str], str], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slices are sized by the embedder's pace (`SLICE_SECONDS`): a hashing embedder, which
    embeds a batch in milliseconds, gets the rest of the first batch and every later batch in
    one call each, so that it is not slowed by calls it does not need."""
    monkeypatch.setattr(recall.indexing, "EMBED_BATCH", 128)
    monkeypatch.setattr(recall.indexing, "EMBED_SLICE", 16)
    write_corpus(corpus, {f"n{i:03}.md": f"# Note {i}\nbody{i} term{i % 7}" for i in range(300)})
    embedder = CountingEmbedder()
    sizes: list[int] = []
    inner = embedder.embed
    embedder.embed = lambda texts: sizes.append(len(texts)) or inner(texts)  # type: ignore[method-assign]
    with recall.open(backend("m.db"), embedder=embedder) as mem:
        report = mem.index(corpus, now=T0, calibrate=False)
    assert report.embedded == 300
    assert sizes == [16, 112, 128, 44]


def test_an_embedder_failure_rolls_the_run_back(
    backend: Callable[[str], str], corpus: Path
) -> None:
    db = backend("m.db")

    class Failing(HashingEmbedder):
        calls = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Failing.calls += 1
            if Failing.calls > 1:
                raise recall.EmbedderError("recall embedder: model crashed")
            return super().embed(texts)

    write_corpus(corpus, {"a.md": "alpha"})
    with recall.open(db, embedder=Failing(64)) as mem:
        mem.index(corpus, now=T0)
        write_corpus(corpus, {"b.md": "beta"})
        with pytest.raises(recall.EmbedderError, match="crashed"):
            mem.index(corpus, now=T0)
        assert mem.stats().documents == 1, "the failed run wrote nothing"


def _age(path: Path, seconds: float) -> None:
    """Set `path`'s modification time `seconds` into the past."""
    st = path.stat()
    then = st.st_mtime_ns - int(seconds * 1e9)
    os.utime(path, ns=(st.st_atime_ns, then))


def test_unchanged_size_and_time_are_not_read_again(
    backend: Callable[[str], str], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §3: an update costs what changed. A file whose size and modification time are those
    recorded when it was read is unchanged without being opened; any edit that moves the time
    is read."""
    db = backend("m.db")
    write_corpus(corpus, {"a.md": "# A\n\nalpha note\n", "b.md": "# B\n\nbeta note\n"})
    for name in ("a.md", "b.md"):
        _age(corpus / name, 3600)
    with recall.open(db, embedder="hashing-64") as mem:
        assert sorted(mem.index(corpus).added) == ["a.md", "b.md"]
        opened: list[str] = []
        real_open = os.open

        def spy(path: str | os.PathLike[str], *args: object, **kw: object) -> int:
            if Path(path).parent == corpus:  # the notes (the run's journal is written too)
                opened.append(os.fspath(path))
            return real_open(path, *args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(recall.indexing.os, "open", spy)
        report = mem.index(corpus)
        assert report.unchanged == 2 and opened == []
        # Same size, new time: read, and found changed.
        (corpus / "a.md").write_text("# A\n\nALPHA note\n", encoding="utf-8")
        report = mem.index(corpus)
        assert report.updated == ["a.md"] and [Path(p).name for p in opened] == ["a.md"]


def test_a_time_too_recent_to_trust_is_read_every_run(
    backend: Callable[[str], str], corpus: Path
) -> None:
    """A write in the same clock tick as the read must not be missed: a modification time within
    the last two seconds is never recorded as proof of "unchanged"."""
    db = backend("m.db")
    write_corpus(corpus, {"a.md": "# A\n\nalpha note\n"})
    with recall.open(db, embedder="hashing-64") as mem:
        mem.index(corpus)
        before = (corpus / "a.md").stat()
        (corpus / "a.md").write_text("# A\n\nALPHA note\n", encoding="utf-8")
        os.utime(corpus / "a.md", ns=(before.st_atime_ns, before.st_mtime_ns))  # same tick
        assert mem.index(corpus).updated == ["a.md"]


def test_a_store_from_before_file_times_records_them(tmp_path: Path, corpus: Path) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nalpha note\n"})
    _age(corpus / "a.md", 3600)
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-64") as mem:
        mem.index(corpus)
    con = sqlite3.connect(db)
    con.execute("UPDATE documents SET mtime_ns = NULL")
    con.commit()
    con.close()
    with recall.open(db) as mem:
        assert mem.index(corpus).unchanged == 1  # read and hashed: same content
    con = sqlite3.connect(db)
    (mtime,) = con.execute("SELECT mtime_ns FROM documents").fetchone()
    con.close()
    assert mtime == (corpus / "a.md").stat().st_mtime_ns  # recorded: not read next time


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/x/notes", "/x/notes", True),
        ("/x/notes/a/b.md", "/x/notes", True),
        ("/x/notes-evil/a.md", "/x/notes", False),
        ("/x/notesa.md", "/x/notes", False),
        ("/x", "/x/notes", False),
    ],
)
def test_within_compares_path_components_not_text(path: str, root: str, inside: bool) -> None:
    from recall.walk import within

    assert within(Path(path), Path(root)) is inside
