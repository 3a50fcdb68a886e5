"""The store contract (`recall.store.Store`), call by call, on every backend: the single file and
a PostgreSQL namespace answer each call the same way. A new backend passes by implementing the
contract; nothing here knows which backend it runs on."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from recall import _core
from recall.backends import locate
from recall.errors import EmbedderMismatchError, RecallError
from recall.rows import EdgeRow, ExportedDocument, SearchOutcome
from recall.store import Store

ROOT = "/corpus"
NOW = "2026-01-01T00:00:00Z"
LATER = "2026-02-01T00:00:00Z"
EMBEDDER = ("test-4", 4, "fp4")


@pytest.fixture
def store(backend: Callable[[str], str]) -> Iterator[Store]:
    opened = locate(backend("contract.db")).open(create=True)
    assert opened is not None
    yield opened
    opened.close()


def vector(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    unit: np.ndarray = v / np.linalg.norm(v)
    return unit


def supersedes(reference: str) -> EdgeRow:
    key = _core.resolution_key(reference)
    return (reference, key, False, "frontmatter", None, f"supersedes: {reference}", False, None)


def document(path: str, text: str, v: np.ndarray, edges: list[EdgeRow] | None = None) -> Any:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return dict(
        source=ROOT,
        path=path,
        key=_core.resolution_key(path),
        title=stem.title(),
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        size_bytes=len(text),
        valid_from_raw=None,
        valid_until_raw=None,
        valid_from=None,
        valid_until=None,
        metadata_error=None,
        frontmatter="",
        chunks=[(0, text, 0, len(text), 1, 1, "")],
        vectors=v.astype("<f4").tobytes(),
        edges=edges or [],
    )


def written(store: Store, *documents: Any, now: str = NOW) -> int:
    store.begin(*EMBEDDER)
    store.use_server_clock(False)
    for d in documents:
        store.put_document(d, now=now)
    return store.commit(now)


def search(store: Store, v: np.ndarray, text: str) -> SearchOutcome:
    return store.search(
        v.astype("<f4").tobytes(),
        text=text,
        k=5,
        candidates=10,
        policy=_core.Policy(
            now_us=1_800_000_000_000_000,
            threshold=0.5,
            scale=0.05,
            lexical_weight=0.15,
            identifier_weight=0.3,
        ),
    )


V1, V2, V3 = vector(1, 0, 0, 0), vector(0.9, 0.1, 0, 0), vector(0, 0, 1, 0)
RATES = document("limits/rates-v1.md", "The API allows 100 requests per minute.", V1)
RATES_V2 = document(
    "limits/rates-v2.md", "The API allows 500 requests per minute.", V2, [supersedes("rates-v1")]
)
DEPLOY = document("deploy.md", "Deploys happen on Tuesdays after review.", V3)


def test_a_new_store_is_empty(store: Store) -> None:
    assert store.embedder() is None
    assert store.freshness()[0] == 0
    assert store.sources() == [] and store.document_list() == []
    assert store.known_documents(ROOT) == [] and store.journal() == []
    assert store.read_only is None and isinstance(store.shared, bool)
    assert store.meta("no-such-key") is None


def test_a_commit_is_seen_whole_and_a_rollback_leaves_nothing(store: Store) -> None:
    first = written(store, RATES, DEPLOY)
    assert store.embedder() == EMBEDDER
    assert sorted(p for _, p, _ in store.document_list()) == ["deploy.md", "limits/rates-v1.md"]
    assert store.sources() == [(ROOT, 2)]
    known = {p: (h, size, n) for p, h, size, _, n in store.known_documents(ROOT)}
    assert known["deploy.md"] == (DEPLOY["content_hash"], DEPLOY["size_bytes"], 1)
    assert store.freshness()[0] == 2
    store.begin(*EMBEDDER)
    store.put_document(RATES_V2, now=NOW)
    store.rollback()
    assert len(store.document_list()) == 2
    assert written(store, RATES_V2) > first


def test_another_embedder_is_refused_and_leaves_no_write_open(store: Store) -> None:
    written(store, RATES)
    with pytest.raises(EmbedderMismatchError):
        store.begin("other-8", 8, "fp8")
    assert written(store, DEPLOY) > 0


def test_vectors_and_pages_come_back_as_they_were_written(store: Store) -> None:
    written(store, RATES, RATES_V2)
    title, chunks, raw = store.document_vectors(ROOT, "limits/rates-v2.md") or ("", [], b"")
    assert title == "Rates-V2" and chunks == [(RATES_V2["chunks"][0][1], "")]
    assert np.frombuffer(raw, dtype="<f4").tolist() == pytest.approx(V2.tolist())
    assert store.document_vectors(ROOT, "missing.md") is None
    page = store.export(after=0, limit=1)
    assert len(page) == 1
    rest = store.export(after=page[0]["id"], limit=10)
    assert sorted(d["path"] for d in page + rest) == ["limits/rates-v1.md", "limits/rates-v2.md"]


def test_meta_round_trips_inside_and_outside_a_write(store: Store) -> None:
    written(store, RATES)
    store.set_meta("calibration:x", '{"a": 1}')
    assert store.meta("calibration:x") == '{"a": 1}'
    store.begin(*EMBEDDER)
    store.set_meta("calibration:x", '{"a": 2}')
    store.commit(LATER)
    assert store.meta("calibration:x") == '{"a": 2}'


def test_search_judges_the_same_way(store: Store) -> None:
    written(store, RATES, RATES_V2, DEPLOY)
    out = search(store, V1, "how many requests per minute does the API allow")
    verdicts = {h["path"]: h["verdict"] for h in out["hits"]}
    assert verdicts["limits/rates-v1.md"] == "superseded"
    assert verdicts["limits/rates-v2.md"] == "ok"
    first = out["hits"][0]
    assert first["path"] == "limits/rates-v2.md" and first["proven"] is not None
    assert first["superseded_by"] is None and first["lexical"] > 0
    stale = next(h for h in out["hits"] if h["path"] == "limits/rates-v1.md")
    assert stale["superseded_by"] == "limits/rates-v2.md" and stale["proven"] is True
    assert [c for c, _ in out["dense"]] and out["generation"] >= 1


def model_rows(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit rows with every component set, as a model's vectors are (no 3-bit code gives one
    back)."""
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def test_the_dense_leg_returns_the_exact_top_k_of_a_models_vectors(store: Store) -> None:
    """The dense leg holds a model's rows as codes and reads back the vectors it rescores: what
    it returns is the exact scan's top k, with the exact cosines."""
    rows = model_rows(300, 32, seed=7)
    store.begin("test-32", 32, "fp32")
    store.use_server_clock(False)
    for i, v in enumerate(rows):
        store.put_document(document(f"notes/n{i:03}.md", f"Note {i}.", v), now=NOW)
    store.commit(NOW)
    for q in model_rows(12, 32, seed=8):
        out = search(store, q, "note")
        exact = np.sort(rows @ q)[::-1][:10]
        assert [s for _, s in out["dense"]] == pytest.approx(exact.tolist(), abs=1e-6)
        hit = max(out["hits"], key=lambda h: h["score"])
        assert hit["score"] == pytest.approx(float(exact[0]), abs=1e-6)


