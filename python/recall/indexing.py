"""The index run (SPEC §3): walk a corpus, skip and refuse files with reasons, detect changes by
content hash, guard against mass pruning, parse and chunk, embed on a worker thread while
reading and writing go on, and commit everything in one store transaction.

Owns: which files are eligible, the per-file reasons, the typed report, and the pipeline that
keeps the embedder busy. Does not own: SQL (the Rust store), frontmatter rules (`frontmatter`),
chunk boundaries (`chunking`) or vectors (`embedders`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall import _core
from recall.chunking import Chunk, chunk
from recall.embedders import Embedder
from recall.errors import PruneRefusedError, UsageError
from recall.frontmatter import Frontmatter, parse

__all__ = ["IndexReport", "Progress", "Skipped", "run_index"]

#: SPEC §2.1: indexed by default; `.txt` is body only (no frontmatter).
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
TEXT_SUFFIXES = frozenset({".txt"})
#: SPEC §2.5 default size cap.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: Chunks embedded per batch: bounds memory on large corpora.
EMBED_BATCH = 512

#: Called after each file with (files done, files in the run, chunks embedded so far).
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True)
class Skipped:
    """A file or folder the run did not index, and why (SPEC §2.5)."""

    path: str
    reason: str


@dataclass
class IndexReport:
    """What one index run did. `refused` files had errors; `skipped` ones were not eligible."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    generation: int = 0
    embedder: str = ""

    @property
    def ok(self) -> bool:
        """False when any file was refused (the CLI exits 1)."""
        return not self.refused

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


@dataclass
class _Pending:
    """A parsed document waiting for its vectors."""

    source: str
    rel: str
    size: int
    digest: str
    fm: Frontmatter | None
    title: str
    chunks: list[Chunk]
    is_new: bool


@dataclass
class _Corpus:
    """The eligible files under one root, found before anything is written."""

    source: Path
    files: list[tuple[str, Path]]
    skipped: list[Skipped]
    whole_folder: bool


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _walk(root: Path) -> _Corpus:
    """SPEC §2.5: hidden folders and symlinks leaving the root are skipped with a reason."""
    files: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    suffixes = MARKDOWN_SUFFIXES | TEXT_SUFFIXES
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        keep = []
        for name in sorted(dirnames):
            sub = here / name
            if name.startswith("."):
                skipped.append(Skipped(_rel(sub, root) + "/", "hidden folder"))
            elif sub.is_symlink():
                target = sub.resolve()
                reason = (
                    "symlinked folder inside the corpus (its target is indexed directly)"
                    if _within(target, root)
                    else f"symlink leaves the corpus root (points to {target})"
                )
                skipped.append(Skipped(_rel(sub, root) + "/", reason))
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            path = here / name
            if path.suffix.lower() not in suffixes:
                continue
            rel = _rel(path, root)
            if name.startswith("."):
                skipped.append(Skipped(rel, "hidden file"))
            elif path.is_symlink() and not _within(path.resolve(), root):
                skipped.append(
                    Skipped(rel, f"symlink leaves the corpus root (points to {path.resolve()})")
                )
            else:
                files.append((rel, path))
    return _Corpus(root, files, skipped, whole_folder=True)


