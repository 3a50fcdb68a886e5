"""The index run (SPEC §3): walk a corpus, skip and refuse files with reasons, detect changes by
content hash, guard against mass pruning, parse and chunk, embed on a worker thread while
reading and writing go on, and commit everything in one store transaction.

Owns: the run as an object with three phases (`IndexRun`: plan, stream, finish), the per-file
reasons, the typed report, the pipeline that keeps the embedder busy, and which vectors need
not be computed again (an interrupted run's, journaled; a copied note's, in the store). Does
not own: SQL (the Rust store), frontmatter rules (`frontmatter`), chunk boundaries
(`chunking`), vectors (`embedders`) or the journal's file (`embedding_journal`).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import numpy.typing as npt

from recall import _core, churn, heap
from recall.chunking import Chunk, chunk
from recall.embedders import Embedder
from recall.embedding_journal import Journal, text_digest
from recall.errors import PruneRefusedError, UsageError
from recall.forgetting import held_back
from recall.frontmatter import Frontmatter
from recall.interrupts import raise_if_stopped
from recall.pathlist import PathList
from recall.rows import DocumentRow
from recall.sources import content_digest, sidecar_read
from recall.vocabularies import SETTINGS, Declarations, Sidecar, declare
from recall.walk import (
    MAX_FILE_BYTES,
    OPEN_FLAGS,
    TEXT_SUFFIXES,
    Listing,
    Skipped,
    discover,
    missing_roots,
    storable,
    why,
)

if TYPE_CHECKING:
    from recall.rows import EdgeRow, RetiredRow
    from recall.store import Store

__all__ = ["IndexReport", "Progress", "Skipped", "run_index"]

#: Chunks embedded per batch: bounds memory on large corpora.
EMBED_BATCH = 512

#: Chunks per embedder call within a batch, at least: the progress moves and the journal grows a
#: slice at a time (a model embeds about a hundred chunks a second here), not a batch at a time.
EMBED_SLICE = 64
#: A slice is as many chunks as the embedder's last call says it embeds in this long, so that
#: a fast embedder (hashing, a small model) is not slowed by calls it does not need.
SLICE_SECONDS = 0.25

#: The version of the declarations reader (`recall.vocabularies`): a store whose documents were
#: declared by another version has them read again on its next index run.
DECLARATIONS_VERSION = "5"
DECLARATIONS_KEY = "declarations_version"

#: Called after each file, and while the run waits for the embedder, with (files done, files in
#: the run, chunks embedded so far); a callable that takes a fourth argument also gets the
#: chunks read so far (what the embedded ones will reach once every file is read).
Progress = Callable[..., None]


@dataclass
class IndexReport:
    """What one index run did. `refused` files had errors; `skipped` ones were not eligible."""

    #: The paths, as one block of text each (`PathList`: a first index reports every note).
    added: PathList = field(default_factory=PathList)
    updated: PathList = field(default_factory=PathList)
    unchanged: int = 0
    removed: PathList = field(default_factory=PathList)
    refused: list[Skipped] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    #: Chunks the embedder computed in this run.
    embedded: int = 0
    #: Chunks written with vectors computed before: by an interrupted run (its journal) or for
    #: a document already in the store with the same content and title (a copied note).
    reused: int = 0
    #: Records of the embedding journal that failed their checks (a checksum, a vector not
    #: finite or not of unit length) and were discarded; their texts were embedded again.
    journal_discarded: int = 0
    seconds: float = 0.0
    generation: int = 0
    embedder: str = ""
    #: (root, documents) the store holds from roots that no longer exist here (kept, not
    #: removed: `recall forget ROOT --apply` drops them once the notes are indexed elsewhere).
    missing_roots: list[tuple[str, int]] = field(default_factory=list)
    #: (from, to): documents whose file vanished and whose content reappeared at another path
    #: or under another root in this run, moved with their row (not embedded again).
    moved: list[tuple[str, str]] = field(default_factory=list)
    #: The calibration recall made itself after the run (SPEC §7, `Memory.calibrate_self`):
    #: id, threshold, certified and why, seconds; None when none was due.
    calibrated: dict[str, Any] | None = None
    #: What trust the store has after the run (`Memory.trust`): state, whether strict search
    #: answers, the calibration in force and one line saying so with the next step.
    trust: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """False when any file was refused (the CLI exits 1)."""
        return not self.refused

    def to_dict(self) -> dict[str, Any]:
        # `asdict` copies each field; the paths are written out as lists instead.
        data = asdict(replace(self, added=PathList(), updated=PathList(), removed=PathList()))
        data.update(added=list(self.added), updated=list(self.updated), removed=list(self.removed))
        data["ok"] = self.ok
        return data


#: (content hash, size in bytes, modification time in ns or None, chunks) of an indexed file.
_StoredFile = tuple[str, int, Optional[int], int]
#: A batch's vectors, one row per chunk in order, and how many of them were reused.
_Vectors = tuple[npt.NDArray[np.float32], int]

#: How recent a modification time is too recent to prove a file unchanged (2 s: coarse file
#: system clocks and a write in the same tick as the read).
RACY_NS = 2_000_000_000


@dataclass
class _Pending:
    """A parsed document waiting for its vectors."""

    source: str
    rel: str
    size: int
    mtime_ns: int | None
    digest: str
    fm: Frontmatter | None
    decl: Declarations | None
    title: str
    chunks: list[Chunk]
    is_new: bool
    #: The chunks of the version it replaces (0 when new).
    chunks_before: int = 0
    #: The vectors of a stored document with the same content and title (a copied note).
    vectors: npt.NDArray[np.float32] | None = None


def _title(
    fm: Frontmatter | None,
    chunks: Sequence[Chunk],
    rel: str,
    decl: Declarations | None = None,
) -> str:
    if decl is not None and decl.title:
        return decl.title
    if fm is not None:
        declared = fm.fields.get("title")
        if isinstance(declared, str) and declared.strip():
            return declared.strip()
    for c in chunks:
        if c.heading_path:
            return c.heading_path[0]
    return Path(rel).stem


def _embed_text(title: str, c: Chunk) -> str:
    """What the embedder sees: the chunk under its title and headings (SPEC §4)."""
    context = " / ".join(dict.fromkeys((title, *c.heading_path)))
    return f"{context}\n{c.text}"


def run_index(
    store: Store,
    embedder: Embedder,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    instant: str,
    allow_prune: bool = False,
    progress: Progress | None = None,
    vocabularies: str | None = None,
    journal: Path | None = None,
) -> IndexReport:
    """Index files and folders incrementally in one store transaction (SPEC §3).

    Batches of chunks are embedded on a worker thread while the next files are read and parsed
    and the previous batch is written (onnxruntime and the Rust store release the GIL).
    `vocabularies` (none|frontmatter|all) sets which declarations are in force for the store
    from this run on; None keeps the store's setting (`all` for a new store).
    With `journal` (a file beside the store, `embedding_journal`), every batch's vectors are
    written there as soon as they are computed, and the texts it holds are not embedded again:
    a run after an interrupted or crashed one embeds only what that one did not. The file is
    read once the store's write lock is held and deleted once the run commits.
    """
    if vocabularies is not None and vocabularies not in SETTINGS:
        raise UsageError(
            f"recall index: unknown vocabularies setting {vocabularies!r}; "
            f"choose one of {', '.join(SETTINGS)}"
        )
    started = time.perf_counter()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    run = IndexRun(store, embedder, instant, vocabularies)
    run.plan([discover(Path(p)) for p in paths], allow_prune)
    store.begin(embedder.name, embedder.dim, embedder.fingerprint)
    try:
        run.stream(progress, journal)
        run.finish()
    except BaseException:
        store.rollback()
        if run.journal is not None:
            run.journal.close()  # kept for the next run
        raise
    report = run.report
    report.seconds = round(time.perf_counter() - started, 3)
    del run  # what the run planned and read, before its memory is given back
    if report.chunks >= EMBED_BATCH:
        # The paths it reports were made among the run's transient objects (heap.py).
        report = heap.remade(report)
        heap.give_back()
    return report


class IndexRun:
    """One index run, in three phases: `plan` (what the corpora hold against the store, before
    any write: the files to read, the documents gone, the prune guard), `stream` (inside the
    write: each file read, parsed and chunked, its vectors embedded on a worker thread a batch
    at a time, reused from a copy or the journal, and written) and `finish` (the documents gone
    removed, file times and declarations brought up to date, the store's settings, the commit).
    """

    def __init__(
        self, store: Store, embedder: Embedder, instant: str, vocabularies: str | None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.instant = instant
        self.vocabularies = vocabularies
        self.report = IndexReport(embedder=embedder.name)
        self.journal: Journal | None = None

    # -- plan: before the write ---------------------------------------------------------------

    def plan(self, corpora: list[Listing], allow_prune: bool) -> None:
        """What this run will read, remove and reuse; refuses (`PruneRefusedError`) a run that
        would remove most of the store's documents without `allow_prune`."""
        store, report = self.store, self.report
        self.stored: dict[str, dict[str, _StoredFile]] = {
            str(c.source): _stored_files(store, str(c.source)) if storable(str(c.source)) else {}
            for c in corpora
        }
        skipped, restored = held_back(store)
        # A modification time this recent may be followed by another write in the same clock
        # tick, so it is not recorded as proof of "unchanged" (the file is read again next run).
        self.trusted_before = time.time_ns() - RACY_NS
        self.removals: dict[str, list[str]] = {}
        for c in corpora:
            report.skipped.extend(c.skipped)
            report.refused.extend(c.refused)
            # SPEC §8.4: a forgotten document stays out of the store until `forget --undo`.
            forgotten: set[str] = (
                {rel for rel in c.files if (str(c.source), rel) in skipped} if skipped else set()
            )
            if forgotten:
                report.skipped.extend(
                    Skipped(rel, "forgotten (recall forget --undo brings it back)")
                    for rel in c.files
                    if rel in forgotten
                )
                c.files = PathList(rel for rel in c.files if rel not in forgotten)
            stored = self.stored[str(c.source)]
            # Only documents already indexed can be gone: a first index makes no set of its files.
            if c.whole_folder and stored:
                on_disk = set(c.files)
                # SPEC §11: a document whose file or folder could not be read is never "gone".
                gone = sorted(r for r in set(stored) - on_disk if not c.keeps(r))
                if gone:
                    self.removals[str(c.source)] = gone
        total_known = sum(len(k) for k in self.stored.values())
        total_gone = sum(len(g) for g in self.removals.values())
        if total_known >= 5 and total_gone * 2 > total_known and not allow_prune:
            raise PruneRefusedError(
                f"recall index: this run would remove {total_gone} of {total_known} indexed "
                "documents (files missing on disk); check the path, or pass --allow-prune "
                "(allow_prune=True) to remove them"
            )
        # The files to read are the listings' own, each made into its tuple as it is read (a
        # list of a tuple a file would hold a first index's whole listing once more).
        self.corpora = corpora
        self.files = sum(len(c.files) for c in corpora)
        self.retimed: list[tuple[str, str, int]] = []
        # Declarations read by an older reader are read again from unchanged files (no
        # embedding).
        self.redeclared: list[tuple[str, str, Declarations]] | None = None
        if store.meta(DECLARATIONS_KEY) != DECLARATIONS_VERSION and total_known:
            self.redeclared = []
        self.indexed = frozenset(str(c.source) for c in corpora)
        self.missing_before = missing_roots(store, self.indexed)
        self.movable = _movable(store, self.stored, self.removals, self.missing_before)
        self.moved_from: set[tuple[str, str]] = set()
        self.copies = _CopiedNotes(store, self.stored, self.embedder.dim)
        self.owed = _Owed(restored)

    # -- stream: read, embed and write, inside the write ---------------------------------------

    def stream(self, progress: Progress | None, journal: Path | None) -> None:
        """Every planned file read and written, its chunks embedded a batch at a time on a
        worker thread while the next files are read and the previous batch is written."""
        store, embedder, report = self.store, self.embedder, self.report
        if journal is not None:
            # Read under the store's write lock: one run at a time reads and appends to it.
            self.journal = Journal(journal, embedder.dim, embedder.fingerprint)
            report.journal_discarded = self.journal.discarded
        log = self.journal
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-embed")
        counts = _Counts()
        stopping = threading.Event()

        def embed(batch: list[_Pending]) -> _Vectors:
            # A batch that fails stops the ones queued behind it before they call the embedder.
            try:
                return _embed(embedder, batch, counts, log, stopping)
            except BaseException:
                stopping.set()
                raise

        tell = counts.reporter(progress, self.files)
        try:
            inflight: tuple[list[_Pending], Future[_Vectors]] | None = None
            pending: list[_Pending] = []
            pending_chunks = 0
            work = (
                (c.source, rel, path, c.sidecars.get(rel))
                for c in self.corpora
                for rel, path in c.paths()
            )
            for done, (source, rel, file, side) in enumerate(work, 1):
                doc = _read(
                    source,
                    rel,
                    file,
                    self.stored[str(source)],
                    report,
                    self.trusted_before,
                    self.retimed,
                    self.redeclared,
                    side,
                )
                counts.files = done
                if doc is not None and doc.is_new and doc.digest in self.movable:
                    old = _move(store, doc, self.movable, report)
                    if old is not None:
                        self.moved_from.add(old)
                        doc = None
                if doc is not None and doc.chunks:
                    doc.vectors = self.copies.vectors(doc)
                if doc is not None:
                    pending.append(doc)
                    pending_chunks += len(doc.chunks)
                    counts.read += len(doc.chunks)
                    if pending_chunks >= EMBED_BATCH:
                        # Hand this batch to the worker, then write the one it just finished.
                        previous = inflight
                        inflight = (pending, worker.submit(embed, pending))
                        pending, pending_chunks = [], 0
                        if previous is not None:
                            self._write(previous[0], _awaited(previous[1], tell))
                        raise_if_stopped()
                tell()
            # The last batch goes to the worker too, so that the progress is told while it is
            # embedded (on a small run it is the only batch).
            last = worker.submit(embed, pending)
            if inflight is not None:
                self._write(inflight[0], _awaited(inflight[1], tell))
            self._write(pending, _awaited(last, tell))
            tell()
        except BaseException:
            # An interrupted or failed run does not wait for the batch being embedded, which
            # stops before its next embedder call (the journal keeps the slices finished).
            stopping.set()
            worker.shutdown(wait=False, cancel_futures=True)
            raise
        worker.shutdown()

    def _write(self, pending: list[_Pending], batch: _Vectors) -> None:
        """A batch's documents with their vectors, into the open write."""
        vectors, reused = batch
        report, owed = self.report, self.owed
        report.embedded += len(vectors) - reused
        report.reused += reused
        row = 0
        for d in pending:
            n = len(d.chunks)
            first = owed.restored.get((d.source, d.rel)) if d.is_new else None
            _put(self.store, d, vectors[row : row + n], self.instant, first)
            if first is not None:
                owed.brought_back.append((d.source, d.rel))
            owed.churn += churn.rewritten(d.chunks_before, n)
            row += n
            report.chunks += n
            (report.added if d.is_new else report.updated).append(d.rel)

    # -- finish: what the run owes the store besides its documents, and the commit ------------

    def finish(self) -> None:
        """The documents gone removed (those moved excepted), file times and declarations read
        again brought up to date, the store's settings and churn recorded, then the commit."""
        store, report, owed = self.store, self.report, self.owed
        for root, gone in self.removals.items():
            left = [rel for rel in gone if (root, rel) not in self.moved_from]
            if left:
                store.remove_documents(root, left)
                report.removed.extend(left)
                owed.churn += sum(self.stored[root][rel][3] for rel in left)
        for source_text, rel, mtime_ns in self.retimed:
            store.set_file_time(source_text, rel, mtime_ns)
        for source_text, rel, decl in self.redeclared or ():
            store.set_declarations(source_text, rel, edge_rows(decl), decl.alias, retired_row(decl))
        if self.redeclared is not None or store.meta(DECLARATIONS_KEY) is None:
            store.set_meta(DECLARATIONS_KEY, DECLARATIONS_VERSION)
        if self.vocabularies is not None and store.meta("vocabularies") != self.vocabularies:
            store.set_meta("vocabularies", self.vocabularies)
        if owed.brought_back:
            store.drop_journal(owed.brought_back)
        churn.add(store, owed.churn)
        raise_if_stopped()  # a stop whose first raise was swallowed still keeps the run out
        report.generation = store.commit(self.instant)
        if self.journal is not None:
            self.journal.remove()  # its vectors are in the store now
        # Counted again after the moves; a root not missing before the run is not missing now.
        report.missing_roots = missing_roots(store, self.indexed) if self.missing_before else []


def _read(
    source: Path,
    rel: str,
    file: str,
    known: dict[str, _StoredFile],
    report: IndexReport,
    trusted_before: int,
    retimed: list[tuple[str, str, int]],
    redeclared: list[tuple[str, str, Declarations]] | None = None,
    side: tuple[str, str] | None = None,
) -> _Pending | None:
    """Read, hash, parse and chunk one file; None when unchanged, skipped or refused. A file
    with the size and modification time recorded when it was last read is unchanged without
    being read (SPEC §3: an update costs what changed). With `redeclared`, unchanged files are
    read anyway and their declarations collected there (the vocabularies' reader changed).
    `side` is the note's metadata file (relative path, path): read with the note, part of its
    digest, and no modification time is recorded for a note that has one, so that a change to
    either, or the metadata file's removal, is seen at the next run."""
    prior = known.get(rel)
    if prior is not None and prior[2] is not None and redeclared is None and side is None:
        try:
            seen = os.stat(file)
        except OSError:
            seen = None  # opened below, and refused there with the reason
        if (
            seen is not None
            and stat.S_ISREG(seen.st_mode)
            and seen.st_size == prior[1]
            and seen.st_mtime_ns == prior[2]
        ):
            report.unchanged += 1
            return None
    try:
        # Non-blocking, and checked on the open file: a FIFO named `x.md` must not hang the
        # run, and a file swapped between listing and reading is judged as what was opened.
        with os.fdopen(os.open(file, OPEN_FLAGS), "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                report.skipped.append(Skipped(rel, "not a regular file"))
                return None
            if st.st_size > MAX_FILE_BYTES:
                report.skipped.append(
                    Skipped(rel, f"larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB cap")
                )
                return None
            data = handle.read()
    except OSError as err:
        # SPEC §11: gone or unreadable since it was listed: refused, its indexed version kept.
        report.refused.append(Skipped(rel, f"unreadable: {why(err)}"))
        return None
    size = len(data)
    mtime_ns = st.st_mtime_ns if st.st_mtime_ns < trusted_before and side is None else None
    sidecar, side_data = _sidecar(side, rel, report) if side is not None else (None, b"")
    digest = content_digest(data, sidecar, side_data)
    if prior is not None and prior[0] == digest:
        report.unchanged += 1
        if mtime_ns is not None and mtime_ns != prior[2]:
            retimed.append((str(source), rel, mtime_ns))  # not read again next run
        if redeclared is not None:
            with contextlib.suppress(UnicodeDecodeError):
                redeclared.append((str(source), rel, declare(rel, data.decode("utf-8"), sidecar)))
        return None
    if b"\x00" in data:
        report.skipped.append(Skipped(rel, "not text (contains NUL bytes)"))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        report.skipped.append(Skipped(rel, f"not UTF-8 text (byte {err.start})"))
        return None
    suffix = os.path.splitext(file)[1].lower()
    decl = None if suffix in TEXT_SUFFIXES else declare(rel, text, sidecar)
    fm = decl.frontmatter if decl is not None else None
    if fm is None:
        chunks = chunk(text)
    else:
        if fm.errors:
            problems = "; ".join(
                f"line {fm.lines.get(e.key, 1)}, {e.key}: {e.value!r} {e.message}"
                for e in fm.errors
            )
            report.refused.append(Skipped(rel, f"malformed frontmatter: {problems}"))
            return None
        chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
    return _Pending(
        source=str(source),
        rel=rel,
        size=size,
        mtime_ns=mtime_ns,
        digest=digest,
        fm=fm,
        decl=decl,
        title=_title(fm, chunks, rel, decl),
        chunks=chunks,
        is_new=prior is None,
        chunks_before=prior[3] if prior is not None else 0,
    )


def declarations_now(
    source: str, rel: str, file: str, side: tuple[str, str] | None, digest: str
) -> Declarations | None:
    """What the note at `file` declares now, read as an index run reads it (with its metadata
    file `side`), when it still holds what was indexed with `digest`; None when it does not
    (changed, gone, unreadable) or is not a note that declares (`recall doctor`)."""
    found: list[tuple[str, str, Declarations]] = []
    _read(Path(source), rel, file, {rel: (digest, 0, None, 0)}, IndexReport(), 0, [], found, side)
    return found[0][2] if found else None


def _sidecar(side: tuple[str, str], rel: str, report: IndexReport) -> tuple[Sidecar | None, bytes]:
    """A note's metadata file read and its bytes; one that cannot be read is reported as
    skipped, naming the note, and the note is read without it."""
    found, data, problem = sidecar_read(side)
    if found is None:
        report.skipped.append(Skipped(side[0], f"metadata of {rel} not read: {problem}"))
    return found, data


def _movable(
    store: Store,
    known: dict[str, dict[str, _StoredFile]],
    removals: dict[str, list[str]],
    missing: list[tuple[str, int]],
) -> dict[str, list[tuple[str, str]]]:
    """Content hash -> (root, path) of the documents this run may find moved: those whose file
    is gone from a folder indexed now, and those under a root that no longer exists."""
    movable: dict[str, list[tuple[str, str]]] = {}
    for root, gone in removals.items():
        for rel in gone:
            movable.setdefault(known[root][rel][0], []).append((root, rel))
    for root, _ in missing:
        for rel, digest, *_ in store.known_documents(root):
            movable.setdefault(digest, []).append((root, rel))
    return movable


def _move(
    store: Store, doc: _Pending, movable: dict[str, list[tuple[str, str]]], report: IndexReport
) -> tuple[str, str] | None:
    """Move a vanished document with `doc`'s content to `doc`'s place, the one at the same
    relative path first; its (root, path), or None when none can move (another title: `doc`
    is embedded as new)."""
    candidates = sorted(movable[doc.digest], key=lambda c: c[1] != doc.rel)
    key = _core.resolution_key(doc.rel)
    for root, rel in candidates:
        if store.move_document(root, rel, doc.source, doc.rel, key, doc.title, doc.mtime_ns):
            movable[doc.digest].remove((root, rel))
            decl = doc.decl
            store.set_declarations(
                doc.source,
                doc.rel,
                edge_rows(decl),
                decl.alias if decl is not None else None,
                retired_row(decl),
            )
            report.moved.append((_report_path(root, rel, doc.source), doc.rel))
            return root, rel
    return None


def _report_path(root: str, rel: str, source: str) -> str:
    """A document's path as a report shows it: relative to `source`'s root when it is there."""
    return rel if root == source else os.path.join(root, rel)


@dataclass
class _Counts:
    """How far the run is: files done, chunks read, chunks embedded (the worker adds these)."""

    files: int = 0
    read: int = 0
    embedded: int = 0
    #: Chunks a second of the embedder's last call (None before the first).
    rate: float | None = None

    def slice(self) -> int:
        """How many chunks the next embedder call takes (`EMBED_SLICE`, `SLICE_SECONDS`)."""
        if self.rate is None:
            return EMBED_SLICE
        return max(EMBED_SLICE, int(self.rate * SLICE_SECONDS))

    def reporter(self, progress: Progress | None, total: int) -> Callable[[], None]:
        """A call that hands the counts to `progress` in the form it takes (see `Progress`)."""
        if progress is None:
            return lambda: None
        if _takes_chunks_read(progress):
            return lambda: progress(self.files, total, self.embedded, self.read)
        return lambda: progress(self.files, total, self.embedded)


def _takes_chunks_read(fn: Callable[..., None]) -> bool:
    """Whether a progress callable takes a fourth argument (the chunks read so far)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional for p in params) >= 4


def _awaited(future: Future[_Vectors], tell: Callable[[], None]) -> _Vectors:
    """The future's result, telling the progress every quarter second while it is not done."""
    while True:
        try:
            return future.result(timeout=0.25)
        except FutureTimeout:
            tell()


class _Stopped(Exception):
    """A batch left unembedded because its run had stopped (never seen by the caller: the run
    raises what stopped it)."""


def _embed(
    embedder: Embedder,
    pending: list[_Pending],
    counts: _Counts,
    journal: Journal | None,
    stopping: threading.Event,
) -> _Vectors:
    """The vectors of every chunk of `pending`, in order, and how many were reused (runs on the
    worker thread): a copied document's from the store, those in the journal, and the
    embedder's for the rest, journaled and counted a slice at a time (`_Counts.slice`; longest
    first, so that a model's slices are of even lengths). Once `stopping` is set (the run
    stopped or a batch failed), it raises before the next embedder call."""
    total = sum(len(d.chunks) for d in pending)
    vectors = np.empty((total, embedder.dim), dtype="<f4")
    rows: list[int] = []
    texts: list[str] = []
    row = 0
    for d in pending:
        if d.vectors is not None:
            vectors[row : row + len(d.chunks)] = d.vectors
            row += len(d.chunks)
            continue
        for c in d.chunks:
            rows.append(row)
            texts.append(_embed_text(d.title, c))
            row += 1
    keys: list[bytes] = []
    if journal is not None and texts:
        keys = [text_digest(t) for t in texts]
        missing = []
        for i, key in enumerate(keys):
            found = journal.found(key)
            if found is None:
                missing.append(i)
            else:
                vectors[rows[i]] = found
        if len(missing) < len(texts):
            rows = [rows[i] for i in missing]
            texts = [texts[i] for i in missing]
            keys = [keys[i] for i in missing]
    counts.embedded += total - len(texts)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    at = 0
    while at < len(order):
        if stopping.is_set():
            raise _Stopped("the index run stopped before this batch was embedded")
        part = order[at : at + counts.slice()]
        at += len(part)
        started = time.perf_counter()
        computed = np.ascontiguousarray(embedder.embed([texts[i] for i in part]), dtype="<f4")
        counts.rate = len(part) / max(time.perf_counter() - started, 1e-6)
        if computed.shape != (len(part), embedder.dim):
            raise UsageError(
                f"recall embedder: {embedder.name} returned shape {computed.shape} for "
                f"{len(part)} texts of dimension {embedder.dim}"
            )
        vectors[[rows[i] for i in part]] = computed
        if journal is not None:
            journal.append([keys[i] for i in part], computed)
        counts.embedded += len(part)
    return vectors, total - len(texts)


@dataclass
class _Owed:
    """What a run owes the store besides its documents, settled inside its write: the chunk
    churn it caused (`recall.churn`), and the journal entries of the forgotten documents it
    brought back with their first indexing time (`recall.forgetting.held_back`)."""

    restored: dict[tuple[str, str], str]
    churn: int = 0
    brought_back: list[tuple[str, str]] = field(default_factory=list)


def _stored_files(store: Store, source: str) -> dict[str, _StoredFile]:
    """What the store holds of `source`, by path."""
    return {path: (h, size, mtime, n) for path, h, size, mtime, n in store.known_documents(source)}


class _CopiedNotes:
    """The stored documents by content hash, read once a run has a document to embed: one with
    the same content and title as a stored document (a copied note) takes that document's
    vectors, since its chunks and the texts embedded from them are the same (SPEC §4)."""

    def __init__(self, store: Store, known: dict[str, dict[str, _StoredFile]], dim: int) -> None:
        self._store = store
        self._known = known
        self._dim = dim
        self._by_hash: dict[str, list[tuple[str, str]]] | None = None

    def vectors(self, doc: _Pending) -> npt.NDArray[np.float32] | None:
        """The vectors of a stored document that `doc` copies, in chunk order, or None."""
        if self._by_hash is None:
            self._by_hash = {}
            for root, _ in self._store.sources():
                known = self._known.get(root)
                if known is None:
                    known = _stored_files(self._store, root)
                for rel, (content_hash, *_) in known.items():
                    self._by_hash.setdefault(content_hash, []).append((root, rel))
        wanted: list[tuple[str, str]] = []
        for root, rel in self._by_hash.get(doc.digest, ()):
            if (root, rel) == (doc.source, doc.rel):
                continue
            wanted = wanted or [(c.text, " > ".join(c.heading_path)) for c in doc.chunks]
            stored = self._store.document_vectors(root, rel)
            # The chunks are compared too: the stored row may have changed in this run, or
            # have been chunked by another release or as plain text.
            if stored is None or stored[0] != doc.title or stored[1] != wanted:
                continue
            vectors = np.frombuffer(stored[2], dtype="<f4")
            if vectors.size == len(wanted) * self._dim:
                return vectors.reshape(len(wanted), self._dim)
        return None


def _put(
    store: Store,
    d: _Pending,
    vectors: npt.NDArray[np.float32],
    instant: str,
    first_indexed_at: str | None,
) -> None:
    fm = d.fm
    metadata_error = None
    if fm is not None and fm.empty_window:
        metadata_error = (
            f"empty validity window: valid_from {fm.valid_from_raw} is after "
            f"valid_until {fm.valid_until_raw}"
        )
    document = DocumentRow(
        source=d.source,
        path=d.rel,
        key=_core.resolution_key(d.rel),
        title=d.title,
        content_hash=d.digest,
        size_bytes=d.size,
        valid_from_raw=fm.valid_from_raw if fm else None,
        valid_until_raw=fm.valid_until_raw if fm else None,
        valid_from=fm.valid_from.isoformat() if fm and fm.valid_from else None,
        valid_until=fm.valid_until.isoformat() if fm and fm.valid_until else None,
        metadata_error=metadata_error,
        frontmatter=json.dumps(dict(fm.fields) if fm else {}, ensure_ascii=False),
        chunks=[
            (
                c.ordinal,
                c.text,
                c.byte_start,
                c.byte_end,
                c.line_start,
                c.line_end,
                " > ".join(c.heading_path),
            )
            for c in d.chunks
        ],
        vectors=vectors.tobytes(),
        edges=edge_rows(d.decl),
        mtime_ns=d.mtime_ns,
        alias=d.decl.alias if d.decl is not None else None,
        retired=retired_row(d.decl),
    )
    store.put_document(document, now=instant, first_indexed_at=first_indexed_at)


def edge_rows(decl: Declarations | None) -> list[EdgeRow]:
    """The edge rows a store keeps for `decl`."""
    if decl is None:
        return []
    return [
        (
            e.reference,
            e.key,
            e.reversed,
            e.origin.vocabulary,
            e.origin.line,
            e.origin.text,
            e.overridden,
            e.standing,
        )
        for e in decl.edges
    ]


def retired_row(decl: Declarations | None) -> RetiredRow | None:
    """The retirement row a store keeps for `decl`."""
    r = decl.retired if decl is not None else None
    if r is None:
        return None
    since = r.since.isoformat() if r.since is not None else None
    return (r.state, since, r.origin.vocabulary, r.origin.line, r.origin.text, r.overridden)
