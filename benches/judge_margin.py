"""A judge stacked on the threshold at several margins, from one evaluation run per set.

`recall eval --entail` measures a judge at the margin its folder holds (`bias` in its
`recall-judge.json`). Here each set is evaluated once with the judge (labelled calibration,
cross-fitted, the default model), every judged search's probabilities are kept, and the
questions are counted again as if the margin were each of `--margins` (in place of the folder's
own `bias`): the answerable questions the judge takes from the threshold's answers (every `ok` hit
demoted), and the near misses, near-topic and far-gap questions still answered `ok`, beside the
threshold alone. A margin that keeps the answers is one that refuses nothing; what a margin is
worth is what it refuses for what it takes.

Usage: python benches/judge_margin.py JUDGE_DIR [--set shipped benches/evalsets/platform ...]
       [--margins 0 0.5 1 1.5 2]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from machine import cpu_model

import recall.judge as judging
from recall.evaluation import EVALSET_DIR, Question, evaluate_shipped, load_questions

UNANSWERABLE = ("near_miss", "near_topic", "far_gap")


class Recording:
    """The judge under test, keeping the logit of every passage it is asked about."""

    def __init__(self, inner: judging.Judge, bias: float) -> None:
        self.inner = inner
        self.bias = bias
        self.logits: dict[str, list[float]] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def score(self, question: str, passages: Sequence[str]) -> npt.NDArray[np.float64]:
        probs = self.inner.score(question, passages)
        clipped = np.clip(probs, 1e-12, 1 - 1e-12)
        # The model's own logit: the folder's bias taken back out.
        self.logits[question] = [math.log(p / (1 - p)) - self.bias for p in clipped]
        return probs


def measure(judge: Path, evalset: str, margins: Sequence[float]) -> list[str]:
    root = EVALSET_DIR if evalset == "shipped" else Path(evalset)
    questions = load_questions(root / "questions.jsonl")
    config = judge / judging.JUDGE_CONFIG
    own = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
    recording = Recording(judging.Judge(judge), float(own.get("bias", 0.0)))
    chosen = judging.get_judge
    judging.get_judge = lambda spec: recording  # type: ignore[assignment, misc, return-value]
    try:
        (report,) = evaluate_shipped(
            ["minilm-l6"], evalset=root, entail=True, calibrations=("labelled",)
        )
    finally:
        judging.get_judge = chosen  # type: ignore[assignment]
    # The judge is asked only where the threshold left an `ok` hit: those are its questions.
    asked: dict[str, Question] = {q.query: q for q in questions}
    judged = {q: ls for q, ls in recording.logits.items() if q in asked}
    totals = Counter(q.category for q in questions if not q.answerable)
    answerable = sum(1 for q in questions if q.answerable)
    alone = Counter(asked[q].category for q in judged if not asked[q].answerable)
    name = "shipped" if evalset == "shipped" else root.name
    lines = [
        f"| {name} | threshold alone | – | "
        + " | ".join(f"{alone[c]}/{totals[c]}" for c in UNANSWERABLE)
        + " | – |"
    ]
    for margin in margins:
        taken, kept = 0, Counter[str]()
        for query, logits in judged.items():
            q = asked[query]
            ok = any(logit + margin >= 0 for logit in logits)
            taken += int(q.answerable and not ok)
            kept[q.category] += int(not q.answerable and ok)
        refused = sum(alone[c] - kept[c] for c in UNANSWERABLE)
        lines.append(
            f"| {name} | {margin:+g} | {taken}/{answerable} | "
            + " | ".join(f"{kept[c]}/{totals[c]}" for c in UNANSWERABLE)
            + f" | {refused} for {taken} |"
        )
    spent = [n for n in report.notes if "judge: p50" in n]
    return lines + [f"<!-- {name}: {spent[0] if spent else 'no search to judge'} -->"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("judge", type=Path, help="a judge folder (model.onnx, tokenizer.json)")
    parser.add_argument(
        "--set",
        nargs="+",
        default=["shipped", "benches/evalsets/platform", "benches/evalsets/transit"],
        help="evaluation sets: shipped, or folders laid out like it",
    )
    parser.add_argument("--margins", nargs="+", type=float, default=[0, 0.5, 1, 1.5, 2])
    args = parser.parse_args()
    print(f"judge {args.judge}, default model, labelled calibration; {cpu_model()}")
    print(
        "| set | margin | answers taken | near misses ok | near-topic ok | far-gap ok "
        "| refused for taken |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for evalset in args.set:
        for line in measure(args.judge, evalset, args.margins):
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
