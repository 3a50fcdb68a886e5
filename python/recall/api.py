"""The public Python API: `recall.open` and `Memory`.

Owns: the index run (walking a corpus, skipping and refusing files with reasons, incremental
detection by content hash, the prune guard, batching chunks through the embedder, one store
transaction per run) and the typed reports it returns. Does not own: SQL (the Rust store),
frontmatter rules (`frontmatter`), chunk boundaries (`chunking`) or vectors (`embedders`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recall import _core
from recall.calibration import (
    DEFAULT_SCALE,
    DEFAULT_THRESHOLD,
    Calibration,
    Fit,
    fit,
    load_queries,
    load_record,
    meta_key,
)
from recall.chunking import Chunk, chunk
from recall.embedders import Embedder, get_embedder
from recall.errors import PruneRefusedError, TrustRefusal, UsageError
from recall.frontmatter import Frontmatter, parse
from recall.results import (
    Hit,
    Provenance,
    Result,
    Retrieval,
    Staleness,
    Validity,
    abstention_reason,
)

__all__ = ["IndexReport", "Memory", "Skipped", "StoreStats", "open"]

#: SPEC §2.1: indexed by default; `.txt` is body only (no frontmatter).
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
TEXT_SUFFIXES = frozenset({".txt"})
#: SPEC §2.5 default size cap.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: Chunks embedded per batch: bounds memory on large corpora.
EMBED_BATCH = 512
#: SPEC §4: dense candidates per leg.
CANDIDATES = 20
#: SPEC §5.4: a store not refreshed for longer than this is reported stale.
MAX_AGE = dt.timedelta(days=2)
MODES = ("strict", "development")

Progress = Callable[[int, int], None]


def _utc(now: dt.datetime | None) -> dt.datetime:
    """SPEC §5.5: the clock is read once by the caller; a naive datetime is UTC."""
    if now is None:
        return dt.datetime.now(dt.timezone.utc)
    if now.tzinfo is None:
        return now.replace(tzinfo=dt.timezone.utc)
    return now.astimezone(dt.timezone.utc)


def format_instant(instant: dt.datetime) -> str:
    """Fixed-width UTC ISO 8601 with microseconds, so stored instants sort as text."""
    return _utc(instant).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _micros(instant: dt.datetime) -> int:
    delta = _utc(instant) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _format_micros(us: int | None) -> str | None:
    return None if us is None else format_instant(_EPOCH + dt.timedelta(microseconds=us))


def _parse_stored(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def _mode(mode: str | None) -> str:
    chosen = mode or os.environ.get("RECALL_TRUST_MODE") or "strict"
    if chosen not in MODES:
        raise UsageError(f"recall search: unknown mode '{chosen}'; use strict or development")
    return chosen


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

    @property
    def ok(self) -> bool:
        """False when any file was refused (the CLI exits 1)."""
        return not self.refused

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


@dataclass(frozen=True)
class StoreStats:
    """A summary of the store file (`recall stats`)."""

    path: str
    schema_version: int
    generation: int
    documents: int
    chunks: int
    vectors: int
    embedder: str | None
    embedder_dim: int | None
    embedder_fingerprint: str | None
    newest_indexed_at: str | None
    last_run_at: str | None
    file_size_bytes: int
    edges_resolved: int
    edges_dangling: int
    edges_ambiguous: int
    edges_self: int
    metadata_errors: int
    #: Chunks added, changed or removed over the store's life (calibration staleness, SPEC §7).
    chunk_churn: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


class Memory:
    """One store file. Use as a context manager or call `close()`."""

    def __init__(self, path: str | os.PathLike[str], embedder: str | Embedder | None = None):
        self.path = os.fspath(path)
        self._store = _core.Store(self.path)
        self._embedder_spec = embedder

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    def __repr__(self) -> str:
        return f"Memory({self.path!r})"

    @property
    def embedder(self) -> Embedder:
        """The embedder in use: the one asked for, else the one the store was built with."""
        spec = self._embedder_spec
        if spec is None:
            bound = self._store.embedder()
            spec = bound[0] if bound else None
        return get_embedder(spec)

    def stats(self) -> StoreStats:
        raw = self._store.stats()
        embedder = raw.pop("embedder")
        name, dim, fingerprint = embedder if embedder else (None, None, None)
        return StoreStats(
            path=self.path,
            embedder=name,
            embedder_dim=dim,
            embedder_fingerprint=fingerprint,
            **raw,
        )

    def calibration(self) -> tuple[Calibration | None, str]:
        """The usable calibration for the store's embedder, or (None, why it is not usable)."""
        bound = self._store.embedder()
        if bound is None:
            return None, "nothing indexed yet"
        fingerprint = bound[2]
        return load_record(self._store.meta(meta_key(fingerprint)), fingerprint)

    def calibrate(
        self,
        labelled: str | os.PathLike[str] | Sequence[tuple[str, bool]] | Sequence[dict[str, Any]],
        *,
        now: dt.datetime | None = None,
    ) -> tuple[Calibration, Fit]:
        """Fit and store a calibration from labelled queries (SPEC §7): a JSONL/JSON file, or
        (query, answerable) pairs / {"query", "answerable"} objects. The record is saved even
        when it is not certified (`Fit.certified` says why)."""
        bound = self._store.embedder()
        if bound is None or self.stats().documents == 0:
            raise UsageError("recall calibrate: nothing is indexed; run 'recall index PATH' first")
        embedder = self.embedder
        if embedder.fingerprint != bound[2]:
            raise UsageError(
                f"recall calibrate: the store was built with {bound[0]}, not {embedder.name}"
            )
        if isinstance(labelled, (str, os.PathLike)):
            pairs = load_queries(labelled)
        else:
            pairs = []
            for i, item in enumerate(labelled):
                query, answerable = (
                    (item.get("query"), item.get("answerable"))
                    if isinstance(item, dict)
                    else tuple(item)
                )
                if not isinstance(query, str) or not isinstance(answerable, bool):
                    raise UsageError(f"recall calibrate: item {i + 1} needs a query and a bool")
                pairs.append((query, answerable))
        if not pairs:
            raise UsageError("recall calibrate: no labelled queries given")
        vectors = np.ascontiguousarray(embedder.embed([q for q, _ in pairs]), dtype="<f4")
        samples = []
        for (query, answerable), vector in zip(pairs, vectors):
            # SPEC §7: the sample is the top-1 dense cosine (0.0 when nothing is retrieved).
            raw = self._store.search(
                vector.tobytes(),
                text="",
                k=1,
                candidates=1,
                now_us=0,
                known_as_of_us=None,
                threshold=DEFAULT_THRESHOLD,
                scale=DEFAULT_SCALE,
                unverified=True,
            )
            samples.append((query, answerable, raw["dense"][0][1] if raw["dense"] else 0.0))
        result = fit(samples)
        stats = self.stats()
        digest = hashlib.blake2b(json.dumps(pairs).encode(), digest_size=4).hexdigest()
        calibration = Calibration(
            id=f"g{stats.generation}-{digest}",
            embedder=embedder.name,
            fingerprint=embedder.fingerprint,
            threshold=result.threshold,
            scale=result.scale,
            certified=result.certified,
            generation=stats.generation,
            chunk_count=stats.chunks,
            churn=stats.chunk_churn,
            fitted_at=format_instant(_utc(now)),
            auc=result.auc,
            auc_lower=result.auc_interval[0] if result.auc_interval else None,
            n_answerable=result.n_answerable,
            n_unanswerable=result.n_unanswerable,
            certified_reason=result.certified_reason,
        )
        self._store.set_meta(meta_key(embedder.fingerprint), json.dumps(calibration.to_dict()))
        return calibration, result

    def export_calibration(self) -> dict[str, Any]:
        """The stored calibration record for this store's embedder, as JSON-ready data."""
        calibration, why = self.calibration()
        if calibration is None:
            raise UsageError(f"recall calibrate: nothing to export: {why}")
        return calibration.to_dict()

    def import_calibration(self, record: str | os.PathLike[str] | dict[str, Any]) -> Calibration:
        """Store a calibration record (a dict, JSON text or a JSON file) for this store's
        embedder. A record that would not be applied is refused with the reason."""
        bound = self._store.embedder()
        if bound is None:
            raise UsageError("recall calibrate: index documents before importing a calibration")
        if isinstance(record, os.PathLike) or (
            isinstance(record, str) and not record.lstrip().startswith("{")
        ):
            try:
                record = Path(record).read_text(encoding="utf-8")
            except OSError as err:
                raise UsageError(f"recall calibrate: cannot read {record}: {err}") from err
        calibration, why = load_record(record, bound[2])
        if calibration is None:
            raise UsageError(f"recall calibrate: record not imported: {why}")
        self._store.set_meta(meta_key(bound[2]), json.dumps(calibration.to_dict()))
        return calibration

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        now: dt.datetime | None = None,
        known_as_of: dt.datetime | None = None,
        mode: str | None = None,
    ) -> Result:
        """Answer `query` with a judgment (SPEC §5). Only `ok` hits may be acted on.

        Strict mode (the default) raises `TrustRefusal` when trust cannot be established;
        development mode (`mode="development"` or RECALL_TRUST_MODE) answers degraded.
        """
        started = time.perf_counter()
        if not 1 <= k <= 100:
            raise UsageError(f"recall search: k must be in 1..100, got {k}")
        chosen = _mode(mode)
        instant = _utc(now)
        known = _utc(known_as_of) if known_as_of is not None else None
        refusal: tuple[str, str] | None = None
        # The cheap summary, not stats(): its edge and vector counts scan whole tables.
        documents, newest_indexed_at, last_run_at, churn = self._store.freshness()
        bound = self._store.embedder()
        if documents == 0 or bound is None:
            refusal = ("INDEX_NOT_READY", "nothing is indexed; run 'recall index PATH' first")
            if chosen == "strict" or bound is None:
                raise TrustRefusal(*refusal)
        embedder = self.embedder
        if embedder.fingerprint != bound[2] or embedder.dim != bound[1]:
            refusal = (
                "LINEAGE_MISMATCH",
                f"the store's vectors were built with {bound[0]}, the query would be embedded "
                f"with {embedder.name}; search with --embedder {bound[0]} or re-index into a "
                "new --db",
            )
            raise TrustRefusal(*refusal)  # no mode can compare vectors of two lineages
        calibration, why = self.calibration()
        if calibration is None:
            refusal = refusal or (
                "CALIBRATION_MISSING",
                f"{why}; run 'recall calibrate QUERIES' (or use --mode development)",
            )
        elif calibration.certified is not True:
            why_not = f" ({calibration.certified_reason})" if calibration.certified_reason else ""
            refusal = refusal or (
                "CALIBRATION_UNCERTIFIED",
                f"calibration {calibration.id} is not certified{why_not}; add labelled queries "
                "and run 'recall calibrate QUERIES' again (or use --mode development)",
            )
        elif calibration.is_stale(churn):
            refusal = refusal or (
                "CALIBRATION_STALE",
                f"calibration {calibration.id} was fitted on {calibration.chunk_count} chunks "
                f"and {churn - (calibration.churn or 0)} chunks changed since; run "
                "'recall calibrate QUERIES' again (or use --mode development)",
            )
        if refusal is not None and chosen == "strict":
            raise TrustRefusal(*refusal)

        threshold = calibration.threshold if calibration else DEFAULT_THRESHOLD
        scale = calibration.scale if calibration else DEFAULT_SCALE
        t_embed = time.perf_counter()
        vector = np.ascontiguousarray(embedder.embed([query])[0], dtype="<f4")
        embed_ms = (time.perf_counter() - t_embed) * 1e3
        raw = self._store.search(
            vector.tobytes(),
            text=query,
            k=k,
            candidates=max(CANDIDATES, k),
            now_us=_micros(instant),
            known_as_of_us=_micros(known) if known is not None else None,
            threshold=threshold,
            scale=scale,
            unverified=calibration is None,
        )
        hits = [_hit(h) for h in raw["hits"]]
        abstained = not any(h.ok for h in hits)
        known_text = format_instant(known) if known is not None else None
        reason = ""
        if abstained:
            reason = abstention_reason(hits, threshold=threshold, known_as_of=known_text)
        dense_scores = [score for _, score in raw["dense"]]
        newest = max(
            filter(None, (_parse_stored(newest_indexed_at), _parse_stored(last_run_at))),
            default=None,
        )
        age = (instant - newest).total_seconds() if newest else None
        timings = {
            "embed": round(embed_ms, 3),
            "load": round(raw["load_ms"], 3),
            "dense": round(raw["dense_ms"], 3),
            "lexical": round(raw["lexical_ms"], 3),
            "fuse": round(raw["fuse_ms"], 3),
            "trust": round(raw["trust_ms"], 3),
            "judge": 0.0,
        }
        timings["total"] = round((time.perf_counter() - started) * 1e3, 3)
        return Result(
            query=query,
            hits=hits,
            abstained=abstained,
            reason=reason,
            # SPEC §4: from dense cosines only; a lexical match never suppresses it.
            gap_warning=not dense_scores or max(dense_scores) < threshold,
            calibrated=calibration is not None,
            calibration=(
                {
                    "id": calibration.id,
                    "embedder": calibration.embedder,
                    "threshold": calibration.threshold,
                    "scale": calibration.scale,
                    "certified": calibration.certified,
                    "stale": calibration.is_stale(churn),
                }
                if calibration
                else None
            ),
            generation=int(raw["generation"]),
            staleness=Staleness(
                newest_indexed_at=format_instant(newest) if newest else None,
                age_seconds=age,
                stale=age is None or age > MAX_AGE.total_seconds(),
            ),
            trust_state="trusted" if refusal is None else "degraded",
            mode=chosen,
            timings_ms=timings,
        )

    def explain(
        self,
        query: str,
        file: str | os.PathLike[str],
        *,
        now: dt.datetime | None = None,
        known_as_of: dt.datetime | None = None,
    ) -> dict[str, Any]:
        """Why `file` gets its verdict for `query`: its key, claims out and in (dangling and
        ambiguous included, each with whether it applies at `known_as_of`), the chain walk, its
        window against `now`, and its best chunk's cosine against the threshold in use.

        Diagnostic only: it never refuses, and says which calibration (if any) it used.
        """
        if self._store.embedder() is None:
            raise UsageError("recall explain: nothing is indexed; run 'recall index PATH' first")
        instant = _utc(now)
        known = _utc(known_as_of) if known_as_of is not None else None
        calibration, why = self.calibration()
        threshold = calibration.threshold if calibration else DEFAULT_THRESHOLD
        scale = calibration.scale if calibration else DEFAULT_SCALE
        embedder = self.embedder
        vector = np.ascontiguousarray(embedder.embed([query])[0], dtype="<f4")
        name = os.fspath(file)
        # A stored path first, then the file's absolute path under an indexed root.
        names = [name, str(Path(name).resolve())] if Path(name).exists() else [name]
        raw = None
        for candidate in names:
            raw = raw or self._store.explain(
                candidate,
                vector.tobytes(),
                text=query,
                now_us=_micros(instant),
                known_as_of_us=_micros(known) if known is not None else None,
                threshold=threshold,
                scale=scale,
            )
        if raw is None:
            raise UsageError(
                f"recall explain: {name} is not an indexed document; pass its path as shown by "
                "'recall search' or a path under an indexed folder"
            )
        for claim in (*raw["claims_out"], *raw["claims_in"]):
            recorded = claim.pop("recorded_at_us")
            claim["recorded_at"] = _format_micros(recorded)
        raw["first_indexed_at"] = _format_micros(raw.pop("first_indexed_us"))
        best = raw.pop("best_chunk")
        raw["best_chunk"] = None if best is None else {"chunk_id": best[0], "score": best[1]}
        raw.update(
            query=query,
            now=format_instant(instant),
            known_as_of=format_instant(known) if known is not None else None,
            threshold=threshold,
            calibrated=calibration is not None,
            calibration_note=why,
        )
        return raw

    def index(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        now: dt.datetime | None = None,
        allow_prune: bool = False,
        progress: Progress | None = None,
    ) -> IndexReport:
        """Index files and folders incrementally in one transaction (SPEC §3).

        Unchanged files (same content hash) are not re-embedded, changed files are replaced,
        files gone from a folder are removed. A file that cannot be accepted is refused with a
        reason and the run goes on; its previously indexed version, if any, is kept.
        """
        started = time.perf_counter()
        instant = format_instant(_utc(now))
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        corpora = [self._discover(Path(p)) for p in paths]
        embedder = self.embedder
        report = IndexReport()

        known = {str(c.source): dict(self._store.known_documents(str(c.source))) for c in corpora}
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
        self._store.begin(embedder.name, embedder.dim, embedder.fingerprint)
        try:
            for root, gone in removals.items():
                self._store.remove_documents(root, gone)
                report.removed.extend(gone)
            pending: list[_Pending] = []
            pending_chunks = 0
            for done, (source, rel, file) in enumerate(work, 1):
                doc = self._read(source, rel, file, known[str(source)], report)
                if doc is not None:
                    pending.append(doc)
                    pending_chunks += len(doc.chunks)
                    if pending_chunks >= EMBED_BATCH:
                        self._flush(pending, embedder, instant, report)
                        pending, pending_chunks = [], 0
                if progress is not None:
                    progress(done, len(work))
            self._flush(pending, embedder, instant, report)
            report.generation = self._store.commit(instant)
        except BaseException:
            self._store.rollback()
            raise
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _discover(self, path: Path) -> _Corpus:
        if not path.exists():
            raise UsageError(f"recall index: {path} does not exist; pass a folder of notes")
        resolved = path.resolve()
        if resolved.is_dir():
            return _walk(resolved)
        return _Corpus(resolved.parent, [(resolved.name, resolved)], [], whole_folder=False)

    def _read(
        self,
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

    def _flush(
        self, pending: list[_Pending], embedder: Embedder, instant: str, report: IndexReport
    ) -> None:
        texts = [_embed_text(d.title, c) for d in pending for c in d.chunks]
        if not texts:
            vectors = np.zeros((0, embedder.dim), dtype=np.float32)
        else:
            vectors = np.ascontiguousarray(embedder.embed(texts), dtype="<f4")
            if vectors.shape != (len(texts), embedder.dim):
                raise UsageError(
                    f"recall embedder: {embedder.name} returned shape {vectors.shape} for "
                    f"{len(texts)} texts of dimension {embedder.dim}"
                )
        report.embedded += len(texts)
        row = 0
        for d in pending:
            n = len(d.chunks)
            self._put(d, vectors[row : row + n], instant)
            row += n
            report.chunks += n
            (report.added if d.is_new else report.updated).append(d.rel)

    def _put(self, d: _Pending, vectors: np.ndarray[Any, Any], instant: str) -> None:
        fm = d.fm
        metadata_error = None
        if fm is not None and fm.empty_window:
            metadata_error = (
                f"empty validity window: valid_from {fm.valid_from_raw} is after "
                f"valid_until {fm.valid_until_raw}"
            )
        refs = list(fm.supersedes) if fm is not None else []
        self._store.put_document(
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


def _hit(raw: dict[str, Any]) -> Hit:
    return Hit(
        verdict=raw["verdict"],
        confidence=raw["confidence"],
        score=raw["score"],
        title=raw["title"],
        text=raw["text"],
        provenance=Provenance(
            source=Path(raw["source"]).name,
            file=raw["path"],
            chunk=raw["ordinal"],
            lines=(raw["line_start"], raw["line_end"]),
            heading_path=raw["heading_path"],
            indexed_at=raw["indexed_at"],
            first_indexed_at=raw["first_indexed_at"],
        ),
        validity=Validity(
            valid_from=raw["valid_from"],
            valid_until=raw["valid_until"],
            superseded_by=raw["superseded_by"],
        ),
        promoted=raw["promoted"],
        fetched=raw["fetched"],
        retrieval=Retrieval(**raw["retrieval"]) if raw["retrieval"] else None,
    )


def open(path: str | os.PathLike[str], embedder: str | Embedder | None = None) -> Memory:  # noqa: A001
    """Open (creating if missing) the store at `path`.

    `embedder` is a name (`hashing-512`), an `Embedder`, or None for the one the store was built
    with (the default embedder for a new store).
    """
    return Memory(path, embedder)
