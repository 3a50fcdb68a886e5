"""Fitting a calibration from samples (SPEC §7): the statistics of where the boundary goes.

Owns: threshold placement (a labelled fit's and a self-made one's near-topic rule), the
logistic scale, AUC certification with a Hanley–McNeil interval, leave-one-out error rates, and
the choice of feature weights over the retrieved evidence. Does not own: producing the samples
(`recall.fitting` runs the questions), the record's shape (`record`) or storing it (`stored`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from recall import _core
from recall.calibration.record import DEFAULT_SCALE, DEFAULT_THRESHOLD

#: SPEC §7 certification: both classes this large, AUC 95% lower bound at least this.
CERTIFY_MIN_PER_CLASS = 20
CERTIFY_MIN_AUC_LOWER = 0.90
#: SPEC §7, a self-made fit: the quantile of the near-topic questions' relevance that, with the
#: far unanswerable ceiling, places the threshold (their median; benches/RESULTS.md).
NEAR_QUANTILE = 0.5
#: SPEC §7: feature weights tried by the fit (0 = dense only).
LEXICAL_WEIGHTS = tuple(i / 20 for i in range(21))
IDENTIFIER_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def quantile(xs: Sequence[float], q: float) -> float:
    """SPEC §7: `sorted[min(n-1, floor(q·n))]` (a sample, never an interpolation)."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, math.floor(q * len(ordered)))]


def threshold_for(
    answerable: Sequence[float], unanswerable: Sequence[float], ceiling: float = 0.95
) -> float:
    """Midpoint of the gap between the answerable floor (5th percentile) and the unanswerable
    ceiling (95th percentile), rounded down to 3 decimals; one class: its quantile; none: 0.5.
    Never the lowest answerable sample itself (SPEC §7)."""
    return _threshold(
        quantile(answerable, 0.05) if answerable else None,
        quantile(unanswerable, ceiling) if unanswerable else None,
    )


def _threshold(floor: float | None, ceiling: float | None) -> float:
    """`threshold_for` from the two quantiles (None: that class has no sample)."""
    if floor is not None and ceiling is not None:
        mid = (floor + ceiling) / 2
    elif floor is not None or ceiling is not None:
        mid = floor if floor is not None else ceiling  # type: ignore[assignment]
    else:
        return DEFAULT_THRESHOLD
    # The epsilon keeps values already on a 3-decimal grid (0.3 stored as 0.29999…) in place.
    return math.floor(mid * 1000 + 1e-9) / 1000


def scale_for(answerable: Sequence[float], unanswerable: Sequence[float]) -> float:
    """`max((Q1(answerable) − Q3(unanswerable)) / 4, 0.01)` with ≥ 2 samples per class, else
    0.05 (SPEC §7)."""
    if len(answerable) < 2 or len(unanswerable) < 2:
        return DEFAULT_SCALE
    return max((quantile(answerable, 0.25) - quantile(unanswerable, 0.75)) / 4, 0.01)


def auc(answerable: Sequence[float], unanswerable: Sequence[float]) -> float | None:
    """P(answerable score > unanswerable score), ties counting half; None without both."""
    if not answerable or not unanswerable:
        return None
    wins = 0.0
    for a in answerable:
        for u in unanswerable:
            wins += 1.0 if a > u else 0.5 if a == u else 0.0
    return wins / (len(answerable) * len(unanswerable))


def hanley_mcneil(area: float, n_pos: int, n_neg: int) -> tuple[float, float]:
    """95 % interval of an AUC (Hanley & McNeil 1982), clipped to [0, 1]."""
    q1 = area / (2 - area)
    q2 = 2 * area * area / (1 + area)
    var = (
        area * (1 - area) + (n_pos - 1) * (q1 - area * area) + (n_neg - 1) * (q2 - area * area)
    ) / (n_pos * n_neg)
    se = math.sqrt(max(var, 0.0))
    return max(0.0, area - 1.96 * se), min(1.0, area + 1.96 * se)


