"""A calibration record: where the abstention boundary sits for one embedder (SPEC §7), and the
shape of a store's history of them.

Owns: the record (`Calibration`), its defensive loading (a record that is unreadable, for
another embedder, non-finite, with a threshold outside [-1, 1], a scale <= 0 or a feature weight
out of bounds is never applied), staleness, the uncalibrated development defaults, and the
history's shape (the last `HISTORY_LIMIT` records per embedder, which one is in use). Does not
own: fitting (`statistics`), where a store keeps them (`stored`) or applying one (the trust
layer, in Rust).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

#: SPEC §5.6: the uncalibrated default used in development mode.
DEFAULT_THRESHOLD = 0.5
DEFAULT_SCALE = 0.05
#: SPEC §7: stale once more than this fraction of the fitted chunk count has churned.
STALE_FRACTION = 0.25
#: SPEC §7: the largest feature weight a record may hold.
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
