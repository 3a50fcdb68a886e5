"""Fit the prior calibration shipped with recall for a built-in embedder (SPEC §7, `source: prior`).

Each labelled set named (default: the shipped set and the platform, transit and pgsql sets under
benches/evalsets) is indexed into a fresh store, and the questions a labelled calibration is
fitted on (paraphrase, identifier, supersession, far gap, near topic) are searched there as a
calibration searches them. Their evidence is pooled and fitted by the labelled rule (threshold
midway between the answerable 5th and the unanswerable 95th percentile, AUC certification), on
the dense cosine and the identifier match only: a memory of a handful of notes gives the lexical
share no stable IDF, so the prior holds no lexical weight. Prints the pooled fit and, per set,
its AUC and the false confidence and false abstention of its own questions at the pooled
threshold, and writes the record with those figures to python/recall/data/priors/NAME.json.
What the prior does to whole searches, on these sets and on held-out ones, is measured by
`python benches/calibration_sets.py`.

Usage: python benches/fit_prior.py [--embedder minilm-l6] [--sets DIR ...] [--dry-run]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import tempfile
from pathlib import Path

import recall
from recall import fitting
from recall.api import CANDIDATES
from recall.calibration import Calibration, Evidence, auc, fit_evidence, hanley_mcneil
from recall.evaluation.questions import load_questions
from recall.evaluation.shipped import EVALSET_DIR, FIT_CATEGORIES, _load_meta
from recall.instants import format_instant
from recall.priors import PRIORS
from recall.selfcal import Probe

ROOT = Path(__file__).resolve().parents[1]
LEXICAL = (0.0,)
SETS = [EVALSET_DIR] + [ROOT / "benches" / "evalsets" / n for n in ("platform", "transit", "pgsql")]


def set_evidence(
    folder: Path, embedder: str, scratch: Path
) -> tuple[str, list[tuple[str, Evidence]]]:
    """The embedder's fingerprint, and (category, evidence) of each question of `folder` that a
    labelled fit takes."""
    now, _, indexed_at = _load_meta(folder / "meta.json")
    questions = [
        q for q in load_questions(folder / "questions.jsonl") if q.category in FIT_CATEGORIES
    ]
    with recall.open(scratch / f"{folder.name}.db", embedder=embedder) as mem:
        mem.index(folder / "notes", now=indexed_at, calibrate=False)
        probes = [
            Probe(q.query, q.answerable, "labelled", frozenset(q.relevant if q.answerable else ()))
            for q in questions
        ]
        found = fitting.evidence(mem._store, mem.embedder, probes, CANDIDATES)
        fingerprint = mem.embedder.fingerprint
    return fingerprint, [(q.category, e) for q, e in zip(questions, found)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument("--sets", nargs="+", type=Path, default=SETS)
    parser.add_argument("--dry-run", action="store_true", help="print, write nothing")
    args = parser.parse_args()

    per_set: dict[str, list[tuple[str, Evidence]]] = {}
    fingerprint = ""
    with tempfile.TemporaryDirectory(prefix="recall-prior-") as scratch:
        for folder in args.sets:
            fingerprint, per_set[folder.name] = set_evidence(folder, args.embedder, Path(scratch))
            print(f"{folder.name}: {len(per_set[folder.name])} questions")
    pooled = [e for rows in per_set.values() for _, e in rows]
    result, (lexical, identifier) = fit_evidence(pooled, lexical_weights=LEXICAL)
    print(
        f"pooled: {result.n_answerable} + {result.n_unanswerable} questions, threshold "
        f"{result.threshold:.3f}, scale {result.scale:.4f}, identifier weight {identifier}, "
        f"{result.certified_reason}"
    )
    corpora = []
    for name, rows in per_set.items():
        samples = [(c, e.answerable, e.sample(lexical, identifier)) for c, e in rows]
        yes = [s for _, a, s in samples if a]
        no = [s for _, a, s in samples if not a]
        area = auc(yes, no)
        low = hanley_mcneil(area, len(yes), len(no))[0] if area is not None else None
        figures = {
            "set": name,
            "fitted_on": True,
            "answerable": len(yes),
            "unanswerable": len(no),
            "auc": round(area, 4) if area is not None else None,
            "auc_lower": round(low, 4) if low is not None else None,
            "false_abstain": round(sum(s < result.threshold for s in yes) / max(len(yes), 1), 4),
        }
        for category in ("far_gap", "near_topic"):
            asked = [s for c, a, s in samples if c == category]
            if asked:
                answered = sum(s >= result.threshold for s in asked) / len(asked)
                figures[f"{category}_false_confidence"] = round(answered, 4)
        corpora.append(figures)
        print("  " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    if result.certified is not True:
        raise SystemExit(f"the pooled fit is not certified ({result.certified_reason}): no prior")
    names = sorted(per_set)
    digest = hashlib.blake2b(json.dumps([names, result.threshold]).encode(), digest_size=4)
    record = Calibration(
        id=f"prior-{args.embedder}-{digest.hexdigest()}",
        embedder=args.embedder,
        fingerprint=fingerprint,
        threshold=result.threshold,
        scale=result.scale,
        certified=True,
        fitted_at=format_instant(dt.datetime.now(dt.timezone.utc).replace(microsecond=0)),
        auc=result.auc,
        auc_lower=result.auc_interval[0] if result.auc_interval else None,
        n_answerable=result.n_answerable,
        n_unanswerable=result.n_unanswerable,
        certified_reason=f"{result.certified_reason}, pooled over {', '.join(names)}",
        features=("dense",) + (("identifier_match",) if identifier > 0 else ()),
        lexical_weight=0.0,
        identifier_weight=identifier,
        source="prior",
    )
    out = PRIORS / f"{args.embedder}.json"
    data = {
        "record": record.to_dict(),
        "fitted_on": names,
        "command": "python benches/fit_prior.py",
        "corpora": corpora,
    }
    if args.dry_run:
        print(json.dumps(data, indent=2))
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
