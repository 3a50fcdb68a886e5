"""The public Python API: `recall.open` and `Memory`.

Owns: the policy around the store (which embedder and judge, strict or development mode and
its refusals, calibration fitting and loading) and assembling the `Result` a search returns.
Does not own: SQL and the trust rules (the Rust core), the index run (`indexing`), vectors
(`embedders`) or the judge's model (`judge`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall import _core, fitting, priors, selfcal, sources, undeclared
from recall.arguments import (
    embedder_arg,
    flag_arg,
    instant_arg,
    judge_arg,
    k_arg,
    labelled_arg,
    mode_arg,
    path_arg,
    paths_arg,
    refuse,
    text_arg,
)
from recall.backends import Location, locate
from recall.calibration import (
    CERTIFY_MIN_PER_CLASS,
    DEFAULT_SCALE,
    DEFAULT_THRESHOLD,
    RECORD_PREFIX,
    Calibration,
    CalibrationEntry,
    Fit,
    load_labelled,
    load_record,
    meta_key,
)
from recall.calibration import stored as records
from recall.call_log import CallLog
from recall.embedders import (
    ACCEPTED_NAMES,
    Embedder,
    get_embedder,
    is_embedder_name,
    query_vector,
)
from recall.errors import (
    JudgeError,
    RecallError,
    StoreDamagedError,
    StoreError,
    TrustRefusal,
    UsageError,
)
from recall.instants import format_instant, format_micros, micros, utc
from recall.refusals import (
    Refusal,
    calibration_refusal,
    check_lineage,
    judge_unavailable,
    not_ready,
    trust_of,
)
from recall.results import Context, Result, assemble, hit_of, ok_first
from recall.selfcal import Probe
from recall.store import Store

# SPEC §10 (cold search): indexing (numpy, chunking, frontmatter, a thread pool) and the judge
# (numpy, the ONNX loaders) are imported where they are used, so a search does not pay for them.
if TYPE_CHECKING:
    from recall.authoring.lint import LintReport
    from recall.doctor import DoctorReport
    from recall.forgetting import ForgetReport, Forgotten
    from recall.indexing import IndexReport, Progress, Skipped
    from recall.judge import EntailmentJudge
    from recall.lineage import Note

__all__ = ["IndexReport", "Memory", "Skipped", "StoreStats", "open"]

_DEFERRED = {"IndexReport": "recall.indexing", "Skipped": "recall.indexing"}


def __getattr__(name: str) -> Any:
    """`recall.api.IndexReport` and `recall.api.Skipped`, imported on first use."""
    module = _DEFERRED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


CANDIDATES = 20
#: The documents a search judges by default (`search`'s k).
SEARCH_K = 5


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
    #: SPEC §8.4: the vocabularies in force (none|frontmatter|all), and per vocabulary
    #: (name, edges in force, edges overridden by frontmatter).
    vocabularies: str = "all"
    edges_by_vocabulary: list[tuple[str, int, int]] = field(default_factory=list)
    #: Documents with a terminal state in force (withdrawn, rejected, deprecated, superseded).
    retired: int = 0
    #: Documents forgotten and not brought back.
    forgotten: int = 0
    #: SPEC §2.5: partial statements ("partly superseded by X", never a full edge) and
    #: statements recall could not classify (shown on hits as `validity.unread`).
    partial: int = 0
    unread: int = 0
    #: (root, documents) for the roots documents were indexed from that no longer exist here.
    missing_roots: list[tuple[str, int]] = field(default_factory=list)
    #: The calibration in use for the store's embedder (id, source `labelled` or `self`,
    #: threshold, certified, stale), or None with `calibration_note` saying why.
    calibration: dict[str, Any] | None = None
    calibration_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Memory:
    """One store file. Use as a context manager or call `close()`.

    Arguments are checked before the file is opened or created: a wrong type or value raises
    `UsageError` naming the parameter (see `open`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        embedder: str | Embedder | None = None,
        judge: str | os.PathLike[str] | EntailmentJudge | None = None,
        *,
        read_only: bool = False,
        namespace: str | None = None,
        log: str | os.PathLike[str] | None = None,
    ):
        path = path_arg("open", "path", path)
        #: Where each search is logged with what it answered (`recall.call_log`), or None.
        self._log = None if log is None else CallLog(path_arg("open", "log", log))
        embedder = embedder_arg(embedder)
        judge = judge_arg(judge)
        self.path = path
        self._read_only = flag_arg("open", "read_only", read_only)
        # SPEC §11: an existing file is opened (and refused here when it is not a recall
        # store); a missing one is created by the first index run, never by a read.
        self._empty: _core.Store | None = None
        self._closed = False
        #: Where the memory lives: the one place a backend is chosen (recall.backends).
        self._location = locate(path, namespace)
        self._handle: Store | None = self._location.open(read_only=self._read_only)
        if self._handle is not None:
            self.path = self._handle.path
        elif self._location.file is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise StoreError(
                    f"recall store: cannot create {path}: folder {folder} does not exist"
                )
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self._judge_spec = judge
        self._judge: EntailmentJudge | None = None
        self._calibration_memo: (
            tuple[tuple[str, str | None], tuple[Calibration | None, str]] | None
        ) = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        for store in (self._handle, self._empty):
            if store is not None:
                store.close()

    @property
    def _store(self) -> Store:
        """The store; while its file does not exist, an empty one in memory answers reads."""
        if self._closed:
            raise StoreError(f"recall store: {self.path} is closed")
        if self._handle is None:
            self._handle = self._location.open(read_only=self._read_only)
        if self._handle is not None:
            return self._handle
        if self._empty is None:
            self._empty = _core.Store(":memory:")
        return self._empty

    def _writable_store(self) -> tuple[Store, bool]:
        """The store for a write, creating its file when missing; and whether it was."""
        if self._handle is None and not self._closed and not self._location.exists():
            self._handle = self._location.open(create=True)
            assert self._handle is not None
            return self._handle, True
        return self._store, False

    @property
    def exists(self) -> bool:
        """Whether a memory is there yet: reads never create one (SPEC §11)."""
        return self._handle is not None or self._location.exists()

    @property
    def location(self) -> Location:
        """Where the memory lives (a file, or a PostgreSQL namespace)."""
        return self._location

    def _discard_created(self) -> None:
        """Remove a store file this handle created and nothing was kept in (a failed first run
        leaves no empty .db behind)."""
        if self._handle is None or self._location.file is None:
            return
        self._handle.close()
        self._handle = None
        for suffix in ("", "-wal", "-shm", "-committed"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._location.file + suffix)

    @property
    def read_only(self) -> str | None:
        """Why the store is open read-only (asked for, or its file cannot be written), else
        None. A read-only store answers search, stats and explain; writes are refused."""
        return self._store.read_only

    def doctor(self) -> DoctorReport:
        """Check the store file (SPEC §11): SQLite's integrity, the schema, the vectors and the
        lexical index against the chunk rows, the calibration records. Reads only."""
        from recall.doctor import diagnose

        return diagnose(self._store, self.path)

    def lineage(self, *, now: dt.datetime | None = None) -> list[Note]:
        """Every stored note with what it declares, how each declaration resolves, the chain
        it ends in and where the trust layer stands on it at `now` with no question asked
        (SPEC §2.4, §5.2), and whether its file is still the one indexed: what `recall report`
        draws. Reads only."""
        from recall.lineage import read

        now = instant_arg("lineage", "now", now)
        return read(self._store, now=utc(now) if now is not None else _now())

    def __repr__(self) -> str:
        return f"Memory({self.path!r})"

    @property
    def embedder(self) -> Embedder:
        """The embedder in use: the one asked for, else the one the store was built with."""
        if self._embedder is None:
            spec = self._embedder_spec
            bound = self._store.embedder() if spec is None or isinstance(spec, str) else None
            if spec is None and bound:
                spec = bound[0]
                if not is_embedder_name(spec):
                    raise StoreDamagedError(
                        f"recall store: the store records its embedder as {spec!r}, which names "
                        f"none (a store records {ACCEPTED_NAMES}): {self.path} is damaged; run "
                        f"'recall doctor --db {self.path}' to see what is wrong and how to recover"
                    )
            # The store's fingerprint says how a built-in model made its vectors.
            same = bound is not None and isinstance(spec, str) and spec.strip() == bound[0]
            self._embedder = get_embedder(spec, bound[2] if same and bound else None)
        return self._embedder

    @property
    def judge(self) -> EntailmentJudge:
        """The entailment judge: the one passed to `open`, else $RECALL_JUDGE, else the judge
        shipped with recall (SPEC §6). Raises `JudgeError` when its model will not load."""
        if self._judge is None:
            from recall.judge import get_judge

            self._judge = get_judge(self._judge_spec)
        return self._judge

    def stats(self) -> StoreStats:
        raw = self._store.stats()
        embedder = raw.pop("embedder")
        name, dim, fingerprint = embedder if embedder else (None, None, None)
        from recall.walk import missing_roots

        record, why = self.calibration(embedder) if embedder else (None, "nothing indexed yet")
        return StoreStats(
            calibration=records.summary(record, raw["chunk_churn"]) if record else None,
            calibration_note=why,
            path=self.path,
            embedder=name,
            embedder_dim=dim,
            embedder_fingerprint=fingerprint,
            missing_roots=missing_roots(self._store),
            **raw,
        )

    def calibration(
        self, bound: tuple[str, int, str] | None = None
    ) -> tuple[Calibration | None, str]:
        """The calibration a search applies for the store's embedder, or (None, why there is
        none): the store's record in use, or the prior shipped for a built-in embedder while
        the store is too small or too new to calibrate itself (SPEC §7, `recall.priors`)."""
        bound = bound or self._store.embedder()
        if bound is None:
            return None, "nothing indexed yet"
        return priors.in_force(*self._stored(bound), bound[2])

    def _stored(self, bound: tuple[str, int, str]) -> tuple[Calibration | None, str]:
        """The store's own record in use for `bound`'s embedder (never the prior)."""
        return self._parsed(bound[2], self._store.meta(meta_key(bound[2])))

    def _parsed(self, fingerprint: str, raw: str | None) -> tuple[Calibration | None, str]:
        """The stored record `raw` of `fingerprint`'s embedder, checked and parsed."""
        # Parsed once per stored record: a search reads it every time.
        key = (fingerprint, raw)
        if self._calibration_memo is None or self._calibration_memo[0] != key:
            self._calibration_memo = (key, load_record(raw, fingerprint))
        return self._calibration_memo[1]

    def _adopt(
        self,
        bound: tuple[str, int, str],
        calibration: Calibration,
        *,
        history: str,
        now: dt.datetime | None,
        replace: bool,
    ) -> None:
        records.adopt(
            self._store,
            bound,
            calibration,
            self._stored(bound)[0],
            source=history,
            now=now,
            replace=replace,
        )

    def calibrate(
        self,
        labelled: str | os.PathLike[str] | Sequence[tuple[str, bool]] | Sequence[dict[str, Any]],
        *,
        now: dt.datetime | None = None,
        replace: bool = False,
    ) -> tuple[Calibration, Fit]:
        """Fit a calibration from labelled queries (SPEC §7): a JSONL/JSON file, or
        (query, answerable) pairs / {"query", "answerable", "relevant"?} objects.

        The new record is always saved to the store's calibration history (the last
        `HISTORY_LIMIT` per embedder, `calibration_history()`), certified or not
        (`Fit.certified` says why). It is put in use unless it is not certified while the
        record in use is: a worse labelled file never silently replaces a certified
        calibration. `replace=True` puts it in use anyway. `calibration()` returns the record
        in use.
        """
        now = instant_arg("calibrate", "now", now)
        replace = flag_arg("calibrate", "replace", replace)
        if isinstance(labelled, (str, os.PathLike)):
            items = load_labelled(path_arg("calibrate", "labelled", labelled))
        elif isinstance(labelled, (bytes, Mapping)) or not isinstance(labelled, Iterable):
            refuse(
                "calibrate",
                "labelled",
                "a labelled-queries file (JSONL or JSON) or a sequence of (query, answerable) "
                "pairs or {'query', 'answerable'} objects",
                labelled,
            )
        else:
            items = [labelled_arg(i, item) for i, item in enumerate(labelled)]
        if not items:
            raise UsageError("recall calibrate: no labelled queries given (labelled is empty)")
        bound, embedder = self._fit_target()
        with fitting.lean(self._store):
            calibration, result = fitting.fit_labelled(
                self._store, embedder, items, self.stats, now, CANDIDATES
            )
        self._adopt(bound, calibration, history="fit", now=now, replace=replace)
        return calibration, result

    def calibrate_self(
        self, *, now: dt.datetime | None = None, replace: bool = False
    ) -> tuple[Calibration, Fit]:
        """Fit a calibration from questions recall makes from the store alone (SPEC §7,
        `recall.selfcal`): no labelled questions needed. Fitted and certified by the same rules
        as a labelled calibration and recorded with `source: self`. It is put in use unless the
        record in use was fitted from a user's labelled questions or imported (those always take
        precedence) or is certified while this one is not; `replace=True` puts it in use anyway.
        """
        now = instant_arg("calibrate", "now", now)
        replace = flag_arg("calibrate", "replace", replace)
        target = self._fit_target()
        with fitting.lean(self._store):
            return self._calibrate_self(
                target, selfcal.probes(self._store), now=now, replace=replace
            )

    def _fit_target(self) -> tuple[tuple[str, int, str], Embedder]:
        """The store's embedder binding and the embedder to fit with; UsageError when nothing
        is indexed or the open embedder is not the store's."""
        bound = self._store.embedder()
        # The documents' count the store keeps (freshness), not `stats`, which reads them all.
        if bound is None or self._store.freshness()[0] == 0:
            raise UsageError("recall calibrate: nothing is indexed; run 'recall index PATH' first")
        embedder = self.embedder
        if embedder.fingerprint != bound[2]:
            raise UsageError(
                f"recall calibrate: the store was built with {bound[0]}, not {embedder.name}"
            )
        return bound, embedder

    def _calibrate_self(
        self,
        target: tuple[tuple[str, int, str], Embedder],
        probes: list[Probe],
        *,
        now: dt.datetime | None,
        replace: bool,
    ) -> tuple[Calibration, Fit]:
        bound, embedder = target
        calibration, result = fitting.fit_self(
            self._store, embedder, probes, self.stats, now, CANDIDATES
        )
        self._adopt(bound, calibration, history="self", now=now, replace=replace)
        return calibration, result

    def calibration_history(self) -> list[CalibrationEntry]:
        """The calibration records kept for the store's embedder, newest first, the one in use
        marked (`CalibrationEntry.in_use`); empty before anything is indexed."""
        bound = self._store.embedder()
        if bound is None:
            return []
        return records.history(self._store, bound, self._stored(bound)[0])[::-1]

    def use_calibration(self, number: int) -> Calibration:
        """Put the history's entry `number` (`calibration_history()`, `recall calibrate
        --list`) in use again, whether it is certified or not; returns its record."""
        if isinstance(number, bool) or not isinstance(number, int):
            refuse("calibrate", "number", "an int from 'recall calibrate --list'", number)
        bound = self._store.embedder()
        if bound is None:
            raise UsageError("recall calibrate: nothing is indexed; run 'recall index PATH' first")
        return records.use(self._store, bound, number, self._stored(bound)[0])

    def export_calibration(self) -> dict[str, Any]:
        """The stored calibration record for this store's embedder, as JSON-ready data."""
        calibration, why = self.calibration()
        if calibration is None:
            raise UsageError(
                f"recall calibrate: nothing to export: {why}; fit one first ('recall calibrate "
                "QUERIES' on labelled questions, or --auto from the notes)"
            )
        return calibration.to_dict()

    def import_calibration(self, record: str | os.PathLike[str] | dict[str, Any]) -> Calibration:
        """Store a calibration record (a dict, JSON text or a JSON file) for this store's
        embedder and put it in use, certified or not (an import is an explicit choice); it is
        added to the calibration history. A record that would not be applied is refused with
        the reason."""
        if isinstance(record, Mapping):
            record = dict(record)
        elif not isinstance(record, (str, os.PathLike)):
            refuse(
                "calibrate",
                "record",
                "a calibration record (a dict, JSON text or a JSON file path)",
                record,
            )
        bound = self._store.embedder()
        if bound is None:
            raise UsageError("recall calibrate: index documents before importing a calibration")
        calibration = records.record_given(record, bound[2])
        records.save(
            self._store,
            bound,
            calibration,
            self._stored(bound)[0],
            source="import",
            saved_at=format_instant(utc(None)),
            in_use=True,
        )
        return calibration

    def search(
        self,
        query: str,
        k: int = SEARCH_K,
        *,
        now: dt.datetime | None = None,
        known_as_of: dt.datetime | None = None,
        mode: str | None = None,
        entail: bool = False,
    ) -> Result:
        """Answer `query` with a judgment (SPEC §5). Only `ok` hits may be acted on.

        Strict mode (the default) raises `TrustRefusal` when trust cannot be established;
        development mode (`mode="development"` or RECALL_TRUST_MODE) answers degraded.
        `entail=True` runs the judge over the `ok` hits (SPEC §6); a judge that is not
        configured or will not load is a `DEPENDENCY_UNAVAILABLE` refusal in strict mode.
        A memory opened with `log` appends the call and what it answered to that file.
        """
        if self._log is None:
            return self._search(query, k, now, known_as_of, mode, entail)
        asked = {"query": query, "k": k, "now": now, "known_as_of": known_as_of, "mode": mode}
        asked = {key: str(v) if isinstance(v, dt.datetime) else v for key, v in asked.items()}
        try:
            result = self._search(query, k, now, known_as_of, mode, entail)
        except RecallError as err:
            code = err.code if isinstance(err, TrustRefusal) else type(err).__name__
            self._log.append("search", asked, {"error": {"code": code, "message": str(err)}}, True)
            raise
        self._log.append("search", asked, result.to_dict(), failed=False)
        return result

    def _search(
        self,
        query: str,
        k: int,
        now: dt.datetime | None,
        known_as_of: dt.datetime | None,
        mode: str | None,
        entail: bool,
    ) -> Result:
        started = time.perf_counter()
        query = text_arg("search", "query", query)
        k = k_arg("search", k)
        now = instant_arg("search", "now", now)
        known_as_of = instant_arg("search", "known_as_of", known_as_of)
        entail = flag_arg("search", "entail", entail)
        chosen = mode_arg(mode)
        instant = utc(now)
        known = utc(known_as_of) if known_as_of is not None else None
        # The cheap summary, not stats(): its edge and vector counts scan whole tables.
        freshness, bound, record = self._store.search_state(RECORD_PREFIX, query)
        documents, newest_indexed_at, last_run_at, churn = freshness
        refusal = not_ready(documents, bound)
        if refusal is not None and (chosen == "strict" or bound is None):
            raise TrustRefusal(*refusal)
        assert bound is not None
        embedder = self.embedder
        check_lineage(self.path, bound, embedder)
        calibration, why = priors.in_force(*self._parsed(bound[2], record), bound[2])
        refusal = refusal or calibration_refusal(calibration, why, churn)
        judge, unavailable = self._judge_if(entail)
        refusal = refusal or unavailable
        if refusal is not None and chosen == "strict":
            raise TrustRefusal(*refusal)
        policy = _policy(calibration, instant, known)
        vector, embed_ms = _timed_vector(embedder, query)
        raw = self._store.search(
            vector, text=query, k=k, candidates=max(CANDIDATES, k), policy=policy
        )
        # A note edited or deleted since it was indexed is never served as it was.
        found = sources.states(raw["hits"])
        hits = ok_first([hit_of(h, state) for h, state in zip(raw["hits"], found)])
        t_judge = time.perf_counter()
        if judge is not None:
            from recall.judge import apply_judge

            hits, _ = apply_judge(judge, query, hits)
        updates = undeclared.pairs(hits)
        hits = undeclared.mark(hits, updates)
        context = Context(
            query=query,
            now=instant,
            known_as_of=known,
            threshold=policy.threshold,
            calibration=records.summary(calibration, churn) if calibration else None,
            refreshed=(newest_indexed_at, last_run_at),
            degraded=refusal is not None,
            mode=chosen,
            started=started,
            embed_ms=embed_ms,
            judge_ms=(time.perf_counter() - t_judge) * 1e3 if judge is not None else 0.0,
        )
        return assemble(raw, hits, context, [p.warning for p in updates])

    def _judge_if(self, entail: bool) -> tuple[EntailmentJudge | None, Refusal | None]:
        """The judge when entailment is asked for, or the refusal saying why it cannot run."""
        if not entail:
            return None, None
        try:
            return self.judge, None
        except JudgeError as err:
            return None, judge_unavailable(err)

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
        query = text_arg("explain", "query", query)
        file = path_arg("explain", "file", file)
        now = instant_arg("explain", "now", now)
        known_as_of = instant_arg("explain", "known_as_of", known_as_of)
        if self._store.embedder() is None:
            raise UsageError("recall explain: nothing is indexed; run 'recall index PATH' first")
        instant = utc(now)
        known = utc(known_as_of) if known_as_of is not None else None
        calibration, why = self.calibration()
        policy = _policy(calibration, instant, known)
        embedder = self.embedder
        vector = query_vector(embedder, query)
        name = os.fspath(file)
        # A stored path first, then the file's absolute path under an indexed root.
        names = [name, str(Path(name).resolve())] if Path(name).exists() else [name]
        raw = None
        for candidate in names:
            raw = raw or self._store.explain(candidate, vector, text=query, policy=policy)
        if raw is None:
            raise UsageError(
                f"recall explain: {name} is not an indexed document; pass its path as shown by "
                "'recall search' or a path under an indexed folder"
            )
        for claim in (*raw["claims_out"], *raw["claims_in"]):
            recorded = claim.pop("recorded_at_us")
            claim["recorded_at"] = format_micros(recorded)
        raw["first_indexed_at"] = format_micros(raw.pop("first_indexed_us"))
        best = raw.pop("best_chunk")
        raw["best_chunk"] = None if best is None else {"chunk_id": best[0], "score": best[1]}
        # SPEC §6: what a search does with it beside the documents it is judged with (a retired
        # best match turns its on-topic neighbours not_entailed); None: not among them.
        searched = self._store.search(
            vector, text=query, k=SEARCH_K, candidates=CANDIDATES, policy=policy
        )
        mine = next((h for h in searched["hits"] if h["path"] == raw["path"]), None)
        raw["in_search"] = (
            None
            if mine is None
            else {
                "k": SEARCH_K,
                "verdict": mine["verdict"],
                "displaced_by": mine["displaced_by"],
                "lacks": mine["lacks"],
            }
        )
        raw.update(
            query=query,
            now=format_instant(instant),
            known_as_of=format_instant(known) if known is not None else None,
            threshold=policy.threshold,
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
        vocabularies: str | None = None,
        calibrate: bool = True,
    ) -> IndexReport:
        """Index files and folders incrementally in one transaction (SPEC §3).

        Unchanged files (same content hash) are not re-embedded, changed files are replaced,
        files gone from a folder are removed. A file that cannot be accepted is refused with a
        reason and the run goes on; its previously indexed version, if any, is kept.
        `progress(files_done, files_total, chunks_embedded)` is called after each file and
        while the run waits for the embedder; a callable that takes a fourth argument also gets
        the chunks read so far.
        `vocabularies` (`none`, `frontmatter`, `all`) sets which declarations are in force for
        this store from now on (SPEC §8.4); None keeps the store's setting.
        The vectors a run computes are journaled beside the store file (`<path>-embeddings`,
        deleted when the run commits), so the run after an interrupted or crashed one embeds
        only what that one did not; a PostgreSQL run is not resumable yet. A note with the same
        content and title as a stored one (a copy) takes its vectors instead of being embedded.
        With `calibrate` (the default), a run after which the store's embedder has no
        calibration in use, or only a self-made one that churn has made stale, ends with
        `calibrate_self()` (SPEC §7): `IndexReport.calibrated` says what it fitted.
        """
        paths = paths_arg(paths)
        now = instant_arg("index", "now", now)
        allow_prune = flag_arg("index", "allow_prune", allow_prune)
        if progress is not None and not callable(progress):
            refuse(
                "index",
                "progress",
                "a callable (files_done, files_total, chunks) or None",
                progress,
            )
        from recall.indexing import run_index

        embedder = self.embedder  # a model that will not load fails before a file is made
        store, created = self._writable_store()
        # SPEC §2.4: transaction time from a shared server's clock, unless an instant is given.
        store.use_server_clock(now is None)
        try:
            report = run_index(
                store,
                embedder,
                paths,
                instant=format_instant(utc(now)),
                allow_prune=allow_prune,
                progress=progress,
                vocabularies=vocabularies,
                journal=self._location.journal(),
            )
        except BaseException:
            if created:
                self._discard_created()
            raise
        if created and not report.added:
            # Every file was refused, or there was none: a first run that keeps nothing leaves
            # no empty store behind.
            self._discard_created()
            return report
        if flag_arg("index", "calibrate", calibrate):
            report.calibrated = self.calibrate_if_due(now=now)
        report.trust = self.trust()
        return report

    def trust(self) -> dict[str, Any]:
        """What trust the store has now (SPEC §7): `state` (`labelled`, `self`, `prior`,
        `missing`, `uncertified`, `stale`, or `empty` before anything is indexed), whether a
        strict search answers, the calibration in force (as `stats` shows it), and one line
        saying so with the next step (what `recall index` prints last)."""
        bound = self._store.embedder()
        documents, _, _, churn = self._store.freshness()
        if bound is None or documents == 0:
            line = "strict search refuses (INDEX_NOT_READY): nothing is indexed"
            return {"state": "empty", "answers": False, "calibration": None, "line": line}
        calibration, why = self.calibration(bound)
        shown = records.summary(calibration, churn) if calibration is not None else None
        return {**trust_of(calibration, why, churn), "calibration": shown}

    def calibrate_if_due(self, *, now: dt.datetime | None = None) -> dict[str, Any] | None:
        """Run `calibrate_self()` when the store's embedder has no calibration in use, or only
        a self-made one that churn has made stale (SPEC §7); None when none was due, else what
        was fitted: id, threshold, certified and why, whether it is in use, seconds."""
        bound = self._store.embedder()
        current = self._stored(bound)[0] if bound is not None else None
        if current is None:
            due = bound is not None and self._store.freshness()[0] > 0
        else:
            # A self-made fit refits when churn made it stale, or when it was too short of
            # questions to certify and the notes have grown since.
            due = current.source == "self" and (
                current.is_stale(self._store.freshness()[3]) or priors.short_of_questions(current)
            )
        if not due:
            return None
        began = time.perf_counter()
        with fitting.lean(self._store):
            probes = selfcal.probes(self._store)
            if sum(p.answerable for p in probes) < CERTIFY_MIN_PER_CLASS:
                # Too few notes to certify a boundary from them: search says what to do instead.
                return None
            record, _ = self._calibrate_self(self._fit_target(), probes, now=now, replace=False)
        return {
            "id": record.id,
            "threshold": record.threshold,
            "certified": record.certified,
            "certified_reason": record.certified_reason,
            "in_use": self.calibration()[0] == record,
            "seconds": round(time.perf_counter() - began, 3),
        }

    def lint(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        *,
        vocabularies: str | None = None,
    ) -> LintReport:
        """Check the notes' declarations as written (SPEC §8.4; no embedding): `paths`, or
        every corpus root this store has indexed. `vocabularies` defaults to the store's
        setting."""
        from recall.authoring.lint import lint

        if paths is None:
            stored = self.exists
            roots = sorted(
                {source for source, _, _ in self._store.document_list()} if stored else ()
            )
            if not roots:
                raise UsageError("recall lint: the store has no corpus yet; pass the paths")
            paths = [r for r in roots if os.path.isdir(r)]
        elif isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if vocabularies is None:
            vocabularies = self.stats().vocabularies if self.exists else "all"
        return lint(list(paths), vocabularies=vocabularies)

    def forget(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = (),
        *,
        older_than: dt.datetime | None = None,
        apply: bool = False,
        now: dt.datetime | None = None,
    ) -> ForgetReport:
        """Remove documents from the store, never their files (SPEC §8.4): those `paths` name
        (files or folders on disk, or stored paths) and those first indexed before
        `older_than`. A dry run unless `apply`; later index runs skip forgotten files until
        `undo_forget`. Edges other notes declare toward them dangle (and revive on undo)."""
        from recall.forgetting import forget

        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        given = [os.fspath(p) for p in paths]
        if not given and older_than is None:
            raise UsageError("recall forget: name the files or folders to forget, or older_than")
        older = instant_arg("forget", "older_than", older_than) if older_than else None
        apply = flag_arg("forget", "apply", apply)
        when = instant_arg("forget", "now", now)
        return forget(self._store, given, older_than=older, apply=apply, now=when or _now())

    def forgotten(self) -> list[Forgotten]:
        """The forget journal: every forgotten document, and when it was brought back."""
        from recall.forgetting import forgotten

        return forgotten(self._store)

    def undo_forget(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = (),
        *,
        now: dt.datetime | None = None,
    ) -> list[Forgotten]:
        """Bring forgotten documents back (all of them when `paths` is empty): the next index
        run indexes their files again, keeping their first indexing time (SPEC §2.4)."""
        from recall.forgetting import undo

        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        when = instant_arg("forget", "now", now)
        return undo(self._store, [os.fspath(p) for p in paths], now=when or _now())


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _policy(
    calibration: Calibration | None, now: dt.datetime, known_as_of: dt.datetime | None
) -> _core.Policy:
    """What the core judges with at `now` (and `known_as_of`): the calibration's boundary and
    feature weights, or without one the uncalibrated defaults, every hit `unverified`."""
    now_us = micros(now)
    known_us = micros(known_as_of) if known_as_of is not None else None
    if calibration is None:
        return _core.Policy(
            now_us=now_us,
            known_as_of_us=known_us,
            threshold=DEFAULT_THRESHOLD,
            scale=DEFAULT_SCALE,
            unverified=True,
        )
    return _core.Policy(
        now_us=now_us,
        known_as_of_us=known_us,
        threshold=calibration.threshold,
        scale=calibration.scale,
        lexical_weight=calibration.lexical_weight,
        identifier_weight=calibration.identifier_weight,
    )


