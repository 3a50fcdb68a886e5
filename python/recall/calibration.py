"""Calibration records: where the abstention boundary sits for one embedder (SPEC §7).

Owns: fitting from labelled samples (threshold placement, logistic scale, AUC certification
with a Hanley–McNeil interval, leave-one-out error rates), the record's shape, defensive
loading (a record that is unreadable, for another embedder, non-finite, with a threshold outside
[-1, 1] or a scale <= 0 is never applied), staleness, reading labelled query files, and the
uncalibrated development defaults, and the shape of a store's calibration history (the last
`HISTORY_LIMIT` records per embedder, which one is in use). Does not own: producing the samples
(api.py runs the queries), storing (the store's metadata table) or applying it (the Rust trust
layer).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from recall import _core
from recall.errors import UsageError

__all__ = [
    "CERTIFY_MIN_PER_CLASS",
    "CERTIFY_MIN_AUC_LOWER",
    "DEFAULT_SCALE",
    "DEFAULT_THRESHOLD",
    "HISTORY_LIMIT",
    "STALE_FRACTION",
    "Calibration",
    "CalibrationEntry",
    "Evidence",
    "Fit",
    "auc",
    "dump_history",
    "fit",
    "fit_evidence",
    "fit_labelled_evidence",
    "hanley_mcneil",
    "history_key",
    "labelled_item",
    "load_labelled",
    "load_queries",
    "load_history",
    "load_record",
    "meta_key",
    "with_entry",
    "plot",
    "quantile",
    "threshold_for",
    "scale_for",
]

#: SPEC §5.6: the uncalibrated default used in development mode.
DEFAULT_THRESHOLD = 0.5
DEFAULT_SCALE = 0.05
#: SPEC §7 certification: both classes this large, AUC 95% lower bound at least this.
CERTIFY_MIN_PER_CLASS = 20
CERTIFY_MIN_AUC_LOWER = 0.90
#: SPEC §7: stale once more than this fraction of the fitted chunk count has churned.
STALE_FRACTION = 0.25
#: SPEC §7, a self-made fit: the quantile of the near-topic questions' relevance that, with the
#: far unanswerable ceiling, places the threshold (their median; benches/RESULTS.md).
NEAR_QUANTILE = 0.5
#: SPEC §7: feature weights tried by the fit (0 = dense only); the largest a record may hold.
LEXICAL_WEIGHTS = tuple(i / 20 for i in range(21))
IDENTIFIER_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
MAX_FEATURE_WEIGHT = 4.0
#: Records kept per embedder fingerprint, the one in use included (it is never dropped).
HISTORY_LIMIT = 10


@dataclass(frozen=True)
class Calibration:
    """A fitted (or imported) boundary for one embedder."""

    id: str
    embedder: str
    fingerprint: str
    threshold: float
    scale: float
    certified: bool | None
    generation: int | None = None
    chunk_count: int | None = None
    churn: int | None = None
    fitted_at: str | None = None
    auc: float | None = None
    auc_lower: float | None = None
    n_answerable: int | None = None
    n_unanswerable: int | None = None
    certified_reason: str | None = None
    #: SPEC §7: the evidence the relevance is computed from, and the weight of the lexical
    #: share in it (relevance = dense cosine + lexical_weight × lexical share). Records written
    #: before both legs counted are dense-only.
    features: tuple[str, ...] = ("dense",)
    lexical_weight: float = 0.0
    identifier_weight: float = 0.0
    #: `labelled` (fitted on a user's questions, or imported), `self` (on questions recall
    #: made from the notes, `recall.selfcal`) or `prior` (shipped with recall for a built-in
    #: embedder, `recall.priors`), and how many of the fit's questions recall made (identifier
    #: lookups beside a labelled set that has none).
    source: str = "labelled"
    made: int = 0

    @property
    def relevance_span(self) -> float:
        """The most the lexical features add to a cosine."""
        return self.lexical_weight + self.identifier_weight

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["features"] = list(self.features)
        return data

    def is_stale(self, churn_now: int) -> bool:
        """SPEC §7: more than 25 % of the fitted chunk count added, changed or removed since.
        A record that cannot say (imported without counts) is never called stale."""
        if self.churn is None or self.chunk_count is None:
            return False
        return churn_now - self.churn > STALE_FRACTION * max(self.chunk_count, 1)


#: The meta key of an embedder's record in use is this, then its fingerprint (SPEC §7).
RECORD_PREFIX = "calibration:"


def meta_key(fingerprint: str) -> str:
    """Records are keyed by the embedder fingerprint (SPEC §7)."""
    return RECORD_PREFIX + fingerprint


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def load_record(
    raw: str | dict[str, Any] | None, fingerprint: str
) -> tuple[Calibration | None, str]:
    """Parse a stored or imported record for `fingerprint`.

    Returns (record, "") when usable, else (None, why). Never raises: a bad record is ignored
    and the result says `calibrated: false` (SPEC §7, §11).
    """
    if raw is None:
        return None, "no calibration recorded for this embedder"
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, TypeError):
        return None, "calibration record is not valid JSON"
    if not isinstance(data, dict):
        return None, "calibration record is not a JSON object"
    if data.get("fingerprint") != fingerprint:
        return None, "calibration record was fitted for another embedder"
    threshold, scale = data.get("threshold"), data.get("scale")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        return None, "calibration threshold is not a number"
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        return None, "calibration scale is not a number"
    if not (math.isfinite(threshold) and math.isfinite(scale)):
        return None, "calibration record holds a non-finite number"
    weights = {}
    for name in ("lexical_weight", "identifier_weight"):
        w = data.get(name, 0.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            return None, f"calibration {name} is not a number"
        if not (math.isfinite(w) and 0.0 <= w <= MAX_FEATURE_WEIGHT):
            return None, f"calibration {name} {w} is outside [0, {MAX_FEATURE_WEIGHT}]"
        weights[name] = float(w)
    # Relevance is the cosine plus the weighted features: it spans [-1, 1 + their weights].
    top = 1.0 + sum(weights.values())
    if not -1.0 <= threshold <= top:
        return None, f"calibration threshold {threshold} is outside [-1, {top:g}]"
    if scale <= 0:
        return None, f"calibration scale {scale} is not positive"
    features = data.get("features", ["dense"])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        return None, "calibration features is not a list of names"
    certified = data.get("certified")
    return (
        Calibration(
            id=str(data.get("id") or "imported"),
            embedder=str(data.get("embedder") or ""),
            fingerprint=fingerprint,
            threshold=float(threshold),
            scale=float(scale),
            certified=certified if isinstance(certified, bool) else None,
            generation=_opt_int(data.get("generation")),
            chunk_count=_opt_int(data.get("chunk_count")),
            churn=_opt_int(data.get("churn")),
            fitted_at=data.get("fitted_at") if isinstance(data.get("fitted_at"), str) else None,
            auc=_opt_float(data.get("auc")),
            auc_lower=_opt_float(data.get("auc_lower")),
            n_answerable=_opt_int(data.get("n_answerable")),
            n_unanswerable=_opt_int(data.get("n_unanswerable")),
            certified_reason=(
                data.get("certified_reason")
                if isinstance(data.get("certified_reason"), str)
                else None
            ),
            features=tuple(features) or ("dense",),
            lexical_weight=weights["lexical_weight"],
            identifier_weight=weights["identifier_weight"],
            source=data["source"] if data.get("source") in ("self", "prior") else "labelled",
            made=_opt_int(data.get("made")) or 0,
        ),
        "",
    )


# --- history --------------------------------------------------------------------------------
#
# Storage: `meta_key(fp)` holds the record in use, as it always has (a store written before
# histories were kept has only that key, and every reader of the record in use reads only it).
# `history_key(fp)` holds {"version": 1, "entries": [...]}, oldest first, each entry
# {"number", "saved_at", "source", "record"}. Which entry is in use is not stored: it is the
# newest entry whose record equals the one under `meta_key`, so the two keys cannot disagree.


def history_key(fingerprint: str) -> str:
    """The calibration history of one embedder, next to its record in use (`meta_key`)."""
    return f"calibration-history:{fingerprint}"


@dataclass(frozen=True)
class CalibrationEntry:
    """One record of a store's calibration history.

    `number` counts up per embedder and never changes (`recall calibrate --use N`); `source` is
    `fit`, `import`, or `earlier` (a record the store held before it kept a history); `in_use`
    says whether it is the record search applies.
    """

    number: int
    saved_at: str | None
    source: str
    record: Calibration
    in_use: bool = False

    @property
    def when(self) -> str | None:
        """When it was saved, else when it was fitted (None when neither is known)."""
        return self.saved_at or self.record.fitted_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "saved_at": self.saved_at,
            "source": self.source,
            "in_use": self.in_use,
            "record": self.record.to_dict(),
        }


def load_history(
    raw: str | None, fingerprint: str, in_use: Calibration | None
) -> list[CalibrationEntry]:
    """The stored history of `fingerprint`, oldest first, with the entry in use marked.

    Never raises: an unreadable history reads as empty and an unreadable entry is left out
    (like an unreadable record, SPEC §7). The record in use that no entry holds (a store from
    before histories were kept) is added as the newest entry, source `earlier`, under the
    number it keeps once the history is next written.
    """
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        data = None
    items = data.get("entries") if isinstance(data, dict) else None
    entries: list[CalibrationEntry] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        number, record = _opt_int(item.get("number")), item.get("record")
        calibration, _ = load_record(record if isinstance(record, dict) else None, fingerprint)
        if number is None or calibration is None or any(e.number == number for e in entries):
            continue
        saved_at, source = item.get("saved_at"), item.get("source")
        entries.append(
            CalibrationEntry(
                number=number,
                saved_at=saved_at if isinstance(saved_at, str) else None,
                source=source if isinstance(source, str) else "fit",
                record=calibration,
            )
        )
    entries.sort(key=lambda e: e.number)
    if in_use is None:
        return entries
    current = next((e for e in reversed(entries) if e.record == in_use), None)
    if current is None:
        current = CalibrationEntry(
            number=_next_number(entries), saved_at=None, source="earlier", record=in_use
        )
        entries.append(current)
    return [replace(e, in_use=e is current) for e in entries]


def _next_number(entries: Sequence[CalibrationEntry]) -> int:
    return max((e.number for e in entries), default=0) + 1


def with_entry(
    entries: Sequence[CalibrationEntry],
    record: Calibration,
    *,
    source: str,
    saved_at: str,
    in_use: bool,
    limit: int = HISTORY_LIMIT,
) -> tuple[list[CalibrationEntry], CalibrationEntry]:
    """The history with `record` added as its newest entry (in use or not), capped at `limit`
    entries by dropping the oldest ones not in use. Returns (entries, the new entry)."""
    entry = CalibrationEntry(
        number=_next_number(entries),
        saved_at=saved_at,
        source=source,
        record=record,
        in_use=in_use,
    )
    out = [replace(e, in_use=False) if in_use else e for e in entries] + [entry]
    while len(out) > max(limit, 2):
        out.remove(next(e for e in out if not e.in_use))
    return out, entry


def dump_history(entries: Sequence[CalibrationEntry]) -> str:
    """The stored form of a history (see `load_history`); `in_use` is derived, never stored."""
    return json.dumps(
        {
            "version": 1,
            "entries": [
                {
                    "number": e.number,
                    "saved_at": e.saved_at,
                    "source": e.source,
                    "record": e.record.to_dict(),
                }
                for e in entries
            ],
        }
    )


# --- fitting (SPEC §7) ----------------------------------------------------------------------


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
    certification and may raise the identifier weight, never lower the threshold under the
    labelled questions' own placement. A lookup's low dense cosine is lifted by its identifier
    evidence, not by pulling the boundary under every off-topic question."""
    alone, (lexical, identifier) = fit_evidence(labelled)
    if not made:
        return alone, (lexical, identifier)
    both = [*labelled, *made]
    placing = [True] * len(labelled) + [False] * len(made)
    best: tuple[tuple[float, float, float], Fit, tuple[float, float]] | None = None
    asked = [e for e in made if e.answerable]
    for ident in (w for w in IDENTIFIER_WEIGHTS if w >= identifier):
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


