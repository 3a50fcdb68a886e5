"""Chunk churn (SPEC §7): how many chunks were added, changed or removed, the measure of how far
a store has moved since it was calibrated.

Owns: the rule, written once for every backend, and its record (the meta key `chunk_churn`). A
rewritten document counts its larger chunk count (an edited chunk counts once, not as one out
and one in), a removed one its chunks, a moved or renamed one nothing (its rows stay). The
writers that change chunks (an index run, a forget) count as they go and add the total inside
their write. Does not own: when a calibration is stale (`recall.calibration.stored`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["KEY", "add", "rewritten"]

#: The meta record holding the store's running count.
KEY = "chunk_churn"


def rewritten(before: int, after: int) -> int:
    """The churn of a document rewritten from `before` chunks to `after` (0 before: new)."""
    return max(before, after)


def add(store: Store, chunks: int) -> None:
    """Add `chunks` to the store's count, inside the write open on `store`."""
    if chunks <= 0:
        return
    stored = store.meta(KEY)
    count = int(stored) if stored is not None and stored.isdigit() else 0
    store.set_meta(KEY, str(count + chunks))