def open(  # noqa: A001
    path: str | os.PathLike[str],
    embedder: str | Embedder | None = None,
    judge: str | os.PathLike[str] | EntailmentJudge | None = None,
    *,
    read_only: bool = False,
    namespace: str | None = None,
    log: str | os.PathLike[str] | None = None,
) -> Memory:
    """Open the store at `path`; a missing file becomes a store at the first `index` run.

    `path` may also be a PostgreSQL URL (`postgresql://user@host/db`; libpq's `PG*`
    environment variables fill in what it leaves out): the memory then lives in the schema
    `namespace` (default `recall`, or the URL's `namespace=` parameter) with pgvector and
    full-text search, judged by the same trust layer. See README, "Moving to PostgreSQL".

    A file that is not a recall store is refused (`StoreError`) and left untouched. A store
    whose file cannot be written, or opened with `read_only=True`, answers search, stats and
    explain and refuses writes.

    `embedder` is a name (`minilm-l6`, `onnx:DIR`, `hashing-512`), an `Embedder`, or None for
    the one the store was built with ($RECALL_EMBEDDER, else `minilm-l6`, for a new store).
    `judge` is an exported cross-encoder directory (or a judge object) used by
    `search(..., entail=True)`; None = $RECALL_JUDGE, else recall's own judge.

    A wrong argument here or to a `Memory` method raises `UsageError` naming the parameter and
    what it accepts, at the call; an embedder name that names no embedder (`'bert'`) is refused
    before the store file is created.

    `log` is a file each search is appended to, one JSON line with its hits, verdicts and
    calibration (`recall log FILE` shows it); off by default.
    """
    return Memory(path, embedder, judge, read_only=read_only, namespace=namespace, log=log)


def _timed_vector(embedder: Embedder, text: str) -> tuple[bytes, float]:
    """The query's vector and the milliseconds embedding it took."""
    started = time.perf_counter()
    vector = query_vector(embedder, text)
    return vector, (time.perf_counter() - started) * 1e3
