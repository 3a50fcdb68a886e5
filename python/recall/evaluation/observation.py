"""One evaluation question observed (SPEC §9): the searches it gets and the row they leave.

Owns: `Row`, the strict-first gate (strict until the store refuses, then development mode for
the rest of the run, with a note saying why), each leg's ordering of the retrieved documents and
the rank of the first relevant one, the verdict the first relevant hit got, the plain and
recency arms' picks, the superseded notes a search showed, the two top cosines, the judge's
search for near misses, and `observe_all` (one row per question, in order). Does not own:
retrieval, verdicts or promotion (the Rust core, through `Memory.search`), the questions
(`questions`) or the figures made from the rows (`measures`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from recall.api import Memory
from recall.calibration import DEFAULT_THRESHOLD
from recall.errors import TrustRefusal
from recall.evaluation.questions import Question
from recall.instants import parse_stored
from recall.results import Hit, Result

__all__ = ["LEGS", "RANK_DEPTH", "Row", "observe_all"]

#: Retrieval orderings measured: each leg alone and the fused list (SPEC §4).
LEGS = ("dense", "lexical", "hybrid")
#: Depth of the development-mode search that reads per-leg ranks (the API's largest k).
RANK_DEPTH = 100


@dataclass(frozen=True)
class Row:
    """What one question got, with everything the measurements are computed from."""

    query: str
    category: str
    answerable: bool
    #: The mode that answered: "strict", or "development" when strict refused.
    mode: str
    abstained: bool
    reason: str
    #: The file of the first `ok` hit of the judged search, None when it abstained.
    first_ok: str | None
    ok_files: tuple[str, ...]
    #: The calibrated threshold the judged search applied.
    threshold: float
    #: 1-based rank of the first relevant note among distinct documents in each ordering
    #: (None: not retrieved, or the question names no relevant note).
    dense_rank: int | None
    lexical_rank: int | None
    hybrid_rank: int | None
    #: The first document of the hybrid ordering, verdicts ignored (the plain arm).
    plain_top: str | None
    #: The newest-touched confident document of the hybrid top k, verdicts ignored (recency arm).
    recency_pick: str | None
    #: Files any search for this question showed to have a terminal successor.
    superseded_seen: tuple[str, ...]
    #: The two highest dense cosines among distinct retrieved documents.
    top_score: float | None
    second_score: float | None
    relevant: tuple[str, ...] = ()
    successor: str | None = None
    stale: str | None = None
    #: The question's optional `kind` (e.g. the kind of near miss).
    kind: str | None = None
    #: The verdict of the judged search's first hit on a relevant note (None: no such hit).
    relevant_verdict: str | None = None
    #: With the judge: whether the judged search abstained (None when not run), its `ok`
    #: files, and the judge's time in milliseconds.
    entailed_abstained: bool | None = None
    entailed_ok_files: tuple[str, ...] = ()
    judge_ms: float | None = None
    #: The cross-fitting fold that scored it (None outside the shipped run).
    fold: int | None = None


class _Gate:
    """Strict first (SPEC §5.6). A refusal depends on the store, never on the query, so once
    strict refuses the rest of the run answers in development mode and the report says why."""

    def __init__(self) -> None:
        self.refusal: TrustRefusal | None = None

    def search(
        self, mem: Memory, query: str, *, k: int, now: dt.datetime, entail: bool = False
    ) -> Result:
        if self.refusal is None:
            try:
                return mem.search(query, k=k, now=now, mode="strict", entail=entail)
            except TrustRefusal as refusal:
                self.refusal = refusal
        return mem.search(query, k=k, now=now, mode="development", entail=entail)

    @property
    def mode(self) -> str:
        return "strict" if self.refusal is None else "development"


def _ordering(hits: Iterable[Hit], leg: str) -> list[Hit]:
    """Distinct retrieved documents in one leg's order. A fetched successor (no retrieval) was
    not retrieved by any leg and is left out."""
    best: dict[str, tuple[tuple[float, ...], Hit]] = {}
    for hit in hits:
        r = hit.retrieval
        if r is None:
            continue
        dense = float(r.dense_rank) if r.dense_rank is not None else math.inf
        lexical = float(r.lexical_rank) if r.lexical_rank is not None else math.inf
        if leg == "dense":
            key: tuple[float, ...] = (dense,)
        elif leg == "lexical":
            key = (lexical,)
        else:
            # SPEC §4: fused score descending, ties keep dense order, then lexical order.
            key = (-r.fused, dense, lexical)
        if math.isinf(key[0]):
            continue
        file = hit.provenance.file
        if file not in best or key < best[file][0]:
            best[file] = (key, hit)
    return [hit for _, hit in sorted(best.values(), key=lambda pair: pair[0])]


def _first_rank(ordering: Sequence[Hit], relevant: Sequence[str]) -> int | None:
    wanted = set(relevant)
    for i, hit in enumerate(ordering, 1):
        if hit.provenance.file in wanted:
            return i
    return None


def _confident(hit: Hit) -> bool:
    """Whether a hit cleared the calibrated threshold on its own evidence, whatever its
    verdict: confidence is exactly 0.5 at the threshold (SPEC §5.1, §7), so for a dense-only
    record this is `score >= threshold`. A promoted successor was below it alone (SPEC §5.3);
    one that took a stale hit's place without promotion was above it, whatever it inherited."""
    if hit.promoted:
        return False
    return hit.promoted_from is not None or hit.confidence >= 0.5


