"""Estimates with their 95 % intervals: how every figure of `recall eval` is reported.

Owns: `Estimate` (the value, its n, its interval, the count of successes and the interval's
method), the Wilson interval of a rate (`wilson`, `rate`), the normal interval of a mean
(`mean`) and an AUC with its Hanley–McNeil interval (`auc_estimate`). Does not own: computing
an AUC or its interval (`calibration`, which certifies a fit with them) or what is measured
(`measures`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from recall.calibration import auc, hanley_mcneil

__all__ = ["Z95", "Estimate", "auc_estimate", "mean", "rate", "wilson"]

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A measured rate or mean over `n` questions, with its 95 % interval.

    `value`, `low` and `high` are None when nothing was measured (n = 0). `count` is the number
    of successes for a rate, None for a mean or an AUC. `method` names the interval: `wilson`
    (rates), `normal` (means: ±1.96 standard errors, clipped to [0, 1]; none below 2 samples)
    or `hanley-mcneil` (AUC).
    """

    value: float | None
    n: int
    low: float | None
    high: float | None
    count: int | None
    method: str


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `successes` out of `n` (n > 0)."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson: need 0 <= successes <= n and n > 0, got {successes}/{n}")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0 or n the interval touches the end exactly (rounding would leave it a hair inside).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def rate(successes: int, n: int) -> Estimate:
    """`successes / n` with its Wilson interval."""
    if n == 0:
        return Estimate(None, 0, None, None, 0, "wilson")
    low, high = wilson(successes, n)
    return Estimate(successes / n, n, low, high, successes, "wilson")


def mean(values: Sequence[float]) -> Estimate:
    """The mean of values in [0, 1] (reciprocal ranks) with a normal-approximation interval."""
    n = len(values)
    if n == 0:
        return Estimate(None, 0, None, None, None, "normal")
    centre = sum(values) / n
    if n < 2:
        return Estimate(centre, n, None, None, None, "normal")
    sd = math.sqrt(sum((v - centre) ** 2 for v in values) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return Estimate(centre, n, max(0.0, centre - half), min(1.0, centre + half), None, "normal")


def auc_estimate(positive: Sequence[float], negative: Sequence[float]) -> Estimate:
    area = auc(positive, negative)
    n = len(positive) + len(negative)
    if area is None:
        return Estimate(None, n, None, None, None, "hanley-mcneil")
    low, high = hanley_mcneil(area, len(positive), len(negative))
    return Estimate(area, n, low, high, None, "hanley-mcneil")