@dataclass(frozen=True)
class Fit:
    """The outcome of fitting: the boundary, its certification and its measured error rates."""

    threshold: float
    scale: float
    n_answerable: int
    n_unanswerable: int
    answerable_floor: float | None
    unanswerable_ceiling: float | None
    auc: float | None
    auc_interval: tuple[float, float] | None
    certified: bool
    certified_reason: str
    loo_false_confidence: float | None
    loo_false_abstain: float | None
    samples: list[tuple[str, bool, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["samples"] = [{"query": q, "answerable": a, "score": s} for q, a, s in self.samples]
        return data


def _without_each(xs: list[float], q: float) -> list[float | None]:
    """`quantile(xs without xs[i], q)` for every i (None when nothing is left), in O(n log n):
    removing the sample at sorted position p shifts the samples above it down by one."""
    n = len(xs)
    if n < 2:
        return [None] * n
    order = sorted(range(n), key=lambda i: xs[i])
    ordered = [xs[i] for i in order]
    j = min(n - 2, math.floor(q * (n - 1)))
    out: list[float | None] = [None] * n
    for position, i in enumerate(order):
        out[i] = ordered[j] if j < position else ordered[j + 1]
    return out


def _leave_one_out(
    answerable: list[float], unanswerable: list[float], ceiling_q: float = 0.95
) -> tuple[float | None, ...]:
    """Refit without each sample and judge it: the unanswerable ones at/above their refitted
    threshold are false confidence, the answerable ones below it false abstention."""
    floor = quantile(answerable, 0.05) if answerable else None
    ceiling = quantile(unanswerable, ceiling_q) if unanswerable else None
    false_conf = sum(
        1
        for u, rest in zip(unanswerable, _without_each(unanswerable, ceiling_q))
        if u >= _threshold(floor, rest)
    )
    false_abst = sum(
        1
        for a, rest in zip(answerable, _without_each(answerable, 0.05))
        if a < _threshold(rest, ceiling)
    )
    return (
        false_conf / len(unanswerable) if unanswerable else None,
        false_abst / len(answerable) if answerable else None,
    )


def _near_topic_rule(
    far: list[float], near: list[float], ceiling_q: float
) -> tuple[float, float | None]:
    """SPEC §7, a self-made fit: the threshold midway between the far unanswerable questions'
    ceiling and the near-topic questions' median (`NEAR_QUANTILE`), and the leave-one-out
    false confidence over both (each refitted without it)."""
    ceiling, middle = quantile(far, ceiling_q), quantile(near, NEAR_QUANTILE)
    wrong = sum(
        1 for u, rest in zip(far, _without_each(far, ceiling_q)) if u >= _threshold(middle, rest)
    )
    wrong += sum(
        1
        for u, rest in zip(near, _without_each(near, NEAR_QUANTILE))
        if u >= _threshold(rest, ceiling)
    )
    return _threshold(middle, ceiling), wrong / (len(far) + len(near))


def fit(
    samples: Sequence[tuple[str, bool, float]],
    placing: Sequence[bool] | None = None,
    ceiling: float = 0.95,
    near: Sequence[bool] | None = None,
) -> Fit:
    """Fit a calibration from (query, answerable, top-1 dense cosine) samples (SPEC §7).
    Certification never moves the threshold. `placing` (one flag a sample) names the samples
    that place the threshold (None: all) and `ceiling` the quantile of their unanswerable
    ones that stands for the unanswerable ceiling; every sample counts for the AUC, its
    certification and the scale. `near` (one flag a sample) names near-topic questions made
    from the notes: with any, the threshold sits midway between the placing unanswerable
    questions' ceiling and the near-topic questions' median (`_near_topic_rule`)."""
    answerable = [s for _, a, s in samples if a]
    unanswerable = [s for _, a, s in samples if not a]
    placed = list(samples) if placing is None else [s for s, p in zip(samples, placing) if p]
    placed_answerable = [s for _, a, s in placed if a]
    placed_unanswerable = [s for _, a, s in placed if not a]
    nearby = [] if near is None else [s for (_, a, s), n in zip(samples, near) if n and not a]
    area = auc(answerable, unanswerable)
    interval = hanley_mcneil(area, len(answerable), len(unanswerable)) if area is not None else None
    if min(len(answerable), len(unanswerable)) < CERTIFY_MIN_PER_CLASS:
        certified = False
        reason = (
            f"needs at least {CERTIFY_MIN_PER_CLASS} questions per class, got "
            f"{len(answerable)} answerable and {len(unanswerable)} unanswerable"
        )
    elif interval is None or interval[0] < CERTIFY_MIN_AUC_LOWER:
        certified = False
        low = interval[0] if interval else float("nan")
        reason = (
            f"AUC {area:.3f} has a 95% lower bound of {low:.3f}, below "
            f"{CERTIFY_MIN_AUC_LOWER:.2f}: the embedder does not separate answerable from "
            "unanswerable queries well enough on this corpus"
        )
    else:
        certified = True
        reason = (
            f"AUC {area:.3f} (95% interval {interval[0]:.3f}–{interval[1]:.3f}) on "
            f"{len(answerable)} + {len(unanswerable)} questions"
        )
    if nearby and placed_unanswerable and not placed_answerable:
        threshold, loo_fc = _near_topic_rule(placed_unanswerable, nearby, ceiling)
        loo_fa = None
    else:
        threshold = threshold_for(placed_answerable, placed_unanswerable, ceiling)
        loo_fc, loo_fa = _leave_one_out(placed_answerable, placed_unanswerable, ceiling)
    return Fit(
        threshold=threshold,
        scale=scale_for(answerable, unanswerable),
        n_answerable=len(answerable),
        n_unanswerable=len(unanswerable),
        answerable_floor=quantile(placed_answerable, 0.05) if placed_answerable else None,
        unanswerable_ceiling=(
            quantile(placed_unanswerable, ceiling) if placed_unanswerable else None
        ),
        auc=area,
        auc_interval=interval,
        certified=certified,
        certified_reason=reason,
        loo_false_confidence=loo_fc,
        loo_false_abstain=loo_fa,
        samples=list(samples),
    )


@dataclass(frozen=True)
class Evidence:
    """What one labelled query retrieved (SPEC §7): per hit its dense cosine, lexical share,
    whether it holds the identifiers the query asks for, whether the query asks for any and
    the hit holds them (identifier match), and whether it counts for the sample (a named
    relevant file, or any hit when the query names none). `top_dense` is the top-1 dense
    cosine, used when the query names no relevant file and asks for no identifier."""

    query: str
    answerable: bool
    hits: tuple[tuple[float, float, bool, bool, bool], ...]
    top_dense: float | None = None

    def sample(self, lexical_weight: float, identifier_weight: float = 0.0) -> float:
        """The query's relevance sample: the best relevance among the hits that count and hold
        the asked identifiers (0.0 when none), which is the top-1 dense cosine of SPEC §7 for a
        dense-only fit of a plain query."""
        values = [
            _core.relevance(score, lexical, match, lexical_weight, identifier_weight)
            for score, lexical, held, match, counts in self.hits
            if held and counts
        ]
        if self.top_dense is not None:
            values.append(self.top_dense)
        return max(values, default=0.0)


def fit_evidence(
    evidence: Sequence[Evidence],
    placing: Sequence[bool] | None = None,
    *,
    lexical_weights: Sequence[float] = LEXICAL_WEIGHTS,
    ceiling: float = 0.95,
    near: Sequence[bool] | None = None,
) -> tuple[Fit, tuple[float, float]]:
    """SPEC §7: choose the feature weights whose relevance samples separate answerable from
    unanswerable queries best: the highest AUC, then the fewest leave-one-out errors (false
    confidence plus false abstention) at the fitted threshold, then the smaller weights (so a
    fit that gains nothing from the lexical leg stays dense-only). Threshold, scale and
    certification are those of the chosen samples. Returns the fit and (lexical weight,
    identifier weight)."""
    best: tuple[tuple[float, float, float], Fit, tuple[float, float]] | None = None
    for lexical in lexical_weights:
        for ident in IDENTIFIER_WEIGHTS:
            result = fit(
                [(e.query, e.answerable, e.sample(lexical, ident)) for e in evidence],
                placing,
                ceiling,
                near,
            )
            errors = (result.loo_false_confidence or 0.0) + (result.loo_false_abstain or 0.0)
            area = result.auc if result.auc is not None else -1.0
            key = (area, -errors, -(lexical + ident))
            if best is None or key > best[0]:
                best = (key, result, (lexical, ident))
    assert best is not None, "the weight grids are never empty"
    return best[1], best[2]


def fit_labelled_evidence(
    labelled: Sequence[Evidence], made: Sequence[Evidence]
) -> tuple[Fit, tuple[float, float]]:
    """SPEC §7: a labelled fit with the questions recall made beside it (identifier lookups).
    The labelled questions choose the lexical weight and place the threshold exactly as they
    would alone; the made ones may only add evidence: they count for the AUC and its
    certification and may raise the identifier weight, never move the labelled questions'
    boundary. A lookup's low dense cosine is lifted by its identifier evidence, not by pulling
    the boundary under every off-topic question. The weight lifts the labelled questions
    naming an identifier too: unanswerable ones among them would raise the boundary, answerable
    ones lower it. So a weight is taken only where the labelled questions alone place the same
    threshold with it and every one of them keeps its decision."""
    alone, (lexical, identifier) = fit_evidence(labelled)
    if not made:
        return alone, (lexical, identifier)
    both = [*labelled, *made]
    placing = [True] * len(labelled) + [False] * len(made)
    best: tuple[tuple[float, float, float], Fit, tuple[float, float]] | None = None
    asked = [e for e in made if e.answerable]
    decided = [e.sample(lexical, identifier) >= alone.threshold for e in labelled]

    def keeps_labelled(ident: float) -> bool:
        samples = [e.sample(lexical, ident) for e in labelled]
        own = fit([(e.query, e.answerable, s) for e, s in zip(labelled, samples)])
        return own.threshold == alone.threshold and [s >= own.threshold for s in samples] == decided

    for ident in (w for w in IDENTIFIER_WEIGHTS if w >= identifier and keeps_labelled(w)):
        result = fit([(e.query, e.answerable, e.sample(lexical, ident)) for e in both], placing)
        errors = (result.loo_false_confidence or 0.0) + (result.loo_false_abstain or 0.0)
        # The lookups the labelled boundary would refuse count as errors too.
        missed = sum(e.sample(lexical, ident) < result.threshold for e in asked)
        errors += missed / max(len(asked), 1)
        key = (result.auc if result.auc is not None else -1.0, -errors, -ident)
        if best is None or key > best[0]:
            best = (key, result, (lexical, ident))
    assert best is not None, "the labelled identifier weight is on the grid"
    return best[1], best[2]
