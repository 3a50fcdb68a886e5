"""The store is a plain SQLite + sqlite-vec file: an independent reader (apsw with the
sqlite-vec PyPI package) sees the same documents and finds the stored vectors by KNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import recall

from .conftest import EXAMPLES

apsw = pytest.importorskip("apsw")
sqlite_vec = pytest.importorskip("sqlite_vec")


def test_independent_reader_knn_returns_stored_vectors(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)
        embedder = mem.embedder
        n_chunks = mem.stats().chunks

    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = con.execute(
        "SELECT c.id, c.text, d.title, c.heading_path, v.embedding "
        "FROM chunks c JOIN documents d ON d.id = c.doc_id JOIN vec_chunks v ON v.chunk_id = c.id"
    ).fetchall()
    assert len(rows) == n_chunks > 0

    for chunk_id, _text, _title, _headings, blob in rows:
        stored = np.frombuffer(blob, dtype="<f4")
        assert stored.shape == (embedder.dim,)
        assert abs(float(np.linalg.norm(stored)) - 1.0) < 1e-5
        knn = con.execute(
            "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = 3 "
            "ORDER BY distance",
            (blob,),
        ).fetchall()
        assert len(knn) == 3
        # Its own vector is the nearest (cosine distance 0); ties with identical chunks allowed.
        assert knn[0][1] < 1e-5
        assert chunk_id in [cid for cid, dist in knn if dist < 1e-5]


def test_independent_reader_query_matches_the_right_memo(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)
        query = mem.embedder.embed(["restore backups WAL archiving PostgreSQL"])[0]

    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    (path,) = con.execute(
        "SELECT d.path FROM (SELECT chunk_id FROM vec_chunks WHERE embedding MATCH ? AND k = 1) v "
        "JOIN chunks c ON c.id = v.chunk_id JOIN documents d ON d.id = c.doc_id",
        (query.astype("<f4").tobytes(),),
    ).fetchone()
    assert path == "database-choice.md"
