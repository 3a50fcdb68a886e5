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

__all__ = ["Refusal", "calibration_refusal", "check_lineage", "not_ready", "trust_of"]

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
            f"{why}; run 'recall calibrate --auto' to fit one from the notes (it certifies "
            "once their titles and headings make 20 answerable questions), or 'recall "
            "calibrate QUERIES' on your own labelled questions (or use --mode development)",
        )
    if calibration.certified is not True:
        why_not = f" ({calibration.certified_reason})" if calibration.certified_reason else ""
        if calibration.source == "self":
            return (
                "CALIBRATION_UNCERTIFIED",
                f"calibration {calibration.id}, made from the notes, is not certified{why_not}; "
                "label at least 20 questions the notes answer and 20 they do not, and run "
                "'recall calibrate QUERIES' (or use --mode development)",
            )
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


#: What the trust a store has is called (`trust_of`), by the refusal a strict search would get.
_REFUSED = {
    "CALIBRATION_MISSING": "missing",
    "CALIBRATION_UNCERTIFIED": "uncertified",
    "CALIBRATION_STALE": "stale",
}


def trust_of(calibration: Calibration | None, why: str, churn: int) -> dict[str, object]:
    """What trust a store has (SPEC §7), as the index summary says it: `state` (`labelled`,
    `self`, `prior`, or the refusal's `missing`, `uncertified`, `stale`), whether strict search
    answers, and one line saying so with the next step."""
    refusal = calibration_refusal(calibration, why, churn)
    if refusal is not None:
        code, message = refusal
        line = f"strict search refuses ({code}): {message}"
        return {"state": _REFUSED[code], "answers": False, "line": line}
    assert calibration is not None
    if calibration.source == "prior":
        line = (
            f"strict search answers with the prior calibration shipped for "
            f"{calibration.embedder} (threshold {calibration.threshold:.3f}); the store's own "
            "replaces it once its notes make enough questions to certify one (20 answerable "
            "from titles and headings), or 'recall calibrate QUERIES' on your own questions"
        )
    elif calibration.source == "self":
        line = (
            f"strict search answers with calibration {calibration.id}, made from the notes "
            f"(certified: {calibration.certified_reason or 'yes'}); 'recall calibrate QUERIES' "
            "fits one on your own questions"
        )
    else:
        line = f"strict search answers with calibration {calibration.id}, fitted on your questions"
    return {"state": calibration.source, "answers": True, "line": line}
