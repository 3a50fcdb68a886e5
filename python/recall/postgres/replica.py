"""What a process holds of a namespace to search it: the trust layer's corpus (documents and
their declarations) and each chunk's vector codes (`_core.Vectors`: a model's vectors as fine
codes, read back from the namespace for the few a query rescores) and analysed terms, as of one
committed generation.

Owns: reading them once, then after each commit only what it changed, by the change log
(schema 3, `schema.change_log_ddl`): the documents it wrote (`changed` past the generation
held), their declarations, the chunks it added (ids past the last held: runs take the writer
lock in turn, so a later commit's chunk ids are larger) and the rows it removed. Everything is
read again where the log cannot say: a namespace an earlier release wrote, a holder further
behind than the log reaches, or counts that disagree after the changes are applied. Each read
is one snapshot (REPEATABLE READ), so the corpus, the vectors and the generation agree. Does
not own: the connection, or what a search does with them (search.py).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from recall import _core, heap

__all__ = ["Replica"]

#: The documents columns a process holds (`_core.Documents`): the row id first, then the rest
#: of the corpus's columns and the retirement (`_retired`), then what only a hit shows (the
#: title, the indexing time, the file's stamp, the retirement's line and statement).
_DOCUMENT = (
    "id, source, path, key, first_indexed_at, valid_from_raw, valid_until_raw,"
    " metadata_error IS NOT NULL, alias, retired_state, retired_since, retired_vocabulary,"
    " retired_overridden, title, indexed_at, content_hash, size_bytes, mtime_ns, retired_line,"
    " retired_statement"
)
#: Documents read per round trip.
DOCUMENT_PAGE = 10_000
#: Vectors read per round trip.
VECTOR_PAGE = 5_000
#: The meta records a read checks against what it brought forward.
_COUNTED = ("generation", "log_from", "pg_schema_version", "vocabularies", "documents", "chunks")


class Replica:
    """The corpus, and the chunks' vectors and terms once a search asks for them, of one
    namespace (`t` names its tables; `standing(c)` is the edges' standing column, or NULL
    before schema 2)."""

    def __init__(self, t: Any, standing: Any) -> None:
        self._t = t
        self._standing = standing
        self.generation = -1
        self._logged = False  # the namespace had the change log at the last read
        self._documents = _core.Documents()
        self._edges: dict[int, list[tuple[int, tuple[int, tuple[Any, ...]]]]] = {}
        self._setting = "all"
        self.corpus = _core.Corpus([], [], "all")
        self.vectors: _core.Vectors | None = None
        #: The chunks' terms (the lexical leg), held with the vectors.
        self.postings = _core.Postings()

    def current(self, c: Any, generation: int, *, vectors: bool) -> Replica:
        """Brought to the committed generation (at least `generation`), with the chunks'
        vectors and terms when `vectors`; reads nothing when it is there already."""
        if generation == self.generation and (self.vectors is not None or not vectors):
            return self
        behind = self.generation >= 0 and self._logged
        from psycopg.pq import TransactionStatus

        # One snapshot, unless the read is inside a run's transaction (its rows as they stand).
        own = c.info.transaction_status == TransactionStatus.IDLE
        with c.transaction():
            if own:
                c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            meta = dict(
                c.execute(
                    f"SELECT key, value FROM {self._t('meta')} WHERE key = ANY(%s)",
                    (list(_COUNTED),),
                ).fetchall()
            )
            logged = _int(meta.get("pg_schema_version")) >= 3
            since = self.generation
            if not (behind and logged and _int(meta.get("log_from")) <= since + 1):
                since = -1  # everything
            whole = since < 0  # every row read, not only what commits changed
            self._read_documents(c, None if whole else since)
            want = vectors or self.vectors is not None
            if want:
                whole = whole or self.vectors is None
                self._read_vectors(c, None if since < 0 or self.vectors is None else since)
            if since >= 0 and not self._agrees(meta, want):
                whole = True
                self._read_documents(c, None)
                if want:
                    self._read_vectors(c, None)
        self.generation = _int(meta.get("generation"))
        self._logged = logged
        self._setting = meta.get("vocabularies") or "all"
        edges = sorted(e for listed in self._edges.values() for e in listed)
        self.corpus = self._documents.corpus([e for _, e in edges], self._setting)
        if whole:
            heap.give_back()  # what reading every row took and let go
        return self

    @property
    def documents(self) -> _core.Documents:
        """The held documents (`Documents.shown` gives what a hit shows of one)."""
        return self._documents

    def _agrees(self, meta: dict[str, str], vectors: bool) -> bool:
        """Whether what was brought forward counts what the commit counted."""
        if len(self._documents) != _int(meta.get("documents")):
            return False
        return not vectors or self.vectors is None or len(self.vectors) == _int(meta.get("chunks"))

    def _read_documents(self, c: Any, since: int | None) -> None:
        """The documents (and their declarations) written after generation `since`, and the
        removals logged since; every document when `since` is None. The rows are taken a page
        at a time (a cursor on the server), so a full read never has them all in hand."""
        t = self._t
        written = "" if since is None else " WHERE changed IS NULL OR changed > %(g)s"
        edges = c.execute(
            "SELECT id, doc_id, raw_ref, key, reversed, vocabulary, line, coalesce(statement, ''),"
            f" overridden, {self._standing(c)} FROM {t('edges')}"
            + (
                ""
                if since is None
                else f" WHERE doc_id IN (SELECT id FROM {t('documents')}{written})"
            ),
            {"g": since},
        ).fetchall()
        if since is None:
            self._documents.clear()
            self._edges = {}
        else:
            gone = [
                int(doc_id)
                for (doc_id,) in c.execute(
                    f"SELECT doc_id FROM {t('removed')} WHERE chunk_id IS NULL"
                    " AND (generation IS NULL OR generation > %s)",
                    (since,),
                ).fetchall()
            ]
            self._documents.remove(gone)
            for doc_id in gone:
                self._edges.pop(doc_id, None)
        with c.cursor(name="recall_documents") as cur:
            cur.execute(f"SELECT {_DOCUMENT} FROM {t('documents')}{written}", {"g": since})
            while page := cur.fetchmany(DOCUMENT_PAGE):
                self._documents.put([((*r[:9], _retired(r)), r[13:]) for r in page])
                for r in page:
                    self._edges.pop(int(r[0]), None)
        if since is None:
            self._documents.shrink()
        for e in edges:
            self._edges.setdefault(int(e[1]), []).append((int(e[0]), (int(e[1]), tuple(e[2:]))))

    def _read_vectors(self, c: Any, since: int | None) -> None:
        """The vectors and terms of the chunks added since they were last read and the removals
        logged after generation `since`; every chunk's when `since` is None."""
        t = self._t
        if since is None:
            self.vectors = None
            self.postings = _core.Postings()
            after = 0
        else:
            assert self.vectors is not None
            gone = c.execute(
                f"SELECT chunk_id FROM {t('removed')} WHERE chunk_id IS NOT NULL"
                " AND (generation IS NULL OR generation > %s)",
                (since,),
            ).fetchall()
            self.vectors.remove([int(g) for (g,) in gone])
            self.postings.remove([int(g) for (g,) in gone])
            after = self.vectors.last_id
        if self.vectors is None:
            dim = int(
                c.execute(f"SELECT value FROM {t('meta')} WHERE key = 'embedder_dim'").fetchone()[0]
            )
            self.vectors = _core.Vectors(dim)
        # A page of chunks per round trip, its vectors and its terms each as one value the
        # server joins (one bytes object, not one per row), in binary: pgvector's form and
        # `tsvectorsend`'s, big-endian. The next page is read on a thread of its own while this
        # one is taken in, so the server's work and this process's overlap. What is kept is
        # made on this thread: memory made on a reading thread comes from an arena of that
        # thread's, where the pages it also held would leave it in pieces no trim gives back.
        vectors, postings, dim = self.vectors, self.postings, self.vectors.dim

        def read(after: int) -> tuple[Any, ...]:
            with c.cursor(binary=True) as cur:
                return tuple(
                    cur.execute(
                        "SELECT array_agg(id ORDER BY id), string_agg(vector_send(embedding),"
                        " ''::bytea ORDER BY id), array_agg(tokens ORDER BY id),"
                        " string_agg(tsvectorsend(body), ''::bytea ORDER BY id) FROM (SELECT id,"
                        f" embedding, tokens, body FROM {t('chunks')} WHERE id > %s ORDER BY id"
                        " LIMIT %s) page",
                        (after, VECTOR_PAGE),
                    ).fetchone()
                )

        def take(ids: list[int], sent: bytes, lengths: list[int], terms: bytes) -> None:
            # Each value: int16 dimension, int16 unused (one float32's width), the components.
            rows = np.frombuffer(sent, dtype=">f4").reshape(len(ids), dim + 1)[:, 1:]
            vectors.extend(ids, rows.astype("<f4").tobytes())
            postings.extend(ids, lengths, terms)

        with ThreadPoolExecutor(1, thread_name_prefix="recall-chunks") as reader:
            coming: Future[tuple[Any, ...]] | None = reader.submit(read, after)
            while coming is not None:
                page = coming.result()
                # A short page is the last: the snapshot holds no chunk after it.
                full = bool(page[0]) and len(page[0]) == VECTOR_PAGE
                coming = reader.submit(read, page[0][-1]) if full else None
                if page[0]:
                    take(*page)
        # Pages grow the arrays by doubling: give back what they hold beyond the rows.
        vectors.shrink()
        postings.shrink()


def _int(value: str | None) -> int:
    try:
        return int(value) if value else 0
    except ValueError:
        return 0


def _retired(d: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The corpus's retirement of a documents row (`_DOCUMENT`), or None."""
    return (d[9], d[10], d[11] or "", bool(d[12])) if d[9] is not None else None
