"""Prior calibrations shipped with recall (SPEC §7, `source: prior`): a boundary for a built-in
embedder, fitted on several labelled corpora, that serves a store too small or too new to
calibrate itself until the store's own fit certifies.

Owns: where the priors are (`data/priors/NAME.json`, written by `benches/fit_prior.py`), reading
the one for an embedder's fingerprint (checked like any record: one that would not load is
never applied), and the rule of when it serves (`in_force`). Does not own: fitting it (the
bench script), the record's format (`recall.calibration`) or the records a store keeps
(`recall.calibration.stored`).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from recall.calibration import CERTIFY_MIN_PER_CLASS, Calibration, load_record

__all__ = ["PRIORS", "figures", "in_force", "prior_for", "short_of_questions"]

PRIORS = Path(__file__).parent / "data" / "priors"


@functools.cache
def _shipped() -> tuple[tuple[Calibration, tuple[dict[str, Any], ...]], ...]:
    out = []
    for path in sorted(PRIORS.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a damaged install never applies what it cannot read
        raw = data.get("record") if isinstance(data, dict) else None
        fingerprint = raw.get("fingerprint") if isinstance(raw, dict) else None
        if not isinstance(fingerprint, str):
            continue
        record, _ = load_record(raw, fingerprint)
        if record is None or record.source != "prior" or record.certified is not True:
            continue
        corpora = data.get("corpora")
        rows = tuple(c for c in corpora if isinstance(c, dict)) if isinstance(corpora, list) else ()
        out.append((record, rows))
    return tuple(out)


def prior_for(fingerprint: str) -> Calibration | None:
    """The prior shipped for the embedder of `fingerprint`, or None (no built-in prior)."""
    return next((r for r, _ in _shipped() if r.fingerprint == fingerprint), None)


def figures(fingerprint: str) -> list[dict[str, Any]]:
    """What the prior of `fingerprint` measured on each corpus it was fitted on or tried on."""
    return next((list(rows) for r, rows in _shipped() if r.fingerprint == fingerprint), [])


def short_of_questions(record: Calibration) -> bool:
    """A self-made fit left uncertified because the notes made too few questions to certify
    anything (SPEC §7: 20 a class), not because they could not be told apart."""
    return (
        record.source == "self"
        and record.certified is not True
        and min(record.n_answerable or 0, record.n_unanswerable or 0) < CERTIFY_MIN_PER_CLASS
    )


def in_force(
    stored: Calibration | None, why: str, fingerprint: str
) -> tuple[Calibration | None, str]:
    """The calibration a search applies: the store's record in use, or the prior of its
    embedder while the store has none or only a self-made fit short of questions (SPEC §7). A
    store whose own fit had the questions and did not certify is not served by the prior: its
    notes are what the prior would be applied to, and they did not separate. Without a prior,
    `why` says that the embedder has none."""
    if stored is not None and not short_of_questions(stored):
        return stored, why
    prior = prior_for(fingerprint)
    if prior is not None:
        return prior, ""
    if stored is not None:
        return stored, why
    return None, f"{why}; this embedder has no prior calibration shipped with recall"
