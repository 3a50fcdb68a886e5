"""Fit the prior calibration shipped for a built-in embedder (SPEC §7, `source: prior`): the
boundary a memory too small to calibrate itself is judged by.

A prior serves small memories, so it is fitted on small memories. From each labelled set named
(default: the shipped set and benches/evalsets/{platform,transit,pgsql,public-adr}), seeded draws
of a few
notes (`--sizes`, `--draws` of each) are indexed into a fresh store each, and the set's questions
are asked of that store: a paraphrase or identifier question whose note was drawn is answerable;
a paraphrase whose notes were not drawn is a near-topic question (its subject is the corpus's,
its answer is not in the memory), and so is every near-topic question of the set; far-gap
questions are far gaps. An identifier question whose note was not drawn is left out: the
identifier rule refuses it whatever the boundary. The evidence of every draw is pooled and
fitted by the labelled rule (threshold midway between the answerable 5th and the unanswerable
95th percentile, AUC certification) on the dense cosine, the identifier match and, with
`--lexical`, the lexical share (in a memory of a handful of notes, a question's words that no
note holds carry the largest IDF, so the share falls for a question the memory cannot answer).

Prints the pooled fit and, per set (those fitted on and the `--try` ones, drawn the same way),
its AUC and its false abstention, near-topic and far-gap false confidence at the pooled
threshold; with `--write`, writes the record and those figures to
python/recall/data/priors/NAME.json when the pooled fit is certified. What the prior does to
whole searches is measured by `python benches/calibration_sets.py` (its `prior` rows) and
`python benches/first_answer.py` (a memory written note by note).

The same question is asked of several draws, so the pooled questions are not independent
samples: the AUC's interval is narrower than that of as many distinct questions would be.

Usage: python benches/fit_prior.py [--embedder minilm-l6] [--sets DIR ...] [--try DIR ...]
       [--sizes 5 10 20] [--draws 6] [--lexical] [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import recall
from recall import fitting
from recall.api import CANDIDATES
from recall.calibration import Calibration, Evidence, auc, fit_evidence, hanley_mcneil
from recall.evaluation.questions import Question, load_questions
from recall.evaluation.shipped import EVALSET_DIR
from recall.instants import format_instant
from recall.priors import PRIORS
from recall.selfcal import Probe

ROOT = Path(__file__).resolve().parents[1]
EVALSETS = ROOT / "benches" / "evalsets"
SETS = [EVALSET_DIR] + [EVALSETS / n for n in ("platform", "transit", "pgsql", "public-adr")]
#: Drawn and measured the same way, never fitted on.
TRIED = [EVALSETS / n for n in ("sqlite", "public-adr-b")]
SEED = 20261205
#: (kind, evidence) of one question asked of one drawn memory.
Asked = tuple[str, Evidence]


def _probes(questions: list[Question], drawn: set[str]) -> tuple[list[str], list[Probe]]:
    """The kinds and probes of `questions` asked of a memory holding the notes `drawn`."""
    kinds, probes = [], []
    for q in questions:
        held = [p for p in q.relevant if p in drawn]
        if q.category in ("paraphrase", "identifier") and held:
            kind, probe = "answerable", Probe(q.query, True, "labelled", frozenset(held))
        elif q.category == "paraphrase" or q.category == "near_topic":
            kind, probe = "near_topic", Probe(q.query, False, "labelled")
        elif q.category == "far_gap":
            kind, probe = "far_gap", Probe(q.query, False, "labelled")
        else:
            continue
        kinds.append(kind)
        probes.append(probe)
    return kinds, probes


def draws(folder: Path, embedder: str, sizes: list[int], count: int, scratch: Path) -> list[Asked]:
    """The evidence of the set's questions asked of `count` seeded draws of each size."""
    notes = sorted(
        p.relative_to(folder / "notes").as_posix() for p in (folder / "notes").rglob("*.md")
    )
    questions = load_questions(folder / "questions.jsonl")
    rng = random.Random(f"{SEED}:{folder.name}")
    out: list[Asked] = []
    for size in sizes:
        for n in range(count):
            drawn = set(rng.sample(notes, min(size, len(notes))))
            memory = scratch / f"{folder.name}-{size}-{n}"
            for rel in drawn:
                (memory / "notes" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(folder / "notes" / rel, memory / "notes" / rel)
            with recall.open(memory / "m.db", embedder=embedder) as mem:
                mem.index(memory / "notes", calibrate=False)
                kinds, probes = _probes(questions, drawn)
                found = fitting.evidence(mem._store, mem.embedder, probes, CANDIDATES)
            out += list(zip(kinds, found))
            shutil.rmtree(memory)
    return out


def figures(
    name: str, asked: list[Asked], weights: tuple[float, float], threshold: float
) -> dict[str, object]:
    """A set's AUC and error rates at `threshold`, over every draw."""
    samples = [(k, e.sample(*weights)) for k, e in asked]
    yes = [s for k, s in samples if k == "answerable"]
    no = [s for k, s in samples if k != "answerable"]
    area = auc(yes, no)
    out: dict[str, object] = {
        "set": name,
        "answerable": len(yes),
        "unanswerable": len(no),
        "auc": round(area, 4) if area is not None else None,
        "auc_lower": round(hanley_mcneil(area, len(yes), len(no))[0], 4) if area else None,
        "false_abstain": round(sum(s < threshold for s in yes) / max(len(yes), 1), 4),
    }
    for kind in ("near_topic", "far_gap"):
        asked_kind = [s for k, s in samples if k == kind]
        if asked_kind:
            answered = sum(s >= threshold for s in asked_kind) / len(asked_kind)
            out[f"{kind}_false_confidence"] = round(answered, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument("--sets", nargs="+", type=Path, default=SETS)
    parser.add_argument("--try", dest="tried", nargs="*", type=Path, default=TRIED)
    parser.add_argument("--sizes", nargs="+", type=int, default=[5, 10, 20])
    parser.add_argument("--draws", type=int, default=6)
    parser.add_argument("--write", action="store_true", help="write the prior when certified")
    parser.add_argument("--lexical", action="store_true", help="weigh the lexical share too")
    args = parser.parse_args()

    fitted: dict[str, list[Asked]] = {}
    tried: dict[str, list[Asked]] = {}
    with tempfile.TemporaryDirectory(prefix="recall-prior-") as scratch:
        for group, folders in ((fitted, args.sets), (tried, args.tried)):
            for folder in folders:
                name = "shipped" if folder.resolve() == EVALSET_DIR else folder.name
                group[name] = draws(folder, args.embedder, args.sizes, args.draws, Path(scratch))
                print(f"{name}: {len(group[name])} questions asked of small memories", flush=True)
        with recall.open(Path(scratch) / "f.db", embedder=args.embedder) as mem:
            fingerprint = mem.embedder.fingerprint
    pooled = [e for asked in fitted.values() for _, e in asked]
    result, weights = fit_evidence(pooled, **({} if args.lexical else {"lexical_weights": (0.0,)}))
    print(
        f"pooled: {result.n_answerable} + {result.n_unanswerable} questions, threshold "
        f"{result.threshold:.3f}, scale {result.scale:.4f}, lexical weight {weights[0]}, "
        f"identifier weight {weights[1]}, "
        f"{result.certified_reason}"
    )
    corpora = []
    for group, on in ((fitted, True), (tried, False)):
        for name, asked in group.items():
            row = {**figures(name, asked, weights, result.threshold), "fitted_on": on}
            corpora.append(row)
            print("  " + ", ".join(f"{k} {v}" for k, v in row.items()))
    if not args.write:
        return
    if result.certified is not True:
        raise SystemExit(f"not certified ({result.certified_reason}): no prior written")
    names = sorted(fitted)
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
        certified_reason=f"{result.certified_reason}, small memories drawn from {', '.join(names)}",
        features=("dense",)
        + (("lexical_share",) if weights[0] > 0 else ())
        + (("identifier_match",) if weights[1] > 0 else ()),
        lexical_weight=weights[0],
        identifier_weight=weights[1],
        source="prior",
    )
    data = {
        "record": record.to_dict(),
        "fitted_on": names,
        "command": " ".join(["python", "benches/fit_prior.py", *sys.argv[1:]]),
        "sizes": args.sizes,
        "draws": args.draws,
        "corpora": corpora,
    }
    out = PRIORS / f"{args.embedder}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
