"""The read path of a query on PostgreSQL: both legs' retrieval, the candidates' rows, explain.

Owns: both legs over what the process holds of the namespace (`replica.py`): the dense leg's
scan of the vectors' codes (the file store's scan), reading back the few vectors it rescores
exactly, and the lexical leg's BM25 over the chunks' terms, weighted by the lexicon's document
frequencies (as the file store's index scores them); reading the rows the trust layer and the
caller need, and handing them to the Rust core (`_core.Corpus`), which fuses and judges with
the code the single-file store judges with.
Does not own: any rule, or the connection (base.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from recall import _core
from recall.postgres.base import (
    EMBEDDER_KEYS,
    FRESHNESS_KEYS,
    Namespace,
    bound_of,
    freshness_of,
    le_vector,
)
from recall.postgres.replica import Replica

if TYPE_CHECKING:
    from recall.rows import HitRow, SearchOutcome

__all__ = ["Searching"]


#: Seconds what `search_state` read ahead serves the search of its text that follows (it
#: follows at once unless that search was refused before it ran; then it is left to expire).
AHEAD = 1.0


class Searching(Namespace):
    """Search and explain over one namespace."""

    def search_state(
        self, record_prefix: str, text: str | None = None
    ) -> tuple[tuple[int, str | None, str | None, int], tuple[str, int, str] | None, str | None]:
        """The contract's state in one round trip; given the query's `text`, the same round trip
        also reads what its search starts with (the lexicon's counts for its terms,
        `_send_lexicon`), kept for this thread's next `search` of that text."""
        self._ahead.found = None
        with self._conn() as c:
            if not self._exists(c):
                return (0, None, None, 0), None, None
            ahead = text is not None and self._exists(c, "chunks")
            with c.pipeline():
                state = c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key = ANY(%s) OR key ="
                    f" %s || (SELECT value FROM {self._t('meta')}"
                    " WHERE key = 'embedder_fingerprint')",
                    ([*FRESHNESS_KEYS, *EMBEDDER_KEYS], record_prefix),
                )
                terms = _core.lexical_terms(text) if ahead and text is not None else None
                sent = self._send_lexicon(c, terms) if terms is not None else None
            rows = dict(state.fetchall())
            if terms is not None and sent is not None:
                read = _counts(terms, sent.fetchall())
                self._ahead.found = (text, time.monotonic(), read)
        bound = bound_of(rows)
        record = rows.get(record_prefix + bound[2]) if bound else None
        return freshness_of(rows), bound, record

    def set_lean(self, lean: bool) -> None:
        """Nothing here: a namespace's replica serves every search of this process and is
        held whole."""

    def search(
        self,
        query: bytes,
        *,
        text: str,
        k: int,
        candidates: int,
        policy: _core.Policy,
    ) -> SearchOutcome:
        t0 = time.perf_counter()
        found, self._ahead.found = getattr(self._ahead, "found", None), None
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return _empty_outcome()
            if found is not None and found[0] == text and time.monotonic() - found[1] < AHEAD:
                read = found[2]
            else:
                read = self._lexicon(c, text)  # unless `search_state` read it with the state
            generation, term_dfs, chunk_count, tokens = read
            reader = self._reader(c)
            t_sent = time.perf_counter()
            with self._replica_lock:
                replica = self._replica_for(c, generation, vectors=True)
                t_loaded = time.perf_counter()
                assert replica.vectors is not None
                dense = [i for i, _ in replica.vectors.nearest(query, candidates, reader)]
                t_dense = time.perf_counter()
                lexical = replica.postings.rank(text, term_dfs, chunk_count, tokens, candidates)
                corpus = replica.corpus
            t_lexical = time.perf_counter()
            # One round trip: the rows of both legs' chunks, with their vectors.
            ids = list(dict.fromkeys([*dense, *(i for i, _ in lexical)]))
            rows = self._chunk_rows(c, replica, "id = ANY(%s)", (ids,))

            def fetch(doc_id: int) -> list[tuple[int, bytes, str]]:
                found = self._chunk_rows(c, replica, "doc_id = %s", (doc_id,))
                rows.update(found)
                return [(i, *chunk[1:]) for i, chunk in self._judged(replica, found).items()]

            out = corpus.judge(
                query,
                text=text,
                dense=dense,
                lexical=[i for i, _ in lexical],
                chunks=self._judged(replica, rows),
                term_dfs=term_dfs,
                chunk_count=chunk_count,
                fetch=fetch,
                k=k,
                candidates=candidates,
                policy=policy,
            )
        hits: list[HitRow] = []
        for h in out["hits"]:
            row = rows.get(h["chunk"])
            if row is None:
                continue
            retired = row["retired"] if h.pop("retired_in_force") else None
            # The core built the judgment (`py_hits::judgment`); the passage comes from the row.
            hits.append(cast("HitRow", {**row["shown"], **h, "retired": retired}))
        t_done = time.perf_counter()
        ms = 1e3
        return {
            "hits": hits,
            "dense": out["dense"],
            "lexical": lexical,
            "generation": generation,
            "documents": len(corpus),
            # The lexicon's counts (read with the state before the query was embedded, else
            # here) and the BM25 order are timed as lexical; bringing the corpus and the
            # chunks forward after a commit as load.
            "load_ms": (t_loaded - t_sent) * ms,
            "dense_ms": (t_dense - t_loaded) * ms,
            "lexical_ms": (t_sent - t0 + t_lexical - t_dense) * ms,
            "fuse_ms": 0.0,
            "trust_ms": (t_done - t_lexical) * ms,
        }

    def _send_lexicon(self, c: Any, terms: list[str]) -> Any:
        """Send (in a pipeline: queue) the statement reading the generation, the chunk and
        token counts, and each term's document frequency (`_counts` reads its rows)."""
        return c.execute(
            f"SELECT key, value::bigint FROM {self._t('meta')}"
            " WHERE key IN ('generation', 'chunks', 'tokens')"
            f" UNION ALL SELECT '.' || term, df FROM {self._t('lexicon')} WHERE term = ANY(%s)",
            (terms,),
        )

    def _lexicon(self, c: Any, text: str) -> _Counted:
        """What the lexicon counts for `text`'s terms, in one round trip."""
        terms = _core.lexical_terms(text)
        return _counts(terms, self._send_lexicon(c, terms).fetchall())

    def _chunk_rows(
        self, c: Any, replica: Replica, where: str, args: tuple[Any, ...]
    ) -> dict[int, dict[str, Any]]:
        """The rows of the chunks `where` selects, each with what the process holds of its
        document (`replica`); a chunk of a document committed after those is left out."""
        found = c.execute(f"SELECT {_ROW} FROM {self._t('chunks')} WHERE {where}", args).fetchall()
        with self._replica_lock:
            return _rows(found, replica.documents)

    def _reader(self, c: Any) -> Callable[[list[int]], bytes]:
        """What the held codes read back their vectors with: the chunks' vectors as
        little-endian float32 bytes, in the order asked, one round trip."""

        def read(ids: list[int]) -> bytes:
            found = dict(
                c.execute(
                    f"SELECT id, vector_send(embedding) FROM {self._t('chunks')}"
                    " WHERE id = ANY(%s)",
                    (ids,),
                ).fetchall()
            )
            # A chunk that is not there reads as nothing: the core refuses the read.
            return b"".join(le_vector(bytes(found[i])) for i in ids if i in found)

        return read

    def _judged(
        self, replica: Replica, rows: dict[int, dict[str, Any]]
    ) -> dict[int, tuple[int, bytes, str]]:
        """Chunk id → (document id, vector, lexical body) as the core judges a chunk: the vector
        as the process's scan scores it (the one its code gives back, as the file store's scan
        scores it) where it holds one, else the one read with the row. A chunk committed after
        what the process holds (`replica`) is left out (its document is not in the corpus they
        go with either)."""
        with self._replica_lock:
            vectors = replica.vectors
            if vectors is None:
                return {}
            held = {i: vectors.get(i) for i in rows if i in vectors}
        return {
            i: (r["doc_id"], held[i] or r["vector"], r["body"])
            for i, r in rows.items()
            if i in held
        }

    def explain(
        self,
        file: str,
        query: bytes,
        *,
        text: str,
        policy: _core.Policy,
    ) -> dict[str, Any] | None:
        """Why `file` gets its verdict (SPEC §8.2), as the file store explains it: the same
        explanation from the same corpus, with the document's ranks in this backend's legs."""
        with self._conn() as c:
            if not self._exists(c, "chunks"):
                return None
            _, corpus = self._corpus_for(c)
            doc_id = corpus.locate(file)
            if doc_id is None:
                return None
            _, term_dfs, chunk_count, tokens = self._lexicon(c, text)
            # Each leg's order to the explain depth, over what the process holds.
            depth = _core.EXPLAIN_DEPTH
            with self._replica_lock:
                replica = self._replica_for(c, vectors=True)
                assert replica.vectors is not None
                dense = [i for i, _ in replica.vectors.nearest(query, depth, self._reader(c))]
                ranked = replica.postings.rank(text, term_dfs, chunk_count, tokens, depth)
                lexical = [i for i, _ in ranked]
            rows = self._chunk_rows(c, replica, "doc_id = %s", (doc_id,))

            def rank(ids: list[int]) -> int | None:
                owners = dict(
                    c.execute(
                        f"SELECT id, doc_id FROM {self._t('chunks')} WHERE id = ANY(%s)", (ids,)
                    ).fetchall()
                )
                found = [i for i, chunk in enumerate(ids, 1) if owners.get(chunk) == doc_id]
                return found[0] if found else None

            declarations = c.execute(
                f"SELECT vocabulary, line, statement, overridden, {self._standing(c)}"
                f" FROM {self._t('edges')} WHERE doc_id = %s ORDER BY id",
                (doc_id,),
            ).fetchall()
            retired = c.execute(
                "SELECT retired_state, retired_since, coalesce(retired_vocabulary, ''),"
                " retired_line, retired_statement, retired_overridden"
                f" FROM {self._t('documents')} WHERE id = %s AND retired_state IS NOT NULL",
                (doc_id,),
            ).fetchone()
            setting = self.meta("vocabularies") or "all"
            return corpus.explain(
                doc_id,
                query,
                text=text,
                chunks=[(i, *chunk[1:]) for i, chunk in self._judged(replica, rows).items()],
                term_dfs=term_dfs,
                chunk_count=chunk_count,
                dense_rank=rank(dense),
                lexical_rank=rank(lexical),
                declarations=[tuple(d) for d in declarations],
                retired=tuple(retired) if retired else None,
                vocabularies=setting,
                policy=policy,
            )


