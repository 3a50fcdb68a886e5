"""The relative-gap signal as an extra abstention rule (SPEC §9), beside the absolute threshold.

Runs the shipped evaluation set (`recall eval`, two-fold cross-fitted) and then, on its rows,
adds one rule to what was answered: abstain also when the best match leads the runner-up by
less than g (top-1 minus top-2 cosine). For each g it prints far-gap false confidence, false
abstention on answerable questions and near-miss false confidence. g = 0 is the product as it
is; the rule would be adopted only if some g lowers false confidence without raising false
abstention.

    python benches/relative_gap.py [--embedder NAME ...]
"""

from __future__ import annotations

import argparse

from recall import evaluation

GAPS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", action="append")
    args = parser.parse_args()
    for report in evaluation.evaluate_shipped(args.embedder or ["hashing-512", "minilm-l6"]):
        rows = report.rows
        n_far = sum(r.category == "far_gap" for r in rows)
        n_ans = sum(r.answerable for r in rows)
        n_near = sum(r.category == "near_miss" for r in rows)
        print(f"{report.embedder} (far gap n={n_far}, answerable n={n_ans}, near miss n={n_near})")
        for g in GAPS:

            def answered(r: evaluation.Row, g: float = g) -> bool:
                gap = (r.top_score or 0.0) - (r.second_score or 0.0)
                return not r.abstained and gap >= g

            fc = sum(r.category == "far_gap" and answered(r) for r in rows)
            fa = sum(r.answerable and not answered(r) for r in rows)
            nm = sum(r.category == "near_miss" and answered(r) for r in rows)
            print(
                f"  abstain also below gap {g:.2f}: far-gap false confidence {fc}/{n_far}, "
                f"false abstain {fa}/{n_ans}, near-miss false confidence {nm}/{n_near}"
            )


if __name__ == "__main__":
    main()
