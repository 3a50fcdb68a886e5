"""A root that no longer exists is reported by `index`, `stats` and `doctor` with the way out,
and its documents are kept until the user drops them (SPEC §11: nothing removed silently)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

import recall
from recall.embedders import HashingEmbedder


def _notes(root: Path, n: int) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"n{i}.md").write_text(
            f"# Note {i}\n\nThe cache for tenant {i} expires after {i + 1} hours.\n",
            encoding="utf-8",
        )
    return root


def test_a_vanished_folder_is_reported_with_the_way_out_and_its_documents_kept(
    tmp_path: Path,
) -> None:
    notes, kept = _notes(tmp_path / "notes", 3), _notes(tmp_path / "other", 2)
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index([notes, kept])
        assert mem.stats().missing_roots == []
        assert next(c for c in mem.doctor().checks if c.name == "roots").status == "ok"
        # The folder goes away and what comes back elsewhere was edited: nothing to move.
        moved = tmp_path / "notes-moved"
        shutil.move(str(notes), str(moved))
        for note in moved.iterdir():
            note.write_text(note.read_text() + "\nEdited after the move.\n", encoding="utf-8")

        report = mem.index(moved)
        assert report.missing_roots == [(str(notes.resolve()), 3)] and report.moved == []
        stats = mem.stats()
        assert stats.documents == 3 + 2 + 3  # kept, never removed silently
        assert stats.missing_roots == [(str(notes.resolve()), 3)]
        check = next(c for c in mem.doctor().checks if c.name == "roots")
        assert check.status == "warning"
        assert str(notes.resolve()) in check.detail and "recall forget" in check.detail

        # The way out the message names: forget the old root.
        forgot = mem.forget([notes.resolve()], apply=True)
        assert forgot.applied and len(forgot.documents) == 3
        assert mem.stats().missing_roots == []
        assert mem.stats().documents == 5


def test_index_stats_and_doctor_say_it_on_the_command_line(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes", 2)
    db = tmp_path / "m.db"
    env = {**os.environ, "RECALL_EMBEDDER": "hashing-512", "COLUMNS": "300"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "recall.cli", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    assert cli("index", str(notes)).returncode == 0
    shutil.rmtree(notes)
    (tmp_path / "renamed").mkdir()
    (tmp_path / "renamed" / "other.md").write_text("# Other\n\nAnother note.\n")
    gone = str(notes.resolve())
    index = cli("index", str(tmp_path / "renamed"))
    assert index.returncode == 0, index.stderr
    assert f"2 documents from {gone}, which no longer exists here, are kept" in index.stdout
    assert f"'recall forget {gone} --apply'" in index.stdout
    as_json = json.loads(cli("index", str(tmp_path / "renamed"), "--json").stdout)
    assert as_json["missing_roots"] == [[gone, 2]] and as_json["moved"] == []
    assert "missing roots" in cli("stats").stdout
    assert json.loads(cli("stats", "--json").stdout)["missing_roots"] == [[gone, 2]]
    doctor = cli("doctor")
    assert "no longer exists here" in doctor.stdout and doctor.returncode == 0


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(512)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += len(texts)
        return super().embed(texts)


def _first_indexed(mem: recall.Memory) -> dict[str, str]:
    return {path: first for _, path, first in mem._store.document_list()}


def test_a_moved_folder_and_a_renamed_note_keep_their_rows(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes", 4)
    (notes / "n0.md").write_text(
        "---\nsupersedes: n1.md\n---\n# Note 0\n\nThe cache now expires after a day.\n",
        encoding="utf-8",
    )
    (notes / "untitled.md").write_text("no heading, so the file name is the title\n")
    embedder = CountingEmbedder()
    with recall.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.index(notes)
        first, churn = _first_indexed(mem), mem.stats().chunk_churn
        moved = tmp_path / "elsewhere" / "notes"
        moved.parent.mkdir()
        shutil.move(str(notes), str(moved))
        (moved / "n2.md").rename(moved / "n2-renamed.md")
        (moved / "untitled.md").rename(moved / "retitled.md")
        embedder.texts = 0

        report = mem.index(moved)
        root = str(notes.resolve())
        assert sorted(report.moved) == sorted(
            [(os.path.join(root, p), p) for p in ("n0.md", "n1.md", "n3.md")]
            + [(os.path.join(root, "n2.md"), "n2-renamed.md")]
        )
        # The note whose title is its file name is embedded again under its new name.
        assert report.added == ["retitled.md"] and embedder.texts == 1
        assert report.missing_roots == [(root, 1)]  # untitled.md: kept, and said so
        now = _first_indexed(mem)
        assert {p: now[p] for p in ("n0.md", "n1.md", "n3.md")} == {
            p: first[p] for p in ("n0.md", "n1.md", "n3.md")
        }
        assert now["n2-renamed.md"] == first["n2.md"]
        stats = mem.stats()
        assert stats.chunk_churn == churn + 1  # the re-embedded note only
        assert stats.edges_resolved == 1  # n0 still supersedes n1
        hits = mem.search("cache expires hours note 1", mode="development").hits
        n1 = next(h for h in hits if h.provenance.file == "n1.md")
        assert n1.verdict == "superseded"
        sources = {(path, source) for source, path, _ in mem._store.document_list()}
        assert ("n1.md", str(moved.resolve())) in sources and ("n1.md", root) not in sources
        assert n1.provenance.first_indexed_at == first["n1.md"]


def test_a_renamed_note_moves_on_either_backend_and_a_shared_store_has_no_missing_roots(
    tmp_path: Path, backend: Callable[[str], str]
) -> None:
    """PostgreSQL: several machines may index into one namespace, so a root missing on this
    machine may be another machine's: it is neither reported nor a source of moves there."""
    notes, other = _notes(tmp_path / "notes", 2), _notes(tmp_path / "other", 1)
    db = backend("m.db")
    embedder = CountingEmbedder()
    with recall.open(db, embedder=embedder) as mem:
        mem.index([notes, other])
        first = _first_indexed(mem)
        (notes / "n1.md").rename(notes / "n1-renamed.md")
        shutil.rmtree(other)
        embedder.texts = 0
        report = mem.index(notes)
        assert report.moved == [("n1.md", "n1-renamed.md")] and embedder.texts == 0
        assert _first_indexed(mem)["n1-renamed.md"] == first["n1.md"]
        shared = db.startswith("postgresql://")
        want = [] if shared else [(str(other.resolve()), 1)]
        assert report.missing_roots == want == mem.stats().missing_roots
