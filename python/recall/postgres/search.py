"""The read path of a query on PostgreSQL: both legs' retrieval, the candidates' rows, explain.

Owns: the dense leg's exact scan of the vectors the process holds (`replica.py`, the file
store's scan), asking full-text search for the chunks holding the query's words (with their
positions), reading the rows the trust layer and the caller need, and handing them to the Rust
core (`_core.Corpus`), which orders both legs, fuses, and judges with the code the single-file
store judges with. Does not own: any rule, or the connection (base.py).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from recall import _core
from recall.postgres.base import (
    EMBEDDER_KEYS,
    FRESHNESS_KEYS,
    Namespace,
    bound_of,
    freshness_of,
)

if TYPE_CHECKING:
    from recall.rows import HitRow, SearchOutcome

__all__ = ["Searching"]

#: The query's rarest terms are searched first while the chunks holding them number at most
#: this (all of them are scored: they decide the top of the lexical leg when they can).
RARE_POOL = 2000
#: Distinct words of a query that are searched (as the file store's index searches them).
MAX_QUERY_TERMS = 64
#: Seconds what `search_state` read ahead serves the search of its text that follows (it
#: follows at once unless that search was refused before it ran; then it is left to expire).
AHEAD = 1.0
#: Matching chunks full-text search hands the core to order by BM25: at least this, and four
#: times the candidates asked for (all of them when fewer match).
LEXICAL_POOL = 100


class Searching(Namespace):
    """Search and explain over one namespace."""

    def search_state(
        self, record_prefix: str, text: str | None = None
    ) -> tuple[tuple[int, str | None, str | None, int], tuple[str, int, str] | None, str | None]:
        """The contract's state in one round trip; given the query's `text`, the same round trip
        also reads what its search starts with (`_send_lexical`), kept for this thread's next
        `search` of that text."""
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
                sent = self._send_lexical(c, text) if ahead and text is not None else None
            rows = dict(state.fetchall())
            if sent is not None:
                self._ahead.found = (text, time.monotonic(), _lexical_read(*sent))
        bound = bound_of(rows)
        record = rows.get(record_prefix + bound[2]) if bound else None
        return freshness_of(rows), bound, record

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
                # One round trip (unless `search_state` read it with the state).
                with c.pipeline():
                    sent = self._send_lexical(c, text)
                read = _lexical_read(*sent)
            generation, term_dfs, chunk_count, tokens, first = read
            t_sent = time.perf_counter()
            with self._replica_lock:
                replica = self._replica_for(c, generation, vectors=True)
                t_loaded = time.perf_counter()
                assert replica.vectors is not None
                dense = [i for i, _ in replica.vectors.nearest(query, candidates)]
                corpus = replica.corpus
            t_dense = time.perf_counter()
            lexical = self._lexical(c, text, candidates, term_dfs, chunk_count, tokens, first=first)
            t_lexical = time.perf_counter()
            # One round trip: the rows of both legs' chunks (their vectors are held here).
            ids = list(dict.fromkeys([*dense, *(i for i, _ in lexical)]))
            rows = self._chunk_rows(c, "c.id = ANY(%s)", (ids,))

            def fetch(doc_id: int) -> list[tuple[int, bytes, str]]:
                found = self._chunk_rows(c, "c.doc_id = %s", (doc_id,))
                rows.update(found)
                return [(i, *chunk[1:]) for i, chunk in self._judged(found).items()]

            out = corpus.judge(
                query,
                text=text,
                dense=dense,
                lexical=[i for i, _ in lexical],
                chunks=self._judged(rows),
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
            # The lexical leg's first look (read with the state before the query was embedded,
            # else here) and its BM25 order are timed as lexical; bringing the corpus and the
            # vectors forward after a commit as load.
            "load_ms": (t_loaded - t_sent) * ms,
            "dense_ms": (t_dense - t_loaded) * ms,
            "lexical_ms": (t_sent - t0 + t_lexical - t_dense) * ms,
            "fuse_ms": 0.0,
            "trust_ms": (t_done - t_lexical) * ms,
        }

    def _send_lexical(self, c: Any, text: str) -> tuple[list[str], Any, Any]:
        """Queue what a search of `text` starts with: the generation, the counts, the query
        terms' frequencies and the chunks holding its rarest words (`_lexical_read` reads
        them once the pipeline is through)."""
        terms = _core.lexical_terms(text)
        tsquery = _core.tsquery_literal(text)
        counted = self._send_lexicon(c, terms)
        rare = self._send_rare(c, terms, tsquery) if tsquery else None
        return terms, counted, rare

    def _send_lexicon(self, c: Any, terms: list[str]) -> Any:
        """Queue the generation, the chunk and token counts, and each term's document
        frequency (read by `_counts`)."""
        return c.execute(
            f"SELECT key, value::bigint FROM {self._t('meta')}"
            " WHERE key IN ('generation', 'chunks', 'tokens')"
            f" UNION ALL SELECT '.' || term, df FROM {self._t('lexicon')} WHERE term = ANY(%s)",
            (terms,),
        )

    def _send_rare(self, c: Any, terms: list[str], tsquery: str) -> Any:
        """Queue the chunks `_lexical` scores first, with what `_matching` reads of each: all
        those holding one of the query's words when they number at most RARE_POOL, else those
        holding one of its rarest words (the rarest first while their chunks add up to at most
        RARE_POOL; none when even the rarest is commoner). The server chooses them from the
        lexicon as `_lexical` chooses from the same frequencies."""
        return c.execute(
            _RARE_SQL.format(lexicon=self._t("lexicon"), chunks=self._t("chunks")),
            {"terms": terms, "searched": MAX_QUERY_TERMS, "pool": RARE_POOL, "all": tsquery},
        )

    def _dense(self, c: Any, query: bytes, n: int) -> list[int]:
        """The `n` chunk ids nearest the query, best first (ties by chunk id): the scan of
        the vectors the process holds, brought to the committed generation."""
        with self._replica_lock:
            vectors = self._replica_for(c, vectors=True).vectors
            assert vectors is not None
            return [i for i, _ in vectors.nearest(query, n)]

    def _lexicon(self, c: Any, text: str) -> tuple[list[tuple[str, int]], int, int]:
        """Each analysed query term's document frequency, the chunks and their tokens."""
        terms = _core.lexical_terms(text)
        _, term_dfs, chunk_count, tokens = _counts(terms, self._send_lexicon(c, terms).fetchall())
        return term_dfs, chunk_count, tokens

    def _lexical(
        self,
        c: Any,
        text: str,
        n: int,
        term_dfs: list[tuple[str, int]],
        chunk_count: int,
        tokens: int,
        first: dict[int, tuple[int, str]] | None = None,
    ) -> list[tuple[int, float]]:
        """The lexical leg's best `n` (chunk id, BM25), ordered by the core as the file store's
        index scores them. Full-text search finds the chunks; each comes with the positions of
        the query's terms and its length. When few chunks hold any of the words, all of them
        are scored. Otherwise every chunk holding one of the rarest terms is; when the n-th of
        those outscores what the other terms could add up to, no other chunk can enter the top
        n. Failing that, the chunks full-text search's own rank puts first join them. `first`:
        the chunks scored first, when `_send_rare` fetched them already."""
        tsquery = _core.tsquery_literal(text)
        if tsquery is None:
            return []
        searched = [(t, df) for t, df in term_dfs[:MAX_QUERY_TERMS] if df > 0]
        terms = [t for t, _ in searched]

        def ranked(pool: dict[int, tuple[int, str]]) -> list[tuple[int, float]]:
            rows = [(i, length, v) for i, (length, v) in pool.items()]
            return _core.bm25_rank(text, rows, term_dfs, chunk_count, tokens, n)

        if sum(df for _, df in searched) <= RARE_POOL:
            return ranked(first if first is not None else self._matching(c, tsquery, terms, None))
        rare: list[str] = []
        held = 0
        for term, df in sorted(searched, key=lambda x: x[1]):
            if held + df > RARE_POOL:
                break
            rare.append(term)
            held += df
        pool: dict[int, tuple[int, str]] = {}
        if rare:
            pool.update(
                first if first is not None else self._matching(c, _or_query(rare), terms, None)
            )
            best = ranked(pool)
            rest = sum(_core.bm25_ceiling(df, chunk_count) for t, df in searched if t not in rare)
            if len(best) >= n and best[n - 1][1] > rest * (1 + 1e-6):
                return best
        pool.update(self._matching(c, tsquery, terms, max(LEXICAL_POOL, 4 * n)))
        return ranked(pool)

    def _matching(
        self, c: Any, tsquery: str, terms: list[str], limit: int | None
    ) -> dict[int, tuple[int, str]]:
        """(chunk id → (token count, the chunk's `terms` with their positions)) of the chunks
        matching `tsquery`: all of them, or the `limit` full-text search ranks first."""
        order = " ORDER BY ts_rank(body, %(q)s::tsquery) DESC, id LIMIT %(n)s" if limit else ""
        rows = c.execute(
            "SELECT id, tokens, ts_filter(setweight(body, 'A', %(t)s), '{a}')::text"
            f" FROM {self._t('chunks')} WHERE body @@ %(q)s::tsquery{order}",
            {"q": tsquery, "t": terms, "n": limit},
        ).fetchall()
        return _matches(rows)

    def _chunk_rows(self, c: Any, where: str, args: tuple[Any, ...]) -> dict[int, dict[str, Any]]:
        return _rows(
            c.execute(
                f"SELECT {_ROW} FROM {self._t('chunks')} c"
                f" JOIN {self._t('documents')} d ON d.id = c.doc_id WHERE {where}",
                args,
            ).fetchall()
        )

    def _judged(self, rows: dict[int, dict[str, Any]]) -> dict[int, tuple[int, bytes, str]]:
        """Chunk id → (document id, vector, lexical body) as the core judges a chunk, the
        vector from those the process holds; a chunk committed after them is left out (its
        document is not in the corpus they go with either)."""
        with self._replica_lock:
            vectors = self._replica.vectors if self._replica is not None else None
            held = {i: vectors.get(i) for i in rows} if vectors is not None else {}
        return {
            i: (r["doc_id"], v, r["body"])
            for i, r in rows.items()
            if (v := held.get(i)) is not None
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
            depth = _core.EXPLAIN_DEPTH
            dense = self._dense(c, query, depth)
            rows = self._chunk_rows(c, "c.doc_id = %s", (doc_id,))
            term_dfs, chunk_count, tokens = self._lexicon(c, text)

            def rank(ids: list[int]) -> int | None:
                owners = dict(
                    c.execute(
                        f"SELECT id, doc_id FROM {self._t('chunks')} WHERE id = ANY(%s)", (ids,)
                    ).fetchall()
                )
                found = [i for i, chunk in enumerate(ids, 1) if owners.get(chunk) == doc_id]
                return found[0] if found else None

            lexical = self._lexical(c, text, depth, term_dfs, chunk_count, tokens)
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
                chunks=[(i, *chunk[1:]) for i, chunk in self._judged(rows).items()],
                term_dfs=term_dfs,
                chunk_count=chunk_count,
                dense_rank=rank(dense),
                lexical_rank=rank([i for i, _ in lexical]),
                declarations=[tuple(d) for d in declarations],
                retired=tuple(retired) if retired else None,
                vocabularies=setting,
                policy=policy,
            )