def test_explain_names_the_edge_and_nothing_for_an_unknown_file(store: Store) -> None:
    written(store, RATES, RATES_V2)
    args: Any = dict(
        text="requests per minute",
        policy=_core.Policy(now_us=1_800_000_000_000_000, threshold=0.5, scale=0.05),
    )
    q = V1.astype("<f4").tobytes()
    told = store.explain("limits/rates-v1.md", q, **args)
    assert told is not None and told["verdict"] == "superseded"
    # Ranked in the dense leg as the exact scan ranks it: the query is this note's vector.
    assert told["retrieval"]["dense_rank"] == 1
    assert store.explain("limits/rates-v2.md", q, **args)["retrieval"]["dense_rank"] == 2  # type: ignore[index]
    assert [c["declarer"] for c in told["claims_in"]] == ["limits/rates-v2.md"]
    assert store.explain("missing.md", q, **args) is None


def test_declarations_times_moves_and_removals(store: Store) -> None:
    written(store, RATES, RATES_V2, DEPLOY)
    store.begin(*EMBEDDER)
    assert store.set_declarations(ROOT, "deploy.md", [supersedes("rates-v2")])
    assert not store.set_declarations(ROOT, "missing.md", [])
    store.set_file_time(ROOT, "deploy.md", 123)
    assert store.move_document(
        ROOT, "limits/rates-v1.md", ROOT, "archive/rates-v1.md", "rates-v1", "Rates-V1", None
    )
    assert not store.move_document(ROOT, "missing.md", ROOT, "x.md", "x", "X", None)
    assert store.remove_documents(ROOT, ["limits/rates-v2.md", "missing.md"]) == 1
    store.commit(LATER)
    paths = sorted(p for _, p, _ in store.document_list())
    assert paths == ["archive/rates-v1.md", "deploy.md"]
    times = {p: t for p, _, _, t, _ in store.known_documents(ROOT)}
    assert times["deploy.md"] == 123


