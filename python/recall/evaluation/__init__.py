"""The evaluation harness behind `recall eval` (SPEC §9).

Owns: reading evaluation question files, running them against an indexed and calibrated store,
the §9 measurements (retrieval per leg, false confidence and false abstention, superseded trust
under three policies, successor and identifier accuracy, near misses with and without the
judge, retired notes, superseded and retired decision records in the wording real teams use,
the relative-gap signal beside the absolute threshold), each with its 95 % interval and its n,
the two-fold cross-fitted run over the shipped evaluation set, and the report's JSON, terminal
and markdown forms. Does not own: retrieval, verdicts or promotion (the Rust core, through
`Memory.search`), fitting a calibration (`calibration`), the shipped corpus (`evalset/`), or
the command line (`cli`).

Every figure is measured through the public `Memory.search`, the way a user would meet it: a
strict search answers (development mode only when strict refuses, and the report says so), and
a second, development-mode search at k = 100 reads each leg's ranks.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from recall.api import Memory
from recall.calibration import DEFAULT_THRESHOLD, auc, hanley_mcneil, labelled_item
from recall.errors import JudgeError, TrustRefusal, UsageError
from recall.instants import format_instant, parse_stored, parse_when, utc
from recall.results import Hit, Result

__all__ = [
    "CATEGORIES",
    "EVALSET_DIR",
    "LEGS",
    "METRICS",
    "EvalReport",
    "Estimate",
    "Question",
    "Row",
    "evaluate_shipped",
    "evaluate_store",
    "format_markdown",
    "format_table",
    "load_questions",
    "mean",
    "rate",
    "wilson",
]

#: The shipped evaluation set: notes/, questions.jsonl, meta.json.
EVALSET_DIR = Path(__file__).resolve().parent / "evalset"

#: Categories with their own measurements; a user's set may use others (counted, not measured).
#: The categories a shipped-set calibration is fitted on (evalset/README.md).
FIT_CATEGORIES = ("paraphrase", "identifier", "supersession", "far_gap")
CATEGORIES = (
    "paraphrase",
    "far_gap",
    "supersession",
    "identifier",
    "near_miss",
    "expired",
    "not_yet_valid",
    "real_wording",
)
#: Retrieval orderings measured: each leg alone and the fused list (SPEC §4).
LEGS = ("dense", "lexical", "hybrid")
#: recall@5, whatever k the judged search runs at.
RECALL_AT = 5
#: Depth of the development-mode search that reads per-leg ranks (the API's largest k).
RANK_DEPTH = 100
#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054
#: The shipped set is indexed this long before its evaluation instant (fresh, not stale: §5.4).
INDEXED_BEFORE = dt.timedelta(days=1)

#: Judgment metrics in report order, with the label the tables print.
METRICS: dict[str, str] = {
    "far_gap_false_confidence": "far-gap false confidence",
    "false_abstain": "false abstain (answerable)",
    "superseded_trust_plain": "superseded trust: plain",
    "superseded_trust_recency": "superseded trust: recency",
    "superseded_trust_declared": "superseded trust: declared",
    "successor_accuracy": "successor accuracy",
    "identifier_accuracy": "identifier lookup accuracy",
    "identifier_wrong": "identifier lookup answered ok from another note",
    "near_miss_false_confidence": "near-miss false confidence",
    "near_miss_false_confidence_entailed": "near-miss false confidence, judged",
    "expired_false_confidence": "expired: false confidence",
    "not_yet_valid_false_confidence": "not yet valid: false confidence",
    "real_wording_superseded_trust": "real wording: superseded trust",
    "real_wording_successor_accuracy": "real wording: successor accuracy",
    "real_wording_retired_ok": "real wording: retired note served ok",
    "real_wording_retired_false_confidence": "real wording: retired, false confidence",
}
_RETRIEVAL_LABELS = {"mrr": "MRR", "recall@5": "recall@5"}
_SEPARATION_LABELS = {
    "top1_auc": "AUC, top-1 cosine",
    "relative_gap_auc": "AUC, top-1 minus top-2",
}


# --- questions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One labelled evaluation question. Paths are relative to the notes root."""

    query: str
    answerable: bool
    category: str
    relevant: tuple[str, ...] = ()
    #: The expected verdict of the first hit about the relevant note, or "abstain".
    expect: str | None = None
    #: Supersession questions: the declared terminal successor and the stale note matched best.
    successor: str | None = None
    stale: str | None = None
    #: Where the question came from (line in its file; 0 when built in code).
    line: int = 0