#: The columns of a chunk's row a search reads (`c` the chunk, `d` its document; `_rows`).
_ROW = (
    "c.id, c.doc_id, d.source, d.path, d.title, c.ordinal, c.text,"
    " c.heading_path, c.line_start, c.line_end, d.indexed_at, d.first_indexed_at,"
    " d.valid_from_raw, d.valid_until_raw, d.retired_state, d.retired_since,"
    " d.retired_vocabulary, d.retired_line, d.retired_statement"
)

#: `_send_rare`'s statement: the query's terms the lexicon holds (of its first `searched`),
#: the plan (`all` when their chunks add up to at most `pool`, else the OR of the rarest while
#: they do, each quoted as `_or_query` quotes it: chr(39) a quote, chr(92) a backslash), and
#: what `_matching` reads of each chunk it finds.
_RARE_SQL = """
WITH known AS (
    SELECT u.term, u.ord, l.df
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, ord)
    JOIN {lexicon} l ON l.term = u.term
    WHERE u.ord <= %(searched)s AND l.df > 0
), plan AS (
    SELECT CASE WHEN coalesce(sum(df), 0) <= %(pool)s THEN %(all)s::tsquery ELSE (
        SELECT string_agg(
            chr(39) || replace(replace(term, chr(92), chr(92) || chr(92)), chr(39),
                               chr(39) || chr(39)) || chr(39), ' | ')::tsquery
        FROM (SELECT term, sum(df) OVER (ORDER BY df, ord) AS held FROM known) r
        WHERE held <= %(pool)s
    ) END AS q, array_agg(term ORDER BY ord) AS searched
    FROM known
)
SELECT c.id, c.tokens, ts_filter(setweight(c.body, 'A', plan.searched), '{{a}}')::text
FROM plan JOIN {chunks} c ON c.body @@ plan.q
"""