def _touched_at(hit: Hit, touched: Mapping[str, dt.datetime]) -> dt.datetime:
    when = touched.get(hit.provenance.file) or parse_stored(hit.provenance.indexed_at)
    return when or dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def _observe(
    mem: Memory,
    question: Question,
    gate: _Gate,
    *,
    now: dt.datetime,
    touched: Mapping[str, dt.datetime],
    k: int,
    entail: bool,
    fold: int | None,
) -> Row:
    judged = gate.search(mem, question.query, k=k, now=now)
    mode = gate.mode
    threshold = float((judged.calibration or {}).get("threshold", DEFAULT_THRESHOLD))
    ranked = mem.search(question.query, k=RANK_DEPTH, now=now, mode="development")
    orderings = {leg: _ordering(ranked.hits, leg) for leg in LEGS}
    ranks = {leg: _first_rank(orderings[leg], question.relevant) for leg in LEGS}
    # The plain and recency arms read the judged search's own retrieval (its k fused hits at
    # the product's candidate depth, verdicts ignored; a fetched successor was never
    # retrieved). SPEC §9 recency steelman: "newest among the confident hits".
    plain = _ordering(judged.hits, "hybrid")
    confident = [h for h in plain if _confident(h)]
    pick = max(confident, key=lambda h: _touched_at(h, touched), default=None)
    superseded = {
        h.provenance.file
        for h in (*judged.hits, *ranked.hits)
        if h.verdict == "superseded" or h.validity.superseded_by is not None
    }
    scores = sorted((h.score for h in orderings["hybrid"]), reverse=True)
    entailed: bool | None = None
    entailed_ok: tuple[str, ...] = ()
    judge_ms: float | None = None
    if entail:
        # Every question, so the judge is measured stacked on the threshold (SPEC §6): what it
        # takes from the answerable ones as well as what it refuses.
        with_judge = gate.search(mem, question.query, k=k, now=now, entail=True)
        entailed = with_judge.abstained
        entailed_ok = tuple(h.provenance.file for h in with_judge.hits if h.ok)
        if any(h.ok for h in judged.hits):  # the judge read something: its time counts
            judge_ms = with_judge.timings_ms.get("judge")
    ok_files = tuple(h.provenance.file for h in judged.hits if h.ok)
    relevant_verdict = next(
        (h.verdict for h in judged.hits if h.provenance.file in question.relevant), None
    )
    return Row(
        query=question.query,
        category=question.category,
        answerable=question.answerable,
        mode=mode,
        abstained=judged.abstained,
        reason=judged.reason,
        first_ok=ok_files[0] if ok_files else None,
        ok_files=ok_files,
        threshold=threshold,
        dense_rank=ranks["dense"],
        lexical_rank=ranks["lexical"],
        hybrid_rank=ranks["hybrid"],
        plain_top=plain[0].provenance.file if plain else None,
        recency_pick=pick.provenance.file if pick else None,
        superseded_seen=tuple(sorted(superseded)),
        top_score=scores[0] if scores else None,
        second_score=scores[1] if len(scores) > 1 else None,
        relevant=question.relevant,
        successor=question.successor,
        stale=question.stale,
        kind=question.kind,
        relevant_verdict=relevant_verdict,
        entailed_abstained=entailed,
        entailed_ok_files=entailed_ok,
        judge_ms=judge_ms,
        fold=fold,
    )


def observe_all(
    mem: Memory,
    questions: Sequence[Question],
    *,
    now: dt.datetime,
    touched: Mapping[str, dt.datetime],
    k: int,
    entail: bool,
    fold: int | None,
) -> tuple[list[Row], list[str]]:
    notes: list[str] = []
    gate = _Gate()
    rows = [
        _observe(mem, q, gate, now=now, touched=touched, k=k, entail=entail, fold=fold)
        for q in questions
    ]
    if gate.refusal is not None:
        where = f"fold {fold}: " if fold is not None else ""
        notes.append(
            f"{where}strict mode refused ({gate.refusal.code}: {gate.refusal.message}); "
            "those questions were answered in development mode"
        )
    return rows, notes