def test_forget_plan_names_the_declarations_toward_a_document(store: Store) -> None:
    written(store, RATES, RATES_V2)
    target = [(ROOT, "limits/rates-v1.md"), (ROOT, "missing.md")]
    plan = store.forget_plan(target)
    assert [(s, p, n) for s, p, _, n, _ in plan] == [(ROOT, "limits/rates-v1.md", 1)]
    assert any("rates-v2" in named for *_, names in plan for _, named in names)


def test_the_journal_keeps_entries_as_given_one_per_path(store: Store) -> None:
    written(store, RATES)
    entry = (ROOT, "limits/rates-v1.md", "h1", NOW, LATER, None)
    other = (ROOT, "deploy.md", "h2", NOW, NOW, None)
    store.begin(*EMBEDDER)
    store.write_journal([entry, other])
    store.rollback()
    assert store.journal() == []  # nothing of a rolled-back write
    store.begin(*EMBEDDER)
    store.write_journal([entry, other])
    store.commit(LATER)
    assert store.journal() == [other, entry]  # oldest forgotten first
    undone = (*entry[:5], LATER)
    store.begin(*EMBEDDER)
    store.write_journal([undone])  # replaces the entry of its path
    store.drop_journal([(ROOT, "deploy.md"), (ROOT, "missing.md")])
    store.commit(LATER)
    assert store.journal() == [undone]
    # The journal never touches documents.
    assert [(s, p) for s, p, _ in store.document_list()] == [(ROOT, "limits/rates-v1.md")]


def test_summaries_and_checks(store: Store) -> None:
    written(store, RATES, RATES_V2)
    stats = store.stats()
    assert stats["documents"] == 2 and stats["chunks"] == 2
    checks = {name: status for name, status, _ in store.doctor()}
    assert checks and set(checks.values()) <= {"ok", "warning"}


def edge(
    reference: str, vocabulary: str, *, overridden: bool = False, standing: str | None = None
) -> EdgeRow:
    statement = f"Superseded by {reference}"
    key = _core.resolution_key(reference)
    return (reference, key, True, vocabulary, 3, statement, overridden, standing)


