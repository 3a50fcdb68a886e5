# Hand-written stub of the Rust extension; checked with `python -m mypy.stubtest recall._core`.

from collections.abc import Callable
from typing import Any, final

from recall.rows import DocumentRow, ExportedDocument, JournalRow, KnownRow, SearchOutcome

__all__ = [
    "Corpus",
    "Documents",
    "Vectors",
    "Postings",
    "EmbedderMismatchError",
    "RecallError",
    "EXPLAIN_DEPTH",
    "Policy",
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "StoreDamagedError",
    "StoreLockedError",
    "hashing_embed",
    "identifiers",
    "bm25_vectors",
    "dense_order",
    "judge",
    "lexical_body",
    "lexical_row",
    "relevance",
    "lexical_terms",
    "resolution_key",
    "resolve_references",
    "may_declare",
    "trigger_offsets",
    "rrf",
]

SCHEMA_VERSION: int
EXPLAIN_DEPTH: int

# (reference as written, key, reversed, vocabulary, line, statement, overridden, standing)
_EdgeRow = tuple[str, str, bool, str, int | None, str, bool, str | None]
# (state, since, vocabulary, line, statement, overridden)
_RetiredRow = tuple[str, str | None, str, int | None, str, bool]

class RecallError(Exception): ...
class StoreError(RecallError): ...
class StoreLockedError(StoreError): ...
class StoreDamagedError(StoreError): ...
class EmbedderMismatchError(StoreError): ...

@final
class Policy:
    def __new__(
        cls,
        *,
        now_us: int,
        threshold: float,
        scale: float,
        known_as_of_us: int | None = None,
        unverified: bool = False,
        lexical_weight: float = 0.0,
        identifier_weight: float = 0.0,
    ) -> Policy: ...
    @property
    def now_us(self) -> int: ...
    @property
    def known_as_of_us(self) -> int | None: ...
    @property
    def threshold(self) -> float: ...
    @property
    def scale(self) -> float: ...
    @property
    def unverified(self) -> bool: ...
    @property
    def lexical_weight(self) -> float: ...
    @property
    def identifier_weight(self) -> float: ...

@final
class Store:
    def __new__(cls, path: str, *, create: bool = True, read_only: bool = False) -> Store: ...
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> str | None: ...
    @property
    def shared(self) -> bool: ...
    def use_server_clock(self, on: bool) -> None: ...
    def doctor(self) -> list[tuple[str, str, str]]: ...
    def close(self) -> None: ...
    def meta(self, key: str) -> str | None: ...
    def embedder(self) -> tuple[str, int, str] | None: ...
    def set_file_time(self, source: str, path: str, mtime_ns: int | None) -> None: ...
    def move_document(
        self,
        source: str,
        path: str,
        new_source: str,
        new_path: str,
        key: str,
        title: str,
        mtime_ns: int | None,
    ) -> bool: ...
    def known_documents(self, source: str) -> list[KnownRow]: ...
    def begin(self, name: str, dim: int, fingerprint: str) -> None: ...
    def put_document(
        self, document: DocumentRow, *, now: str, first_indexed_at: str | None = None
    ) -> None: ...
    def export(
        self, after: int = 0, limit: int = 256, bodies: bool = True
    ) -> list[ExportedDocument]: ...
    def document_vectors(
        self, source: str, path: str
    ) -> tuple[str, list[tuple[str, str]], bytes] | None: ...
    def set_declarations(
        self,
        source: str,
        path: str,
        edges: list[_EdgeRow],
        alias: str | None = None,
        retired: _RetiredRow | None = None,
    ) -> bool: ...
    def document_list(self) -> list[tuple[str, str, str]]: ...
    def sources(self) -> list[tuple[str, int]]: ...
    def forget_plan(
        self, targets: list[tuple[str, str]]
    ) -> list[tuple[str, str, str, int, list[tuple[str, str]]]]: ...
    def journal(self) -> list[JournalRow]: ...
    def write_journal(self, entries: list[JournalRow]) -> None: ...
    def drop_journal(self, targets: list[tuple[str, str]]) -> None: ...
    def remove_documents(self, source: str, paths: list[str]) -> int: ...
    def commit(self, now: str) -> int: ...
    def set_lean(self, lean: bool) -> None: ...
    def rollback(self) -> None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def explain(
        self,
        file: str,
        query: bytes,
        *,
        text: str,
        policy: Policy,
    ) -> dict[str, Any] | None: ...
    def search(
        self,
        query: bytes,
        *,
        text: str,
        k: int,
        candidates: int,
        policy: Policy,
    ) -> SearchOutcome: ...
    def freshness(self) -> tuple[int, str | None, str | None, int]: ...
    def search_state(
        self, record_prefix: str, text: str | None = None
    ) -> tuple[
        tuple[int, str | None, str | None, int], tuple[str, int, str] | None, str | None
    ]: ...
    def stats(self) -> dict[str, Any]: ...

def hashing_embed(texts: list[str], dim: int) -> bytes: ...
def resolution_key(reference: str) -> str: ...
def may_declare(text: str, status: bool = True) -> bool: ...
def trigger_offsets(text: str, status: bool = True) -> list[int]: ...
def resolve_references(
    documents: list[tuple[str, str, str, str | None]], edges: list[tuple[int, str, bool]]
) -> list[tuple[str, list[int]]]: ...
def identifiers(query: str) -> list[str]: ...
def rrf(
    dense: list[int], lexical: list[int]
) -> list[tuple[int, int | None, int | None, float]]: ...

