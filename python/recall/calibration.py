"""Calibration records: where the abstention boundary sits for one embedder (SPEC §7).

Owns: the record's shape, defensive loading (a record that is unreadable, for another embedder,
non-finite, with a threshold outside [-1, 1] or a scale <= 0 is never applied), import/export as
JSON, and the uncalibrated development defaults. Fitting a calibration from labelled queries is
not here yet. Does not own: storing (the store's metadata table) or applying it (trust layer).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DEFAULT_SCALE", "DEFAULT_THRESHOLD", "Calibration", "load_record", "meta_key"]

#: SPEC §5.6: the uncalibrated default used in development mode.
DEFAULT_THRESHOLD = 0.5
DEFAULT_SCALE = 0.05


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def meta_key(fingerprint: str) -> str:
    """Records are keyed by the embedder fingerprint (SPEC §7)."""
    return f"calibration:{fingerprint}"


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    if not -1.0 <= threshold <= 1.0:
        return None, f"calibration threshold {threshold} is outside [-1, 1]"
    if scale <= 0:
        return None, f"calibration scale {scale} is not positive"
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
        ),
        "",
    )