def labelled_item(item: object, where: str) -> tuple[str, bool, tuple[str, ...]]:
    """One labelled question (SPEC §7): query, answerable, relevant files; errors say `where`."""
    if not isinstance(item, dict):
        raise UsageError(f"{where}: expected a JSON object with 'query' and 'answerable'")
    query, answerable = item.get("query"), item.get("answerable")
    if not isinstance(query, str) or not query.strip():
        raise UsageError(f"{where}: 'query' must be a non-empty string")
    if not isinstance(answerable, bool):
        raise UsageError(f"{where}: 'answerable' must be true or false")
    relevant = item.get("relevant", [])
    if not isinstance(relevant, list) or not all(
        isinstance(r, str) and r.strip() for r in relevant
    ):
        raise UsageError(f"{where}: 'relevant' must be a list of file paths")
    return query, answerable, tuple(relevant)


def load_queries(source: str | os.PathLike[str]) -> list[tuple[str, bool]]:
    """Labelled queries as (query, answerable) pairs (see `load_labelled`)."""
    return [(q, a) for q, a, _ in load_labelled(source)]


def load_labelled(source: str | os.PathLike[str]) -> list[tuple[str, bool, tuple[str, ...]]]:
    """Read labelled queries from JSONL (one object a line) or JSON (a list, or an object with
    a 'queries' list): query, answerable and optionally the relevant files. Errors name the
    file and line."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"recall calibrate: cannot read {path}: {err.strerror or err}") from err
    try:
        whole: object = json.loads(text)
    except ValueError:
        whole = None  # not one JSON document: read it as JSON Lines below
    if isinstance(whole, list) or (isinstance(whole, dict) and "queries" in whole):
        items = whole.get("queries") if isinstance(whole, dict) else whole
        if not isinstance(items, list):
            raise UsageError(f"recall calibrate: {path}: 'queries' must be a list")
        return [labelled_item(item, f"{path} item {i + 1}") for i, item in enumerate(items)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except ValueError as err:
            raise UsageError(f"recall calibrate: {path} line {n} is not valid JSON: {err}") from err
        out.append(labelled_item(item, f"{path} line {n}"))
    return out


def plot(result: Fit, path: str | os.PathLike[str]) -> None:
    """Write a PNG: both score distributions, the threshold and the logistic confidence curve,
    with the certification figures in the title (needs the `plot` extra: matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise UsageError(
            "recall calibrate --plot needs matplotlib: pip install 'recall-memory[plot]'"
        ) from err
    answerable = [s for _, a, s in result.samples if a]
    unanswerable = [s for _, a, s in result.samples if not a]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    bins = [i / 50 for i in range(-5, 51)]
    ax.hist(unanswerable, bins=bins, alpha=0.6, label=f"unanswerable (n={len(unanswerable)})")
    ax.hist(answerable, bins=bins, alpha=0.6, label=f"answerable (n={len(answerable)})")
    ax.axvline(
        result.threshold, color="black", linestyle="--", label=f"threshold {result.threshold:.3f}"
    )
    ax.set_xlabel("relevance of the best hit (dense cosine + weighted lexical evidence)")
    ax.set_ylabel("queries")
    curve = ax.twinx()
    xs = [i / 200 for i in range(-20, 201)]
    ys = [
        1 / (1 + math.exp(-max(-60.0, min(60.0, (x - result.threshold) / result.scale))))
        for x in xs
    ]
    curve.plot(xs, ys, color="tab:red", label="confidence")
    curve.set_ylim(0, 1.05)
    curve.set_ylabel("confidence")
    area = "n/a" if result.auc is None else f"{result.auc:.3f}"
    low = "n/a" if result.auc_interval is None else f"{result.auc_interval[0]:.3f}"
    state = "certified" if result.certified else "NOT certified"
    ax.set_title(f"recall calibration: AUC {area} (95% lower {low}), {state}")
    handles = ax.get_legend_handles_labels()
    extra = curve.get_legend_handles_labels()
    ax.legend(handles[0] + extra[0], handles[1] + extra[1], loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    plt.close(fig)