#: The columns of a chunk's row a search reads (`_rows`); its document's come from what the
#: process holds (`Replica.documents`).
_ROW = "id, doc_id, ordinal, text, heading_path, line_start, line_end, vector_send(embedding)"

#: (generation, each term's document frequency, chunks, tokens): what the lexicon counts.
_Counted = tuple[int, list[tuple[str, int]], int, int]


def _counts(terms: list[str], rows: list[tuple[str, int]]) -> _Counted:
    """(generation, each term's document frequency, chunks, tokens) from `_send_lexicon`'s
    rows (a term's row is named `.term`)."""
    dfs = {name[1:]: int(n) for name, n in rows if name.startswith(".")}
    counts = {name: int(n) for name, n in rows if not name.startswith(".")}
    return (
        counts.get("generation", 0),
        [(t, dfs.get(t, 0)) for t in terms],
        counts.get("chunks", 0),
        counts.get("tokens", 0),
    )


def _rows(found: list[tuple[Any, ...]], documents: _core.Documents) -> dict[int, dict[str, Any]]:
    """Chunk id → the row a search reads (`_ROW`'s columns, with what is held of its document),
    as the judge and the hit take them; a chunk whose document is not held is left out."""
    rows: dict[int, dict[str, Any]] = {}
    for chunk, doc_id, ordinal, text, heading_path, line_start, line_end, vector in found:
        held = documents.shown(doc_id)
        if held is None:
            continue
        source, path, title, first, indexed_at, valid_from, valid_until, stamp, retired = held
        rows[int(chunk)] = {
            "doc_id": int(doc_id),
            "vector": le_vector(bytes(vector)),
            "body": _core.lexical_body(title, heading_path, text),
            "retired": (*retired[:4], retired[4] or "") if retired else None,
            "shown": {
                "source": source,
                "path": path,
                "title": title,
                "ordinal": ordinal,
                "text": text,
                "heading_path": heading_path,
                "line_start": line_start,
                "line_end": line_end,
                "indexed_at": indexed_at or "",
                "first_indexed_at": first or "",
                "valid_from": valid_from,
                "valid_until": valid_until,
                "stamp": stamp,
                # The file is looked at in Python, by its size, time and content.
                "file_state": "unsure",
            },
        }
    return rows


def _empty_outcome() -> SearchOutcome:
    return {
        "hits": [],
        "dense": [],
        "lexical": [],
        "generation": 0,
        "documents": 0,
        "load_ms": 0.0,
        "dense_ms": 0.0,
        "lexical_ms": 0.0,
        "fuse_ms": 0.0,
        "trust_ms": 0.0,
    }