def _counts(
    terms: list[str], rows: list[tuple[str, int]]
) -> tuple[int, list[tuple[str, int]], int, int]:
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


#: (generation, each term's document frequency, chunks, tokens, the first pool or None).
_LexicalRead = tuple[int, list[tuple[str, int]], int, int, "dict[int, tuple[int, str]] | None"]


def _lexical_read(terms: list[str], counted: Any, rare: Any) -> _LexicalRead:
    """What `_send_lexical` queued, read."""
    generation, term_dfs, chunk_count, tokens = _counts(terms, counted.fetchall())
    first = _matches(rare.fetchall()) if rare is not None else None
    return generation, term_dfs, chunk_count, tokens, first


def _matches(rows: list[tuple[int, int, str]]) -> dict[int, tuple[int, str]]:
    return {int(i): (int(n), v) for i, n, v in rows}


def _rows(found: list[tuple[Any, ...]]) -> dict[int, dict[str, Any]]:
    """Chunk id → the row a search reads (`_ROW`'s columns), as the judge and the hit take
    them."""
    rows: dict[int, dict[str, Any]] = {}
    for r in found:
        rows[int(r[0])] = {
            "doc_id": int(r[1]),
            "body": _core.lexical_body(r[4], r[7], r[6]),
            "retired": (r[14], r[15], r[16] or "", r[17], r[18] or "") if r[14] else None,
            "shown": {
                "source": r[2],
                "path": r[3],
                "title": r[4],
                "ordinal": r[5],
                "text": r[6],
                "heading_path": r[7],
                "line_start": r[8],
                "line_end": r[9],
                "indexed_at": r[10] or "",
                "first_indexed_at": r[11] or "",
                "valid_from": r[12],
                "valid_until": r[13],
            },
        }
    return rows


def _or_query(terms: list[str]) -> str:
    """A tsquery literal: the OR of `terms` (analysed terms: letters and digits only)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


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
