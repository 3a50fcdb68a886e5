"""When a search may not be answered in trust (SPEC §5.4, §7, §11): the refusals a strict search
raises, each with its code and the next step, in the order they are checked.

Owns: the conditions and their wording: nothing indexed, vectors of another embedder (never
comparable, in any mode), a dimension record that contradicts the embedder (damage), a
calibration missing, uncertified or stale, a judge asked for and unavailable. Does not own:
reading the store or the calibration (`recall.api`), or raising in development mode (the caller
answers degraded instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall.errors import StoreError, TrustRefusal

if TYPE_CHECKING:
    from recall.calibration import Calibration
    from recall.embedders import Embedder

__all__ = ["Refusal", "calibration_refusal", "check_lineage", "not_ready"]

#: (code, message) of a refusal: raised in strict mode, a degraded answer in development mode.
Refusal = tuple[str, str]


def not_ready(documents: int, bound: tuple[str, int, str] | None) -> Refusal | None:
    """Nothing indexed yet (no document, or no embedder recorded)."""
    if documents == 0 or bound is None:
        return ("INDEX_NOT_READY", "nothing is indexed; run 'recall index PATH' first")
    return None


def check_lineage(path: str, bound: tuple[str, int, str], embedder: Embedder) -> None:
    """Raise when the query cannot be compared with the stored vectors, in any mode: the same
    embedder recorded with another dimension is damage; another embedder is a refusal."""
    name, dim, fingerprint = bound
    if embedder.fingerprint == fingerprint and embedder.dim != dim:
        raise StoreError(
            f"recall store: {path} records {dim} dimensions for {name}, which makes "
            f"{embedder.dim}: its metadata is damaged; run 'recall doctor --db {path}' to see "
            "what is wrong and how to recover"
        )
    if embedder.fingerprint != fingerprint or embedder.dim != dim:
        raise TrustRefusal(
            "LINEAGE_MISMATCH",
            f"the store's vectors were built with {name}, the query would be embedded with "
            f"{embedder.name}; search with --embedder {name} or re-index into a new --db",
        )


def calibration_refusal(calibration: Calibration | None, why: str, churn: int) -> Refusal | None:
    """The calibration in use cannot certify an answer: none (with `why`), not certified, or
    fitted on chunks that have since changed too much (`churn` counts the changes)."""
    if calibration is None:
        return (
            "CALIBRATION_MISSING",
            f"{why}; run 'recall calibrate --auto' to fit one from the notes, or 'recall "
            "calibrate QUERIES' on your own labelled questions (or use --mode development)",
        )
    if calibration.certified is not True:
        why_not = f" ({calibration.certified_reason})" if calibration.certified_reason else ""
        return (
            "CALIBRATION_UNCERTIFIED",
            f"calibration {calibration.id} is not certified{why_not}; add labelled queries and "
            "run 'recall calibrate QUERIES' again (or use --mode development)",
        )
    if calibration.is_stale(churn):
        again = (
            "'recall calibrate --auto' (or the next 'recall index') refits it"
            if calibration.source == "self"
            else "run 'recall calibrate QUERIES' again"
        )
        return (
            "CALIBRATION_STALE",
            f"calibration {calibration.id} was fitted on {calibration.chunk_count} chunks and "
            f"{churn - (calibration.churn or 0)} chunks changed since; {again} "
            "(or use --mode development)",
        )
    return None


def judge_unavailable(err: Exception) -> Refusal:
    """Entailment was asked for and the judge cannot run."""
    return (
        "DEPENDENCY_UNAVAILABLE",
        f"entailment was requested but {err} (or search without --entail)",
    )