def _note_path(value: str) -> str:
    path = value.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _question(item: object, where: str, line: int) -> Question:
    query, answerable, relevant = labelled_item(item, where)
    assert isinstance(item, dict)  # checked by labelled_item
    category = item.get("category", "other")
    if not isinstance(category, str) or not category.strip():
        raise UsageError(f"{where}: 'category' must be a non-empty string")
    optional: dict[str, str | None] = {}
    for key in ("expect", "successor", "stale"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{where}: '{key}' must be a non-empty string when given")
        optional[key] = value
    successor, stale = optional["successor"], optional["stale"]
    return Question(
        query=query,
        answerable=answerable,
        category=category.strip(),
        relevant=tuple(_note_path(p) for p in relevant),
        expect=optional["expect"],
        successor=_note_path(successor) if successor else None,
        stale=_note_path(stale) if stale else None,
        line=line,
    )


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Read an evaluation set: JSON Lines, one question object a line (blank lines and lines
    starting with '#' are skipped; keys other than the documented ones are ignored). Errors
    name the file and the line."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise UsageError(f"recall eval: cannot read {source}: {why}") from err
    questions = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"recall eval: {source} line {n}"
        try:
            item = json.loads(line)
        except ValueError as err:
            raise UsageError(f"{where} is not valid JSON: {err}") from err
        questions.append(_question(item, where, n))
    if not questions:
        raise UsageError(f"recall eval: {source} holds no questions")
    return questions


# --- estimates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A measured rate or mean over `n` questions, with its 95 % interval.

    `value`, `low` and `high` are None when nothing was measured (n = 0). `count` is the number
    of successes for a rate, None for a mean or an AUC. `method` names the interval: `wilson`
    (rates), `normal` (means: ±1.96 standard errors, clipped to [0, 1]; none below 2 samples)
    or `hanley-mcneil` (AUC).
    """

    value: float | None
    n: int
    low: float | None
    high: float | None
    count: int | None
    method: str


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `successes` out of `n` (n > 0)."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson: need 0 <= successes <= n and n > 0, got {successes}/{n}")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0 or n the interval touches the end exactly (rounding would leave it a hair inside).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def rate(successes: int, n: int) -> Estimate:
    """`successes / n` with its Wilson interval."""
    if n == 0:
        return Estimate(None, 0, None, None, 0, "wilson")
    low, high = wilson(successes, n)
    return Estimate(successes / n, n, low, high, successes, "wilson")


def mean(values: Sequence[float]) -> Estimate:
    """The mean of values in [0, 1] (reciprocal ranks) with a normal-approximation interval."""
    n = len(values)
    if n == 0:
        return Estimate(None, 0, None, None, None, "normal")
    centre = sum(values) / n
    if n < 2:
        return Estimate(centre, n, None, None, None, "normal")
    sd = math.sqrt(sum((v - centre) ** 2 for v in values) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return Estimate(centre, n, max(0.0, centre - half), min(1.0, centre + half), None, "normal")


def _auc(positive: Sequence[float], negative: Sequence[float]) -> Estimate:
    area = auc(positive, negative)
    n = len(positive) + len(negative)
    if area is None:
        return Estimate(None, n, None, None, None, "hanley-mcneil")
    low, high = hanley_mcneil(area, len(positive), len(negative))
    return Estimate(area, n, low, high, None, "hanley-mcneil")


# --- one question ------------------------------------------------------------------------------


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
    #: With the judge: whether the judged search abstained (None when not run).
    entailed_abstained: bool | None = None
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
    if entail and question.category == "near_miss":
        entailed = gate.search(mem, question.query, k=k, now=now, entail=True).abstained
    ok_files = tuple(h.provenance.file for h in judged.hits if h.ok)
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
        entailed_abstained=entailed,
        fold=fold,
    )


def _run(
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


# --- the report ------------------------------------------------------------------------------


@dataclass
class EvalReport:
    """The measurements of one embedder on one question set (SPEC §9)."""

    embedder: str
    now: str
    k: int
    questions: int
    categories: dict[str, int]
    #: Questions answered per mode ("strict", "development").
    modes: dict[str, int]
    #: The calibration record(s) the judged searches used (one per fold when cross-fitted).
    calibrations: list[dict[str, Any]]
    #: leg ("dense", "lexical", "hybrid") -> {"mrr", "recall@5"}.
    retrieval: dict[str, dict[str, Estimate]]
    #: METRICS keys -> estimate.
    metrics: dict[str, Estimate]
    #: SPEC §9 relative-gap signal beside the absolute one: how well each separates answerable
    #: from unanswerable questions.
    separation: dict[str, Estimate]
    notes: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    cross_fitted: bool = False
    #: Which calibration judged the questions: `labelled` (fitted on the set's own questions,
    #: cross-fitted) or `self` (made by recall from the notes alone, `recall.selfcal`).
    calibration_source: str = "labelled"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(asdict(self))
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _calibration_summary(mem: Memory, fold: int | None = None) -> dict[str, Any]:
    """The record the judged searches read (SPEC §7), or why there is none."""
    record, why = mem.calibration()
    if record is None:
        return {"fold": fold, "id": None, "threshold": None, "certified": None, "why": why}
    return {"fold": fold, **record.to_dict()}


def _measure(
    rows: Sequence[Row], stale_labels: Iterable[str]
) -> tuple[dict[str, dict[str, Estimate]], dict[str, Estimate], dict[str, Estimate]]:
    # A note is superseded when any search showed its terminal successor (SPEC §5.1
    # `superseded_by`, declared whatever the verdict) or the set labels it stale.
    superseded = {f for row in rows for f in row.superseded_seen} | set(stale_labels)

    ranked = [r for r in rows if r.answerable and r.relevant]
    retrieval: dict[str, dict[str, Estimate]] = {}
    for leg in LEGS:
        ranks = [getattr(r, f"{leg}_rank") for r in ranked]
        retrieval[leg] = {
            "mrr": mean([1.0 / rank if rank else 0.0 for rank in ranks]),
            "recall@5": rate(sum(1 for rank in ranks if rank and rank <= RECALL_AT), len(ranks)),
        }

    def of(category: str) -> list[Row]:
        return [r for r in rows if r.category == category]

    def share(selected: Sequence[Row], test: Callable[[Row], bool]) -> Estimate:
        return rate(sum(1 for r in selected if test(r)), len(selected))

    def answered(r: Row) -> bool:
        return not r.abstained

    def trusts_superseded(r: Row) -> bool:
        return any(f in superseded for f in r.ok_files)

    def serves_successor(r: Row) -> bool:
        return r.first_ok == r.successor

    def with_successor(selected: Sequence[Row]) -> list[Row]:
        return [r for r in selected if r.successor]

    supersession = of("supersession")
    near = of("near_miss")
    judged_near = [r for r in near if r.entailed_abstained is not None]
    # Real wording: the answerable questions name a superseded note and its terminal successor,
    # the unanswerable ones a retired note (rejected, deprecated, withdrawn, …) that must not
    # be served as an answer.
    real = of("real_wording")
    real_superseded = [r for r in real if r.answerable]
    real_retired = [r for r in real if not r.answerable]
    metrics = {
        "far_gap_false_confidence": share(of("far_gap"), answered),
        "false_abstain": share([r for r in rows if r.answerable], lambda r: r.abstained),
        "superseded_trust_plain": share(supersession, lambda r: r.plain_top in superseded),
        "superseded_trust_recency": share(supersession, lambda r: r.recency_pick in superseded),
        "superseded_trust_declared": share(supersession, trusts_superseded),
        "successor_accuracy": share(with_successor(supersession), serves_successor),
        "identifier_accuracy": share(
            [r for r in of("identifier") if r.relevant], lambda r: r.first_ok in r.relevant
        ),
        "identifier_wrong": share(
            [r for r in of("identifier") if r.relevant],
            lambda r: any(f not in r.relevant for f in r.ok_files),
        ),
        "near_miss_false_confidence": share(near, answered),
        "near_miss_false_confidence_entailed": share(
            judged_near, lambda r: not r.entailed_abstained
        ),
        "expired_false_confidence": share(of("expired"), answered),
        "not_yet_valid_false_confidence": share(of("not_yet_valid"), answered),
        "real_wording_superseded_trust": share(real_superseded, trusts_superseded),
        "real_wording_successor_accuracy": share(with_successor(real_superseded), serves_successor),
        "real_wording_retired_ok": share(
            real_retired, lambda r: any(f in r.relevant for f in r.ok_files)
        ),
        "real_wording_retired_false_confidence": share(real_retired, answered),
    }

    def scored(answerable: bool) -> list[Row]:
        return [r for r in rows if r.answerable is answerable and r.top_score is not None]

    pos, neg = scored(True), scored(False)

    def gap(r: Row) -> float:
        top = r.top_score or 0.0
        return top - (r.second_score if r.second_score is not None else 0.0)

    separation = {
        "top1_auc": _auc([r.top_score or 0.0 for r in pos], [r.top_score or 0.0 for r in neg]),
        "relative_gap_auc": _auc([gap(r) for r in pos], [gap(r) for r in neg]),
    }
    return retrieval, metrics, separation


def _report(
    embedder: str,
    questions: Sequence[Question],
    rows: Sequence[Row],
    *,
    now: dt.datetime,
    k: int,
    calibrations: list[dict[str, Any]],
    notes: list[str],
    started: float,
    cross_fitted: bool,
    calibration_source: str = "labelled",
) -> EvalReport:
    retrieval, metrics, separation = _measure(rows, (q.stale for q in questions if q.stale))
    unknown = sorted({q.category for q in questions} - set(CATEGORIES))
    if unknown:
        notes = [*notes, f"categories without their own measurement: {', '.join(unknown)}"]
    return EvalReport(
        embedder=embedder,
        now=format_instant(now),
        k=k,
        questions=len(questions),
        categories=dict(Counter(q.category for q in questions)),
        modes=dict(Counter(r.mode for r in rows)),
        calibrations=calibrations,
        retrieval=retrieval,
        metrics=metrics,
        separation=separation,
        notes=notes,
        rows=list(rows),
        seconds=time.perf_counter() - started,
        cross_fitted=cross_fitted,
        calibration_source=calibration_source,
    )


def _instant(value: dt.datetime | dt.date | str, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return utc(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, str):
        try:
            return parse_when(value)
        except ValueError:
            pass
    raise UsageError(f"recall eval: {where}: {value!r} is not an ISO date or time")


def _touched_map(
    touched: Mapping[str, dt.datetime | dt.date | str] | None,
) -> dict[str, dt.datetime]:
    return {
        _note_path(path): _instant(when, f"touched time of {path}")
        for path, when in (touched or {}).items()
    }


def _judge_note(mem: Memory, entail: bool) -> tuple[bool, list[str]]:
    if not entail:
        return False, []
    try:
        mem.judge  # noqa: B018 - loads the judge or says why it cannot
    except JudgeError as err:
        return False, [f"near misses were not judged: {err}"]
    return True, []


def evaluate_store(
    mem: Memory,
    questions: str | os.PathLike[str] | Sequence[Question],
    *,
    now: dt.datetime | None = None,
    touched: Mapping[str, dt.datetime | dt.date | str] | None = None,
    k: int = 5,
    entail: bool = False,
) -> EvalReport:
    """Run `questions` (a JSONL file, evalset/README.md, or loaded questions) against an indexed
    and calibrated store at `now` (default: the present) (SPEC §9).

    Each question gets a strict search at `k` (development mode, noted in the report, when
    strict refuses) and a development-mode search at k = 100 for the per-leg ranks.
    `touched` maps note paths to their last-touched times for the recency arm; a note without
    one counts from its `indexed_at`. `entail=True` also measures near misses with the judge
    (noted and skipped when no judge loads).
    """
    from recall.arguments import flag_arg, instant_arg, k_arg

    now = instant_arg("eval", "now", now)
    k = k_arg("eval", k)
    entail = flag_arg("eval", "entail", entail)
    if isinstance(questions, (str, os.PathLike)):
        questions = load_questions(questions)
    if not questions:
        raise UsageError("recall eval: no questions to evaluate")
    started = time.perf_counter()
    instant = utc(now)
    judging, notes = _judge_note(mem, entail)
    rows, refused = _run(
        mem, questions, now=instant, touched=_touched_map(touched), k=k, entail=judging, fold=None
    )
    return _report(
        mem.embedder.name,
        questions,
        rows,
        now=instant,
        k=k,
        calibrations=[_calibration_summary(mem)],
        notes=notes + refused,
        started=started,
        cross_fitted=False,
    )


# --- the shipped set ---------------------------------------------------------------------------


def _load_meta(path: Path) -> tuple[dt.datetime, dict[str, dt.datetime], dt.datetime]:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"recall eval: cannot read {path}: {err}") from err
    if not isinstance(meta, dict) or "now" not in meta:
        raise UsageError(f"recall eval: {path} needs an object with 'now'")
    now = _instant(meta["now"], f"{path} 'now'")
    touched = meta.get("touched") or {}
    if not isinstance(touched, dict):
        raise UsageError(f"recall eval: {path}: 'touched' must map note paths to times")
    indexed = meta.get("indexed_at")
    indexed_at = _instant(indexed, f"{path} 'indexed_at'") if indexed else now - INDEXED_BEFORE
    return now, _touched_map(touched), indexed_at


def _fresh_store(folder: Path, embedder: str) -> Path:
    path = folder / f"recall-eval-{re.sub(r'[^A-Za-z0-9_.-]+', '_', embedder)}.db"
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    return path


def _cross_fitted(
    mem: Memory,
    questions: Sequence[Question],
    *,
    now: dt.datetime,
    touched: Mapping[str, dt.datetime],
    fitted_at: dt.datetime,
    k: int,
    entail: bool,
    fit_categories: Collection[str] | None,
) -> tuple[list[Row], list[dict[str, Any]], list[str]]:
    """Two folds: calibrate on the questions at even positions (0, 2, 4, … in file order) and
    score the odd ones, then the reverse, so no question is judged by a boundary fitted on
    itself (SPEC §7 leave-out, applied to §9). `fit_categories` limits which questions of a
    fold are fitted on (None: all); every question is scored."""
    if len(questions) < 2:
        raise UsageError("recall eval: cross-fitting needs at least two questions")
    positions = (range(0, len(questions), 2), range(1, len(questions), 2))
    scored: dict[int, Row] = {}
    calibrations: list[dict[str, Any]] = []
    notes: list[str] = []
    for fold, (fit_on, score_on) in enumerate((positions, positions[::-1]), 1):
        # SPEC §7 labelled queries: `relevant` names the files that answer, so only an
        # answerable question passes its notes on (an unanswerable one names the note it is
        # about, which by its label does not answer it).
        labelled = [
            {
                "query": questions[i].query,
                "answerable": questions[i].answerable,
                "relevant": list(questions[i].relevant) if questions[i].answerable else [],
            }
            for i in fit_on
            if fit_categories is None or questions[i].category in fit_categories
        ]
        if not labelled:
            raise UsageError(
                f"recall eval: fold {fold} has no question to calibrate on in the categories "
                f"{', '.join(sorted(fit_categories or ()))}"
            )
        # Each fold is scored by its own fit, certified or not.
        mem.calibrate(labelled, now=fitted_at, replace=True)
        calibrations.append(_calibration_summary(mem, fold))
        rows, refused = _run(
            mem,
            [questions[i] for i in score_on],
            now=now,
            touched=touched,
            k=k,
            entail=entail,
            fold=fold,
        )
        scored.update(zip(score_on, rows))
        notes.extend(refused)
    return [scored[i] for i in range(len(questions))], calibrations, notes


def evaluate_shipped(
    embedders: Sequence[str] = ("hashing-512", "minilm-l6"),
    workdir: str | os.PathLike[str] | None = None,
    *,
    evalset: str | os.PathLike[str] | None = None,
    k: int = 5,
    entail: bool = False,
    fit_categories: Collection[str] | None = FIT_CATEGORIES,
    calibrations: Sequence[str] = ("labelled",),
) -> list[EvalReport]:
    """Evaluate each embedder on the shipped evaluation set (or another folder laid out the
    same way: notes/, questions.jsonl, meta.json).

    Per embedder: index the notes into a fresh store at a fixed time before meta.json's `now`
    (its `indexed_at`, else one day before), calibrate with two-fold cross-fitting, and
    evaluate at `now` with its `touched` times. Stores go to a temporary folder, or to
    `workdir` as `recall-eval-<embedder>.db` (replaced on each run) to inspect afterwards.
    With `entail=True` near misses are also judged by the configured judge ($RECALL_JUDGE).
    `calibrations` names which calibrations judge the questions, one report each: `labelled`
    (cross-fitted on the set's questions, below) and `self` (made by recall from the notes
    alone, `Memory.calibrate_self`; no question of the set is fitted on).
    `fit_categories` fits the calibrations on those categories only (None: all); by default
    the near misses and retired notes are left out, as the set's README says: their note is on
    topic by design, and telling them apart is the work of the judge and of the validity
    windows, not of the relevance threshold. Every question is still scored.
    """
    root = Path(evalset) if evalset is not None else EVALSET_DIR
    notes_dir, questions_file, meta_file = (
        root / "notes",
        root / "questions.jsonl",
        root / "meta.json",
    )
    for needed in (notes_dir, questions_file, meta_file):
        if not needed.exists():
            raise UsageError(f"recall eval: the evaluation file {needed} is missing")
    questions = load_questions(questions_file)
    now, touched, indexed_at = _load_meta(meta_file)
    if not embedders:
        raise UsageError("recall eval: name at least one embedder")
    reports = []
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as scratch:
        folder = Path(workdir) if workdir is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for name in embedders:
            started = time.perf_counter()
            with Memory(_fresh_store(folder, name), embedder=name) as mem:
                indexed = mem.index(notes_dir, now=indexed_at, calibrate=False)
                notes = [f"refused {s.path}: {s.reason}" for s in indexed.refused]
                # A label naming no indexed note would silently count as "not retrieved".
                known = {_note_path(p) for p in (*indexed.added, *indexed.updated)}
                named = {
                    p
                    for q in questions
                    for p in (*q.relevant, q.successor or "", q.stale or "")
                    if p and p not in known
                }
                if named:
                    notes.append(
                        "questions name notes that were not indexed: " + ", ".join(sorted(named))
                    )
                judging, judge_notes = _judge_note(mem, entail)
                for source in calibrations:
                    if source not in ("labelled", "self"):
                        raise UsageError(
                            f"recall eval: unknown calibration {source!r}; choose labelled or self"
                        )
                    if source == "self":
                        # Made from the notes alone: no question of the set is fitted on.
                        mem.calibrate_self(now=indexed_at, replace=True)
                        rows, refused = _run(
                            mem, questions, now=now, touched=touched, k=k, entail=judging, fold=None
                        )
                        fitted, how = [_calibration_summary(mem)], ["calibrated by recall itself"]
                    else:
                        rows, fitted, refused = _cross_fitted(
                            mem,
                            questions,
                            now=now,
                            touched=touched,
                            fitted_at=indexed_at,
                            k=k,
                            entail=judging,
                            fit_categories=fit_categories,
                        )
                        how = (
                            ["calibrated on the categories " + ", ".join(sorted(fit_categories))]
                            if fit_categories is not None
                            else []
                        )
                    reports.append(
                        _report(
                            mem.embedder.name,
                            questions,
                            rows,
                            now=now,
                            k=k,
                            calibrations=fitted,
                            notes=notes + how + judge_notes + refused,
                            started=started,
                            cross_fitted=source != "self",
                            calibration_source=source,
                        )
                    )
    return reports


# --- formatting --------------------------------------------------------------------------------


def _lines(reports: Sequence[EvalReport]) -> list[tuple[str, list[Estimate]]]:
    """(label, one estimate per report) in report order."""
    out: list[tuple[str, list[Estimate]]] = []
    for leg in LEGS:
        for key, label in _RETRIEVAL_LABELS.items():
            out.append((f"{leg} {label}", [r.retrieval[leg][key] for r in reports]))
    for key, label in METRICS.items():
        out.append((label, [r.metrics[key] for r in reports]))
    for key, label in _SEPARATION_LABELS.items():
        out.append((label, [r.separation[key] for r in reports]))
    return out


def _threshold(report: EvalReport) -> str:
    values = [c["threshold"] for c in report.calibrations if c.get("threshold") is not None]
    certified = [c.get("certified") for c in report.calibrations]
    text = " / ".join(f"{v:.3f}" for v in values) or "none"
    state = "certified" if certified and all(c is True for c in certified) else "not certified"
    return f"{text} ({state})"


def _source(report: EvalReport) -> str:
    if report.calibration_source == "self":
        return "made by recall from the notes"
    return "cross-fitted on labels" if report.cross_fitted else "the store's"


def _modes(report: EvalReport) -> str:
    return ", ".join(f"{mode} {n}" for mode, n in sorted(report.modes.items()))


def _column(report: EvalReport) -> str:
    """A report's column: its embedder, and which calibration judged it."""
    return f"{report.embedder} ({report.calibration_source})"


def _header(reports: Sequence[EvalReport]) -> list[tuple[str, list[str]]]:
    return [
        ("calibration", [_source(r) for r in reports]),
        ("questions", [str(r.questions) for r in reports]),
        ("threshold", [_threshold(r) for r in reports]),
        ("answered in", [_modes(r) for r in reports]),
        ("seconds", [f"{r.seconds:.1f}" for r in reports]),
    ]


def _cell(e: Estimate, interval_sep: str = ", ") -> str:
    if e.value is None:
        return "n/a"
    head = f"{e.count}/{e.n} = {e.value:.2f}" if e.count is not None else f"{e.value:.3f}"
    if e.low is None or e.high is None:
        return f"{head} (n={e.n})" if e.count is None else head
    tail = f"[{e.low:.2f}{interval_sep}{e.high:.2f}]"
    return f"{head} {tail}" + ("" if e.count is not None else f" n={e.n}")


def _notes(reports: Sequence[EvalReport]) -> list[str]:
    return [f"{_column(r)}: {note}" for r in reports for note in r.notes]


def _setup(reports: Sequence[EvalReport]) -> str:
    first = reports[0]
    return f"at {first.now[:10]} (k={first.k})"


def format_table(reports: Sequence[EvalReport]) -> str:
    """Plain text for a terminal: one row per measurement, one column per embedder."""
    if not reports:
        return "recall eval: nothing evaluated"
    table = [("", [_column(r) for r in reports]), *_header(reports)]
    table += [(label, [_cell(e) for e in cells]) for label, cells in _lines(reports)]
    label_width = max(len(label) for label, _ in table)
    widths = [max(len(cells[i]) for _, cells in table) for i in range(len(reports))]
    out = [f"recall eval {_setup(reports)}; 95 % intervals in brackets", ""]
    for label, cells in table:
        row = "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        out.append(f"{label.ljust(label_width)}  {row}".rstrip())
    notes = _notes(reports)
    if notes:
        out += ["", "notes:", *(f"  {n}" for n in notes)]
    return "\n".join(out)


def format_markdown(reports: Sequence[EvalReport]) -> str:
    """A markdown report (`recall eval --report FILE.md`): the table with 95 % intervals, the
    setup and the notes."""
    if not reports:
        return "# recall eval\n\nNothing evaluated.\n"

    def md(text: str) -> str:
        return text.replace("|", "\\|")

    out = [
        "# recall eval",
        "",
        f"Evaluated {md(_setup(reports))}. Rates show successes/n = rate "
        "[Wilson 95 % interval]; MRR shows the mean [normal 95 % interval]; AUCs show "
        "[Hanley–McNeil 95 % interval].",
        "",
        "| measurement | " + " | ".join(md(_column(r)) for r in reports) + " |",
        "| --- | " + " | ".join("---" for _ in reports) + " |",
    ]
    for label, cells in _header(reports):
        out.append(f"| {md(label)} | " + " | ".join(md(c) for c in cells) + " |")
    for label, estimates in _lines(reports):
        out.append(f"| {md(label)} | " + " | ".join(md(_cell(e, "–")) for e in estimates) + " |")
    notes = _notes(reports)
    if notes:
        out += ["", "Notes:", "", *(f"- {md(n)}" for n in notes)]
    return "\n".join(out) + "\n"