# Scores are judged as float32, the precision of stored cosines.
def judge(
    docs: list[tuple[str, str, str | None, str | None, str | None, int | None]],
    edges: list[tuple[int, str]],
    candidates: list[tuple[int, float]],
    fetchable: dict[int, float],
    policy: Policy,
) -> list[tuple[int, str, float, int | None, bool, bool, float, int | None]]: ...

# (id, source, path, key, first_indexed_at, valid_from_raw, valid_until_raw, metadata_error,
#  alias, (retired_state, retired_since, retired_vocabulary, retired_overridden) | None)
_DocumentRow = tuple[
    int,
    str,
    str,
    str,
    str | None,
    str | None,
    str | None,
    bool,
    str | None,
    tuple[str, str | None, str, bool] | None,
]
# (doc_id, the edge as put_document takes it)
_CorpusEdgeRow = tuple[int, _EdgeRow]
# What only a hit shows of a document: (title, indexed_at, content_hash, size_bytes, mtime_ns,
# retired_line, retired_statement)
_ShownRow = tuple[str, str | None, str, int, int | None, int | None, str | None]
# (source, path, title, first_indexed_at, indexed_at, valid_from_raw, valid_until_raw,
# (content_hash, size_bytes, mtime_ns), (state, since, vocabulary, line, statement) or None)
_Shown = tuple[
    str,
    str,
    str,
    str | None,
    str | None,
    str | None,
    str | None,
    tuple[str, int, int | None],
    tuple[str, str | None, str, int | None, str | None] | None,
]

@final
class Vectors:
    def __new__(cls, dim: int) -> Vectors: ...
    @property
    def dim(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def last_id(self) -> int: ...
    def extend(self, ids: list[int], data: bytes) -> None: ...
    def shrink(self) -> None: ...
    def remove(self, ids: list[int]) -> int: ...
    def __contains__(self, key: int, /) -> bool: ...
    def get(self, id: int) -> bytes | None: ...
    def nearest(
        self, query: bytes, n: int, read: Callable[[list[int]], bytes]
    ) -> list[tuple[int, float]]: ...

@final
class Documents:
    def __new__(cls) -> Documents: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: int, /) -> bool: ...
    def put(self, documents: list[tuple[_DocumentRow, _ShownRow]]) -> None: ...
    def remove(self, ids: list[int]) -> int: ...
    def shrink(self) -> None: ...
    def clear(self) -> None: ...
    def shown(self, id: int) -> _Shown | None: ...
    def corpus(self, edges: list[_CorpusEdgeRow], vocabularies: str = "all") -> Corpus: ...

@final
class Postings:
    def __new__(cls) -> Postings: ...
    def __len__(self) -> int: ...
    @property
    def last_id(self) -> int: ...
    def extend(self, ids: list[int], lengths: list[int], vectors: bytes) -> None: ...
    def shrink(self) -> None: ...
    def remove(self, ids: list[int]) -> int: ...
    def rank(
        self,
        text: str,
        term_dfs: list[tuple[str, int]],
        chunk_count: int,
        token_count: int,
        limit: int,
    ) -> list[tuple[int, float]]: ...

@final
class Corpus:
    def __new__(
        cls,
        documents: list[_DocumentRow],
        edges: list[_CorpusEdgeRow],
        vocabularies: str = "all",
    ) -> Corpus: ...
    def __len__(self) -> int: ...
    def tally(self) -> dict[str, Any]: ...
    def declarers_toward(self, doc_id: int) -> list[tuple[str, str]]: ...
    def locate(self, file: str) -> int | None: ...
    def explain(
        self,
        doc_id: int,
        query: bytes,
        *,
        text: str,
        chunks: list[tuple[int, bytes, str]],
        term_dfs: list[tuple[str, int]],
        chunk_count: int,
        dense_rank: int | None,
        lexical_rank: int | None,
        declarations: list[tuple[str, int | None, str | None, bool, str | None]],
        retired: tuple[str, str | None, str, int | None, str | None, bool] | None,
        vocabularies: str,
        policy: Policy,
    ) -> dict[str, Any] | None: ...
    def judge(
        self,
        query: bytes,
        *,
        text: str,
        dense: list[int],
        lexical: list[int],
        chunks: dict[int, tuple[int, bytes, str]],
        term_dfs: list[tuple[str, int]],
        chunk_count: int,
        fetch: Callable[[int], list[tuple[int, bytes, str]]],
        k: int,
        candidates: int,
        policy: Policy,
    ) -> dict[str, Any]: ...

def lexical_terms(text: str) -> list[str]: ...
def bm25_vectors(texts: list[str]) -> list[list[tuple[str, float, str]]]: ...
def dense_order(query: bytes, rows: list[tuple[int, bytes]]) -> list[int]: ...
def lexical_body(title: str, heading_path: str, text: str) -> str: ...
def lexical_row(text: str) -> tuple[bytes, int, list[str]]: ...
def relevance(
    score: float,
    lexical: float,
    identifier_match: bool,
    lexical_weight: float,
    identifier_weight: float,
) -> float: ...
