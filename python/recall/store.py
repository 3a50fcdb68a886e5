"""The store contract: what a memory's storage answers, whichever backend holds it (SPEC §1, §9).

Owns: `Store`, every call the layers above make of a store with what it means. A leaf: it
depends on the rows that cross (`recall.rows`) and nothing else. The single file
(`recall._core.Store`, in Rust) and a PostgreSQL namespace (`recall.postgres.store.PgStore`)
implement it; which one a `--db` value names is chosen beside them (`recall.backends`), where
mypy checks both against it. Nothing above asks which backend it has: it asks the contract or
the location what it can do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from recall.rows import (
    DocumentRow,
    EdgeRow,
    ExportedDocument,
    JournalRow,
    KnownRow,
    RetiredRow,
    SearchOutcome,
)

if TYPE_CHECKING:
    from recall import _core

__all__ = ["Store"]


class Store(Protocol):
    """One memory's storage. Reads see the last commit; a write is one run between `begin` and
    `commit` (or `rollback`), and nothing of it is seen before `commit`. Every failure is a
    `StoreError` (damage a `StoreDamagedError`, another writer a `StoreLockedError`)."""

    @property
    def path(self) -> str:
        """The store as the user should see it: a file path, or a URL without its password."""
        ...

    @property
    def read_only(self) -> str | None:
        """Why writes are refused (opened read-only, a read-only file or role, a full disk), or
        None when they are allowed."""
        ...

    @property
    def shared(self) -> bool:
        """Whether machines other than this one write to the store: a corpus root missing here
        may be another machine's, so it is neither reported missing nor a source of moves."""
        ...

    def close(self) -> None:
        """Release the store; an open write is rolled back. Idempotent."""
        ...

    # --- what the store records of itself ---------------------------------------------------

    def meta(self, key: str) -> str | None:
        """The value recorded under `key` (calibration records, settings), or None."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Record `value` under `key`: inside the open write, else as its own commit."""
        ...

    def embedder(self) -> tuple[str, int, str] | None:
        """(name, dimension, fingerprint) of the embedder the vectors were made with; None
        before the first commit. A record that contradicts the stored vectors is damage."""
        ...

    def freshness(self) -> tuple[int, str | None, str | None, int]:
        """The cheap summary a search reads: (documents, newest indexed-at, last run's instant,
        chunks changed since the calibration was fitted)."""
        ...

    def search_state(
        self, record_prefix: str, text: str | None = None
    ) -> tuple[tuple[int, str | None, str | None, int], tuple[str, int, str] | None, str | None]:
        """What a search reads before it embeds, read together (one round trip where the store
        is a server): `freshness()`, `embedder()`, and `meta(record_prefix + fingerprint)` of
        that embedder (None before the first commit). `text`: the query about to be searched;
        what its `search` starts with is read with the state and kept for it (a file: the
        query's evidence, when its lexical index is held; a server: the lexicon's counts for
        its terms, in the same round trip)."""
        ...

    def stats(self) -> dict[str, Any]:
        """The full summary `recall stats` shows (counts, declarations, sizes, embedder)."""
        ...

    def doctor(self) -> list[tuple[str, str, str]]:
        """(check, status, detail) per check of the storage itself; status is `ok`, `warning`
        or `damaged`. Reads only."""
        ...

    # --- an index run ---------------------------------------------------------------------

    def begin(self, name: str, dim: int, fingerprint: str) -> None:
        """Open a write for vectors of this embedder; another embedder's store is refused
        (`EmbedderMismatchError`), a write already open on the handle is a usage error."""
        ...

    def use_server_clock(self, on: bool) -> None:
        """Stamp the run's transaction times from the store's own clock when it has one (a
        server shared by machines), else from the `now` each write passes."""
        ...

    def put_document(
        self, document: DocumentRow, *, now: str, first_indexed_at: str | None = None
    ) -> None:
        """Add or replace `document` (its `path` under the root `source`) with its chunks, their
        vectors and its declarations, stamped `now`; keys beyond a `DocumentRow`'s are not
        read. A new document takes `first_indexed_at` when it is given (a migration, a note
        brought back after a forget), else `now`; a document seen before keeps its own.
        A shared store may leave a document whose stored content hash equals `content_hash`
        as it is: another machine's run committed that very content first."""
        ...

    def set_declarations(
        self,
        source: str,
        path: str,
        edges: list[EdgeRow],
        alias: str | None = None,
        retired: RetiredRow | None = None,
    ) -> bool:
        """Replace an unchanged document's declarations (a reader that reads more); False when
        the document is not stored."""
        ...

    def set_file_time(self, source: str, path: str, mtime_ns: int | None) -> None:
        """Record the file's modification time, so the next run can skip reading it."""
        ...

    def move_document(
        self,
        source: str,
        path: str,
        new_source: str,
        new_path: str,
        key: str,
        title: str,
        mtime_ns: int | None,
    ) -> bool:
        """Move a stored document to a new name, keeping its chunks, vectors and first-indexed
        time (a renamed note); False when the old name is not stored."""
        ...

    def remove_documents(self, source: str, paths: list[str]) -> int:
        """Remove these documents of `source` with their chunks; the number removed. The
        journal is not touched (`recall.forgetting` writes it)."""
        ...

    def commit(self, now: str) -> int:
        """Make the run visible at once and return the store's new generation."""
        ...

    def rollback(self) -> None:
        """Drop the open write, if any: the store stays at its last commit."""
        ...

    # --- what is stored -------------------------------------------------------------------

    def known_documents(self, source: str) -> list[KnownRow]:
        """(path, content hash, size, modification time, chunks) of every document of
        `source`."""
        ...

    def sources(self) -> list[tuple[str, int]]:
        """(root, documents) of every corpus root the store holds documents from."""
        ...

    def document_list(self) -> list[tuple[str, str, str]]:
        """(root, path, key) of every document."""
        ...

    def document_vectors(
        self, source: str, path: str
    ) -> tuple[str, list[tuple[str, str]], bytes] | None:
        """(title, [(chunk text, heading path)], their vectors) of a stored document, so a
        moved or unchanged note is not embedded again; None when it is not stored."""
        ...

    def export(
        self, after: int = 0, limit: int = 256, bodies: bool = True
    ) -> list[ExportedDocument]:
        """Up to `limit` whole documents (rows, chunks, vectors, declarations) with ids above
        `after`, in id order: a migration's pages. Without `bodies`, no chunks and vectors
        (empty): the rows and declarations `recall doctor` compares with the notes."""
        ...

    # --- forgetting (SPEC §8.4) -----------------------------------------------------------

    def forget_plan(
        self, targets: list[tuple[str, str]]
    ) -> list[tuple[str, str, str, int, list[tuple[str, str]]]]:
        """What forgetting these (root, path) documents would remove, and the declarations of
        other documents that name them, without removing anything."""
        ...

    def journal(self) -> list[JournalRow]:
        """The forget journal as `write_journal` left it, oldest forgotten first. The store
        keeps the entries; what they mean (skip, bring back) is `recall.forgetting`'s."""
        ...

    def write_journal(self, entries: list[JournalRow]) -> None:
        """Store journal entries inside the open write, each replacing the entry of its
        (root, path)."""
        ...

    def drop_journal(self, targets: list[tuple[str, str]]) -> None:
        """Delete the journal entries of these (root, path) inside the open write."""
        ...

    # --- search ---------------------------------------------------------------------------

    def set_lean(self, lean: bool) -> None:
        """While set, the searches that load a file store's rows leave the fine codes of a
        model's rows unread and read back each shortlisted row's vector (a calibration's
        searches: the same results, less held); cleared, a searcher loaded that way is let
        go. A server's store is held as it is."""
        ...

    def search(
        self,
        query: bytes,
        *,
        text: str,
        k: int,
        candidates: int,
        policy: _core.Policy,
    ) -> SearchOutcome:
        """Both legs (`candidates` each), fused and judged by the core at the instants and the
        calibration given: the hits (at most `k` documents, `ok` first), each leg's candidates
        and timings. The same query gives the same judgment on every backend."""
        ...

    def explain(
        self,
        file: str,
        query: bytes,
        *,
        text: str,
        policy: _core.Policy,
    ) -> dict[str, Any] | None:
        """Why the document `file` gets its verdict for the query; None when `file` names no
        stored document."""
        ...