def _title(fm: Frontmatter | None, chunks: Sequence[Chunk], rel: str) -> str:
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
    store: Any,
    embedder: Embedder,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    instant: str,
    allow_prune: bool = False,
    progress: Progress | None = None,
) -> IndexReport:
    """Index files and folders incrementally in one store transaction (SPEC §3).

    Batches of chunks are embedded on a worker thread while the next files are read and parsed
    and the previous batch is written (onnxruntime and the Rust store release the GIL).
    """
    started = time.perf_counter()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    corpora = [_discover(Path(p)) for p in paths]
    report = IndexReport(embedder=embedder.name)

    known = {str(c.source): dict(store.known_documents(str(c.source))) for c in corpora}
    removals: dict[str, list[str]] = {}
    for c in corpora:
        report.skipped.extend(c.skipped)
        if c.whole_folder:
            on_disk = {rel for rel, _ in c.files}
            gone = sorted(set(known[str(c.source)]) - on_disk)
            if gone:
                removals[str(c.source)] = gone
    total_known = sum(len(k) for k in known.values())
    total_gone = sum(len(g) for g in removals.values())
    if total_known >= 5 and total_gone * 2 > total_known and not allow_prune:
        raise PruneRefusedError(
            f"recall index: this run would remove {total_gone} of {total_known} indexed "
            "documents (files missing on disk); check the path, or pass --allow-prune "
            "(allow_prune=True) to remove them"
        )

    work = [(c.source, rel, p) for c in corpora for rel, p in c.files]
    store.begin(embedder.name, embedder.dim, embedder.fingerprint)
    try:
        for root, gone in removals.items():
            store.remove_documents(root, gone)
            report.removed.extend(gone)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-embed") as worker:
            inflight: tuple[list[_Pending], Future[npt.NDArray[np.float32]]] | None = None
            pending: list[_Pending] = []
            pending_chunks = 0
            for done, (source, rel, file) in enumerate(work, 1):
                doc = _read(source, rel, file, known[str(source)], report)
                if doc is not None:
                    pending.append(doc)
                    pending_chunks += len(doc.chunks)
                    if pending_chunks >= EMBED_BATCH:
                        # Hand this batch to the worker, then write the one it just finished.
                        previous = inflight
                        inflight = (pending, worker.submit(_embed, embedder, pending))
                        pending, pending_chunks = [], 0
                        if previous is not None:
                            _write(store, previous[0], previous[1].result(), instant, report)
                if progress is not None:
                    progress(done, len(work), report.embedded)
            if inflight is not None:
                _write(store, inflight[0], inflight[1].result(), instant, report)
            _write(store, pending, _embed(embedder, pending), instant, report)
        report.generation = store.commit(instant)
    except BaseException:
        store.rollback()
        raise
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _discover(path: Path) -> _Corpus:
    if not path.exists():
        raise UsageError(f"recall index: {path} does not exist; pass a folder of notes")
    resolved = path.resolve()
    if resolved.is_dir():
        return _walk(resolved)
    return _Corpus(resolved.parent, [(resolved.name, resolved)], [], whole_folder=False)


def _read(
    source: Path,
    rel: str,
    file: Path,
    known: dict[str, str],
    report: IndexReport,
) -> _Pending | None:
    """Read, hash, parse and chunk one file; None when unchanged, skipped or refused."""
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            report.skipped.append(
                Skipped(rel, f"larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB cap")
            )
            return None
        data = file.read_bytes()
    except OSError as err:
        report.refused.append(Skipped(rel, f"unreadable: {err.strerror or err}"))
        return None
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if known.get(rel) == digest:
        report.unchanged += 1
        return None
    if b"\x00" in data:
        report.skipped.append(Skipped(rel, "not text (contains NUL bytes)"))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        report.skipped.append(Skipped(rel, f"not UTF-8 text (byte {err.start})"))
        return None
    if file.suffix.lower() in TEXT_SUFFIXES:
        fm = None
        chunks = chunk(text)
    else:
        fm = parse(text)
        if fm.errors:
            problems = "; ".join(f"{e.key}: {e.value!r} {e.message}" for e in fm.errors)
            report.refused.append(Skipped(rel, f"malformed frontmatter: {problems}"))
            return None
        chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
    return _Pending(
        source=str(source),
        rel=rel,
        size=size,
        digest=digest,
        fm=fm,
        title=_title(fm, chunks, rel),
        chunks=chunks,
        is_new=rel not in known,
    )


def _embed(embedder: Embedder, pending: list[_Pending]) -> npt.NDArray[np.float32]:
    """The vectors of every chunk of `pending`, in order (runs on the worker thread)."""
    texts = [_embed_text(d.title, c) for d in pending for c in d.chunks]
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    vectors = np.ascontiguousarray(embedder.embed(texts), dtype="<f4")
    if vectors.shape != (len(texts), embedder.dim):
        raise UsageError(
            f"recall embedder: {embedder.name} returned shape {vectors.shape} for "
            f"{len(texts)} texts of dimension {embedder.dim}"
        )
    return vectors


def _write(
    store: Any,
    pending: list[_Pending],
    vectors: npt.NDArray[np.float32],
    instant: str,
    report: IndexReport,
) -> None:
    report.embedded += len(vectors)
    row = 0
    for d in pending:
        n = len(d.chunks)
        _put(store, d, vectors[row : row + n], instant)
        row += n
        report.chunks += n
        (report.added if d.is_new else report.updated).append(d.rel)


def _put(store: Any, d: _Pending, vectors: npt.NDArray[np.float32], instant: str) -> None:
    fm = d.fm
    metadata_error = None
    if fm is not None and fm.empty_window:
        metadata_error = (
            f"empty validity window: valid_from {fm.valid_from_raw} is after "
            f"valid_until {fm.valid_until_raw}"
        )
    refs = list(fm.supersedes) if fm is not None else []
    store.put_document(
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
        edges=[(ref, _core.resolution_key(ref)) for ref in refs],
        now=instant,
    )
