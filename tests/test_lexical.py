"""The lexical leg (SPEC §1, §4): Tantivy BM25 inside the store file, kept in step with
incremental indexing, fused with the dense leg by reciprocal rank."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import recall
from recall import _core

from .conftest import EXAMPLES, write_corpus

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


class OpaqueEmbedder:
    """Deterministic vectors that carry no lexical signal (a seeded RNG per text): the dense
    leg cannot find an identifier, only the lexical leg can."""

    name = "test-opaque-64"
    dim = 64
    fingerprint = "test-opaque-64-v1"

    def embed(self, texts: Sequence[str]) -> Any:
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)


def _off_topic(corpus: Path, n: int = 400) -> None:
    notes = {f"n{i:03d}.md": f"# Note {i}\n\nRoutine status update number {i}.\n" for i in range(n)}
    notes["quota.md"] = "# Quota errors\n\nError code E-4429 means the tenant quota is exhausted.\n"
    write_corpus(corpus, notes)


def test_identifier_missed_by_dense_is_found_lexically(tmp_path: Path, corpus: Path) -> None:
    _off_topic(corpus)
    with recall.open(tmp_path / "m.db", embedder=OpaqueEmbedder()) as mem:
        mem.index(corpus)
        res = mem.search("E-4429", now=NOW, mode="development")
    hit = next(h for h in res.hits if h.provenance.file == "quota.md")
    assert hit.retrieval is not None
    assert hit.retrieval.dense_rank is None, "the opaque dense leg must not find it"
    assert hit.retrieval.lexical_rank == 1
    assert res.hits.index(hit) < 5
    # SPEC §4: gap_warning comes from dense cosines only; the lexical match never clears it.
    assert res.gap_warning


def test_contributions_sum_to_the_fused_score(tmp_path: Path) -> None:
    with recall.open(tmp_path / "m.db") as mem:
        mem.index(EXAMPLES)
        res = mem.search("HTTP 429 Retry-After", now=NOW, mode="development")
        explained = mem.explain("HTTP 429 Retry-After", "rate-limits-v2.md", now=NOW)
    for hit in res.hits:
        r = hit.retrieval
        assert r is not None
        want = sum(1 / (60 + rank) for rank in (r.dense_rank, r.lexical_rank) if rank)
        assert r.dense_rrf + r.lexical_rrf == pytest.approx(r.fused) == pytest.approx(want)
    legs = explained["retrieval"]
    assert legs["dense_rank"] and legs["lexical_rank"]
    assert legs["dense_rrf"] + legs["lexical_rrf"] == pytest.approx(legs["fused"])


@given(
    st.lists(st.integers(0, 30), max_size=20, unique=True),
    st.lists(st.integers(0, 30), max_size=20, unique=True),
)
def test_rrf_properties(dense: list[int], lexical: list[int]) -> None:
    fused = _core.rrf(dense, lexical)
    swapped = _core.rrf(lexical, dense)
    assert sorted((c, s) for c, _, _, s in fused) == sorted((c, s) for c, _, _, s in swapped)
    assert {c for c, *_ in fused} == set(dense) | set(lexical)
    for chunk, dr, lr, score in fused:
        assert dr == (dense.index(chunk) + 1 if chunk in dense else None)
        assert lr == (lexical.index(chunk) + 1 if chunk in lexical else None)
        assert score == pytest.approx(sum(1 / (60 + r) for r in (dr, lr) if r))
    assert [s for *_, s in fused] == sorted((s for *_, s in fused), reverse=True)
    if dense and lexical and dense[0] == lexical[0]:
        assert fused[0][0] == dense[0], "first in both legs is first"


def _results(db: Path, queries: Sequence[str]) -> list[list[tuple[str, str, Any]]]:
    with recall.open(db) as mem:
        out = []
        for q in queries:
            res = mem.search(q, now=NOW, mode="development")
            out.append([(h.provenance.file, h.verdict, h.retrieval) for h in res.hits])
        return out


QUERIES = ["HTTP 429", "PgBouncer pool size", "restart the gateway", "deploy freeze"]


def test_copied_store_without_the_corpus_answers_identically(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    shutil.copytree(EXAMPLES, corpus)
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(corpus)
    before = _results(db, QUERIES)
    assert any(r.lexical_rank for row in before for *_, r in row if r), "lexical leg used"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(db, elsewhere / "copy.db")  # the .db alone
    shutil.rmtree(corpus)
    db.unlink()
    assert _results(elsewhere / "copy.db", QUERIES) == before


def test_lexical_leg_follows_edits_and_deletions(tmp_path: Path, corpus: Path) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe zeppelin hangar is open.\n", "b.md": "# B\n\nx\n"})
    with recall.open(tmp_path / "m.db", embedder=OpaqueEmbedder()) as mem:
        mem.index(corpus)

        def lexical_files(query: str) -> set[str]:
            res = mem.search(query, now=NOW, mode="development", k=10)
            return {h.provenance.file for h in res.hits if h.retrieval and h.retrieval.lexical_rank}

        assert lexical_files("zeppelin") == {"a.md"}
        (corpus / "a.md").write_text("# A\n\nThe airship hangar is closed.\n")
        (corpus / "c.md").write_text("# C\n\nA zeppelin landed.\n")
        mem.index(corpus)
        assert lexical_files("zeppelin") == {"c.md"}
        assert lexical_files("airship") == {"a.md"}
        (corpus / "c.md").unlink()
        mem.index(corpus)
        assert lexical_files("zeppelin") == set()
    # A fresh process sees the same committed lexical state.
    with recall.open(tmp_path / "m.db", embedder=OpaqueEmbedder()) as mem:
        res = mem.search("airship", now=NOW, mode="development")
        assert res.hits[0].provenance.file == "a.md" and res.hits[0].retrieval is not None
        assert res.hits[0].retrieval.lexical_rank == 1


def test_missing_lexical_files_are_rebuilt_from_the_chunks(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)
    before = _results(db, QUERIES)
    con = sqlite3.connect(db)
    con.execute("DELETE FROM lexical_files")
    con.execute("DELETE FROM meta WHERE key = 'lexical_generation'")
    con.commit()
    con.close()
    assert _results(db, QUERIES) == before, "rebuilt in memory for reading"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)  # an unchanged run persists the rebuilt index
    con = sqlite3.connect(db)
    (files,) = con.execute("SELECT count(*) FROM lexical_files").fetchone()
    con.close()
    assert files > 0
    assert _results(db, QUERIES) == before


@pytest.mark.parametrize(
    "query",
    [
        "chunk:3",
        'title:foo AND (bar OR "baz',
        "*",
        "-x",
        "NOT",
        "quota " * 2000,
        "?!.,;:()[]{}",
        "🙂🚀",
        "E-4429 OR chunk:1 AND NOT title:*",
    ],
)
def test_the_users_text_is_never_query_syntax(tmp_path: Path, corpus: Path, query: str) -> None:
    _off_topic(corpus, n=20)
    with recall.open(tmp_path / "m.db", embedder=OpaqueEmbedder()) as mem:
        mem.index(corpus)
        res = mem.search(query, now=NOW, mode="development")
    lexical = [h for h in res.hits if h.retrieval and h.retrieval.lexical_rank]
    # Searched as words: every lexical hit holds one of the query's words (`chunk:3` finds
    # the note that says "3", never chunk 3 through the internal field); syntax alone finds
    # nothing, and the dense leg still answers.
    words = {w for w in re.findall(r"[a-z0-9]+", query.lower())} - {"and", "or", "not"}
    for h in lexical:
        held = set(re.findall(r"[a-z0-9]+", f"{h.title} {h.text}".lower()))
        assert words & {w.rstrip("s") for w in held} | words & held, (query, h.provenance.file)
    if not words:
        assert lexical == []
    if "quota" in words:
        assert lexical[0].provenance.file == "quota.md"
    assert res.hits
