"""The calibration plot (`recall calibrate --plot`): both score distributions, the threshold and
the confidence curve. Needs the `plot` extra (matplotlib), imported only here.
"""

from __future__ import annotations

import math
import os

from recall.calibration.statistics import Fit
from recall.errors import UsageError


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
