"""The §9 measurements: a question set's rows made into an `EvalReport`.

Owns: the categories and judgment metrics measured, with the labels the tables print
(`CATEGORIES`, `METRICS`), `EvalReport` and its JSON form, the measurements (retrieval per leg,
false confidence and false abstention, superseded trust under three policies, successor and
identifier accuracy, near misses with and without the judge and per kind of near miss, their
answerable twins (near answers), retired notes, superseded and retired decision records in the
wording real teams use, the relative-gap signal beside the absolute threshold), each with its
95 % interval and its n, the calibration record a report names, whether the judge loads, and
`evaluate_store` (a store as it is). Does not own: the intervals (`estimates`), the searches a
question gets (`observation`), the shipped set and cross-fitting (`shipped`) or how a report
reads (`formats`).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from recall.api import Memory
from recall.errors import JudgeError, UsageError
from recall.evaluation.estimates import Estimate, auc_estimate, mean, rate
from recall.evaluation.observation import LEGS, Row, observe_all
from recall.evaluation.questions import Question, load_questions, touched_map
from recall.instants import format_instant, utc

__all__ = [
    "CATEGORIES",
    "METRICS",
    "RECALL_AT",
    "EvalReport",
    "build_report",
    "calibration_summary",
    "evaluate_store",
    "judge_note",
]

#: Categories with their own measurements; a user's set may use others (counted, not measured).
CATEGORIES = (
    "paraphrase",
    "far_gap",
    "near_topic",
    "supersession",
    "identifier",
    "near_miss",
    "near_answer",
    "expired",
    "not_yet_valid",
    "real_wording",
)
#: recall@5, whatever k the judged search runs at.
RECALL_AT = 5

#: Judgment metrics in report order, with the label the tables print.
METRICS: dict[str, str] = {
    "far_gap_false_confidence": "far-gap false confidence",
    "near_topic_false_confidence": "near-topic false confidence",
    "false_abstain": "false abstain (answerable)",
    "superseded_trust_plain": "superseded trust: plain",
    "superseded_trust_recency": "superseded trust: recency",
    "superseded_trust_declared": "superseded trust: declared",
    "successor_accuracy": "successor accuracy",
    "identifier_accuracy": "identifier lookup accuracy",
    "identifier_wrong": "identifier lookup answered ok from another note",
    "near_miss_false_confidence": "near-miss false confidence",
    "near_miss_false_confidence_entailed": "near-miss false confidence, judged",
    "near_answer_false_abstain": "near-answer false abstain",
    "near_answer_false_abstain_entailed": "near-answer false abstain, judged",
    "false_abstain_entailed": "false abstain (answerable), judged",
    "far_gap_false_confidence_entailed": "far-gap false confidence, judged",
    "near_topic_false_confidence_entailed": "near-topic false confidence, judged",
    "expired_false_confidence": "expired: false confidence",
    "not_yet_valid_false_confidence": "not yet valid: false confidence",
    "real_wording_superseded_trust": "real wording: superseded trust",
    "real_wording_successor_accuracy": "real wording: successor accuracy",
    "real_wording_retired_ok": "real wording: retired note served ok",
    "real_wording_retired_false_confidence": "real wording: retired, false confidence",
}


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
    #: Near-miss false confidence per `kind` of near miss (questions without one: "other").
    near_miss_by_kind: dict[str, Estimate] = field(default_factory=dict)
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


def calibration_summary(mem: Memory, fold: int | None = None) -> dict[str, Any]:
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

    def misses_its_note(r: Row) -> bool:
        return r.abstained or r.relevant_verdict != "ok"

    def trusts_superseded(r: Row) -> bool:
        return any(f in superseded for f in r.ok_files)

    def serves_successor(r: Row) -> bool:
        return r.first_ok == r.successor

    def with_successor(selected: Sequence[Row]) -> list[Row]:
        return [r for r in selected if r.successor]

    def judged(selected: Sequence[Row]) -> list[Row]:
        return [r for r in selected if r.entailed_abstained is not None]

    supersession = of("supersession")
    near = of("near_miss")
    judged_near = judged(near)
    # Real wording: the answerable questions name a superseded note and its terminal successor,
    # the unanswerable ones a retired note (rejected, deprecated, withdrawn, …) that must not
    # be served as an answer.
    real = of("real_wording")
    real_superseded = [r for r in real if r.answerable]
    real_retired = [r for r in real if not r.answerable]
    metrics = {
        "far_gap_false_confidence": share(of("far_gap"), answered),
        # In the corpus's own domain, and no note answers: the gap an agent meets most.
        "near_topic_false_confidence": share(of("near_topic"), answered),
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
        # The near misses' answerable twins: an abstention, or a relevant note not served `ok`.
        "near_answer_false_abstain": share(of("near_answer"), misses_its_note),
        # The same, with the judge stacked on the threshold (only where it ran).
        "near_answer_false_abstain_entailed": share(
            judged(of("near_answer")),
            lambda r: bool(r.entailed_abstained) or not set(r.relevant) & set(r.entailed_ok_files),
        ),
        "false_abstain_entailed": share(
            judged([r for r in rows if r.answerable]), lambda r: bool(r.entailed_abstained)
        ),
        "far_gap_false_confidence_entailed": share(
            judged(of("far_gap")), lambda r: not r.entailed_abstained
        ),
        "near_topic_false_confidence_entailed": share(
            judged(of("near_topic")), lambda r: not r.entailed_abstained
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
        "top1_auc": auc_estimate(
            [r.top_score or 0.0 for r in pos], [r.top_score or 0.0 for r in neg]
        ),
        "relative_gap_auc": auc_estimate([gap(r) for r in pos], [gap(r) for r in neg]),
    }
    return retrieval, metrics, separation


def _near_miss_by_kind(rows: Sequence[Row]) -> dict[str, Estimate]:
    """Near-miss false confidence for each kind of near miss, kinds in name order."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.category == "near_miss":
            groups.setdefault(r.kind or "other", []).append(r)
    return {
        kind: rate(sum(1 for r in group if not r.abstained), len(group))
        for kind, group in sorted(groups.items())
    }


def build_report(
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
    spent = sorted(r.judge_ms for r in rows if r.judge_ms is not None)
    if spent:
        p50, p95 = spent[len(spent) // 2], spent[min(len(spent) - 1, int(0.95 * len(spent)))]
        notes = [
            *notes,
            f"judge: p50 {p50:.1f} ms, p95 {p95:.1f} ms a search, over the {len(spent)} searches "
            "with an ok hit to judge",
        ]
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
        near_miss_by_kind=_near_miss_by_kind(rows),
        notes=notes,
        rows=list(rows),
        seconds=time.perf_counter() - started,
        cross_fitted=cross_fitted,
        calibration_source=calibration_source,
    )


def judge_note(mem: Memory, entail: bool) -> tuple[bool, list[str]]:
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
    judging, notes = judge_note(mem, entail)
    rows, refused = observe_all(
        mem, questions, now=instant, touched=touched_map(touched), k=k, entail=judging, fold=None
    )
    return build_report(
        mem.embedder.name,
        questions,
        rows,
        now=instant,
        k=k,
        calibrations=[calibration_summary(mem)],
        notes=notes + refused,
        started=started,
        cross_fitted=False,
    )
