"""The rows a store hands over, typed: what crosses between the backends, the Rust core and the
layers above (`recall.store`).

Rows are plain tuples so the Rust core hands them over without conversion:
- an edge row is (reference as written, key, reversed, vocabulary, line, statement, overridden,
  standing), one declaration of the document (SPEC §2.3, §2.5);
- a retirement row is (state, since, vocabulary, line, statement, overridden) (SPEC §8.4);
- a chunk row is (ordinal, text, byte start, byte end, line start, line end, heading path);
- a known row is (path, content hash, size, modification time, chunks): what an index run
  knows of a stored document;
- a journal row is (root, path, content hash, first indexed at, forgotten at, undone at), one
  entry of the forget journal (SPEC §8.4; undone at is None while the document stays out).

A hit is a dict built by one function in the core whatever the backend (`rust/py_hits.rs`).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "ChunkRow",
    "DocumentRow",
    "EdgeRow",
    "ExportedDocument",
    "HitRow",
    "JournalRow",
    "KnownRow",
    "RetiredRow",
    "Retrieval",
    "SearchOutcome",
]

EdgeRow = tuple[str, str, bool, str, "int | None", str, bool, "str | None"]
RetiredRow = tuple[str, "str | None", str, "int | None", str, bool]
ChunkRow = tuple[int, str, int, int, int, int, str]
KnownRow = tuple[str, str, int, "int | None", int]
JournalRow = tuple[str, str, str, str, str, "str | None"]


class _Document(TypedDict):
    source: str
    path: str
    key: str
    title: str
    content_hash: str
    size_bytes: int
    valid_from_raw: str | None
    valid_until_raw: str | None
    valid_from: str | None
    valid_until: str | None
    metadata_error: str | None
    frontmatter: str
    chunks: list[ChunkRow]
    vectors: bytes
    edges: list[EdgeRow]


class DocumentRow(_Document, total=False):
    """One document as a store takes it (`Store.put_document`): its place, content, validity as
    written and as read, frontmatter (JSON), chunks with their vectors (float32 little-endian,
    one per chunk, in chunk order) and declarations; the file's modification time, alias and
    retirement when it has them."""

    mtime_ns: int | None
    alias: str | None
    retired: RetiredRow | None


class ExportedDocument(DocumentRow):
    """A document as a store gives it back (`Store.export`): what `put_document` takes, with its
    id and times."""

    id: int
    first_indexed_at: str
    indexed_at: str


class Retrieval(TypedDict):
    """A retrieved chunk's rank in each leg (None: not in it) and reciprocal-rank shares."""

    dense_rank: int | None
    lexical_rank: int | None
    dense_rrf: float
    lexical_rrf: float
    fused: float


class HitRow(TypedDict):
    """One judged hit as a store returns it: the passage (where it is, what it says, its
    window) and the core's judgment of it, built by one function in the core whatever the
    backend (`rust/py_hits.rs`)."""

    source: str
    path: str
    title: str
    ordinal: int
    text: str
    heading_path: str
    line_start: int
    line_end: int
    indexed_at: str
    first_indexed_at: str
    valid_from: str | None
    valid_until: str | None
    #: (state, since, vocabulary, line, statement) of a retirement in force, else None.
    retired: tuple[str, str | None, str, int | None, str] | None
    verdict: str
    confidence: float
    score: float
    superseded_by: str | None
    promoted_from: str | None
    displaced_by: str | None
    #: What the passage lacks of what the question asks for ("an amount of money", "2024").
    lacks: str | None
    promoted: bool
    fetched: bool
    lexical: float
    identifiers_held: bool
    identifier_match: bool
    proven: bool
    #: (vocabulary, line, statement) of statements the reader could not act on.
    unread: list[tuple[str, int | None, str]]
    retrieval: Retrieval | None
    #: The document's file as indexed: (content hash, size in bytes, modification time in ns
    #: or None when not recorded), what a search checks the file against (`recall.sources`).
    stamp: tuple[str, int, int | None]
    #: The file of a hit that would be `ok`, by its size and time: `current`, `changed`,
    #: `missing`, `elsewhere` (its folder is not on this machine) or `unsure` (only the content
    #: can say: `recall.sources`); `unchecked` for a hit that is not `ok`.
    file_state: str


class SearchOutcome(TypedDict):
    """A store's answer to `search`: the hits (ok first), each leg's (chunk, score) candidates
    best first, the generation and document count it was judged on, and timings in ms."""

    hits: list[HitRow]
    dense: list[tuple[int, float]]
    lexical: list[tuple[int, float]]
    generation: int
    documents: int
    load_ms: float
    dense_ms: float
    lexical_ms: float
    fuse_ms: float
    trust_ms: float
