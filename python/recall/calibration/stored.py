"""The calibration records a store keeps (SPEC §7): the record in use and the history beside it,
keyed by the embedder's fingerprint.

Owns: reading the record in use, saving a fit or an import to the history, which record takes
precedence (a certified one over a fit that is not; one fitted on a user's labels, or imported,
over a self-made fit), putting a history entry back in use, reading a record given to import,
and what a result shows of the record in use. Does not own: fitting (`statistics`,
`recall.fitting`) or the record's format (`record`: `Calibration`, `CalibrationEntry`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.calibration.record import (
    Calibration,
    CalibrationEntry,
    dump_history,
    history_key,
    load_history,
    load_record,
    meta_key,
    with_entry,
)
from recall.errors import UsageError
from recall.instants import format_instant, utc

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["adopt", "history", "read", "record_given", "save", "summary", "use"]

#: (name, dimension, fingerprint) of the embedder a store's vectors were made with.
Bound = tuple[str, int, str]


def read(store: Store, fingerprint: str) -> tuple[Calibration | None, str]:
    """The record in use for `fingerprint`, or (None, why there is none that applies)."""
    return load_record(store.meta(meta_key(fingerprint)), fingerprint)


def history(store: Store, bound: Bound, in_use: Calibration | None) -> list[CalibrationEntry]:
    """The history kept for the store's embedder, oldest first, the entry in use marked."""
    return load_history(store.meta(history_key(bound[2])), bound[2], in_use)


def save(
    store: Store,
    bound: Bound,
    record: Calibration,
    in_use_now: Calibration | None,
    *,
    source: str,
    saved_at: str,
    in_use: bool,
) -> None:
    """Add `record` to the history (as `source`: fit, self, import) and, when `in_use`, make it
    the record search applies."""
    entries, _ = with_entry(
        history(store, bound, in_use_now), record, source=source, saved_at=saved_at, in_use=in_use
    )
    _write(store, bound[2], entries, record if in_use else None)


def adopt(
    store: Store,
    bound: Bound,
    record: Calibration,
    in_use_now: Calibration | None,
    *,
    source: str,
    now: dt.datetime | None,
    replace: bool,
) -> None:
    """Save a fit to the history and put it in use, unless the record in use takes precedence:
    a certified one over a fit that is not, and one fitted on a user's labels (or imported)
    over a self-made fit. `replace` puts it in use anyway."""
    keep = in_use_now is not None and (
        (in_use_now.certified is True and not record.certified)
        or (record.source == "self" and in_use_now.source != "self")
    )
    save(
        store,
        bound,
        record,
        in_use_now,
        source=source,
        saved_at=record.fitted_at or format_instant(utc(now)),
        in_use=replace or not keep,
    )


def use(store: Store, bound: Bound, number: int, in_use_now: Calibration | None) -> Calibration:
    """Put the history's entry `number` back in use, certified or not; returns its record."""
    entries = history(store, bound, in_use_now)
    chosen = next((e for e in entries if e.number == number), None)
    if chosen is None:
        numbers = ", ".join(f"#{e.number}" for e in entries) or "none"
        raise UsageError(
            f"recall calibrate: no calibration #{number} in the history of {bound[0]} "
            f"(kept: {numbers}); 'recall calibrate --list' shows them"
        )
    entries = [dataclasses.replace(e, in_use=e is chosen) for e in entries]
    _write(store, bound[2], entries, chosen.record)
    return chosen.record


def record_given(record: str | os.PathLike[str] | dict[str, Any], fingerprint: str) -> Calibration:
    """A record given to import (a dict, JSON text or a JSON file) for `fingerprint`; a record
    that would not be applied is refused with the reason."""
    if isinstance(record, os.PathLike) or (
        isinstance(record, str) and not record.lstrip().startswith("{")
    ):
        try:
            record = Path(record).read_text(encoding="utf-8")
        except OSError as err:
            raise UsageError(
                f"recall calibrate: cannot read {record}: {err.strerror or err}; give the "
                "JSON file 'recall calibrate --export' wrote"
            ) from err
    calibration, why = load_record(record, fingerprint)
    if calibration is None:
        raise UsageError(f"recall calibrate: record not imported: {why}")
    return calibration


def summary(calibration: Calibration, churn: int) -> dict[str, Any]:
    """What a result and `stats` show of the calibration in use."""
    return {
        "id": calibration.id,
        "source": calibration.source,
        "embedder": calibration.embedder,
        "threshold": calibration.threshold,
        "scale": calibration.scale,
        "certified": calibration.certified,
        "stale": calibration.is_stale(churn),
        "features": list(calibration.features),
        "lexical_weight": calibration.lexical_weight,
        "identifier_weight": calibration.identifier_weight,
    }


def _write(
    store: Store, fingerprint: str, entries: list[CalibrationEntry], in_use: Calibration | None
) -> None:
    # The history first: the entry in use is derived from the record under `meta_key`, so an
    # interruption between the two writes leaves the earlier record in use and listed.
    store.set_meta(history_key(fingerprint), dump_history(entries))
    if in_use is not None:
        store.set_meta(meta_key(fingerprint), json.dumps(in_use.to_dict()))