def test_stats_count_declarations_as_the_trust_layer_reads_them(store: Store) -> None:
    retired = ("withdrawn", None, "madr", 2, "Status: withdrawn", False)
    header = document(
        "adr/0002-queues.md",
        "We use a queue.",
        V3,
        [
            edge("deploy", "madr"),  # resolves
            edge("0009-missing", "madr"),  # names no note
            edge("rates-v2", "madr", overridden=True),  # frontmatter said otherwise
            edge("rates-v1", "madr", standing="partial"),  # partly superseded: never in force
            edge("", "madr", standing="unread"),  # a statement the reader could not classify
        ],
    )
    written(store, RATES, RATES_V2, DEPLOY, {**header, "retired": retired})
    search(store, V1, "queue")  # counted from the searcher's corpus where one is held
    stats = store.stats()
    assert (stats["edges_resolved"], stats["edges_dangling"]) == (2, 1)
    assert (stats["edges_ambiguous"], stats["edges_self"]) == (0, 0)
    assert stats["edges_by_vocabulary"] == [("frontmatter", 1, 0), ("madr", 2, 1)]
    assert (stats["partial"], stats["retired"], stats["unread"]) == (1, 1, 1)
    # Under `frontmatter`, a reader's declarations are counted as not in force (the corpus
    # held for the state before is not used for the one after).
    store.begin(*EMBEDDER)
    store.set_meta("vocabularies", "frontmatter")
    store.commit(LATER)
    stats = store.stats()
    assert stats["vocabularies"] == "frontmatter"
    assert stats["edges_by_vocabulary"] == [("frontmatter", 1, 0), ("madr", 0, 1)]
    assert (stats["edges_resolved"], stats["partial"], stats["retired"]) == (1, 0, 0)


def test_churn_is_the_record_the_writer_leaves(store: Store) -> None:
    written(store, RATES)
    before = store.freshness()[3]
    store.begin(*EMBEDDER)
    store.remove_documents(ROOT, ["limits/rates-v1.md"])
    store.set_meta("chunk_churn", str(before + 5))
    store.commit(LATER)  # the store adds nothing of its own (`recall.churn` counts)
    assert store.freshness()[3] == store.stats()["chunk_churn"] == before + 5


def test_an_export_puts_back_into_an_empty_store_as_it_was(
    store: Store, backend: Callable[[str], str]
) -> None:
    retired = ("rejected", "2025-05-01", "madr", 2, "Status: rejected", False)
    written(store, RATES, RATES_V2, {**DEPLOY, "retired": retired, "mtime_ns": 42})
    exported = store.export(after=0, limit=10)
    copy = locate(backend("copy.db")).open(create=True)
    assert copy is not None
    try:
        copy.begin(*EMBEDDER)
        copy.use_server_clock(False)
        for d in exported:
            copy.put_document(d, now=d["indexed_at"], first_indexed_at=d["first_indexed_at"])
        copy.commit(LATER)
        again = copy.export(after=0, limit=10)
    finally:
        copy.close()

    def comparable(docs: list[ExportedDocument]) -> list[dict[str, Any]]:
        return [{k: v for k, v in d.items() if k != "id"} for d in docs]

    assert comparable(again) == comparable(exported)
    assert exported[-1]["retired"][:3] == ("rejected", "2025-05-01", "madr")


def test_close_is_idempotent_and_reads_after_it_fail_cleanly(store: Store) -> None:
    written(store, RATES)
    store.close()
    store.close()
    with pytest.raises(RecallError):
        store.document_list()


def test_reads_inside_a_write_leave_nothing_after_a_rollback(store: Store) -> None:
    written(store, RATES, DEPLOY)
    q = "requests per minute deploys"
    before = {h["path"]: h["verdict"] for h in search(store, V1, q)["hits"]}
    assert before["limits/rates-v1.md"] == "ok" and "deploy.md" in before
    store.begin(*EMBEDDER)
    store.use_server_clock(False)
    store.put_document(RATES_V2, now=NOW)
    assert store.remove_documents(ROOT, ["deploy.md"]) == 1
    store.stats()  # reads the corpus (on a server: the declarations) inside the write
    store.rollback()
    assert {h["path"]: h["verdict"] for h in search(store, V1, q)["hits"]} == before
    assert store.stats()["documents"] == 2
