"""Calibration (SPEC §7): where the abstention boundary sits for one embedder.

- `record`: the record and its history's shape, defensive loading, staleness, the defaults;
- `statistics`: fitting one from samples (threshold, scale, certification, feature weights);
- `questions`: labelled question files;
- `stored`: the records a store keeps (in use, history, import, which takes precedence);
- `plotting`: the calibration plot.

The names below are the package's public ones, whichever room holds them.
"""

from __future__ import annotations

import os

from recall.calibration.questions import labelled_item, load_labelled, load_queries
from recall.calibration.record import (
    DEFAULT_SCALE,
    DEFAULT_THRESHOLD,
    HISTORY_LIMIT,
    MAX_FEATURE_WEIGHT,
    RECORD_PREFIX,
    STALE_FRACTION,
    Calibration,
    CalibrationEntry,
    dump_history,
    history_key,
    load_history,
    load_record,
    meta_key,
    with_entry,
)
from recall.calibration.statistics import (
    CERTIFY_MIN_AUC_LOWER,
    CERTIFY_MIN_PER_CLASS,
    IDENTIFIER_WEIGHTS,
    LEXICAL_WEIGHTS,
    NEAR_QUANTILE,
    Evidence,
    Fit,
    auc,
    fit,
    fit_evidence,
    fit_labelled_evidence,
    hanley_mcneil,
    quantile,
    scale_for,
    threshold_for,
)

__all__ = [
    "CERTIFY_MIN_AUC_LOWER",
    "CERTIFY_MIN_PER_CLASS",
    "DEFAULT_SCALE",
    "DEFAULT_THRESHOLD",
    "HISTORY_LIMIT",
    "IDENTIFIER_WEIGHTS",
    "LEXICAL_WEIGHTS",
    "MAX_FEATURE_WEIGHT",
    "NEAR_QUANTILE",
    "RECORD_PREFIX",
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
    "load_history",
    "load_labelled",
    "load_queries",
    "load_record",
    "meta_key",
    "plot",
    "quantile",
    "scale_for",
    "threshold_for",
    "with_entry",
]


def plot(result: Fit, path: str | os.PathLike[str]) -> None:
    """Write the calibration plot of `result` to `path` (`plotting.plot`; needs matplotlib)."""
    from recall.calibration.plotting import plot as draw

    draw(result, path)
